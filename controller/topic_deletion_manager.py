"""Topic deletion: Kafka's TopicDeletionManager, its DeletionClient and the controller's client.

Rules (TDM = core/src/main/scala/kafka/controller/TopicDeletionManager.scala, 3.9; reference
kafka-zk-controller.md §4):
- A topic is *queued* (``ControllerContext.topics_to_be_deleted``) until its deletion completes,
  *started* once its partitions went Offline -> NonExistent (``begin_topic_deletion``, after the
  two PSM calls so the offline-partition count stays right), *ineligible* while halted
  (``topics_ineligible_for_deletion``), *in progress* while any replica is ReplicaDeletionStarted.
- With ``delete_topic_enable=False`` nothing is queued ("queued" is always false, "ineligible"
  always true) and ``init`` deletes the /admin/delete_topics entries instead (TDM:98-105, 178-197).
- ``resume_deletions`` (TDM:317-356) drives everything: a topic whose replicas are all
  ReplicaDeletionSuccessful is completed (mute the partition handler, replicas -> NonExistent,
  delete the znodes, ``remove_topic``); a topic with no Started but some Ineligible replica is
  retried (Ineligible -> Offline); an eligible topic (queued, not in progress, not ineligible)
  starts: PSM Offline then NonExistent for unseen topics, ``send_metadata_update`` of all its
  partitions, then RSM Ineligible(dead replicas, even an empty list), Offline(retry),
  ReplicaDeletionStarted(retry), and topics with dead replicas marked ineligible.
- ``DeletionClient`` is TDM:25-30's trait; ``ControllerDeletionClient`` (TDM:32-52) implements it
  with the store and a callback for the controller's handler muting and UpdateMetadata sends.
- Sets passed in are iterated sorted, so state-machine calls come in a fixed order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

from ctrlbatch.context import (
    ControllerContext,
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
    TopicPartition,
)

from .partition_state_machine import PartitionStateMachine
from .replica_state_machine import ReplicaStateMachine
from .store import KafkaZkClient

__all__ = ["ControllerDeletionClient", "DeletionClient", "TopicDeletionManager"]

_R = ReplicaState
_log = logging.getLogger("kafka.controller.TopicDeletionManager")


@runtime_checkable
class DeletionClient(Protocol):
    """TDM:25-30: what the deletion manager asks of the controller."""

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None: ...
    def delete_topic_deletions(self, topics: Sequence[str], epoch_zk_version: int) -> None: ...
    def mute_partition_modifications(self, topic: str) -> None: ...
    def send_metadata_update(self, partitions: Iterable[TopicPartition]) -> None: ...


class ControllerDeletionClient:
    """TDM:32-52: the store's deletes, and the controller's muting and UpdateMetadata send.

    unregister_partition_modifications_handlers(topics) and send_update_metadata_request(
    broker_ids, partitions) are the controller's methods of those names (KC)."""

    def __init__(
        self,
        controller_context: ControllerContext,
        zk_client: KafkaZkClient,
        *,
        unregister_partition_modifications_handlers: Callable[[Sequence[str]], None],
        send_update_metadata_request: Callable[[Sequence[int], set[TopicPartition]], None],
    ) -> None:
        self.controller_context = controller_context
        self.zk_client = zk_client
        self._unregister = unregister_partition_modifications_handlers
        self._send_update_metadata = send_update_metadata_request

    def delete_topic(self, topic: str, epoch_zk_version: int) -> None:
        self.zk_client.delete_topic_znode(topic, epoch_zk_version)
        self.zk_client.delete_topic_configs([topic], epoch_zk_version)
        self.zk_client.delete_topic_deletions([topic], epoch_zk_version)

    def delete_topic_deletions(self, topics: Sequence[str], epoch_zk_version: int) -> None:
        self.zk_client.delete_topic_deletions(topics, epoch_zk_version)

    def mute_partition_modifications(self, topic: str) -> None:
        self._unregister([topic])

    def send_metadata_update(self, partitions: Iterable[TopicPartition]) -> None:
        self._send_update_metadata(sorted(self.controller_context.live_or_shutting_down_broker_ids), set(partitions))


class TopicDeletionManager:
    """TDM:54-357."""

    def __init__(
        self,
        controller_context: ControllerContext,
        replica_state_machine: ReplicaStateMachine,
        partition_state_machine: PartitionStateMachine,
        client: DeletionClient,
        *,
        delete_topic_enable: bool = True,
    ) -> None:
        self.controller_context = controller_context
        self.replica_state_machine = replica_state_machine
        self.partition_state_machine = partition_state_machine
        self.client = client
        self.is_delete_topic_enabled = delete_topic_enable

    def init(self, initial_topics_to_be_deleted: Iterable[str], initial_topics_ineligible_for_deletion: Iterable[str]) -> None:
        """TDM:94-106."""
        ctx = self.controller_context
        to_delete = set(initial_topics_to_be_deleted)
        ineligible = set(initial_topics_ineligible_for_deletion)
        _log.info("Initializing manager with initial deletions: %s, initial ineligible deletions: %s", to_delete, ineligible)
        if self.is_delete_topic_enabled:
            ctx.queue_topic_deletion(to_delete)
            ctx.topics_ineligible_for_deletion.update(ineligible & ctx.topics_queued_for_deletion)
        else:
            _log.info("Removing %s since delete topic is disabled", to_delete)
            self.client.delete_topic_deletions(sorted(to_delete), ctx.epoch_zk_version)

    def try_topic_deletion(self) -> None:
        """TDM:108-112."""
        if self.is_delete_topic_enabled:
            self._resume_deletions()

    def enqueue_topics_for_deletion(self, topics: Iterable[str]) -> None:
        """TDM:119-124: queue and resume."""
        if self.is_delete_topic_enabled:
            self.controller_context.queue_topic_deletion(topics)
            self._resume_deletions()

    def resume_deletion_for_topics(self, topics: Iterable[str] = ()) -> None:
        """TDM:133-141: the queued ones among ``topics`` become eligible again; resume."""
        if self.is_delete_topic_enabled:
            ctx = self.controller_context
            to_resume = set(topics) & ctx.topics_queued_for_deletion
            if to_resume:
                ctx.topics_ineligible_for_deletion.difference_update(to_resume)
                self._resume_deletions()

    def fail_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        """TDM:150-161: failed replicas of queued topics -> Ineligible; halt their topics; resume."""
        if self.is_delete_topic_enabled:
            failed = [r for r in _sorted(replicas) if self.is_topic_queued_up_for_deletion(r.topic)]
            if failed:
                topics = {r.topic for r in failed}
                _log.debug("Deletion failed for replicas %s. Halting deletion for topics %s", ",".join(map(str, failed)), topics)
                self.replica_state_machine.handle_state_changes(failed, _R.ReplicaDeletionIneligible)
                self.mark_topic_ineligible_for_deletion(topics, reason="replica deletion failure")
                self._resume_deletions()

    def mark_topic_ineligible_for_deletion(self, topics: Iterable[str], reason: str) -> None:
        """TDM:169-176: only queued topics become ineligible."""
        if self.is_delete_topic_enabled:
            ctx = self.controller_context
            new = ctx.topics_queued_for_deletion & set(topics)
            ctx.topics_ineligible_for_deletion.update(new)
            if new:
                _log.info("Halted deletion of topics %s due to %s", ",".join(sorted(new)), reason)

    def _is_topic_ineligible_for_deletion(self, topic: str) -> bool:
        if self.is_delete_topic_enabled:
            return topic in self.controller_context.topics_ineligible_for_deletion
        return True

    def _is_topic_deletion_in_progress(self, topic: str) -> bool:
        if self.is_delete_topic_enabled:
            return self.controller_context.is_any_replica_in_state(topic, _R.ReplicaDeletionStarted)
        return False

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        """TDM:192-197."""
        if self.is_delete_topic_enabled:
            return self.controller_context.is_topic_queued_up_for_deletion(topic)
        return False

    def complete_replica_deletion(self, replicas: Iterable[PartitionAndReplica]) -> None:
        """TDM:205-210: deleted replicas of queued topics -> Successful; resume."""
        done = [r for r in _sorted(replicas) if self.is_topic_queued_up_for_deletion(r.topic)]
        _log.debug("Deletion successfully completed for replicas %s", ",".join(map(str, done)))
        self.replica_state_machine.handle_state_changes(done, _R.ReplicaDeletionSuccessful)
        self._resume_deletions()

    def _is_topic_eligible_for_deletion(self, topic: str) -> bool:
        return (
            self.controller_context.is_topic_queued_up_for_deletion(topic)
            and not self._is_topic_deletion_in_progress(topic)
            and not self._is_topic_ineligible_for_deletion(topic)
        )

    def _retry_deletion_for_ineligible_replicas(self, topics: Iterable[str]) -> None:
        """TDM:231-236: Ineligible replicas -> Offline."""
        ctx = self.controller_context
        failed: set[PartitionAndReplica] = set()
        for topic in topics:
            failed |= ctx.replicas_in_state(topic, _R.ReplicaDeletionIneligible)
        self.replica_state_machine.handle_state_changes(_sorted(failed), _R.OfflineReplica)

    def _complete_delete_topic(self, topic: str) -> None:
        """TDM:238-247."""
        ctx = self.controller_context
        self.client.mute_partition_modifications(topic)
        deleted = ctx.replicas_in_state(topic, _R.ReplicaDeletionSuccessful)
        self.replica_state_machine.handle_state_changes(_sorted(deleted), _R.NonExistentReplica)
        self.client.delete_topic(topic, ctx.epoch_zk_version)
        ctx.remove_topic(topic)

    def _on_topic_deletion(self, topics: set[str]) -> None:
        """TDM:256-270."""
        ctx = self.controller_context
        unseen = topics - ctx.topics_with_deletion_started
        if unseen:
            partitions = sorted(tp for t in unseen for tp in ctx.partitions_for_topic(t))
            self.partition_state_machine.handle_state_changes(partitions, PartitionState.OfflinePartition)
            self.partition_state_machine.handle_state_changes(partitions, PartitionState.NonExistentPartition)
            ctx.begin_topic_deletion(unseen)
        self.client.send_metadata_update({tp for t in topics for tp in ctx.partitions_for_topic(t)})
        self._on_partition_deletion(topics)

    def _on_partition_deletion(self, topics: set[str]) -> None:
        """TDM:284-315."""
        ctx = self.controller_context
        dead_all: list[PartitionAndReplica] = []
        retry_all: list[PartitionAndReplica] = []
        ineligible: set[str] = set()
        for topic in sorted(topics):
            replicas = _sorted(ctx.replicas_for_topic(topic))
            alive = [r for r in replicas if ctx.is_replica_online(r.replica, r.topic_partition)]
            dead = [r for r in replicas if not ctx.is_replica_online(r.replica, r.topic_partition)]
            deleted = ctx.replicas_in_state(topic, _R.ReplicaDeletionSuccessful)
            dead_all.extend(dead)
            retry_all.extend(r for r in alive if r not in deleted)
            if dead:
                _log.debug("Dead Replicas (%s) found for topic %s", ",".join(map(str, dead)), topic)
                ineligible.add(topic)
        rsm = self.replica_state_machine
        rsm.handle_state_changes(dead_all, _R.ReplicaDeletionIneligible)
        rsm.handle_state_changes(retry_all, _R.OfflineReplica)
        rsm.handle_state_changes(retry_all, _R.ReplicaDeletionStarted)
        if ineligible:
            self.mark_topic_ineligible_for_deletion(ineligible, reason="offline replicas")

    def _resume_deletions(self) -> None:
        """TDM:317-356."""
        ctx = self.controller_context
        queued = sorted(ctx.topics_queued_for_deletion)
        retry: set[str] = set()
        start: set[str] = set()
        if queued:
            _log.info("Handling deletion for topics %s", ",".join(queued))
        for topic in queued:
            if ctx.are_all_replicas_in_state(topic, _R.ReplicaDeletionSuccessful):
                self._complete_delete_topic(topic)
                _log.info("Deletion of topic %s successfully completed", topic)
            elif not ctx.is_any_replica_in_state(topic, _R.ReplicaDeletionStarted):
                if ctx.is_any_replica_in_state(topic, _R.ReplicaDeletionIneligible):
                    retry.add(topic)
            if self._is_topic_eligible_for_deletion(topic):
                _log.info("Deletion of topic %s (re)started", topic)
                start.add(topic)
        if retry:
            self._retry_deletion_for_ineligible_replicas(sorted(retry))
        if start:
            self._on_topic_deletion(start)


def _sorted(replicas: Iterable[PartitionAndReplica]) -> list[PartitionAndReplica]:
    return sorted(replicas, key=lambda r: (r.topic_partition, r.replica))
