"""Partition and replica states of the ZooKeeper-mode controller's two state machines.

Rules:
- ``PartitionState`` values are Kafka's state bytes (PSM:564-587): NewPartition 0,
  OnlinePartition 1, OfflinePartition 2, NonExistentPartition 3. ``ReplicaState`` values are
  RSM:453-491's: NewReplica 1 ... NonExistentReplica 7.
- ``str()`` is Kafka's case-object name ("OnlinePartition"), as in Kafka's log and error text.
- The valid-previous-state tables are data (``PARTITION_VALID_PREVIOUS_STATES``,
  ``REPLICA_VALID_PREVIOUS_STATES``), each set listed in Kafka's declaration order so the
  "should be in one of <states>" messages name the states as Kafka's ``mkString(",")`` would for
  these small Scala sets (insertion order up to four members).
- ``PartitionAndReplica`` is KC:2757-2764: a replica ``replica`` of ``topic_partition``;
  ``str()`` is Kafka's ``[Topic=<t>,Partition=<p>,Replica=<r>]``.
- They live in ``ctrlbatch.context`` because ControllerContext stores them (CC:92-93).
"""

from __future__ import annotations

import enum

import attrs

from .topic_partition import TopicPartition

__all__ = [
    "PARTITION_VALID_PREVIOUS_STATES",
    "REPLICA_VALID_PREVIOUS_STATES",
    "PartitionAndReplica",
    "PartitionState",
    "ReplicaState",
]


class PartitionState(enum.IntEnum):
    """A partition's state in the partition state machine (Kafka's ``state: Byte``)."""

    NewPartition = 0
    OnlinePartition = 1
    OfflinePartition = 2
    NonExistentPartition = 3

    def __str__(self) -> str:
        return self.name

    @property
    def valid_previous_states(self) -> tuple[PartitionState, ...]:
        return PARTITION_VALID_PREVIOUS_STATES[self]


class ReplicaState(enum.IntEnum):
    """A replica's state in the replica state machine (Kafka's ``state: Byte``)."""

    NewReplica = 1
    OnlineReplica = 2
    OfflineReplica = 3
    ReplicaDeletionStarted = 4
    ReplicaDeletionSuccessful = 5
    ReplicaDeletionIneligible = 6
    NonExistentReplica = 7

    def __str__(self) -> str:
        return self.name

    @property
    def valid_previous_states(self) -> tuple[ReplicaState, ...]:
        return REPLICA_VALID_PREVIOUS_STATES[self]


_P = PartitionState
PARTITION_VALID_PREVIOUS_STATES: dict[PartitionState, tuple[PartitionState, ...]] = {
    _P.NewPartition: (_P.NonExistentPartition,),
    _P.OnlinePartition: (_P.NewPartition, _P.OnlinePartition, _P.OfflinePartition),
    _P.OfflinePartition: (_P.NewPartition, _P.OnlinePartition, _P.OfflinePartition),
    _P.NonExistentPartition: (_P.OfflinePartition,),
}
"""PSM:564-587: target state -> the states it may be entered from."""

_R = ReplicaState
REPLICA_VALID_PREVIOUS_STATES: dict[ReplicaState, tuple[ReplicaState, ...]] = {
    _R.NewReplica: (_R.NonExistentReplica,),
    _R.OnlineReplica: (_R.NewReplica, _R.OnlineReplica, _R.OfflineReplica, _R.ReplicaDeletionIneligible),
    _R.OfflineReplica: (_R.NewReplica, _R.OnlineReplica, _R.OfflineReplica, _R.ReplicaDeletionIneligible),
    _R.ReplicaDeletionStarted: (_R.OfflineReplica,),
    _R.ReplicaDeletionSuccessful: (_R.ReplicaDeletionStarted,),
    _R.ReplicaDeletionIneligible: (_R.OfflineReplica, _R.ReplicaDeletionStarted),
    _R.NonExistentReplica: (_R.ReplicaDeletionSuccessful,),
}
"""RSM:453-491: target state -> the states it may be entered from."""

# Membership tests on the hot path (one per partition or replica per call).
PARTITION_VALID_FROM: dict[PartitionState, frozenset[PartitionState]] = {
    k: frozenset(v) for k, v in PARTITION_VALID_PREVIOUS_STATES.items()
}
REPLICA_VALID_FROM: dict[ReplicaState, frozenset[ReplicaState]] = {
    k: frozenset(v) for k, v in REPLICA_VALID_PREVIOUS_STATES.items()
}


@attrs.frozen(cache_hash=True)
class PartitionAndReplica:
    """One replica (a broker id) of one partition."""

    topic_partition: TopicPartition
    replica: int

    @property
    def topic(self) -> str:
        return self.topic_partition.topic

    def __str__(self) -> str:
        tp = self.topic_partition
        return f"[Topic={tp.topic},Partition={tp.partition},Replica={self.replica}]"

    def __reduce__(self) -> tuple[type[PartitionAndReplica], tuple[TopicPartition, int]]:
        return (PartitionAndReplica, (self.topic_partition, self.replica))
