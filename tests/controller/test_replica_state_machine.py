"""Kafka 3.9's ReplicaStateMachineTest (RSMT), every case, over the in-memory store.

The recording batch stands for Kafka's Mockito-verified batch; the store holds the real state
znode (written at version 0, so the ISR shrink writes version 1).
"""

from __future__ import annotations

from typing import Any

import pytest

from ctrlbatch.context import (
    Broker,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from ctrlbatch.controller import ControllerMovedException
from ctrlbatch.requests import StopReplicaRequest

R = ReplicaState
TP = TopicPartition("t", 0)
REPLICA = PartitionAndReplica(TP, 5)
LAIR = "add_leader_and_isr_request_for_brokers"
SR = "add_stop_replica_request_for_brokers"
UMR = "add_update_metadata_request_for_brokers"


def _blah_broker(h: Any, broker_id: int = 5) -> None:
    h.ctx.set_live_brokers({Broker(broker_id, [EndPoint("127.0.0.1", 9997, "blah", "PLAINTEXT")]): 1})


def test_startup_online_partition(h: Any) -> None:
    _blah_broker(h)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment([5]))
    assert h.ctx.replica_state_or_none(REPLICA) is None
    h.rsm.startup()
    assert h.ctx.replica_state(REPLICA) is R.OnlineReplica


def test_startup_offline_partition(h: Any) -> None:
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment([5]))
    assert h.ctx.replica_state_or_none(REPLICA) is None
    h.rsm.startup()
    assert h.ctx.replica_state(REPLICA) is R.OfflineReplica


def test_startup_with_replica_without_leader(h: Any) -> None:
    offline = PartitionAndReplica(TP, 100)
    _blah_broker(h)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment([100]))
    assert h.ctx.replica_state_or_none(offline) is None
    h.rsm.startup()
    assert h.ctx.replica_state(offline) is R.OfflineReplica
    # no leadership: UpdateMetadata for t-0 to the live broker instead of an ISR change
    assert (UMR, (5,), frozenset({TP})) in h.rsm_batch.calls


def test_nonexistent_replica_to_new_replica_transition(h: Any) -> None:
    h.rsm.handle_state_changes([REPLICA], R.NewReplica)
    assert h.ctx.replica_state(REPLICA) is R.NewReplica


def test_new_replica_to_online_replica_transition(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.NewReplica)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment([5]))
    h.rsm.handle_state_changes([REPLICA], R.OnlineReplica)
    assert h.ctx.replica_state(REPLICA) is R.OnlineReplica
    assert h.rsm_batch.calls_named(LAIR) == []  # from New: no request


def test_new_replica_to_offline_replica_transition(h: Any) -> None:
    _blah_broker(h)
    h.ctx.put_replica_state(REPLICA, R.NewReplica)
    h.rsm.handle_state_changes([REPLICA], R.OfflineReplica)
    assert h.rsm_batch.calls == [
        ("new_batch",),
        (SR, (5,), TP, False),
        (UMR, (5,), frozenset({TP})),
        ("send_requests_to_brokers", 50),
    ]
    assert h.ctx.replica_state(REPLICA) is R.OfflineReplica


def _lead_5(h: Any, replicas: list[int]) -> LeaderIsrAndControllerEpoch:
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment(replicas))
    info = LeaderIsrAndControllerEpoch(LeaderAndIsr(5, replicas), 50)
    h.ctx.put_partition_leadership_info(TP, info)
    return info


def _lair_to_5(h: Any, info: LeaderIsrAndControllerEpoch) -> None:
    assert h.rsm_batch.calls == [
        ("new_batch",),
        (LAIR, (5,), TP, info, ReplicaAssignment([5]), False),
        ("send_requests_to_brokers", 50),
    ]
    assert h.ctx.replica_state(REPLICA) is R.OnlineReplica


def test_online_replica_to_online_replica_transition(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.OnlineReplica)
    info = _lead_5(h, [5])
    h.rsm.handle_state_changes([REPLICA], R.OnlineReplica)
    _lair_to_5(h, info)


def test_online_replica_to_offline_replica_transition(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.OnlineReplica)
    info = _lead_5(h, [5, 6])
    h.store.create_topic("t", [[5, 6]], topic_id=None)
    h.store.set_partition_state(TP, info)  # version 0
    h.rsm.handle_state_changes([REPLICA], R.OfflineReplica)
    adjusted = info.leader_and_isr.new_leader_and_isr(LeaderAndIsr.NO_LEADER, [6])
    updated = LeaderIsrAndControllerEpoch(adjusted.with_partition_epoch(1), 50)
    assert h.rsm_batch.calls == [
        ("new_batch",),
        (SR, (5,), TP, False),
        (LAIR, (6,), TP, updated, ReplicaAssignment([5, 6]), False),
        ("send_requests_to_brokers", 50),
    ]
    assert h.store.call_count("get_topic_partition_states_raw") == 1
    assert h.store.call_count("update_leader_and_isr") == 1
    assert [args[0] for name, args in h.store.calls if name == "update_leader_and_isr"] == [{TP: adjusted}]
    assert h.ctx.partition_leadership_info(TP) == updated
    assert h.store.partition_state(TP) == updated
    assert h.ctx.replica_state(REPLICA) is R.OfflineReplica


def test_offline_replica_to_online_replica_transition(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.OfflineReplica)
    info = _lead_5(h, [5])
    h.rsm.handle_state_changes([REPLICA], R.OnlineReplica)
    _lair_to_5(h, info)


def test_offline_replica_to_replica_deletion_started_transition(h: Any) -> None:
    _blah_broker(h)
    h.ctx.put_replica_state(REPLICA, R.OfflineReplica)
    h.rsm.handle_state_changes([REPLICA], R.ReplicaDeletionStarted)
    assert h.rsm_batch.calls == [("new_batch",), (SR, (5,), TP, True), ("send_requests_to_brokers", 50)]
    assert h.ctx.replica_state(REPLICA) is R.ReplicaDeletionStarted
    # what the real batch sent: one StopReplica with deletePartition to broker 5
    (request,) = h.rsm_batch.recording.requests_for(5)
    assert isinstance(request.body, StopReplicaRequest)


def test_offline_replica_to_replica_deletion_ineligible_transition(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.OfflineReplica)
    h.rsm.handle_state_changes([REPLICA], R.ReplicaDeletionIneligible)
    assert h.ctx.replica_state(REPLICA) is R.ReplicaDeletionIneligible


def test_replica_deletion_started_to_replica_deletion_ineligible_transition(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.ReplicaDeletionStarted)
    h.rsm.handle_state_changes([REPLICA], R.ReplicaDeletionIneligible)
    assert h.ctx.replica_state(REPLICA) is R.ReplicaDeletionIneligible


def test_replica_deletion_started_to_replica_deletion_successful_transition(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.ReplicaDeletionStarted)
    h.rsm.handle_state_changes([REPLICA], R.ReplicaDeletionSuccessful)
    assert h.ctx.replica_state(REPLICA) is R.ReplicaDeletionSuccessful


def test_replica_deletion_successful_to_nonexistent_replica_transition(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.ReplicaDeletionSuccessful)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment([5]))
    h.rsm.handle_state_changes([REPLICA], R.NonExistentReplica)
    assert h.ctx.partition_replica_assignment(TP) == ()
    assert h.ctx.replica_state_or_none(REPLICA) is None


def test_replica_deletion_ineligible_to_online_replica_transition(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.ReplicaDeletionIneligible)
    info = _lead_5(h, [5])
    h.rsm.handle_state_changes([REPLICA], R.OnlineReplica)
    _lair_to_5(h, info)


# The 30 invalid transitions (RSMT:106-395): (from, to); None = no state set (NonExistent).
_INVALID = [
    (None, R.OnlineReplica), (None, R.OfflineReplica), (None, R.ReplicaDeletionStarted),
    (None, R.ReplicaDeletionIneligible), (None, R.ReplicaDeletionSuccessful),
    (R.NewReplica, R.NonExistentReplica), (R.NewReplica, R.ReplicaDeletionStarted),
    (R.NewReplica, R.ReplicaDeletionIneligible), (R.NewReplica, R.ReplicaDeletionSuccessful),
    (R.OnlineReplica, R.NonExistentReplica), (R.OnlineReplica, R.NewReplica),
    (R.OnlineReplica, R.ReplicaDeletionStarted), (R.OnlineReplica, R.ReplicaDeletionIneligible),
    (R.OnlineReplica, R.ReplicaDeletionSuccessful),
    (R.OfflineReplica, R.NonExistentReplica), (R.OfflineReplica, R.NewReplica),
    (R.OfflineReplica, R.ReplicaDeletionSuccessful),
    (R.ReplicaDeletionStarted, R.NonExistentReplica), (R.ReplicaDeletionStarted, R.NewReplica),
    (R.ReplicaDeletionStarted, R.OnlineReplica), (R.ReplicaDeletionStarted, R.OfflineReplica),
    (R.ReplicaDeletionSuccessful, R.NewReplica), (R.ReplicaDeletionSuccessful, R.OnlineReplica),
    (R.ReplicaDeletionSuccessful, R.OfflineReplica), (R.ReplicaDeletionSuccessful, R.ReplicaDeletionStarted),
    (R.ReplicaDeletionSuccessful, R.ReplicaDeletionIneligible),
    (R.ReplicaDeletionIneligible, R.NonExistentReplica), (R.ReplicaDeletionIneligible, R.NewReplica),
    (R.ReplicaDeletionIneligible, R.ReplicaDeletionStarted),
    (R.ReplicaDeletionIneligible, R.ReplicaDeletionSuccessful),
]


def _kafka_name(source: ReplicaState | None, target: ReplicaState) -> str:
    def short(s: ReplicaState | None) -> str:
        return "Nonexistent" if s in (None, R.NonExistentReplica) else str(s)
    return f"testInvalid{short(source)}To{short(target)}Transition"


@pytest.mark.parametrize(("source", "target"), _INVALID, ids=[_kafka_name(s, t) for s, t in _INVALID])
def test_invalid_transition(h: Any, source: ReplicaState | None, target: ReplicaState) -> None:
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment([5]))
    h.ctx.put_partition_leadership_info(TP, LeaderIsrAndControllerEpoch(LeaderAndIsr(6, [5, 6]), 50))
    if source is not None:
        h.ctx.put_replica_state(REPLICA, source)
    h.rsm.handle_state_changes([REPLICA], target)
    assert h.ctx.replica_state(REPLICA) is (R.NonExistentReplica if source is None else source)
    # nothing was added: the batch opened and sent empty
    assert h.rsm_batch.calls == [("new_batch",), ("send_requests_to_brokers", 50)]
    assert h.ctx.partition_replica_assignment(TP) == (5,)


def test_thirty_invalid_cases_are_distinct() -> None:
    assert len({_kafka_name(s, t) for s, t in _INVALID}) == 30


# ------------------------------------------------------------- beyond Kafka's cases


def test_new_replica_refused_for_the_leader(h: Any) -> None:
    _lead_5(h, [5, 6])
    h.rsm.handle_state_changes([REPLICA], R.NewReplica)
    assert h.ctx.replica_state(REPLICA) is R.NonExistentReplica
    follower = PartitionAndReplica(TP, 6)
    h.rsm.handle_state_changes([follower], R.NewReplica)
    info = h.ctx.partition_leadership_info(TP)
    assert (LAIR, (6,), TP, info, ReplicaAssignment([5, 6]), True) in h.rsm_batch.calls
    assert h.ctx.replica_state(follower) is R.NewReplica


def test_new_replica_online_adds_it_to_the_assignment(h: Any) -> None:
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment([6]))
    h.ctx.put_replica_state(REPLICA, R.NewReplica)
    h.rsm.handle_state_changes([REPLICA], R.OnlineReplica)
    assert h.ctx.partition_replica_assignment(TP) == (6, 5)


def test_last_isr_member_is_kept_and_the_leader_dropped(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.OnlineReplica)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment([5, 6]))
    info = LeaderIsrAndControllerEpoch(LeaderAndIsr(5, [5]), 50)
    h.ctx.put_partition_leadership_info(TP, info)
    h.store.create_topic("t", [[5, 6]], topic_id=None)
    h.store.set_partition_state(TP, info)
    h.rsm.handle_state_changes([REPLICA], R.OfflineReplica)
    stored = h.store.partition_state(TP)
    assert stored is not None and (stored.leader_and_isr.leader, stored.leader_and_isr.isr) == (-1, (5,))
    assert stored.leader_and_isr.leader_epoch == 1


def test_isr_without_the_replica_is_a_success_without_a_write(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.OnlineReplica)
    h.ctx.update_partition_full_replica_assignment(TP, ReplicaAssignment([5, 6]))
    h.ctx.put_partition_leadership_info(TP, LeaderIsrAndControllerEpoch(LeaderAndIsr(6, [6]), 49))
    h.store.create_topic("t", [[5, 6]], topic_id=None)
    h.store.set_partition_state(TP, LeaderIsrAndControllerEpoch(LeaderAndIsr(6, [6]), 49))
    h.rsm.handle_state_changes([REPLICA], R.OfflineReplica)
    _, stat = h.store.get_data("/brokers/topics/t/partitions/0/state")
    assert stat is not None and stat.version == 0
    # cached with our epoch (RSM:364-371)
    assert h.ctx.partition_leadership_info(TP) == LeaderIsrAndControllerEpoch(LeaderAndIsr(6, [6]), 50)
    assert h.ctx.replica_state(REPLICA) is R.OfflineReplica


def test_missing_state_znode_fails_unless_queued_for_deletion(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.OnlineReplica)
    _lead_5(h, [5, 6])
    h.rsm.handle_state_changes([REPLICA], R.OfflineReplica)
    assert h.ctx.replica_state(REPLICA) is R.OnlineReplica  # "the leader and isr path in zookeeper is empty"
    assert h.rsm_batch.calls_named(SR) == [(SR, (5,), TP, False)]  # already added before the ISR removal
    h.ctx.queue_topic_deletion({"t"})
    h.rsm.handle_state_changes([REPLICA], R.OfflineReplica)
    assert h.ctx.replica_state(REPLICA) is R.OnlineReplica  # dropped silently


def test_bad_version_during_isr_removal_is_retried(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.OnlineReplica)
    info = _lead_5(h, [5, 6, 7])
    h.store.create_topic("t", [[5, 6, 7]], topic_id=None)
    h.store.set_partition_state(TP, info)
    shrunk = LeaderIsrAndControllerEpoch(LeaderAndIsr(5, [5, 6], 3), 50)
    h.store.inject("update_leader_and_isr", before=lambda: h.store.set_partition_state(TP, shrunk))
    h.rsm.handle_state_changes([REPLICA], R.OfflineReplica)
    assert h.store.call_count("update_leader_and_isr") == 2
    assert h.store.partition_state(TP) == LeaderIsrAndControllerEpoch(LeaderAndIsr(-1, [6], 4, 2), 50)


def test_controller_moved_propagates(h: Any) -> None:
    h.ctx.put_replica_state(REPLICA, R.OnlineReplica)
    info = _lead_5(h, [5, 6])
    h.store.create_topic("t", [[5, 6]], topic_id=None)
    h.store.set_partition_state(TP, info)
    h.store.elect_other_controller(7)
    with pytest.raises(ControllerMovedException):
        h.rsm.handle_state_changes([REPLICA], R.OfflineReplica)
    assert h.store.partition_state(TP) == LeaderIsrAndControllerEpoch(info.leader_and_isr, 50)
