"""Fixtures shared by the context tests: Kafka's ControllerChannelManagerTest cluster."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

import pytest

from ctrlbatch.context import (
    Broker,
    ControllerContext,
    EndPoint,
    ReplicaAssignment,
    SecurityProtocol,
    TopicPartition,
)


def plaintext_broker(broker_id: int) -> Broker:
    """The test harness's broker: one PLAINTEXT listener on localhost:9900+id, no rack."""
    return Broker(
        broker_id, [EndPoint("localhost", 9900 + broker_id, "PLAINTEXT", SecurityProtocol.PLAINTEXT)]
    )


def init_context(
    broker_ids: Iterable[int], num_partitions: int, replication_factor: int, topics: Iterable[str]
) -> ControllerContext:
    """Kafka's ``initContext``: live brokers at epoch 1, random topic ids, round-robin replicas."""
    brokers = list(broker_ids)
    context = ControllerContext()
    context.set_live_brokers({plaintext_broker(b): 1 for b in brokers})
    topics = list(topics)
    context.set_all_topics(topics)
    for topic in topics:
        context.add_topic_id(topic, uuid.uuid4())
    leader_index = 0
    for topic in topics:
        for partition in range(num_partitions):
            replicas = [brokers[(i + leader_index) % len(brokers)] for i in range(replication_factor)]
            context.update_partition_full_replica_assignment(
                TopicPartition(topic, partition), ReplicaAssignment(replicas)
            )
            leader_index += 1
    return context


@pytest.fixture
def make_context() -> Callable[..., ControllerContext]:
    return init_context


@pytest.fixture
def kafka_context() -> ControllerContext:
    """The cluster every ControllerChannelManagerTest test starts from."""
    return init_context([1, 2, 3], num_partitions=2, replication_factor=3, topics=["foo", "bar"])


@pytest.fixture
def broker_factory() -> Callable[[int], Broker]:
    return plaintext_broker
