"""Invariants of ControllerContext, checked on generated cluster states."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.context import (
    Broker,
    ControllerContext,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    SecurityProtocol,
    TopicPartition,
)

BROKER_IDS = st.integers(0, 12)
TOPICS = st.sampled_from(["foo", "bar", "baz", "qux"])
PARTITIONS = st.builds(TopicPartition, TOPICS, st.integers(0, 5))


def broker(broker_id: int) -> Broker:
    return Broker(
        broker_id, [EndPoint("localhost", 9900 + broker_id, "PLAINTEXT", SecurityProtocol.PLAINTEXT)]
    )


@st.composite
def contexts(draw: st.DrawFn) -> ControllerContext:
    """A context with random brokers, shutting-down set, offline dirs, assignments, leadership, deletions."""
    context = ControllerContext()
    live = draw(st.lists(BROKER_IDS, unique=True))
    context.set_live_brokers({broker(b): draw(st.integers(0, 10**12)) for b in live})
    context.shutting_down_broker_ids.update(draw(st.sets(BROKER_IDS)))
    for broker_id, partitions in draw(st.dictionaries(BROKER_IDS, st.sets(PARTITIONS))).items():
        context.add_replicas_on_offline_dirs(broker_id, partitions)
    for tp in draw(st.sets(PARTITIONS)):
        context.update_partition_full_replica_assignment(
            tp, ReplicaAssignment(draw(st.lists(BROKER_IDS, unique=True, max_size=4)))
        )
    for tp in draw(st.sets(PARTITIONS)):
        lai = LeaderAndIsr(draw(BROKER_IDS), draw(st.lists(BROKER_IDS, max_size=3)), draw(st.integers(0, 50)))
        context.put_partition_leadership_info(tp, LeaderIsrAndControllerEpoch(lai, draw(st.integers(0, 9))))
    context.queue_topic_deletion(draw(st.sets(TOPICS)))
    context.begin_topic_deletion(draw(st.sets(TOPICS)))
    return context


@given(contexts(), BROKER_IDS, PARTITIONS)
def test_replica_online_iff_live_not_shutting_down_and_not_on_offline_dir(
    context: ControllerContext, broker_id: int, tp: TopicPartition
) -> None:
    expected = (
        broker_id in context.live_or_shutting_down_broker_ids
        and broker_id not in context.shutting_down_broker_ids
        and tp not in context.replicas_on_offline_dirs.get(broker_id, set())
    )
    assert context.is_replica_online(broker_id, tp) == expected
    if broker_id in context.shutting_down_broker_ids:
        assert not context.is_replica_online(broker_id, tp)


@given(contexts(), BROKER_IDS, PARTITIONS)
def test_including_shutting_down_brokers_only_widens(
    context: ControllerContext, broker_id: int, tp: TopicPartition
) -> None:
    if context.is_replica_online(broker_id, tp):
        assert context.is_replica_online(broker_id, tp, include_shutting_down_brokers=True)
    assert context.is_replica_online(broker_id, tp, include_shutting_down_brokers=True) == (
        broker_id in context.live_or_shutting_down_broker_ids
        and tp not in context.replicas_on_offline_dirs.get(broker_id, set())
    )


@given(contexts(), PARTITIONS)
def test_leader_epoch_is_minus_two_iff_queued(context: ControllerContext, tp: TopicPartition) -> None:
    queued = context.is_topic_queued_up_for_deletion(tp.topic)
    epoch = context.leader_epoch(tp)
    info = context.partition_leadership_info(tp)
    assert (epoch == -2) == queued  # generated leader epochs are never negative
    if not queued:
        assert epoch == (-1 if info is None else info.leader_and_isr.leader_epoch)


@given(contexts())
def test_live_broker_ids_are_registered_minus_shutting_down(context: ControllerContext) -> None:
    assert (
        set(context.live_broker_ids)
        == set(context.live_or_shutting_down_broker_ids) - context.shutting_down_broker_ids
    )
    assert {b.id for b in context.live_or_shutting_down_brokers} == set(
        context.live_or_shutting_down_broker_ids
    )
    assert set(context.live_broker_id_and_epochs) == set(context.live_or_shutting_down_broker_ids)


@given(
    st.lists(BROKER_IDS, unique=True),
    st.lists(BROKER_IDS, unique=True),
    st.sets(BROKER_IDS),
)
def test_broker_order_follows_insertion(initial: list[int], added: list[int], removed: set[int]) -> None:
    context = ControllerContext()
    context.set_live_brokers({broker(b): 1 for b in initial})
    context.add_live_brokers({broker(b): 2 for b in added})
    context.remove_live_brokers(removed)
    expected = [b for b in dict.fromkeys(initial + added) if b not in removed]
    assert [b.id for b in context.live_or_shutting_down_brokers] == expected
    assert list(context.live_broker_id_and_epochs) == expected
    assert all(context.live_broker_id_and_epochs[b] == (2 if b in added else 1) for b in expected)


@given(contexts())
def test_pickle_preserves_the_read_side(context: ControllerContext) -> None:
    copy = pickle.loads(pickle.dumps(context))
    assert list(copy.live_or_shutting_down_brokers) == list(context.live_or_shutting_down_brokers)
    assert dict(copy.live_broker_id_and_epochs) == dict(context.live_broker_id_and_epochs)
    assert copy.all_partitions == context.all_partitions
    assert dict(copy.partitions_leadership_info) == dict(context.partitions_leadership_info)
    for topic in ("foo", "bar", "baz", "qux"):
        assert copy.is_topic_queued_up_for_deletion(topic) == context.is_topic_queued_up_for_deletion(topic)
        assert copy.is_topic_deletion_in_progress(topic) == context.is_topic_deletion_in_progress(topic)
        for partition in range(6):
            tp = TopicPartition(topic, partition)
            assert copy.leader_epoch(tp) == context.leader_epoch(tp)
            assert copy.partition_replica_assignment(tp) == context.partition_replica_assignment(tp)
            for broker_id in range(13):
                assert copy.is_replica_online(broker_id, tp) == context.is_replica_online(broker_id, tp)


@given(contexts(), PARTITIONS)
def test_assignment_is_the_last_one_written(context: ControllerContext, tp: TopicPartition) -> None:
    before = context.partition_replica_assignment(tp)
    assert isinstance(before, tuple)
    context.update_partition_full_replica_assignment(tp, ReplicaAssignment([11, 12]))
    assert context.partition_replica_assignment(tp) == (11, 12)
    assert tp in context.partitions_for_topic(tp.topic)
    assert tp in context.all_partitions
