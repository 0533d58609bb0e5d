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
    LeaderAndIsr,
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
    """A context with c.brokers live brokers and c.partitions partitions with leaders;
    also returns (partition, leadership, assignment) for each partition, in creation order."""
    ctx = ControllerContext()
    ctx.set_live_brokers(
        {
            Broker(b, (EndPoint(f"broker-{b}.kafka.local", 9092, "PLAINTEXT", SecurityProtocol.PLAINTEXT),), f"rack-{b % 3}"): 1000 + b
            for b in range(c.brokers)
        }
    )
    n_topics = -(-c.partitions // c.partitions_per_topic)
    topics = [f"topic-{t:05d}" for t in range(n_topics)]
    ctx.set_all_topics(topics)
    for t, name in enumerate(topics):
        ctx.add_topic_id(name, uuid.UUID(int=(t + 1) << 64 | 0xC0FFEE))
    entries = []
    for p in range(c.partitions):
        tp = TopicPartition(topics[p // c.partitions_per_topic], p % c.partitions_per_topic)
        replicas = tuple((p + k) % c.brokers for k in range(c.replication_factor))
        assignment = ReplicaAssignment(replicas)
        ctx.update_partition_full_replica_assignment(tp, assignment)
        leadership = LeaderIsrAndControllerEpoch(LeaderAndIsr(replicas[0], replicas, 5, 9), c.controller_epoch)
        ctx.put_partition_leadership_info(tp, leadership)
        entries.append((tp, leadership, assignment))
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
) -> ControllerBrokerRequestBatch:
    """Accumulate the failover batch (LeaderAndIsr for every partition to its replicas)."""
    batch = ControllerBrokerRequestBatch(c.controller_id, ctx, metadata_version, transport)
    batch.new_batch()
    add = batch.add_leader_and_isr_request_for_brokers
    for tp, leadership, assignment in entries:
        add(assignment.replicas, tp, leadership, assignment, False)
    return batch
