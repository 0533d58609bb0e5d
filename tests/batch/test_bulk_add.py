"""add_leader_and_isr_requests_for_partitions (the bulk add) against the single adds it stands for.

The property: a batch given some LeaderAndIsr adds in bulk calls ends exactly as a batch given
the same adds one call at a time, in the same order, among the same other adds (UpdateMetadata,
StopReplica): the same maps with the same keys in the same order (is_new sticky), the same
UpdateMetadata brokers and partitions (shutting-down brokers offline, deletion sentinels), and,
once sent, the same requests to the same brokers with every frame's bytes equal. Plus the bulk
add's own edge: each entry checked, a bad one named by its index, the entries before it kept.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.batch import ControllerBrokerRequestBatch, IllegalStateError, RecordingTransport
from ctrlbatch.batch.scenarios import Cluster, HoldingTransport, build_context, failover
from ctrlbatch.context import ControllerContext, MetadataVersion, TopicPartition
from ctrlbatch.testing import (
    AddLeaderAndIsr,
    BatchOp,
    ChannelContextView,
    batch_op_sequences,
    controller_contexts,
    metadata_versions,
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _entry(op: AddLeaderAndIsr, as_tuple: bool) -> tuple[Any, ...]:
    ids = tuple(op.broker_ids) if as_tuple else list(op.broker_ids)
    return (ids, op.partition, op.leadership, op.assignment, op.is_new)


def _state(batch: ControllerBrokerRequestBatch) -> tuple[Any, ...]:
    """Everything a batch holds, order included (dicts compared as item lists)."""
    return (
        [(b, list(inner.items())) for b, inner in batch.leader_and_isr_request_map.items()],
        [(b, list(inner.items())) for b, inner in batch.stop_replica_request_map.items()],
        list(batch.update_metadata_request_broker_set),
        list(batch.update_metadata_request_partition_info_map.items()),
    )


def _frames(transport: RecordingTransport) -> list[tuple[int, int, bytes]]:
    return [
        (broker, r.api_key, r.encode(i, "3"))
        for broker, items in transport.sent.items()
        for i, (r, _) in enumerate(items)
    ]


def _send(batch: ControllerBrokerRequestBatch) -> str | None:
    try:
        batch.send_requests_to_brokers(5)
    except IllegalStateError as e:
        return str(e)
    return None


@st.composite
def _plans(draw: st.DrawFn, context: ControllerContext) -> list[tuple[str, Any]]:
    """The ops of one batch, with runs of LeaderAndIsr adds cut into bulk calls at drawn points:
    ("single", op) or ("bulk", [entry, ...]); entries carry tuples or lists of ids."""
    ops: tuple[BatchOp, ...] = draw(batch_op_sequences(context, max_size=12))
    plan: list[tuple[str, Any]] = []
    for op in ops:
        if not isinstance(op, AddLeaderAndIsr):
            plan.append(("single", op))
            continue
        entry = _entry(op, draw(st.booleans()))
        if plan and plan[-1][0] == "bulk" and not draw(st.booleans()):
            plan[-1][1].append(entry)
        else:
            plan.append(("bulk", [entry]))
    if draw(st.booleans()):
        plan.append(("bulk", []))  # an empty bulk add changes nothing
    return plan


def _singles(plan: list[tuple[str, Any]]) -> list[BatchOp]:
    ops: list[BatchOp] = []
    for kind, what in plan:
        if kind == "single":
            ops.append(what)
        else:
            ops.extend(AddLeaderAndIsr(tuple(e[0]), e[1], e[2], e[3], e[4]) for e in what)
    return ops


@SETTINGS
@given(controller_contexts(min_brokers=1), metadata_versions(), st.data())
def test_bulk_adds_equal_the_single_adds(context: ControllerContext, mv: MetadataVersion, data: st.DataObject) -> None:
    plan = data.draw(_plans(context), label="plan")
    plain = data.draw(st.booleans(), label="plain protocol context")
    as_generator = data.draw(st.booleans(), label="entries as a generator")
    ctx: Any = ChannelContextView(context) if plain else context
    one, bulk = RecordingTransport(), RecordingTransport()
    singles = ControllerBrokerRequestBatch(3, ctx, mv, one)
    bulked = ControllerBrokerRequestBatch(3, ctx, mv, bulk)
    singles.new_batch()
    bulked.new_batch()
    for op in _singles(plan):
        op.apply(singles)
    for kind, what in plan:
        if kind == "single":
            what.apply(bulked)
        else:
            bulked.add_leader_and_isr_requests_for_partitions(iter(what) if as_generator else what)
    assert _state(bulked) == _state(singles)
    assert _send(bulked) == _send(singles)
    assert _frames(bulk) == _frames(one)
    assert _state(bulked) == _state(singles)  # what a failed send left behind, too


@SETTINGS
@given(controller_contexts(min_brokers=1), st.data())
def test_sticky_flags_and_sentinels_survive_bulk_adds(context: ControllerContext, data: st.DataObject) -> None:
    """Partitions added again and again (is_new drawn each time), on contexts with shutting-down
    brokers and topics queued for deletion: every add in one bulk call, against single adds."""
    partitions = sorted(tp for tp in context.all_partitions)
    if not partitions:
        return
    live = sorted(context.live_or_shutting_down_broker_ids)
    context.shutting_down_broker_ids.update(data.draw(st.lists(st.sampled_from(live), max_size=2), label="shutting down"))
    topics = sorted(context.all_topics)
    context.queue_topic_deletion(data.draw(st.lists(st.sampled_from(topics), max_size=1), label="queued"))
    picks = data.draw(st.lists(st.sampled_from(partitions), min_size=1, max_size=10), label="partitions")
    entries = []
    for tp in picks:
        info = context.partition_leadership_info(tp)
        assignment = context.partition_full_replica_assignment(tp)
        if info is None:
            continue
        ids = data.draw(st.lists(st.sampled_from([*live, -1]), max_size=4), label="ids")
        entries.append((tuple(ids), tp, info, assignment, data.draw(st.booleans(), label="is_new")))
    singles = ControllerBrokerRequestBatch(3, context, "3.9-IV0", one := RecordingTransport())
    bulked = ControllerBrokerRequestBatch(3, context, "3.9-IV0", bulk := RecordingTransport())
    singles.new_batch()
    bulked.new_batch()
    for e in entries:
        singles.add_leader_and_isr_request_for_brokers(*e)
    bulked.add_leader_and_isr_requests_for_partitions(entries)
    assert _state(bulked) == _state(singles)
    expected_new = {}
    for ids, tp, _, _, is_new in entries:
        for b in ids:
            if b >= 0:
                expected_new[(b, tp)] = expected_new.get((b, tp), False) or is_new
    assert {(b, tp): s.is_new for b, inner in bulked.leader_and_isr_request_map.items() for tp, s in inner.items()} == expected_new
    for tp, state in bulked.update_metadata_request_partition_info_map.items():
        if tp.topic in context.topics_queued_for_deletion:
            assert (state.leader, state.leader_epoch, state.zk_version) == (-2, 0, 0)
        shutting = set(context.shutting_down_broker_ids) & set(state.replicas)
        assert shutting <= set(state.offline_replicas)
    assert _send(bulked) == _send(singles)
    assert _frames(bulk) == _frames(one)


def test_the_failover_scenario_sends_the_same_frames_either_way() -> None:
    c = Cluster(partitions=600, brokers=12, partitions_per_topic=7)
    ctx, entries = build_context(c)
    frames = []
    for single in (False, True):
        transport = HoldingTransport()
        failover(ctx, entries, c, transport, single_adds=single).send_requests_to_brokers(c.controller_epoch)
        frames.append([(b, r.encode(0, "1")) for b, items in transport.queues.items() for r, _ in items])
    assert frames[0] == frames[1]
    assert len(frames[0]) == 2 * c.brokers


@st.composite
def _failover_runs(draw: st.DrawFn) -> tuple[Cluster, list[int], list[tuple[int, bool]]]:
    """A failover-shaped cluster (build_context), brokers to take down after it is built (their
    replicas offline: the UpdateMetadata view's offline path), and the adds: every partition once
    in order with a drawn is_new, then some partitions again (sticky is_new, last add wins)."""
    brokers = draw(st.integers(1, 8))
    c = Cluster(
        partitions=draw(st.integers(1, 120)), brokers=brokers,
        replication_factor=draw(st.integers(1, min(3, brokers))), partitions_per_topic=draw(st.integers(1, 9)),
    )
    down = draw(st.lists(st.integers(0, brokers - 1), unique=True, max_size=brokers - 1))
    firsts = [(p, draw(st.booleans())) for p in range(c.partitions)]
    again = draw(st.lists(st.tuples(st.integers(0, c.partitions - 1), st.booleans()), max_size=20))
    return c, down, firsts + again


@SETTINGS
@given(_failover_runs(), st.booleans())
def test_failover_bulk_adds_send_the_frames_of_single_adds(run: Any, as_tuple: bool) -> None:
    """Random failover clusters: the bulk add (its branch without is_new states and the one
    with them, entered mid-call) ends and sends exactly as the single adds do."""
    c, down, adds = run
    ctx, entries = build_context(c)
    ctx.remove_live_brokers(down)
    states, frames = [], []
    for bulk_add in (True, False):
        transport = RecordingTransport()
        batch = ControllerBrokerRequestBatch(c.controller_id, ctx, "3.9-IV0", transport)
        batch.new_batch()
        chosen = [(entries[p][2].replicas, *entries[p], is_new) for p, is_new in adds]
        if bulk_add:
            batch.add_leader_and_isr_requests_for_partitions(
                (tuple(ids) if as_tuple else list(ids), tp, lead, ra, n) for ids, tp, lead, ra, n in chosen
            )
        else:
            for ids, tp, lead, ra, n in chosen:
                batch.add_leader_and_isr_request_for_brokers(ids, tp, lead, ra, n)
        states.append(_state(batch))
        batch.send_requests_to_brokers(c.controller_epoch)
        frames.append(_frames(transport))
    assert states[0] == states[1]
    assert frames[0] == frames[1]
    live_replicas = {b for ids, *_ in chosen for b in ids if b not in down}
    assert {b for b, api, _ in frames[0] if api == 4} == live_replicas  # LeaderAndIsr to each live replica
    assert {b for b, api, _ in frames[0] if api == 6} == set(range(c.brokers)) - set(down)  # UpdateMetadata to all live


# ---------------------------------------------------------------------------- the edge


def _batch(context: ControllerContext) -> ControllerBrokerRequestBatch:
    b = ControllerBrokerRequestBatch(3, context, "3.9-IV0", RecordingTransport())
    b.new_batch()
    return b


@pytest.fixture
def context_and_entries(kt: Any) -> tuple[ControllerContext, list[tuple[Any, ...]]]:
    context = kt.kafka_context()
    entries = []
    for i, tp in enumerate(sorted(context.all_partitions)[:3]):
        entries.append(((1, 2), tp, kt.leadership(1, [1, 2]), kt.replica_assignment([1, 2]), i == 0))
    return context, entries


@pytest.mark.parametrize(
    "bad, message",
    [
        ("not a tuple", r"entries\[1\] must be a \(broker_ids, topic_partition, .*not str"),
        (((1,), None), r"entries\[1\] must be a \(broker_ids, .*not tuple"),
        ("is_new", r"entries\[1\]: is_new must be a bool, not str"),
        ("ids", r"entries\[1\]: broker_ids must hold int broker ids, not str '2'"),
        ("tp", r"entries\[1\]: topic_partition must be a TopicPartition, not tuple"),
        ("leadership", r"entries\[1\]: leader_isr_and_controller_epoch must be a LeaderIsrAndControllerEpoch"),
    ],
)
def test_a_bad_entry_is_named_and_the_earlier_ones_stay(context_and_entries: Any, bad: Any, message: str) -> None:
    context, entries = context_and_entries
    good, second = entries[0], entries[1]
    if bad == "is_new":
        wrong: Any = (*second[:4], "yes")
    elif bad == "ids":
        wrong = ([1, "2"], *second[1:])
    elif bad == "tp":
        wrong = (second[0], ("foo", 0), *second[2:])
    elif bad == "leadership":
        wrong = (second[0], second[1], second[2].leader_and_isr, *second[3:])
    else:
        wrong = bad
    bulked, singles = _batch(context), _batch(context)
    with pytest.raises(TypeError, match=message):
        bulked.add_leader_and_isr_requests_for_partitions([good, wrong, entries[2]])
    singles.add_leader_and_isr_request_for_brokers(*good)
    assert _state(bulked) == _state(singles)


@pytest.mark.parametrize("entries", [None, 5, "abc", {TopicPartition("foo", 0): 1}])
def test_entries_must_be_an_iterable_of_tuples(kt: Any, entries: Any) -> None:
    batch = _batch(kt.kafka_context())
    with pytest.raises(TypeError, match=r"entries must be an iterable of \(broker_ids, topic_partition"):
        batch.add_leader_and_isr_requests_for_partitions(entries)
    assert _state(batch) == ([], [], [], [])


def test_a_bulk_add_needs_a_batch(kt: Any) -> None:
    batch = ControllerBrokerRequestBatch(3, kt.kafka_context(), "3.9-IV0", RecordingTransport())
    with pytest.raises(IllegalStateError, match=r"new_batch\(\) must be called before adding requests"):
        batch.add_leader_and_isr_requests_for_partitions([])
