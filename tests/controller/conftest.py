"""Harness for the controller tests: Kafka's state-machine test fixtures, ported.

- ``RecordingBatch`` is a real ``ControllerBrokerRequestBatch`` (to a ``RecordingTransport``) that
  also records every public call in order with its arguments (``calls``), standing for Kafka's
  Mockito-verified mock batch; ``calls_named(name)`` filters them.
- ``new_store(epoch_zk_version_target=0)`` is an ``InMemoryKafkaZkClient`` whose /controller_epoch
  znode is at version 0 (the tests' ``epochZkVersion``) holding ``controller_epoch``.
- ``Harness`` bundles a context (controller epoch 50, as PSMT/RSMT), a store, a recording batch
  and the two Zk state machines for broker 5; ``live(*ids)`` registers live brokers (epoch 0, or
  ``epoch``), ``assign``, ``lead``, ``stored`` set up the context and the store.
- ``MockPartitionStateMachine`` / ``MockReplicaStateMachine`` are Kafka's test doubles (MPSM,
  MRSM): they only set states, raise IllegalStateError on an invalid transition and count calls
  per target state (empty lists included); MPSM elects from the cached leadership.
- ``init_context`` is TopicDeletionManagerTest.initContext (TDMT:264-288).

pytest runs with --import-mode=importlib: test modules reach this through the ``ck`` fixture.
"""

from __future__ import annotations

import types
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest

from ctrlbatch.batch import ControllerBrokerRequestBatch, RecordingTransport
from ctrlbatch.context import (
    Broker,
    ControllerContext,
    EndPoint,
    IllegalStateError,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    MetadataVersion,
    PartitionAndReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)
from ctrlbatch.controller import (
    ControlledShutdownPartitionLeaderElectionStrategy,
    ElectionResults,
    InMemoryKafkaZkClient,
    OfflinePartitionLeaderElectionStrategy,
    PartitionLeaderElectionStrategy,
    PartitionStateMachine,
    PreferredReplicaPartitionLeaderElectionStrategy,
    ReassignPartitionLeaderElectionStrategy,
    ReplicaStateMachine,
    StateChangeFailedException,
    ZkPartitionStateMachine,
    ZkReplicaStateMachine,
)
from ctrlbatch.controller import znodes as zn
from ctrlbatch.controller.election import (
    leader_for_controlled_shutdown,
    leader_for_offline,
    leader_for_preferred_replica,
    leader_for_reassign,
)

BROKER_ID = 5
CONTROLLER_EPOCH = 50
TP = TopicPartition("t", 0)


def broker(broker_id: int, host: str = "127.0.0.1", port: int = 0) -> Broker:
    return Broker(broker_id, [EndPoint(host, port, "PLAINTEXT", "PLAINTEXT")])


class RecordingBatch(ControllerBrokerRequestBatch):
    """A real batch that records its public calls (name, args...) in order."""

    def __init__(self, controller_id: int, context: ControllerContext, metadata_version: Any = "3.9-IV0") -> None:
        self.recording = RecordingTransport()
        super().__init__(controller_id, context, metadata_version, self.recording)
        self.calls: list[tuple[Any, ...]] = []

    def new_batch(self) -> None:
        self.calls.append(("new_batch",))
        super().new_batch()

    def add_leader_and_isr_request_for_brokers(
        self, broker_ids: Iterable[int], topic_partition: TopicPartition,
        leader_isr_and_controller_epoch: LeaderIsrAndControllerEpoch, replica_assignment: ReplicaAssignment,
        is_new: bool,
    ) -> None:
        ids = tuple(broker_ids)
        self.calls.append(("add_leader_and_isr_request_for_brokers", ids, topic_partition,
                           leader_isr_and_controller_epoch, replica_assignment, is_new))
        super().add_leader_and_isr_request_for_brokers(ids, topic_partition, leader_isr_and_controller_epoch,
                                                       replica_assignment, is_new)

    def add_stop_replica_request_for_brokers(
        self, broker_ids: Iterable[int], topic_partition: TopicPartition, delete_partition: bool
    ) -> None:
        ids = tuple(broker_ids)
        self.calls.append(("add_stop_replica_request_for_brokers", ids, topic_partition, delete_partition))
        super().add_stop_replica_request_for_brokers(ids, topic_partition, delete_partition)

    def add_update_metadata_request_for_brokers(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] = ()
    ) -> None:
        ids, parts = tuple(broker_ids), frozenset(partitions)
        self.calls.append(("add_update_metadata_request_for_brokers", ids, parts))
        super().add_update_metadata_request_for_brokers(ids, parts)

    def send_requests_to_brokers(self, controller_epoch: int) -> None:
        self.calls.append(("send_requests_to_brokers", controller_epoch))
        super().send_requests_to_brokers(controller_epoch)

    def calls_named(self, name: str) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] == name]

    def sent_api_keys(self, broker_id: int) -> list[int]:
        return [r.api_key for r in self.recording.requests_for(broker_id)]


def new_store(controller_epoch: int = CONTROLLER_EPOCH) -> InMemoryKafkaZkClient:
    """A store whose /controller_epoch holds ``controller_epoch`` at version 0."""
    store = InMemoryKafkaZkClient()
    store.tree.create(zn.CONTROLLER_EPOCH_PATH, str(controller_epoch).encode())
    return store


class Harness:
    """PSMT/RSMT's fixture: controller 5, epoch 50, epoch zk version 0, partition t-0."""

    def __init__(self, *, metadata_version: MetadataVersion | str = MetadataVersion.LATEST_PRODUCTION,
                 config_originals: Mapping[str, object] | None = None) -> None:
        self.ctx = ControllerContext()
        self.ctx.epoch = CONTROLLER_EPOCH
        self.store = new_store()
        self.psm_batch = RecordingBatch(BROKER_ID, self.ctx)
        self.rsm_batch = RecordingBatch(BROKER_ID, self.ctx)
        self.psm = ZkPartitionStateMachine(BROKER_ID, self.ctx, self.store, self.psm_batch,
                                           metadata_version=metadata_version, config_originals=config_originals)
        self.rsm = ZkReplicaStateMachine(BROKER_ID, self.ctx, self.store, self.rsm_batch)

    def live(self, *broker_ids: int, epoch: int = 0) -> None:
        self.ctx.set_live_brokers({broker(b): epoch for b in broker_ids})

    def assign(self, tp: TopicPartition, replicas: Sequence[int]) -> None:
        """Assign in the context and write the topic znode (so state znodes can be created)."""
        self.ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment(replicas))
        assignment = self.ctx.partition_full_replica_assignment_for_topic(tp.topic)
        if self.store.tree.exists(zn.topic_path(tp.topic)):
            self.store.tree.set_data(zn.topic_path(tp.topic), zn.encode_topic(None, assignment), -1)
        else:
            self.store.tree.create_recursive(zn.topic_path(tp.topic), zn.encode_topic(None, assignment))

    def lead(self, tp: TopicPartition, leader: int, isr: Sequence[int], *, controller_epoch: int = CONTROLLER_EPOCH,
             store: bool = True, **fields: Any) -> LeaderIsrAndControllerEpoch:
        """Cache leadership (and write it to the store, znode version 0 when new)."""
        info = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr, **fields), controller_epoch)
        self.ctx.put_partition_leadership_info(tp, info)
        if store:
            self.store.set_partition_state(tp, info)
        return info

    def stored(self, tp: TopicPartition = TP) -> LeaderIsrAndControllerEpoch | None:
        return self.store.partition_state(tp)


class MockPartitionStateMachine(PartitionStateMachine):
    """MPSM: states only, invalid transitions raise, calls counted per target state."""

    def __init__(self, ctx: ControllerContext, unclean_leader_election_enabled: bool = False,
                 is_leader_recovery_supported: bool = True) -> None:
        super().__init__(ctx)
        self.unclean_leader_election_enabled = unclean_leader_election_enabled
        self.is_leader_recovery_supported = is_leader_recovery_supported
        self.state_changes_by_target_state: Counter[PartitionState] = Counter()

    def state_changes_calls(self, target: PartitionState) -> int:
        return self.state_changes_by_target_state[target]

    def clear(self) -> None:
        self.state_changes_by_target_state.clear()

    def handle_state_changes(self, partitions: Sequence[TopicPartition], target_state: PartitionState,
                             leader_election_strategy: PartitionLeaderElectionStrategy | None = None) -> ElectionResults:
        ctx = self.controller_context
        self.state_changes_by_target_state[target_state] += 1
        for tp in partitions:
            ctx.put_partition_state_if_not_exists(tp, PartitionState.NonExistentPartition)
        valid, invalid = ctx.check_valid_partition_state_change(partitions, target_state)
        if invalid:
            states = [ctx.partition_state(tp) for tp in invalid]
            raise IllegalStateError(f"Invalid state transition to {target_state} for partitions {states}")
        if target_state is PartitionState.OnlinePartition:
            uninitialized = [tp for tp in valid if ctx.partition_state(tp) is PartitionState.NewPartition]
            to_elect = [tp for tp in partitions if ctx.partition_state(tp) in
                        (PartitionState.OfflinePartition, PartitionState.OnlinePartition)]
            for tp in uninitialized:
                ctx.put_partition_state(tp, target_state)
            assert leader_election_strategy is not None
            results = self._do_leader_elections(to_elect, leader_election_strategy)
            for tp, result in results.items():
                if isinstance(result, LeaderAndIsr):
                    ctx.put_partition_state(tp, target_state)
            return results
        for tp in valid:
            ctx.put_partition_state(tp, target_state)
        return {}

    def _do_leader_elections(self, partitions: list[TopicPartition],
                             strategy: PartitionLeaderElectionStrategy) -> ElectionResults:
        ctx = self.controller_context
        failed: ElectionResults = {}
        valid: list[tuple[TopicPartition, LeaderAndIsr]] = []
        for tp in partitions:
            info = ctx.partition_leadership_info(tp)
            assert info is not None
            if info.controller_epoch > ctx.epoch:
                failed[tp] = StateChangeFailedException(
                    f"Aborted leader election for partition {tp} since the LeaderAndIsr path was already written "
                    "by another controller. This probably means that the current controller went through a soft "
                    f"failure and another controller was elected with epoch {info.controller_epoch}."
                )
            else:
                valid.append((tp, info.leader_and_isr))
        if isinstance(strategy, OfflinePartitionLeaderElectionStrategy):
            unclean = strategy.allow_unclean or self.unclean_leader_election_enabled
            results = leader_for_offline(ctx, self.is_leader_recovery_supported,
                                         [(tp, lai, unclean) for tp, lai in valid])
        elif isinstance(strategy, ReassignPartitionLeaderElectionStrategy):
            results = leader_for_reassign(ctx, valid)
        elif isinstance(strategy, PreferredReplicaPartitionLeaderElectionStrategy):
            results = leader_for_preferred_replica(ctx, valid)
        else:
            assert isinstance(strategy, ControlledShutdownPartitionLeaderElectionStrategy)
            results = leader_for_controlled_shutdown(ctx, valid)
        out: ElectionResults = {}
        for result in results:
            tp = result.topic_partition
            if result.leader_and_isr is None:
                out[tp] = StateChangeFailedException(f"Failed to elect leader for partition {tp} under strategy {strategy}")
            else:
                ctx.put_partition_leadership_info(tp, LeaderIsrAndControllerEpoch(result.leader_and_isr, ctx.epoch))
                out[tp] = result.leader_and_isr
        out.update(failed)
        return out


class MockReplicaStateMachine(ReplicaStateMachine):
    """MRSM: states only, invalid transitions raise, calls counted per target state."""

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.state_changes_by_target_state: Counter[ReplicaState] = Counter()

    def state_changes_calls(self, target: ReplicaState) -> int:
        return self.state_changes_by_target_state[target]

    def clear(self) -> None:
        self.state_changes_by_target_state.clear()

    def handle_state_changes(self, replicas: Sequence[PartitionAndReplica], target_state: ReplicaState) -> None:
        ctx = self.controller_context
        self.state_changes_by_target_state[target_state] += 1
        for r in replicas:
            ctx.put_replica_state_if_not_exists(r, ReplicaState.NonExistentReplica)
        valid, invalid = ctx.check_valid_replica_state_change(replicas, target_state)
        if invalid:
            states = {str(r): ctx.replica_state(r) for r in invalid}
            raise IllegalStateError(f"Invalid state transition to {target_state} for replicas {states}")
        for r in valid:
            if target_state is ReplicaState.NonExistentReplica:
                ctx.remove_replica_state(r)
            else:
                ctx.put_replica_state(r, target_state)


class RecordingDeletionClient:
    """A DeletionClient double recording its calls (Kafka's mock DeletionClient)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        self.calls.append(("delete_topic", topic, epoch_zk_version))

    def delete_topic_deletions(self, topics: Sequence[str], epoch_zk_version: int) -> None:
        self.calls.append(("delete_topic_deletions", tuple(topics), epoch_zk_version))

    def mute_partition_modifications(self, topic: str) -> None:
        self.calls.append(("mute_partition_modifications", topic))

    def send_metadata_update(self, partitions: Iterable[TopicPartition]) -> None:
        self.calls.append(("send_metadata_update", frozenset(partitions)))


def init_context(brokers: Sequence[int], topics: Sequence[str], num_partitions: int,
                 replication_factor: int) -> ControllerContext:
    """TDMT:264-288: brokers at epoch 1 on localhost:9900+id, round-robin replicas, no leadership."""
    ctx = ControllerContext()
    ctx.set_live_brokers({Broker(b, [EndPoint("127.0.0.1", 9900 + b, "blah", "PLAINTEXT")]): 1 for b in brokers})
    leader_index = 0
    for topic in topics:
        for p in range(num_partitions):
            replicas = [brokers[(i + leader_index) % len(brokers)] for i in range(replication_factor)]
            ctx.update_partition_full_replica_assignment(TopicPartition(topic, p), ReplicaAssignment(replicas))
            leader_index += 1
    return ctx


@pytest.fixture
def ck() -> types.SimpleNamespace:
    """The controller test kit, as one namespace."""
    names = [
        "BROKER_ID", "CONTROLLER_EPOCH", "TP", "broker", "RecordingBatch", "new_store", "Harness",
        "MockPartitionStateMachine", "MockReplicaStateMachine", "RecordingDeletionClient", "init_context",
    ]
    g = globals()
    return types.SimpleNamespace(**{n: g[n] for n in names})


@pytest.fixture
def h() -> Harness:
    """A fresh PSMT/RSMT harness."""
    return Harness()
