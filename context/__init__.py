"""The controller's view of the cluster, as read by the controller-to-broker request batch.

Value types (``TopicPartition``, ``Broker``, ``LeaderAndIsr``, ``MetadataVersion``...) are frozen
and hashable; ``ControllerContext`` is the one mutable store and implements the read-only
``ControllerChannelContext`` protocol that the batch consumes. Everything here pickles.
"""

from .broker import Broker, EndPoint, Node
from .channel_context import (
    ChannelContextHints,
    ControllerChannelContext,
    UpdateMetadataHints,
    UpdateMetadataView,
)
from .controller_context import (
    INITIAL_CONTROLLER_EPOCH,
    INITIAL_CONTROLLER_EPOCH_ZK_VERSION,
    ControllerContext,
)
from .controller_states import (
    PARTITION_VALID_PREVIOUS_STATES,
    REPLICA_VALID_PREVIOUS_STATES,
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
)
from .errors import BrokerEndPointNotAvailableError, IllegalStateError
from .leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, LeaderRecoveryState
from .metadata_version import MetadataVersion
from .replica_assignment import ReplicaAssignment
from .security_protocol import SecurityProtocol
from .topic_partition import TopicPartition
from .uuids import ZERO_UUID, kafka_uuid_string

__all__ = [
    "INITIAL_CONTROLLER_EPOCH",
    "INITIAL_CONTROLLER_EPOCH_ZK_VERSION",
    "PARTITION_VALID_PREVIOUS_STATES",
    "REPLICA_VALID_PREVIOUS_STATES",
    "ZERO_UUID",
    "Broker",
    "BrokerEndPointNotAvailableError",
    "ChannelContextHints",
    "ControllerChannelContext",
    "ControllerContext",
    "EndPoint",
    "IllegalStateError",
    "LeaderAndIsr",
    "LeaderIsrAndControllerEpoch",
    "LeaderRecoveryState",
    "MetadataVersion",
    "Node",
    "PartitionAndReplica",
    "PartitionState",
    "ReplicaAssignment",
    "ReplicaState",
    "SecurityProtocol",
    "TopicPartition",
    "UpdateMetadataHints",
    "UpdateMetadataView",
    "kafka_uuid_string",
]
