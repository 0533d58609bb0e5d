"""The partition state machine: Kafka's PartitionStateMachine and ZkPartitionStateMachine.

Rules (PSM = core/src/main/scala/kafka/controller/PartitionStateMachine.scala, 3.9; reference
kafka-zk-controller.md §1):
- ``PartitionStateMachine`` is the abstract base (PSM:36-117): ``startup`` (initialise each
  cached partition: leader online -> Online, leader offline -> Offline, no leadership -> New;
  then the online trigger), ``shutdown``, ``trigger_online_partition_state_change(topic=None)``
  (New and Offline partitions, topics queued for deletion dropped, to Online with
  OfflinePartitionLeaderElectionStrategy(false)) and the abstract ``handle_state_changes``.
  Tests subclass it with mock machines, as Kafka's MockPartitionStateMachine does.
- ``ZkPartitionStateMachine.handle_state_changes`` (PSM:151-177): nothing for an empty list;
  otherwise ``new_batch()``, the transitions, ``send_requests_to_brokers(epoch)`` (sent even when
  nothing was added). ControllerMovedException is re-raised; any other exception maps every input
  partition to that exception, the batch is neither sent nor cleared.
- Unknown partitions start as NonExistentPartition; invalid transitions are logged with
  IllegalStateException's text and left alone (PSM:208-217, 512-518).
- Transitions (PSM:219-267): -> New and -> Offline/NonExistent only set the state; New -> Online
  creates the state znodes (leader = first live replica, ISR = live replicas, one
  ``create_topic_partition_states_raw`` call; OK -> LeaderAndIsr(is_new=True) to the ISR, state
  Online; other codes or a failed call -> stays New); Online/Offline -> Online elects a leader
  (read, elect, conditional ``update_leader_and_isr``, BADVERSION partitions re-read and retried
  until none is left; LeaderAndIsr(is_new=False) to the strategy's recipients). A missing
  strategy raises ValueError (IllegalArgumentException) inside the catch-all.
- The result maps only elected partitions: the new LeaderAndIsr or the exception (Kafka's Either).
- Offline strategy's unclean flag per partition (PSM:472-510): a live ISR member -> false; else
  ``allow_unclean`` -> true; else ``get_log_configs`` (called even for no topics) decides per
  topic, a failed topic's partitions get no election input.
- Leader recovery (RECOVERING after an unclean election) needs IBP >= 3.2-IV0 (PSM:136).
- The election algorithms come from ``election_policy`` (Kafka's by default; election.py).
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Iterable, Mapping, Sequence

from ctrlbatch.batch import ControllerBrokerRequestBatch
from ctrlbatch.context import (
    ControllerContext,
    IllegalStateError,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    MetadataVersion,
    PartitionState,
    TopicPartition,
)
from ctrlbatch.context.controller_states import PARTITION_VALID_FROM

from .election import (
    KAFKA_ELECTION_POLICY,
    ControlledShutdownPartitionLeaderElectionStrategy,
    ElectionPolicy,
    ElectionResult,
    OfflinePartitionLeaderElectionStrategy,
    PartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy,
    ReassignPartitionLeaderElectionStrategy,
    leader_for_controlled_shutdown,
    leader_for_offline,
    leader_for_preferred_replica,
    leader_for_reassign,
)
from .errors import Code, ControllerMovedException, KeeperException, StateChangeFailedException
from .store import KafkaZkClient
from .znodes import decode_partition_state

__all__ = ["ElectionResults", "PartitionStateMachine", "ZkPartitionStateMachine"]

ElectionResults = dict[TopicPartition, "LeaderAndIsr | Exception"]
"""Per partition: the elected LeaderAndIsr (Right) or why not (Left)."""

STATE_CHANGE_LOGGER = "state.change.logger"

_P = PartitionState


class PartitionStateMachine(abc.ABC):
    """PSM:36-117: what every partition state machine offers (mocks subclass this)."""

    def __init__(self, controller_context: ControllerContext) -> None:
        self.controller_context = controller_context
        self.logger = logging.getLogger("kafka.controller.PartitionStateMachine")

    def startup(self) -> None:
        """Initialise every cached partition's state, then move New/Offline ones online."""
        self.logger.info("Initializing partition state")
        self._initialize_partition_state()
        self.logger.info("Triggering online partition state changes")
        self.trigger_online_partition_state_change()

    def shutdown(self) -> None:
        self.logger.info("Stopped partition state machine")

    def trigger_online_partition_state_change(self, topic: str | None = None) -> ElectionResults:
        """PSM:59-79: New and Offline partitions (of ``topic`` if given), except topics queued for
        deletion, to Online with OfflinePartitionLeaderElectionStrategy(false)."""
        ctx = self.controller_context
        states = (_P.OfflinePartition, _P.NewPartition)
        partitions = ctx.partitions_in_states(states, topic)
        to_trigger = sorted(tp for tp in partitions if not ctx.is_topic_queued_up_for_deletion(tp.topic))
        return self.handle_state_changes(to_trigger, _P.OnlinePartition, OfflinePartitionLeaderElectionStrategy(False))

    def _initialize_partition_state(self) -> None:
        """PSM:85-100."""
        ctx = self.controller_context
        for tp in sorted(ctx.all_partitions):
            info = ctx.partition_leadership_info(tp)
            if info is None:
                ctx.put_partition_state(tp, _P.NewPartition)
            elif ctx.is_replica_online(info.leader_and_isr.leader, tp):
                ctx.put_partition_state(tp, _P.OnlinePartition)
            else:
                ctx.put_partition_state(tp, _P.OfflinePartition)

    @abc.abstractmethod
    def handle_state_changes(
        self,
        partitions: Sequence[TopicPartition],
        target_state: PartitionState,
        leader_election_strategy: PartitionLeaderElectionStrategy | None = None,
    ) -> ElectionResults:
        """Move ``partitions`` to ``target_state``; returns election results (Online target only)."""


class ZkPartitionStateMachine(PartitionStateMachine):
    """PSM:129-529: the partition state machine over a KafkaZkClient and a request batch.

    controller_id: this broker's id (config.brokerId). metadata_version: the IBP (leader recovery
    needs 3.2-IV0). config_originals: the broker's config, the defaults under each topic's config
    in get_log_configs. election_policy: the leader-picking algorithms (Kafka's by default).
    """

    def __init__(
        self,
        controller_id: int,
        controller_context: ControllerContext,
        zk_client: KafkaZkClient,
        controller_broker_request_batch: ControllerBrokerRequestBatch,
        *,
        metadata_version: MetadataVersion | str = MetadataVersion.LATEST_PRODUCTION,
        config_originals: Mapping[str, object] | None = None,
        election_policy: ElectionPolicy = KAFKA_ELECTION_POLICY,
        state_change_logger: logging.Logger | None = None,
    ) -> None:
        super().__init__(controller_context)
        if isinstance(metadata_version, str):
            metadata_version = MetadataVersion.from_version_string(metadata_version)
        self.controller_id = controller_id
        self.zk_client = zk_client
        self.batch = controller_broker_request_batch
        self.metadata_version = metadata_version
        self.is_leader_recovery_supported = metadata_version.is_at_least(MetadataVersion.IBP_3_2_IV0)
        self.config_originals: Mapping[str, object] = dict(config_originals or {})
        self.election_policy = election_policy
        self.state_change_logger = state_change_logger or logging.getLogger(STATE_CHANGE_LOGGER)
        self.logger = logging.getLogger("kafka.controller.ZkPartitionStateMachine")

    # ------------------------------------------------------------------ entry

    def handle_state_changes(
        self,
        partitions: Sequence[TopicPartition],
        target_state: PartitionState,
        leader_election_strategy: PartitionLeaderElectionStrategy | None = None,
    ) -> ElectionResults:
        """PSM:151-177."""
        partitions = _checked_partitions(partitions, target_state, leader_election_strategy)
        if not partitions:
            return {}
        try:
            self.batch.new_batch()
            result = self._do_handle_state_changes(partitions, target_state, leader_election_strategy)
            self.batch.send_requests_to_brokers(self.controller_context.epoch)
            return result
        except ControllerMovedException:
            self.logger.error("Controller moved to another broker when moving some partitions to %s state", target_state, exc_info=True)
            raise
        except Exception as e:
            self.logger.error("Error while moving some partitions to %s state", target_state, exc_info=True)
            return dict.fromkeys(partitions, e)

    def _do_handle_state_changes(
        self,
        partitions: list[TopicPartition],
        target_state: PartitionState,
        strategy: PartitionLeaderElectionStrategy | None,
    ) -> ElectionResults:
        """PSM:208-267."""
        ctx = self.controller_context
        for tp in partitions:
            ctx.put_partition_state_if_not_exists(tp, _P.NonExistentPartition)
        valid_from = PARTITION_VALID_FROM[target_state]
        states = ctx.partition_states
        valid = []
        for tp in partitions:
            if states[tp] in valid_from:
                valid.append(tp)
            else:
                self._log_invalid_transition(tp, target_state)
        log = self._state_log()
        info_enabled = log.isEnabledFor(logging.INFO)
        if target_state is _P.NewPartition:
            for tp in valid:
                if info_enabled:
                    log.info(
                        "Changed partition %s state from %s to %s with assigned replicas %s",
                        tp, states[tp], target_state, ",".join(map(str, ctx.partition_replica_assignment(tp))),
                    )
                ctx.put_partition_state(tp, _P.NewPartition)
            return {}
        if target_state is _P.OnlinePartition:
            uninitialized = [tp for tp in valid if states[tp] is _P.NewPartition]
            to_elect = [tp for tp in valid if states[tp] is _P.OfflinePartition or states[tp] is _P.OnlinePartition]
            if uninitialized:
                for tp in self._initialize_leader_and_isr_for_partitions(uninitialized):
                    if info_enabled:
                        log.info("Changed partition %s from %s to %s with state %s", tp, states[tp], target_state,
                                 ctx.partition_leader_and_isr(tp))
                    ctx.put_partition_state(tp, _P.OnlinePartition)
            if not to_elect:
                return {}
            if strategy is None:
                raise ValueError("Election strategy is a required field when the target state is OnlinePartition")
            results = self._elect_leader_for_partitions(to_elect, strategy)
            for tp, result in results.items():
                if isinstance(result, LeaderAndIsr):
                    if info_enabled:
                        log.info("Changed partition %s from %s to %s with state %s", tp, states[tp], target_state, result)
                    ctx.put_partition_state(tp, _P.OnlinePartition)
            return results
        for tp in valid:  # Offline or NonExistent: the state only
            ctx.put_partition_state(tp, target_state)
        return {}

    # ------------------------------------------------------------ New -> Online

    def _initialize_leader_and_isr_for_partitions(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """PSM:274-319: create the state znodes; returns the partitions initialised."""
        ctx = self.controller_context
        online = ctx.is_replica_online
        to_create: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        for tp in partitions:
            replicas = ctx.partition_replica_assignment(tp)
            live = [r for r in replicas if online(r, tp)]
            if not live:
                msg = (
                    f"Controller {self.controller_id} epoch {ctx.epoch} encountered error during state change of "
                    f"partition {tp} from New to Online, assigned replicas are [{','.join(map(str, replicas))}], "
                    f"live brokers are [{_scala_set(ctx.live_broker_ids)}]. No assigned replica is alive."
                )
                self._log_failed_state_change(tp, _P.NewPartition, _P.OnlinePartition, StateChangeFailedException(msg))
                continue
            to_create[tp] = LeaderIsrAndControllerEpoch(LeaderAndIsr(live[0], live), ctx.epoch)
        try:  # called even with nothing to create, as Kafka does
            responses = self.zk_client.create_topic_partition_states_raw(to_create, ctx.epoch_zk_version)
        except ControllerMovedException:
            self.logger.error("Controller moved to another broker when trying to create the topic partition state znode", exc_info=True)
            raise
        except Exception as e:
            for tp in to_create:
                self._log_failed_state_change(tp, ctx.partition_state(tp), _P.NewPartition, e)
            return []
        done = []
        add = self.batch.add_leader_and_isr_request_for_brokers
        for response in responses:
            tp = response.ctx
            info = to_create[tp]
            if response.result_code is Code.OK:
                ctx.put_partition_leadership_info(tp, info)
                add(info.leader_and_isr.isr, tp, info, ctx.partition_full_replica_assignment(tp), True)
                done.append(tp)
            else:
                self._log_failed_state_change(tp, _P.NewPartition, _P.OnlinePartition, KeeperException.create(response.result_code))
        return done

    # ------------------------------------------------------------ elections

    def _elect_leader_for_partitions(
        self, partitions: list[TopicPartition], strategy: PartitionLeaderElectionStrategy
    ) -> ElectionResults:
        """PSM:328-352: rounds until no partition is left to retry (BADVERSION)."""
        remaining = partitions
        finished_elections: ElectionResults = {}
        while remaining:
            finished, to_retry = self._do_elect_leader_for_partitions(remaining, strategy)
            remaining = to_retry
            for tp, result in finished.items():
                if isinstance(result, Exception):
                    self._log_failed_state_change(tp, self.controller_context.partition_state(tp), _P.OnlinePartition, result)
            finished_elections.update(finished)
            if remaining:
                self.logger.info("Retrying leader election with strategy %s for partitions %s", strategy, _scala_seq(remaining))
        return finished_elections

    def _do_elect_leader_for_partitions(
        self, partitions: list[TopicPartition], strategy: PartitionLeaderElectionStrategy
    ) -> tuple[ElectionResults, list[TopicPartition]]:
        """PSM:366-457: one round."""
        ctx = self.controller_context
        try:
            responses = self.zk_client.get_topic_partition_states_raw(partitions)
        except Exception as e:
            return dict.fromkeys(partitions, e), []
        failed: ElectionResults = {}
        valid: list[tuple[TopicPartition, LeaderAndIsr]] = []
        for response in responses:
            tp = response.ctx
            code = response.result_code
            stored = decode_partition_state(response.data, response.stat) if code is Code.OK else None
            if stored is not None:
                if stored.controller_epoch > ctx.epoch:
                    failed[tp] = StateChangeFailedException(
                        f"Aborted leader election for partition {tp} since the LeaderAndIsr path was already "
                        f"written by another controller. This probably means that the current controller "
                        f"{self.controller_id} went through a soft failure and another controller was elected "
                        f"with epoch {stored.controller_epoch}."
                    )
                else:
                    valid.append((tp, stored.leader_and_isr))
            elif code is Code.OK or code is Code.NONODE:
                failed[tp] = StateChangeFailedException(
                    f"LeaderAndIsr information doesn't exist for partition {tp} in {ctx.partition_state(tp)} state"
                )
            else:
                failed[tp] = KeeperException.create(code, response.path)
        if not valid:
            return failed, []
        results = self._elect(valid, strategy)
        recipients: dict[TopicPartition, tuple[int, ...]] = {}
        adjusted: dict[TopicPartition, LeaderAndIsr] = {}
        for result in results:
            tp = result.topic_partition
            if result.leader_and_isr is None:
                failed[tp] = StateChangeFailedException(f"Failed to elect leader for partition {tp} under strategy {strategy}")
            else:
                recipients[tp] = result.live_replicas
                adjusted[tp] = result.leader_and_isr
        update = self.zk_client.update_leader_and_isr(adjusted, ctx.epoch, ctx.epoch_zk_version)
        add = self.batch.add_leader_and_isr_request_for_brokers
        for tp, outcome in update.finished_partitions.items():
            if isinstance(outcome, LeaderAndIsr):
                info = LeaderIsrAndControllerEpoch(outcome, ctx.epoch)
                ctx.put_partition_leadership_info(tp, info)
                add(recipients[tp], tp, info, ctx.partition_full_replica_assignment(tp), False)
        for tp in update.partitions_to_retry:
            self.logger.debug(
                "Controller failed to elect leader for partition %s. Attempted to write state %s, but failed with "
                "bad ZK version. This will be retried.", tp, adjusted[tp],
            )
        finished: ElectionResults = dict(update.finished_partitions)
        finished.update(failed)
        return finished, list(update.partitions_to_retry)

    def _elect(
        self, valid: list[tuple[TopicPartition, LeaderAndIsr]], strategy: PartitionLeaderElectionStrategy
    ) -> list[ElectionResult]:
        """PSM:411-427: the strategy's Election wrapper."""
        ctx, policy = self.controller_context, self.election_policy
        if isinstance(strategy, OfflinePartitionLeaderElectionStrategy):
            with_unclean = self._collect_unclean_leader_election_state(valid, strategy.allow_unclean)
            return leader_for_offline(ctx, self.is_leader_recovery_supported, with_unclean, policy)
        if isinstance(strategy, ReassignPartitionLeaderElectionStrategy):
            return leader_for_reassign(ctx, valid, policy)
        if isinstance(strategy, PreferredReplicaPartitionLeaderElectionStrategy):
            return leader_for_preferred_replica(ctx, valid, policy)
        if isinstance(strategy, ControlledShutdownPartitionLeaderElectionStrategy):
            return leader_for_controlled_shutdown(ctx, valid, policy)
        raise TypeError(f"leader_election_strategy must be one of the four strategies, not {strategy!r:.80}")

    def _collect_unclean_leader_election_state(
        self, leader_and_isrs: list[tuple[TopicPartition, LeaderAndIsr]], allow_unclean: bool
    ) -> list[tuple[TopicPartition, LeaderAndIsr | None, bool]]:
        """PSM:472-510."""
        online = self.controller_context.is_replica_online
        no_live_isr: list[tuple[TopicPartition, LeaderAndIsr]] = []
        live_isr: list[tuple[TopicPartition, LeaderAndIsr]] = []
        for tp, lai in leader_and_isrs:
            (live_isr if any(online(r, tp) for r in lai.isr) else no_live_isr).append((tp, lai))
        out: list[tuple[TopicPartition, LeaderAndIsr | None, bool]]
        if allow_unclean:
            out = [(tp, lai, True) for tp, lai in no_live_isr]
        else:
            topics = {tp.topic for tp, _ in no_live_isr}
            configs, failures = self.zk_client.get_log_configs(topics, self.config_originals)
            out = []
            for tp, lai in no_live_isr:
                failure = failures.get(tp.topic)
                if failure is not None:
                    self._log_failed_state_change(tp, self.controller_context.partition_state(tp), _P.OnlinePartition, failure)
                    out.append((tp, None, False))
                else:
                    out.append((tp, lai, configs[tp.topic].unclean_leader_election_enable))
        out.extend((tp, lai, False) for tp, lai in live_isr)
        return out

    # ------------------------------------------------------------------ logs

    def _state_log(self) -> logging.LoggerAdapter[logging.Logger]:
        prefix = f"[Controller id={self.controller_id} epoch={self.controller_context.epoch}] "
        return _Prefixed(self.state_change_logger, {"prefix": prefix})

    def _log_invalid_transition(self, tp: TopicPartition, target: PartitionState) -> None:
        """PSM:512-518."""
        current = self.controller_context.partition_state(tp)
        e = IllegalStateError(
            f"Partition {tp} should be in one of {','.join(map(str, target.valid_previous_states))} states before "
            f"moving to {target} state. Instead it is in {current} state"
        )
        self._log_failed_state_change(tp, current, target, e)

    def _log_failed_state_change(
        self, tp: TopicPartition, current: PartitionState, target: PartitionState, e: BaseException
    ) -> None:
        """PSM:520-529."""
        epoch = self.controller_context.epoch
        self._state_log().error(
            "Controller %s epoch %s failed to change state for partition %s from %s to %s: %s",
            self.controller_id, epoch, tp, current, target, f"{type(e).__name__}: {e}",
        )


class _Prefixed(logging.LoggerAdapter):  # type: ignore[type-arg]
    """Kafka's StateChangeLogger prefix, "[Controller id=<id> epoch=<epoch>] "."""

    def process(self, msg: object, kwargs: Mapping[str, object]) -> tuple[str, dict[str, object]]:
        extra = self.extra or {}
        return f"{extra.get('prefix', '')}{msg}", dict(kwargs)


_STRATEGIES = (
    OfflinePartitionLeaderElectionStrategy,
    ReassignPartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy,
    ControlledShutdownPartitionLeaderElectionStrategy,
)


def _checked_partitions(
    partitions: Iterable[TopicPartition], target_state: object, strategy: object
) -> list[TopicPartition]:
    """The edge checks Scala's types make for Kafka: a TypeError naming the parameter."""
    if not isinstance(target_state, PartitionState):
        raise TypeError(f"target_state must be a PartitionState, not {type(target_state).__name__} {target_state!r:.80}")
    if strategy is not None and not isinstance(strategy, _STRATEGIES):
        raise TypeError(
            "leader_election_strategy must be one of the four PartitionLeaderElectionStrategy values or None, "
            f"not {type(strategy).__name__} {strategy!r:.80}"
        )
    if isinstance(partitions, TopicPartition | str):
        raise TypeError(f"partitions must be a sequence of TopicPartition, not {type(partitions).__name__}")
    out = list(partitions)
    for tp in out:
        if type(tp) is not TopicPartition:
            raise TypeError(f"partitions must hold TopicPartition values, not {type(tp).__name__} {tp!r:.80}")
    return out


def _scala_set(ids: Iterable[int]) -> str:
    return "Set(" + ", ".join(map(str, sorted(ids))) + ")"


def _scala_seq(items: Iterable[object]) -> str:
    return "List(" + ", ".join(map(str, items)) + ")"
