"""Kafka 3.9's PartitionLeaderElectionAlgorithmsTest (PLEAT), every case, plus property tests of
each algorithm against its definition, the strategies' names and a custom ElectionPolicy."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.context import LeaderAndIsr, LeaderIsrAndControllerEpoch, PartitionState, TopicPartition
from ctrlbatch.controller import (
    ControlledShutdownPartitionLeaderElectionStrategy,
    ControllerStats,
    ElectionPolicy,
    KafkaElectionPolicy,
    OfflinePartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy,
    ReassignPartitionLeaderElectionStrategy,
    ZkPartitionStateMachine,
    controlled_shutdown_partition_leader_election,
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)

# ------------------------------------------------------------------ PLEAT, case by case


def test_offline_partition_leader_election() -> None:
    stats = ControllerStats()
    assert offline_partition_leader_election([2, 4], [2, 4], {4}, False, stats) == 4
    assert stats.unclean_leader_elections == 0


def test_offline_partition_leader_election_last_isr_offline_unclean_leader_election_disabled() -> None:
    stats = ControllerStats()
    assert offline_partition_leader_election([2, 4], [2], {4}, False, stats) is None
    assert stats.unclean_leader_elections == 0


def test_offline_partition_leader_election_last_isr_offline_unclean_leader_election_enabled() -> None:
    stats = ControllerStats()
    assert offline_partition_leader_election([2, 4], [2], {4}, True, stats) == 4
    assert stats.unclean_leader_elections == 1


def test_reassign_partition_leader_election() -> None:
    assert reassign_partition_leader_election([2, 4], [2, 4], {4}) == 4


def test_reassign_partition_leader_election_with_no_live_isr() -> None:
    assert reassign_partition_leader_election([2, 4], [2], set()) is None


def test_reassign_partition_leader_election_with_empty_isr() -> None:
    assert reassign_partition_leader_election([2, 4], [], {2}) is None


def test_preferred_replica_partition_leader_election() -> None:
    assert preferred_replica_partition_leader_election([2, 4], [2, 4], {2, 4}) == 2


def test_preferred_replica_partition_leader_election_preferred_replica_in_isr_not_live() -> None:
    assert preferred_replica_partition_leader_election([2, 4], [2], set()) is None


def test_preferred_replica_partition_leader_election_preferred_replica_not_in_isr_live() -> None:
    assert preferred_replica_partition_leader_election([2, 4], [4], {2, 4}) is None


def test_preferred_replica_partition_leader_election_preferred_replica_not_in_isr_not_live() -> None:
    assert preferred_replica_partition_leader_election([2, 4], [], set()) is None


def test_controlled_shutdown_partition_leader_election() -> None:
    assert controlled_shutdown_partition_leader_election([2, 4], [2, 4], {2, 4}, {2}) == 4


def test_controlled_shutdown_partition_leader_election_last_isr_shutting_down() -> None:
    assert controlled_shutdown_partition_leader_election([2, 4], [2], {2, 4}, {2}) is None


def test_controlled_shutdown_partition_leader_election_all_isr_simultaneously_shutdown() -> None:
    assert controlled_shutdown_partition_leader_election([2, 4], [2, 4], {2, 4}, {2, 4}) is None


# ------------------------------------------------------------------ properties

brokers = st.integers(0, 8)
assignments = st.lists(brokers, min_size=0, max_size=6, unique=True)
broker_sets = st.sets(brokers, max_size=9)


@given(assignments, st.lists(brokers, max_size=6, unique=True), broker_sets, st.booleans())
def test_offline_election_matches_its_definition(assignment: list[int], isr: list[int], live: set[int],
                                                 unclean: bool) -> None:
    stats = ControllerStats()
    leader = offline_partition_leader_election(assignment, isr, live, unclean, stats)
    clean = [r for r in assignment if r in live and r in isr]
    any_live = [r for r in assignment if r in live]
    expected = clean[0] if clean else (any_live[0] if unclean and any_live else None)
    assert leader == expected
    assert stats.unclean_leader_elections == (1 if not clean and unclean and any_live else 0)


@given(assignments, st.lists(brokers, max_size=6, unique=True), broker_sets)
def test_reassign_and_preferred_elections_match_their_definitions(assignment: list[int], isr: list[int],
                                                                  live: set[int]) -> None:
    eligible = [r for r in assignment if r in live and r in isr]
    assert reassign_partition_leader_election(assignment, isr, live) == (eligible[0] if eligible else None)
    head_ok = bool(assignment) and assignment[0] in live and assignment[0] in isr
    assert preferred_replica_partition_leader_election(assignment, isr, live) == (assignment[0] if head_ok else None)


@given(assignments, st.lists(brokers, max_size=6, unique=True), broker_sets, broker_sets)
def test_controlled_shutdown_election_matches_its_definition(assignment: list[int], isr: list[int], live: set[int],
                                                             shutting_down: set[int]) -> None:
    leader = controlled_shutdown_partition_leader_election(assignment, isr, live, shutting_down)
    eligible = [r for r in assignment if r in live and r in isr and r not in shutting_down]
    assert leader == (eligible[0] if eligible else None)
    assert leader is None or leader not in shutting_down


def test_strategy_names_are_scala_to_strings() -> None:
    assert str(OfflinePartitionLeaderElectionStrategy(False)) == "OfflinePartitionLeaderElectionStrategy(false)"
    assert str(OfflinePartitionLeaderElectionStrategy(True)) == "OfflinePartitionLeaderElectionStrategy(true)"
    assert str(ReassignPartitionLeaderElectionStrategy()) == "ReassignPartitionLeaderElectionStrategy"
    assert str(PreferredReplicaPartitionLeaderElectionStrategy()) == "PreferredReplicaPartitionLeaderElectionStrategy"
    assert str(ControlledShutdownPartitionLeaderElectionStrategy()) == "ControlledShutdownPartitionLeaderElectionStrategy"
    assert ReassignPartitionLeaderElectionStrategy() == ReassignPartitionLeaderElectionStrategy()


# ------------------------------------------------------------------ pluggable policy


class LastLiveIsrPolicy(KafkaElectionPolicy):
    """A different rule for offline elections: the *last* live ISR member in assignment order."""

    def offline_partition_leader_election(self, assignment: Sequence[int], isr: Sequence[int],
                                          live_replicas: AbstractSet[int], unclean_leader_election_enabled: bool) -> int | None:
        eligible = [r for r in assignment if r in live_replicas and r in isr]
        return eligible[-1] if eligible else None


def test_a_custom_policy_changes_only_the_leader(ck: Any) -> None:
    tp = TopicPartition("t", 0)
    results = {}
    for policy in (KafkaElectionPolicy(), LastLiveIsrPolicy()):
        assert isinstance(policy, ElectionPolicy)
        h = ck.Harness()
        h.psm = ZkPartitionStateMachine(5, h.ctx, h.store, h.psm_batch, election_policy=policy)
        h.live(1, 2, 3)
        h.assign(tp, [1, 2, 3])
        h.ctx.put_partition_state(tp, PartitionState.OfflinePartition)
        h.lead(tp, 4, [1, 2, 3])
        results[type(policy).__name__] = h.psm.handle_state_changes(
            [tp], PartitionState.OnlinePartition, OfflinePartitionLeaderElectionStrategy(False)
        )[tp]
        assert h.stored() == LeaderIsrAndControllerEpoch(results[type(policy).__name__], 50)  # type: ignore[arg-type]
    assert results == {
        "KafkaElectionPolicy": LeaderAndIsr(1, [1, 2, 3], 1, 1),
        "LastLiveIsrPolicy": LeaderAndIsr(3, [1, 2, 3], 1, 1),
    }


# ------------------------------------------------------------------ Election.scala's wrappers


def _ctx_with(ck: Any, live: list[int], shutting_down: tuple[int, ...] = ()) -> Any:
    h = ck.Harness()
    h.live(*live)
    h.ctx.shutting_down_broker_ids.update(shutting_down)
    return h


def test_reassign_wrapper_elects_among_targets_and_tells_all_targets(ck: Any) -> None:
    from ctrlbatch.context import ReplicaAssignment
    from ctrlbatch.controller.election import leader_for_reassign

    h = _ctx_with(ck, [1, 2, 3])
    tp = TopicPartition("t", 0)
    # moving [1, 2] -> [3, 4]: replicas [3, 4, 1, 2], adding [3, 4], removing [1, 2]
    h.ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment([1, 2]).reassign_to([3, 4]))
    lai = LeaderAndIsr(1, [1, 2, 3], 4, 7)
    (result,) = leader_for_reassign(h.ctx, [(tp, lai)])
    assert result.leader_and_isr == LeaderAndIsr(3, [1, 2, 3], 5, 7)  # ISR unchanged, partition epoch kept
    assert result.live_replicas == (3, 4)  # every target replica, live or not


def test_reassign_strategy_through_the_state_machine(ck: Any) -> None:
    from ctrlbatch.context import ReplicaAssignment

    h = ck.Harness()
    h.live(1, 2, 3)
    tp = TopicPartition("t", 0)
    h.assign(tp, [1, 2])
    h.ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment([1, 2]).reassign_to([3, 4]))
    h.ctx.put_partition_state(tp, PartitionState.OnlinePartition)
    h.lead(tp, 1, [1, 2, 3])
    result = h.psm.handle_state_changes([tp], PartitionState.OnlinePartition, ReassignPartitionLeaderElectionStrategy())
    assert result == {tp: LeaderAndIsr(3, [1, 2, 3], 1, 1)}
    (call,) = h.psm_batch.calls_named("add_leader_and_isr_request_for_brokers")
    assert call[1] == (3, 4)


def test_offline_wrapper_filters_the_isr_and_marks_recovery(ck: Any) -> None:
    from ctrlbatch.context import LeaderRecoveryState, ReplicaAssignment
    from ctrlbatch.controller.election import leader_for_offline

    h = _ctx_with(ck, [2, 3], shutting_down=(3,))
    tp = TopicPartition("t", 0)
    h.ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment([1, 2, 3]))
    clean, = leader_for_offline(h.ctx, True, [(tp, LeaderAndIsr(1, [1, 2, 3], 2, 5), False)])
    assert clean.leader_and_isr == LeaderAndIsr(2, [2], 3, 5)  # ISR filtered to online replicas
    assert clean.live_replicas == (2,)  # a shutting-down broker is not online here
    unclean, = leader_for_offline(h.ctx, True, [(tp, LeaderAndIsr(1, [1], 2, 5), True)])
    assert unclean.leader_and_isr == LeaderAndIsr(2, [2], 3, 5, LeaderRecoveryState.RECOVERING)
    none, = leader_for_offline(h.ctx, True, [(tp, None, True)])
    assert none.leader_and_isr is None and none.live_replicas == (2,)


def test_controlled_shutdown_wrapper_keeps_the_isr_without_a_leader(ck: Any) -> None:
    from ctrlbatch.context import ReplicaAssignment
    from ctrlbatch.controller.election import leader_for_controlled_shutdown

    h = _ctx_with(ck, [1, 2], shutting_down=(1, 2))
    tp = TopicPartition("t", 0)
    h.ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment([1, 2]))
    (result,) = leader_for_controlled_shutdown(h.ctx, [(tp, LeaderAndIsr(1, [1, 2]))])
    assert result.leader_and_isr is None  # every ISR member shutting down: nothing written (EL:147)
    assert result.live_replicas == (1, 2)  # shutting-down brokers still get requests
