"""The batch under ctrlbatch.testing's state machine, plus property tests of the strategies.

Rules: everything here goes through the public tooling of ctrlbatch.testing (contexts,
batch_ops, state_machine), so these tests are also its usage examples. Settings keep the whole
module well under a minute on two cores; deadlines are off (encoding time varies with the
drawn cluster).
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import rule

from ctrlbatch.batch import (
    ControllerBrokerRequestBatch,
    IllegalStateError,
    RecordingTransport,
    leader_and_isr_version,
    stop_replica_version,
    update_metadata_version,
)
from ctrlbatch.context import ZERO_UUID, ControllerContext, MetadataVersion, SecurityProtocol
from ctrlbatch.testing import (
    AddLeaderAndIsr,
    AddStopReplica,
    AddUpdateMetadata,
    BatchModel,
    BatchStateMachine,
    apply_ops,
    batch_op_sequences,
    batch_ops,
    check_sent,
    context_mutations,
    controller_contexts,
    metadata_versions,
    predict_send_failure,
    referenced_broker_ids,
)
from ctrlbatch.testing.state_machine import (
    expected_leader_and_isr_version,
    expected_stop_replica_version,
    expected_update_metadata_version,
)

MV = MetadataVersion
MACHINE_SETTINGS = settings(
    max_examples=100, stateful_step_count=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
PROPERTY_SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------------- the machine

TestBatchStateMachine = BatchStateMachine.TestCase
TestBatchStateMachine.settings = MACHINE_SETTINGS


class ModernClusters(BatchStateMachine):
    """The state_machine module docstring's subclassing example, verbatim."""

    def metadata_version_strategy(self) -> st.SearchStrategy[MetadataVersion]:
        return st.just(MV.IBP_3_9_IV0)

    def context_strategy(self) -> st.SearchStrategy[ControllerContext]:
        return controller_contexts(max_brokers=8, min_brokers=1, custom_listeners=False)

    def after_send(self, sent: Any) -> None:
        for items in sent.values():
            assert [r.version for r, _ in items] == [{4: 7, 6: 8, 5: 4}[r.api_key] for r, _ in items]

    @rule()
    def everyone_shuts_down(self) -> None:
        self.context.shutting_down_broker_ids.update(self.context.live_or_shutting_down_broker_ids)


TestModernClusters = ModernClusters.TestCase
TestModernClusters.settings = settings(MACHINE_SETTINGS, max_examples=25)

# ---------------------------------------------------------------------------- one batch


def _frames(transport: RecordingTransport) -> list[tuple[int, bytes]]:
    return [(b, r.encode(i, "1")) for b, items in transport.sent.items() for i, (r, _) in enumerate(items)]


def _run(context: ControllerContext, mv: MetadataVersion, ops: tuple[Any, ...], epoch: int) -> tuple[Any, RecordingTransport]:
    """new_batch, ops, send; returns (error text or None, transport)."""
    transport = RecordingTransport()
    batch = ControllerBrokerRequestBatch(3, context, mv, transport)
    batch.new_batch()
    apply_ops(ops, batch)
    try:
        batch.send_requests_to_brokers(epoch)
    except IllegalStateError as e:
        return str(e), transport
    return None, transport


@PROPERTY_SETTINGS
@given(controller_contexts(min_brokers=1), metadata_versions(), st.data(), st.integers(0, (1 << 31) - 1))
def test_one_batch_matches_the_model(context: ControllerContext, mv: MetadataVersion, data: st.DataObject, epoch: int) -> None:
    ops = data.draw(batch_op_sequences(context), label="ops")
    model = BatchModel()
    model.new_batch(mv)
    for op in ops:
        model.record(op, context)
    failure = predict_send_failure(model, context)
    error, transport = _run(context, mv, ops, epoch)
    assert (error is None) == (failure is None), (error, failure)
    if error is None:
        check_sent(model, context, transport.sent, controller_id=3, controller_epoch=epoch)


@PROPERTY_SETTINGS
@given(controller_contexts(), metadata_versions(), st.data())
def test_same_ops_on_pickled_contexts_give_identical_frames(context: ControllerContext, mv: MetadataVersion, data: st.DataObject) -> None:
    """Determinism: the ops and the context pickle, and replaying gives byte-identical frames
    in the same order (brokers, requests and partitions alike)."""
    ops = data.draw(batch_op_sequences(context), label="ops")
    replayed = pickle.loads(pickle.dumps(ops))
    assert replayed == ops
    first = _run(pickle.loads(pickle.dumps(context)), mv, ops, 7)
    second = _run(pickle.loads(pickle.dumps(context)), mv, replayed, 7)
    assert first[0] == second[0]
    assert _frames(first[1]) == _frames(second[1])


def test_version_tables_agree_with_the_engine() -> None:
    """The model's IBP tables (restated from the reference) equal batch/versions.py for all 57 IBPs."""
    assert len(MV.VERSIONS) == 57
    for mv in MV.VERSIONS:
        assert expected_leader_and_isr_version(mv) == leader_and_isr_version(mv), mv
        assert expected_update_metadata_version(mv) == update_metadata_version(mv), mv
        assert expected_stop_replica_version(mv) == stop_replica_version(mv), mv


# ---------------------------------------------------------------------------- the strategies


def _snapshot(c: ControllerContext) -> tuple[Any, ...]:
    """Everything the batch can read from a context, as plain comparable data."""
    return (
        list(c.live_or_shutting_down_brokers), dict(c.live_broker_id_and_epochs), sorted(c.shutting_down_broker_ids),
        sorted(c.all_topics), dict(c.topic_ids),
        sorted((tp, c.partition_full_replica_assignment(tp)) for tp in c.all_partitions),
        sorted(c.partitions_leadership_info.items()),
        sorted((b, sorted(tps)) for b, tps in c.replicas_on_offline_dirs.items()),
        sorted(c.topics_queued_for_deletion), sorted(c.topics_with_deletion_started),
    )


@PROPERTY_SETTINGS
@given(controller_contexts())
def test_contexts_have_the_promised_shape(context: ControllerContext) -> None:
    live = set(context.live_or_shutting_down_broker_ids)
    assert all(b >= 0 for b in referenced_broker_ids(context))
    assert all(e >= 0 for e in context.live_broker_id_and_epochs.values())
    assert {b.id for b in context.live_or_shutting_down_brokers} == live
    for broker in context.live_or_shutting_down_brokers:
        assert 1 <= len(broker.endpoints) <= 2
        assert broker.end_point("PLAINTEXT").security_protocol == SecurityProtocol.PLAINTEXT
    assert context.shutting_down_broker_ids <= live
    assert set(context.topics_with_deletion_started) <= set(context.topics_queued_for_deletion) <= set(context.all_topics)
    ids = list(context.topic_ids.values())
    assert len(set(ids)) == len(ids) and ZERO_UUID not in ids
    assert _snapshot(pickle.loads(pickle.dumps(context))) == _snapshot(context)


@PROPERTY_SETTINGS
@given(controller_contexts(), st.data())
def test_mutations_replay_on_a_copy(context: ControllerContext, data: st.DataObject) -> None:
    copy = pickle.loads(pickle.dumps(context))
    for _ in range(data.draw(st.integers(0, 6), label="n")):
        mutation = data.draw(context_mutations(context), label="mutation")
        mutation.apply(context)
        pickle.loads(pickle.dumps(mutation)).apply(copy)
    assert _snapshot(copy) == _snapshot(context)


_FIND = settings(max_examples=2000, database=None, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize(
    "what, predicate",
    [
        ("a dead broker still in an assignment", lambda c, op: bool(referenced_broker_ids(c) - set(c.live_or_shutting_down_broker_ids))),
        ("a shutting-down broker", lambda c, op: bool(c.shutting_down_broker_ids)),
        ("a topic without id", lambda c, op: bool(set(c.all_topics) - set(c.topic_ids))),
        ("a topic whose deletion began", lambda c, op: bool(c.topics_with_deletion_started)),
        ("a LeaderAndIsr add with a negative id", lambda c, op: isinstance(op, AddLeaderAndIsr) and min(op.broker_ids, default=0) < 0),
        ("an add to a dead broker", lambda c, op: any(b >= 0 and b not in c.live_or_shutting_down_broker_ids for b in op.broker_ids)),
        ("an UpdateMetadata add for an unknown partition", lambda c, op: isinstance(op, AddUpdateMetadata) and any(tp not in c.all_partitions for tp in op.partitions)),
        ("an UpdateMetadata add to nobody", lambda c, op: isinstance(op, AddUpdateMetadata) and op.partitions and all(b < 0 for b in op.broker_ids)),
        ("a StopReplica add deleting a partition", lambda c, op: isinstance(op, AddStopReplica) and op.delete_partition),
    ],
)
def test_strategies_reach(what: str, predicate: Any) -> None:
    pairs = controller_contexts().flatmap(lambda c: st.tuples(st.just(c), batch_ops(c)))
    find(pairs, lambda p: bool(predicate(*p)), settings=_FIND)
