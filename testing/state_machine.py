"""A hypothesis state machine for ControllerBrokerRequestBatch, and the model it checks against.

Rules:
- ``BatchModel`` is an independent, deliberately naive re-statement of the batch's semantics
  (kafka-controller-batch-semantics.md §4-8): plain dicts of what each broker's LeaderAndIsr and
  StopReplica must hold, the UpdateMetadata broker set and partition states (computed from the
  context at add time), sticky ``is_new`` / ``delete_partition``, the newBatch checks, and which
  phase of a send must fail. It never calls the engine.
- ``check_sent`` compares what a send handed to the transport with the model and the context
  *at send time*: recipients (live-or-shutting-down only, no negative ids), per-broker shape
  (LeaderAndIsr, UpdateMetadata, StopReplica; at most one each, two StopReplicas below v3),
  versions (the IBP tables of §8, restated here), header fields, partition content, topic ids,
  live leaders and live brokers, identical UpdateMetadata content for every recipient, callbacks,
  and that every frame decodes back to exactly its body (``check_frame``).
- ``BatchStateMachine`` drives one batch over one mutable context (given to the batch as is, or
  as a ``ChannelContextView`` so the batch's plain-protocol paths run too): it mutates the context (the
  ``context_mutations`` of ``ctrlbatch.testing.contexts``), starts batches, applies adds
  (``ctrlbatch.testing.batch_ops``), sends, clears, sets the update type and answers StopReplica
  requests late (after the context moved on), checking the model after every step.

Subclassing: override the strategy hooks (``context_strategy``, ``metadata_version_strategy``,
``mutation_strategy``, ``op_strategy``, ``make_batch``), add rules, or check more in
``after_send``; every rule and invariant of the base class still runs::

    from hypothesis import settings, strategies as st
    from hypothesis.stateful import rule
    from ctrlbatch.context import MetadataVersion
    from ctrlbatch.testing import BatchStateMachine, controller_contexts

    class ModernClusters(BatchStateMachine):
        def metadata_version_strategy(self):
            return st.just(MetadataVersion.IBP_3_9_IV0)

        def context_strategy(self):
            return controller_contexts(max_brokers=8, min_brokers=1, custom_listeners=False)

        def after_send(self, sent):
            # sent: {broker_id: [(OutboundRequest, callback), ...]} of the last successful send
            for items in sent.values():
                assert [r.version for r, _ in items] == [{4: 7, 6: 8, 5: 4}[r.api_key] for r, _ in items]

        @rule()
        def everyone_shuts_down(self):
            self.context.shutting_down_broker_ids.update(self.context.live_or_shutting_down_broker_ids)

    TestModernClusters = ModernClusters.TestCase
    TestModernClusters.settings = settings(max_examples=25, stateful_step_count=20, deadline=None)

The base machine runs the same way: ``TestBatchStateMachine = BatchStateMachine.TestCase``.
Run with ``--hypothesis-show-statistics`` to see how often the subtle cases (sticky flags,
refused newBatch, failed sends, late StopReplica answers) were reached.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ctrlbatch.batch import (
    ControllerBrokerRequestBatch,
    IllegalStateError,
    LeaderAndIsrResponseReceived,
    OutboundRequest,
    RecordingTransport,
    TopicDeletionStopReplicaResponseReceived,
    UpdateMetadataResponseReceived,
    UpdateType,
)
from ctrlbatch.context import ZERO_UUID, ControllerContext, MetadataVersion, TopicPartition
from ctrlbatch.context import MetadataVersion as MV
from ctrlbatch.requests import StopReplicaPartitionError, StopReplicaResponse, decode_request

from .batch_ops import (
    AddLeaderAndIsr,
    AddStopReplica,
    AddUpdateMetadata,
    BatchOp,
    around,
    batch_ops,
    focus_partitions,
    op_partitions,
    related_ops,
)
from .contexts import ChannelContextView, context_mutations, controller_contexts, metadata_versions

__all__ = [
    "API_ORDER",
    "BatchModel",
    "BatchStateMachine",
    "ExpectedLeaderAndIsr",
    "ExpectedStopReplica",
    "ExpectedUpdateMetadata",
    "Sent",
    "check_frame",
    "check_sent",
    "expected_leader_and_isr_version",
    "expected_stop_replica_version",
    "expected_update_metadata_version",
    "predict_send_failure",
]

LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA = 4, 5, 6
API_ORDER = (LEADER_AND_ISR, UPDATE_METADATA, STOP_REPLICA)
"""The order in which one broker receives one send's requests."""

Sent = Mapping[int, list[tuple[OutboundRequest, Any]]]
"""``RecordingTransport.sent``: broker id -> [(request, callback)] in send order."""

# §8.1-8.3, restated from the reference rather than imported from batch/versions.py.
_LAIR_TABLE = ((MV.IBP_3_4_IV0, 7), (MV.IBP_3_2_IV0, 6), (MV.IBP_2_8_IV1, 5), (MV.IBP_2_4_IV1, 4),
               (MV.IBP_2_4_IV0, 3), (MV.IBP_2_2_IV0, 2), (MV.IBP_1_0_IV0, 1))
_UMR_TABLE = ((MV.IBP_3_4_IV0, 8), (MV.IBP_2_8_IV1, 7), (MV.IBP_2_4_IV1, 6), (MV.IBP_2_2_IV0, 5),
              (MV.IBP_1_0_IV0, 4), (MV.IBP_0_10_2_IV0, 3), (MV.IBP_0_10_0_IV1, 2), (MV.IBP_0_9_0, 1))
_SR_TABLE = ((MV.IBP_3_4_IV0, 4), (MV.IBP_2_6_IV0, 3), (MV.IBP_2_4_IV1, 2), (MV.IBP_2_2_IV0, 1))


def _pick(table: tuple[tuple[MV, int], ...], mv: MV) -> int:
    return next((v for since, v in table if mv >= since), 0)


def expected_leader_and_isr_version(mv: MetadataVersion) -> int:
    return _pick(_LAIR_TABLE, mv)


def expected_update_metadata_version(mv: MetadataVersion) -> int:
    return _pick(_UMR_TABLE, mv)


def expected_stop_replica_version(mv: MetadataVersion) -> int:
    return _pick(_SR_TABLE, mv)


# ---------------------------------------------------------------------------- model


@attrs.frozen
class ExpectedLeaderAndIsr:
    """What the batch must hold for (broker, partition); names match LeaderAndIsrPartitionState."""

    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    is_new: bool
    leader_recovery_state: int


@attrs.frozen
class ExpectedUpdateMetadata:
    """What UpdateMetadata must carry for a partition; names match UpdateMetadataPartitionState."""

    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]


@attrs.frozen
class ExpectedStopReplica:
    leader_epoch: int
    delete_partition: bool


def _replica_online(context: ControllerContext, broker_id: int, tp: TopicPartition) -> bool:
    """CC:238-248, from the context's raw sets: live, not shutting down, not on an offline dir."""
    return (
        broker_id in context.live_broker_id_and_epochs
        and broker_id not in context.shutting_down_broker_ids
        and tp not in context.replicas_on_offline_dirs.get(broker_id, ())
    )


def expected_update_metadata_state(context: ControllerContext, tp: TopicPartition) -> ExpectedUpdateMetadata | None:
    """§6(a): the UpdateMetadata state of tp from the context now, or None without leadership."""
    info = context.partitions_leadership_info.get(tp)
    if info is None:
        return None
    lai = info.leader_and_isr
    replicas = tuple(context.partition_full_replica_assignment(tp).replicas)
    offline = tuple(r for r in replicas if not _replica_online(context, r, tp))
    if tp.topic in context.topics_queued_for_deletion:
        leader, leader_epoch, zk_version = -2, 0, 0
    else:
        leader, leader_epoch, zk_version = lai.leader, lai.leader_epoch, lai.partition_epoch
    return ExpectedUpdateMetadata(info.controller_epoch, leader, leader_epoch, tuple(lai.isr), zk_version, replicas, offline)


def expected_leader_epoch(context: ControllerContext, tp: TopicPartition) -> int:
    """CC:457-467: -2 when queued for deletion, else the cached epoch, else -1."""
    if tp.topic in context.topics_queued_for_deletion:
        return -2
    info = context.partitions_leadership_info.get(tp)
    return -1 if info is None else info.leader_and_isr.leader_epoch


@attrs.define
class BatchModel:
    """What the batch holds, predicted from the operations and the context at each add."""

    started: bool = False
    """newBatch ran since construction or the last clear (the batch holds a context)."""
    metadata_version: MetadataVersion | None = None
    leader_and_isr: dict[int, dict[TopicPartition, ExpectedLeaderAndIsr]] = attrs.Factory(dict)
    update_metadata_brokers: set[int] = attrs.Factory(set)
    update_metadata_partitions: dict[TopicPartition, ExpectedUpdateMetadata] = attrs.Factory(dict)
    stop_replica: dict[int, dict[TopicPartition, ExpectedStopReplica]] = attrs.Factory(dict)
    update_type: int = 0

    def new_batch_error(self) -> str | None:
        """§4: the 'might be lost' kind newBatch must raise, in check order, or None."""
        if self.leader_and_isr:
            return "Some LeaderAndIsr state changes"
        if self.stop_replica:
            return "Some StopReplica state changes"
        if self.update_metadata_brokers:
            return "Some UpdateMetadata state changes"
        return None

    def new_batch(self, metadata_version: MetadataVersion) -> None:
        """A successful newBatch; leftover UpdateMetadata partitions (no brokers) stay."""
        self.started = True
        self.metadata_version = metadata_version

    def clear(self) -> None:
        self.started = False
        self.leader_and_isr.clear()
        self.update_metadata_brokers.clear()
        self.update_metadata_partitions.clear()
        self.stop_replica.clear()
        self.update_type = 0

    def record(self, op: BatchOp, context: ControllerContext) -> None:
        """Apply ``op`` to the model, reading ``context`` as it is now (call right after op.apply)."""
        if isinstance(op, AddLeaderAndIsr):
            lai = op.leadership.leader_and_isr
            mv = self.metadata_version
            recovery = int(lai.leader_recovery_state) if mv is not None and mv >= MV.IBP_3_2_IV0 else 0
            a = op.assignment
            for b in op.broker_ids:
                if b < 0:
                    continue
                inner = self.leader_and_isr.setdefault(b, {})
                prev = inner.get(op.partition)
                inner[op.partition] = ExpectedLeaderAndIsr(
                    op.leadership.controller_epoch, lai.leader, lai.leader_epoch, tuple(lai.isr), lai.partition_epoch,
                    tuple(a.replicas), tuple(a.adding_replicas), tuple(a.removing_replicas),
                    op.is_new or (prev is not None and prev.is_new), recovery,
                )
            self._add_update_metadata(context.live_or_shutting_down_broker_ids, [op.partition], context)
        elif isinstance(op, AddUpdateMetadata):
            self._add_update_metadata(op.broker_ids, op.partitions, context)
        elif isinstance(op, AddStopReplica):
            epoch = expected_leader_epoch(context, op.partition)
            for b in op.broker_ids:
                if b < 0:
                    continue
                inner_sr = self.stop_replica.setdefault(b, {})
                prev_sr = inner_sr.get(op.partition)
                delete = op.delete_partition or (prev_sr is not None and prev_sr.delete_partition)
                inner_sr[op.partition] = ExpectedStopReplica(epoch, delete)
        else:  # pragma: no cover - a new op type needs a model
            raise TypeError(f"no model for {op!r}")

    def _add_update_metadata(self, brokers: Iterable[int], partitions: Iterable[TopicPartition], context: ControllerContext) -> None:
        self.update_metadata_brokers.update(b for b in brokers if b >= 0)
        for tp in partitions:
            state = expected_update_metadata_state(context, tp)
            if state is not None:
                self.update_metadata_partitions[tp] = state

    def sent(self) -> None:
        """After a successful send: every map empty, update type back to UNKNOWN."""
        self.leader_and_isr.clear()
        self.update_metadata_brokers.clear()
        self.update_metadata_partitions.clear()
        self.stop_replica.clear()
        self.update_type = 0


def predict_send_failure(model: BatchModel, context: ControllerContext, listener: str = "PLAINTEXT") -> str | None:
    """The phase in which send_requests_to_brokers must fail ("batch", "LeaderAndIsr",
    "UpdateMetadata"), or None when it must succeed.

    This follows the engine, which builds each body while it sends, so UpdateMetadata v1-2's
    custom-listener refusal fails the whole send. In Kafka the RequestSendThread builds the
    request (QueueItem holds the builder, §10), so the refusal never reaches the controller."""
    if not model.started or model.metadata_version is None:
        return "batch"
    live = set(context.live_or_shutting_down_broker_ids)
    registered = list(context.live_or_shutting_down_brokers)
    for b, states in model.leader_and_isr.items():
        if b in live:
            leaders = {s.leader for s in states.values()}
            if any(r.id in leaders and r.get_end_point(listener) is None for r in registered):
                return "LeaderAndIsr"  # Broker.node raises BrokerEndPointNotAvailableException
    v = expected_update_metadata_version(model.metadata_version)
    if v == 0 and any(r.get_end_point("PLAINTEXT") is None for r in registered):
        return "UpdateMetadata"
    if v in (1, 2) and model.update_metadata_brokers & live:
        for r in registered:
            if any(e.listener_name != e.security_protocol.default_listener_name for e in r.endpoints):
                return "UpdateMetadata"  # "v0-v3 does not support custom listeners"
    return None


# ---------------------------------------------------------------------------- checks


def check_frame(request: OutboundRequest, correlation_id: int, client_id: str = "1") -> Any:
    """The frame decodes back to exactly the body; returns the decoded body."""
    v = request.version
    frame = request.encode(correlation_id, client_id)
    assert frame == b"".join(bytes(p) for p in request.encode_parts(correlation_id, client_id))
    assert int.from_bytes(frame[:4], "big", signed=True) == len(frame) - 4
    decoded = decode_request(frame[4:])
    h = decoded.header
    assert (h.request_api_key, h.request_api_version) == (request.api_key, v)
    assert (h.correlation_id, h.client_id) == (correlation_id, client_id)
    assert decoded.header_version == request.header_version
    body_bytes = request.encode_body()
    assert len(body_bytes) == request.body_size()
    assert decoded.body.encode(v) == request.body.encode(v) == body_bytes
    assert request.body.broker_epoch in (request.broker_epoch, -1)
    return decoded.body


def _unique(tps: list[TopicPartition]) -> set[TopicPartition]:
    assert len(tps) == len(set(tps)), f"a partition twice in one request: {tps}"
    return set(tps)


def _unique_topics(names: list[str]) -> None:
    assert len(names) == len(set(names)), f"a topic twice in one request: {names}"


def _lair_view(s: Any, v: int) -> tuple[Any, ...]:
    return (
        s.controller_epoch, s.leader, s.leader_epoch, tuple(s.isr), s.partition_epoch, tuple(s.replicas),
        tuple(s.adding_replicas) if v >= 3 else (), tuple(s.removing_replicas) if v >= 3 else (),
        bool(s.is_new) if v >= 1 else False, s.leader_recovery_state if v >= 6 else 0,
    )


def _umr_view(s: Any, v: int) -> tuple[Any, ...]:
    return (
        s.controller_epoch, s.leader, s.leader_epoch, tuple(s.isr), s.zk_version, tuple(s.replicas),
        tuple(s.offline_replicas) if v >= 4 else (),
    )


def _grouped_partitions(body: Any, grouped: bool) -> dict[TopicPartition, Any]:
    """tp -> partition state of a LeaderAndIsr or UpdateMetadata body, grouped by topic from
    LeaderAndIsr v2 / UpdateMetadata v5 on, flat before."""
    if grouped:
        assert not body.ungrouped_partition_states
        _unique_topics([t.topic_name for t in body.topic_states])
        pairs = [(TopicPartition(t.topic_name, s.partition_index), s) for t in body.topic_states for s in t.partition_states]
    else:
        assert not body.topic_states
        pairs = [(TopicPartition(s.topic_name, s.partition_index), s) for s in body.ungrouped_partition_states]
    _unique([tp for tp, _ in pairs])
    return dict(pairs)


def _lair_partitions(body: Any, v: int) -> dict[TopicPartition, Any]:
    return _grouped_partitions(body, v >= 2)


def _umr_partitions(body: Any, v: int) -> dict[TopicPartition, Any]:
    return _grouped_partitions(body, v >= 5)


def _sr_partitions(body: Any, v: int) -> dict[TopicPartition, tuple[int, bool]]:
    """tp -> (leader epoch, delete) as the receiving broker reads them (SRRq:134-166)."""
    if v >= 3:
        _unique_topics([t.topic_name for t in body.topic_states])
        pairs = [
            (TopicPartition(t.topic_name, p.partition_index), (p.leader_epoch, p.delete_partition))
            for t in body.topic_states for p in t.partition_states
        ]
    elif v >= 1:
        _unique_topics([t.name for t in body.topics])
        pairs = [(TopicPartition(t.name, i), (-1, body.delete_partitions)) for t in body.topics for i in t.partition_indexes]
    else:
        pairs = [(TopicPartition(p.topic_name, p.partition_index), (-1, body.delete_partitions)) for p in body.ungrouped_partitions]
    _unique([tp for tp, _ in pairs])
    return dict(pairs)


def _broker_view(context: ControllerContext, v: int) -> list[tuple[Any, ...]]:
    """§8.2 liveBrokers from the context now, as the receiving broker decodes them."""
    out: list[tuple[Any, ...]] = []
    for b in context.live_or_shutting_down_brokers:
        if v == 0:
            e = b.end_point("PLAINTEXT")
            out.append((b.id, e.host, e.port, ()))
        else:
            eps = tuple((e.port, e.host, e.listener_name if v >= 3 else "", int(e.security_protocol)) for e in b.endpoints)
            out.append((b.id, b.rack if v >= 2 else "", 0, eps))
    return sorted(out, key=repr)


def _decoded_broker_view(body: Any, v: int) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for b in body.live_brokers:
        if v == 0:
            out.append((b.id, b.v0_host, b.v0_port, ()))
        else:
            eps = tuple((e.port, e.host, e.listener, e.security_protocol) for e in b.endpoints)
            out.append((b.id, b.rack, 0, eps))
    return sorted(out, key=repr)


def _requests(sent: Sent, api_key: int) -> dict[int, list[tuple[OutboundRequest, Any]]]:
    out: dict[int, list[tuple[OutboundRequest, Any]]] = {}
    for b, items in sent.items():
        hits = [(r, cb) for r, cb in items if r.api_key == api_key]
        if hits:
            out[b] = hits
    return out


def check_shape(sent: Sent, context: ControllerContext, stop_replica_version: int) -> None:
    """Recipients are live-or-shutting-down (no negative ids); per broker at most one LeaderAndIsr,
    one UpdateMetadata and one StopReplica (two below v3), in that order."""
    live = set(context.live_or_shutting_down_broker_ids)
    for b, items in sent.items():
        assert b >= 0 and b in live, f"request to broker {b}, not live or shutting down ({sorted(live)})"
        keys = [r.api_key for r, _ in items]
        assert keys == sorted(keys, key=API_ORDER.index), f"broker {b} got api keys in order {keys}"
        assert keys.count(LEADER_AND_ISR) <= 1 and keys.count(UPDATE_METADATA) <= 1
        assert keys.count(STOP_REPLICA) <= (1 if stop_replica_version >= 3 else 2)


def check_leader_and_isr_sent(
    model: BatchModel, context: ControllerContext, sent: Sent, *, controller_id: int, controller_epoch: int,
    kraft_controller: bool = False, listener: str = "PLAINTEXT",
) -> None:
    assert model.metadata_version is not None
    v = expected_leader_and_isr_version(model.metadata_version)
    live = set(context.live_or_shutting_down_broker_ids)
    epochs = context.live_broker_id_and_epochs
    got = _requests(sent, LEADER_AND_ISR)
    assert set(got) == {b for b in model.leader_and_isr if b in live}, "LeaderAndIsr recipients"
    for b, [(req, cb)] in got.items():
        expected = model.leader_and_isr[b]
        assert req.version == v and req.broker_epoch == epochs[b] and cb is not None
        body = check_frame(req, b)
        assert body.controller_id == controller_id and body.controller_epoch == controller_epoch
        assert body.broker_epoch == (epochs[b] if v >= 2 else -1)
        assert body.type == (model.update_type if v >= 5 else 0)
        assert body.is_k_raft_controller == (kraft_controller if v >= 7 else False)
        parts = _lair_partitions(body, v)
        assert {tp: _lair_view(s, v) for tp, s in parts.items()} == {tp: _lair_view(s, v) for tp, s in expected.items()}
        if v >= 5:
            for t in body.topic_states:
                assert t.topic_id == context.topic_ids.get(t.topic_name, ZERO_UUID)
        leaders = {s.leader for s in expected.values()}
        want = sorted(
            (r.id, n.host, n.port) for r in context.live_or_shutting_down_brokers if r.id in leaders
            for n in [r.node(listener)]
        )
        assert sorted((x.broker_id, x.host_name, x.port) for x in body.live_leaders) == want


def check_update_metadata_sent(
    model: BatchModel, context: ControllerContext, sent: Sent, *, controller_id: int, controller_epoch: int,
    kraft_controller: bool = False,
) -> None:
    assert model.metadata_version is not None
    v = expected_update_metadata_version(model.metadata_version)
    live = set(context.live_or_shutting_down_broker_ids)
    epochs = context.live_broker_id_and_epochs
    got = _requests(sent, UPDATE_METADATA)
    assert set(got) == model.update_metadata_brokers & live, "UpdateMetadata recipients"
    shared = None
    want_parts = {tp: _umr_view(s, v) for tp, s in model.update_metadata_partitions.items()}
    want_brokers = _broker_view(context, v)
    for b, [(req, cb)] in got.items():
        assert req.version == v and req.broker_epoch == epochs[b] and cb is not None
        body = check_frame(req, b)
        assert body.controller_id == controller_id and body.controller_epoch == controller_epoch
        assert body.broker_epoch == (epochs[b] if v >= 5 else -1)
        assert body.type == (model.update_type if v >= 8 else 0)
        assert body.is_k_raft_controller == (kraft_controller if v >= 8 else False)
        assert {tp: _umr_view(s, v) for tp, s in _umr_partitions(body, v).items()} == want_parts
        if v >= 7:
            for t in body.topic_states:
                assert t.topic_id == context.topic_ids.get(t.topic_name, ZERO_UUID)
        assert _decoded_broker_view(body, v) == want_brokers
        same = attrs.evolve(body, broker_epoch=-1)
        if shared is None:
            shared = same
        assert same == shared, "UpdateMetadata bodies differ in more than the broker epoch"


def check_stop_replica_sent(
    model: BatchModel, context: ControllerContext, sent: Sent, *, controller_id: int, controller_epoch: int,
    kraft_controller: bool = False,
) -> None:
    assert model.metadata_version is not None
    v = expected_stop_replica_version(model.metadata_version)
    live = set(context.live_or_shutting_down_broker_ids)
    epochs = context.live_broker_id_and_epochs
    got = _requests(sent, STOP_REPLICA)
    assert set(got) == {b for b in model.stop_replica if b in live}, "StopReplica recipients"
    for b, items in got.items():
        expected = model.stop_replica[b]
        if v >= 3:
            groups = [(False, {tp: (s.leader_epoch, s.delete_partition) for tp, s in expected.items()})]
        else:
            delete = {tp: (-1, True) for tp, s in expected.items() if s.delete_partition}
            keep = {tp: (-1, False) for tp, s in expected.items() if not s.delete_partition}
            groups = [(flag, g) for flag, g in ((True, delete), (False, keep)) if g]
        assert len(items) == len(groups), f"broker {b}: {len(items)} StopReplica requests, want {len(groups)}"
        for (req, cb), (flag, want) in zip(items, groups, strict=True):
            assert req.version == v and req.broker_epoch == epochs[b]
            body = check_frame(req, b)
            assert body.controller_id == controller_id and body.controller_epoch == controller_epoch
            assert body.broker_epoch == (epochs[b] if v >= 1 else -1)
            assert body.is_k_raft_controller == (kraft_controller if v >= 4 else False)
            assert body.delete_partitions == (flag if v < 3 else False)
            assert _sr_partitions(body, v) == want
            assert (cb is not None) == (v >= 3 or flag), "StopReplica callback only where it can matter"


def check_sent(
    model: BatchModel, context: ControllerContext, sent: Sent, *, controller_id: int, controller_epoch: int,
    kraft_controller: bool = False, listener: str = "PLAINTEXT",
) -> None:
    """Everything a successful send must have handed to the transport (see the module rules)."""
    assert model.metadata_version is not None
    check_shape(sent, context, expected_stop_replica_version(model.metadata_version))
    kw: dict[str, Any] = {"controller_id": controller_id, "controller_epoch": controller_epoch, "kraft_controller": kraft_controller}
    check_leader_and_isr_sent(model, context, sent, listener=listener, **kw)
    check_update_metadata_sent(model, context, sent, **kw)
    check_stop_replica_sent(model, context, sent, **kw)


def check_batch_matches_model(batch: ControllerBrokerRequestBatch, model: BatchModel) -> None:
    """The batch's pending maps hold exactly what the model predicts (full field values)."""
    lair = {b: {tp: _lair_view(s, 99) for tp, s in inner.items()} for b, inner in batch.leader_and_isr_request_map.items()}
    assert lair == {b: {tp: _lair_view(s, 99) for tp, s in inner.items()} for b, inner in model.leader_and_isr.items()}
    for inner in batch.leader_and_isr_request_map.values():
        for tp, s in inner.items():
            assert (s.topic_name, s.partition_index) == (tp.topic, tp.partition)
    sr = {
        b: {tp: ExpectedStopReplica(s.leader_epoch, s.delete_partition) for tp, s in inner.items()}
        for b, inner in batch.stop_replica_request_map.items()
    }
    assert sr == model.stop_replica
    for sr_inner in batch.stop_replica_request_map.values():
        assert all(s.partition_index == tp.partition for tp, s in sr_inner.items())
    assert set(batch.update_metadata_request_broker_set) == model.update_metadata_brokers
    umr = {tp: _umr_view(s, 99) for tp, s in batch.update_metadata_request_partition_info_map.items()}
    assert umr == {tp: _umr_view(s, 99) for tp, s in model.update_metadata_partitions.items()}
    for tp, umr_state in batch.update_metadata_request_partition_info_map.items():
        assert (umr_state.topic_name, umr_state.partition_index) == (tp.topic, tp.partition)
    assert int(batch.update_type) == model.update_type


# ---------------------------------------------------------------------------- machine


@attrs.frozen
class _PendingStopReplica:
    broker_id: int
    version: int
    partitions: dict[TopicPartition, tuple[int, bool]] = attrs.field(eq=False)
    callback: Any = attrs.field(eq=False)


class BatchStateMachine(RuleBasedStateMachine):
    """One ControllerBrokerRequestBatch over one mutable ControllerContext, checked against BatchModel."""

    listener = "PLAINTEXT"
    max_pending_responses = 8

    def __init__(self) -> None:
        super().__init__()
        self.context: ControllerContext = ControllerContext()
        self.batch_context: Any = self.context
        """What the batch reads: the context itself or a ChannelContextView of it (no hints)."""
        self.metadata_version: MetadataVersion = MetadataVersion.LATEST_PRODUCTION
        self.controller_id = 0
        self.kraft_controller = False
        self.transport = RecordingTransport()
        self.batch: ControllerBrokerRequestBatch | None = None
        self.model = BatchModel()
        self.pending: list[_PendingStopReplica] = []
        self.applied: list[BatchOp] = []
        """The adds since the last successful send or clear."""

    # ------------------------------------------------------------------ hooks

    def context_strategy(self) -> st.SearchStrategy[ControllerContext]:
        return controller_contexts(min_brokers=1)

    def metadata_version_strategy(self) -> st.SearchStrategy[MetadataVersion]:
        return metadata_versions()

    def mutation_strategy(self) -> st.SearchStrategy[Any]:
        """A context mutation; drawn against the context as it is at that step."""
        return context_mutations(self.context)

    def op_strategy(self, partitions: st.SearchStrategy[TopicPartition] | None = None) -> st.SearchStrategy[BatchOp]:
        """An add; ``partitions`` (when given) narrows the partitions it touches."""
        return batch_ops(self.context, partitions)

    def make_batch(self, providers: bool = False) -> ControllerBrokerRequestBatch:
        """The batch under test, over ``self.batch_context``; ``providers``: pass the context
        and metadata version as zero-argument callables (Kafka's ``metadataProvider``)."""
        context: Any = self.batch_context
        mv: Any = self.metadata_version
        if providers:
            context, mv = (lambda: self.batch_context), (lambda: self.metadata_version)
        return ControllerBrokerRequestBatch(
            self.controller_id, context, mv, self.transport,
            kraft_controller=self.kraft_controller, inter_broker_listener_name=self.listener,
        )

    def after_send(self, sent: Sent) -> None:
        """Extra checks on a successful send's requests ({broker: [(request, callback)]})."""

    # ------------------------------------------------------------------ rules

    @initialize(data=st.data())
    def init_cluster(self, data: st.DataObject) -> None:
        self.context = data.draw(self.context_strategy(), label="context")
        self.metadata_version = data.draw(self.metadata_version_strategy(), label="metadata_version")
        self.controller_id = data.draw(st.integers(0, 10), label="controller_id")
        self.kraft_controller = data.draw(st.booleans(), label="kraft_controller")
        if data.draw(st.booleans(), label="plain ControllerChannelContext"):
            self.batch_context = ChannelContextView(self.context)
        else:
            self.batch_context = self.context
        self.batch = self.make_batch(providers=data.draw(st.booleans(), label="providers"))
        if data.draw(st.sampled_from([True] * 7 + [False]), label="start a batch"):
            self._new_batch()

    @rule(data=st.data())
    def mutate_context(self, data: st.DataObject) -> None:
        data.draw(self.mutation_strategy(), label="mutation").apply(self.context)

    @rule()
    def new_batch(self) -> None:
        self._new_batch()

    @precondition(lambda self: self.model.started)
    @rule(data=st.data())
    def add(self, data: st.DataObject) -> None:
        """One add, often a repeat (new flag) of an earlier add of this batch or to its brokers."""
        self._apply(data.draw(related_ops(self.op_strategy(), self.applied), label="op"))

    @precondition(lambda self: self.model.started)
    @rule(data=st.data())
    def add_many(self, data: st.DataObject) -> None:
        """Several adds on a few focus partitions, the context changing in between."""
        self._adds(data)

    @precondition(lambda self: self.model.started and self.model.new_batch_error() is None)
    @rule(data=st.data())
    def update_metadata_leftover(self, data: st.DataObject) -> None:
        """§4: UpdateMetadata partitions added with no broker survive newBatch and go with the next send."""
        partitions = data.draw(st.lists(op_partitions(self.context), min_size=1, max_size=3), label="partitions")
        nobody = data.draw(st.sampled_from([(), (-1,)]), label="brokers")
        self._apply(AddUpdateMetadata(nobody, tuple(partitions)))
        self._new_batch()

    @precondition(lambda self: self.model.new_batch_error() is not None)
    @rule()
    def refused_new_batch(self) -> None:
        """newBatch on a non-empty batch: refused, checks in order LeaderAndIsr, StopReplica, UpdateMetadata."""
        self._new_batch()

    @precondition(lambda self: not self.model.started)
    @rule(data=st.data())
    def add_without_batch(self, data: st.DataObject) -> None:
        """§4: adds need a context captured by newBatch (Kafka: an NPE)."""
        assert self.batch is not None
        op = data.draw(self.op_strategy(), label="op")
        try:
            op.apply(self.batch)
        except IllegalStateError:
            return
        raise AssertionError(f"{op!r} succeeded without new_batch()")

    @rule(update_type=st.sampled_from(list(UpdateType)))
    def set_update_type(self, update_type: UpdateType) -> None:
        assert self.batch is not None
        self.batch.set_update_type(update_type)
        self.model.update_type = int(update_type)

    @rule(controller_epoch=st.integers(0, (1 << 31) - 1))
    def send(self, controller_epoch: int) -> None:
        self._send(controller_epoch)

    @precondition(lambda self: self.model.new_batch_error() is None)
    @rule(data=st.data(), controller_epoch=st.integers(0, 100))
    def whole_batch(self, data: st.DataObject, controller_epoch: int) -> None:
        """The controller's usual pattern: newBatch, some adds, send."""
        self._new_batch()
        self._adds(data)
        self._send(controller_epoch)

    @rule()
    def clear(self) -> None:
        assert self.batch is not None
        self.batch.clear()
        self.model.clear()
        self.applied.clear()
        assert self.batch.metadata_instance is None

    @precondition(lambda self: bool(self.pending))
    @rule(data=st.data())
    def answer_stop_replica(self, data: st.DataObject) -> None:
        """A StopReplica response arrives, maybe after the context moved on (CCM:657-670)."""
        assert self.batch is not None
        p = self.pending.pop(data.draw(st.integers(0, len(self.pending) - 1), label="which"))
        codes = st.sampled_from([0, 0, 56, -1])
        errors = [StopReplicaPartitionError(tp.topic, tp.partition, data.draw(codes)) for tp in p.partitions]
        if data.draw(st.booleans(), label="stray partition"):
            # A partition the request did not name: only "delete = true" below v3 keeps it (_ => true).
            topics = sorted(self.context.topics_with_deletion_started) or ["stray"]
            errors.append(StopReplicaPartitionError(data.draw(st.sampled_from(topics)), 99999, 0))
        top = data.draw(codes, label="top-level error")
        response = StopReplicaResponse(error_code=top, partition_errors=errors)

        def deleted(tp: TopicPartition) -> bool:
            return p.version < 3 or p.partitions.get(tp, (0, False))[1]

        kept = {
            TopicPartition(e.topic_name, e.partition_index): e.error_code
            for e in errors
            if self.context.is_topic_deletion_in_progress(e.topic_name)
            and deleted(TopicPartition(e.topic_name, e.partition_index))
        }
        before = len(self.batch.events)
        p.callback(response)
        new = self.batch.events[before:]
        event(f"StopReplica answer: {'event' if kept else 'no event'}")
        assert new == ([TopicDeletionStopReplicaResponseReceived(p.broker_id, top, kept)] if kept else [])

    @invariant()
    def batch_matches_model(self) -> None:
        if self.batch is not None:
            check_batch_matches_model(self.batch, self.model)

    # ------------------------------------------------------------------ steps

    def _new_batch(self) -> None:
        assert self.batch is not None
        want = self.model.new_batch_error()
        try:
            self.batch.new_batch()
        except IllegalStateError as e:
            assert want is not None, f"new_batch() raised {e}"
            msg = str(e)
            assert msg.startswith("Controller to broker state change requests batch is not empty while creating a new one. ")
            assert want in msg and msg.endswith("might be lost "), msg
            event("new_batch refused")
            return
        assert want is None, f"new_batch() should have raised ({want})"
        assert self.batch.metadata_instance is self.batch_context
        self.model.new_batch(self.metadata_version)

    def _adds(self, data: st.DataObject, max_steps: int = 6) -> None:
        """Adds around a few focus partitions (``related_ops``), sometimes mutating the context in between."""
        fresh = self.op_strategy(around(self.context, data.draw(focus_partitions(self.context), label="focus")))
        for _ in range(data.draw(st.sampled_from(range(max_steps + 1)), label="steps")):
            if data.draw(st.integers(0, 3), label="mutate?") == 0:
                data.draw(self.mutation_strategy(), label="mutation").apply(self.context)
            else:
                self._apply(data.draw(related_ops(fresh, self.applied), label="op"))

    def _apply(self, op: BatchOp) -> None:
        assert self.batch is not None
        self._note_coverage(op)
        op.apply(self.batch)
        self.model.record(op, self.context)
        self.applied.append(op)

    def _note_coverage(self, op: BatchOp) -> None:
        """Hypothesis events for the subtle cases, so --hypothesis-show-statistics shows their reach."""
        m = self.model
        if isinstance(op, AddLeaderAndIsr) and not op.is_new:
            if any(op.partition in m.leader_and_isr.get(b, {}) and m.leader_and_isr[b][op.partition].is_new for b in op.broker_ids):
                event("sticky is_new kept")
        elif isinstance(op, AddStopReplica) and not op.delete_partition:
            if any(op.partition in m.stop_replica.get(b, {}) and m.stop_replica[b][op.partition].delete_partition for b in op.broker_ids):
                event("sticky delete_partition kept")
        tps = op.partitions if isinstance(op, AddUpdateMetadata) else (op.partition,)
        for tp in tps:
            if tp in m.update_metadata_partitions and m.update_metadata_partitions[tp] != expected_update_metadata_state(self.context, tp):
                event("UpdateMetadata state replaced by a different one")

    def _send(self, controller_epoch: int) -> None:
        batch = self.batch
        assert batch is not None
        self.transport.clear()
        failure = predict_send_failure(self.model, self.context, self.listener)
        kw: dict[str, Any] = {"controller_id": self.controller_id, "controller_epoch": controller_epoch, "kraft_controller": self.kraft_controller}
        try:
            batch.send_requests_to_brokers(controller_epoch)
        except IllegalStateError as e:
            assert failure is not None, f"send failed: {e!r} (cause {e.__cause__!r})"
            self._check_failed_send(failure, kw)
            event(f"send failed: {failure}")
            return
        assert failure is None, f"send should have failed in phase {failure}"
        assert not batch.leader_and_isr_request_map and not batch.stop_replica_request_map
        assert not batch.update_metadata_request_broker_set and not batch.update_metadata_request_partition_info_map
        sent = self.transport.sent
        check_sent(self.model, self.context, sent, listener=self.listener, **kw)
        self._check_callbacks(sent)
        self.after_send(sent)
        self.model.sent()
        self.applied.clear()
        kinds = sorted({r.api_key for items in sent.values() for r, _ in items}, key=API_ORDER.index)
        event(f"send ok, api keys sent: {kinds}")

    def _check_failed_send(self, failure: str, kw: dict[str, Any]) -> None:
        """§8: the failing phase and the later ones keep their maps; nothing of them is sent."""
        sent = self.transport.sent
        if failure == "batch":
            assert not sent
        elif failure == "UpdateMetadata":
            check_leader_and_isr_sent(self.model, self.context, sent, listener=self.listener, **kw)
            assert all(r.api_key == LEADER_AND_ISR for items in sent.values() for r, _ in items)
            self.model.leader_and_isr.clear()
        else:
            assert all(r.api_key == LEADER_AND_ISR for items in sent.values() for r, _ in items)

    def _check_callbacks(self, sent: Sent) -> None:
        """LeaderAndIsr/UpdateMetadata callbacks become events; StopReplica ones are kept for later."""
        assert self.batch is not None
        for b, items in sent.items():
            for req, cb in items:
                if req.api_key == STOP_REPLICA:
                    if cb is not None:
                        self.pending.append(_PendingStopReplica(b, req.version, _sr_partitions(req.body, req.version), cb))
                    continue
                before = len(self.batch.events)
                marker = object()
                cb(marker)
                kind = LeaderAndIsrResponseReceived if req.api_key == LEADER_AND_ISR else UpdateMetadataResponseReceived
                assert self.batch.events[before:] == [kind(marker, b)]  # type: ignore[arg-type]
        del self.pending[: -self.max_pending_responses]
