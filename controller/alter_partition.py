"""ISR changes reaching the controller: AlterPartition (KIP-497) and ISR-change notifications.

Rules (KC = KafkaController.scala 3.9, KC:2147-2176 and 2288-2525; reference §5.8):
- The request and response are plain frozen values with AlterPartition's fields
  (clients/src/main/resources/common/message/AlterPartition{Request,Response}.json): topics by
  name (v0-1) or id (v2+), per partition the leader epoch, new ISR, recovery state and partition
  epoch. (v3's ISR broker epochs are not carried: the controller only reads the ids.)
- Checks, in Kafka's order: not active -> NOT_CONTROLLER; unknown broker or another epoch ->
  STALE_BROKER_EPOCH (top level); unknown topic id -> UNKNOWN_TOPIC_ID per partition; per
  partition: no cached leadership -> UNKNOWN_TOPIC_OR_PARTITION; partition or leader epoch above
  the cached one -> NOT_CONTROLLER; leader epoch below -> FENCED_LEADER_EPOCH; equal but for a
  stale partition epoch -> the current value (idempotent); partition epoch below ->
  INVALID_UPDATE_VERSION; RECOVERING with more than one ISR member, or RECOVERED -> RECOVERING ->
  INVALID_REQUEST; an ISR member not live -> INELIGIBLE_REPLICA (v2+) or OPERATION_NOT_ATTEMPTED.
- Accepted changes go in one conditional ``update_leader_and_isr``; BADVERSION is not retried
  (INVALID_UPDATE_VERSION). Successes are re-read into the cache, UpdateMetadata for every
  requested partition goes to all brokers, the callback runs, then reassignments whose ISR grew
  are completed (KC:2288-2316). Any exception -> UNKNOWN_SERVER_ERROR to the callback (Kafka
  catches Throwable there, so even a ControllerMovedException does not resign).
- IsrChangeNotification (KC:2147-2176): re-read the notified partitions' state znodes,
  UpdateMetadata for them to all brokers, complete reassignments, then delete the notifications.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

import attrs

from ctrlbatch.context import LeaderAndIsr, LeaderRecoveryState, TopicPartition

from . import reassignment
from .api_errors import ApiError, Errors
from .events import AlterPartitionReceived

if TYPE_CHECKING:
    from .kafka_controller import KafkaController

__all__ = [
    "AlterPartitionPartitionData",
    "AlterPartitionRequest",
    "AlterPartitionResponse",
    "AlterPartitionResponsePartition",
    "AlterPartitionResponseTopic",
    "AlterPartitionTopicData",
    "process_alter_partition",
    "process_isr_change_notification",
]

ZERO_UUID = uuid.UUID(int=0)


def _ids(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(values)


def _partitions(values: Iterable[AlterPartitionPartitionData]) -> tuple[AlterPartitionPartitionData, ...]:
    return tuple(values)


def _topics(values: Iterable[AlterPartitionTopicData]) -> tuple[AlterPartitionTopicData, ...]:
    return tuple(values)


def _response_partitions(values: Iterable[AlterPartitionResponsePartition]) -> tuple[AlterPartitionResponsePartition, ...]:
    return tuple(values)


def _response_topics(values: Iterable[AlterPartitionResponseTopic]) -> tuple[AlterPartitionResponseTopic, ...]:
    return tuple(values)


@attrs.frozen
class AlterPartitionPartitionData:
    partition_index: int
    leader_epoch: int
    new_isr: tuple[int, ...] = attrs.field(converter=_ids)
    leader_recovery_state: int = 0
    partition_epoch: int = 0


@attrs.frozen
class AlterPartitionTopicData:
    partitions: tuple[AlterPartitionPartitionData, ...] = attrs.field(converter=_partitions)
    topic_name: str = ""
    topic_id: uuid.UUID = ZERO_UUID


@attrs.frozen
class AlterPartitionRequest:
    broker_id: int
    broker_epoch: int
    topics: tuple[AlterPartitionTopicData, ...] = attrs.field(converter=_topics)


@attrs.frozen
class AlterPartitionResponsePartition:
    partition_index: int
    error_code: int = 0
    leader_id: int = 0
    leader_epoch: int = 0
    isr: tuple[int, ...] = ()
    leader_recovery_state: int = 0
    partition_epoch: int = 0


@attrs.frozen
class AlterPartitionResponseTopic:
    partitions: tuple[AlterPartitionResponsePartition, ...] = attrs.field(converter=_response_partitions)
    topic_name: str = ""
    topic_id: uuid.UUID = ZERO_UUID


@attrs.frozen
class AlterPartitionResponse:
    error_code: int = 0
    topics: tuple[AlterPartitionResponseTopic, ...] = attrs.field(default=(), converter=_response_topics)

    def partition_results(self) -> dict[tuple[str | uuid.UUID, int], AlterPartitionResponsePartition]:
        """(topic name or id, partition) -> result: a flat view for callers and tests."""
        return {(t.topic_name or t.topic_id, p.partition_index): p for t in self.topics for p in t.partitions}


Outcome = Errors | LeaderAndIsr


def process_alter_partition(kc: KafkaController, event: AlterPartitionReceived) -> None:
    """KC:2288-2316."""
    try:
        outcomes = _try_process_alter_partition(kc, event.request, event.version, event.callback)
    except Exception:
        kc.logger.error("%sError when processing AlterPartition: %.200r", kc.log_prefix, event.request, exc_info=True)
        event.callback(AlterPartitionResponse(error_code=Errors.UNKNOWN_SERVER_ERROR))
        outcomes = {}
    reassigning = kc.context.partitions_being_reassigned
    for tp, outcome in outcomes.items():
        if tp in reassigning and isinstance(outcome, LeaderAndIsr):
            reassignment.maybe_complete_reassignment(kc, tp)


def _try_process_alter_partition(
    kc: KafkaController, request: AlterPartitionRequest, version: int, callback: Callable[[AlterPartitionResponse], None]
) -> dict[TopicPartition, Outcome]:
    """KC:2318-2525."""
    if not kc.is_active:
        callback(AlterPartitionResponse(error_code=Errors.NOT_CONTROLLER))
        return {}
    ctx = kc.context
    use_topic_ids = version > 1
    cached_epoch = ctx.live_broker_id_and_epochs.get(request.broker_id)
    if cached_epoch is None or cached_epoch != request.broker_epoch:
        kc.logger.info("%sIgnoring AlterPartition due to unknown broker or stale broker epoch %d for broker %d",
                       kc.log_prefix, request.broker_epoch, request.broker_id)
        callback(AlterPartitionResponse(error_code=Errors.STALE_BROKER_EPOCH))
        return {}
    response_topics: list[AlterPartitionResponseTopic] = []
    to_alter: dict[TopicPartition, LeaderAndIsr] = {}
    for topic_req in request.topics:
        name = ctx.topic_name(topic_req.topic_id) if use_topic_ids else topic_req.topic_name
        if name is None:
            response_topics.append(AlterPartitionResponseTopic(
                [AlterPartitionResponsePartition(p.partition_index, Errors.UNKNOWN_TOPIC_ID) for p in topic_req.partitions],
                topic_id=topic_req.topic_id,
            ))
            continue
        for p in topic_req.partitions:
            to_alter[TopicPartition(name, p.partition_index)] = LeaderAndIsr(
                request.broker_id, p.new_isr, p.leader_epoch, p.partition_epoch, LeaderRecoveryState(p.leader_recovery_state)
            )
    outcomes: dict[TopicPartition, Outcome] = {}
    accepted: dict[TopicPartition, LeaderAndIsr] = {}
    live = ctx.live_broker_ids
    for tp, new in to_alter.items():
        checked = _check(ctx.partition_leader_and_isr(tp), new, live, version)
        if checked is None:
            accepted[tp] = new
        else:
            outcomes[tp] = checked
    result = kc.zk_client.update_leader_and_isr(accepted, ctx.epoch, ctx.epoch_zk_version)
    successes = []
    for tp, written in result.finished_partitions.items():
        if isinstance(written, Exception):
            kc.logger.error("%sFailed to update ISR for partition %s: %s", kc.log_prefix, tp, written)
            outcomes[tp] = ApiError.from_exception(written).error
        else:
            outcomes[tp] = written
            successes.append(tp)
    for tp in result.partitions_to_retry:
        kc.logger.info("%sFailed to update ISR to %s for partition %s, bad ZK version.", kc.log_prefix, accepted[tp], tp)
        outcomes[tp] = Errors.INVALID_UPDATE_VERSION
    kc.update_leader_and_isr_cache(successes)
    kc.send_update_metadata_request(list(ctx.live_or_shutting_down_broker_ids), list(to_alter))
    by_topic: dict[str, list[AlterPartitionResponsePartition]] = {}
    for tp, outcome in outcomes.items():
        by_topic.setdefault(tp.topic, []).append(_partition_response(tp, outcome))
    for topic, partitions in by_topic.items():
        if use_topic_ids:
            response_topics.append(AlterPartitionResponseTopic(partitions, topic_id=ctx.topic_ids.get(topic, ZERO_UUID)))
        else:
            response_topics.append(AlterPartitionResponseTopic(partitions, topic_name=topic))
    callback(AlterPartitionResponse(Errors.NONE, response_topics))
    return outcomes


def _check(current: LeaderAndIsr | None, new: LeaderAndIsr, live: AbstractSet[int], version: int) -> Outcome | None:
    """KC:2385-2444: the outcome for a refused or idempotent change, None for an accepted one."""
    if current is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    if new.partition_epoch > current.partition_epoch or new.leader_epoch > current.leader_epoch:
        return Errors.NOT_CONTROLLER
    if new.leader_epoch < current.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if new.equals_allow_stale_partition_epoch(current):
        return current
    if new.partition_epoch < current.partition_epoch:
        return Errors.INVALID_UPDATE_VERSION
    recovering = LeaderRecoveryState.RECOVERING
    if new.leader_recovery_state == recovering and len(new.isr) > 1:
        return Errors.INVALID_REQUEST
    if current.leader_recovery_state == LeaderRecoveryState.RECOVERED and new.leader_recovery_state == recovering:
        return Errors.INVALID_REQUEST
    if set(new.isr) - live:
        return Errors.INELIGIBLE_REPLICA if version > 1 else Errors.OPERATION_NOT_ATTEMPTED
    return None


def _partition_response(tp: TopicPartition, outcome: Outcome) -> AlterPartitionResponsePartition:
    if isinstance(outcome, LeaderAndIsr):
        return AlterPartitionResponsePartition(
            tp.partition, Errors.NONE, outcome.leader, outcome.leader_epoch, outcome.isr,
            int(outcome.leader_recovery_state), outcome.partition_epoch,
        )
    return AlterPartitionResponsePartition(tp.partition, int(outcome))


def process_isr_change_notification(kc: KafkaController, _event: object = None) -> None:
    """KC:2147-2176."""
    if not kc.is_active:
        return
    zk, ctx = kc.zk_client, kc.context
    sequence_numbers = zk.get_all_isr_change_notifications()
    try:
        partitions = zk.get_partitions_from_isr_change_notifications(sequence_numbers)
        if partitions:
            kc.update_leader_and_isr_cache(partitions)
            kc.send_update_metadata_request(list(ctx.live_or_shutting_down_broker_ids), partitions)
            for tp in partitions:
                if tp in ctx.partitions_being_reassigned:
                    reassignment.maybe_complete_reassignment(kc, tp)
    finally:
        zk.delete_isr_change_notifications(sequence_numbers, ctx.epoch_zk_version)
