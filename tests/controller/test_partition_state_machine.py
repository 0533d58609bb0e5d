"""Kafka 3.9's PartitionStateMachineTest (PSMT), every case, over the in-memory store.

Where Kafka verifies Mockito calls on the batch, the recording batch's calls are compared in
order; where Kafka mocks the zk client, the store holds the real znodes (failures injected) and
what it holds afterwards is asserted. Partition epochs are the store's real znode versions (a
Kafka mock returned 2; the in-memory znode written once is at version 1).
"""

from __future__ import annotations

from typing import Any

import pytest

from ctrlbatch.context import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    PartitionAndReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from ctrlbatch.controller import (
    Code,
    ControlledShutdownPartitionLeaderElectionStrategy,
    ControllerMovedException,
    KeeperException,
    OfflinePartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy,
    StateChangeFailedException,
    TopicDeletionManager,
    ZooKeeperClientException,
)
from ctrlbatch.requests import LeaderAndIsrRequest

P = PartitionState
TP = TopicPartition("t", 0)
OFFLINE_CLEAN = OfflinePartitionLeaderElectionStrategy(False)
LAIR = "add_leader_and_isr_request_for_brokers"


def test_nonexistent_partition_to_new_partition_transition(h: Any) -> None:
    h.psm.handle_state_changes([TP], P.NewPartition)
    assert h.ctx.partition_state(TP) is P.NewPartition


def test_invalid_nonexistent_partition_to_online_partition_transition(h: Any) -> None:
    h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert h.ctx.partition_state(TP) is P.NonExistentPartition


def test_invalid_nonexistent_partition_to_offline_partition_transition(h: Any) -> None:
    h.psm.handle_state_changes([TP], P.OfflinePartition)
    assert h.ctx.partition_state(TP) is P.NonExistentPartition


def _new_partition_on_5(h: Any) -> None:
    h.live(5)
    h.assign(TP, [5])
    h.ctx.put_partition_state(TP, P.NewPartition)


def test_new_partition_to_online_partition_transition(h: Any) -> None:
    _new_partition_on_5(h)
    expected = LeaderIsrAndControllerEpoch(LeaderAndIsr(5, [5]), 50)
    result = h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert result == {}  # initialisations are not election results
    assert h.psm_batch.calls == [
        ("new_batch",),
        (LAIR, (5,), TP, expected, ReplicaAssignment([5]), True),
        ("send_requests_to_brokers", 50),
    ]
    create_calls = [args for name, args in h.store.calls if name == "create_topic_partition_states_raw"]
    assert create_calls == [({TP: expected}, 0)]
    assert h.stored() == expected  # the znode, version 0
    assert h.ctx.partition_leadership_info(TP) == expected
    assert h.ctx.partition_state(TP) is P.OnlinePartition
    # what the real batch sent: one LeaderAndIsr to broker 5 with is_new, then UpdateMetadata
    sent = h.psm_batch.recording.requests_for(5)
    assert [r.api_key for r in sent] == [4, 6]
    body = sent[0].body
    assert isinstance(body, LeaderAndIsrRequest)
    states = [s for t in body.topic_states for s in t.partition_states] if body.topic_states else body.ungrouped_partition_states
    assert [(s.leader, s.isr, s.is_new) for s in states] == [(5, (5,), True)]


def test_new_partition_to_online_partition_transition_zoo_keeper_client_exception_from_create_states(h: Any) -> None:
    _new_partition_on_5(h)
    h.store.inject("create_topic_partition_states_raw", raise_=ZooKeeperClientException("test"))
    result = h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert result == {}
    assert h.psm_batch.calls == [("new_batch",), ("send_requests_to_brokers", 50)]
    assert h.store.call_count("create_topic_partition_states_raw") == 1
    assert h.stored() is None
    assert h.ctx.partition_state(TP) is P.NewPartition


def test_new_partition_to_online_partition_transition_error_code_from_create_states(h: Any) -> None:
    _new_partition_on_5(h)
    other = LeaderIsrAndControllerEpoch(LeaderAndIsr(6, [6], 3), 49)
    h.store.set_partition_state(TP, other)  # the state znode exists: the create answers NODEEXISTS
    h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert h.psm_batch.calls == [("new_batch",), ("send_requests_to_brokers", 50)]
    assert h.store.call_count("create_topic_partition_states_raw") == 1
    assert h.stored() == other  # untouched
    assert h.ctx.partition_leadership_info(TP) is None
    assert h.ctx.partition_state(TP) is P.NewPartition


def test_new_partition_to_online_partition_transition_error_code_injected(h: Any) -> None:
    _new_partition_on_5(h)
    h.store.inject("create_topic_partition_states_raw", code=Code.NODEEXISTS)
    h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert h.psm_batch.calls == [("new_batch",), ("send_requests_to_brokers", 50)]
    assert h.ctx.partition_state(TP) is P.NewPartition


def test_new_partition_to_offline_partition_transition(h: Any) -> None:
    h.ctx.put_partition_state(TP, P.NewPartition)
    h.psm.handle_state_changes([TP], P.OfflinePartition)
    assert h.ctx.partition_state(TP) is P.OfflinePartition


def test_invalid_new_partition_to_nonexistent_partition_transition(h: Any) -> None:
    h.ctx.put_partition_state(TP, P.NewPartition)
    h.psm.handle_state_changes([TP], P.NonExistentPartition)
    assert h.ctx.partition_state(TP) is P.NewPartition


def _elected(h: Any, updated: LeaderAndIsr, recipients: tuple[int, ...], replicas: list[int]) -> None:
    info = LeaderIsrAndControllerEpoch(updated, 50)
    assert h.psm_batch.calls == [
        ("new_batch",),
        (LAIR, recipients, TP, info, ReplicaAssignment(replicas), False),
        ("send_requests_to_brokers", 50),
    ]
    assert h.store.call_count("get_topic_partition_states_raw") == 1
    assert h.store.call_count("update_leader_and_isr") == 1
    assert h.stored() == info
    assert h.ctx.partition_leadership_info(TP) == info
    assert h.ctx.partition_state(TP) is P.OnlinePartition


def test_online_partition_to_online_transition(h: Any) -> None:
    h.live(5)
    h.assign(TP, [5])
    h.ctx.put_partition_state(TP, P.OnlinePartition)
    info = h.lead(TP, 5, [5])
    result = h.psm.handle_state_changes([TP], P.OnlinePartition, PreferredReplicaPartitionLeaderElectionStrategy())
    updated = info.leader_and_isr.new_leader(5).with_partition_epoch(1)
    assert updated.leader_epoch == 1
    assert result == {TP: updated}
    _elected(h, updated, (5,), [5])


def test_online_partition_to_online_transition_for_controlled_shutdown(h: Any) -> None:
    h.live(5, 6)
    h.ctx.shutting_down_broker_ids.add(5)
    h.assign(TP, [5, 6])
    h.ctx.put_partition_state(TP, P.OnlinePartition)
    info = h.lead(TP, 5, [5, 6])
    h.psm.handle_state_changes([TP], P.OnlinePartition, ControlledShutdownPartitionLeaderElectionStrategy())
    updated = info.leader_and_isr.new_leader_and_isr(6, [6]).with_partition_epoch(1)
    # the LeaderAndIsr goes to both brokers, the shutting-down one included
    _elected(h, updated, (5, 6), [5, 6])
    assert [r.api_key for r in h.psm_batch.recording.requests_for(5)] == [4, 6]


def test_online_partition_to_offline_transition(h: Any) -> None:
    h.ctx.put_partition_state(TP, P.OnlinePartition)
    h.psm.handle_state_changes([TP], P.OfflinePartition)
    assert h.ctx.partition_state(TP) is P.OfflinePartition


def test_invalid_online_partition_to_nonexistent_partition_transition(h: Any) -> None:
    h.ctx.put_partition_state(TP, P.OnlinePartition)
    h.psm.handle_state_changes([TP], P.NonExistentPartition)
    assert h.ctx.partition_state(TP) is P.OnlinePartition


def test_invalid_online_partition_to_new_partition_transition(h: Any) -> None:
    h.ctx.put_partition_state(TP, P.OnlinePartition)
    h.psm.handle_state_changes([TP], P.NewPartition)
    assert h.ctx.partition_state(TP) is P.OnlinePartition


def _offline_no_leader(h: Any) -> LeaderIsrAndControllerEpoch:
    h.live(5)
    h.assign(TP, [5])
    h.ctx.put_partition_state(TP, P.OfflinePartition)
    return h.lead(TP, LeaderAndIsr.NO_LEADER, [5])


def test_offline_partition_to_online_partition_transition(h: Any) -> None:
    info = _offline_no_leader(h)
    h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    updated = info.leader_and_isr.new_leader(5).with_partition_epoch(1)
    _elected(h, updated, (5,), [5])
    # a live ISR member exists, so no topic needs its config: get_log_configs is called with none
    assert [args[0] for name, args in h.store.calls if name == "get_log_configs"] == [[]]


@pytest.mark.parametrize("is_leader_recovery_supported", [True, False])
def test_offline_partition_to_unclean_online_partition_transition(
    ck: Any, is_leader_recovery_supported: bool
) -> None:
    h = ck.Harness(metadata_version="3.2-IV0" if is_leader_recovery_supported else "3.1-IV0")
    h.live(5)
    h.assign(TP, [6, 5])
    h.ctx.put_partition_state(TP, P.OfflinePartition)
    info = h.lead(TP, 6, [6])
    h.psm.handle_state_changes([TP], P.OnlinePartition, OfflinePartitionLeaderElectionStrategy(True))
    lai = info.leader_and_isr
    after = lai.new_recovering_leader_and_isr(5, [5]) if is_leader_recovery_supported else lai.new_leader_and_isr(5, [5])
    _elected(h, after.with_partition_epoch(1), (5,), [6, 5])
    expected_state = LeaderRecoveryState.RECOVERING if is_leader_recovery_supported else LeaderRecoveryState.RECOVERED
    stored = h.stored()
    assert stored is not None and stored.leader_and_isr.leader_recovery_state is expected_state
    # allow_unclean: no config read at all
    assert h.store.call_count("get_log_configs") == 0


def test_offline_partition_to_online_partition_transition_zoo_keeper_client_exception_from_state_lookup(h: Any) -> None:
    info = _offline_no_leader(h)
    h.store.inject("get_topic_partition_states_raw", raise_=ZooKeeperClientException(""))
    result = h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert isinstance(result[TP], ZooKeeperClientException)
    assert h.psm_batch.calls == [("new_batch",), ("send_requests_to_brokers", 50)]
    assert h.store.call_count("get_topic_partition_states_raw") == 1
    assert h.store.call_count("update_leader_and_isr") == 0
    assert h.stored() == info
    assert h.ctx.partition_state(TP) is P.OfflinePartition


def test_offline_partition_to_online_partition_transition_error_code_from_state_lookup(h: Any) -> None:
    _offline_no_leader(h)
    h.store.inject("get_topic_partition_states_raw", code=Code.NONODE)
    result = h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert isinstance(result[TP], StateChangeFailedException)
    assert str(result[TP]) == "LeaderAndIsr information doesn't exist for partition t-0 in OfflinePartition state"
    assert h.psm_batch.calls == [("new_batch",), ("send_requests_to_brokers", 50)]
    assert h.ctx.partition_state(TP) is P.OfflinePartition


def test_offline_partition_to_nonexistent_partition_transition(h: Any) -> None:
    h.ctx.put_partition_state(TP, P.OfflinePartition)
    h.psm.handle_state_changes([TP], P.NonExistentPartition)
    assert h.ctx.partition_state(TP) is P.NonExistentPartition


def test_invalid_offline_partition_to_new_partition_transition(h: Any) -> None:
    h.ctx.put_partition_state(TP, P.OfflinePartition)
    h.psm.handle_state_changes([TP], P.NewPartition)
    assert h.ctx.partition_state(TP) is P.OfflinePartition


def _four_partitions(h: Any) -> list[TopicPartition]:
    partitions = [TopicPartition("test", i) for i in range(4)]
    for tp in partitions:
        h.assign(tp, [5])
    return partitions


def test_updating_offline_partitions_count(h: Any) -> None:
    h.live(5)
    partitions = _four_partitions(h)
    for tp in partitions:  # PSMT:428-452: the store holds (5, [5]) at epoch 50 for each
        h.store.set_partition_state(tp, LeaderIsrAndControllerEpoch(LeaderAndIsr(5, [5]), 50))
    h.psm.handle_state_changes(partitions, P.NewPartition)
    h.psm.handle_state_changes(partitions, P.OfflinePartition)
    assert h.ctx.offline_partition_count == 4
    results = h.psm.handle_state_changes(partitions, P.OnlinePartition, OFFLINE_CLEAN)
    assert all(isinstance(r, LeaderAndIsr) and r.leader == 5 and r.leader_epoch == 1 for r in results.values())
    assert h.ctx.offline_partition_count == 0


def test_no_offline_partitions_change_for_topics_being_deleted(h: Any) -> None:
    partitions = [TopicPartition("test", i) for i in range(4)]
    h.ctx.queue_topic_deletion({"test"})
    h.ctx.begin_topic_deletion({"test"})
    h.psm.handle_state_changes(partitions, P.NewPartition)
    h.psm.handle_state_changes(partitions, P.OfflinePartition)
    assert [h.ctx.partition_state(tp) for tp in partitions] == [P.OfflinePartition] * 4
    assert h.ctx.offline_partition_count == 0


def test_updating_offline_partitions_count_during_topic_deletion(ck: Any, h: Any) -> None:
    partitions = [TopicPartition("test", i) for i in range(4)]
    for tp in partitions:
        h.ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment([5]))
    psm = ck.MockPartitionStateMachine(h.ctx, False, True)
    rsm = ck.MockReplicaStateMachine(h.ctx)
    client = ck.RecordingDeletionClient()
    manager = TopicDeletionManager(h.ctx, rsm, psm, client)
    psm.handle_state_changes(partitions, P.NewPartition)
    psm.handle_state_changes(partitions, P.OfflinePartition)
    for tp in partitions:
        h.ctx.put_replica_state(PartitionAndReplica(tp, 5), ReplicaState.OfflineReplica)
    assert h.ctx.offline_partition_count == 4
    manager.enqueue_topics_for_deletion({"test"})
    assert h.ctx.offline_partition_count == 0


# ------------------------------------------------------------- beyond Kafka's cases


def test_bad_version_is_retried_with_a_fresh_read(h: Any) -> None:
    """A concurrent writer (the leader shrinking the ISR) bumps the znode between our read and
    write: BADVERSION, re-read, re-elect from the new state (PSM:328-352)."""
    h.live(5, 6)
    h.assign(TP, [5, 6])
    h.ctx.put_partition_state(TP, P.OfflinePartition)
    h.lead(TP, LeaderAndIsr.NO_LEADER, [5, 6])
    concurrent = LeaderIsrAndControllerEpoch(LeaderAndIsr(LeaderAndIsr.NO_LEADER, [6], 4), 50)
    h.store.inject("update_leader_and_isr", before=lambda: h.store.set_partition_state(TP, concurrent))
    result = h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert h.store.call_count("get_topic_partition_states_raw") == 2
    assert h.store.call_count("update_leader_and_isr") == 2
    # the first write lost (the concurrent one made version 1); the second read saw ISR [6]
    assert result == {TP: LeaderAndIsr(6, [6], 5, 2)}
    assert h.stored() == LeaderIsrAndControllerEpoch(LeaderAndIsr(6, [6], 5, 2), 50)
    assert len(h.psm_batch.calls_named(LAIR)) == 1


def test_a_stored_controller_epoch_above_ours_aborts_the_election(h: Any) -> None:
    h.live(5)
    h.assign(TP, [5])
    h.ctx.put_partition_state(TP, P.OfflinePartition)
    h.lead(TP, LeaderAndIsr.NO_LEADER, [5], controller_epoch=51)
    result = h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert isinstance(result[TP], StateChangeFailedException)
    assert "already written by another controller" in str(result[TP])
    assert "elected with epoch 51." in str(result[TP])
    assert h.store.call_count("update_leader_and_isr") == 0  # no valid input: returns before the write (PSM:407-409)
    assert h.ctx.partition_state(TP) is P.OfflinePartition


def test_controller_moved_is_raised_and_nothing_is_written(h: Any) -> None:
    info = _offline_no_leader(h)
    h.store.elect_other_controller(9)
    with pytest.raises(ControllerMovedException, match="Expected zkVersion = 0"):
        h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert h.stored() == info
    assert h.ctx.partition_state(TP) is P.OfflinePartition


def test_failed_log_config_read_leaves_the_partition_without_election(h: Any) -> None:
    h.live(5)
    h.assign(TP, [6, 5])
    h.ctx.put_partition_state(TP, P.OfflinePartition)
    h.lead(TP, 6, [6])
    h.store.inject("get_log_configs", code=Code.CONNECTIONLOSS)  # retried transparently
    h.store.inject("get_log_configs", raise_=ZooKeeperClientException("down"))
    first = h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert isinstance(first[TP], StateChangeFailedException)  # no unclean election: the flag is false
    second = h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert str(second[TP]) == (
        "Failed to elect leader for partition t-0 under strategy OfflinePartitionLeaderElectionStrategy(false)"
    )
    assert h.store.connection_losses == 1


def test_topic_config_enables_an_unclean_election(h: Any) -> None:
    h.live(5)
    h.assign(TP, [6, 5])
    h.ctx.put_partition_state(TP, P.OfflinePartition)
    h.lead(TP, 6, [6])
    h.store.set_topic_config("t", {"unclean.leader.election.enable": "true"})
    result = h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert result[TP] == LeaderAndIsr(5, [5], 1, 1, LeaderRecoveryState.RECOVERING)
    assert h.psm.election_policy.stats.unclean_leader_elections >= 1  # type: ignore[attr-defined]


def test_missing_strategy_fails_every_partition(h: Any) -> None:
    _offline_no_leader(h)
    result = h.psm.handle_state_changes([TP], P.OnlinePartition)
    assert isinstance(result[TP], ValueError)
    assert str(result[TP]) == "Election strategy is a required field when the target state is OnlinePartition"
    assert h.psm_batch.calls == [("new_batch",)]  # not sent


def test_non_ok_read_code_is_a_keeper_exception(h: Any) -> None:
    _offline_no_leader(h)
    h.store.inject("get_topic_partition_states_raw", code=Code.NOAUTH)
    result = h.psm.handle_state_changes([TP], P.OnlinePartition, OFFLINE_CLEAN)
    assert isinstance(result[TP], KeeperException) and result[TP].code is Code.NOAUTH  # type: ignore[union-attr]


def test_startup_initialises_states_and_triggers_online(h: Any) -> None:
    h.live(5)
    a, b, c = (TopicPartition("s", i) for i in range(3))
    for tp in (a, b, c):
        h.assign(tp, [5])
    h.lead(a, 5, [5])
    h.lead(b, 6, [5])  # leader not live: Offline, then elected
    h.psm.startup()
    assert {tp: h.ctx.partition_state(tp) for tp in (a, b, c)} == {
        a: P.OnlinePartition, b: P.OnlinePartition, c: P.OnlinePartition,
    }
    assert h.ctx.partition_leadership_info(b).leader_and_isr.leader == 5  # type: ignore[union-attr]
    assert h.ctx.partition_leadership_info(c).leader_and_isr == LeaderAndIsr(5, [5])  # type: ignore[union-attr]
    assert h.ctx.offline_partition_count == 0


def test_online_trigger_skips_topics_queued_for_deletion(h: Any) -> None:
    h.live(5)
    h.assign(TP, [5])
    h.ctx.put_partition_state(TP, P.NewPartition)
    h.ctx.queue_topic_deletion({"t"})
    assert h.psm.trigger_online_partition_state_change() == {}
    assert h.psm_batch.calls == []
    assert h.ctx.partition_state(TP) is P.NewPartition
