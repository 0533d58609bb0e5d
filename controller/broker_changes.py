"""KafkaController's broker handlers: membership, controlled shutdown, log dirs, LeaderAndIsr responses.

Rules (KC = KafkaController.scala 3.9; reference kafka-zk-controller.md §5.3-5.4):
- processBrokerChange (KC:1610-1666) diffs the store's brokers against the live-or-shutting-down
  set: new (store only), dead (context only), bounced (both, a larger czxid in the store). The
  channel learns of them first; then new -> add + onBrokerStartup; bounced -> remove,
  onBrokerFailure, add, onBrokerStartup; dead -> remove + onBrokerFailure. Ids are handled sorted.
- onBrokerStartup (KC:572-605): clear their offline dirs; UpdateMetadata with no partitions to the
  existing brokers, with ``partitions_with_leaders`` to the new ones; RSM -> OnlineReplica for
  their replicas; the online trigger; resume reassignments whose targets include a new broker;
  resume deletion of queued topics with replicas there; watch their registrations.
- onBrokerFailure (KC:635-646): clear offline dirs and shutting-down marks, onReplicasBecomeOffline
  for all their replicas, drop their watches. onReplicasBecomeOffline (KC:664-691): PSM Offline for
  partitions with an offline leader, the online trigger, RSM OfflineReplica for non-deleting
  replicas, failReplicaDeletion for deleting ones, and an UpdateMetadata with no partitions when
  nothing else told the brokers (no non-deleting replica and no successful election).
- doControlledShutdown (KC:1355-1410), whose callback receives the result or the exception
  (Scala's Try: a ControllerMovedException raised inside goes to the callback too).
- LeaderAndIsr responses (KC:1421-1449): KAFKA_STORAGE_ERROR partitions become offline dirs,
  NONE ones online again; newly offline replicas -> onReplicasBecomeOffline. v5+ responses name
  topics by id, resolved through the context (unknown ids dropped).
- Log-dir events (KC:1730-1740, 551-556): RSM OnlineReplica for every replica on the reporting
  brokers (their LeaderAndIsr responses then report the bad dirs); the notifications are deleted.
- Scale: every handler makes O(1) passes over the partitions (``replicas_on_brokers``,
  ``partitions_on_broker``... each scan once per event), never one scan per partition.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ctrlbatch.context import (
    IllegalStateError,
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
    TopicPartition,
)

from . import reassignment
from .api_errors import Errors
from .election import ControlledShutdownPartitionLeaderElectionStrategy
from .errors import BrokerNotAvailableException, ControllerMovedException, StaleBrokerEpochException
from .events import BrokerModifications, ControlledShutdown, LeaderAndIsrResponseReceived

if TYPE_CHECKING:
    from .kafka_controller import KafkaController

__all__ = [
    "do_controlled_shutdown",
    "on_broker_failure",
    "on_broker_startup",
    "on_replicas_become_offline",
    "process_broker_change",
    "process_broker_modification",
    "process_controlled_shutdown",
    "process_leader_and_isr_response_received",
    "process_log_dir_event_notification",
    "sorted_replicas",
]

UNKNOWN_BROKER_EPOCH = -1
"""AbstractControlRequest.UNKNOWN_BROKER_EPOCH: a request from a broker before KIP-380."""


def sorted_replicas(replicas: Iterable[PartitionAndReplica]) -> list[PartitionAndReplica]:
    """A set of replicas in a fixed order (partition, then broker id)."""
    return sorted(replicas, key=lambda r: (r.topic_partition, r.replica))


def process_broker_change(kc: KafkaController, _event: object = None) -> None:
    """KC:1610-1666."""
    if not kc.is_active:
        return
    ctx = kc.context
    current = kc.zk_client.get_all_broker_and_epochs_in_cluster()
    current_epochs = {broker.id: epoch for broker, epoch in current.items()}
    known_epochs = dict(ctx.live_broker_id_and_epochs)
    new_ids = sorted(current_epochs.keys() - known_epochs.keys())
    dead_ids = sorted(known_epochs.keys() - current_epochs.keys())
    bounced_ids = sorted(b for b in current_epochs.keys() & known_epochs.keys() if current_epochs[b] > known_epochs[b])
    by_id = {broker.id: (broker, epoch) for broker, epoch in current.items()}
    new_brokers = dict(by_id[b] for b in new_ids)
    bounced_brokers = dict(by_id[b] for b in bounced_ids)
    kc.logger.info("%sNewly added brokers: %s, deleted brokers: %s, bounced brokers: %s, all live brokers: %s",
                   kc.log_prefix, _ids(new_ids), _ids(dead_ids), _ids(bounced_ids), _ids(sorted(current_epochs)))
    for broker in new_brokers:
        kc.add_channel_broker(broker)
    for broker_id in bounced_ids:
        kc.remove_channel_broker(broker_id)
    for broker in bounced_brokers:
        kc.add_channel_broker(broker)
    for broker_id in dead_ids:
        kc.remove_channel_broker(broker_id)
    if new_ids:
        ctx.add_live_brokers(new_brokers)
        on_broker_startup(kc, new_ids)
    if bounced_ids:
        ctx.remove_live_brokers(bounced_ids)
        on_broker_failure(kc, bounced_ids)
        ctx.add_live_brokers(bounced_brokers)
        on_broker_startup(kc, bounced_ids)
    if dead_ids:
        ctx.remove_live_brokers(dead_ids)
        on_broker_failure(kc, dead_ids)


def _ids(ids: Iterable[int]) -> str:
    return ",".join(map(str, ids))


def _clear_offline_dirs(kc: KafkaController, broker_ids: Iterable[int]) -> None:
    ctx = kc.context
    for broker_id in broker_ids:
        offline = ctx.replicas_on_offline_dirs.get(broker_id)
        if offline:
            ctx.remove_replicas_on_offline_dirs(broker_id, list(offline))


def on_broker_startup(kc: KafkaController, new_brokers: list[int]) -> None:
    """KC:572-605."""
    ctx = kc.context
    kc.logger.info("%sNew broker startup callback for %s", kc.log_prefix, _ids(new_brokers))
    _clear_offline_dirs(kc, new_brokers)
    new_set = set(new_brokers)
    existing = sorted(set(ctx.live_or_shutting_down_broker_ids) - new_set)
    kc.send_update_metadata_request(existing, ())
    kc.send_update_metadata_request(new_brokers, ctx.partitions_with_leaders)
    replicas_on_new = ctx.replicas_on_brokers(new_set)
    kc.replica_state_machine.handle_state_changes(sorted_replicas(replicas_on_new), ReplicaState.OnlineReplica)
    kc.partition_state_machine.trigger_online_partition_state_change()
    reassignment.maybe_resume_reassignments(kc, lambda _tp, a: any(r in new_set for r in a.target_replicas))
    tdm = kc.topic_deletion_manager
    deleting_topics = {r.topic_partition.topic for r in replicas_on_new if tdm.is_topic_queued_up_for_deletion(r.topic_partition.topic)}
    if deleting_topics:
        kc.logger.info("%sSome replicas for topics scheduled for deletion %s are on the newly restarted brokers %s. "
                       "Signaling restart of topic deletion for these topics", kc.log_prefix,
                       ",".join(sorted(deleting_topics)), _ids(new_brokers))
        tdm.resume_deletion_for_topics(deleting_topics)
    kc.register_broker_modifications_handler(new_brokers)


def on_broker_failure(kc: KafkaController, dead_brokers: list[int]) -> None:
    """KC:635-646."""
    ctx = kc.context
    kc.logger.info("%sBroker failure callback for %s", kc.log_prefix, _ids(dead_brokers))
    _clear_offline_dirs(kc, dead_brokers)
    ctx.shutting_down_broker_ids.difference_update(dead_brokers)
    on_replicas_become_offline(kc, ctx.replicas_on_brokers(dead_brokers))
    kc.unregister_broker_modifications_handler(dead_brokers)


def on_broker_update(kc: KafkaController, broker_id: int) -> None:
    """KC:648-651."""
    kc.logger.info("%sBroker info update callback for %d", kc.log_prefix, broker_id)
    kc.send_update_metadata_request(list(kc.context.live_or_shutting_down_broker_ids), ())


def on_replicas_become_offline(kc: KafkaController, new_offline_replicas: set[PartitionAndReplica]) -> None:
    """KC:664-691."""
    ctx = kc.context
    tdm = kc.topic_deletion_manager
    for_deletion = {r for r in new_offline_replicas if tdm.is_topic_queued_up_for_deletion(r.topic_partition.topic)}
    not_for_deletion = new_offline_replicas - for_deletion
    offline_leader = ctx.partitions_with_offline_leader()
    kc.partition_state_machine.handle_state_changes(sorted(offline_leader), PartitionState.OfflinePartition)
    results = kc.partition_state_machine.trigger_online_partition_state_change()
    kc.replica_state_machine.handle_state_changes(sorted_replicas(not_for_deletion), ReplicaState.OfflineReplica)
    if for_deletion:
        tdm.fail_replica_deletion(for_deletion)
    if not not_for_deletion and all(isinstance(r, Exception) for r in results.values()):
        kc.send_update_metadata_request(list(ctx.live_or_shutting_down_broker_ids), ())


def process_broker_modification(kc: KafkaController, event: BrokerModifications) -> None:
    """KC:1668-1681 (Broker values carry no features here: endpoints decide)."""
    if not kc.is_active:
        return
    new = kc.zk_client.get_broker(event.broker_id)
    old = kc.context.live_or_shutting_down_broker(event.broker_id)
    if new is not None and old is not None and new.endpoints != old.endpoints:
        kc.logger.info("%sUpdated broker metadata: %s -> %s", kc.log_prefix, old, new)
        kc.context.update_broker_metadata(old, new)
        on_broker_update(kc, event.broker_id)


# ---------------------------------------------------------------------- controlled shutdown


def process_controlled_shutdown(kc: KafkaController, event: ControlledShutdown) -> None:
    """KC:1355-1358: the callback gets Try(doControlledShutdown)."""
    result: frozenset[TopicPartition] | BaseException
    try:
        result = frozenset(do_controlled_shutdown(kc, event.id, event.broker_epoch))
    except Exception as e:
        result = e
    event.callback(result)


def do_controlled_shutdown(kc: KafkaController, broker_id: int, broker_epoch: int) -> set[TopicPartition]:
    """KC:1360-1410: move leadership off the broker, stop its follower replicas; returns the
    partitions it still leads (RF > 1, not queued for deletion)."""
    ctx = kc.context
    if not kc.is_active:
        raise ControllerMovedException("Controller moved to another broker. Aborting controlled shutdown")
    if broker_epoch != UNKNOWN_BROKER_EPOCH:
        cached = ctx.live_broker_id_and_epochs.get(broker_id)
        if cached is None:
            raise KeyError(f"key not found: {broker_id}")  # Scala's Map.apply (NoSuchElementException)
        if broker_epoch < cached:
            message = (f"Received controlled shutdown request from an old broker epoch {broker_epoch} for broker "
                       f"{broker_id}. Current broker epoch is {cached}.")
            kc.logger.info("%s%s", kc.log_prefix, message)
            raise StaleBrokerEpochException(message)
    kc.logger.info("%sShutting down broker %d", kc.log_prefix, broker_id)
    if broker_id not in ctx.live_or_shutting_down_broker_ids:
        raise BrokerNotAvailableException(f"Broker id {broker_id} does not exist.")
    ctx.shutting_down_broker_ids.add(broker_id)
    queued = ctx.is_topic_queued_up_for_deletion
    led: list[TopicPartition] = []
    followed: list[TopicPartition] = []
    for tp in sorted(ctx.partitions_on_broker(broker_id)):
        info = ctx.partition_leadership_info(tp)
        if info is None or len(ctx.partition_replica_assignment(tp)) <= 1 or queued(tp.topic):
            continue
        (led if info.leader_and_isr.leader == broker_id else followed).append(tp)
    kc.partition_state_machine.handle_state_changes(
        led, PartitionState.OnlinePartition, ControlledShutdownPartitionLeaderElectionStrategy()
    )
    batch = kc.broker_request_batch
    try:
        batch.new_batch()
        for tp in followed:
            batch.add_stop_replica_request_for_brokers([broker_id], tp, False)
        batch.send_requests_to_brokers(kc.epoch)
    except IllegalStateError as e:
        kc.handle_illegal_state(e)
    kc.replica_state_machine.handle_state_changes(
        [PartitionAndReplica(tp, broker_id) for tp in followed], ReplicaState.OfflineReplica
    )
    return set(ctx.partition_leaders_on_broker(broker_id))


# ---------------------------------------------------------------------- log dirs and LeaderAndIsr responses


def process_log_dir_event_notification(kc: KafkaController, _event: object = None) -> None:
    """KC:1730-1740."""
    if not kc.is_active:
        return
    zk = kc.zk_client
    sequence_numbers = zk.get_all_log_dir_event_notifications()
    try:
        broker_ids = zk.get_broker_ids_from_log_dir_events(sequence_numbers)
        kc.logger.info("%sHandling log directory failure for brokers %s", kc.log_prefix, _ids(broker_ids))
        replicas = kc.context.replicas_on_brokers(broker_ids)
        kc.replica_state_machine.handle_state_changes(sorted_replicas(replicas), ReplicaState.OnlineReplica)
    finally:
        zk.delete_log_dir_event_notifications(sequence_numbers, kc.context.epoch_zk_version)


def process_leader_and_isr_response_received(kc: KafkaController, event: LeaderAndIsrResponseReceived) -> None:
    """KC:1421-1449."""
    if not kc.is_active:
        return
    response, broker_id = event.response, event.broker_id
    if response.error_code != Errors.NONE:
        logging.getLogger("state.change.logger").error(
            "%sReceived error %s in LeaderAndIsr response %.200r from broker %d",
            kc.log_prefix, response.error_code, response, broker_id)
        return
    ctx = kc.context
    offline: list[TopicPartition] = []
    online: list[TopicPartition] = []
    for tp, code in _partition_errors(kc, response):
        if code == Errors.KAFKA_STORAGE_ERROR:
            offline.append(tp)
        elif code == Errors.NONE:
            online.append(tp)
    previous = set(ctx.replicas_on_offline_dirs.get(broker_id, ()))
    current = (previous - set(online)) | set(offline)
    ctx.remove_replicas_on_offline_dirs(broker_id, online)
    ctx.add_replicas_on_offline_dirs(broker_id, offline)
    newly_offline = current - previous
    if newly_offline:
        kc.logger.info("%sMark replicas %s on broker %d as offline", kc.log_prefix,
                       ",".join(map(str, sorted(newly_offline))), broker_id)
        on_replicas_become_offline(kc, {PartitionAndReplica(tp, broker_id) for tp in newly_offline})


def _partition_errors(kc: KafkaController, response: object) -> list[tuple[TopicPartition, int]]:
    """LeaderAndIsrResponse.partitionErrors (LeaderAndIsrResponse.java:78-95): v0-4 by name,
    v5+ by topic id (ids the context does not know are dropped)."""
    out = [(TopicPartition(e.topic_name, e.partition_index), e.error_code) for e in getattr(response, "partition_errors", ())]
    names = kc.context.topic_names
    for topic in getattr(response, "topics", ()):
        name = names.get(topic.topic_id)
        if name is not None:
            out.extend((TopicPartition(name, e.partition_index), e.error_code) for e in topic.partition_errors)
    return out
