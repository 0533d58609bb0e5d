"""ControllerBrokerRequestBatch: Kafka 3.9's AbstractControllerBrokerRequestBatch, ported.

Rules (kafka-controller-batch-semantics.md, cited CCM:line):
- new_batch() refuses a non-empty batch (LeaderAndIsr, then StopReplica, then UpdateMetadata
  brokers) and captures the context and metadata version; add_* need a captured context.
- Broker ids below 0 are dropped in every add; sends go only to live-or-shutting-down brokers.
- Every LeaderAndIsr add schedules UpdateMetadata for that partition to all live-or-shutting-down
  brokers, from the context's leadership (CCM:446). One UpdateMetadata partition map is shared.
- is_new and delete_partition are sticky within a batch; every other field: the last add wins.
- send_requests_to_brokers runs LeaderAndIsr, UpdateMetadata, StopReplica (delete, then
  non-delete below v3); each phase clears its maps when done; any failure is re-raised as
  IllegalStateError with the cause, leaving the unsent maps for clear().
Beyond Kafka: order is fixed (first-add order for partitions and topics, context order for
brokers; a set argument is taken sorted), and request bodies are encoded once and shared by
every broker that receives the same content: only the 8 broker-epoch bytes differ.
"""

from __future__ import annotations

import functools
import logging
import operator
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from ctrlbatch.context import IllegalStateError, MetadataVersion, TopicPartition
from ctrlbatch.context.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from ctrlbatch.context.replica_assignment import ReplicaAssignment
from ctrlbatch.requests import (
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    StopReplicaPartitionState,
    StopReplicaRequest,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)

from .builders import (
    LeaderAndIsrBuilder,
    SharedBody,
    StopReplicaBuilder,
    UpdateMetadataBuilder,
    epoch_offset,
)
from .events import (
    LeaderAndIsrResponseReceived,
    TopicDeletionStopReplicaResponseReceived,
    UpdateMetadataResponseReceived,
    UpdateType,
)
from .kafka_text import scala_map, scala_set, struct_text
from .transport import OutboundRequest, Transport
from .versions import (
    LEADER_RECOVERY_STATE_SINCE,
    leader_and_isr_version,
    stop_replica_version,
    update_metadata_version,
)

_log = logging.getLogger("ctrlbatch.batch")
# Trusted constructors (no converters): the values below are already tuples and ints.
_make_lair_state = LeaderAndIsrPartitionState.make
_make_umr_state = UpdateMetadataPartitionState.make
_leader_of = operator.attrgetter("leader")
STATE_CHANGE_LOGGER = "state.change.logger"
_NOT_EMPTY = "Controller to broker state change requests batch is not empty while creating a new one. "
_PLAINTEXT = "PLAINTEXT"


class _StateChangeLog:
    """Kafka's StateChangeLogger.withControllerEpoch: a "[Controller id=N epoch=E] " prefix."""

    __slots__ = ("logger", "prefix")

    def __init__(self, logger: logging.Logger, controller_id: int, epoch: int) -> None:
        self.logger = logger
        self.prefix = f"[Controller id={controller_id} epoch={epoch}] "

    def info(self, msg: str) -> None:
        self.logger.info(self.prefix + msg)

    def debug_enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.DEBUG)

    def debug(self, msg: str) -> None:
        self.logger.debug(self.prefix + msg)


def _ordered(partitions: Iterable[TopicPartition]) -> Iterable[TopicPartition]:
    """Keep a sequence's order; take a set sorted, since its own order varies between runs."""
    if isinstance(partitions, set | frozenset):
        return sorted(partitions)
    return partitions


class ControllerBrokerRequestBatch:
    """Accumulates control requests per broker and sends them in one dispatch."""

    def __init__(
        self,
        controller_id: int,
        context: Any,
        metadata_version: MetadataVersion | Callable[[], MetadataVersion],
        transport: Transport,
        *,
        on_event: Callable[[Any], None] | None = None,
        kraft_controller: bool = False,
        inter_broker_listener_name: str = "PLAINTEXT",
        state_change_logger: logging.Logger | None = None,
    ) -> None:
        self.controller_id = controller_id
        self.context_provider = context
        self.metadata_version_provider = metadata_version
        self.transport = transport
        self.on_event = on_event
        self.kraft_controller = kraft_controller
        self.inter_broker_listener_name = inter_broker_listener_name
        self.state_change_logger = state_change_logger or logging.getLogger(STATE_CHANGE_LOGGER)
        self.events: list[Any] = []
        """Events received while on_event is None."""
        self.leader_and_isr_request_map: dict[int, dict[TopicPartition, LeaderAndIsrPartitionState]] = {}
        self.stop_replica_request_map: dict[int, dict[TopicPartition, StopReplicaPartitionState]] = {}
        self.update_metadata_request_broker_set: dict[int, None] = {}
        """An insertion-ordered set (dict keys)."""
        self.update_metadata_request_partition_info_map: dict[TopicPartition, UpdateMetadataPartitionState] = {}
        self.update_type = UpdateType.UNKNOWN
        self.metadata_instance: Any = None
        self.metadata_version: MetadataVersion | None = None
        self._membership_seen: object = None
        self._recovery_gate = False
        self._has_membership_version = False
        self._update_metadata_view: Callable[[TopicPartition], Any] | None = None
        # Brokers holding an is_new LeaderAndIsr state / a delete StopReplica state: only for
        # them can a later add meet a sticky flag.
        self._lair_new_brokers: set[int] = set()
        self._sr_delete_brokers: set[int] = set()

    # ------------------------------------------------------------------ lifecycle

    def new_batch(self) -> None:
        if self.leader_and_isr_request_map:
            raise IllegalStateError(
                _NOT_EMPTY + f"Some LeaderAndIsr state changes {scala_map(self.leader_and_isr_request_map)} might be lost "
            )
        if self.stop_replica_request_map:
            raise IllegalStateError(
                _NOT_EMPTY + f"Some StopReplica state changes {scala_map(self.stop_replica_request_map)} might be lost "
            )
        if self.update_metadata_request_broker_set:
            raise IllegalStateError(
                _NOT_EMPTY
                + f"Some UpdateMetadata state changes to brokers {scala_set(self.update_metadata_request_broker_set)} "
                f"with partition info {scala_map(self.update_metadata_request_partition_info_map)} might be lost "
            )
        ctx = self.context_provider
        self.metadata_instance = ctx() if callable(ctx) else ctx
        mv = self.metadata_version_provider
        self.metadata_version = mv() if callable(mv) else mv
        self._membership_seen = None
        self._recovery_gate = self.metadata_version.is_at_least(LEADER_RECOVERY_STATE_SINCE)
        # Optional hints of ControllerContext (any ControllerChannelContext works without them).
        self._has_membership_version = hasattr(self.metadata_instance, "broker_membership_version")
        self._update_metadata_view = getattr(self.metadata_instance, "update_metadata_view", None)
        self._bind(self.metadata_instance)

    def _bind(self, ctx: Any) -> None:
        """Bound look-ups of the captured context, taken once per batch for the hot adds."""
        self._leadership_of = ctx.partition_leadership_info
        self._assignment_of = ctx.partition_replica_assignment
        self._queued_for_deletion = ctx.is_topic_queued_up_for_deletion

    def set_update_type(self, update_type: UpdateType) -> None:
        self.update_type = UpdateType(update_type)

    def clear(self) -> None:
        self.leader_and_isr_request_map.clear()
        self.stop_replica_request_map.clear()
        self.update_metadata_request_broker_set.clear()
        self.update_metadata_request_partition_info_map.clear()
        self.metadata_instance = None
        self.update_type = UpdateType.UNKNOWN
        self._membership_seen = None
        self._lair_new_brokers.clear()
        self._sr_delete_brokers.clear()

    def _ctx(self) -> Any:
        ctx = self.metadata_instance
        if ctx is None:
            raise IllegalStateError("new_batch() must be called before adding requests to the batch")
        return ctx

    # ------------------------------------------------------------------ adds

    def add_leader_and_isr_request_for_brokers(
        self,
        broker_ids: Iterable[int],
        topic_partition: TopicPartition,
        leader_isr_and_controller_epoch: LeaderIsrAndControllerEpoch,
        replica_assignment: ReplicaAssignment,
        is_new: bool,
    ) -> None:
        ctx = self.metadata_instance
        if ctx is None:
            self._ctx()
        lai: LeaderAndIsr = leader_isr_and_controller_epoch.leader_and_isr
        state = _make_lair_state(
            topic_partition.topic,
            topic_partition.partition,
            leader_isr_and_controller_epoch.controller_epoch,
            lai.leader,
            lai.leader_epoch,
            lai.isr,  # tuples: LeaderAndIsr and ReplicaAssignment convert on construction
            lai.partition_epoch,
            replica_assignment.replicas,
            replica_assignment.adding_replicas,
            replica_assignment.removing_replicas,
            is_new is True or bool(is_new),
            int(lai.leader_recovery_state) if self._recovery_gate else 0,
            (),
        )
        requests = self.leader_and_isr_request_map
        new_brokers = self._lair_new_brokers
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            if broker_id in requests:
                inner = requests[broker_id]
            else:
                inner = requests[broker_id] = {}
            if is_new:
                new_brokers.add(broker_id)
            elif broker_id in new_brokers:
                prev = inner.get(topic_partition)
                if prev is not None and prev.is_new:
                    # is_new is sticky within a batch (CCM:424)
                    inner[topic_partition] = attrs.evolve(state, is_new=True)
                    continue
            inner[topic_partition] = state
        # CCM:446: always, to every live-or-shutting-down broker, from the context.
        if self._has_membership_version:
            version = ctx.broker_membership_version
            if version != self._membership_seen:
                self._add_brokers(ctx.live_or_shutting_down_broker_ids)
                self._membership_seen = version
        else:
            self._add_brokers(ctx.live_or_shutting_down_broker_ids)
        self._add_update_metadata_partition(ctx, topic_partition)

    def add_update_metadata_request_for_brokers(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] = ()
    ) -> None:
        ctx = self._ctx()
        self._add_brokers(broker_ids)
        for tp in _ordered(partitions):
            self._add_update_metadata_partition(ctx, tp)

    def add_update_metadata_request_for_brokers_with_state(
        self,
        broker_ids: Iterable[int],
        tp: TopicPartition,
        *,
        controller_epoch: int,
        leader: int,
        leader_epoch: int,
        partition_epoch: int,
        isr: Iterable[int],
        replicas: Iterable[int],
        offline_replicas: Iterable[int],
    ) -> None:
        """Kafka's third overload (CCM:492-513): add the brokers (ids >= 0) and store this explicit
        partition state for tp (zkVersion = partition_epoch, CCM:509), replacing any earlier one.

        For callers that know the state already (a replayed log), not from the context."""
        self._ctx()
        self._add_brokers(broker_ids)
        self.update_metadata_request_partition_info_map[tp] = _make_umr_state(
            tp.topic, tp.partition, controller_epoch, leader, leader_epoch, tuple(isr), partition_epoch,
            tuple(replicas), tuple(offline_replicas), (),
        )

    def _add_brokers(self, broker_ids: Iterable[int]) -> None:
        brokers = self.update_metadata_request_broker_set
        for b in broker_ids:
            if b >= 0:
                brokers[b] = None

    def _add_update_metadata_partition(self, ctx: Any, tp: TopicPartition) -> None:
        """CCM:466-486 (a), for one partition: its state from the context's leadership, with
        the offline replicas, and leader -2 (epochs 0) while its topic is queued for deletion."""
        if self._update_metadata_view is not None:
            view = self._update_metadata_view(tp)
            if view is None:
                _log.info("Leader not yet assigned for partition %s. Skip sending UpdateMetadataRequest.", tp)
                return
            info, replicas, offline, queued = view
        else:
            info = self._leadership_of(tp)
            if info is None:
                _log.info("Leader not yet assigned for partition %s. Skip sending UpdateMetadataRequest.", tp)
                return
            replicas = tuple(self._assignment_of(tp))
            online = ctx.is_replica_online
            offline = tuple([r for r in replicas if not online(r, tp)])
            queued = self._queued_for_deletion(tp.topic)
        lai = info.leader_and_isr
        if queued:
            leader, leader_epoch, partition_epoch = LeaderAndIsr.LEADER_DURING_DELETE, 0, 0
        else:
            leader, leader_epoch, partition_epoch = lai.leader, lai.leader_epoch, lai.partition_epoch
        self.update_metadata_request_partition_info_map[tp] = _make_umr_state(
            tp.topic, tp.partition, info.controller_epoch, leader, leader_epoch, lai.isr, partition_epoch, replicas, offline, ()
        )

    def add_stop_replica_request_for_brokers(
        self, broker_ids: Iterable[int], topic_partition: TopicPartition, delete_partition: bool
    ) -> None:
        ctx = self._ctx()
        state = StopReplicaPartitionState(topic_partition.partition, ctx.leader_epoch(topic_partition), bool(delete_partition))
        sticky: StopReplicaPartitionState | None = None
        requests = self.stop_replica_request_map
        delete_brokers = self._sr_delete_brokers
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            if delete_partition:
                delete_brokers.add(broker_id)
            inner = requests.get(broker_id)
            if inner is None:
                inner = requests[broker_id] = {}
            elif not delete_partition and broker_id in delete_brokers:
                prev = inner.get(topic_partition)
                if prev is not None and prev.delete_partition:
                    if sticky is None:
                        sticky = attrs.evolve(state, delete_partition=True)
                    inner[topic_partition] = sticky
                    continue
            inner[topic_partition] = state

    # ------------------------------------------------------------------ send

    def send_requests_to_brokers(self, controller_epoch: int) -> None:
        try:
            log = _StateChangeLog(self.state_change_logger, self.controller_id, controller_epoch)
            self._send_leader_and_isr(controller_epoch, log)
            self._send_update_metadata(controller_epoch, log)
            self._send_stop_replica(controller_epoch, log)
            self.update_type = UpdateType.UNKNOWN
        except Exception as e:
            cause = f"{type(e).__name__}: {e}"
            if self.leader_and_isr_request_map:
                _log.error(
                    "Haven't been able to send leader and isr requests, current state of the map is %s. Exception message: %s",
                    scala_map(self.leader_and_isr_request_map), cause,
                )
            if self.update_metadata_request_broker_set:
                _log.error(
                    "Haven't been able to send metadata update requests to brokers %s, current state of the partition info is %s. Exception message: %s",
                    scala_set(self.update_metadata_request_broker_set),
                    scala_map(self.update_metadata_request_partition_info_map), cause,
                )
            if self.stop_replica_request_map:
                _log.error(
                    "Haven't been able to send stop replica requests, current state of the map is %s. Exception message: %s",
                    scala_map(self.stop_replica_request_map), cause,
                )
            raise IllegalStateError(cause) from e

    def _send_leader_and_isr(self, controller_epoch: int, log: _StateChangeLog) -> None:
        ctx = self._ctx()
        version = leader_and_isr_version(self._mv())
        live_ids = ctx.live_or_shutting_down_broker_ids
        epochs = ctx.live_broker_id_and_epochs
        topic_ids = dict(ctx.topic_ids)  # a snapshot shared by this send's builders
        listener = self.inter_broker_listener_name
        live_brokers = list(ctx.live_or_shutting_down_brokers)
        leaders_cache: dict[Any, LeaderAndIsrLiveLeader] = {}  # Broker -> its node on the listener
        offset = epoch_offset(LeaderAndIsrRequest, version)
        memo: dict[Any, bytes] = {}  # a partition state's bytes, once for all the brokers that get it
        shared: dict[tuple[int, ...], tuple[LeaderAndIsrBuilder, SharedBody]] = {}
        for broker, states in self.leader_and_isr_request_map.items():
            if broker not in live_ids:
                continue
            leaders = list(map(_leader_of, states.values()))
            leader_ids = set(leaders)
            become_leader = leaders.count(broker)
            if log.debug_enabled():
                for tp, s in states.items():
                    kind = "become-leader" if s.leader == broker else "become-follower"
                    log.debug(f"Sending {kind} LeaderAndIsr request {struct_text(s)} to broker {broker} for partition {tp}")
            log.info(
                f"Sending LeaderAndIsr request to broker {broker} with {become_leader} become-leader and "
                f"{len(states) - become_leader} become-follower partitions"
            )
            broker_epoch = epochs[broker]
            key = tuple(map(id, states.values()))
            entry = shared.get(key)
            if entry is None:
                # CCM:544-546: a set of Nodes, one per live Broker value whose id leads here
                # (two registrations of one id give two nodes unless they are equal).
                live_leaders: dict[LeaderAndIsrLiveLeader, None] = {}
                for b in live_brokers:
                    if b.id in leader_ids:
                        node = leaders_cache.get(b)
                        if node is None:
                            n = b.node(listener)
                            node = leaders_cache[b] = LeaderAndIsrLiveLeader(n.id, n.host, n.port)
                        live_leaders[node] = None
                builder = LeaderAndIsrBuilder(
                    version, self.controller_id, controller_epoch, list(states.values()),
                    topic_ids, tuple(live_leaders), self.kraft_controller, int(self.update_type),
                )
                entry = shared[key] = (builder, SharedBody(builder.encode_body(broker_epoch, memo), offset))
            callback = functools.partial(self._handle_leader_and_isr_response, broker)
            self.transport.send(broker, OutboundRequest(entry[0], broker_epoch, entry[1]), callback)
        self.leader_and_isr_request_map.clear()
        self._lair_new_brokers.clear()

    def _send_update_metadata(self, controller_epoch: int, log: _StateChangeLog) -> None:
        ctx = self._ctx()
        partitions = self.update_metadata_request_partition_info_map
        log.info(
            f"Sending UpdateMetadata request to brokers {scala_set(self.update_metadata_request_broker_set)} "
            f"for {len(partitions)} partitions"
        )
        version = update_metadata_version(self._mv())
        live_brokers = tuple(self._update_metadata_broker(b, version) for b in ctx.live_or_shutting_down_brokers)
        live_ids = ctx.live_or_shutting_down_broker_ids
        destinations = [b for b in self.update_metadata_request_broker_set if b in live_ids]
        if destinations:
            epochs = ctx.live_broker_id_and_epochs
            topic_ids = ctx.topic_ids
            states = list(partitions.values())
            topics = {s.topic_name: None for s in states}
            builder = UpdateMetadataBuilder(
                version, self.controller_id, controller_epoch, states, live_brokers,
                {t: topic_ids[t] for t in topics if t in topic_ids}, self.kraft_controller, int(self.update_type),
            )
            body = SharedBody(builder.encode_body(epochs[destinations[0]], {}), epoch_offset(UpdateMetadataRequest, version))
            for broker in destinations:
                callback = functools.partial(self._handle_update_metadata_response, broker)
                self.transport.send(broker, OutboundRequest(builder, epochs[broker], body), callback)
        self.update_metadata_request_broker_set.clear()
        partitions.clear()
        self._membership_seen = None

    @staticmethod
    def _update_metadata_broker(broker: Any, version: int) -> UpdateMetadataBroker:
        endpoints: tuple[UpdateMetadataEndpoint, ...]
        if version == 0:
            node = broker.node(_PLAINTEXT)
            endpoints = (UpdateMetadataEndpoint(port=node.port, host=node.host, listener=_PLAINTEXT, security_protocol=0),)
        else:
            endpoints = tuple(
                UpdateMetadataEndpoint(port=e.port, host=e.host, listener=e.listener_name, security_protocol=int(e.security_protocol))
                for e in broker.endpoints
            )
        return UpdateMetadataBroker(id=broker.id, endpoints=endpoints, rack=broker.rack)

    def _send_stop_replica(self, controller_epoch: int, log: _StateChangeLog) -> None:
        ctx = self._ctx()
        version = stop_replica_version(self._mv())
        live_ids = ctx.live_or_shutting_down_broker_ids
        epochs = ctx.live_broker_id_and_epochs
        offset = epoch_offset(StopReplicaRequest, version)
        for broker, states in self.stop_replica_request_map.items():
            if broker not in live_ids:
                continue
            if log.debug_enabled():
                for tp, s in states.items():
                    log.debug(f"Sending StopReplica request {struct_text(s)} to broker {broker} for partition {tp}")
            broker_epoch = epochs[broker]
            if version >= 3:
                log.info(f"Sending StopReplica request for {len(states)} replicas to broker {broker}")
                deleted = frozenset(tp for tp, s in states.items() if s.delete_partition)
                self._send_stop_replica_to(broker, broker_epoch, version, offset, controller_epoch, False, states, deleted)
            else:
                delete = {tp: s for tp, s in states.items() if s.delete_partition}
                keep = {tp: s for tp, s in states.items() if not s.delete_partition}
                if delete:
                    log.info(f"Sending StopReplica request (delete = true) for {len(delete)} replicas to broker {broker}")
                    self._send_stop_replica_to(broker, broker_epoch, version, offset, controller_epoch, True, delete, None)
                if keep:
                    log.info(f"Sending StopReplica request (delete = false) for {len(keep)} replicas to broker {broker}")
                    self._send_stop_replica_to(broker, broker_epoch, version, offset, controller_epoch, False, keep, False)
        self.stop_replica_request_map.clear()
        self._sr_delete_brokers.clear()

    def _send_stop_replica_to(
        self,
        broker: int,
        broker_epoch: int,
        version: int,
        offset: int | None,
        controller_epoch: int,
        delete: bool,
        states: dict[TopicPartition, StopReplicaPartitionState],
        deleted: frozenset[TopicPartition] | None | bool,
    ) -> None:
        """deleted: the partitions the callback counts as deleted (v3+), None for all (the delete
        request below v3), False for no callback (the non-delete request below v3)."""
        groups: dict[str, list[StopReplicaPartitionState]] = {}
        for tp, s in states.items():
            groups.setdefault(tp.topic, []).append(s)
        builder = StopReplicaBuilder(version, self.controller_id, controller_epoch, delete, list(groups.items()), self.kraft_controller)
        body = SharedBody(builder.encode_body(broker_epoch, {}), offset)
        callback = None
        if deleted is None or isinstance(deleted, frozenset):
            callback = functools.partial(self._handle_stop_replica_response, broker, deleted, self.metadata_instance)
        self.transport.send(broker, OutboundRequest(builder, broker_epoch, body), callback)

    def _mv(self) -> MetadataVersion:
        mv = self.metadata_version
        if mv is None:
            raise IllegalStateError("new_batch() must be called before sending the batch")
        return mv

    # ------------------------------------------------------------------ responses

    def _emit(self, event: Any) -> None:
        if self.on_event is None:
            self.events.append(event)
        else:
            self.on_event(event)

    def _handle_leader_and_isr_response(self, broker_id: int, response: Any) -> None:
        self._emit(LeaderAndIsrResponseReceived(response, broker_id))

    def _handle_update_metadata_response(self, broker_id: int, response: Any) -> None:
        self._emit(UpdateMetadataResponseReceived(response, broker_id))

    def _handle_stop_replica_response(
        self, broker_id: int, deleted: frozenset[TopicPartition] | None, ctx_at_send: Any, response: Any
    ) -> None:
        """CCM:657-670: keep partitions whose topic deletion has started (read now, not at send)
        and that were deleted in this request; an event only if any are left (CCM:353-357)."""
        ctx = self.metadata_instance if self.metadata_instance is not None else ctx_at_send
        errors: dict[TopicPartition, int] = {}
        for pe in response.partition_errors:
            tp = TopicPartition(pe.topic_name, pe.partition_index)
            if ctx.is_topic_deletion_in_progress(pe.topic_name) and (deleted is None or tp in deleted):
                errors[tp] = pe.error_code
        if errors:
            self._emit(TopicDeletionStopReplicaResponseReceived(broker_id, response.error_code, errors))
