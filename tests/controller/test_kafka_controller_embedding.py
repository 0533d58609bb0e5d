"""The README's "Embedding Kafka's controller" examples, run as written (the lead pastes them)."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from ctrlbatch.context import Broker, EndPoint, TopicPartition
from ctrlbatch.controller.channel import RecordingChannel
from ctrlbatch.controller.config import ControllerConfig
from ctrlbatch.controller.election import ElectionPolicy, KafkaElectionPolicy
from ctrlbatch.controller.kafka_controller import KafkaController
from ctrlbatch.controller.memory_store import InMemoryKafkaZkClient
from ctrlbatch.requests import APIS
from ctrlbatch.testing.controller_cluster import ControllerCluster


def test_embedding_example() -> None:
    store = InMemoryKafkaZkClient()  # a ZooKeeper of our own
    for b in (1, 2, 3):  # brokers register: ephemeral /brokers/ids/<id>, each its own session
        store.register_broker(Broker(b, [EndPoint("127.0.0.1", 9090 + b, "PLAINTEXT", "PLAINTEXT")]))

    channel = RecordingChannel()  # records what the controller sends; answers nothing
    controller = KafkaController(ControllerConfig(broker_id=1), store.new_client(), channel)
    controller.startup()
    controller.process_events()  # elected: epoch 1, UpdateMetadata to every broker
    assert controller.is_active and controller.epoch == 1

    store.create_topic("orders", [[1, 2, 3], [2, 3, 1]])  # a watch fires TopicChange
    controller.process_events()
    state = store.partition_state(TopicPartition("orders", 0))
    assert state is not None
    assert (state.leader_and_isr.leader, state.leader_and_isr.isr) == (1, (1, 2, 3))

    channel.clear()
    store.expire_broker(1)  # broker 1 dies (the controller's own session is another one)
    controller.process_events()  # BrokerChange: re-elect, shrink ISRs, tell the others
    state = store.partition_state(TopicPartition("orders", 0))
    assert state is not None
    assert (state.leader_and_isr.leader, state.leader_and_isr.isr, state.leader_and_isr.leader_epoch) == (2, (2, 3), 1)
    sent = [(broker_id, APIS[request.api_key].name) for broker_id, request in channel.history]
    assert sent == [(2, "LeaderAndIsr"), (3, "LeaderAndIsr"), (2, "UpdateMetadata"), (3, "UpdateMetadata"),
                    (2, "LeaderAndIsr"), (3, "LeaderAndIsr"), (2, "UpdateMetadata"), (3, "UpdateMetadata")]


class LastInSyncReplicaPolicy(KafkaElectionPolicy):
    """Offline elections pick the last live in-sync replica instead of the first."""

    def offline_partition_leader_election(
        self, assignment: Sequence[int], isr: Sequence[int], live_replicas: AbstractSet[int],
        unclean_leader_election_enabled: bool,
    ) -> int | None:
        candidates = [r for r in assignment if r in live_replicas and r in isr]
        if candidates:
            return candidates[-1]
        return super().offline_partition_leader_election(assignment, isr, live_replicas, unclean_leader_election_enabled)


def leaders_after_failure(policy: ElectionPolicy) -> dict[int, int]:
    """The same history under a policy: a topic, then broker 1 fails."""
    cluster = ControllerCluster([1, 2, 3, 4], controller_id=1, election_policy=policy)
    cluster.store.create_topic("orders", [[1, 2, 3], [1, 3, 4], [2, 1, 4]])
    cluster.settle()
    cluster.stop_broker(1)
    cluster.settle()
    assert cluster.caches_agree() == []  # every broker learnt the outcome
    out = {}
    for p in range(3):
        state = cluster.state(TopicPartition("orders", p))
        assert state is not None
        out[p] = state.leader_and_isr.leader
    return out


def test_custom_election_policy_against_kafkas() -> None:
    assert leaders_after_failure(KafkaElectionPolicy()) == {0: 2, 1: 3, 2: 2}
    assert leaders_after_failure(LastInSyncReplicaPolicy()) == {0: 3, 1: 4, 2: 2}
