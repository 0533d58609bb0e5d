"""KafkaController: Kafka 3.9's ZooKeeper-mode controller event handlers, sans-I/O.

Rules (KC = core/src/main/scala/kafka/controller/KafkaController.scala at 3.9; reference
kafka-zk-controller.md §5):
- One controller per broker id over a ``KafkaZkClient``; it reaches brokers only through three
  ControllerBrokerRequestBatch instances (its own, the PSM's and the RSM's, KC:144-149) whose
  transport is the caller's ``Channel``. Their responses become events (CCM:345-357).
- Events go through ControllerEventManager; the driver calls ``process_events()`` (no thread).
  ``process`` dispatches by a table (KC:2546-2605); ControllerMovedException -> ``maybe_resign``,
  any other exception is logged. Almost every handler returns at once when not active.
- Election and failover (KC:1547-1582, 285-339, 951-1037): ``elect`` registers /controller and
  bumps the epoch, then ``on_controller_failover``: watches, notification cleanup, the context
  rebuilt from the store, deletions, UpdateMetadata with no partitions to every broker, RSM then
  PSM startup, reassignments, deletions, pending preferred elections, then the auto rebalance in
  5 s. Errors other than ControllerMovedException -> ``trigger_controller_move`` (resign and a
  fenced delete of /controller). Resignation (KC:509-539) drops the watches, the scheduled task,
  the channel's brokers and the context.
- The handlers live by concern: broker_changes.py (membership, controlled shutdown, log dirs,
  LeaderAndIsr responses), topic_changes.py (topics, partitions, deletion), reassignment.py
  (KIP-455), leader_balance.py (preferred/unclean/auto elections), alter_partition.py (ISR changes).
- Scheduler: the auto-rebalance task is a due time; ``next_scheduled_ms()`` tells the driver when,
  ``run_scheduled(now_ms)`` enqueues AutoPreferredReplicaLeaderElection when due (KC:499-503).
- Beyond Kafka: no metrics gauges and no feature-versioning znode (KC:286, 340-497; not a
  controller decision); the controller's own broker registration (RegisterBrokerAndReelect's
  ``registerBroker``) is the broker's job and left to the embedder, so that event only re-elects.
- ``on_event(event)``, if given, sees every event as it is enqueued (a driver's wake-up hook).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ctrlbatch.batch import ControllerBrokerRequestBatch
from ctrlbatch.context import ControllerContext, IllegalStateError, TopicPartition

from . import alter_partition, broker_changes, leader_balance, reassignment, topic_changes
from .api_errors import ApiError, Errors
from .channel import Channel
from .config import ControllerConfig
from .election import KAFKA_ELECTION_POLICY, ElectionPolicy
from .errors import ControllerMovedException
from .event_manager import ControllerEventManager, QueuedEvent
from .events import (
    AlterPartitionReceived,
    AlterReassignmentsCallback,
    ApiPartitionReassignment,
    AutoPreferredReplicaLeaderElection,
    BrokerChange,
    BrokerModifications,
    ControlledShutdown,
    ControlledShutdownCallback,
    ControllerChange,
    ControllerState,
    ElectionTrigger,
    ElectionType,
    ElectLeadersCallback,
    Expire,
    IsrChangeNotification,
    LeaderAndIsrResponseReceived,
    ListPartitionReassignments,
    ListReassignmentsCallback,
    LogDirEventNotification,
    PartitionModifications,
    PartitionReassignmentIsrChange,
    Reelect,
    RegisterBrokerAndReelect,
    ReplicaLeaderElection,
    ShutdownEventThread,
    Startup,
    TopicChange,
    TopicDeletion,
    TopicDeletionStopReplicaResponseReceived,
    TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
    UpdateMetadataResponseReceived,
    ZkPartitionReassignment,
    preempt,
)
from .partition_state_machine import ZkPartitionStateMachine
from .replica_state_machine import ZkReplicaStateMachine
from .store import UNCLEAN_LEADER_ELECTION_ENABLE, KafkaZkClient, StateChangeHandler
from .topic_deletion_manager import TopicDeletionManager
from .zk_handlers import ControllerHandlers, NodeHandler

__all__ = ["AUTO_REBALANCE_FIRST_DELAY_MS", "KafkaController"]

AUTO_REBALANCE_FIRST_DELAY_MS = 5_000
"""KC:326-329: the first auto rebalance runs 5 s after a failover."""


class KafkaController:
    """Kafka's ZooKeeper-mode controller (see the module rules).

        controller = KafkaController(ControllerConfig(broker_id=0), store, channel)
        controller.startup()
        controller.process_events()
    """

    def __init__(
        self,
        config: ControllerConfig,
        zk_client: KafkaZkClient,
        channel: Channel,
        *,
        clock_ms: Callable[[], int] | None = None,
        election_policy: ElectionPolicy | None = None,
        on_event: Callable[[Any], None] | None = None,
    ) -> None:
        if not isinstance(config, ControllerConfig):
            raise TypeError(f"config must be a ControllerConfig, not {type(config).__name__}")
        for name in ("send", "add_broker", "remove_broker"):
            if not callable(getattr(channel, name, None)):
                raise TypeError(f"channel must have send, add_broker and remove_broker; {type(channel).__name__} lacks {name}")
        self.config = config
        self.zk_client = zk_client
        self.channel = channel
        self.clock_ms: Callable[[], int] = clock_ms if clock_ms is not None else _zero_clock
        self.election_policy = election_policy if election_policy is not None else KAFKA_ELECTION_POLICY
        self.on_event = on_event
        self.logger = logging.getLogger("kafka.controller.KafkaController")
        self.log_prefix = f"[Controller id={config.broker_id}] "

        self.context = ControllerContext()
        self.event_manager = ControllerEventManager(config.broker_id, self, self.clock_ms)
        mv = config.inter_broker_protocol_version
        self.broker_request_batch = self._new_batch()
        self.replica_state_machine = ZkReplicaStateMachine(config.broker_id, self.context, zk_client, self._new_batch())
        self.partition_state_machine = ZkPartitionStateMachine(
            config.broker_id, self.context, zk_client, self._new_batch(),
            metadata_version=mv,
            config_originals={UNCLEAN_LEADER_ELECTION_ENABLE: config.unclean_leader_election_enable},
            election_policy=self.election_policy,
        )
        self.topic_deletion_manager = TopicDeletionManager(
            self.context, self.replica_state_machine, self.partition_state_machine,
            topic_changes.controller_deletion_client(self),
            delete_topic_enable=config.delete_topic_enable,
        )
        self.handlers = ControllerHandlers(self.put)
        self.broker_modifications_handlers: dict[int, NodeHandler] = {}
        self.partition_modifications_handlers: dict[str, NodeHandler] = {}
        self.active_controller_id = -1
        self.channel_brokers: set[int] = set()
        self._auto_rebalance_due_ms: int | None = None

    def _new_batch(self) -> ControllerBrokerRequestBatch:
        return ControllerBrokerRequestBatch(
            self.config.broker_id, self.context, self.config.inter_broker_protocol_version, self.channel,
            on_event=self._put_response_event, kraft_controller=False,
        )

    def __repr__(self) -> str:
        role = "active" if self.is_active else f"inactive (controller {self.active_controller_id})"
        return f"<KafkaController {self.config.broker_id} {role}, epoch {self.epoch}, {len(self.event_manager)} queued>"

    # ------------------------------------------------------------------ public driver API

    @property
    def is_active(self) -> bool:
        """KC:223: this broker is the controller."""
        return self.active_controller_id == self.config.broker_id

    @property
    def epoch(self) -> int:
        return self.context.epoch

    @property
    def state(self) -> ControllerState:
        return self.event_manager.state

    def startup(self) -> None:
        """KC:234-248: watch the store session, enqueue Startup (process_events() then elects)."""
        self.zk_client.register_state_change_handler(_SessionHandler(self))
        self.put(Startup())

    def shutdown(self) -> None:
        """KC:255-262: preempt what is queued, resign."""
        self.event_manager.close()
        self.on_controller_resignation()

    def put(self, event: Any) -> QueuedEvent:
        """Enqueue an event (the store's watches, the batches' responses and the request entry
        points all come through here)."""
        queued = self.event_manager.put(event)
        if self.on_event is not None:
            self.on_event(event)
        return queued

    def _put_response_event(self, event: Any) -> None:
        """The batches' on_event: a response became an event (CCM:345-357)."""
        self.put(event)

    def clear_and_put(self, event: Any) -> QueuedEvent:
        queued = self.event_manager.clear_and_put(event)
        if self.on_event is not None:
            self.on_event(event)
        return queued

    def expire(self) -> QueuedEvent:
        """The controller's store session expired (KC:235-245): preempt everything, then Expire."""
        return self.clear_and_put(Expire())

    def session_reestablished(self) -> QueuedEvent:
        """The store session is back (KC:237-239): RegisterBrokerAndReelect."""
        return self.put(RegisterBrokerAndReelect())

    def process_events(self, max_events: int = 1_000_000) -> int:
        """Run queued events (and those they enqueue) until none is left; returns how many ran."""
        return self.event_manager.process_events(max_events)

    def next_scheduled_ms(self) -> int | None:
        """When the auto leader rebalance task is due (clock_ms time), or None."""
        return self._auto_rebalance_due_ms

    def run_scheduled(self, now_ms: int) -> int:
        """Enqueue the scheduled tasks due at ``now_ms`` (KC:499-503); returns how many."""
        due = self._auto_rebalance_due_ms
        if due is None or now_ms < due:
            return 0
        self._auto_rebalance_due_ms = None
        self.put(AutoPreferredReplicaLeaderElection())
        return 1

    def schedule_auto_leader_rebalance_task(self, delay_ms: int) -> None:
        self._auto_rebalance_due_ms = self.clock_ms() + delay_ms

    # request entry points (KC:248-266, 2178-2199, 2276-2286)

    def controlled_shutdown(self, broker_id: int, broker_epoch: int, callback: ControlledShutdownCallback) -> None:
        """The callback gets the partitions the broker still leads, or the exception."""
        self.put(ControlledShutdown(broker_id, broker_epoch, callback))

    def elect_leaders(
        self, partitions: Iterable[TopicPartition], election_type: ElectionType, callback: ElectLeadersCallback
    ) -> None:
        """ElectLeaders (admin): callback gets {partition: new leader id or ApiError}."""
        self.put(ReplicaLeaderElection(
            frozenset(partitions), ElectionType(election_type), ElectionTrigger.ADMIN_CLIENT_TRIGGERED, callback
        ))

    def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int] | None], callback: AlterReassignmentsCallback
    ) -> None:
        """AlterPartitionReassignments: None cancels; callback gets {partition: ApiError} or an ApiError."""
        self.put(ApiPartitionReassignment(dict(reassignments), callback))

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None, callback: ListReassignmentsCallback
    ) -> None:
        self.put(ListPartitionReassignments(None if partitions is None else frozenset(partitions), callback))

    def alter_partition(self, request: alter_partition.AlterPartitionRequest, version: int,
                        callback: Callable[[alter_partition.AlterPartitionResponse], None]) -> None:
        """AlterPartition from a partition leader (KC:2276-2286)."""
        self.put(AlterPartitionReceived(request, version, callback))

    def enable_default_unclean_leader_election(self) -> None:
        """KC:257-259: the broker default flipped to true (DynamicBrokerConfig.scala:760-765); the
        partition state machine reads it as the default under each topic's config from now on."""
        self.partition_state_machine.config_originals = {UNCLEAN_LEADER_ELECTION_ENABLE: True}
        self.put(UncleanLeaderElectionEnable())

    def enable_topic_unclean_leader_election(self, topic: str) -> None:
        """KC:262-266: a topic config set it to true (only on the active controller)."""
        if self.is_active:
            self.put(TopicUncleanLeaderElectionEnable(topic))

    # ------------------------------------------------------------------ event processing

    def process(self, event: Any) -> None:
        """KC:2546-2611."""
        handler = _DISPATCH.get(type(event))
        try:
            if handler is None:
                self.logger.error("%sReceived an unknown event %.200r", self.log_prefix, event)
            else:
                handler(self, event)
        except ControllerMovedException:
            self.logger.info("%sController moved to another broker when processing %.200r.", self.log_prefix, event,
                             exc_info=True)
            self.maybe_resign()
        except Exception:
            self.logger.error("%sError processing event %.200r", self.log_prefix, event, exc_info=True)

    def preempt(self, event: Any) -> None:
        preempt(event)

    # ------------------------------------------------------------------ election and failover

    def process_startup(self) -> None:
        """KC:1473-1476."""
        self.zk_client.register_znode_change_handler_and_check_existence(self.handlers.controller_change)
        self.elect()

    def elect(self) -> None:
        """KC:1547-1582."""
        self.active_controller_id = _or_minus_one(self.zk_client.get_controller_id())
        if self.active_controller_id != -1:
            self.logger.debug("%sBroker %d has been elected as the controller, so stopping the election process.",
                              self.log_prefix, self.active_controller_id)
            return
        try:
            epoch, epoch_zk_version = self.zk_client.register_controller_and_increment_controller_epoch(self.config.broker_id)
            self.context.epoch = epoch
            self.context.epoch_zk_version = epoch_zk_version
            self.active_controller_id = self.config.broker_id
            self.logger.info("%s%d successfully elected as the controller. Epoch incremented to %d and epoch zk version is now %d",
                             self.log_prefix, self.config.broker_id, epoch, epoch_zk_version)
            self.on_controller_failover()
        except ControllerMovedException:
            self.maybe_resign()
            if self.active_controller_id != -1:
                self.logger.debug("%sBroker %d was elected as controller instead of broker %d", self.log_prefix,
                                  self.active_controller_id, self.config.broker_id)
            else:
                self.logger.warning("%sA controller has been elected but just resigned, this will result in another round of election",
                                    self.log_prefix)
        except Exception:
            self.logger.error("%sError while electing or becoming controller on broker %d. Trigger controller movement immediately",
                              self.log_prefix, self.config.broker_id, exc_info=True)
            self.trigger_controller_move()

    def on_controller_failover(self) -> None:
        """KC:285-339 (feature versioning and token expiry left out)."""
        zk, h, ctx = self.zk_client, self.handlers, self.context
        for child_handler in (h.broker_change, h.topic_change, h.topic_deletion, h.log_dir_event_notification,
                              h.isr_change_notification):
            zk.register_znode_child_change_handler(child_handler)
        for node_handler in (h.preferred_replica_election, h.partition_reassignment):
            zk.register_znode_change_handler_and_check_existence(node_handler)
        zk.delete_log_dir_event_notifications(None, ctx.epoch_zk_version)
        zk.delete_isr_change_notifications(None, ctx.epoch_zk_version)
        self.initialize_controller_context()
        topics_to_be_deleted, topics_ineligible = self.fetch_topic_deletions_in_progress()
        self.topic_deletion_manager.init(topics_to_be_deleted, topics_ineligible)
        # Brokers must learn the live brokers before the state machines' LeaderAndIsr (KC:309-314).
        self.send_update_metadata_request(list(ctx.live_or_shutting_down_broker_ids), ())
        self.replica_state_machine.startup()
        self.partition_state_machine.startup()
        self.logger.info("%sReady to serve as the new controller with epoch %d", self.log_prefix, self.epoch)
        reassignment.initialize_partition_reassignments(self)
        self.topic_deletion_manager.try_topic_deletion()
        pending = self.fetch_pending_preferred_replica_elections()
        leader_balance.on_replica_election(self, pending, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED)
        if self.config.auto_leader_rebalance_enable:
            self.schedule_auto_leader_rebalance_task(AUTO_REBALANCE_FIRST_DELAY_MS)

    def initialize_controller_context(self) -> None:
        """KC:951-984 (every broker is feature-compatible: no finalized features here)."""
        zk, ctx = self.zk_client, self.context
        ctx.set_live_brokers(zk.get_all_broker_and_epochs_in_cluster())
        ctx.set_all_topics(zk.get_all_topics_in_cluster(True))
        self.register_partition_modifications_handlers(sorted(ctx.all_topics))
        assignments = zk.get_replica_assignment_and_topic_id_for_topics(set(ctx.all_topics))
        topic_changes.process_topic_ids(self, assignments)
        for topic_assignment in assignments:
            for tp, assignment in topic_assignment.assignment.items():
                ctx.update_partition_full_replica_assignment(tp, assignment)
                if assignment.is_being_reassigned:
                    ctx.partitions_being_reassigned.add(tp)
        ctx.clear_partition_leadership_info()
        ctx.shutting_down_broker_ids.clear()
        self.register_broker_modifications_handler(sorted(ctx.live_or_shutting_down_broker_ids))
        self.update_leader_and_isr_cache()
        for broker in ctx.live_or_shutting_down_brokers:
            self.add_channel_broker(broker)
        self.logger.info("%sCurrently active brokers in the cluster: %s", self.log_prefix, sorted(ctx.live_broker_ids))

    def fetch_topic_deletions_in_progress(self) -> tuple[set[str], set[str]]:
        """KC:1019-1030."""
        ctx = self.context
        to_delete = set(self.zk_client.get_topic_deletions())
        online = ctx.is_replica_online
        with_offline_replicas = {
            topic for topic in ctx.all_topics
            if any(not online(r, tp) for tp, replicas in ctx.partition_replica_assignment_for_topic(topic).items()
                   for r in replicas)
        }
        reassigning = {tp.topic for tp in ctx.partitions_being_reassigned}
        return to_delete, with_offline_replicas | reassigning

    def fetch_pending_preferred_replica_elections(self) -> set[TopicPartition]:
        """KC:986-1004: the znode's partitions minus completed, deleted or queued ones."""
        ctx = self.context
        pending = set()
        for tp in self.zk_client.get_preferred_replica_election():
            replicas = ctx.partition_replica_assignment(tp)
            if not replicas:
                continue  # topic deleted
            info = ctx.partition_leadership_info(tp)
            if info is not None and info.leader_and_isr.leader == replicas[0]:
                continue  # completed
            if ctx.is_topic_queued_up_for_deletion(tp.topic):
                continue
            pending.add(tp)
        return pending

    def update_leader_and_isr_cache(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """KC:1032-1037: re-read the state znodes into the leadership cache."""
        parts = sorted(self.context.all_partitions) if partitions is None else list(partitions)
        for tp, info in self.zk_client.get_topic_partition_states(parts).items():
            self.context.put_partition_leadership_info(tp, info)

    def on_controller_resignation(self) -> None:
        """KC:509-539."""
        zk, h = self.zk_client, self.handlers
        zk.unregister_znode_child_change_handler(h.isr_change_notification.path)
        zk.unregister_znode_change_handler(h.partition_reassignment.path)
        zk.unregister_znode_change_handler(h.preferred_replica_election.path)
        zk.unregister_znode_child_change_handler(h.log_dir_event_notification.path)
        self.unregister_broker_modifications_handler(list(self.broker_modifications_handlers))
        self._auto_rebalance_due_ms = None
        reassignment.unregister_partition_reassignment_isr_change_handlers(self)
        self.partition_state_machine.shutdown()
        zk.unregister_znode_child_change_handler(h.topic_change.path)
        self.unregister_partition_modifications_handlers(list(self.partition_modifications_handlers))
        zk.unregister_znode_child_change_handler(h.topic_deletion.path)
        self.replica_state_machine.shutdown()
        zk.unregister_znode_child_change_handler(h.broker_change.path)
        for broker_id in sorted(self.channel_brokers):
            self.remove_channel_broker(broker_id)
        self.context.reset_context()
        self.logger.info("%sResigned", self.log_prefix)

    def maybe_resign(self) -> None:
        """KC:1538-1545."""
        was_active = self.is_active
        self.zk_client.register_znode_change_handler_and_check_existence(self.handlers.controller_change)
        self.active_controller_id = _or_minus_one(self.zk_client.get_controller_id())
        if was_active and not self.is_active:
            self.on_controller_resignation()

    def trigger_controller_move(self) -> None:
        """KC:1521-1536."""
        self.active_controller_id = _or_minus_one(self.zk_client.get_controller_id())
        if not self.is_active:
            self.logger.warning("%sController has already moved when trying to trigger controller movement", self.log_prefix)
            return
        try:
            expected = self.context.epoch_zk_version
            self.active_controller_id = -1
            self.on_controller_resignation()
            self.zk_client.delete_controller(expected)
        except ControllerMovedException:
            self.logger.warning("%sController has already moved when trying to trigger controller movement", self.log_prefix)

    def handle_illegal_state(self, e: IllegalStateError) -> None:
        """KC:1513-1518: clear our batch, resign, re-raise."""
        self.logger.error("%sForcing the controller to resign", self.log_prefix)
        self.broker_request_batch.clear()
        self.trigger_controller_move()
        raise e

    def process_controller_change(self, _event: object = None) -> None:
        self.maybe_resign()

    def process_reelect(self, _event: object = None) -> None:
        """KC:2528-2531."""
        self.maybe_resign()
        self.elect()

    def process_expire(self, _event: object = None) -> None:
        """KC:2538-2541."""
        self.active_controller_id = -1
        self.on_controller_resignation()

    # ------------------------------------------------------------------ sends and watches

    def send_update_metadata_request(self, brokers: Sequence[int], partitions: Iterable[TopicPartition]) -> None:
        """KC:1233-1242: UpdateMetadata through the controller's own batch."""
        batch = self.broker_request_batch
        try:
            batch.new_batch()
            batch.add_update_metadata_request_for_brokers(brokers, partitions)
            batch.send_requests_to_brokers(self.epoch)
        except IllegalStateError as e:
            self.handle_illegal_state(e)

    def add_channel_broker(self, broker: Any) -> None:
        if broker.id not in self.channel_brokers:
            self.channel_brokers.add(broker.id)
            self.channel.add_broker(broker)

    def remove_channel_broker(self, broker_id: int) -> None:
        self.channel_brokers.discard(broker_id)
        self.channel.remove_broker(broker_id)

    def register_broker_modifications_handler(self, broker_ids: Iterable[int]) -> None:
        for broker_id in broker_ids:
            handler = self.handlers.broker_modifications(broker_id)
            self.zk_client.register_znode_change_handler_and_check_existence(handler)
            self.broker_modifications_handlers[broker_id] = handler

    def unregister_broker_modifications_handler(self, broker_ids: Iterable[int]) -> None:
        for broker_id in broker_ids:
            handler = self.broker_modifications_handlers.pop(broker_id, None)
            if handler is not None:
                self.zk_client.unregister_znode_change_handler(handler.path)

    def register_partition_modifications_handlers(self, topics: Iterable[str]) -> None:
        """KC:1142-1148 (only the new handlers are registered; Kafka re-registers all, a no-op)."""
        for topic in topics:
            handler = self.handlers.partition_modifications(topic)
            self.partition_modifications_handlers[topic] = handler
            self.zk_client.register_znode_change_handler(handler)

    def unregister_partition_modifications_handlers(self, topics: Iterable[str]) -> None:
        for topic in topics:
            handler = self.partition_modifications_handlers.pop(topic, None)
            if handler is not None:
                self.zk_client.unregister_znode_change_handler(handler.path)

    # ------------------------------------------------------------------ small event handlers

    def process_update_metadata_response_received(self, event: UpdateMetadataResponseReceived) -> None:
        """KC:1412-1419."""
        if not self.is_active:
            return
        if event.response.error_code != Errors.NONE:
            logging.getLogger("state.change.logger").error(
                "%sReceived error %s in UpdateMetadata response %.200r from broker %d",
                self.log_prefix, _error_name(event.response.error_code), event.response, event.broker_id)

    def process_list_partition_reassignments(self, event: ListPartitionReassignments) -> None:
        """KC:1939-1960."""
        if not self.is_active:
            event.callback(ApiError(Errors.NOT_CONTROLLER))
            return
        ctx = self.context
        wanted = ctx.partitions_being_reassigned if event.partitions is None else event.partitions
        results = {}
        for tp in sorted(wanted):
            assignment = ctx.partition_full_replica_assignment(tp)
            if assignment.is_being_reassigned:
                results[tp] = assignment
        event.callback(results)


class _SessionHandler(StateChangeHandler):
    """KC:235-245: session expiry preempts everything and resigns (Expire); a new session
    re-elects (RegisterBrokerAndReelect). Kafka blocks the new session until Expire ran; here the
    driver's next process_events() runs it first, as it is the only queued event."""

    name = "controller-state-change-handler"

    def __init__(self, controller: KafkaController) -> None:
        self._controller = controller

    def before_initializing_session(self) -> None:
        self._controller.expire()

    def after_initializing_session(self) -> None:
        self._controller.session_reestablished()


def _or_minus_one(value: int | None) -> int:
    return -1 if value is None else value


def _zero_clock() -> int:
    return 0


def _error_name(code: int) -> str:
    try:
        return Errors(code).name
    except ValueError:
        return str(code)


def _ignore(_kc: KafkaController, _event: Any) -> None:
    return None


_DISPATCH: dict[type, Callable[[KafkaController, Any], None]] = {
    Startup: lambda kc, _e: kc.process_startup(),
    ControllerChange: KafkaController.process_controller_change,
    Reelect: KafkaController.process_reelect,
    RegisterBrokerAndReelect: KafkaController.process_reelect,
    Expire: KafkaController.process_expire,
    ShutdownEventThread: _ignore,
    AutoPreferredReplicaLeaderElection: leader_balance.process_auto_preferred_replica_leader_election,
    ReplicaLeaderElection: leader_balance.process_replica_leader_election,
    UncleanLeaderElectionEnable: leader_balance.process_unclean_leader_election_enable,
    TopicUncleanLeaderElectionEnable: leader_balance.process_topic_unclean_leader_election_enable,
    ControlledShutdown: broker_changes.process_controlled_shutdown,
    LeaderAndIsrResponseReceived: broker_changes.process_leader_and_isr_response_received,
    UpdateMetadataResponseReceived: KafkaController.process_update_metadata_response_received,
    TopicDeletionStopReplicaResponseReceived: topic_changes.process_topic_deletion_stop_replica_response_received,
    BrokerChange: broker_changes.process_broker_change,
    BrokerModifications: broker_changes.process_broker_modification,
    TopicChange: topic_changes.process_topic_change,
    LogDirEventNotification: broker_changes.process_log_dir_event_notification,
    PartitionModifications: topic_changes.process_partition_modifications,
    TopicDeletion: topic_changes.process_topic_deletion,
    ApiPartitionReassignment: reassignment.process_api_partition_reassignment,
    ZkPartitionReassignment: reassignment.process_zk_partition_reassignment_event,
    ListPartitionReassignments: KafkaController.process_list_partition_reassignments,
    PartitionReassignmentIsrChange: reassignment.process_partition_reassignment_isr_change,
    IsrChangeNotification: alter_partition.process_isr_change_notification,
    AlterPartitionReceived: alter_partition.process_alter_partition,
}
"""KC:2546-2605: event class -> handler(controller, event)."""
