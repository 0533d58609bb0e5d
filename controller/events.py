"""KafkaController's events, their ControllerState, and what preempting one answers.

Rules (KafkaController.scala KC:2795-2965, ControllerState.scala CS:22-115):
- One frozen attrs class per Kafka event, Kafka's name; case objects are field-less classes
  (``Startup()``). The three response events are the batch's own (ctrlbatch.batch.events), so
  the batch's ``on_event`` output is enqueued as is.
- ``ControllerState`` has Kafka's byte values and rate-and-time metric names (CS:37-101).
  ``EVENT_STATES`` maps each event class to its state (the ``state`` member of each Kafka event).
- ``preempt(event)`` is each event's ``preempt()``: ControlledShutdown answers a
  ControllerMovedException("Controller moved to another broker") (KC:2844), ApiPartitionReassignment
  and ListPartitionReassignments answer ApiError(NOT_CONTROLLER) (KC:2905, 2950),
  ReplicaLeaderElection answers NOT_CONTROLLER per admin-given partition (KC:2936-2940); the
  others do nothing.
- Callbacks: ControlledShutdown's gets a frozenset of partitions (Success) or the exception
  (Failure) -- Scala's Try. ApiPartitionReassignment's and ListPartitionReassignments' get a
  dict (Left) or an ApiError (Right) -- Scala's Either. ReplicaLeaderElection's gets
  {partition: leader id (Right) or ApiError (Left)}.
- Callbacks compare by identity; events are hashable only when their fields are.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from ctrlbatch.batch.events import (
    LeaderAndIsrResponseReceived,
    TopicDeletionStopReplicaResponseReceived,
    UpdateMetadataResponseReceived,
)
from ctrlbatch.context import ReplicaAssignment, TopicPartition

from .api_errors import ApiError, Errors
from .errors import ControllerMovedException

__all__ = [
    "AlterPartitionReceived", "ApiPartitionReassignment", "AutoPreferredReplicaLeaderElection", "BrokerChange",
    "BrokerModifications", "ControlledShutdown", "ControllerChange", "ControllerState", "ElectionTrigger",
    "ElectionType", "EVENT_STATES", "Expire", "IsrChangeNotification", "LeaderAndIsrResponseReceived",
    "ListPartitionReassignments", "LogDirEventNotification", "PartitionModifications",
    "PartitionReassignmentIsrChange", "Reelect", "RegisterBrokerAndReelect", "ReplicaLeaderElection",
    "ShutdownEventThread", "Startup", "TopicChange", "TopicDeletion", "TopicDeletionStopReplicaResponseReceived",
    "TopicUncleanLeaderElectionEnable", "UncleanLeaderElectionEnable", "UpdateMetadataResponseReceived",
    "ZkPartitionReassignment", "preempt", "state_of",
]


class ControllerState(enum.IntEnum):
    """What the controller is doing (the ControllerState gauge), Kafka's byte values."""

    IDLE = 0
    CONTROLLER_CHANGE = 1
    BROKER_CHANGE = 2
    TOPIC_CHANGE = 3
    TOPIC_DELETION = 4
    ALTER_PARTITION_REASSIGNMENT = 5
    AUTO_LEADER_BALANCE = 6
    MANUAL_LEADER_BALANCE = 7
    CONTROLLED_SHUTDOWN = 8
    ISR_CHANGE = 9
    LEADER_AND_ISR_RESPONSE_RECEIVED = 10
    LOG_DIR_CHANGE = 11
    CONTROLLER_SHUTDOWN = 12
    UNCLEAN_LEADER_ELECTION_ENABLE = 13
    TOPIC_UNCLEAN_LEADER_ELECTION_ENABLE = 14
    LIST_PARTITION_REASSIGNMENT = 15
    UPDATE_METADATA_RESPONSE_RECEIVED = 16
    UPDATE_FEATURES = 17

    @property
    def kafka_name(self) -> str:
        """The case object's name (ControllerChange, ...)."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @property
    def rate_and_time_metric_name(self) -> str | None:
        """<Name>RateAndTimeMs; two keep older names; Idle and UpdateMetadataResponseReceived have none."""
        if self in (ControllerState.IDLE, ControllerState.UPDATE_METADATA_RESPONSE_RECEIVED):
            return None
        return _METRIC_NAMES.get(self, f"{self.kafka_name}RateAndTimeMs")


_METRIC_NAMES = {
    ControllerState.BROKER_CHANGE: "LeaderElectionRateAndTimeMs",
    ControllerState.ALTER_PARTITION_REASSIGNMENT: "PartitionReassignmentRateAndTimeMs",
}


class ElectionType(enum.IntEnum):
    """org.apache.kafka.common.ElectionType."""

    PREFERRED = 0
    UNCLEAN = 1


class ElectionTrigger(enum.Enum):
    """Who asked for an election (KC:59-62)."""

    AUTO_TRIGGERED = "AutoTriggered"
    ZK_TRIGGERED = "ZkTriggered"
    ADMIN_CLIENT_TRIGGERED = "AdminClientTriggered"


ControlledShutdownCallback = Callable[[frozenset[TopicPartition] | BaseException], None]
ElectLeadersCallback = Callable[[dict[TopicPartition, "int | ApiError"]], None]
AlterReassignmentsCallback = Callable[["dict[TopicPartition, ApiError] | ApiError"], None]
ListReassignmentsCallback = Callable[["dict[TopicPartition, ReplicaAssignment] | ApiError"], None]


def _ignore(_result: Any) -> None:
    return None


@attrs.frozen
class Startup:
    pass


@attrs.frozen
class ControllerChange:
    pass


@attrs.frozen
class Reelect:
    pass


@attrs.frozen
class RegisterBrokerAndReelect:
    pass


@attrs.frozen
class Expire:
    pass


@attrs.frozen
class ShutdownEventThread:
    pass


@attrs.frozen
class AutoPreferredReplicaLeaderElection:
    pass


@attrs.frozen
class UncleanLeaderElectionEnable:
    pass


@attrs.frozen
class TopicUncleanLeaderElectionEnable:
    topic: str


@attrs.frozen
class ControlledShutdown:
    id: int
    broker_epoch: int
    callback: ControlledShutdownCallback = attrs.field(default=_ignore, eq=False)


@attrs.frozen
class BrokerChange:
    pass


@attrs.frozen
class BrokerModifications:
    broker_id: int


@attrs.frozen
class TopicChange:
    pass


@attrs.frozen
class LogDirEventNotification:
    pass


@attrs.frozen
class PartitionModifications:
    topic: str


@attrs.frozen
class TopicDeletion:
    pass


@attrs.frozen
class ZkPartitionReassignment:
    pass


@attrs.frozen
class ApiPartitionReassignment:
    """reassignments: partition -> target replicas, or None to cancel."""

    reassignments: Mapping[TopicPartition, Sequence[int] | None] = attrs.field(eq=False)
    callback: AlterReassignmentsCallback = attrs.field(default=_ignore, eq=False)


@attrs.frozen
class PartitionReassignmentIsrChange:
    partition: TopicPartition


@attrs.frozen
class IsrChangeNotification:
    pass


@attrs.frozen
class AlterPartitionReceived:
    """request: an ``AlterPartitionRequest`` (controller/alter_partition.py)."""

    request: Any = attrs.field(eq=False)
    version: int
    callback: Callable[[Any], None] = attrs.field(default=_ignore, eq=False)


@attrs.frozen
class ReplicaLeaderElection:
    partitions: frozenset[TopicPartition] | None
    election_type: ElectionType
    trigger: ElectionTrigger
    callback: ElectLeadersCallback = attrs.field(default=_ignore, eq=False)


@attrs.frozen
class ListPartitionReassignments:
    partitions: frozenset[TopicPartition] | None
    callback: ListReassignmentsCallback = attrs.field(default=_ignore, eq=False)


EVENT_STATES: dict[type, ControllerState] = {
    Startup: ControllerState.CONTROLLER_CHANGE,
    ControllerChange: ControllerState.CONTROLLER_CHANGE,
    Reelect: ControllerState.CONTROLLER_CHANGE,
    RegisterBrokerAndReelect: ControllerState.CONTROLLER_CHANGE,
    Expire: ControllerState.CONTROLLER_CHANGE,
    ShutdownEventThread: ControllerState.CONTROLLER_SHUTDOWN,
    AutoPreferredReplicaLeaderElection: ControllerState.AUTO_LEADER_BALANCE,
    UncleanLeaderElectionEnable: ControllerState.UNCLEAN_LEADER_ELECTION_ENABLE,
    TopicUncleanLeaderElectionEnable: ControllerState.TOPIC_UNCLEAN_LEADER_ELECTION_ENABLE,
    ControlledShutdown: ControllerState.CONTROLLED_SHUTDOWN,
    LeaderAndIsrResponseReceived: ControllerState.LEADER_AND_ISR_RESPONSE_RECEIVED,
    UpdateMetadataResponseReceived: ControllerState.UPDATE_METADATA_RESPONSE_RECEIVED,
    TopicDeletionStopReplicaResponseReceived: ControllerState.TOPIC_DELETION,
    BrokerChange: ControllerState.BROKER_CHANGE,
    BrokerModifications: ControllerState.BROKER_CHANGE,
    TopicChange: ControllerState.TOPIC_CHANGE,
    LogDirEventNotification: ControllerState.LOG_DIR_CHANGE,
    PartitionModifications: ControllerState.TOPIC_CHANGE,
    TopicDeletion: ControllerState.TOPIC_DELETION,
    ZkPartitionReassignment: ControllerState.ALTER_PARTITION_REASSIGNMENT,
    ApiPartitionReassignment: ControllerState.ALTER_PARTITION_REASSIGNMENT,
    PartitionReassignmentIsrChange: ControllerState.ALTER_PARTITION_REASSIGNMENT,
    IsrChangeNotification: ControllerState.ISR_CHANGE,
    AlterPartitionReceived: ControllerState.ISR_CHANGE,
    ReplicaLeaderElection: ControllerState.MANUAL_LEADER_BALANCE,
    ListPartitionReassignments: ControllerState.LIST_PARTITION_REASSIGNMENT,
}


def state_of(event: object) -> ControllerState:
    """The event's ControllerState; an object that is no controller event is refused by name."""
    state = EVENT_STATES.get(type(event))
    if state is None:
        raise TypeError(f"{type(event).__name__} is not a controller event (known: see EVENT_STATES)")
    return state


def preempt(event: object) -> None:
    """Answer a preempted event's callback as Kafka's preempt() does (see the module rules)."""
    if isinstance(event, ControlledShutdown):
        event.callback(ControllerMovedException("Controller moved to another broker"))
    elif isinstance(event, ApiPartitionReassignment | ListPartitionReassignments):
        event.callback(ApiError(Errors.NOT_CONTROLLER))
    elif isinstance(event, ReplicaLeaderElection):
        partitions = event.partitions if event.partitions is not None else ()
        event.callback({tp: ApiError(Errors.NOT_CONTROLLER, None) for tp in partitions})
