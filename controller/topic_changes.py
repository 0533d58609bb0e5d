"""KafkaController's topic handlers: new topics, added partitions, deletion requests and responses.

Rules (KC = KafkaController.scala 3.9; reference §5.5, §5.9, batch reference §9):
- processTopicChange (KC:1683-1708): diff the store's topics against ``all_topics``, set them,
  watch the new ones, read their assignments and ids, ``remove_topic`` vanished ones, cache the
  assignments, then ``on_new_partition_creation`` for every new partition.
- processTopicIds (KC:1710-1728): from IBP 2.8 topics without an id get one written to the store
  (``set_topic_ids``); every known id goes into the context.
- processPartitionModifications (KC:1742-1785): partitions in the store without a cached
  assignment are new; a topic queued for deletion gets its znode restored to the cached
  assignment of the partitions that exist under /partitions (KC:1743-1759; existence checked
  per partition path) and nothing is added; otherwise the new ones are cached and created.
- onNewPartitionCreation (KC:699-709): PSM New, RSM New, PSM Online (Offline(false) strategy;
  creates the state znodes), RSM Online.
- processTopicDeletion (KC:1787-1816): entries for unknown topics are deleted; with deletion
  enabled, topics with a reassignment in progress are marked ineligible, then all are enqueued;
  disabled: the entries are deleted.
- StopReplica responses for deleting topics (KC:1451-1471): a top-level error fails every
  partition of the response, else the partitions with an error; failures ->
  ``fail_replica_deletion``, the rest -> ``complete_replica_deletion``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ctrlbatch.context import (
    ControllerContext,
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
    TopicPartition,
)

from . import znodes
from .api_errors import Errors
from .election import OfflinePartitionLeaderElectionStrategy
from .events import PartitionModifications, TopicDeletionStopReplicaResponseReceived
from .store import TopicIdReplicaAssignment
from .topic_deletion_manager import ControllerDeletionClient

if TYPE_CHECKING:
    from .kafka_controller import KafkaController

__all__ = [
    "controller_deletion_client",
    "on_new_partition_creation",
    "process_partition_modifications",
    "process_topic_change",
    "process_topic_deletion",
    "process_topic_deletion_stop_replica_response_received",
    "process_topic_ids",
]


def controller_deletion_client(kc: KafkaController) -> ControllerDeletionClient:
    """TDM:32-52's client, bound to this controller's store, handlers and batch."""
    return ControllerDeletionClient(
        kc.context, kc.zk_client,
        unregister_partition_modifications_handlers=kc.unregister_partition_modifications_handlers,
        send_update_metadata_request=kc.send_update_metadata_request,
    )


def process_topic_change(kc: KafkaController, _event: object = None) -> None:
    """KC:1683-1708."""
    if not kc.is_active:
        return
    ctx = kc.context
    topics = kc.zk_client.get_all_topics_in_cluster(True)
    new_topics = topics - set(ctx.all_topics)
    deleted_topics = set(ctx.all_topics) - topics
    ctx.set_all_topics(topics)
    kc.register_partition_modifications_handlers(sorted(new_topics))
    added = kc.zk_client.get_replica_assignment_and_topic_id_for_topics(new_topics)
    for topic in sorted(deleted_topics):
        ctx.remove_topic(topic)
    process_topic_ids(kc, added)
    new_partitions: list[TopicPartition] = []
    for topic_assignment in added:
        for tp, assignment in topic_assignment.assignment.items():
            ctx.update_partition_full_replica_assignment(tp, assignment)
            new_partitions.append(tp)
    kc.logger.info("%sNew topics: [%s], deleted topics: [%s]", kc.log_prefix, ",".join(sorted(new_topics)),
                   ",".join(sorted(deleted_topics)))
    if new_partitions:
        on_new_partition_creation(kc, new_partitions)


def process_topic_ids(kc: KafkaController, assignments: Iterable[TopicIdReplicaAssignment]) -> None:
    """KC:1710-1728."""
    assignments = list(assignments)
    if kc.config.uses_topic_id:
        with_ids = [a for a in assignments if a.topic_id is not None]
        without = [a for a in assignments if a.topic_id is None]
        if without:
            with_ids.extend(kc.zk_client.set_topic_ids(without, kc.context.epoch_zk_version))
        assignments = with_ids
    for a in assignments:
        if a.topic_id is not None:
            kc.context.add_topic_id(a.topic, a.topic_id)


def process_partition_modifications(kc: KafkaController, event: PartitionModifications) -> None:
    """KC:1742-1785."""
    if not kc.is_active:
        return
    ctx, zk, topic = kc.context, kc.zk_client, event.topic
    stored = zk.get_full_replica_assignment_for_topics({topic})
    to_add = {tp: a for tp, a in sorted(stored.items()) if not ctx.partition_replica_assignment(tp)}
    if kc.topic_deletion_manager.is_topic_queued_up_for_deletion(topic):
        if to_add:
            kc.logger.warning("%sSkipping adding partitions %s for topic %s since it is currently being deleted",
                              kc.log_prefix, ",".join(str(tp.partition) for tp in to_add), topic)
            kc.logger.info("%sRestoring the partition replica assignment for topic %s", kc.log_prefix, topic)
            existing = {tp: ctx.partition_full_replica_assignment(tp) for tp in stored if zk.path_exists(znodes.partition_path(tp))}
            zk.set_topic_assignment(topic, ctx.topic_ids.get(topic), existing, ctx.epoch_zk_version)
        else:
            kc.logger.info("%sIgnoring partition change during topic deletion as no new partitions are added", kc.log_prefix)
    elif to_add:
        kc.logger.info("%sNew partitions to be added %s", kc.log_prefix, ",".join(map(str, to_add)))
        for tp, assignment in to_add.items():
            ctx.update_partition_full_replica_assignment(tp, assignment)
        on_new_partition_creation(kc, list(to_add))


def on_new_partition_creation(kc: KafkaController, new_partitions: list[TopicPartition]) -> None:
    """KC:699-709."""
    ctx = kc.context
    partitions = sorted(new_partitions)
    kc.logger.info("%sNew partition creation callback for %s", kc.log_prefix, ",".join(map(str, partitions[:100])))
    psm, rsm = kc.partition_state_machine, kc.replica_state_machine
    psm.handle_state_changes(partitions, PartitionState.NewPartition)
    rsm.handle_state_changes(_replicas(ctx, partitions), ReplicaState.NewReplica)
    psm.handle_state_changes(partitions, PartitionState.OnlinePartition, OfflinePartitionLeaderElectionStrategy(False))
    rsm.handle_state_changes(_replicas(ctx, partitions), ReplicaState.OnlineReplica)


def _replicas(ctx: ControllerContext, partitions: list[TopicPartition]) -> list[PartitionAndReplica]:
    """controllerContext.replicasForPartition, in partition then assignment order."""
    assignment = ctx.partition_replica_assignment
    return [PartitionAndReplica(tp, r) for tp in partitions for r in assignment(tp)]


def process_topic_deletion(kc: KafkaController, _event: object = None) -> None:
    """KC:1787-1816."""
    if not kc.is_active:
        return
    ctx, zk = kc.context, kc.zk_client
    to_delete = set(zk.get_topic_deletions())
    non_existent = sorted(to_delete - set(ctx.all_topics))
    if non_existent:
        kc.logger.warning("%sIgnoring request to delete non-existing topics %s", kc.log_prefix, ",".join(non_existent))
        zk.delete_topic_deletions(non_existent, ctx.epoch_zk_version)
    to_delete -= set(non_existent)
    tdm = kc.topic_deletion_manager
    if kc.config.delete_topic_enable:
        if to_delete:
            kc.logger.info("%sStarting topic deletion for topics %s", kc.log_prefix, ",".join(sorted(to_delete)))
            reassigning = {tp.topic for tp in ctx.partitions_being_reassigned}
            for topic in sorted(to_delete & reassigning):
                tdm.mark_topic_ineligible_for_deletion({topic}, "topic reassignment in progress")
            tdm.enqueue_topics_for_deletion(to_delete)
    else:
        kc.logger.info("%sRemoving %s since delete topic is disabled", kc.log_prefix, ",".join(sorted(to_delete)))
        zk.delete_topic_deletions(sorted(to_delete), ctx.epoch_zk_version)


def process_topic_deletion_stop_replica_response_received(
    kc: KafkaController, event: TopicDeletionStopReplicaResponseReceived
) -> None:
    """KC:1451-1471."""
    if not kc.is_active:
        return
    errors = event.partition_errors
    if event.error != Errors.NONE:
        in_error = set(errors)
    else:
        in_error = {tp for tp, code in errors.items() if code != Errors.NONE}
    tdm = kc.topic_deletion_manager
    tdm.fail_replica_deletion({PartitionAndReplica(tp, event.broker_id) for tp in in_error})
    if len(in_error) != len(errors):
        deleted = set(errors) - in_error
        tdm.complete_replica_deletion({PartitionAndReplica(tp, event.broker_id) for tp in deleted})
