"""The store protocol: the subset of Kafka's KafkaZkClient the ZooKeeper-mode controller uses.

Rules:
- ``KafkaZkClient`` is a ``typing.Protocol`` of KZC's methods in snake_case, with Kafka's
  arguments and results (reference kafka-zk-controller.md §7; KZC = core/src/main/scala/kafka/zk/
  KafkaZkClient.scala at 3.9). ``InMemoryKafkaZkClient`` (memory_store.py) implements it; a
  client for a real ZooKeeper could too.
- Raw calls return one response per request with ``ctx`` = the partition (or topic) asked for
  (KZC:286-323): ``GetDataResponse`` (data + ``Stat``), ``CreateResponse``, ``SetDataResponse``.
  ``result_exception`` is ``KeeperException.create(code, path)`` for a non-OK code, as ZooKeeper's
  ``AsyncResponse.resultException``; ``maybe_throw()`` raises it.
- Fencing (KZC:1969-1978, 2324-2350): every write taking ``expected_controller_epoch_zk_version``
  >= 0 is checked against /controller_epoch's version; a mismatch raises
  ``ControllerMovedException("Controller epoch zkVersion check fails. Expected zkVersion = <v>")``;
  -1 (``MATCH_ANY_VERSION``) writes unfenced; other negative values raise ValueError (Kafka's
  IllegalArgumentException). Reads are never fenced.
- ``update_leader_and_isr`` (KZC:354-387) returns ``UpdateLeaderAndIsrResult``: finished
  partitions map to the written LeaderAndIsr (partition epoch = the znode's new version) or to an
  exception; BADVERSION partitions go to ``partitions_to_retry``. Either is ``LeaderAndIsr | Exception``.
- ``get_log_configs`` (KZC:397-424) returns (configs, failures) per topic; ``LogConfig`` carries
  the one setting the controller reads, ``unclean.leader.election.enable`` (default false,
  storage/.../LogConfig.java:180), the topic override winning over the broker's originals.
- Watches: Kafka's ZNodeChangeHandler / ZNodeChildChangeHandler (kafka/zookeeper/
  ZooKeeperClient.scala) are base classes with no-op callbacks; a handler is registered per path.
  As in ZooKeeper, a watch is one-shot and armed by a read while a handler is registered
  (exists/get_data for node handlers, get_children with a watch for child handlers).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from ctrlbatch.context import (
    Broker,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)

from .errors import Code, KeeperException

__all__ = [
    "MATCH_ANY_VERSION",
    "UNCLEAN_LEADER_ELECTION_ENABLE",
    "Code",
    "CreateResponse",
    "DeleteResponse",
    "GetDataResponse",
    "KafkaZkClient",
    "LogConfig",
    "SetDataResponse",
    "Stat",
    "StateChangeHandler",
    "TopicIdReplicaAssignment",
    "UpdateLeaderAndIsrResult",
    "ZNodeChangeHandler",
    "ZNodeChildChangeHandler",
]

MATCH_ANY_VERSION = -1
"""ZkVersion.MatchAnyVersion: an unconditional (and, for the epoch check, unfenced) write."""

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
"""TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG (clients/.../TopicConfig.java:165)."""


@attrs.frozen
class Stat:
    """ZooKeeper's Stat, the fields the controller reads: versions and the creating zxid."""

    czxid: int
    mzxid: int
    version: int
    cversion: int = 0
    ephemeral_owner: int = 0
    num_children: int = 0


class _Response:
    result_code: Code
    path: str

    @property
    def result_exception(self) -> KeeperException | None:
        """The KeeperException for a non-OK code, else None."""
        if self.result_code is Code.OK:
            return None
        return KeeperException.create(self.result_code, self.path)

    def maybe_throw(self) -> None:
        e = self.result_exception
        if e is not None:
            raise e


@attrs.frozen
class GetDataResponse(_Response):
    result_code: Code
    path: str
    ctx: Any
    data: bytes | None
    stat: Stat | None


@attrs.frozen
class CreateResponse(_Response):
    result_code: Code
    path: str
    ctx: Any
    name: str | None = None


@attrs.frozen
class SetDataResponse(_Response):
    result_code: Code
    path: str
    ctx: Any
    stat: Stat | None = None


@attrs.frozen
class DeleteResponse(_Response):
    result_code: Code
    path: str
    ctx: Any = None


@attrs.frozen
class UpdateLeaderAndIsrResult:
    """KZC:2262-2265: finished partitions (written value or exception) and BADVERSION ones."""

    finished_partitions: dict[TopicPartition, LeaderAndIsr | Exception]
    partitions_to_retry: list[TopicPartition]


@attrs.frozen(hash=False)
class TopicIdReplicaAssignment:
    """TopicZNode.TopicIdReplicaAssignment (ZD:311-313); Kafka's Sets of these are lists here
    (the assignment dict is not hashable)."""

    topic: str
    topic_id: uuid.UUID | None
    assignment: dict[TopicPartition, ReplicaAssignment]


def _config_bool(value: object, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"Invalid value {value!r:.80} for configuration {key}: Expected value to be either true or false")


@attrs.frozen
class LogConfig:
    """A topic's effective log config, as far as the controller reads it."""

    unclean_leader_election_enable: bool = False

    @classmethod
    def from_props(cls, originals: Mapping[str, object], overrides: Mapping[str, object]) -> LogConfig:
        """LogConfig.fromProps: the broker's originals overridden by the topic's config."""
        key = UNCLEAN_LEADER_ELECTION_ENABLE
        value = overrides.get(key, originals.get(key, False))
        return cls(_config_bool(value, key))


class ZNodeChangeHandler:
    """A watch on one znode's creation, deletion and data changes (no-op callbacks by default)."""

    path: str = ""

    def handle_creation(self) -> None:
        """The znode was created."""

    def handle_deletion(self) -> None:
        """The znode was deleted."""

    def handle_data_change(self) -> None:
        """The znode's data changed."""


class StateChangeHandler:
    """Kafka's StateChangeHandler: told around a session re-initialisation (after expiry)."""

    name: str = ""

    def before_initializing_session(self) -> None:
        """The session expired; a new one is about to be created."""

    def after_initializing_session(self) -> None:
        """The new session is up."""

    def on_auth_failure(self) -> None:
        """Authentication failed."""


class ZNodeChildChangeHandler:
    """A watch on one znode's children (no-op callback by default)."""

    path: str = ""

    def handle_child_change(self) -> None:
        """A child was added or removed."""


@runtime_checkable
class KafkaZkClient(Protocol):
    """What the controller asks of ZooKeeper (KZC, 3.9), in snake_case."""

    # -- controller election (KZC:123-172, 1270-1310)
    def register_controller_and_increment_controller_epoch(self, controller_id: int) -> tuple[int, int]: ...
    def get_controller_id(self) -> int | None: ...
    def get_controller_epoch(self) -> tuple[int, Stat] | None: ...
    def delete_controller(self, expected_controller_epoch_zk_version: int) -> None: ...

    # -- partition states (KZC:286-387, 1123-1133)
    def get_topic_partition_states_raw(self, partitions: Sequence[TopicPartition]) -> list[GetDataResponse]: ...
    def get_topic_partition_states(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]: ...
    def set_topic_partition_states_raw(
        self,
        leader_isr_and_controller_epochs: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
        expected_controller_epoch_zk_version: int,
    ) -> list[SetDataResponse]: ...
    def create_topic_partition_states_raw(
        self,
        leader_isr_and_controller_epochs: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
        expected_controller_epoch_zk_version: int,
    ) -> list[CreateResponse]: ...
    def update_leader_and_isr(
        self,
        leader_and_isrs: Mapping[TopicPartition, LeaderAndIsr],
        controller_epoch: int,
        expected_controller_epoch_zk_version: int,
    ) -> UpdateLeaderAndIsrResult: ...
    def get_log_configs(
        self, topics: Iterable[str], config: Mapping[str, object]
    ) -> tuple[dict[str, LogConfig], dict[str, Exception]]: ...

    # -- brokers (KZC:590-623)
    def get_all_broker_and_epochs_in_cluster(self) -> dict[Broker, int]: ...
    def get_broker(self, broker_id: int) -> Broker | None: ...
    def get_sorted_broker_list(self) -> list[int]: ...

    # -- topics and assignments (KZC:630-701, 808-844)
    def get_all_topics_in_cluster(self, register_watch: bool = False) -> set[str]: ...
    def get_replica_assignment_and_topic_id_for_topics(self, topics: Iterable[str]) -> list[TopicIdReplicaAssignment]: ...
    def get_full_replica_assignment_for_topics(self, topics: Iterable[str]) -> dict[TopicPartition, ReplicaAssignment]: ...
    def set_topic_ids(
        self, topic_id_replica_assignments: Iterable[TopicIdReplicaAssignment], expected_controller_epoch_zk_version: int
    ) -> list[TopicIdReplicaAssignment]: ...
    def set_topic_assignment_raw(
        self,
        topic: str,
        topic_id: uuid.UUID | None,
        assignment: Mapping[TopicPartition, ReplicaAssignment],
        expected_controller_epoch_zk_version: int,
    ) -> SetDataResponse: ...
    def set_topic_assignment(
        self,
        topic: str,
        topic_id: uuid.UUID | None,
        assignment: Mapping[TopicPartition, ReplicaAssignment],
        expected_controller_epoch_zk_version: int = MATCH_ANY_VERSION,
    ) -> None: ...

    # -- topic deletion (KZC:1021-1038, 1321-1334)
    def get_topic_deletions(self) -> list[str]: ...
    def delete_topic_deletions(self, topics: Sequence[str], expected_controller_epoch_zk_version: int) -> None: ...
    def delete_topic_znode(self, topic: str, expected_controller_epoch_zk_version: int) -> None: ...
    def delete_topic_configs(self, topics: Sequence[str], expected_controller_epoch_zk_version: int) -> None: ...

    # -- reassignment (KZC:1044-1116)
    def get_partition_reassignment(self) -> dict[TopicPartition, list[int]]: ...
    def set_or_create_partition_reassignment(
        self, reassignment: Mapping[TopicPartition, Sequence[int]], expected_controller_epoch_zk_version: int
    ) -> None: ...
    def delete_partition_reassignment(self, expected_controller_epoch_zk_version: int) -> None: ...
    def reassign_partitions_in_progress(self) -> bool: ...

    # -- preferred election, ISR and log-dir notifications (KZC:719-775, 1181-1264)
    def get_preferred_replica_election(self) -> set[TopicPartition]: ...
    def delete_preferred_replica_election(self, expected_controller_epoch_zk_version: int) -> None: ...
    def get_all_isr_change_notifications(self) -> list[str]: ...
    def get_partitions_from_isr_change_notifications(self, sequence_numbers: Sequence[str]) -> list[TopicPartition]: ...
    def delete_isr_change_notifications(
        self, sequence_numbers: Sequence[str] | None, expected_controller_epoch_zk_version: int
    ) -> None: ...
    def get_all_log_dir_event_notifications(self) -> list[str]: ...
    def get_broker_ids_from_log_dir_events(self, sequence_numbers: Sequence[str]) -> list[int]: ...
    def delete_log_dir_event_notifications(
        self, sequence_numbers: Sequence[str] | None, expected_controller_epoch_zk_version: int
    ) -> None: ...

    # -- generic paths
    def path_exists(self, path: str) -> bool: ...

    # -- watches (KZC:1621-1665)
    def register_znode_change_handler_and_check_existence(self, handler: ZNodeChangeHandler) -> bool: ...
    def register_znode_change_handler(self, handler: ZNodeChangeHandler) -> None: ...
    def unregister_znode_change_handler(self, path: str) -> None: ...
    def register_znode_child_change_handler(self, handler: ZNodeChildChangeHandler) -> None: ...
    def unregister_znode_child_change_handler(self, path: str) -> None: ...
    def register_state_change_handler(self, handler: StateChangeHandler) -> None: ...
    def unregister_state_change_handler(self, name: str) -> None: ...
