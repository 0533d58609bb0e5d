"""Kafka's ControllerIntegrationTest (CIT, core/src/test/scala/unit/kafka/controller/
ControllerIntegrationTest.scala, 3.9), the cases whose outcome is a controller decision.

Each test is a CIT case in snake_case, run on InMemoryKafkaZkClient: brokers are store sessions
(register = start, expire = stop) answered by simulated brokers (testing/controller_cluster.py).
The controller is broker 0's (CIT's controllerId), the other broker is 1 (CIT's otherBroker),
with CIT's settings (auto rebalance off unless the case turns it on, check interval 1 s). Each
asserts the state znode's leader, leader epoch and ISR, znodes kept or deleted, and requests.

Where a real follower catches up (CIT's brokers replicate, then the leader sends AlterPartition),
the test sends that AlterPartition itself (``expand_isr``), since the simulated brokers store no
data. Where CIT polls for a state that is passed through (``waitForPartitionState`` matches a
transient state), the test asserts it at that point and then the final state.

Left out, not decision-level: testMetadataPropagationOnControlPlane (listener metrics), the six
testControllerFeatureZNodeSetup* (feature znode, not modelled), the ten topic-id tests
(testTopicIdsAreAdded ... : id persistence across IBP changes, a store concern; ids are created
here when IBP >= 2.8 and kept, tested by test_topic_ids_are_created_from_ibp_2_8), and the
MockEvent latches of testPreemptionOnControllerShutdown / testControllerDetectsBouncedBrokers
(there is no thread to block: the test orders the store changes before process_events()).
"""

from __future__ import annotations

from typing import Any

import pytest

from ctrlbatch.context import LeaderRecoveryState, MetadataVersion, TopicPartition
from ctrlbatch.controller.alter_partition import (
    AlterPartitionPartitionData,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionTopicData,
)
from ctrlbatch.controller.api_errors import ApiError, Errors
from ctrlbatch.controller.errors import ControllerMovedException, StaleBrokerEpochException
from ctrlbatch.controller.events import (
    ApiPartitionReassignment,
    ControlledShutdown,
    ControllerState,
    ElectionTrigger,
    ElectionType,
    Expire,
    ListPartitionReassignments,
    RegisterBrokerAndReelect,
    ReplicaLeaderElection,
)
from ctrlbatch.controller.znodes import PREFERRED_REPLICA_ELECTION_PATH, REASSIGN_PARTITIONS_PATH
from ctrlbatch.requests import APIS
from ctrlbatch.testing.controller_cluster import ControllerCluster

TP = TopicPartition("t", 0)
FIRST_EPOCH = 1
LAIR, UMR, SR = 4, 6, 5
assert APIS[LAIR].name == "LeaderAndIsr" and APIS[UMR].name == "UpdateMetadata" and APIS[SR].name == "StopReplica"


def cluster(n: int, **config: Any) -> ControllerCluster:
    config.setdefault("auto_leader_rebalance_enable", False)
    config.setdefault("leader_imbalance_check_interval_seconds", 1)
    return ControllerCluster(list(range(n)), controller_id=0, **config)


def create_topic(c: ControllerCluster, topic: str, assignment: list[list[int]]) -> None:
    c.store.create_topic(topic, assignment)
    c.settle()


def state(c: ControllerCluster, tp: TopicPartition = TP) -> tuple[int, int, tuple[int, ...], int]:
    """(leader, leader epoch, ISR, controller epoch) of the state znode."""
    s = c.state(tp)
    assert s is not None, f"no state znode for {tp}"
    lai = s.leader_and_isr
    return lai.leader, lai.leader_epoch, lai.isr, s.controller_epoch


def alter_partition(c: ControllerCluster, request: AlterPartitionRequest, version: int = 3) -> AlterPartitionResponse:
    got: list[AlterPartitionResponse] = []
    c.controller.alter_partition(request, version, got.append)
    c.settle()
    assert len(got) == 1
    return got[0]


def expand_isr(c: ControllerCluster, tp: TopicPartition, isr: list[int]) -> AlterPartitionResponse:
    """What the partition's leader sends once followers caught up: AlterPartition with the
    leader and partition epochs it last learnt (the controller's cached ones)."""
    info = c.controller.context.partition_leadership_info(tp)
    assert info is not None
    lai = info.leader_and_isr
    topic_id = c.controller.context.topic_ids[tp.topic]
    request = AlterPartitionRequest(lai.leader, c.broker_epoch(lai.leader), [AlterPartitionTopicData(
        [AlterPartitionPartitionData(tp.partition, lai.leader_epoch, isr, int(lai.leader_recovery_state), lai.partition_epoch)],
        topic_id=topic_id,
    )])
    response = alter_partition(c, request)
    assert response.error_code == 0 and all(p.error_code == 0 for t in response.topics for p in t.partitions), response
    return response


def requests_to(c: ControllerCluster, broker_id: int, api_key: int) -> list[Any]:
    return [r.body for b, r in c.channel.history if b == broker_id and r.api_key == api_key]


# ---------------------------------------------------------------------- controller epoch


def test_empty_cluster() -> None:
    c = cluster(1)
    assert c.store.get_controller_id() == 0
    epoch = c.store.get_controller_epoch()
    assert epoch is not None and epoch[0] == FIRST_EPOCH
    assert c.controller.is_active and c.controller.epoch == FIRST_EPOCH


def test_controller_epoch_persists_when_all_brokers_down() -> None:
    c = cluster(1)
    c.stop_controller()
    c.stop_broker(0)
    assert c.store.get_controller_id() is None
    epoch = c.store.get_controller_epoch()
    assert epoch is not None and epoch[0] == FIRST_EPOCH


def test_controller_move_increments_controller_epoch() -> None:
    c = cluster(1)
    c.stop_broker(0)
    c.start_broker(0)
    c.fail_over(0)
    epoch = c.store.get_controller_epoch()
    assert epoch is not None and epoch[0] == FIRST_EPOCH + 1
    assert c.controller.epoch == FIRST_EPOCH + 1


def test_controller_session_expiry_resigns_and_reelects() -> None:
    """KC:235-245: the controller's own session expires -> Expire (resign) then re-election."""
    c = cluster(2)
    c.store.expire_session(c.controller.zk_client.session_id)  # type: ignore[attr-defined]
    assert c.controller.event_manager.queued_events() == [Expire(), RegisterBrokerAndReelect()]
    c.settle()
    assert c.controller.is_active and c.controller.epoch == FIRST_EPOCH + 1


# ---------------------------------------------------------------------- metadata propagation


def test_metadata_propagation_on_broker_change() -> None:
    c = cluster(3)
    create_topic(c, "topic1", [[0, 1], [0, 2]])
    c.stop_broker(1)
    c.settle()
    for b in (0, 2):
        cache = c.brokers[b].cache
        p0 = cache.partition_states["topic1"][0]
        assert (tuple(p0.offline_replicas), tuple(p0.replicas), tuple(p0.isr)) == ((1,), (0, 1), (0,))
        p1 = cache.partition_states["topic1"][1]
        assert (tuple(p1.replicas), tuple(p1.offline_replicas)) == ((0, 2), ())
    c.start_broker(1)
    c.settle()
    for b, broker in c.brokers.items():
        for p, replicas in ((0, (0, 1)), (1, (0, 2))):
            s = broker.cache.partition_states["topic1"][p]
            assert tuple(s.offline_replicas) == () and tuple(s.replicas) == replicas, (b, p)
    assert c.caches_agree() == []


def test_metadata_propagation_for_offline_replicas() -> None:
    c = cluster(3)
    create_topic(c, "topic1", [[1]])
    c.stop_broker(2)
    c.stop_broker(1)
    c.stop_controller()
    c.stop_broker(0)
    for b in (0, 2):  # the controller's broker comes back (and takes over), then the other one
        c.start_broker(b)
        if b == 0:
            c.fail_over(0)
        c.settle()
        s = c.brokers[b].cache.partition_states["topic1"][0]
        assert s.leader == -1 and tuple(s.offline_replicas) == (1,) and tuple(s.replicas) == (1,) and tuple(s.isr) == (1,)


def test_metadata_propagation_on_broker_shutdown_with_no_replicas() -> None:
    c = cluster(3)
    create_topic(c, "topic1", [[1]])
    c.stop_broker(1)
    c.settle()
    c.stop_broker(2)
    c.settle()
    assert sorted(c.brokers[0].cache.alive_brokers) == [0]
    last = requests_to(c, 0, UMR)[-1]
    assert [b.id for b in last.live_brokers] == [0] and len(last.topic_states) == 0  # KC:688-690


# ---------------------------------------------------------------------- topic creation and expansion


def test_topic_creation() -> None:
    c = cluster(1)
    create_topic(c, "t", [[0]])
    assert state(c) == (0, 0, (0,), FIRST_EPOCH)
    lair = requests_to(c, 0, LAIR)[-1]
    assert [s.is_new for t in lair.topic_states for s in t.partition_states] == [True]


def test_topic_creation_with_offline_replica() -> None:
    c = cluster(2)
    c.stop_broker(1)
    c.settle()
    create_topic(c, "t", [[1, 0]])
    assert state(c) == (0, 0, (0,), FIRST_EPOCH)


def test_topic_partition_expansion() -> None:
    c = cluster(1)
    create_topic(c, "t", [[0]])
    c.store.add_partitions("t", {1: [0]})
    c.settle()
    assert state(c, TopicPartition("t", 1)) == (0, 0, (0,), FIRST_EPOCH)
    assert 1 in c.brokers[0].cache.partition_states["t"]


def test_topic_partition_expansion_with_offline_replica() -> None:
    c = cluster(2)
    create_topic(c, "t", [[1, 0]])
    c.stop_broker(1)
    c.settle()
    c.store.add_partitions("t", {1: [1, 0]})
    c.settle()
    assert state(c, TopicPartition("t", 1)) == (0, 0, (0,), FIRST_EPOCH)
    assert 1 in c.brokers[0].cache.partition_states["t"]


def test_topic_ids_are_created_from_ibp_2_8() -> None:
    """KC:1710-1728: a topic written without an id gets one from IBP 2.8; below, it stays without."""
    c = cluster(1)
    c.store.create_topic("a", [[0]], topic_id=None)
    c.settle()
    assert "a" in c.controller.context.topic_ids
    old = cluster(1, inter_broker_protocol_version="2.7-IV2")
    old.store.create_topic("a", [[0]], topic_id=None)
    old.settle()
    assert "a" not in old.controller.context.topic_ids
    assert state(old, TopicPartition("a", 0))[:2] == (0, 0)


# ---------------------------------------------------------------------- reassignment


def _assert_reassigned(c: ControllerCluster, tp: TopicPartition, target: list[int]) -> None:
    assert c.store.get_full_replica_assignment_for_topics({tp.topic})[tp].replicas == tuple(target)
    assert not c.store.reassign_partitions_in_progress()
    assert tp not in c.controller.context.partitions_being_reassigned


def test_partition_reassignment() -> None:
    c = cluster(2)
    create_topic(c, "t", [[0]])
    c.store.reassign_partitions({TP: [1]})
    c.settle()
    assert state(c) == (0, 1, (0,), FIRST_EPOCH)  # phase A: epoch bumped, waiting for 1 to catch up
    assert c.controller.context.partition_full_replica_assignment(TP).adding_replicas == (1,)
    expand_isr(c, TP, [0, 1])
    assert state(c) == (1, 3, (1,), FIRST_EPOCH)  # B3 election, B4 ISR shrink
    _assert_reassigned(c, TP, [1])
    assert any(s.delete_partition for r in requests_to(c, 0, SR) for t in r.topic_states for s in t.partition_states)


def test_partition_reassignment_to_broker_with_offline_log_dir() -> None:
    c = cluster(2)
    filler = TopicPartition("filler", 0)
    create_topic(c, "filler", [[1]])
    c.brokers[1].offline.add(filler)
    c.store.notify_log_dir_event(1)
    c.settle()
    assert c.controller.context.replicas_on_offline_dirs[1] == {filler}
    assert state(c, filler)[0] == -1  # its only replica sits on the failed dir
    create_topic(c, "t", [[0]])
    c.store.reassign_partitions({TP: [1]})
    c.settle()
    expand_isr(c, TP, [0, 1])
    assert state(c) == (1, 3, (1,), FIRST_EPOCH)
    _assert_reassigned(c, TP, [1])


def test_partition_reassignment_with_offline_replica_halting_progress() -> None:
    c = cluster(2)
    create_topic(c, "t", [[0]])
    c.stop_broker(1)
    c.settle()
    c.store.reassign_partitions({TP: [1]})
    c.settle()
    assert state(c) == (0, 1, (0,), FIRST_EPOCH)
    assert c.store.reassign_partitions_in_progress()
    assert TP in c.controller.context.partitions_being_reassigned


def test_partition_reassignment_resumes_after_replica_comes_online() -> None:
    c = cluster(2)
    create_topic(c, "t", [[0]])
    c.stop_broker(1)
    c.settle()
    c.store.reassign_partitions({TP: [1]})
    c.settle()
    assert state(c) == (0, 1, (0,), FIRST_EPOCH)
    c.start_broker(1)
    c.settle()
    assert state(c) == (0, 2, (0,), FIRST_EPOCH)  # resumed: A1 again
    expand_isr(c, TP, [0, 1])
    assert state(c) == (1, 4, (1,), FIRST_EPOCH)
    _assert_reassigned(c, TP, [1])


def test_reassigning_a_partition_without_state_makes_failover_thrash() -> None:
    """A Kafka hazard kept as is: reassigning a partition that never came online (no state znode)
    fails in A1 (KC:1276-1280, IllegalStateException -> UNKNOWN_SERVER_ERROR) but stays
    reassigning in the topic znode; a failover that still finds no live replica for it resumes
    it, fails, resigns and deletes /controller (KC:1521-1536, 1575-1580), which re-triggers the
    election: the controller epoch climbs while no event is left unprocessed for long."""
    c = cluster(3)
    c.stop_broker(1)
    c.settle()
    create_topic(c, "t", [[1]])
    got: list[Any] = []
    c.controller.alter_partition_reassignments({TP: [2]}, got.append)
    c.settle()
    assert got == [{TP: ApiError(Errors.UNKNOWN_SERVER_ERROR)}]
    assert c.store.get_full_replica_assignment_for_topics({"t"})[TP].adding_replicas == (2,)
    c.stop_broker(2)
    c.settle()
    c.stop_controller()
    c.controller, c.channel = c._new_controller(0)
    c.controller.startup()
    c.controller.process_events(max_events=50)
    epoch = c.store.get_controller_epoch()
    assert epoch is not None and epoch[0] > FIRST_EPOCH + 5
    assert c.controller.event_manager.queued_events()  # still going
    assert c.state(TP) is None


def test_api_reassignment_validates_cancels_and_lists() -> None:
    """KC:1854-1919, 1939-1960: validation errors, a cancel back to the origin replicas, list."""
    c = cluster(3)
    create_topic(c, "t", [[0]])
    got: list[Any] = []
    c.controller.alter_partition_reassignments(
        {TP: [1, 1], TopicPartition("t", 5): [1], TopicPartition("u", 0): None}, got.append)
    c.settle()
    assert got[-1][TP] == ApiError(Errors.INVALID_REPLICA_ASSIGNMENT,
                                   "Duplicate replica ids in partition reassignment replica list: List(1, 1)")
    assert got[-1][TopicPartition("t", 5)] == ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
    assert got[-1][TopicPartition("u", 0)] == ApiError(Errors.NO_REASSIGNMENT_IN_PROGRESS)
    c.stop_broker(2)
    c.settle()
    c.controller.alter_partition_reassignments({TP: [2]}, got.append)
    c.settle()
    assert got[-1][TP].error == Errors.INVALID_REPLICA_ASSIGNMENT  # 2 is not alive
    c.controller.alter_partition_reassignments({TP: [1]}, got.append)
    c.settle()
    assert got[-1] == {TP: ApiError(Errors.NONE)}
    c.controller.list_partition_reassignments(None, got.append)
    c.settle()
    assert got[-1] == {TP: c.controller.context.partition_full_replica_assignment(TP)}
    assert got[-1][TP].replicas == (1, 0)
    c.controller.alter_partition_reassignments({TP: None}, got.append)  # cancel
    c.settle()
    assert got[-1] == {TP: ApiError(Errors.NONE)}
    assert c.store.get_full_replica_assignment_for_topics({"t"})[TP].replicas == (0,)
    assert TP not in c.controller.context.partitions_being_reassigned
    assert state(c)[0] == 0
    # the cancelled adding replica was stopped and deleted
    assert any(s.delete_partition for r in requests_to(c, 1, SR) for t in r.topic_states for s in t.partition_states)


# ---------------------------------------------------------------------- preferred elections


def _preferred_replica_leader_election(c: ControllerCluster, leader_epoch: int) -> None:
    """CIT:1894-1907 with controller 0, other broker 1 and assignment [1, 0]."""
    c.stop_broker(1)
    c.settle()
    assert state(c) == (0, leader_epoch + 1, (0,), FIRST_EPOCH)
    c.start_broker(1)
    c.settle()
    expand_isr(c, TP, [0, 1])
    c.store.elect_preferred_replicas([TP])
    c.settle()
    assert not c.store.path_exists(PREFERRED_REPLICA_ELECTION_PATH)
    assert state(c) == (1, leader_epoch + 2, (0, 1), FIRST_EPOCH)


def test_preferred_replica_leader_election() -> None:
    c = cluster(2)
    create_topic(c, "t", [[1, 0]])
    _preferred_replica_leader_election(c, 0)


def test_back_to_back_preferred_replica_leader_elections() -> None:
    c = cluster(2)
    create_topic(c, "t", [[1, 0]])
    _preferred_replica_leader_election(c, 0)
    _preferred_replica_leader_election(c, 2)


def test_preferred_replica_leader_election_with_offline_preferred_replica() -> None:
    c = cluster(2)
    create_topic(c, "t", [[1, 0]])
    c.stop_broker(1)
    c.settle()
    c.store.elect_preferred_replicas([TP])
    c.settle()
    assert not c.store.path_exists(PREFERRED_REPLICA_ELECTION_PATH)
    assert state(c) == (0, 1, (0,), FIRST_EPOCH)


def test_auto_preferred_replica_leader_election() -> None:
    c = cluster(2, auto_leader_rebalance_enable=True)
    create_topic(c, "t", [[1, 0]])
    c.stop_broker(1)
    c.settle()
    assert state(c) == (0, 1, (0,), FIRST_EPOCH)
    c.start_broker(1)
    c.settle()
    expand_isr(c, TP, [0, 1])
    assert c.controller.next_scheduled_ms() == 5_000  # KC:326-329
    c.tick(5_000)
    assert state(c) == (1, 2, (0, 1), FIRST_EPOCH)
    assert c.controller.next_scheduled_ms() == 6_000  # then every leader.imbalance.check.interval.seconds


def test_auto_preferred_replica_leader_election_with_other_reassigning_partitions() -> None:
    c = cluster(3, auto_leader_rebalance_enable=True)
    reassigning = TopicPartition("reassigning", 0)
    create_topic(c, "t", [[1, 0]])
    create_topic(c, "reassigning", [[0]])
    c.stop_broker(1)
    c.settle()
    assert state(c) == (0, 1, (0,), FIRST_EPOCH)
    c.stop_broker(2)
    c.settle()
    c.store.reassign_partitions({reassigning: [2]})
    c.settle()
    assert state(c, reassigning) == (0, 1, (0,), FIRST_EPOCH)
    c.start_broker(1)
    c.settle()
    expand_isr(c, TP, [0, 1])
    c.tick(5_000)
    assert state(c) == (1, 2, (0, 1), FIRST_EPOCH)
    c.start_broker(2)
    c.settle()
    expand_isr(c, reassigning, [0, 2])
    assert state(c, reassigning) == (2, 4, (2,), FIRST_EPOCH)
    _assert_reassigned(c, reassigning, [2])


def test_auto_preferred_replica_leader_election_with_same_partition_being_reassigned() -> None:
    c = cluster(3, auto_leader_rebalance_enable=True)
    create_topic(c, "t", [[0, 1]])
    c.stop_broker(2)
    c.settle()
    c.store.reassign_partitions({TP: [1, 0, 2]})
    c.settle()
    c.tick(5_000)
    assert state(c) == (1, 2, (0, 1), FIRST_EPOCH)  # the head of RS [1, 0, 2] leads, reassignment stuck
    c.start_broker(2)
    c.settle()
    assert state(c) == (1, 3, (0, 1), FIRST_EPOCH)  # resumed (A1), CIT's waited-for state
    expand_isr(c, TP, [0, 1, 2])
    assert state(c) == (1, 4, (0, 1, 2), FIRST_EPOCH)  # B3 bumps the epoch of the kept leader
    _assert_reassigned(c, TP, [1, 0, 2])


# ---------------------------------------------------------------------- offline ISR and unclean election


@pytest.mark.parametrize("unclean", [False, True])
def test_leader_and_isr_when_entire_isr_offline(unclean: bool) -> None:
    """testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElection{Disabled,Enabled}."""
    c = cluster(2, unclean_leader_election_enable=unclean)
    create_topic(c, "t", [[1]])
    assert state(c) == (1, 0, (1,), FIRST_EPOCH)
    c.stop_broker(1)
    c.settle()
    assert state(c) == (-1, 1, (1,), FIRST_EPOCH)


def test_unclean_election_gives_recovering_leader_with_isr_of_one() -> None:
    """testAlterPartitionErrorsAfterUncleanElection's setup (CIT:1332-1375)."""
    c = cluster(3, unclean_leader_election_enable=True)
    create_topic(c, "t", [[1, 2]])
    c.stop_broker(1)
    c.settle()
    assert state(c)[:3] == (2, 1, (2,))
    c.stop_broker(2)
    c.settle()
    assert state(c)[:3] == (-1, 2, (2,))
    c.start_broker(1)
    c.settle()
    s = c.state(TP)
    assert s is not None
    assert (s.leader_and_isr.leader, s.leader_and_isr.isr) == (1, (1,))
    assert s.leader_and_isr.leader_recovery_state is LeaderRecoveryState.RECOVERING


def test_unclean_enable_events_elect_an_out_of_sync_replica() -> None:
    """KC:1343-1353: a topic's unclean config set true, then the controller is told."""
    c = cluster(3)
    create_topic(c, "t", [[1, 2]])
    c.stop_broker(1)
    c.settle()
    c.stop_broker(2)
    c.settle()
    c.start_broker(1)
    c.settle()
    assert state(c)[0] == -1  # clean only: 1 is not in the ISR [2]
    c.store.set_topic_config("t", {"unclean.leader.election.enable": "true"})
    c.controller.enable_topic_unclean_leader_election("t")
    c.settle()
    assert state(c)[:3] == (1, 3, (1,))


def test_admin_unclean_election() -> None:
    """ElectLeaders(UNCLEAN) from the admin client (KC:918-922): allowed even with the config off."""
    c = cluster(3)
    create_topic(c, "t", [[1, 2]])
    for b in (1, 2):
        c.stop_broker(b)
        c.settle()
    c.start_broker(1)
    c.settle()
    got: list[Any] = []
    c.controller.elect_leaders([TP, TopicPartition("nope", 0)], ElectionType.UNCLEAN, got.append)
    c.settle()
    assert got == [{TP: 1, TopicPartition("nope", 0): ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")}]
    assert state(c)[:3] == (1, 3, (1,))
    c.controller.elect_leaders([TP], ElectionType.UNCLEAN, got.append)
    c.settle()
    assert got[-1] == {TP: ApiError(Errors.ELECTION_NOT_NEEDED)}


def test_elect_leaders_for_a_partition_without_state_never_answers() -> None:
    """KC:2240-2250 reads the cached leadership with Option.get: a partition that never came
    online (no live replica at creation) makes the event fail, and the callback is not called."""
    c = cluster(2)
    c.stop_broker(1)
    c.settle()
    create_topic(c, "t", [[1]])
    assert c.state(TP) is None
    got: list[Any] = []
    c.controller.elect_leaders([TP], ElectionType.PREFERRED, got.append)
    c.settle()
    assert got == [] and c.controller.is_active


# ---------------------------------------------------------------------- controlled shutdown


def _controlled_shutdown(c: ControllerCluster, broker_id: int, epoch: int | None = None) -> Any:
    got: list[Any] = []
    c.controller.controlled_shutdown(broker_id, c.broker_epoch(broker_id) if epoch is None else epoch, got.append)
    c.settle()
    assert len(got) == 1
    return got[0]


def test_controlled_shutdown() -> None:
    c = cluster(3)
    create_topic(c, "test", [[0, 1, 2]])
    tp = TopicPartition("test", 0)
    assert _controlled_shutdown(c, 2) == frozenset()
    for b in (0, 1):
        s = c.brokers[b].cache.partition_states["test"][0]
        assert (s.leader, tuple(s.isr)) == (0, (0, 1))
    assert _controlled_shutdown(c, 1) == frozenset()
    assert all(b.cache.partition_states["test"][0].leader == 0 for b in c.brokers.values())
    assert _controlled_shutdown(c, 0) == frozenset({tp})  # every ISR member is shutting down
    assert all(b.cache.partition_states["test"][0].leader == 0 for b in c.brokers.values())
    assert state(c, tp)[:3] == (0, 2, (0,))  # two followers left the ISR (+1 each); the leader stays


def test_controlled_shutdown_moves_leadership_and_stops_followers() -> None:
    """KC:1392-1404: the led partitions elect away (ControlledShutdown strategy), the followed ones
    get StopReplica(delete=false) and leave the ISR."""
    c = cluster(3)
    create_topic(c, "t", [[1, 0, 2], [0, 1, 2]])
    assert _controlled_shutdown(c, 1) == frozenset()
    assert state(c, TopicPartition("t", 0))[:3] == (0, 1, (0, 2))
    assert state(c, TopicPartition("t", 1))[:3] == (0, 1, (0, 2))
    stops = [(t.topic_name, s.partition_index, s.delete_partition)
             for r in requests_to(c, 1, SR) for t in r.topic_states for s in t.partition_states]
    assert ("t", 1, False) in stops
    assert c.controller.context.shutting_down_broker_ids == {1}
    c.stop_broker(1)
    c.settle()
    assert c.controller.context.shutting_down_broker_ids == set()


def test_controller_reject_controlled_shutdown_request_with_stale_broker_epoch() -> None:
    c = cluster(2)
    result = _controlled_shutdown(c, 1, c.broker_epoch(1) - 1)
    assert isinstance(result, StaleBrokerEpochException)
    assert c.controller.context.shutting_down_broker_ids == set()


# ---------------------------------------------------------------------- controller moves


def _controller_move(c: ControllerCluster, action: Any) -> None:
    """CIT:1854-1891: the action's event is queued, then another controller is elected before it
    runs; the fenced write fails and the controller resigns."""
    action()
    assert c.controller.event_manager.queued_events()
    c.store.elect_other_controller(99)
    c.controller.process_events()
    assert not c.controller.is_active
    assert c.controller.active_controller_id == 99
    assert c.controller.context.epoch == 0  # resigned: the context was reset


def test_controller_move_on_topic_creation() -> None:
    c = cluster(1)
    _controller_move(c, lambda: c.store.create_topic("t", [[0]]))
    assert c.state(TP) is None


def test_controller_move_on_topic_deletion() -> None:
    c = cluster(1)
    create_topic(c, "t", [[0]])
    _controller_move(c, lambda: c.store.delete_topic("t"))
    assert c.store.path_exists("/admin/delete_topics/t")


def test_controller_move_on_preferred_replica_election() -> None:
    c = cluster(1)
    create_topic(c, "t", [[0]])
    _controller_move(c, lambda: c.store.elect_preferred_replicas([TP]))


def test_controller_move_on_partition_reassignment() -> None:
    c = cluster(1)
    create_topic(c, "t", [[0]])
    _controller_move(c, lambda: c.store.reassign_partitions({TP: [0]}))
    assert c.store.path_exists(REASSIGN_PARTITIONS_PATH)


def test_controller_detects_bounced_brokers() -> None:
    c = cluster(2)
    create_topic(c, "t", [[0, 1]])
    assert state(c) == (0, 0, (0, 1), FIRST_EPOCH)
    c.stop_broker(1)
    c.start_broker(1)  # re-registered (a new czxid) before the controller saw the change
    assert c.brokers[1].partitions == {}
    c.settle()
    assert list(c.brokers[1].partitions) == [TP]
    assert list(c.brokers[1].cache.partition_states) == ["t"]
    assert sorted(c.brokers[1].cache.alive_brokers) == [0, 1]
    assert c.controller.context.live_broker_id_and_epochs[1] == c.broker_epoch(1)


def test_preemption_with_callbacks() -> None:
    c = cluster(1)
    tp1 = TopicPartition("t", 1)
    got: list[Any] = []
    c.controller.put(ReplicaLeaderElection(frozenset({TP, tp1}), ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED,
                                           got.append))
    c.controller.put(ControlledShutdown(0, 0, got.append))
    c.controller.put(ApiPartitionReassignment({TP: None, tp1: None}, got.append))
    c.controller.put(ListPartitionReassignments(frozenset({TP, tp1}), got.append))
    c.controller.shutdown()
    assert got[0] == {TP: ApiError(Errors.NOT_CONTROLLER), tp1: ApiError(Errors.NOT_CONTROLLER)}
    assert type(got[1]) is ControllerMovedException
    assert got[2] == ApiError(Errors.NOT_CONTROLLER) == got[3]
    assert c.controller.state is ControllerState.IDLE and c.controller.event_manager.is_empty


# ---------------------------------------------------------------------- AlterPartition


def _request(c: ControllerCluster, *, broker: int, epoch: int | None = None, tp: TopicPartition = TP,
             by_id: bool = True, leader_epoch: int | None = None, partition_epoch: int | None = None,
             isr: list[int] | None = None, recovery: int = 0) -> AlterPartitionRequest:
    info = c.controller.context.partition_leader_and_isr(TP)
    assert info is not None
    topic = AlterPartitionTopicData(
        [AlterPartitionPartitionData(
            tp.partition,
            info.leader_epoch if leader_epoch is None else leader_epoch,
            list(info.isr) if isr is None else isr,
            recovery,
            info.partition_epoch if partition_epoch is None else partition_epoch,
        )],
        **({"topic_id": c.controller.context.topic_ids.get(tp.topic)} if by_id else {"topic_name": tp.topic}),
    )
    return AlterPartitionRequest(broker, c.broker_epoch(broker) if epoch is None else epoch, [topic])


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_alter_partition(version: int) -> None:
    c = cluster(1)
    create_topic(c, "t", [[0]])
    lai = c.controller.context.partition_leader_and_isr(TP)
    assert lai is not None
    response = alter_partition(c, _request(c, broker=0, by_id=version > 1), version)
    assert response.error_code == 0
    (topic,) = response.topics
    assert (topic.topic_name, topic.topic_id == c.controller.context.topic_ids["t"]) == (
        ("", True) if version > 1 else ("t", False))
    (p,) = topic.partitions
    assert (p.error_code, p.leader_id, p.leader_epoch, p.isr, p.partition_epoch) == (
        0, 0, lai.leader_epoch, lai.isr, lai.partition_epoch)


def test_alter_partition_version2_keep_working_when_controller_downgrade_to_pre28_ibp() -> None:
    c = cluster(1)
    create_topic(c, "t", [[0]])
    topic_id = c.controller.context.topic_ids["t"]
    c.config_overrides["inter_broker_protocol_version"] = MetadataVersion.IBP_2_7_IV0
    c.fail_over(0)
    assert c.controller.context.topic_ids["t"] == topic_id  # kept from the znode
    response = alter_partition(c, _request(c, broker=0, by_id=True), 3)
    assert [p.error_code for t in response.topics for p in t.partitions] == [0]


def test_idempotent_alter_partition() -> None:
    c = cluster(2)
    create_topic(c, "t", [[1, 0]])
    old = c.controller.context.partition_leader_and_isr(TP)
    assert old is not None
    for partition_epoch in (old.partition_epoch, old.partition_epoch, old.partition_epoch + 1):
        response = alter_partition(c, _request(c, broker=1, isr=[1], leader_epoch=old.leader_epoch,
                                               partition_epoch=partition_epoch))
        (p,) = response.topics[0].partitions
        assert (p.error_code, p.leader_id, p.leader_epoch, p.partition_epoch, p.isr) == (
            0, 1, old.leader_epoch, old.partition_epoch + 1, (1,))


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_shutdown_broker_not_added_to_isr(version: int) -> None:
    c = cluster(2)
    create_topic(c, "t", [[0, 1]])
    c.stop_broker(1)
    c.settle()
    lai = c.controller.context.partition_leader_and_isr(TP)
    assert lai is not None and lai.isr == (0,)
    response = alter_partition(c, _request(c, broker=0, isr=[0, 1], by_id=version > 1), version)
    (p,) = response.topics[0].partitions
    assert p.error_code == (Errors.INELIGIBLE_REPLICA if version > 1 else Errors.OPERATION_NOT_ATTEMPTED)
    assert c.controller.context.partition_leader_and_isr(TP).isr == (0,)  # type: ignore[union-attr]
    c.start_broker(1)
    c.settle()
    expand_isr(c, TP, [0, 1])
    assert state(c)[2] == (0, 1)


def _error(c: ControllerCluster, request: AlterPartitionRequest, version: int = 3) -> tuple[int, list[int]]:
    response = alter_partition(c, request, version)
    return response.error_code, [p.error_code for t in response.topics for p in t.partitions]


def test_alter_partition_errors() -> None:
    c = cluster(2)
    create_topic(c, "t", [[0, 1]])
    lai = c.controller.context.partition_leader_and_isr(TP)
    assert lai is not None
    le, pe, epoch = lai.leader_epoch, lai.partition_epoch, c.broker_epoch(0)
    assert _error(c, _request(c, broker=0, epoch=epoch - 1)) == (Errors.STALE_BROKER_EPOCH, [])
    bad = _request(c, broker=0)
    assert _error(c, AlterPartitionRequest(99, bad.broker_epoch, bad.topics)) == (Errors.STALE_BROKER_EPOCH, [])
    unknown_id = AlterPartitionRequest(0, epoch, [AlterPartitionTopicData(bad.topics[0].partitions)])
    assert _error(c, unknown_id) == (0, [Errors.UNKNOWN_TOPIC_ID])
    assert _error(c, _request(c, broker=0, tp=TopicPartition("unknown", 0), by_id=False), 1) == (
        0, [Errors.UNKNOWN_TOPIC_OR_PARTITION])
    assert _error(c, _request(c, broker=0, tp=TopicPartition("t", 1), by_id=False), 1) == (
        0, [Errors.UNKNOWN_TOPIC_OR_PARTITION])
    cases: list[tuple[dict[str, Any], Errors]] = [
        ({"isr": [0], "partition_epoch": pe - 1}, Errors.INVALID_UPDATE_VERSION),
        ({"partition_epoch": pe + 1}, Errors.NOT_CONTROLLER),
        ({"leader_epoch": le - 1}, Errors.FENCED_LEADER_EPOCH),
        ({"leader_epoch": le + 1}, Errors.NOT_CONTROLLER),
        ({"recovery": 1}, Errors.INVALID_REQUEST),
        ({"recovery": 1, "isr": [0]}, Errors.INVALID_REQUEST),
        ({"recovery": 1, "partition_epoch": pe - 1}, Errors.INVALID_UPDATE_VERSION),
        ({"recovery": 1, "partition_epoch": pe + 1}, Errors.NOT_CONTROLLER),
        ({"recovery": 1, "leader_epoch": le - 1}, Errors.FENCED_LEADER_EPOCH),
        ({"recovery": 1, "leader_epoch": le + 1}, Errors.NOT_CONTROLLER),
    ]
    for kwargs, code in cases:
        assert _error(c, _request(c, broker=0, **kwargs)) == (0, [code]), kwargs
    assert _error(c, _request(c, broker=0, isr=[0], recovery=25)) == (Errors.UNKNOWN_SERVER_ERROR, [])
    assert state(c)[:3] == (0, le, (0, 1))  # nothing was written


def test_alter_partition_errors_after_unclean_election() -> None:
    c = cluster(3, unclean_leader_election_enable=True)
    create_topic(c, "t", [[1, 2]])
    for b in (1, 2):
        c.stop_broker(b)
        c.settle()
    c.start_broker(1)
    c.settle()
    lai = c.controller.context.partition_leader_and_isr(TP)
    assert lai is not None and lai.leader_recovery_state is LeaderRecoveryState.RECOVERING
    le, pe = lai.leader_epoch, lai.partition_epoch
    assert _error(c, _request(c, broker=1, epoch=c.broker_epoch(1) - 1, isr=[1, 2])) == (Errors.STALE_BROKER_EPOCH, [])
    cases: list[tuple[dict[str, Any], Errors]] = [
        ({"partition_epoch": pe - 1}, Errors.INVALID_UPDATE_VERSION),
        ({"partition_epoch": pe + 1}, Errors.NOT_CONTROLLER),
        ({"leader_epoch": le - 1}, Errors.FENCED_LEADER_EPOCH),
        ({"leader_epoch": le + 1}, Errors.NOT_CONTROLLER),
        ({"recovery": 1}, Errors.INVALID_REQUEST),
        ({"recovery": 1, "partition_epoch": pe - 1}, Errors.INVALID_UPDATE_VERSION),
        ({"recovery": 1, "partition_epoch": pe + 1}, Errors.NOT_CONTROLLER),
        ({"recovery": 1, "leader_epoch": le - 1}, Errors.FENCED_LEADER_EPOCH),
        ({"recovery": 1, "leader_epoch": le + 1}, Errors.NOT_CONTROLLER),
    ]
    for kwargs, code in cases:
        assert _error(c, _request(c, broker=1, isr=[1, 2], **kwargs)) == (0, [code]), kwargs


# ---------------------------------------------------------------------- deletion


def test_topic_deletion_completes_on_stop_replica_answers() -> None:
    """TopicDeletion (KC:1787-1816) through StopReplica responses (KC:1451-1471)."""
    c = cluster(2)
    create_topic(c, "t", [[0, 1]])
    c.store.delete_topic("t")
    c.settle()
    assert "t" not in c.controller.context.all_topics
    assert not c.store.path_exists("/brokers/topics/t") and not c.store.path_exists("/admin/delete_topics/t")
    assert all("t" not in b.cache.partition_states for b in c.brokers.values())
    assert c.caches_agree() == []


def test_topic_deletion_waits_for_a_dead_replica() -> None:
    c = cluster(2)
    create_topic(c, "t", [[0, 1]])
    c.stop_broker(1)
    c.settle()
    c.store.delete_topic("t")
    c.settle()
    assert "t" in c.controller.context.topics_ineligible_for_deletion
    assert c.store.path_exists("/brokers/topics/t")
    c.start_broker(1)
    c.settle()
    assert not c.store.path_exists("/brokers/topics/t")


def test_recreated_topic_inherits_the_deletion_ineligible_mark() -> None:
    """A Kafka hazard kept as is: removeTopic (CC:320-337) leaves topicsIneligibleForDeletion
    alone. A deletion that completes while its topic is marked ineligible (a dead replica already
    deleted is marked again, TDM:300-314) leaves the mark; a topic re-created with that name is
    then never eligible: its deletion waits, with brokers still serving its metadata."""
    c = cluster(3)
    create_topic(c, "a", [[1, 2]])
    c.stop_broker(2)
    c.settle()
    c.store.delete_topic("a")
    c.settle()  # replica 1 deleted, replica 2 dead: ineligible
    c.stop_broker(1)
    c.settle()
    c.start_broker(2)
    c.settle()  # resumed: replica 2 deleted; dead replica 1 marks the topic ineligible again
    assert not c.store.path_exists("/brokers/topics/a")
    assert c.controller.context.topics_ineligible_for_deletion == {"a"}
    create_topic(c, "a", [[2]])
    c.store.delete_topic("a")
    c.settle()
    ctx = c.controller.context
    assert ctx.topics_queued_for_deletion == {"a"} and ctx.topics_with_deletion_started == set()
    assert c.store.path_exists("/brokers/topics/a")
    assert 0 in c.brokers[2].cache.partition_states["a"]  # no UpdateMetadata with leader -2 went out


def test_topic_deletion_disabled_removes_the_request() -> None:
    c = cluster(1, delete_topic_enable=False)
    create_topic(c, "t", [[0]])
    c.store.delete_topic("t")
    c.settle()
    assert not c.store.path_exists("/admin/delete_topics/t") and c.store.path_exists("/brokers/topics/t")


def test_lost_stop_replica_answers_keep_the_topic() -> None:
    """No StopReplica response: the deletion stays started (KC:1451-1471 never runs)."""
    c = cluster(1)
    create_topic(c, "t", [[0]])
    c.unanswered = lambda _b, r: r.api_key == SR
    c.store.delete_topic("t")
    c.settle()
    assert c.store.path_exists("/brokers/topics/t") and "t" in c.controller.context.topics_with_deletion_started
