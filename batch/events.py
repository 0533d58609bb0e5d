"""The controller events a batch produces from responses, and the control-request Type.

Rules: plain frozen values, as KafkaController's event case classes (CCM:345-357); the batch
hands them to its on_event callback, which in Kafka enqueues them on the controller thread.
"""

from __future__ import annotations

import enum

import attrs

from ctrlbatch.context import TopicPartition
from ctrlbatch.requests import LeaderAndIsrResponse, UpdateMetadataResponse


class UpdateType(enum.IntEnum):
    """AbstractControlRequest.Type: written in LeaderAndIsr v5+ and UpdateMetadata v8+."""

    UNKNOWN = 0
    INCREMENTAL = 1
    FULL = 2

    @classmethod
    def from_byte(cls, value: int) -> UpdateType:
        """Kafka's Type.fromByte: an unknown byte is UNKNOWN."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


@attrs.frozen
class LeaderAndIsrResponseReceived:
    response: LeaderAndIsrResponse
    broker_id: int


@attrs.frozen
class UpdateMetadataResponseReceived:
    response: UpdateMetadataResponse
    broker_id: int


@attrs.frozen
class TopicDeletionStopReplicaResponseReceived:
    broker_id: int
    error: int
    partition_errors: dict[TopicPartition, int] = attrs.field(eq=True, hash=False)


ControllerEvent = LeaderAndIsrResponseReceived | UpdateMetadataResponseReceived | TopicDeletionStopReplicaResponseReceived
