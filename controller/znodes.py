"""ZooKeeper paths and znode JSON of the ZooKeeper-mode controller (Kafka's ZkData.scala).

Rules:
- Paths are ZD:59-550's: /controller, /controller_epoch, /brokers/ids/<id>, /brokers/topics/<t>,
  .../partitions/<p>/state, /admin/delete_topics/<t>, /admin/reassign_partitions,
  /admin/preferred_replica_election, /isr_change_notification/isr_change_<seq>,
  /log_dir_event_notification/log_dir_event_<seq>, /config/topics/<t>.
- The partition state znode (ZD:379-416): {version 1, leader, leader_epoch, controller_epoch,
  isr}, plus leader_recovery_state only when not RECOVERED; decoding sets the partition epoch to
  the znode's stat version and returns None when the bytes are not JSON (Kafka's Json.parseBytes).
- The topic znode (ZD:310-336): version 3, partitions, adding_replicas and removing_replicas
  (maps of partition id string -> replica list, only non-empty lists in the last two), and
  topic_id when the topic has one.
- Byte-exact with Kafka: Kafka builds these with Scala 2.13 maps that Jackson writes in the
  maps' iteration order, compactly. The state znode's keys come from an immutable HashMap (a CHAMP
  trie keyed by the improved String.hashCode), the topic znode's from mutable HashMaps (buckets by
  hash ^ hash >>> 16, ascending hash within a bucket). ``_champ_order`` / ``_mutable_order``
  reproduce those orders; the 5-key state order they give, controller_epoch, leader, version,
  leader_epoch, isr, is the order of the state znodes seen in real clusters.
- Other znodes (broker registration, reassignment, preferred election, notifications, topic
  config) use Kafka's field names; their key order is not claimed to be Kafka's.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctrlbatch.context import (
    Broker,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicPartition,
)
from ctrlbatch.context.uuids import kafka_uuid_string

from .store import Stat

__all__ = [
    "BROKER_IDS_PATH",
    "CONTROLLER_EPOCH_PATH",
    "CONTROLLER_PATH",
    "DELETE_TOPICS_PATH",
    "ISR_CHANGE_NOTIFICATION_PATH",
    "LOG_DIR_EVENT_NOTIFICATION_PATH",
    "PREFERRED_REPLICA_ELECTION_PATH",
    "REASSIGN_PARTITIONS_PATH",
    "TOPICS_PATH",
    "TOPIC_CONFIGS_PATH",
    "broker_id_path",
    "decode_broker",
    "decode_partition_state",
    "decode_topic",
    "delete_topic_path",
    "encode_broker",
    "encode_partition_state",
    "encode_topic",
    "kafka_uuid_from_string",
    "partition_path",
    "partition_state_path",
    "partitions_path",
    "topic_config_path",
    "topic_path",
]

CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
DELETE_TOPICS_PATH = "/admin/delete_topics"
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
TOPIC_CONFIGS_PATH = "/config/topics"


def broker_id_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions"


def partition_path(tp: TopicPartition) -> str:
    return f"{TOPICS_PATH}/{tp.topic}/partitions/{tp.partition}"


def partition_state_path(tp: TopicPartition) -> str:
    return f"{TOPICS_PATH}/{tp.topic}/partitions/{tp.partition}/state"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS_PATH}/{topic}"


def topic_config_path(topic: str) -> str:
    return f"{TOPIC_CONFIGS_PATH}/{topic}"


# ----------------------------------------------------------------- Scala map orders

_M = 0xFFFFFFFF


def _java_string_hash(s: str) -> int:
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():  # UTF-16 code units, as Java
        h = (31 * h + int(unit, 16)) & _M
    return h


def _improve(h: int) -> int:
    """scala.collection.Hashing.improve (unsigned 32-bit)."""
    h = (h + (~(h << 9) & _M)) & _M
    h ^= h >> 14
    h = (h + (h << 4)) & _M
    return h ^ (h >> 10)


def _champ_order(keys: Sequence[str], shift: int = 0) -> list[str]:
    """Iteration order of a Scala 2.13 immutable.HashMap: a node's own entries by 5-bit mask,
    then its sub-nodes by mask, depth first."""
    groups: dict[int, list[str]] = {}
    for k in keys:
        groups.setdefault((_improve(_java_string_hash(k)) >> shift) & 31, []).append(k)
    ordered = sorted(groups.items())
    own = [g[0] for _, g in ordered if len(g) == 1]
    deeper = [k for _, g in ordered if len(g) > 1 for k in _champ_order(g, shift + 5)]
    return own + deeper


def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def _mutable_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of a Scala 2.13 mutable.HashMap filled with ``keys`` (initial 16 buckets,
    doubled when an insert would reach 0.75 of them; ascending signed hash within a bucket)."""
    capacity = 16
    for n in range(len(keys)):
        if n + 1 >= int(capacity * 0.75):
            capacity *= 2

    def key(k: str) -> tuple[int, int]:
        h = _java_string_hash(k)
        h ^= h >> 16
        return (h & (capacity - 1), _signed(h))

    return sorted(keys, key=key)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _ordered_object(items: Mapping[str, str], order: list[str]) -> str:
    """A JSON object from already-encoded values, keys in ``order``."""
    return "{" + ",".join(f"{_dumps(k)}:{items[k]}" for k in order) + "}"


# ----------------------------------------------------------------- partition state

_STATE_KEYS_5 = _champ_order(["version", "leader", "leader_epoch", "controller_epoch", "isr"])
_STATE_KEYS_6 = _champ_order(
    ["version", "leader", "leader_epoch", "controller_epoch", "isr", "leader_recovery_state"]
)


def _state_template(order: list[str]) -> str:
    """A format string with the keys in ``order`` (values by name), built once."""
    return "{{" + ",".join(f'"{k}":{{{k}}}' for k in order) + "}}"


_STATE_TEMPLATE_5 = _state_template(_STATE_KEYS_5)
_STATE_TEMPLATE_6 = _state_template(_STATE_KEYS_6)


def encode_partition_state(value: LeaderIsrAndControllerEpoch) -> bytes:
    """ZD:382-398, byte for byte."""
    lai = value.leader_and_isr
    recovering = lai.leader_recovery_state is not LeaderRecoveryState.RECOVERED
    template = _STATE_TEMPLATE_6 if recovering else _STATE_TEMPLATE_5
    return template.format(
        version=1, leader=lai.leader, leader_epoch=lai.leader_epoch, controller_epoch=value.controller_epoch,
        isr="[" + ",".join(map(str, lai.isr)) + "]", leader_recovery_state=int(lai.leader_recovery_state),
    ).encode()


def _parse(data: bytes | None) -> Any:
    """Kafka's Json.parseBytes: None for missing or non-JSON bytes."""
    if data is None:
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


def decode_partition_state(data: bytes | None, stat: Stat | None) -> LeaderIsrAndControllerEpoch | None:
    """ZD:400-416: the stored leadership with partition epoch = the znode version; None if not JSON."""
    js = _parse(data)
    if not isinstance(js, dict):
        return None
    try:
        recovery = LeaderRecoveryState(js.get("leader_recovery_state", 0))
        lai = LeaderAndIsr(
            int(js["leader"]), [int(r) for r in js["isr"]], int(js["leader_epoch"]),
            0 if stat is None else stat.version, recovery,
        )
        return LeaderIsrAndControllerEpoch(lai, int(js["controller_epoch"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"partition state znode field missing or invalid ({e!r}): {data!r:.200}") from e


# ----------------------------------------------------------------- topic

_TOPIC_KEYS = _mutable_order(["version", "partitions", "adding_replicas", "removing_replicas"])
_TOPIC_KEYS_WITH_ID = _mutable_order(["version", "partitions", "adding_replicas", "removing_replicas", "topic_id"])


def _replica_map(lists: Mapping[str, tuple[int, ...]]) -> str:
    encoded = {k: "[" + ",".join(map(str, v)) + "]" for k, v in lists.items()}
    return _ordered_object(encoded, _mutable_order(list(encoded)))


def encode_topic(topic_id: uuid.UUID | None, assignment: Mapping[TopicPartition, ReplicaAssignment]) -> bytes:
    """ZD:315-336, byte for byte."""
    replicas: dict[str, tuple[int, ...]] = {}
    adding: dict[str, tuple[int, ...]] = {}
    removing: dict[str, tuple[int, ...]] = {}
    for tp, a in assignment.items():
        key = str(tp.partition)
        replicas[key] = a.replicas
        if a.adding_replicas:
            adding[key] = a.adding_replicas
        if a.removing_replicas:
            removing[key] = a.removing_replicas
    items = {
        "version": "3",
        "partitions": _replica_map(replicas),
        "adding_replicas": _replica_map(adding),
        "removing_replicas": _replica_map(removing),
    }
    order = _TOPIC_KEYS
    if topic_id is not None:
        items["topic_id"] = _dumps(kafka_uuid_string(topic_id))
        order = _TOPIC_KEYS_WITH_ID
    return _ordered_object(items, order).encode()


def kafka_uuid_from_string(text: str) -> uuid.UUID:
    """Kafka's Uuid.fromString: URL-safe base64 of 16 bytes, no padding."""
    import base64

    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"Input string with prefix `{text[:30]}` is too long to be decoded as a base64 UUID")
    return uuid.UUID(bytes=raw)


def decode_topic(
    topic: str, data: bytes | None
) -> tuple[uuid.UUID | None, dict[TopicPartition, ReplicaAssignment]]:
    """ZD:337-363: (topic id, assignment); empty when the bytes are not JSON."""
    js = _parse(data)
    if not isinstance(js, dict):
        return None, {}
    tid = js.get("topic_id")
    topic_id = None if tid is None else kafka_uuid_from_string(str(tid))
    adding = js.get("adding_replicas") or {}
    removing = js.get("removing_replicas") or {}
    out = {}
    for p, replicas in (js.get("partitions") or {}).items():
        out[TopicPartition(topic, int(p))] = ReplicaAssignment(
            [int(r) for r in replicas], [int(r) for r in adding.get(p, ())], [int(r) for r in removing.get(p, ())]
        )
    return topic_id, out


# ----------------------------------------------------------------- brokers and others


def encode_broker(broker: Broker, timestamp_ms: int = 0) -> bytes:
    """A version-5 broker registration (BrokerIdZNode, ZD:~150-250): endpoints and rack."""
    first = broker.endpoints[0] if broker.endpoints else None
    value = {
        "features": {},
        "listener_security_protocol_map": {e.listener_name: e.security_protocol.name for e in broker.endpoints},
        "endpoints": [f"{e.listener_name}://{e.host}:{e.port}" for e in broker.endpoints],
        "rack": broker.rack,
        "jmx_port": -1,
        "port": -1 if first is None else first.port,
        "host": None if first is None else first.host,
        "version": 5,
        "timestamp": str(timestamp_ms),
    }
    if broker.rack is None:
        del value["rack"]
    return _dumps(value).encode()


def decode_broker(broker_id: int, data: bytes | None) -> Broker:
    js = _parse(data)
    if not isinstance(js, dict):
        raise ValueError(f"Failed to parse ZooKeeper registration for broker {broker_id}: {data!r:.200}")
    protocols = js.get("listener_security_protocol_map") or {}
    endpoints = []
    for text in js.get("endpoints") or ():
        listener, _, hostport = str(text).partition("://")
        host, _, port = hostport.rpartition(":")
        endpoints.append(EndPoint(host, int(port), listener, protocols.get(listener, listener)))
    return Broker(broker_id, endpoints, js.get("rack"))


def encode_json(value: Any) -> bytes:
    return _dumps(value).encode()


def decode_json(data: bytes | None) -> Any:
    return _parse(data)


def encode_partitions(partitions: Iterable[TopicPartition], *, version: int = 1) -> bytes:
    """{"version":1,"partitions":[{"topic":t,"partition":p},...]} (preferred election, ISR notes)."""
    return encode_json(
        {"version": version, "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in partitions]}
    )


def decode_partitions(data: bytes | None) -> list[TopicPartition]:
    js = _parse(data)
    if not isinstance(js, dict):
        return []
    return [TopicPartition(str(e["topic"]), int(e["partition"])) for e in js.get("partitions") or ()]
