"""ctrlbatch.batch: the controller's request batch (Kafka 3.9 ControllerBrokerRequestBatch), no I/O.

    batch = ControllerBrokerRequestBatch(controller_id, context, "3.9-IV0", transport)
    batch.new_batch()
    batch.add_leader_and_isr_request_for_brokers(broker_ids, tp, leadership, assignment, is_new=False)
    batch.add_leader_and_isr_requests_for_partitions([(broker_ids, tp, leadership, assignment, False), ...])
    batch.send_requests_to_brokers(controller_epoch)

The context is any ControllerChannelContext (ctrlbatch.context.ControllerContext, or your own).
Requests go to a Transport (send(broker_id, OutboundRequest, callback)); RecordingTransport
keeps them for inspection. `ctrlbatch demo` runs the failover scenario (demo.py).
"""

from ctrlbatch.common.tuning import gc_paused
from ctrlbatch.context import IllegalStateError

from .builders import LeaderAndIsrBuilder, SharedBody, StopReplicaBuilder, UpdateMetadataBuilder
from .events import (
    ControllerEvent,
    LeaderAndIsrResponseReceived,
    TopicDeletionStopReplicaResponseReceived,
    UpdateMetadataResponseReceived,
    UpdateType,
)
from .request_batch import STATE_CHANGE_LOGGER, ControllerBrokerRequestBatch
from .transport import OutboundRequest, RecordingTransport, ResponseCallback, Transport
from .versions import leader_and_isr_version, stop_replica_version, update_metadata_version

__all__ = [
    "STATE_CHANGE_LOGGER",
    "ControllerBrokerRequestBatch",
    "ControllerEvent",
    "IllegalStateError",
    "LeaderAndIsrBuilder",
    "LeaderAndIsrResponseReceived",
    "OutboundRequest",
    "RecordingTransport",
    "ResponseCallback",
    "SharedBody",
    "StopReplicaBuilder",
    "TopicDeletionStopReplicaResponseReceived",
    "Transport",
    "UpdateMetadataBuilder",
    "UpdateMetadataResponseReceived",
    "UpdateType",
    "gc_paused",
    "leader_and_isr_version",
    "stop_replica_version",
    "update_metadata_version",
]
