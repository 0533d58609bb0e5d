"""Leader election: Kafka's four algorithms, the four strategies, and a pluggable policy.

Rules:
- The algorithms are PartitionLeaderElectionAlgorithms (PSM:531-562), pure functions of ordered
  lists and sets (reference §2.1): offline = first replica in *assignment order* that is live and
  in the ISR, else (unclean enabled) the first live one, counting an unclean election;
  reassign = first target replica live and in the ISR; preferred = only the assignment's head,
  if live and in the ISR (no fallback); controlled shutdown = first live, in-ISR replica that is
  not shutting down. ``None`` means no leader.
- Strategies (PSM:558-562) are frozen values: ``OfflinePartitionLeaderElectionStrategy(allow_unclean)``
  and three field-less ones; ``str()`` is Scala's toString ("OfflinePartitionLeaderElectionStrategy(false)",
  "PreferredReplicaPartitionLeaderElectionStrategy"), which the "Failed to elect leader" message shows.
- The wrappers are Election.scala's (EL:28-166, reference §2.2): each builds the new LeaderAndIsr
  (leader epoch + 1, partition epoch kept) and the ``ElectionResult.live_replicas`` field, which
  is really the LeaderAndIsr *recipient* list: offline -> live replicas of the assignment
  (ISR' = old ISR filtered to online replicas if the leader was in it, else [leader], RECOVERING
  when the leader was not in the ISR and leader recovery is supported, IBP >= 3.2-IV0);
  reassign -> all target replicas (ISR unchanged); preferred -> the full assignment (ISR
  unchanged); controlled shutdown -> live-or-shutting-down replicas (ISR minus shutting-down
  brokers, written only when a leader is found).
- Pluggable policy (beyond Kafka): the four algorithms are reached through an ``ElectionPolicy``
  (a Protocol with the four methods). ``KafkaElectionPolicy`` is Kafka's and the default; pass
  another to ZkPartitionStateMachine (and KafkaController) to run your own rule on the same event
  history. The policy only picks the leader; the ISR, recipients, store writes and requests
  around it stay Kafka's, so two policies differ exactly in the leaders they choose.
- The unclean-election meter (KC:2782, ``UncleanLeaderElectionsPerSec``) is
  ``ControllerStats.unclean_leader_elections``, a counter the caller reads; Kafka's policy marks it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Protocol, runtime_checkable

import attrs

from ctrlbatch.context import ControllerContext, LeaderAndIsr, TopicPartition

__all__ = [
    "KAFKA_ELECTION_POLICY",
    "ControlledShutdownPartitionLeaderElectionStrategy",
    "ControllerStats",
    "ElectionPolicy",
    "ElectionResult",
    "KafkaElectionPolicy",
    "OfflinePartitionLeaderElectionStrategy",
    "PartitionLeaderElectionStrategy",
    "PreferredReplicaPartitionLeaderElectionStrategy",
    "ReassignPartitionLeaderElectionStrategy",
    "controlled_shutdown_partition_leader_election",
    "leader_for_controlled_shutdown",
    "leader_for_offline",
    "leader_for_preferred_replica",
    "leader_for_reassign",
    "offline_partition_leader_election",
    "preferred_replica_partition_leader_election",
    "reassign_partition_leader_election",
]


# ----------------------------------------------------------------------------- strategies


@attrs.frozen
class OfflinePartitionLeaderElectionStrategy:
    """Elect among live ISR members; ``allow_unclean`` lets a live non-ISR replica lead."""

    allow_unclean: bool

    def __str__(self) -> str:
        return f"OfflinePartitionLeaderElectionStrategy({'true' if self.allow_unclean else 'false'})"


@attrs.frozen
class ReassignPartitionLeaderElectionStrategy:
    """Elect among the reassignment's target replicas."""

    def __str__(self) -> str:
        return "ReassignPartitionLeaderElectionStrategy"


@attrs.frozen
class PreferredReplicaPartitionLeaderElectionStrategy:
    """Move leadership to the assignment's head (the preferred replica)."""

    def __str__(self) -> str:
        return "PreferredReplicaPartitionLeaderElectionStrategy"


@attrs.frozen
class ControlledShutdownPartitionLeaderElectionStrategy:
    """Move leadership off shutting-down brokers."""

    def __str__(self) -> str:
        return "ControlledShutdownPartitionLeaderElectionStrategy"


PartitionLeaderElectionStrategy = (
    OfflinePartitionLeaderElectionStrategy
    | ReassignPartitionLeaderElectionStrategy
    | PreferredReplicaPartitionLeaderElectionStrategy
    | ControlledShutdownPartitionLeaderElectionStrategy
)


@attrs.frozen
class ElectionResult:
    """EL:24: the new leadership (None: no leader) and who gets the LeaderAndIsr."""

    topic_partition: TopicPartition
    leader_and_isr: LeaderAndIsr | None
    live_replicas: tuple[int, ...]


@attrs.define
class ControllerStats:
    """The election meters a caller can read (Kafka's ControllerStats, the part elections mark)."""

    unclean_leader_elections: int = 0


# ----------------------------------------------------------------------------- algorithms


def offline_partition_leader_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: AbstractSet[int],
    unclean_leader_election_enabled: bool,
    stats: ControllerStats | None = None,
) -> int | None:
    """PSM:532-543: first live ISR member in assignment order; else, if unclean, first live one."""
    for r in assignment:
        if r in live_replicas and r in isr:
            return r
    if unclean_leader_election_enabled:
        for r in assignment:
            if r in live_replicas:
                if stats is not None:
                    stats.unclean_leader_elections += 1
                return r
    return None


def reassign_partition_leader_election(
    reassignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int]
) -> int | None:
    """PSM:545-547: first target replica that is live and in the ISR."""
    for r in reassignment:
        if r in live_replicas and r in isr:
            return r
    return None


def preferred_replica_partition_leader_election(
    assignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int]
) -> int | None:
    """PSM:549-551: the assignment's head, only if live and in the ISR."""
    if assignment:
        head = assignment[0]
        if head in live_replicas and head in isr:
            return head
    return None


def controlled_shutdown_partition_leader_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: AbstractSet[int],
    shutting_down_brokers: AbstractSet[int],
) -> int | None:
    """PSM:553-555: first live, in-ISR replica that is not shutting down."""
    for r in assignment:
        if r in live_replicas and r in isr and r not in shutting_down_brokers:
            return r
    return None


# ----------------------------------------------------------------------------- policy


@runtime_checkable
class ElectionPolicy(Protocol):
    """Picks a leader (or None) for each of the four strategies; the rest stays Kafka's."""

    def offline_partition_leader_election(
        self, assignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int],
        unclean_leader_election_enabled: bool,
    ) -> int | None: ...

    def reassign_partition_leader_election(
        self, reassignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int]
    ) -> int | None: ...

    def preferred_replica_partition_leader_election(
        self, assignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int]
    ) -> int | None: ...

    def controlled_shutdown_partition_leader_election(
        self, assignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int],
        shutting_down_brokers: AbstractSet[int],
    ) -> int | None: ...


@attrs.define
class KafkaElectionPolicy:
    """Kafka 3.9's algorithms; ``stats`` counts unclean elections."""

    stats: ControllerStats = attrs.field(factory=ControllerStats)

    def offline_partition_leader_election(
        self, assignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int],
        unclean_leader_election_enabled: bool,
    ) -> int | None:
        return offline_partition_leader_election(
            assignment, isr, live_replicas, unclean_leader_election_enabled, self.stats
        )

    def reassign_partition_leader_election(
        self, reassignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int]
    ) -> int | None:
        return reassign_partition_leader_election(reassignment, isr, live_replicas)

    def preferred_replica_partition_leader_election(
        self, assignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int]
    ) -> int | None:
        return preferred_replica_partition_leader_election(assignment, isr, live_replicas)

    def controlled_shutdown_partition_leader_election(
        self, assignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int],
        shutting_down_brokers: AbstractSet[int],
    ) -> int | None:
        return controlled_shutdown_partition_leader_election(assignment, isr, live_replicas, shutting_down_brokers)


KAFKA_ELECTION_POLICY: ElectionPolicy = KafkaElectionPolicy()
"""A shared default; build your own ``KafkaElectionPolicy()`` to read an unclean count of your own."""


# ----------------------------------------------------------------------------- Election.scala


def leader_for_offline(
    ctx: ControllerContext,
    is_leader_recovery_supported: bool,
    partitions_with_unclean_state: Iterable[tuple[TopicPartition, LeaderAndIsr | None, bool]],
    policy: ElectionPolicy = KAFKA_ELECTION_POLICY,
) -> list[ElectionResult]:
    """EL:28-80: (partition, stored leadership or None, unclean allowed) -> results."""
    online = ctx.is_replica_online
    results = []
    for tp, lai, unclean in partitions_with_unclean_state:
        assignment = ctx.partition_replica_assignment(tp)
        live = tuple([r for r in assignment if online(r, tp)])
        if lai is None:
            results.append(ElectionResult(tp, None, live))
            continue
        isr = lai.isr
        leader = policy.offline_partition_leader_election(assignment, isr, frozenset(live), unclean)
        new: LeaderAndIsr | None = None
        if leader is not None:
            in_isr = leader in isr
            new_isr = [r for r in isr if online(r, tp)] if in_isr else [leader]
            if not in_isr and is_leader_recovery_supported:
                new = lai.new_recovering_leader_and_isr(leader, new_isr)
            else:
                new = lai.new_leader_and_isr(leader, new_isr)
        results.append(ElectionResult(tp, new, live))
    return results


def leader_for_reassign(
    ctx: ControllerContext,
    leader_and_isrs: Iterable[tuple[TopicPartition, LeaderAndIsr]],
    policy: ElectionPolicy = KAFKA_ELECTION_POLICY,
) -> list[ElectionResult]:
    """EL:82-107: elect among the target replicas; all of them get the LeaderAndIsr."""
    online = ctx.is_replica_online
    results = []
    for tp, lai in leader_and_isrs:
        target = ctx.partition_full_replica_assignment(tp).target_replicas
        live = frozenset(r for r in target if online(r, tp))
        leader = policy.reassign_partition_leader_election(target, lai.isr, live)
        results.append(ElectionResult(tp, None if leader is None else lai.new_leader(leader), target))
    return results


def leader_for_preferred_replica(
    ctx: ControllerContext,
    leader_and_isrs: Iterable[tuple[TopicPartition, LeaderAndIsr]],
    policy: ElectionPolicy = KAFKA_ELECTION_POLICY,
) -> list[ElectionResult]:
    """EL:109-134: elect the preferred replica; the full assignment gets the LeaderAndIsr."""
    online = ctx.is_replica_online
    results = []
    for tp, lai in leader_and_isrs:
        assignment = ctx.partition_replica_assignment(tp)
        live = frozenset(r for r in assignment if online(r, tp))
        leader = policy.preferred_replica_partition_leader_election(assignment, lai.isr, live)
        results.append(ElectionResult(tp, None if leader is None else lai.new_leader(leader), assignment))
    return results


def leader_for_controlled_shutdown(
    ctx: ControllerContext,
    leader_and_isrs: Iterable[tuple[TopicPartition, LeaderAndIsr]],
    policy: ElectionPolicy = KAFKA_ELECTION_POLICY,
) -> list[ElectionResult]:
    """EL:136-166: elect a replica not shutting down; the ISR loses the shutting-down brokers."""
    online = ctx.is_replica_online
    shutting_down = frozenset(ctx.shutting_down_broker_ids)
    results = []
    for tp, lai in leader_and_isrs:
        assignment = ctx.partition_replica_assignment(tp)
        live = tuple([r for r in assignment if online(r, tp, True)])
        leader = policy.controlled_shutdown_partition_leader_election(
            assignment, lai.isr, frozenset(live), shutting_down
        )
        new = None
        if leader is not None:
            new = lai.new_leader_and_isr(leader, [r for r in lai.isr if r not in shutting_down])
        results.append(ElectionResult(tp, new, live))
    return results
