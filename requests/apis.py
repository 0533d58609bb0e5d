"""The API keys this package speaks, with their request and response classes.

Rules: a table, not logic. Header versions follow ApiMessageTypeGenerator: a flexible API
version uses request header v2 and response header v1, otherwise v1 and v0; the two
exceptions are kept as data: ControlledShutdown v0 requests (for the day it joins the table)
and ApiVersions responses, always header v0 (ApiKeys.java:241-245 in Kafka 3.9: a client must
read the header before it knows which version it got).
"""

from __future__ import annotations

import functools

import attrs

from .errors import UnsupportedVersionError
from .messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from .model import Message


@attrs.frozen
class Api:
    key: int
    name: str
    request: type[Message]
    response: type[Message]

    @property
    def min_version(self) -> int:
        return self.request.MIN_VERSION

    @property
    def max_version(self) -> int:
        return self.request.MAX_VERSION


LEADER_AND_ISR = Api(4, "LeaderAndIsr", LeaderAndIsrRequest, LeaderAndIsrResponse)
STOP_REPLICA = Api(5, "StopReplica", StopReplicaRequest, StopReplicaResponse)
UPDATE_METADATA = Api(6, "UpdateMetadata", UpdateMetadataRequest, UpdateMetadataResponse)
BROKER_REGISTRATION = Api(62, "BrokerRegistration", BrokerRegistrationRequest, BrokerRegistrationResponse)
BROKER_HEARTBEAT = Api(63, "BrokerHeartbeat", BrokerHeartbeatRequest, BrokerHeartbeatResponse)
API_VERSIONS = Api(18, "ApiVersions", ApiVersionsRequest, ApiVersionsResponse)

APIS: dict[int, Api] = {
    a.key: a for a in (LEADER_AND_ISR, STOP_REPLICA, API_VERSIONS, UPDATE_METADATA, BROKER_REGISTRATION, BROKER_HEARTBEAT)
}

# (api key, api version) pairs whose header version breaks the flexible rule.
_REQUEST_HEADER_V0 = frozenset({(7, 0)})  # ControlledShutdown v0
_RESPONSE_HEADER_V0_KEYS = frozenset({18})  # ApiVersions


def api(key: int) -> Api:
    try:
        return APIS[key]
    except KeyError:
        raise UnsupportedVersionError(f"Unsupported API key {key}") from None


def _checked(key: int, version: int) -> Api:
    a = api(key)
    if not a.min_version <= version <= a.max_version:
        raise UnsupportedVersionError(f"Unsupported {a.name} version {version}")
    return a


@functools.lru_cache(maxsize=1024)
def request_header_version(key: int, version: int) -> int:
    if (key, version) in _REQUEST_HEADER_V0:
        return 0
    return 2 if _checked(key, version).request.is_flexible(version) else 1


@functools.lru_cache(maxsize=1024)
def response_header_version(key: int, version: int) -> int:
    if key in _RESPONSE_HEADER_V0_KEYS:
        return 0
    return 1 if _checked(key, version).response.is_flexible(version) else 0
