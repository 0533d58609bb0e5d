"""The replica state machine: Kafka's ReplicaStateMachine and ZkReplicaStateMachine.

Rules (RSM = core/src/main/scala/kafka/controller/ReplicaStateMachine.scala, 3.9; reference
kafka-zk-controller.md §3):
- ``ReplicaStateMachine`` is the abstract base (RSM:32-76): ``startup`` (each assigned replica
  Online if ``is_replica_online`` else ReplicaDeletionIneligible, then Online ones -> OnlineReplica
  and the others -> OfflineReplica), ``shutdown`` and the abstract ``handle_state_changes``.
- ``ZkReplicaStateMachine.handle_state_changes`` (RSM:107-122): nothing for an empty list; else
  one ``new_batch()``, the transitions per broker-id group, one ``send_requests_to_brokers(epoch)``.
  ControllerMovedException is re-raised; other exceptions are logged only (nothing returned).
- Unknown replicas start as NonExistentReplica; invalid transitions are logged and skipped.
- Transitions (RSM:159-286): NewReplica (leader -> refused and logged; cached leadership ->
  LeaderAndIsr(is_new=True) to the replica; none -> state only); OnlineReplica (from New: add the
  replica to the assignment if missing; otherwise LeaderAndIsr(is_new=False) when leadership is
  cached); OfflineReplica (StopReplica(delete=False) for every valid replica; ISR removal for
  those with cached leadership, then LeaderAndIsr(is_new=False) to the other replicas unless the
  topic is queued for deletion; UpdateMetadata for those without); ReplicaDeletionStarted
  (StopReplica(delete=True)); Ineligible/Successful (state only); NonExistentReplica (drop the
  replica from the assignment and its state).
- ISR removal (RSM:295-432): rounds until no BADVERSION is left; the leader becomes -1 if it was
  the replica; the ISR loses the replica unless it is the last member; partitions whose ISR lacks
  the replica are successes without a write, cached with our epoch; no state znode -> failure
  unless the topic is queued for deletion (then dropped silently, state unchanged).
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Mapping, Sequence

from ctrlbatch.batch import ControllerBrokerRequestBatch
from ctrlbatch.context import (
    ControllerContext,
    IllegalStateError,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaState,
    TopicPartition,
)
from ctrlbatch.context.controller_states import REPLICA_VALID_FROM

from .errors import Code, ControllerMovedException, KeeperException, StateChangeFailedException
from .partition_state_machine import STATE_CHANGE_LOGGER, _Prefixed
from .store import KafkaZkClient
from .znodes import decode_partition_state

__all__ = ["ReplicaStateMachine", "ZkReplicaStateMachine"]

_R = ReplicaState


class ReplicaStateMachine(abc.ABC):
    """RSM:32-76: what every replica state machine offers (mocks subclass this)."""

    def __init__(self, controller_context: ControllerContext) -> None:
        self.controller_context = controller_context
        self.logger = logging.getLogger("kafka.controller.ReplicaStateMachine")

    def startup(self) -> None:
        """RSM:36-48."""
        self.logger.info("Initializing replica state")
        self._initialize_replica_state()
        self.logger.info("Triggering online replica state changes")
        online, offline = self.controller_context.online_and_offline_replicas()
        self.handle_state_changes(_sorted(online), _R.OnlineReplica)
        self.logger.info("Triggering offline replica state changes")
        self.handle_state_changes(_sorted(offline), _R.OfflineReplica)

    def shutdown(self) -> None:
        self.logger.info("Stopped replica state machine")

    def _initialize_replica_state(self) -> None:
        """RSM:58-73."""
        ctx = self.controller_context
        online = ctx.is_replica_online
        for tp in sorted(ctx.all_partitions):
            for r in ctx.partition_replica_assignment(tp):
                state = _R.OnlineReplica if online(r, tp) else _R.ReplicaDeletionIneligible
                ctx.put_replica_state(PartitionAndReplica(tp, r), state)

    @abc.abstractmethod
    def handle_state_changes(self, replicas: Sequence[PartitionAndReplica], target_state: ReplicaState) -> None:
        """Move ``replicas`` to ``target_state``."""


def _checked_replicas(replicas: Sequence[PartitionAndReplica], target_state: object) -> list[PartitionAndReplica]:
    """The edge checks Scala's types make for Kafka: a TypeError naming the parameter."""
    if not isinstance(target_state, ReplicaState):
        raise TypeError(f"target_state must be a ReplicaState, not {type(target_state).__name__} {target_state!r:.80}")
    if isinstance(replicas, PartitionAndReplica | str):
        raise TypeError(f"replicas must be a sequence of PartitionAndReplica, not {type(replicas).__name__}")
    out = list(replicas)
    for r in out:
        if type(r) is not PartitionAndReplica:
            raise TypeError(f"replicas must hold PartitionAndReplica values, not {type(r).__name__} {r!r:.80}")
    return out


def _sorted(replicas: set[PartitionAndReplica]) -> list[PartitionAndReplica]:
    return sorted(replicas, key=lambda r: (r.topic_partition, r.replica))


class ZkReplicaStateMachine(ReplicaStateMachine):
    """RSM:97-451: the replica state machine over a KafkaZkClient and a request batch."""

    def __init__(
        self,
        controller_id: int,
        controller_context: ControllerContext,
        zk_client: KafkaZkClient,
        controller_broker_request_batch: ControllerBrokerRequestBatch,
        *,
        state_change_logger: logging.Logger | None = None,
    ) -> None:
        super().__init__(controller_context)
        self.controller_id = controller_id
        self.zk_client = zk_client
        self.batch = controller_broker_request_batch
        self.state_change_logger = state_change_logger or logging.getLogger(STATE_CHANGE_LOGGER)
        self.logger = logging.getLogger("kafka.controller.ZkReplicaStateMachine")

    def handle_state_changes(self, replicas: Sequence[PartitionAndReplica], target_state: ReplicaState) -> None:
        """RSM:107-122."""
        replicas = _checked_replicas(replicas, target_state)
        if not replicas:
            return
        try:
            self.batch.new_batch()
            by_broker: dict[int, list[PartitionAndReplica]] = {}
            for r in replicas:
                group = by_broker.get(r.replica)
                if group is None:
                    by_broker[r.replica] = [r]
                else:
                    group.append(r)
            for replica_id, group in by_broker.items():
                self._do_handle_state_changes(replica_id, group, target_state)
            self.batch.send_requests_to_brokers(self.controller_context.epoch)
        except ControllerMovedException:
            self.logger.error("Controller moved to another broker when moving some replicas to %s state", target_state, exc_info=True)
            raise
        except Exception:
            self.logger.error("Error while moving some replicas to %s state", target_state, exc_info=True)

    def _do_handle_state_changes(
        self, replica_id: int, replicas: list[PartitionAndReplica], target: ReplicaState
    ) -> None:
        """RSM:159-286."""
        ctx = self.controller_context
        for r in replicas:
            ctx.put_replica_state_if_not_exists(r, _R.NonExistentReplica)
        valid_from = REPLICA_VALID_FROM[target]
        valid = []
        for r in replicas:
            if ctx.replica_state(r) in valid_from:
                valid.append(r)
            else:
                self._log_invalid_transition(r, target)
        getattr(self, _HANDLERS[target])(replica_id, valid)

    # ------------------------------------------------------------ transitions

    def _to_new(self, replica_id: int, valid: list[PartitionAndReplica]) -> None:
        ctx = self.controller_context
        for r in valid:
            tp = r.topic_partition
            info = ctx.partition_leadership_info(tp)
            if info is not None:
                if info.leader_and_isr.leader == replica_id:
                    e = StateChangeFailedException(
                        f"Replica {replica_id} for partition {tp} cannot be moved to NewReplica state as it is "
                        "being requested to become leader"
                    )
                    # RSM:175-176 names OfflineReplica as the target in this log line.
                    self._log_failed_state_change(r, ctx.replica_state(r), _R.OfflineReplica, e)
                    continue
                self.batch.add_leader_and_isr_request_for_brokers(
                    (replica_id,), tp, info, ctx.partition_full_replica_assignment(tp), True
                )
            ctx.put_replica_state(r, _R.NewReplica)

    def _to_online(self, replica_id: int, valid: list[PartitionAndReplica]) -> None:
        ctx = self.controller_context
        for r in valid:
            tp = r.topic_partition
            if ctx.replica_state(r) is _R.NewReplica:
                assignment = ctx.partition_full_replica_assignment(tp)
                if replica_id not in assignment.replicas:
                    self.logger.error("Adding replica (%s) that is not part of the assignment %s", replica_id, assignment)
                    ctx.update_partition_full_replica_assignment(
                        tp, type(assignment)(assignment.replicas + (replica_id,), assignment.adding_replicas, assignment.removing_replicas)
                    )
            else:
                info = ctx.partition_leadership_info(tp)
                if info is not None:
                    self.batch.add_leader_and_isr_request_for_brokers(
                        (replica_id,), tp, info, ctx.partition_full_replica_assignment(tp), False
                    )
            ctx.put_replica_state(r, _R.OnlineReplica)

    def _to_offline(self, replica_id: int, valid: list[PartitionAndReplica]) -> None:
        ctx = self.controller_context
        batch = self.batch
        target = (replica_id,)
        for r in valid:
            batch.add_stop_replica_request_for_brokers(target, r.topic_partition, False)
        with_leadership: list[PartitionAndReplica] = []
        without_leadership: list[PartitionAndReplica] = []
        for r in valid:
            (with_leadership if ctx.partition_leadership_info(r.topic_partition) is not None else without_leadership).append(r)
        updated = self._remove_replicas_from_isr(replica_id, [r.topic_partition for r in with_leadership])
        log = self._state_log()
        for tp, info in updated.items():
            log.info(
                "Partition %s state changed to %s after removing replica %s from the ISR as part of transition to %s",
                tp, info, replica_id, _R.OfflineReplica,
            )
            if not ctx.is_topic_queued_up_for_deletion(tp.topic):
                recipients = tuple([b for b in ctx.partition_replica_assignment(tp) if b != replica_id])
                batch.add_leader_and_isr_request_for_brokers(
                    recipients, tp, info, ctx.partition_full_replica_assignment(tp), False
                )
            ctx.put_replica_state(PartitionAndReplica(tp, replica_id), _R.OfflineReplica)
        for r in without_leadership:
            batch.add_update_metadata_request_for_brokers(
                sorted(ctx.live_or_shutting_down_broker_ids), (r.topic_partition,)
            )
            ctx.put_replica_state(r, _R.OfflineReplica)

    def _to_deletion_started(self, replica_id: int, valid: list[PartitionAndReplica]) -> None:
        ctx = self.controller_context
        for r in valid:
            ctx.put_replica_state(r, _R.ReplicaDeletionStarted)
            self.batch.add_stop_replica_request_for_brokers((replica_id,), r.topic_partition, True)

    def _to_deletion_ineligible(self, replica_id: int, valid: list[PartitionAndReplica]) -> None:
        for r in valid:
            self.controller_context.put_replica_state(r, _R.ReplicaDeletionIneligible)

    def _to_deletion_successful(self, replica_id: int, valid: list[PartitionAndReplica]) -> None:
        for r in valid:
            self.controller_context.put_replica_state(r, _R.ReplicaDeletionSuccessful)

    def _to_non_existent(self, replica_id: int, valid: list[PartitionAndReplica]) -> None:
        ctx = self.controller_context
        for r in valid:
            tp = r.topic_partition
            ctx.update_partition_full_replica_assignment(tp, ctx.partition_full_replica_assignment(tp).remove_replica(r.replica))
            ctx.remove_replica_state(r)

    # ------------------------------------------------------------ ISR removal

    def _remove_replicas_from_isr(
        self, replica_id: int, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """RSM:295-317: rounds until nothing is left to retry."""
        ctx = self.controller_context
        results: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        remaining = partitions
        while remaining:
            finished, remaining = self._do_remove_replicas_from_isr(replica_id, remaining)
            for tp, outcome in finished.items():
                if isinstance(outcome, Exception):
                    r = PartitionAndReplica(tp, replica_id)
                    self._log_failed_state_change(r, ctx.replica_state(r), _R.OfflineReplica, outcome)
                else:
                    results[tp] = outcome
        return results

    def _do_remove_replicas_from_isr(
        self, replica_id: int, partitions: list[TopicPartition]
    ) -> tuple[dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception], list[TopicPartition]]:
        """RSM:330-390: one round."""
        ctx = self.controller_context
        leader_and_isrs, no_state = self._get_topic_partition_states_from_zk(partitions)
        with_replica: dict[TopicPartition, LeaderAndIsr] = {}
        without_replica: dict[TopicPartition, LeaderAndIsr | Exception] = {}
        for tp, result in leader_and_isrs.items():
            if isinstance(result, LeaderAndIsr) and replica_id in result.isr:
                with_replica[tp] = result
            else:
                without_replica[tp] = result
        adjusted: dict[TopicPartition, LeaderAndIsr] = {}
        for tp, lai in with_replica.items():
            new_leader = LeaderAndIsr.NO_LEADER if replica_id == lai.leader else lai.leader
            new_isr = lai.isr if len(lai.isr) == 1 else [r for r in lai.isr if r != replica_id]
            adjusted[tp] = lai.new_leader_and_isr(new_leader, new_isr)
        update = self.zk_client.update_leader_and_isr(adjusted, ctx.epoch, ctx.epoch_zk_version)
        missing: dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception] = {}
        for tp in no_state:
            if not ctx.is_topic_queued_up_for_deletion(tp.topic):
                missing[tp] = StateChangeFailedException(
                    f"Failed to change state of replica {replica_id} for partition {tp} since the leader and isr "
                    "path in zookeeper is empty"
                )
        out: dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception] = {}
        for source in (without_replica, update.finished_partitions):
            for tp, result in source.items():
                if isinstance(result, LeaderAndIsr):
                    info = LeaderIsrAndControllerEpoch(result, ctx.epoch)
                    ctx.put_partition_leadership_info(tp, info)
                    out[tp] = info
                else:
                    out[tp] = result
        for tp in update.partitions_to_retry:
            self.logger.debug(
                "Controller failed to remove replica %s from ISR of partition %s. Attempted to write state %s, but "
                "failed with bad ZK version. This will be retried.", replica_id, tp, adjusted[tp],
            )
        out.update(missing)
        return out, list(update.partitions_to_retry)

    def _get_topic_partition_states_from_zk(
        self, partitions: list[TopicPartition]
    ) -> tuple[dict[TopicPartition, LeaderAndIsr | Exception], list[TopicPartition]]:
        """RSM:392-432."""
        ctx = self.controller_context
        try:
            responses = self.zk_client.get_topic_partition_states_raw(partitions)
        except Exception as e:
            return dict.fromkeys(partitions, e), []
        no_state: list[TopicPartition] = []
        result: dict[TopicPartition, LeaderAndIsr | Exception] = {}
        for response in responses:
            tp = response.ctx
            code = response.result_code
            if code is Code.OK:
                stored = decode_partition_state(response.data, response.stat)
                if stored is None:
                    no_state.append(tp)
                elif stored.controller_epoch > ctx.epoch:
                    result[tp] = StateChangeFailedException(
                        "Leader and isr path written by another controller. This probably means the current "
                        f"controller with epoch {ctx.epoch} went through a soft failure and another controller was "
                        f"elected with epoch {stored.controller_epoch}. Aborting state change by this controller"
                    )
                else:
                    result[tp] = stored.leader_and_isr
            elif code is Code.NONODE:
                no_state.append(tp)
            else:
                result[tp] = KeeperException.create(code, response.path)
        return result, no_state

    # ------------------------------------------------------------------ logs

    def _state_log(self) -> _Prefixed:
        prefix = f"[Controller id={self.controller_id} epoch={self.controller_context.epoch}] "
        return _Prefixed(self.state_change_logger, {"prefix": prefix})

    def _log_invalid_transition(self, r: PartitionAndReplica, target: ReplicaState) -> None:
        """RSM:439-444."""
        current = self.controller_context.replica_state(r)
        e = IllegalStateError(
            f"Replica {r} should be in the {','.join(map(str, target.valid_previous_states))} states before moving "
            f"to {target} state. Instead it is in {current} state"
        )
        self._log_failed_state_change(r, current, target, e)

    def _log_failed_state_change(
        self, r: PartitionAndReplica, current: ReplicaState, target: ReplicaState, e: BaseException
    ) -> None:
        """RSM:446-450."""
        self._state_log().error(
            "Controller %s epoch %s initiated state change of replica %s for partition %s from %s to %s failed: %s",
            self.controller_id, self.controller_context.epoch, r.replica, r.topic_partition, current, target,
            f"{type(e).__name__}: {e}",
        )


_HANDLERS: Mapping[ReplicaState, str] = {
    _R.NewReplica: "_to_new",
    _R.OnlineReplica: "_to_online",
    _R.OfflineReplica: "_to_offline",
    _R.ReplicaDeletionStarted: "_to_deletion_started",
    _R.ReplicaDeletionIneligible: "_to_deletion_ineligible",
    _R.ReplicaDeletionSuccessful: "_to_deletion_successful",
    _R.NonExistentReplica: "_to_non_existent",
}
"""Target state -> the method that carries the transition out (RSM:166-284)."""
