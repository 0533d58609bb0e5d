"""Hypothesis strategies for the operations a controller performs on one request batch.

Rules:
- An operation is a small frozen attrs value (``AddLeaderAndIsr``, ``AddUpdateMetadata``,
  ``AddStopReplica``) whose ``apply(batch)`` makes the one ``add_*`` call it describes. Values
  hold only ids, partitions and frozen leadership values, never a context or a batch, so a
  failing sequence prints readably and replays on any batch (``apply_ops(ops, batch)``).
- Strategies are built against one context and read a snapshot of it when called: broker ids
  are drawn from its live, shutting-down and dead (referenced) brokers, plus negative ids and
  ids the context never heard of; partitions from its known partitions plus unknown ones (a
  partition past a topic's last one, a topic it does not know).
- LeaderAndIsr arguments are either the context's own leadership and assignment or random
  ones (the batch must copy the arguments, not the context); ``is_new`` and ``delete_partition``
  are random so that the sticky-OR rules get exercised.
- Broker lists may be empty, repeat ids, or be all negative (the UpdateMetadata leftover case).
- A sequence draws most partitions from a few "focus" partitions, repeats earlier ops with a
  new flag and reuses earlier broker lists, so the same (broker, partition) is often added
  twice in one batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
from hypothesis import strategies as st

from ctrlbatch.context import (
    ControllerContext,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)

from .contexts import INT32_MAX, known_partitions, leaderships, referenced_broker_ids, replica_assignments

__all__ = [
    "AddLeaderAndIsr",
    "AddStopReplica",
    "AddUpdateMetadata",
    "BatchOp",
    "apply_ops",
    "around",
    "batch_op_sequences",
    "batch_ops",
    "broker_id_lists",
    "focus_partitions",
    "leader_and_isr_ops",
    "op_partitions",
    "related_ops",
    "stop_replica_ops",
    "update_metadata_ops",
]

NEGATIVE_BROKER_IDS = (-1, -2, -(1 << 31))


@attrs.frozen
class AddLeaderAndIsr:
    """``batch.add_leader_and_isr_request_for_brokers(broker_ids, partition, leadership, assignment, is_new)``."""

    broker_ids: tuple[int, ...]
    partition: TopicPartition
    leadership: LeaderIsrAndControllerEpoch
    assignment: ReplicaAssignment
    is_new: bool

    def apply(self, batch: Any) -> None:
        batch.add_leader_and_isr_request_for_brokers(
            list(self.broker_ids), self.partition, self.leadership, self.assignment, self.is_new
        )


@attrs.frozen
class AddUpdateMetadata:
    """``batch.add_update_metadata_request_for_brokers(broker_ids, partitions)``."""

    broker_ids: tuple[int, ...]
    partitions: tuple[TopicPartition, ...] = ()

    def apply(self, batch: Any) -> None:
        batch.add_update_metadata_request_for_brokers(list(self.broker_ids), list(self.partitions))


@attrs.frozen
class AddStopReplica:
    """``batch.add_stop_replica_request_for_brokers(broker_ids, partition, delete_partition)``."""

    broker_ids: tuple[int, ...]
    partition: TopicPartition
    delete_partition: bool

    def apply(self, batch: Any) -> None:
        batch.add_stop_replica_request_for_brokers(list(self.broker_ids), self.partition, self.delete_partition)


BatchOp = AddLeaderAndIsr | AddUpdateMetadata | AddStopReplica


def apply_ops(ops: Iterable[BatchOp], batch: Any) -> None:
    """Replay ``ops`` on ``batch`` in order."""
    for op in ops:
        op.apply(batch)


# ---------------------------------------------------------------------------- pieces


def broker_id_lists(context: ControllerContext, max_size: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    """Broker id lists: mostly ids the context knows (live, shutting down, dead), some negative
    or unknown ones; sometimes exactly the live-or-shutting-down brokers, sometimes nobody
    (empty or all negative)."""
    live = sorted(context.live_or_shutting_down_broker_ids)
    known = sorted(referenced_broker_ids(context) | set(live))
    unknown = [max(known, default=-1) + 1, INT32_MAX]
    one = st.one_of(
        *([st.sampled_from(known)] * 3 if known else []),
        st.sampled_from(NEGATIVE_BROKER_IDS),
        st.sampled_from(unknown),
    )
    lists = st.lists(one, min_size=1, max_size=max_size).map(tuple)
    nobody = st.one_of(st.just(()), st.lists(st.sampled_from(NEGATIVE_BROKER_IDS), min_size=1, max_size=2).map(tuple))
    if not live:
        return st.one_of(lists, lists, nobody)
    return st.one_of(lists, lists, st.just(tuple(live)), st.just(tuple(live)), nobody)


def op_partitions(context: ControllerContext) -> st.SearchStrategy[TopicPartition]:
    """A partition the context knows (usually) or one it does not."""
    known = known_partitions(context)
    topics = sorted(context.all_topics) or ["foo"]
    last = {tp.topic: tp.partition for tp in known}
    fresh_topic = "unknown"
    while fresh_topic in context.all_topics or fresh_topic in last:
        fresh_topic += "_"
    unknown = [TopicPartition(t, last.get(t, -1) + 1) for t in topics[:2]]
    unknown += [TopicPartition(fresh_topic, 0), TopicPartition(topics[0], INT32_MAX)]
    if not known:
        return st.sampled_from(unknown)
    return st.one_of(st.sampled_from(known), st.sampled_from(known), st.sampled_from(unknown))


@st.composite
def leader_and_isr_ops(
    draw: st.DrawFn, context: ControllerContext, partitions: st.SearchStrategy[TopicPartition] | None = None
) -> AddLeaderAndIsr:
    """A LeaderAndIsr add: the context's leadership/assignment for the partition, or random ones."""
    tp = draw(op_partitions(context) if partitions is None else partitions)
    pool = sorted(referenced_broker_ids(context))
    current = context.partition_leadership_info(tp)
    assignment = context.partition_full_replica_assignment(tp)
    if current is None or draw(st.integers(0, 3)) == 0:
        leadership = draw(leaderships(assignment.replicas, pool))
    else:
        leadership = current
    if draw(st.integers(0, 3)) == 0:
        assignment = draw(replica_assignments(pool))
    return AddLeaderAndIsr(draw(broker_id_lists(context)), tp, leadership, assignment, draw(st.booleans()))


def update_metadata_ops(
    context: ControllerContext, partitions: st.SearchStrategy[TopicPartition] | None = None
) -> st.SearchStrategy[AddUpdateMetadata]:
    """An UpdateMetadata add: brokers (maybe none) and partitions (maybe none, maybe unknown)."""
    tps = op_partitions(context) if partitions is None else partitions
    return st.builds(AddUpdateMetadata, broker_id_lists(context), st.lists(tps, max_size=4).map(tuple))


def stop_replica_ops(
    context: ControllerContext, partitions: st.SearchStrategy[TopicPartition] | None = None
) -> st.SearchStrategy[AddStopReplica]:
    """A StopReplica add with a random delete flag; often for a topic queued for deletion, as
    the controller's topic deletion does."""
    deleting = [tp for tp in known_partitions(context) if tp.topic in context.topics_queued_for_deletion]
    tps = op_partitions(context) if partitions is None else partitions
    if deleting:
        tps = st.one_of(tps, st.sampled_from(deleting))
    return st.builds(AddStopReplica, broker_id_lists(context), tps, st.booleans())


def batch_ops(
    context: ControllerContext, partitions: st.SearchStrategy[TopicPartition] | None = None
) -> st.SearchStrategy[BatchOp]:
    """Any one add operation against ``context`` (partitions from ``partitions`` if given)."""
    return st.one_of(
        leader_and_isr_ops(context, partitions), update_metadata_ops(context, partitions), stop_replica_ops(context, partitions)
    )


def focus_partitions(context: ControllerContext) -> st.SearchStrategy[list[TopicPartition]]:
    """One to three distinct partitions for a sequence to keep coming back to."""
    return st.lists(op_partitions(context), min_size=1, max_size=3, unique=True)


def around(context: ControllerContext, focus: list[TopicPartition]) -> st.SearchStrategy[TopicPartition]:
    """Mostly the focus partitions, sometimes any other."""
    return st.one_of(st.sampled_from(focus), st.sampled_from(focus), op_partitions(context))


@st.composite
def related_ops(draw: st.DrawFn, ops: st.SearchStrategy[BatchOp], previous: list[BatchOp]) -> BatchOp:
    """An op related to earlier ones of the same batch: a third of the time an earlier op again
    with its flag (``is_new`` / ``delete_partition``) redrawn, else a fresh op from ``ops``
    that half the time goes to the brokers of an earlier op."""
    if previous and draw(st.integers(0, 2)) == 0:
        again = draw(st.sampled_from(previous))
        if isinstance(again, AddLeaderAndIsr):
            return attrs.evolve(again, is_new=draw(st.booleans()))
        if isinstance(again, AddStopReplica):
            return attrs.evolve(again, delete_partition=draw(st.booleans()))
        return again
    op = draw(ops)
    reuse: bool = bool(previous) and draw(st.booleans())
    if reuse:
        op = attrs.evolve(op, broker_ids=draw(st.sampled_from(previous)).broker_ids)
    return op


@st.composite
def batch_op_sequences(
    draw: st.DrawFn, context: ControllerContext, min_size: int = 0, max_size: int = 8
) -> tuple[BatchOp, ...]:
    """A sequence of adds for one batch, built with ``related_ops`` around a few focus
    partitions, so one (broker, partition) is often added twice: last-add-wins and the sticky
    flags get exercised."""
    fresh = batch_ops(context, around(context, draw(focus_partitions(context), label="focus")))
    ops: list[BatchOp] = []
    for _ in range(draw(st.sampled_from(range(min_size, max_size + 1)), label="size")):
        ops.append(draw(related_ops(fresh, ops)))
    return tuple(ops)
