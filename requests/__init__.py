"""ctrlbatch.requests: byte-exact, schema-driven codecs for Kafka's controller-plane messages.

Every class is generated from the project's description of Kafka's JSON specs (catalog.py):
`Cls(...).encode(version)` gives the body bytes, `Cls.decode(data, version)` parses them,
`to_dict` / `from_dict` give plain data. framing.py adds headers and size prefixes.
"""

from .apis import APIS, Api, api, request_header_version, response_header_version
from .errors import DecodeError, EncodeError, NotBytesError, UnsupportedVersionError
from .framing import (
    DecodedRequest,
    FrameReader,
    decode_request,
    decode_response,
    encode_request,
    encode_request_parts,
    encode_response,
    request_frame_size,
    request_head,
)
from .messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    RequestHeader,
    ResponseHeader,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from .messages.api_versions_response import ApiVersion, FinalizedFeatureKey, SupportedFeatureKey
from .messages.broker_registration_request import Feature, Listener
from .messages.leader_and_isr_request import (
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrTopicState,
)
from .messages.leader_and_isr_response import LeaderAndIsrPartitionError, LeaderAndIsrTopicError
from .messages.stop_replica_request import (
    StopReplicaPartitionState,
    StopReplicaPartitionV0,
    StopReplicaTopicState,
    StopReplicaTopicV1,
)
from .messages.stop_replica_response import StopReplicaPartitionError
from .messages.update_metadata_request import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataTopicState,
)
from .model import Message, Struct
from .spec import ZERO_UUID

__all__ = [
    "APIS", "Api", "api", "request_header_version", "response_header_version",
    "DecodeError", "EncodeError", "NotBytesError", "UnsupportedVersionError",
    "DecodedRequest", "FrameReader", "decode_request", "decode_response", "encode_request",
    "encode_request_parts", "encode_response", "request_frame_size", "request_head",
    "ApiVersionsRequest", "ApiVersionsResponse", "ApiVersion", "FinalizedFeatureKey", "SupportedFeatureKey",
    "BrokerHeartbeatRequest", "BrokerHeartbeatResponse", "BrokerRegistrationRequest",
    "BrokerRegistrationResponse", "LeaderAndIsrRequest", "LeaderAndIsrResponse", "RequestHeader",
    "ResponseHeader", "StopReplicaRequest", "StopReplicaResponse", "UpdateMetadataRequest",
    "UpdateMetadataResponse", "Feature", "Listener", "LeaderAndIsrLiveLeader",
    "LeaderAndIsrPartitionState", "LeaderAndIsrTopicState", "LeaderAndIsrPartitionError",
    "LeaderAndIsrTopicError", "StopReplicaPartitionState", "StopReplicaPartitionV0",
    "StopReplicaTopicState", "StopReplicaTopicV1", "StopReplicaPartitionError", "UpdateMetadataBroker",
    "UpdateMetadataEndpoint", "UpdateMetadataPartitionState", "UpdateMetadataTopicState", "Message",
    "Struct", "ZERO_UUID",
]
