"""The generated message classes, one module per message (see gen_classes.py)."""

from .api_versions_request import ApiVersionsRequest
from .api_versions_response import ApiVersionsResponse
from .broker_heartbeat_request import BrokerHeartbeatRequest
from .broker_heartbeat_response import BrokerHeartbeatResponse
from .broker_registration_request import BrokerRegistrationRequest
from .broker_registration_response import BrokerRegistrationResponse
from .leader_and_isr_request import LeaderAndIsrRequest
from .leader_and_isr_response import LeaderAndIsrResponse
from .request_header import RequestHeader
from .response_header import ResponseHeader
from .stop_replica_request import StopReplicaRequest
from .stop_replica_response import StopReplicaResponse
from .update_metadata_request import UpdateMetadataRequest
from .update_metadata_response import UpdateMetadataResponse

__all__ = [
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "BrokerHeartbeatRequest",
    "BrokerHeartbeatResponse",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResponse",
    "LeaderAndIsrRequest",
    "LeaderAndIsrResponse",
    "RequestHeader",
    "ResponseHeader",
    "StopReplicaRequest",
    "StopReplicaResponse",
    "UpdateMetadataRequest",
    "UpdateMetadataResponse",
]
