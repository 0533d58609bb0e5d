"""ControllerContext's state-machine fields: the valid-transition tables (properties over both
Zk state machines), the offline-partition count, per-topic replica queries, remove_topic,
reset_context and pickling."""

from __future__ import annotations

import itertools
import pickle
from typing import Any

import pytest

from ctrlbatch.context import (
    PARTITION_VALID_PREVIOUS_STATES,
    REPLICA_VALID_PREVIOUS_STATES,
    ControllerContext,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from ctrlbatch.controller import OfflinePartitionLeaderElectionStrategy

P, R = PartitionState, ReplicaState
TP = TopicPartition("t", 0)


def test_tables_are_kafkas() -> None:
    assert [int(s) for s in P] == [0, 1, 2, 3]
    assert [int(s) for s in R] == [1, 2, 3, 4, 5, 6, 7]
    assert PARTITION_VALID_PREVIOUS_STATES[P.NonExistentPartition] == (P.OfflinePartition,)
    assert REPLICA_VALID_PREVIOUS_STATES[R.OnlineReplica] == (
        R.NewReplica, R.OnlineReplica, R.OfflineReplica, R.ReplicaDeletionIneligible)
    assert str(PartitionAndReplica(TP, 3)) == "[Topic=t,Partition=0,Replica=3]"


# Every (from, to) pair, exhaustively (16 and 49 pairs): stronger than sampling them.
@pytest.mark.parametrize(("source", "target"), list(itertools.product(P, P)))
def test_partition_transitions_follow_the_table(ck: Any, source: PartitionState, target: PartitionState) -> None:
    h = ck.Harness()
    h.live(5)
    h.assign(TP, [5])
    if source is not P.NewPartition:  # a New partition has no state znode yet (else NODEEXISTS)
        h.lead(TP, 5, [5])
    h.ctx.put_partition_state(TP, source)
    h.psm.handle_state_changes([TP], target, OfflinePartitionLeaderElectionStrategy(False))
    valid = source in PARTITION_VALID_PREVIOUS_STATES[target]
    # an invalid transition never changes the state; a valid one reaches the target (the store works)
    assert h.ctx.partition_state(TP) is (target if valid else source)


@pytest.mark.parametrize(("source", "target"), list(itertools.product(R, R)))
def test_replica_transitions_follow_the_table(ck: Any, source: ReplicaState, target: ReplicaState) -> None:
    h = ck.Harness()
    h.live(5, 6)
    h.assign(TP, [5, 6])
    h.lead(TP, 6, [5, 6])
    replica = PartitionAndReplica(TP, 5)
    h.ctx.put_replica_state(replica, source)
    h.rsm.handle_state_changes([replica], target)
    valid = source in REPLICA_VALID_PREVIOUS_STATES[target]
    expected = (None if target is R.NonExistentReplica else target) if valid else source
    assert h.ctx.replica_state_or_none(replica) is expected


def test_offline_partition_count_is_kept_as_kafka_does() -> None:
    ctx = ControllerContext()
    a, b = TopicPartition("a", 0), TopicPartition("b", 0)
    ctx.put_partition_state(a, P.OfflinePartition)
    ctx.put_partition_state(a, P.OfflinePartition)  # Offline -> Offline: no change
    ctx.put_partition_state_if_not_exists(b, P.OfflinePartition)
    ctx.put_partition_state_if_not_exists(b, P.NewPartition)  # already there: nothing
    assert ctx.offline_partition_count == 2
    ctx.begin_topic_deletion({"b"})
    ctx.put_partition_state(b, P.NonExistentPartition)  # deletion started: not counted
    assert ctx.offline_partition_count == 2
    ctx.put_partition_state(a, P.OnlinePartition)
    assert ctx.offline_partition_count == 1
    ctx.reset_context()
    assert ctx.offline_partition_count == 0 and dict(ctx.partition_states) == {}


def test_per_topic_queries_and_remove_topic() -> None:
    ctx = ControllerContext()
    ctx.set_all_topics({"a", "b"})
    for topic in ("a", "b"):
        for p in range(2):
            tp = TopicPartition(topic, p)
            ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment([1, 2]))
            ctx.put_partition_state(tp, P.OfflinePartition)
            for r in (1, 2):
                ctx.put_replica_state(PartitionAndReplica(tp, r), R.OnlineReplica)
    ctx.put_replica_state(PartitionAndReplica(TopicPartition("a", 1), 2), R.ReplicaDeletionStarted)
    assert ctx.replicas_in_state("a", R.ReplicaDeletionStarted) == {PartitionAndReplica(TopicPartition("a", 1), 2)}
    assert ctx.is_any_replica_in_state("a", R.ReplicaDeletionStarted)
    assert not ctx.are_all_replicas_in_state("a", R.OnlineReplica)
    assert ctx.are_all_replicas_in_state("b", R.OnlineReplica)
    assert ctx.partitions_in_states({P.OfflinePartition}, "b") == {TopicPartition("b", 0), TopicPartition("b", 1)}
    assert len(ctx.replicas_on_brokers({2})) == 4
    ctx.partitions_being_reassigned.add(TopicPartition("a", 0))
    ctx.remove_topic("a")
    # Kafka's removeTopic (CC:320-337) keeps the state-machine maps and the reassignment mark
    assert {r.topic for r in ctx.replica_states} == {"a", "b"}
    assert {tp.topic for tp in ctx.partition_states} == {"a", "b"}
    assert ctx.partitions_being_reassigned == {TopicPartition("a", 0)}
    assert ctx.offline_partition_count == 4
    assert ctx.partitions_for_topic("a") == set() and "a" not in ctx.all_topics
    assert ctx.are_all_replicas_in_state("a", R.ReplicaDeletionSuccessful)  # no assigned replicas left
    ctx.reset_context()
    assert (ctx.replica_states, dict(ctx.partition_states), ctx.partitions_being_reassigned) == ({}, {}, set())


def test_leadership_queries() -> None:
    ctx = ControllerContext()
    ctx.add_live_brokers({})
    from ctrlbatch.context import Broker, EndPoint

    ctx.set_live_brokers({Broker(b, [EndPoint("127.0.0.1", 9092, "PLAINTEXT", "PLAINTEXT")]): 0 for b in (1, 2)})
    for p, (replicas, leader) in enumerate([([1, 2], 1), ([2, 1], 1), ([3], 3), ([1], 1)]):
        tp = TopicPartition("t", p)
        ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment(replicas))
        ctx.put_partition_leadership_info(tp, LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, replicas), 1))
    assert ctx.partitions_with_offline_leader() == {TopicPartition("t", 2)}
    assert ctx.partition_leaders_on_broker(1) == {TopicPartition("t", 0), TopicPartition("t", 1)}  # RF > 1 only
    assert ctx.preferred_replica_imbalance_count() == 1  # t-1 led by 1, preferred 2
    ctx.queue_topic_deletion({"t"})
    assert ctx.partitions_with_offline_leader() == set() and ctx.preferred_replica_imbalance_count() == 0


def test_a_populated_context_pickles_with_its_states() -> None:
    ctx = ControllerContext()
    ctx.put_partition_state(TP, P.OfflinePartition)
    ctx.put_replica_state(PartitionAndReplica(TP, 1), R.OfflineReplica)
    ctx.topics_ineligible_for_deletion.add("t")
    copy = pickle.loads(pickle.dumps(ctx))
    assert copy.partition_state(TP) is P.OfflinePartition
    assert copy.replica_state(PartitionAndReplica(TP, 1)) is R.OfflineReplica
    assert copy.offline_partition_count == 1 and copy.topics_ineligible_for_deletion == {"t"}
    # an empty context stays as small as before: the new fields are empty containers
    assert len(pickle.dumps(ControllerContext())) < 1000


def test_bad_arguments_are_named(h: Any) -> None:
    import pytest as _pytest

    with _pytest.raises(TypeError, match="target_state must be a PartitionState"):
        h.psm.handle_state_changes([TP], R.OnlineReplica)
    with _pytest.raises(TypeError, match="leader_election_strategy must be one of"):
        h.psm.handle_state_changes([TP], P.OnlinePartition, "offline")
    with _pytest.raises(TypeError, match="partitions must hold TopicPartition"):
        h.psm.handle_state_changes([("t", 0)], P.NewPartition)
    with _pytest.raises(TypeError, match="partitions must be a sequence"):
        h.psm.handle_state_changes(TP, P.NewPartition)
    with _pytest.raises(TypeError, match="target_state must be a ReplicaState"):
        h.rsm.handle_state_changes([PartitionAndReplica(TP, 5)], P.NewPartition)
    with _pytest.raises(TypeError, match="replicas must hold PartitionAndReplica"):
        h.rsm.handle_state_changes([TP], R.NewReplica)
    assert h.psm_batch.calls == [] and h.rsm_batch.calls == []  # refused before any batch
