"""KafkaController decisions the integration tests do not reach: the auto-rebalance threshold,
deletion during a reassignment, and reassignments across a failover."""

from __future__ import annotations

from ctrlbatch.context import TopicPartition
from ctrlbatch.controller.alter_partition import (
    AlterPartitionPartitionData,
    AlterPartitionRequest,
    AlterPartitionTopicData,
)
from ctrlbatch.testing.controller_cluster import ControllerCluster


def _leaders(c: ControllerCluster, topic: str, n: int) -> list[int]:
    out = []
    for p in range(n):
        s = c.state(TopicPartition(topic, p))
        assert s is not None
        out.append(s.leader_and_isr.leader)
    return out


def test_auto_rebalance_needs_an_imbalance_strictly_above_the_percentage() -> None:
    """KC:1303-1312: imbalance = not-preferred / all partitions preferring the broker; an election
    only when it is strictly greater than leader.imbalance.per.broker.percentage / 100."""
    for moved, expect_rebalance in ((1, False), (2, True)):
        c = ControllerCluster([0, 1, 2], controller_id=0, leader_imbalance_check_interval_seconds=1)
        c.store.create_topic("t", [[1, 2] for _ in range(10)])  # all 10 prefer broker 1
        c.settle()
        # leadership of the first ``moved`` partitions goes to 2: their state znodes are rewritten
        # (as by a leader change) and the controller re-reads them on an ISR notification
        for p in range(moved):
            tp = TopicPartition("t", p)
            info = c.controller.context.partition_leadership_info(tp)
            assert info is not None
            c.store.set_partition_state(tp, type(info)(info.leader_and_isr.new_leader(2), info.controller_epoch))
            c.store.notify_isr_change([tp])  # the controller re-reads the state znode
        c.settle()
        assert _leaders(c, "t", 10)[:moved] == [2] * moved
        c.tick(5_000)
        leaders = _leaders(c, "t", 10)
        assert leaders == ([1] * 10 if expect_rebalance else [2] * moved + [1] * (10 - moved)), (moved, leaders)


def test_deletion_requested_during_a_reassignment_is_not_held_back() -> None:
    """KC:1801-1807 marks a reassigning topic ineligible, but only queued topics can be marked
    (TDM:169-176) and the topic is queued just after (KC:1809): the deletion starts anyway and
    completes while the reassignment is pending. The reassignment marks outlive the topic
    (CC:320-337 leaves partitionsBeingReassigned alone), as in Kafka."""
    c = ControllerCluster([0, 1, 2], controller_id=0)
    tp = TopicPartition("t", 0)
    c.store.create_topic("t", [[0, 1]])
    c.settle()
    c.store.reassign_partitions({tp: [0, 2]})  # phase A: 2 has not caught up, nobody sends AlterPartition
    c.settle()
    assert c.controller.context.partitions_being_reassigned == {tp}
    c.store.delete_topic("t")
    c.settle()
    ctx = c.controller.context
    assert not c.store.path_exists("/brokers/topics/t") and "t" not in ctx.all_topics
    assert ctx.partitions_being_reassigned == {tp}
    assert c.caches_agree() == []


def test_a_new_controller_resumes_a_reassignment_and_completes_it() -> None:
    """KC:967-971 (reassigning partitions found in the topic znode) and KC:1010-1017."""
    c = ControllerCluster([0, 1, 2], controller_id=0)
    tp = TopicPartition("t", 0)
    c.store.create_topic("t", [[0]])
    c.settle()
    c.stop_broker(1)
    c.settle()
    got: list[object] = []
    c.controller.alter_partition_reassignments({tp: [0, 2]}, got.append)
    c.settle()
    assert c.controller.context.partitions_being_reassigned == {tp}
    c.fail_over(2)
    ctx = c.controller.context
    assert ctx.partitions_being_reassigned == {tp}
    assert ctx.partition_full_replica_assignment(tp).adding_replicas == (2,)
    s = c.state(tp)
    assert s is not None and s.leader_and_isr.leader_epoch == 2  # A1 again under the new controller
    lai = ctx.partition_leader_and_isr(tp)
    assert lai is not None
    request = AlterPartitionRequest(0, c.broker_epoch(0), [AlterPartitionTopicData(
        [AlterPartitionPartitionData(0, lai.leader_epoch, [0, 2], 0, lai.partition_epoch)], topic_id=ctx.topic_ids["t"])])
    c.controller.alter_partition(request, 3, got.append)
    c.settle()
    assert c.store.get_full_replica_assignment_for_topics({"t"})[tp].replicas == (0, 2)
    assert ctx.partitions_being_reassigned == set() and c.caches_agree() == []
