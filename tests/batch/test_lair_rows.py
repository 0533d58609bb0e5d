"""The batch's LeaderAndIsr states held as rows (lair_rows.py) against the states the batch made
per add before rows existed.

Properties: after any run of single and bulk LeaderAndIsr adds (is_new drawn, so sticky flags
are met; some inputs of subclassed types, which take the made-state path), the batch's
leader_and_isr_request_map is exactly the model's broker -> partition -> state, made with the
same maker from each add's inputs (last add wins, is_new sticky: CCM:421-447), in the same
order, brokers of one add sharing one state object; the map pickles with the batch; and once
sent, each LeaderAndIsr body (assembled from rows) is the codec's encoding of the request built
from the states (build(epoch).encode(version)), at every LeaderAndIsr version.
"""

from __future__ import annotations

import pickle
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.batch import ControllerBrokerRequestBatch, RecordingTransport
from ctrlbatch.batch.lair_rows import make_lair_state
from ctrlbatch.context import (
    Broker,
    ControllerContext,
    EndPoint,
    LeaderIsrAndControllerEpoch,
    MetadataVersion,
    ReplicaAssignment,
    SecurityProtocol,
    TopicPartition,
)
from ctrlbatch.requests.apis import LEADER_AND_ISR
from ctrlbatch.testing import metadata_versions
from ctrlbatch.testing.contexts import leaderships, replica_assignments

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_POOL = range(4)


class _OwnLeadership(LeaderIsrAndControllerEpoch):
    """Not the exact type: the add makes its state at once (the made-state row)."""


_tps = st.builds(TopicPartition, st.sampled_from(["a", "b", "c"]), st.integers(0, 2))


@st.composite
def _adds(draw: st.DrawFn) -> tuple[Any, ...]:
    assignment = draw(replica_assignments(_POOL))
    leadership = draw(leaderships(assignment.replicas, _POOL))
    if draw(st.booleans()):
        leadership = _OwnLeadership(leadership.leader_and_isr, leadership.controller_epoch)
    brokers = tuple(draw(st.lists(st.sampled_from(list(_POOL)), unique=True, max_size=4)))
    return (brokers, draw(_tps), leadership, assignment, draw(st.booleans()), draw(st.booleans()))


def _model_state(tp: TopicPartition, leadership: Any, assignment: ReplicaAssignment, is_new: bool, gate: bool) -> Any:
    """The state the batch made per add before rows (the maker and values of that code)."""
    lai = leadership.leader_and_isr
    return make_lair_state(
        tp.topic, tp.partition, leadership.controller_epoch, lai.leader, lai.leader_epoch, lai.isr,
        lai.partition_epoch, assignment.replicas, assignment.adding_replicas, assignment.removing_replicas, is_new,
        int(lai.leader_recovery_state) if gate else 0,
    )


def _context() -> ControllerContext:
    ctx = ControllerContext()
    ctx.set_live_brokers({
        Broker(b, (EndPoint(f"h{b}", 9092, "PLAINTEXT", SecurityProtocol.PLAINTEXT),), None): 10 + b for b in _POOL
    })
    return ctx


@SETTINGS
@given(st.lists(_adds(), max_size=20), metadata_versions())
def test_rows_read_as_the_states_made_per_add(adds: list[tuple[Any, ...]], mv: MetadataVersion) -> None:
    transport = RecordingTransport()
    batch = ControllerBrokerRequestBatch(1, _context(), mv, transport)
    batch.new_batch()
    gate = mv.is_at_least(MetadataVersion.IBP_3_2_IV0)
    model: dict[int, dict[TopicPartition, Any]] = {}
    bulk: list[tuple[Any, ...]] = []
    for brokers, tp, leadership, assignment, is_new, in_bulk in adds:
        state = _model_state(tp, leadership, assignment, is_new, gate)
        for b in brokers:
            inner = model.setdefault(b, {})
            prev = inner.get(tp)
            inner[tp] = attrs.evolve(state, is_new=True) if prev is not None and prev.is_new else state
        if in_bulk:
            bulk.append((brokers, tp, leadership, assignment, is_new))
            continue
        batch.add_leader_and_isr_requests_for_partitions(bulk)
        bulk = []
        batch.add_leader_and_isr_request_for_brokers(brokers, tp, leadership, assignment, is_new)
    batch.add_leader_and_isr_requests_for_partitions(bulk)
    got = batch.leader_and_isr_request_map
    assert [(b, list(inner.items())) for b, inner in got.items()] == [(b, list(inner.items())) for b, inner in model.items()]
    last = {tp: brokers for brokers, tp, *_ in adds}
    for tp, brokers in last.items():  # the brokers of tp's last add share one state object per is_new value
        for flag in (False, True):
            held = [got[b][tp] for b in brokers if got[b][tp].is_new is flag]
            assert all(s is held[0] for s in held)
    clone = pickle.loads(pickle.dumps(batch))
    assert clone.leader_and_isr_request_map == got
    batch.send_requests_to_brokers(7)
    assert batch.leader_and_isr_request_map == {}
    sent = 0
    for items in transport.sent.values():
        for request, _ in items:
            if request.api_key != LEADER_AND_ISR.key:
                continue
            sent += 1
            body = request.encode_body()
            assert body == request.builder.build(request.broker_epoch).encode(request.version)
    assert sent == len([b for b, inner in model.items() if inner])
