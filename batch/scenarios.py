"""Ready-made cluster scenarios for the demo and the benchmarks.

Rules: deterministic (the same arguments give the same context and the same bytes); no I/O.
"failover" is the controller failover of kafka-controller-performance.md: every partition's
leadership is pushed to its replicas with LeaderAndIsr in one batch (each add also schedules
the partition's UpdateMetadata to every live broker).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import attrs

from ctrlbatch.context import (
    Broker,
    ControllerContext,
    EndPoint,
    LeaderIsrAndControllerEpoch,
    MetadataVersion,
    ReplicaAssignment,
    SecurityProtocol,
    TopicPartition,
)

from .request_batch import ControllerBrokerRequestBatch
from .transport import OutboundRequest, ResponseCallback


@attrs.frozen
class Cluster:
    partitions: int = 200_000
    brokers: int = 100
    replication_factor: int = 3
    partitions_per_topic: int = 50
    controller_id: int = 1
    controller_epoch: int = 7


def build_context(c: Cluster) -> tuple[ControllerContext, list[tuple[TopicPartition, LeaderIsrAndControllerEpoch, ReplicaAssignment]]]:
    """A context with c.brokers live brokers and c.partitions partitions with leaders (each topic
    added with ControllerContext.add_topic); also returns (partition, leadership, assignment) for
    each partition, in creation order."""
    ctx = ControllerContext()
    ctx.set_live_brokers(
        {
            Broker(b, (EndPoint(f"broker-{b}.kafka.local", 9092, "PLAINTEXT", SecurityProtocol.PLAINTEXT),), f"rack-{b % 3}"): 1000 + b
            for b in range(c.brokers)
        }
    )
    n_topics = -(-c.partitions // c.partitions_per_topic)
    entries = []
    for t in range(n_topics):
        first = t * c.partitions_per_topic
        replicas = [
            [(p + k) % c.brokers for k in range(c.replication_factor)]
            for p in range(first, min(first + c.partitions_per_topic, c.partitions))
        ]
        tps = ctx.add_topic(
            f"topic-{t:05d}", replicas, topic_id=uuid.UUID(int=(t + 1) << 64 | 0xC0FFEE),
            controller_epoch=c.controller_epoch, leader_epoch=5, partition_epoch=9,
        )
        for tp in tps:
            leadership = ctx.partition_leadership_info(tp)
            assert leadership is not None
            entries.append((tp, leadership, ctx.partition_full_replica_assignment(tp)))
    return ctx, entries


class HoldingTransport:
    """Holds every request until the batch is sent, as a per-broker queue does."""

    def __init__(self) -> None:
        self.queues: dict[int, list[tuple[OutboundRequest, ResponseCallback | None]]] = {}

    def send(self, broker_id: int, request: OutboundRequest, callback: ResponseCallback | None) -> None:
        self.queues.setdefault(broker_id, []).append((request, callback))

    def drain(self, client_id: str, on_frame: Callable[[int, OutboundRequest, list[Any]], None]) -> None:
        """Encode each frame once, in queue order, and hand its buffers to on_frame."""
        correlation = 0
        for broker_id, items in self.queues.items():
            for request, _ in items:
                on_frame(broker_id, request, request.encode_parts(correlation, client_id))
                correlation += 1


def failover(
    ctx: ControllerContext,
    entries: list[tuple[TopicPartition, LeaderIsrAndControllerEpoch, ReplicaAssignment]],
    c: Cluster,
    transport: Any,
    metadata_version: MetadataVersion = MetadataVersion.IBP_3_9_IV0,
    *,
    single_adds: bool = False,
) -> ControllerBrokerRequestBatch:
    """Accumulate the failover batch (LeaderAndIsr for every partition to its replicas) with one
    bulk add (add_leader_and_isr_requests_for_partitions), or one single add per partition."""
    batch = ControllerBrokerRequestBatch(c.controller_id, ctx, metadata_version, transport)
    batch.new_batch()
    if single_adds:
        add = batch.add_leader_and_isr_request_for_brokers
        for tp, leadership, assignment in entries:
            add(assignment.replicas, tp, leadership, assignment, False)
    else:
        batch.add_leader_and_isr_requests_for_partitions(
            (assignment.replicas, tp, leadership, assignment, False) for tp, leadership, assignment in entries
        )
    return batch
