"""ctrlbatch.controller: Kafka 3.9's ZooKeeper-mode controller logic, sans-I/O.

The partition and replica state machines, the leader election strategies, the topic deletion
manager and KafkaController's event handlers, over a store protocol (the subset of KafkaZkClient
they use) and the existing ControllerBrokerRequestBatch. Reference:
../shared/reference/kafka-zk-controller.md (Kafka 3.9, cited to file and line).

Modules: errors (Kafka's exceptions, ZooKeeper's result codes), store (the KafkaZkClient
protocol, responses, watch handlers), znodes (paths and Kafka's znode JSON), memory_store
(InMemoryKafkaZkClient: znodes, versions, sessions, watches, failure injection), election
(the four algorithms, strategies, Election.scala's wrappers, the pluggable ElectionPolicy),
partition_state_machine, replica_state_machine, topic_deletion_manager; kafka_controller
(KafkaController, the event handlers, split by concern into broker_changes, topic_changes,
reassignment, leader_balance, alter_partition, zk_handlers), events, event_manager, config
(ControllerConfig), channel (Channel, RecordingChannel). The states themselves
(PartitionState, ReplicaState, PartitionAndReplica) live in ctrlbatch.context, re-exported here.
"""

from ctrlbatch.context import (
    PARTITION_VALID_PREVIOUS_STATES,
    REPLICA_VALID_PREVIOUS_STATES,
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
)

from .channel import Channel, RecordingChannel
from .config import ControllerConfig
from .election import (
    KAFKA_ELECTION_POLICY,
    ControlledShutdownPartitionLeaderElectionStrategy,
    ControllerStats,
    ElectionPolicy,
    ElectionResult,
    KafkaElectionPolicy,
    OfflinePartitionLeaderElectionStrategy,
    PartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy,
    ReassignPartitionLeaderElectionStrategy,
    controlled_shutdown_partition_leader_election,
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)
from .errors import (
    BrokerNotAvailableException,
    Code,
    ControllerMovedException,
    IllegalStateError,
    KeeperException,
    StaleBrokerEpochException,
    StateChangeFailedException,
    ZooKeeperClientException,
)
from .kafka_controller import KafkaController
from .memory_store import Injection, InMemoryKafkaZkClient, ZooKeeperTree
from .partition_state_machine import ElectionResults, PartitionStateMachine, ZkPartitionStateMachine
from .replica_state_machine import ReplicaStateMachine, ZkReplicaStateMachine
from .store import (
    CreateResponse,
    GetDataResponse,
    KafkaZkClient,
    LogConfig,
    SetDataResponse,
    Stat,
    StateChangeHandler,
    TopicIdReplicaAssignment,
    UpdateLeaderAndIsrResult,
    ZNodeChangeHandler,
    ZNodeChildChangeHandler,
)
from .topic_deletion_manager import ControllerDeletionClient, DeletionClient, TopicDeletionManager

__all__ = [
    "Channel",
    "ControllerConfig",
    "KafkaController",
    "RecordingChannel",
    "KAFKA_ELECTION_POLICY",
    "PARTITION_VALID_PREVIOUS_STATES",
    "REPLICA_VALID_PREVIOUS_STATES",
    "BrokerNotAvailableException",
    "Code",
    "ControlledShutdownPartitionLeaderElectionStrategy",
    "ControllerDeletionClient",
    "ControllerMovedException",
    "ControllerStats",
    "CreateResponse",
    "DeletionClient",
    "ElectionPolicy",
    "ElectionResult",
    "ElectionResults",
    "GetDataResponse",
    "IllegalStateError",
    "InMemoryKafkaZkClient",
    "Injection",
    "KafkaElectionPolicy",
    "KafkaZkClient",
    "KeeperException",
    "LogConfig",
    "OfflinePartitionLeaderElectionStrategy",
    "PartitionAndReplica",
    "PartitionLeaderElectionStrategy",
    "PartitionState",
    "PartitionStateMachine",
    "PreferredReplicaPartitionLeaderElectionStrategy",
    "ReassignPartitionLeaderElectionStrategy",
    "ReplicaState",
    "ReplicaStateMachine",
    "SetDataResponse",
    "StaleBrokerEpochException",
    "Stat",
    "StateChangeFailedException",
    "StateChangeHandler",
    "TopicDeletionManager",
    "TopicIdReplicaAssignment",
    "UpdateLeaderAndIsrResult",
    "ZNodeChangeHandler",
    "ZNodeChildChangeHandler",
    "ZkPartitionStateMachine",
    "ZkReplicaStateMachine",
    "ZooKeeperTree",
    "ZooKeeperClientException",
    "controlled_shutdown_partition_leader_election",
    "offline_partition_leader_election",
    "preferred_replica_partition_leader_election",
    "reassign_partition_leader_election",
]
