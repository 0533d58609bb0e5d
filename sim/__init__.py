"""ctrlbatch.sim: simulated ZooKeeper-mode brokers and a KRaft controller endpoint, on loopback.

    async with SimCluster(ClusterConfig(brokers=5)) as cluster:     # endpoint + brokers + channel
        cluster.controller.create_topics({"orders": [[0, 1, 2], [1, 2, 3]]})
        await cluster.quiesce()
        await cluster.controlled_shutdown(0)                       # through heartbeats
        await cluster.quiesce()
        assert all(cluster.converged().values())

The pieces: BrokerState (a broker's handling of LeaderAndIsr, StopReplica and UpdateMetadata,
sans I/O) behind SimulatedBroker (an asyncio server with fault injection); ControllerState
(BrokerRegistration and BrokerHeartbeat, sans I/O) behind ControllerEndpoint; BrokerLifecycle
(a broker's registration client); SimController (the controller steps, over the batch engine and
ctrlbatch.transport); invariants (what must hold after a run).
"""

from .broker_server import BrokerFaults, Received, SimulatedBroker
from .broker_state import BrokerState, HostedPartition, error_response
from .client import FrameClient
from .cluster import ClusterConfig, SimCluster
from .controller_logic import SimController, expected_view
from .controller_server import ControllerEndpoint
from .controller_state import (
    BrokerEvent,
    ControllerConfig,
    ControllerState,
    ControlState,
    EventKind,
    Registration,
)
from .errors import Errors
from .invariants import check_all, convergence_violations, delivery_violations, leaked_tasks
from .lifecycle import BrokerLifecycle, LifecycleState
from .metadata_cache import CachedBroker, CacheView, MetadataCache, PartitionView
from .scenarios import SCENARIOS, ScenarioSpec, parse_faults
from .shared_decode import SharedDecoder

__all__ = [
    "SCENARIOS",
    "BrokerEvent",
    "BrokerFaults",
    "BrokerLifecycle",
    "BrokerState",
    "CacheView",
    "CachedBroker",
    "ClusterConfig",
    "ControlState",
    "ControllerConfig",
    "ControllerEndpoint",
    "ControllerState",
    "Errors",
    "EventKind",
    "FrameClient",
    "HostedPartition",
    "LifecycleState",
    "MetadataCache",
    "PartitionView",
    "Received",
    "Registration",
    "ScenarioSpec",
    "SharedDecoder",
    "SimCluster",
    "SimController",
    "SimulatedBroker",
    "check_all",
    "convergence_violations",
    "delivery_violations",
    "error_response",
    "expected_view",
    "leaked_tasks",
    "parse_faults",
]
