"""The controller's store watches: each turns a znode change into a queued controller event.

Rules (KC:2674-2755; paths ZD:59-550, reference §5.1):
- /brokers/ids children -> BrokerChange; /brokers/ids/<id> data -> BrokerModifications(id);
  /brokers/topics children -> TopicChange; /brokers/topics/<t> data -> PartitionModifications(t);
  /admin/delete_topics children -> TopicDeletion; /admin/reassign_partitions created ->
  ZkPartitionReassignment; /admin/preferred_replica_election created ->
  ReplicaLeaderElection(None, PREFERRED, ZkTriggered); /isr_change_notification children ->
  IsrChangeNotification; /log_dir_event_notification children -> LogDirEventNotification;
  /controller created or changed -> ControllerChange, deleted -> Reelect;
  .../partitions/<p>/state data -> PartitionReassignmentIsrChange(p) (only below IBP 2.7-IV2).
- A handler only enqueues (``put``); it never reads or changes controller state, since the store
  may call it from any context (in Kafka, the ZooKeeper event thread).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ctrlbatch.context import TopicPartition

from . import znodes
from .events import (
    BrokerChange,
    BrokerModifications,
    ControllerChange,
    ElectionTrigger,
    ElectionType,
    IsrChangeNotification,
    LogDirEventNotification,
    PartitionModifications,
    PartitionReassignmentIsrChange,
    Reelect,
    ReplicaLeaderElection,
    TopicChange,
    TopicDeletion,
    ZkPartitionReassignment,
)
from .store import ZNodeChangeHandler, ZNodeChildChangeHandler

__all__ = ["NodeHandler", "ChildHandler", "controller_handlers"]

Put = Callable[[Any], object]


class NodeHandler(ZNodeChangeHandler):
    """A znode watch whose callbacks enqueue the given events (None: ignored)."""

    def __init__(
        self,
        path: str,
        put: Put,
        *,
        on_creation: Callable[[], Any] | None = None,
        on_deletion: Callable[[], Any] | None = None,
        on_data_change: Callable[[], Any] | None = None,
    ) -> None:
        self.path = path
        self._put = put
        self._on_creation = on_creation
        self._on_deletion = on_deletion
        self._on_data_change = on_data_change

    def __repr__(self) -> str:
        return f"<NodeHandler {self.path}>"

    def handle_creation(self) -> None:
        if self._on_creation is not None:
            self._put(self._on_creation())

    def handle_deletion(self) -> None:
        if self._on_deletion is not None:
            self._put(self._on_deletion())

    def handle_data_change(self) -> None:
        if self._on_data_change is not None:
            self._put(self._on_data_change())


class ChildHandler(ZNodeChildChangeHandler):
    """A children watch whose callback enqueues ``event()``."""

    def __init__(self, path: str, put: Put, event: Callable[[], Any]) -> None:
        self.path = path
        self._put = put
        self._event = event

    def __repr__(self) -> str:
        return f"<ChildHandler {self.path}>"

    def handle_child_change(self) -> None:
        self._put(self._event())


class ControllerHandlers:
    """The fixed handlers of one controller (KC:151-160)."""

    def __init__(self, put: Put) -> None:
        self.controller_change = NodeHandler(
            znodes.CONTROLLER_PATH, put,
            on_creation=ControllerChange, on_deletion=Reelect, on_data_change=ControllerChange,
        )
        self.broker_change = ChildHandler(znodes.BROKER_IDS_PATH, put, BrokerChange)
        self.topic_change = ChildHandler(znodes.TOPICS_PATH, put, TopicChange)
        self.topic_deletion = ChildHandler(znodes.DELETE_TOPICS_PATH, put, TopicDeletion)
        self.log_dir_event_notification = ChildHandler(znodes.LOG_DIR_EVENT_NOTIFICATION_PATH, put, LogDirEventNotification)
        self.isr_change_notification = ChildHandler(znodes.ISR_CHANGE_NOTIFICATION_PATH, put, IsrChangeNotification)
        self.partition_reassignment = NodeHandler(
            znodes.REASSIGN_PARTITIONS_PATH, put, on_creation=ZkPartitionReassignment
        )
        self.preferred_replica_election = NodeHandler(
            znodes.PREFERRED_REPLICA_ELECTION_PATH, put,
            on_creation=lambda: ReplicaLeaderElection(None, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED),
        )
        self._put = put

    def broker_modifications(self, broker_id: int) -> NodeHandler:
        return NodeHandler(znodes.broker_id_path(broker_id), self._put, on_data_change=lambda: BrokerModifications(broker_id))

    def partition_modifications(self, topic: str) -> NodeHandler:
        return NodeHandler(znodes.topic_path(topic), self._put, on_data_change=lambda: PartitionModifications(topic))

    def partition_reassignment_isr_change(self, partition: TopicPartition) -> NodeHandler:
        return NodeHandler(
            znodes.partition_state_path(partition), self._put,
            on_data_change=lambda: PartitionReassignmentIsrChange(partition),
        )


def controller_handlers(put: Put) -> ControllerHandlers:
    return ControllerHandlers(put)
