"""Preferred and unclean leader elections: admin-, znode- and auto-triggered.

Rules (KC = KafkaController.scala 3.9, KC:909-949, 1209-1227, 1291-1353, 2201-2274; reference §5.7):
- ``on_replica_election``: PREFERRED -> PreferredReplica strategy; UNCLEAN ->
  Offline(allow_unclean = trigger is AdminClientTriggered); one PSM call. For non-admin triggers,
  failures are logged and a ControllerMovedException re-raised; then (``finally``)
  ``remove_partitions_from_preferred_replica_election`` logs the outcome and, unless
  AutoTriggered, deletes the znode (fenced) and enqueues ReplicaLeaderElection(None, PREFERRED,
  ZkTriggered) to re-arm its watch.
- ``process_replica_leader_election`` (KC:2201-2274): not active -> NOT_CONTROLLER per admin
  partition. Partitions come from the request, or from the znode (only if it exists). Unknown ->
  UNKNOWN_TOPIC_OR_PARTITION, queued for deletion -> INVALID_TOPIC_EXCEPTION, not electable ->
  ELECTION_NOT_NEEDED (PREFERRED: the leader is already the head; UNCLEAN: the leader is live);
  StateChangeFailedException -> PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE with
  its message; other exceptions -> ApiError.from_exception; success -> the new leader id.
- Auto rebalance (KC:1291-1341): partitions of non-queued topics grouped by preferred replica; a
  broker whose share of partitions led by someone else is strictly above
  leader.imbalance.per.broker.percentage/100 gets a PREFERRED election (AutoTriggered) for those
  whose head is online and in the ISR (reassigning partitions included). Not active -> nothing,
  not even a reschedule; otherwise always rescheduled after leader.imbalance.check.interval.seconds.
- "Can the preferred replica lead" asks the controller's ElectionPolicy (Kafka's algorithm by
  default, KC:1324-1331), so a custom policy is consulted consistently.
- Unclean enable events (KC:1343-1353): the online trigger (all partitions, or one topic); the new
  value arrives through the per-topic config read of the election.
- Scale: one grouping pass over the partitions per auto check; one PSM call per imbalanced broker.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ctrlbatch.context import LeaderAndIsr, PartitionState, TopicPartition

from .api_errors import ApiError, Errors
from .election import OfflinePartitionLeaderElectionStrategy, PreferredReplicaPartitionLeaderElectionStrategy
from .errors import ControllerMovedException, StateChangeFailedException
from .events import (
    AutoPreferredReplicaLeaderElection,
    ElectionTrigger,
    ElectionType,
    ReplicaLeaderElection,
    TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
)
from .partition_state_machine import ElectionResults

if TYPE_CHECKING:
    from .kafka_controller import KafkaController

__all__ = [
    "can_preferred_replica_be_leader",
    "check_and_trigger_auto_leader_rebalance",
    "on_replica_election",
    "process_auto_preferred_replica_leader_election",
    "process_replica_leader_election",
]


def on_replica_election(
    kc: KafkaController, partitions: Iterable[TopicPartition], election_type: ElectionType, trigger: ElectionTrigger
) -> ElectionResults:
    """KC:909-949."""
    parts = sorted(partitions)
    kc.logger.info("%sStarting replica leader election (%s) for partitions %s triggered by %s", kc.log_prefix,
                   election_type.name, ",".join(map(str, parts[:100])), trigger.value)
    try:
        if election_type == ElectionType.PREFERRED:
            strategy: object = PreferredReplicaPartitionLeaderElectionStrategy()
        else:
            strategy = OfflinePartitionLeaderElectionStrategy(trigger == ElectionTrigger.ADMIN_CLIENT_TRIGGERED)
        results = kc.partition_state_machine.handle_state_changes(parts, PartitionState.OnlinePartition, strategy)  # type: ignore[arg-type]
        if trigger != ElectionTrigger.ADMIN_CLIENT_TRIGGERED:
            for tp, result in results.items():
                if isinstance(result, ControllerMovedException):
                    kc.logger.info("%sError completing replica leader election (%s) for partition %s because controller "
                                   "has moved to another broker.", kc.log_prefix, election_type.name, tp)
                    raise result
                if isinstance(result, Exception):
                    kc.logger.error("%sError completing replica leader election (%s) for partition %s: %s",
                                    kc.log_prefix, election_type.name, tp, result)
        return results
    finally:
        if trigger != ElectionTrigger.ADMIN_CLIENT_TRIGGERED:
            remove_partitions_from_preferred_replica_election(kc, parts, trigger == ElectionTrigger.AUTO_TRIGGERED)


def remove_partitions_from_preferred_replica_election(
    kc: KafkaController, partitions: list[TopicPartition], is_triggered_by_auto_rebalance: bool
) -> None:
    """KC:1209-1227."""
    ctx = kc.context
    for tp in partitions:
        info = ctx.partition_leadership_info(tp)
        replicas = ctx.partition_replica_assignment(tp)
        if info is None or not replicas:
            continue
        leader, preferred = info.leader_and_isr.leader, replicas[0]
        if leader == preferred:
            kc.logger.info("%sPartition %s completed preferred replica leader election. New leader is %d",
                           kc.log_prefix, tp, preferred)
        else:
            kc.logger.warning("%sPartition %s failed to complete preferred replica leader election to %d. Leader is still %d",
                              kc.log_prefix, tp, preferred, leader)
    if not is_triggered_by_auto_rebalance:
        kc.zk_client.delete_preferred_replica_election(ctx.epoch_zk_version)
        kc.put(ReplicaLeaderElection(None, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED))


def process_replica_leader_election(kc: KafkaController, event: ReplicaLeaderElection) -> None:
    """KC:2201-2274."""
    if not kc.is_active:
        admin = event.partitions if event.partitions is not None else ()
        event.callback({tp: ApiError(Errors.NOT_CONTROLLER, None) for tp in admin})
        return
    trigger, election_type = event.trigger, event.election_type
    if not (trigger == ElectionTrigger.ADMIN_CLIENT_TRIGGERED
            or kc.zk_client.register_znode_change_handler_and_check_existence(kc.handlers.preferred_replica_election)):
        return
    ctx = kc.context
    partitions = set(event.partitions) if event.partitions is not None else kc.zk_client.get_preferred_replica_election()
    all_partitions = ctx.all_partitions
    unknown = sorted(tp for tp in partitions if tp not in all_partitions)
    known = [tp for tp in sorted(partitions) if tp in all_partitions]
    for tp in unknown:
        kc.logger.info("%sSkipping replica leader election (%s) for partition %s by %s since it doesn't exist.",
                       kc.log_prefix, election_type.name, tp, trigger.value)
    queued = ctx.is_topic_queued_up_for_deletion
    deleting = [tp for tp in known if queued(tp.topic)]
    live_partitions = [tp for tp in known if not queued(tp.topic)]
    if deleting:
        kc.logger.warning("%sSkipping replica leader election (%s) for partitions %s by %s since the respective topics "
                          "are being deleted", kc.log_prefix, election_type.name, ",".join(map(str, deleting)), trigger.value)
    live_brokers = ctx.live_broker_ids
    electable: list[TopicPartition] = []
    not_needed: list[TopicPartition] = []
    for tp in live_partitions:
        info = ctx.partition_leadership_info(tp)
        if info is None:
            raise KeyError(f"None.get: no leadership cached for {tp}")  # Scala's Option.get
        leader = info.leader_and_isr.leader
        if election_type == ElectionType.PREFERRED:
            needed = leader != ctx.partition_replica_assignment(tp)[0]
        else:
            needed = leader == LeaderAndIsr.NO_LEADER or leader not in live_brokers
        (electable if needed else not_needed).append(tp)
    results: dict[TopicPartition, int | ApiError] = {}
    for tp, result in on_replica_election(kc, electable, election_type, trigger).items():
        if isinstance(result, StateChangeFailedException):
            code = Errors.PREFERRED_LEADER_NOT_AVAILABLE if election_type == ElectionType.PREFERRED else Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
            results[tp] = ApiError(code, str(result))
        elif isinstance(result, Exception):
            results[tp] = ApiError.from_exception(result)
        else:
            results[tp] = result.leader
    for tp in not_needed:
        results[tp] = ApiError(Errors.ELECTION_NOT_NEEDED)
    for tp in deleting:
        results[tp] = ApiError(Errors.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
    for tp in unknown:
        results[tp] = ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
    event.callback(results)


# ---------------------------------------------------------------------- auto rebalance


def process_auto_preferred_replica_leader_election(kc: KafkaController, _event: AutoPreferredReplicaLeaderElection) -> None:
    """KC:1333-1341."""
    if not kc.is_active:
        return
    try:
        kc.logger.info("%sProcessing automatic preferred replica leader election", kc.log_prefix)
        check_and_trigger_auto_leader_rebalance(kc)
    finally:
        kc.schedule_auto_leader_rebalance_task(kc.config.leader_imbalance_check_interval_ms)


def check_and_trigger_auto_leader_rebalance(kc: KafkaController) -> None:
    """KC:1291-1322."""
    ctx = kc.context
    queued = ctx.is_topic_queued_up_for_deletion
    by_preferred: dict[int, list[TopicPartition]] = {}
    for tp in sorted(ctx.all_partitions):
        if queued(tp.topic):
            continue
        replicas = ctx.partition_replica_assignment(tp)
        if replicas:
            by_preferred.setdefault(replicas[0], []).append(tp)
    threshold = kc.config.leader_imbalance_per_broker_percentage / 100
    for broker, group in sorted(by_preferred.items()):
        not_preferred = []
        for tp in group:
            info = ctx.partition_leadership_info(tp)
            if info is not None and info.leader_and_isr.leader != broker:
                not_preferred.append(tp)
        ratio = len(not_preferred) / len(group)
        if ratio > threshold:
            candidates = [tp for tp in not_preferred
                          if not queued(tp.topic) and tp.topic in ctx.all_topics and can_preferred_replica_be_leader(kc, tp)]
            on_replica_election(kc, candidates, ElectionType.PREFERRED, ElectionTrigger.AUTO_TRIGGERED)


def can_preferred_replica_be_leader(kc: KafkaController, tp: TopicPartition) -> bool:
    """KC:1324-1331, through the controller's election policy."""
    ctx = kc.context
    assignment = ctx.partition_replica_assignment(tp)
    live = {r for r in assignment if ctx.is_replica_online(r, tp)}
    info = ctx.partition_leadership_info(tp)
    isr = info.leader_and_isr.isr if info is not None else ()
    return kc.election_policy.preferred_replica_partition_leader_election(assignment, isr, live) is not None


# ---------------------------------------------------------------------- unclean enable


def process_unclean_leader_election_enable(kc: KafkaController, _event: UncleanLeaderElectionEnable) -> None:
    """KC:1343-1347."""
    if not kc.is_active:
        return
    kc.logger.info("%sUnclean leader election has been enabled by default", kc.log_prefix)
    kc.partition_state_machine.trigger_online_partition_state_change()


def process_topic_unclean_leader_election_enable(kc: KafkaController, event: TopicUncleanLeaderElectionEnable) -> None:
    """KC:1349-1353."""
    if not kc.is_active:
        return
    kc.logger.info("%sUnclean leader election has been enabled for topic %s", kc.log_prefix, event.topic)
    kc.partition_state_machine.trigger_online_partition_state_change(event.topic)
