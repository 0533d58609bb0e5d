"""Partition leadership: ``LeaderAndIsr``, its recovery state, and the controller epoch that wrote it.

Rules:
- Field meanings and the sentinel constants are Kafka's ``kafka.api.LeaderAndIsr`` companion values.
- The ISR is a tuple of broker ids in their original order (Kafka 3.9 also carries broker epochs
  per ISR member; nothing in the controller-to-broker requests uses them, so they are left out).
- ``partition_epoch`` is the ZooKeeper znode version in ZK mode (UpdateMetadata's ``zkVersion``).
- ``during_delete(isr)`` is a *fresh* value with leader -2, leader epoch 0, partition epoch 0 and
  RECOVERED: Kafka builds it from the short constructor, not from the partition's real epochs.
- The ``new_*`` helpers mirror Kafka's: each bumps the leader epoch by one and keeps the partition epoch.
- Values pickle as their constructor arguments: a context ships one per partition.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import ClassVar

import attrs

__all__ = ["LeaderAndIsr", "LeaderIsrAndControllerEpoch", "LeaderRecoveryState"]


class LeaderRecoveryState(enum.IntEnum):
    """Whether the leader finished recovering after an unclean election (int8 on the wire)."""

    RECOVERED = 0
    RECOVERING = 1


def _to_isr(isr: Iterable[int]) -> tuple[int, ...]:
    return tuple(isr)


@attrs.frozen
class LeaderAndIsr:
    """A partition's leader, leader epoch, in-sync replicas, recovery state and partition epoch."""

    INITIAL_LEADER_EPOCH: ClassVar[int] = 0
    INITIAL_PARTITION_EPOCH: ClassVar[int] = 0
    NO_LEADER: ClassVar[int] = -1
    NO_EPOCH: ClassVar[int] = -1
    LEADER_DURING_DELETE: ClassVar[int] = -2
    EPOCH_DURING_DELETE: ClassVar[int] = -2

    leader: int
    isr: tuple[int, ...] = attrs.field(converter=_to_isr)
    leader_epoch: int = 0
    partition_epoch: int = 0
    leader_recovery_state: LeaderRecoveryState = attrs.field(
        default=LeaderRecoveryState.RECOVERED, converter=LeaderRecoveryState
    )

    def __reduce__(self) -> tuple[type[LeaderAndIsr], tuple[int, tuple[int, ...], int, int, int]]:
        return (
            LeaderAndIsr,
            (self.leader, self.isr, self.leader_epoch, self.partition_epoch, int(self.leader_recovery_state)),
        )

    @classmethod
    def during_delete(cls, isr: Iterable[int]) -> LeaderAndIsr:
        """What UpdateMetadata advertises for a partition whose topic is queued for deletion."""
        return cls(cls.LEADER_DURING_DELETE, isr)

    @property
    def leader_opt(self) -> int | None:
        """The leader id, or ``None`` when there is no leader (-1)."""
        return None if self.leader == self.NO_LEADER else self.leader

    def with_partition_epoch(self, partition_epoch: int) -> LeaderAndIsr:
        return attrs.evolve(self, partition_epoch=partition_epoch)

    def new_leader(self, leader: int) -> LeaderAndIsr:
        """A new leader with the same ISR, in the next leader epoch."""
        return attrs.evolve(self, leader=leader, leader_epoch=self.leader_epoch + 1)

    def new_leader_and_isr(self, leader: int, isr: Iterable[int]) -> LeaderAndIsr:
        """A new leader and ISR in the next leader epoch; recovery state kept."""
        return attrs.evolve(self, leader=leader, isr=isr, leader_epoch=self.leader_epoch + 1)

    def new_recovering_leader_and_isr(self, leader: int, isr: Iterable[int]) -> LeaderAndIsr:
        """An unclean election's result: next leader epoch, state RECOVERING."""
        return attrs.evolve(
            self,
            leader=leader,
            isr=isr,
            leader_epoch=self.leader_epoch + 1,
            leader_recovery_state=LeaderRecoveryState.RECOVERING,
        )

    def new_epoch(self) -> LeaderAndIsr:
        """The same leadership in the next leader epoch."""
        return attrs.evolve(self, leader_epoch=self.leader_epoch + 1)

    def equals_allow_stale_partition_epoch(self, other: LeaderAndIsr | None) -> bool:
        """Equal except that this partition epoch may be older than ``other``'s."""
        if other is None:
            return False
        return (
            self.leader == other.leader
            and self.leader_epoch == other.leader_epoch
            and self.isr == other.isr
            and self.leader_recovery_state == other.leader_recovery_state
            and self.partition_epoch <= other.partition_epoch
        )


@attrs.frozen
class LeaderIsrAndControllerEpoch:
    """Leadership plus the epoch of the controller that *last wrote it* (not necessarily the current one)."""

    leader_and_isr: LeaderAndIsr
    controller_epoch: int

    def __reduce__(self) -> tuple[type[LeaderIsrAndControllerEpoch], tuple[LeaderAndIsr, int]]:
        return (LeaderIsrAndControllerEpoch, (self.leader_and_isr, self.controller_epoch))
