"""Harness for the batch tests: Kafka's ControllerChannelManagerTest fixture, ported.

kafka-controller-batch-tests.md §0 describes what is ported here:
- ``init_context`` is Kafka's ``initContext`` (brokers at epoch 1, PLAINTEXT on localhost:9900+id,
  topic ids random or given, round-robin replica assignment, no leadership);
- ``MockBatch`` is ``MockControllerBrokerRequestBatch``: a real ``ControllerBrokerRequestBatch``
  with a ``RecordingTransport`` (``sent_requests``) and ``on_event=None`` (``sent_events``);
- ``collect_*`` keep the requests of one api key sent to a broker and, on the way, check each
  request's wire form: the engine's shared bytes equal ``body.encode(version)``, and they parse
  back and re-encode to the same bytes (and the whole frame carries them);
- ``apply_*_response_callbacks`` answer the sent requests like TEST:849-894, with each response
  round-tripped through its codec at the request's version first;
- request accessors (``lair_partition_states``, ``lair_topic_ids``, ``umr_partition_states``,
  ``sr_partition_states``, ``sr_topic_partitions``) stand for Kafka's request accessors, including
  StopReplica's v0-2 reconstruction rule.

pytest runs with --import-mode=importlib, so test modules reach all of this through the ``kt``
fixture (a namespace), never by importing this module.
"""

from __future__ import annotations

import struct
import types
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import pytest

from ctrlbatch.batch import ControllerBrokerRequestBatch, OutboundRequest, RecordingTransport
from ctrlbatch.context import (
    ZERO_UUID,  # noqa: F401  (exported through the kt fixture)
    Broker,
    ControllerContext,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    MetadataVersion,
    ReplicaAssignment,
    SecurityProtocol,
    TopicPartition,
)
from ctrlbatch.requests import (
    LeaderAndIsrPartitionError,
    LeaderAndIsrResponse,
    LeaderAndIsrTopicError,
    StopReplicaPartitionError,
    StopReplicaPartitionState,
    StopReplicaResponse,
    UpdateMetadataResponse,
    decode_request,
)

MV = MetadataVersion

CONTROLLER_ID = 1
CONTROLLER_EPOCH = 1
# Kafka 3.9's default inter.broker.protocol.version (the test config does not set one).
DEFAULT_IBP = MV.IBP_3_9_IV0
LATEST_TESTING = MV.LATEST_TESTING

LEADER_AND_ISR = 4
STOP_REPLICA = 5
UPDATE_METADATA = 6

# Errors.java codes
NONE = 0
STALE_CONTROLLER_EPOCH = 11
KAFKA_STORAGE_ERROR = 56
FENCED_LEADER_EPOCH = 74
STALE_BROKER_EPOCH = 77
UNKNOWN_SERVER_ERROR = -1

ALL_VERSIONS: list[MetadataVersion] = list(MetadataVersion)

# The version tables, written out again from kafka-controller-batch-semantics.md §8.1-8.3 (the test
# oracle must not be the engine's own table).
_LAIR_TABLE = [(MV.IBP_3_4_IV0, 7), (MV.IBP_3_2_IV0, 6), (MV.IBP_2_8_IV1, 5), (MV.IBP_2_4_IV1, 4),
               (MV.IBP_2_4_IV0, 3), (MV.IBP_2_2_IV0, 2), (MV.IBP_1_0_IV0, 1)]
_UMR_TABLE = [(MV.IBP_3_4_IV0, 8), (MV.IBP_2_8_IV1, 7), (MV.IBP_2_4_IV1, 6), (MV.IBP_2_2_IV0, 5),
              (MV.IBP_1_0_IV0, 4), (MV.IBP_0_10_2_IV0, 3), (MV.IBP_0_10_0_IV1, 2), (MV.IBP_0_9_0, 1)]
_SR_TABLE = [(MV.IBP_3_4_IV0, 4), (MV.IBP_2_6_IV0, 3), (MV.IBP_2_4_IV1, 2), (MV.IBP_2_2_IV0, 1)]


def _pick(table: list[tuple[MetadataVersion, int]], ibp: MetadataVersion) -> int:
    for since, version in table:
        if ibp.is_at_least(since):
            return version
    return 0


def expected_lair_version(ibp: MetadataVersion) -> int:
    return _pick(_LAIR_TABLE, ibp)


def expected_umr_version(ibp: MetadataVersion) -> int:
    return _pick(_UMR_TABLE, ibp)


def expected_sr_version(ibp: MetadataVersion) -> int:
    return _pick(_SR_TABLE, ibp)


# --------------------------------------------------------------------------- context


def plaintext_broker(broker_id: int) -> Broker:
    return Broker(broker_id, [EndPoint("localhost", 9900 + broker_id, "PLAINTEXT", SecurityProtocol.PLAINTEXT)])


def init_context(
    broker_ids: Iterable[int],
    num_partitions: int,
    replication_factor: int,
    topics: Iterable[str] | Mapping[str, uuid.UUID],
    broker_epochs: Mapping[int, int] | None = None,
) -> ControllerContext:
    """Kafka's initContext (TEST:906-940). ``topics`` is names (random ids) or name -> id."""
    brokers = list(broker_ids)
    context = ControllerContext()
    epochs = broker_epochs or {}
    context.set_live_brokers({plaintext_broker(b): epochs.get(b, 1) for b in brokers})
    ids = dict(topics) if isinstance(topics, Mapping) else {t: uuid.uuid4() for t in topics}
    context.set_all_topics(ids)
    for name, topic_id in ids.items():
        context.add_topic_id(name, topic_id)
    leader_index = 0
    for name in ids:
        for partition in range(num_partitions):
            replicas = [brokers[(i + leader_index) % len(brokers)] for i in range(replication_factor)]
            context.update_partition_full_replica_assignment(
                TopicPartition(name, partition), ReplicaAssignment(replicas)
            )
            leader_index += 1
    return context


def kafka_context(topics: Iterable[str] | Mapping[str, uuid.UUID] = ("foo", "bar")) -> ControllerContext:
    return init_context([1, 2, 3], 2, 3, topics)


def replica_assignment(replicas: Iterable[int]) -> ReplicaAssignment:
    return ReplicaAssignment(list(replicas))


def leadership(leader: int, isr: Iterable[int], controller_epoch: int = CONTROLLER_EPOCH, **kw: Any) -> LeaderIsrAndControllerEpoch:
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, list(isr), **kw), controller_epoch)


# --------------------------------------------------------------------------- mock batch


class MockBatch:
    """MockControllerBrokerRequestBatch: the real engine, a recording transport, events in a list."""

    def __init__(self, context: Any, ibp: Any = DEFAULT_IBP, **kw: Any) -> None:
        self.context = context
        self.transport = RecordingTransport()
        self.batch = ControllerBrokerRequestBatch(CONTROLLER_ID, context, ibp, self.transport, **kw)

    # Kafka's API names, forwarded
    def new_batch(self) -> None:
        self.batch.new_batch()

    def add_lair(self, broker_ids: Iterable[int], tp: TopicPartition, lice: LeaderIsrAndControllerEpoch,
                 assignment: ReplicaAssignment, is_new: bool) -> None:
        self.batch.add_leader_and_isr_request_for_brokers(list(broker_ids), tp, lice, assignment, is_new)

    def add_umr(self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] = ()) -> None:
        self.batch.add_update_metadata_request_for_brokers(list(broker_ids), partitions)

    def add_sr(self, broker_ids: Iterable[int], tp: TopicPartition, delete_partition: bool) -> None:
        self.batch.add_stop_replica_request_for_brokers(list(broker_ids), tp, delete_partition)

    def send(self, controller_epoch: int = CONTROLLER_EPOCH) -> None:
        self.batch.send_requests_to_brokers(controller_epoch)

    @property
    def sent_requests(self) -> dict[int, list[tuple[OutboundRequest, Any]]]:
        return self.transport.sent

    @property
    def sent_events(self) -> list[Any]:
        return self.batch.events

    def _collect(self, broker_id: int, api_key: int) -> list[Any]:
        out = []
        for req, _cb in self.transport.sent.get(broker_id, ()):
            if req.api_key == api_key:
                check_wire(req)
                out.append(req.body)
        return out

    def collect_lair(self, broker_id: int) -> list[Any]:
        return self._collect(broker_id, LEADER_AND_ISR)

    def collect_umr(self, broker_id: int) -> list[Any]:
        return self._collect(broker_id, UPDATE_METADATA)

    def collect_sr(self, broker_id: int) -> list[Any]:
        return self._collect(broker_id, STOP_REPLICA)

    def collect_sent(self, broker_id: int, api_key: int) -> list[OutboundRequest]:
        return [req for req, _ in self.transport.sent.get(broker_id, ()) if req.api_key == api_key]


# --------------------------------------------------------------------------- wire checks


def check_wire(req: OutboundRequest, correlation_id: int = 7, client_id: str | None = "1") -> Any:
    """The engine's fast-path bytes against the codec: equal to body.encode(version), parse back
    and re-encode identically, and the frame carries header + the same body. Returns the parsed body."""
    data = req.encode_body()
    assert req.body.encode(req.version) == data, f"api {req.api_key} v{req.version}: shared bytes != body.encode"
    parsed = type(req.body).decode(data, req.version)
    assert parsed.encode(req.version) == data
    frame = req.encode(correlation_id, client_id)
    (size,) = struct.unpack_from(">i", frame, 0)
    assert size == len(frame) - 4
    assert frame.endswith(data)
    decoded = decode_request(frame[4:])
    assert decoded.header.request_api_key == req.api_key
    assert decoded.header.request_api_version == req.version
    assert decoded.header.correlation_id == correlation_id
    assert decoded.header.client_id == client_id
    assert decoded.body == parsed
    return parsed


def parse_back(req: OutboundRequest) -> Any:
    """Kafka's "serialize, then parse at the same version"."""
    return type(req.body).decode(req.encode_body(), req.version)


def roundtrip(msg: Any, version: int) -> Any:
    data = msg.encode(version)
    back = type(msg).decode(data, version)
    assert back.encode(version) == data
    return back


# --------------------------------------------------------------------------- request accessors


def lair_partition_states(body: Any, version: int) -> list[Any]:
    """LeaderAndIsrRequest.partitionStates(): v2+ flattens TopicStates, filling in topicName."""
    if version >= 2:
        return [attrs.evolve(ps, topic_name=ts.topic_name) for ts in body.topic_states for ps in ts.partition_states]
    return list(body.ungrouped_partition_states)


def lair_topic_ids(body: Any) -> dict[str, uuid.UUID]:
    """LeaderAndIsrRequest.topicIds(): topicName -> topicId over the TopicStates (empty at v0-1)."""
    return {ts.topic_name: ts.topic_id for ts in body.topic_states}


def umr_partition_states(body: Any, version: int) -> list[Any]:
    if version >= 5:
        return [attrs.evolve(ps, topic_name=ts.topic_name) for ts in body.topic_states for ps in ts.partition_states]
    return list(body.ungrouped_partition_states)


def tp_of(state: Any) -> TopicPartition:
    return TopicPartition(state.topic_name, state.partition_index)


def sr_topic_partitions(body: Any, version: int) -> list[tuple[str, list[StopReplicaPartitionState]]]:
    """StopReplicaRequest.topicStates(): v3+ as sent; v1-2 from Topics and v0 from the flat list,
    each partition rebuilt as (partitionIndex, leaderEpoch -1, deletePartition = the top-level flag)."""
    if version >= 3:
        return [(ts.topic_name, list(ts.partition_states)) for ts in body.topic_states]
    delete = body.delete_partitions
    groups: dict[str, list[StopReplicaPartitionState]] = {}
    if version >= 1:
        for t in body.topics:
            for p in t.partition_indexes:
                groups.setdefault(t.name, []).append(StopReplicaPartitionState(p, -1, delete))
    else:
        for p in body.ungrouped_partitions:
            groups.setdefault(p.topic_name, []).append(StopReplicaPartitionState(p.partition_index, -1, delete))
    return list(groups.items())


def sr_partition_states(body: Any, version: int) -> dict[TopicPartition, StopReplicaPartitionState]:
    """StopReplicaRequest.partitionStates(): tp -> state (SRRq:134-166)."""
    return {
        TopicPartition(topic, ps.partition_index): ps for topic, states in sr_topic_partitions(body, version) for ps in states
    }


def expected_sr_states(
    partitions: Mapping[TopicPartition, tuple[int, bool]],
    topics_queued_for_deletion: Iterable[str] = (),
    version: int = 4,
) -> dict[TopicPartition, StopReplicaPartitionState]:
    """TEST:828-847: partition -> (leader, deletePartition) turned into the expected states; the
    leaderEpoch is set only at v3+ (-2 for a queued topic, else the LeaderAndIsr's epoch, 0)."""
    queued = set(topics_queued_for_deletion)
    out = {}
    for tp, (_leader, delete) in partitions.items():
        epoch = -1
        if version >= 3:
            epoch = -2 if tp.topic in queued else LeaderAndIsr.INITIAL_LEADER_EPOCH
        out[tp] = StopReplicaPartitionState(partition_index=tp.partition, leader_epoch=epoch, delete_partition=delete)
    return out


def sr_error_response(body: Any, version: int, error: int) -> StopReplicaResponse:
    """StopReplicaRequest.getErrorResponse: the top-level error and every partition with it."""
    return StopReplicaResponse(
        error_code=error,
        partition_errors=[
            StopReplicaPartitionError(topic_name=t, partition_index=p.partition_index, error_code=error)
            for t, ps in sr_topic_partitions(body, version) for p in ps
        ],
    )


# --------------------------------------------------------------------------- responses


def lair_response(body: Any, version: int, error: int) -> LeaderAndIsrResponse:
    """TEST:870-887: top-level error, and per topic (by id) every partition with the error; below v5
    the response has no topics, so the partitions go in the flat list with their topic names."""
    if version >= 5:
        ids = lair_topic_ids(body)
        return LeaderAndIsrResponse(
            error_code=error,
            topics=[
                LeaderAndIsrTopicError(
                    topic_id=ids[ts.topic_name],
                    partition_errors=[
                        LeaderAndIsrPartitionError(partition_index=p.partition_index, error_code=error)
                        for p in ts.partition_states
                    ],
                )
                for ts in body.topic_states
            ],
        )
    return LeaderAndIsrResponse(
        error_code=error,
        partition_errors=[
            LeaderAndIsrPartitionError(topic_name=s.topic_name, partition_index=s.partition_index, error_code=error)
            for s in lair_partition_states(body, version)
        ],
    )


def _answered(response: Any, version: int) -> Any:
    back = roundtrip(response, version)
    assert back == response, f"{type(response).__name__} v{version} does not round-trip"
    return back


def apply_lair_callbacks(error: int, sent: Iterable[tuple[OutboundRequest, Any]]) -> list[Any]:
    responses = []
    for req, cb in sent:
        if req.api_key == LEADER_AND_ISR and cb is not None:
            check_wire(req)
            body = req.body
            resp = _answered(lair_response(body, req.version, error), req.version)
            cb(resp)
            responses.append(resp)
    return responses


def apply_umr_callbacks(error: int, sent: Iterable[tuple[OutboundRequest, Any]]) -> list[Any]:
    responses = []
    for req, cb in sent:
        if req.api_key == UPDATE_METADATA and cb is not None:
            resp = _answered(UpdateMetadataResponse(error_code=error), req.version)
            cb(resp)
            responses.append(resp)
    return responses


def apply_sr_callbacks(error: int, sent: Iterable[tuple[OutboundRequest, Any]]) -> list[Any]:
    """TEST:849-868. The api key is not filtered, as in Kafka (only StopReplica items are present)."""
    responses = []
    for req, cb in sent:
        if cb is None:
            continue
        assert req.api_key == STOP_REPLICA
        check_wire(req)
        body = req.body
        if error == NONE:
            resp = StopReplicaResponse(
                error_code=NONE,
                partition_errors=[
                    StopReplicaPartitionError(topic_name=t, partition_index=p.partition_index, error_code=NONE)
                    for t, ps in sr_topic_partitions(body, req.version) for p in ps
                ],
            )
        else:
            resp = sr_error_response(body, req.version, error)
        resp = _answered(resp, req.version)
        cb(resp)
        responses.append(resp)
    return responses


def epoch_diff_window(a: bytes, b: bytes) -> tuple[int, int] | None:
    """The [first, last] positions where two equal-length byte strings differ, or None."""
    assert len(a) == len(b)
    diffs = [i for i in range(len(a)) if a[i] != b[i]]
    if not diffs:
        return None
    return diffs[0], diffs[-1]


@pytest.fixture
def kt() -> types.SimpleNamespace:
    """Everything above, as one namespace."""
    names = [
        "MV", "CONTROLLER_ID", "CONTROLLER_EPOCH", "DEFAULT_IBP", "LATEST_TESTING", "LEADER_AND_ISR",
        "STOP_REPLICA", "UPDATE_METADATA", "NONE", "STALE_CONTROLLER_EPOCH", "KAFKA_STORAGE_ERROR",
        "FENCED_LEADER_EPOCH", "STALE_BROKER_EPOCH", "UNKNOWN_SERVER_ERROR", "ALL_VERSIONS", "ZERO_UUID",
        "expected_lair_version", "expected_umr_version", "expected_sr_version", "plaintext_broker",
        "init_context", "kafka_context", "replica_assignment", "leadership", "MockBatch", "check_wire",
        "parse_back", "roundtrip", "lair_partition_states", "lair_topic_ids", "umr_partition_states",
        "tp_of", "sr_topic_partitions", "sr_partition_states", "expected_sr_states", "sr_error_response",
        "lair_response", "apply_lair_callbacks", "apply_umr_callbacks", "apply_sr_callbacks",
        "epoch_diff_window",
    ]
    g = globals()
    return types.SimpleNamespace(**{n: g[n] for n in names})

