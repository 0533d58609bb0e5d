"""ZkDriver: Kafka's ZooKeeper-mode KafkaController (ctrlbatch.controller) driven on the simulation's loop.

Rules (kafka-zk-controller.md §5; KC = KafkaController.scala 3.9):
- One InMemoryKafkaZkClient tree is the cluster's ZooKeeper. The controller has a client (a
  session) of its own; the driver's admin client writes what brokers and admin tools write.
- Membership comes from the store: a simulated broker that the endpoint unfences (registered,
  heartbeating, caught up) registers /brokers/ids/<id>, an ephemeral znode under a session of its
  own whose czxid is its ZooKeeper broker epoch (the broker's BrokerState.broker_epoch, which it
  compares with the epoch of every request). The brokers' heartbeats at the endpoint are what
  keeps that session alive: when the endpoint fences a broker (session time-out), forgets it, or
  sees a new incarnation, its session expires, the znode goes, the controller's /brokers/ids watch
  fires and BrokerChange runs (KC:1610-1666). A broker whose listener the controller may not use
  (membership.unreachable_reason) is never registered.
- The controller runs on the loop as Kafka's event thread does: one queued event at a time
  (``process_events(1)``), yielding to the loop between events, so sends, responses, heartbeats and
  ``--timeout`` interleave with a long step; the auto-rebalance task runs when due
  (``next_scheduled_ms``). ``busy`` is true while events are queued.
- Controlled shutdown (KafkaServer.controlledShutdown): the broker asks the controller with its
  broker epoch; while partitions remain it retries after ``controlled_shutdown_retry_backoff_ms``
  (5000), at most ``controlled_shutdown_max_retries`` (3) times, then shuts down anyway: it stops
  heartbeating, closes its ZooKeeper session (the znode goes at once) and stops listening.
- Failover from the store: the active controller shuts down (its queue preempted, resigned:
  KC:255-262) and its session expires, so /controller goes; a new KafkaController (broker id one
  higher) starts, elects itself with controller epoch + 1 and runs onControllerFailover.
- Followers catch up (``catch_up``): the simulated brokers keep no logs, so the driver sends, for
  each leader, the AlterPartition a real leader sends once its followers caught up: the ISR plus
  every live replica that follows the partition at the leader's epoch. Without it no ISR ever
  grows, and a reassignment never completes (KC:1039-1049).
- Scenario steps are what an operator does through ZooKeeper or the admin API: topic znodes
  (create, add partitions), /admin/delete_topics, AlterPartitionReassignments, ElectLeaders
  (preferred or unclean), a topic config enabling unclean election.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from ctrlbatch.context import ControllerContext, MetadataVersion, TopicPartition
from ctrlbatch.controller import InMemoryKafkaZkClient
from ctrlbatch.controller.alter_partition import (
    AlterPartitionPartitionData,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionTopicData,
)
from ctrlbatch.controller.channel import Channel
from ctrlbatch.controller.config import ControllerConfig
from ctrlbatch.controller.events import ElectionType
from ctrlbatch.controller.kafka_controller import KafkaController

from .broker_server import SimulatedBroker
from .broker_state import BrokerState
from .controller_state import BrokerEvent, EventKind, Registration
from .membership import broker_of, unreachable_reason

__all__ = ["ZkDriver", "ZkOptions"]

_log = logging.getLogger("ctrlbatch.sim.zk")
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
ALTER_PARTITION_VERSION = 1
"""Topics by name (v0-1); the controller accepts every version."""


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


@attrs.frozen
class ZkOptions:
    """Controller and broker settings of a zk-mode run (Kafka's defaults)."""

    controller_id: int = 3000
    metadata_version: MetadataVersion = MetadataVersion.IBP_3_9_IV0
    leader_imbalance_check_interval_seconds: int = 300
    auto_leader_rebalance_enable: bool = True
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 5000


class ZkDriver:
    """KafkaController over an in-memory ZooKeeper, fed by the endpoint's broker events."""

    name = "zk"

    def __init__(self, channel: Channel, options: ZkOptions | None = None,
                 on_broker_epoch: Callable[[int, int], None] | None = None) -> None:
        self.channel = channel
        self.options = options or ZkOptions()
        self.on_broker_epoch = on_broker_epoch
        self.store = InMemoryKafkaZkClient(time_ms=_now_ms)
        self.generation = 0
        self.epochs: dict[int, int] = {}
        """Broker id -> the ZooKeeper broker epoch (czxid) of its live registration."""
        self.topic_ids: dict[str, uuid.UUID] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._processing = False
        self.kc = self._new_controller()

    def __repr__(self) -> str:
        return f"ZkDriver({self.kc!r}, {len(self.epochs)} brokers registered)"

    def _new_controller(self) -> KafkaController:
        o = self.options
        config = ControllerConfig(
            broker_id=o.controller_id + self.generation, inter_broker_protocol_version=o.metadata_version,
            auto_leader_rebalance_enable=o.auto_leader_rebalance_enable,
            leader_imbalance_check_interval_seconds=o.leader_imbalance_check_interval_seconds,
        )
        self.controller_client = self.store.new_client()
        return KafkaController(config, self.controller_client, self.channel, clock_ms=_now_ms,
                               on_event=lambda _e: self._wake.set())

    # ------------------------------------------------------------------ the event thread

    @property
    def ctx(self) -> ControllerContext:
        return self.kc.context

    @property
    def epoch(self) -> int:
        return self.kc.epoch

    @property
    def busy(self) -> bool:
        return self._processing or len(self.kc.event_manager) > 0

    deletions_pending = 0  # topic deletion is the controller's queue: ``busy`` covers it

    def start(self) -> None:
        self.kc.startup()
        self._task = asyncio.get_running_loop().create_task(self._drive(), name="zk-controller-event-thread")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self.kc.shutdown()

    async def _drive(self) -> None:
        while True:
            due = self.kc.next_scheduled_ms()
            wait = None if due is None else max(0.0, (due - _now_ms()) / 1000)
            try:
                await asyncio.wait_for(self._wake.wait(), wait)
            except TimeoutError:
                pass
            self._wake.clear()
            self.kc.run_scheduled(_now_ms())
            while len(self.kc.event_manager) > 0:
                self._processing = True
                try:
                    self.kc.process_events(1)
                finally:
                    self._processing = False
                await asyncio.sleep(0)

    # ------------------------------------------------------------------ membership

    def on_broker_event(self, event: BrokerEvent, reg: Registration | None) -> None:
        """A registration event of the endpoint, applied to the store (see the module rules)."""
        kind = event.kind
        if kind in (EventKind.FENCED, EventKind.SHUTDOWN_NOW, EventKind.FORGOTTEN, EventKind.BOUNCED):
            self.close_session(event.broker_id)
        if kind in (EventKind.UNFENCED, EventKind.UPDATED) and reg is not None and not reg.state.fenced:
            self._register(reg)

    def _register(self, reg: Registration) -> None:
        if reg.broker_id in self.epochs:
            return
        reason = unreachable_reason(reg)
        if reason is not None:
            _log.warning("broker %d is not registered in ZooKeeper: %s", reg.broker_id, reason)
            return
        epoch = self.store.register_broker(broker_of(reg))
        self.epochs[reg.broker_id] = epoch
        if self.on_broker_epoch is not None:
            self.on_broker_epoch(reg.broker_id, epoch)

    def close_session(self, broker_id: int) -> None:
        """The broker's ZooKeeper session ends (expiry, or a clean close): its znode goes."""
        if self.epochs.pop(broker_id, None) is not None:
            self.store.expire_broker(broker_id)

    def live_broker_ids(self) -> list[int]:
        return sorted(self.ctx.live_or_shutting_down_broker_ids)

    # ------------------------------------------------------------------ controlled shutdown

    async def controlled_shutdown(self, broker_id: int, timeout: float) -> int:
        """The broker's side of a controlled shutdown; returns how many requests it made. The
        caller then stops the broker (and ``close_session``)."""
        o = self.options
        loop = asyncio.get_running_loop()
        epoch = self.epochs.get(broker_id, -1)
        attempts = 0
        for attempt in range(o.controlled_shutdown_max_retries):
            attempts = attempt + 1
            future: asyncio.Future[Any] = loop.create_future()

            def done(result: Any, future: asyncio.Future[Any] = future) -> None:
                if not future.done():
                    future.set_result(result)

            self.kc.controlled_shutdown(broker_id, epoch, done)
            result = await asyncio.wait_for(future, timeout)
            if isinstance(result, BaseException):
                _log.warning("broker %d: controlled shutdown failed: %s", broker_id, result)
            elif not result:
                return attempts
            else:
                _log.info("broker %d: %d partitions remain led by it; retrying", broker_id, len(result))
            await asyncio.sleep(o.controlled_shutdown_retry_backoff_ms / 1000)
        _log.warning("broker %d: controlled shutdown did not complete in %d tries; shutting down anyway",
                     broker_id, attempts)
        return attempts

    # ------------------------------------------------------------------ controller failover

    def failover(self) -> None:
        """The active controller goes; a new one elects itself from the store (epoch + 1)."""
        old = self.kc
        old.shutdown()
        self.controller_client.close()  # the old controller's broker is gone: its session ends, /controller goes
        self.generation += 1
        self.kc = self._new_controller()
        self.kc.startup()
        self._wake.set()

    # ------------------------------------------------------------------ operator steps

    def create_topics(self, assignments: Mapping[str, Sequence[Sequence[int]]]) -> None:
        for topic, parts in assignments.items():
            topic_id = uuid.uuid5(uuid.NAMESPACE_URL, topic)
            self.topic_ids[topic] = topic_id
            self.store.create_topic(topic, [list(r) for r in parts], topic_id=topic_id)

    def add_partitions(self, topic: str, assignment: Mapping[int, Sequence[int]]) -> None:
        self.store.add_partitions(topic, assignment)

    def delete_topics(self, topics: Sequence[str]) -> None:
        for t in topics:
            self.store.delete_topic(t)

    def reassign(self, targets: Mapping[TopicPartition, Sequence[int]], callback: Callable[[Any], None]) -> None:
        self.kc.alter_partition_reassignments(targets, callback)

    def elect_leaders(self, partitions: Sequence[TopicPartition], unclean: bool, callback: Callable[[Any], None]) -> None:
        self.kc.elect_leaders(partitions, ElectionType.UNCLEAN if unclean else ElectionType.PREFERRED, callback)

    def enable_unclean_election(self, topic: str) -> None:
        """A topic config sets unclean.leader.election.enable=true (ConfigHandler.scala:145-147)."""
        self.store.set_topic_config(topic, {UNCLEAN_LEADER_ELECTION_ENABLE: "true"})
        self.kc.enable_topic_unclean_leader_election(topic)

    # ------------------------------------------------------------------ followers catching up

    def catch_up(self, brokers: Mapping[int, SimulatedBroker]) -> int:
        """Every leader adds its caught-up followers to the ISR with AlterPartition, as a real
        leader does once a follower's fetch reaches the log end (Partition.maybeExpandIsr ->
        AlterPartitionManager), and applies the answer to its own partition state
        (Partition.handleAlterPartitionUpdate: the new ISR and partition epoch). Followers here have
        no log, so a replica counts as caught up once its broker is registered and follows the
        partition at the leader's epoch. Returns how many AlterPartition requests it sent."""
        live = self.ctx.live_broker_ids
        states = {b: x.state for b, x in brokers.items()}
        wanted: dict[int, dict[str, list[AlterPartitionPartitionData]]] = {}
        for leader_id, state in states.items():
            if leader_id not in live:
                continue
            for tp, p in state.partitions.items():
                if p.leader != leader_id or p.stopped:
                    continue
                joining = [r for r in p.replicas if r not in p.isr and r in live and _follows(states.get(r), tp, p.leader_epoch)]
                if joining:
                    isr = tuple(r for r in p.replicas if r in p.isr or r in joining)
                    wanted.setdefault(leader_id, {}).setdefault(tp.topic, []).append(AlterPartitionPartitionData(
                        tp.partition, p.leader_epoch, isr, p.leader_recovery_state, p.partition_epoch))
        for leader_id, topics in wanted.items():
            request = AlterPartitionRequest(leader_id, self.epochs.get(leader_id, -1), [
                AlterPartitionTopicData(parts, topic_name=topic) for topic, parts in sorted(topics.items())])
            self.kc.alter_partition(request, ALTER_PARTITION_VERSION, _leader_applies(brokers[leader_id]))
        return len(wanted)


def _leader_applies(broker: SimulatedBroker) -> Callable[[AlterPartitionResponse], None]:
    def apply(response: AlterPartitionResponse) -> None:
        state = broker.state
        with broker.state_lock:
            for t in response.topics:
                for r in t.partitions:
                    p = state.partitions.get(TopicPartition(t.topic_name, r.partition_index))
                    if r.error_code == 0 and p is not None and p.leader_epoch == r.leader_epoch:
                        p.isr, p.partition_epoch = tuple(r.isr), r.partition_epoch

    return apply


def _follows(state: BrokerState | None, tp: TopicPartition, leader_epoch: int) -> bool:
    p = None if state is None else state.partitions.get(tp)
    return p is not None and not p.stopped and p.leader_epoch == leader_epoch
