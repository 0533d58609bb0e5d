"""Kafka error codes the simulated brokers and the controller endpoint answer with (Errors.java).

Rules: a table of Kafka's numbers and names, nothing else; ``Errors(code).name`` names a code.
"""

from __future__ import annotations

import enum

__all__ = ["Errors"]


class Errors(enum.IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    REQUEST_TIMED_OUT = 7
    STALE_CONTROLLER_EPOCH = 11
    RECORD_LIST_TOO_LARGE = 18
    CLUSTER_AUTHORIZATION_FAILED = 31
    UNSUPPORTED_VERSION = 35
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    KAFKA_STORAGE_ERROR = 56
    FENCED_LEADER_EPOCH = 74
    STALE_BROKER_EPOCH = 77
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    INVALID_REGISTRATION = 119
