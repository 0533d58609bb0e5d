"""KraftDriver: Kafka 3.9's KRaft controller in migration mode, driving ZooKeeper-mode brokers over the channel.

Rules (MP = MigrationPropagator.scala 3.9, kafka-migration-propagator.md; decisions: kraft_decisions.py):
- The driver keeps a KRaft MetadataImage (ctrlbatch.replay.image). Every event becomes the
  metadata records a KRaft controller writes for it (kraft_decisions.py, cited there), applied as
  one delta (apply_delta) and handed to the replay's MigrationPropagator port
  (replay.propagate.propagator.propagate_delta), whose requests go to the brokers over the
  channel: exactly MigrationPropagator's requests, nothing hand-made. A delta's KRaft epoch and
  the requests' controller epoch are the driver's ``epoch`` (the ZooKeeper controller epoch the
  KRaft controller claims, which a failover raises).
- publishMetadata (MP:90-100, doc §2.1-2.2): the channel holds the registered, unfenced migrating
  brokers; a broker leaves it when fenced or unregistered and is re-added when its (id,
  endpoints, rack) change; removal first. A request for a broker without a channel is dropped
  (CCM: the propagator marks it ``dropped``). Registered brokers (fenced included) are the
  requests' live brokers (MCCC), so the view a broker must converge to lists them too.
- Membership: the endpoint's events map to records: JOINED, BOUNCED (a new incarnation) and
  UPDATED register (RegisterBrokerRecord with the endpoint's state; a new incarnation changes
  no partition at 3.9); UNFENCED unfences; FENCED and SHUTDOWN_NOW fence; FORGOTTEN unregisters;
  CONTROLLED_SHUTDOWN enters controlled shutdown (leadership moves away, ISRs shrink). A
  broker whose listener the controller may not use (membership.unreachable_reason) is never
  registered. The endpoint's ShouldShutDown reads ``leaders`` (a set swapped whole after each
  delta, so the endpoint's thread never iterates the image).
- Followers catch up (``catch_up``): the simulated brokers keep no logs, so the driver writes,
  for each live leader, the AlterPartition result a real leader's request gets once its followers
  caught up: the ISR plus every unfenced replica that follows the partition at the leader's epoch
  (Partition.maybeExpandIsr's order: appended). It is what completes a reassignment.
- Failover: a new KRaft controller term claims ZooKeeper controller leadership (epoch + 1,
  KRaftMigrationDriver.java:698 at 3.9) and syncs every broker from the image,
  sendRPCsToBrokersFromMetadataImage (KRaftMigrationDriver.java:862-877, MP:218-247): UpdateMetadata with everything, then a FULL
  LeaderAndIsr batch. The channel is kept (same controller id and connections).
- Unclean election (QC:1406-1443, RCM:1682-1717): after every write, while some partition is
  leaderless, the unclean check runs after ``unclean_interval`` (Kafka's
  unclean.leader.election.check.interval.ms, 5 min; the unclean-election scenario sets 1 s) and
  elects uncleanly in the topics whose unclean.leader.election.enable is true; broker events
  elect uncleanly in those topics too. The leader recovery state goes RECOVERING (as Kafka's); the
  driver does not write the AlterPartition that would mark it RECOVERED.
- Automatic balance: with ``imbalance_interval`` (leader.imbalance.check.interval.seconds) a task
  runs the preferred elections of maybeBalancePartitionLeaders at that period (Kafka schedules it
  after writes while imbalanced partitions exist; the period is the same).
- Topic deletion completes at once (RemoveTopicRecord); nothing waits for StopReplica answers
  (KRaft does not), so ``deletions_pending`` is 0.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ctrlbatch.context import Broker, MetadataVersion, TopicPartition
from ctrlbatch.replay.image.deltas import Delta
from ctrlbatch.replay.image.image import EMPTY_IMAGE, MetadataImage
from ctrlbatch.replay.log.records import MetadataRecord
from ctrlbatch.replay.propagate.propagator import ReplayOptions, propagate_delta, propagate_image
from ctrlbatch.replay.schema.metadata_classes import (
    BrokerRegistrationChangeRecord,
    FeatureLevelRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
)

from . import kraft_decisions as kd
from .broker_server import SimulatedBroker
from .controller_logic import Channel
from .controller_state import BrokerEvent, EventKind, Registration
from .image_context import LiveContext
from .membership import unreachable_reason

__all__ = ["KraftDriver"]

_log = logging.getLogger("ctrlbatch.sim.kraft")
METADATA_VERSION = "metadata.version"
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
# Record versions a 3.9-IV0 controller writes (MetadataVersion.java 3.9: directories from 3.7-IV2;
# BrokerRegistrationChangeRecord v1 for controlled shutdown, RCM:1367-1370).
_VERSIONS: dict[type, int] = {RegisterBrokerRecord: 3, PartitionRecord: 1, PartitionChangeRecord: 1}


def _version(data: Any) -> int:
    if isinstance(data, BrokerRegistrationChangeRecord):
        return 1 if data.in_controlled_shutdown else 0
    return _VERSIONS.get(type(data), 0)


class KraftDriver:
    """The KRaft controller in migration mode behind the endpoint's events (see the module rules)."""

    name = "kraft"
    busy = False
    deletions_pending = 0

    def __init__(self, channel: Channel, *, controller_id: int = 3000,
                 metadata_version: MetadataVersion = MetadataVersion.IBP_3_9_IV0,
                 leader_imbalance_check_interval_seconds: float | None = None,
                 unclean_leader_election_check_interval_ms: int = 300_000) -> None:
        self.channel = channel
        self.controller_id = controller_id
        self.epoch = 1
        self.image: MetadataImage = EMPTY_IMAGE
        self.offset = 0
        self.in_channel: dict[int, Broker] = {}
        self.leaders: frozenset[int] = frozenset()
        """Brokers that lead a partition, refreshed after every delta (read by the endpoint's thread)."""
        self.errors: list[Any] = []
        self.sent = 0
        self.imbalance_interval = leader_imbalance_check_interval_seconds
        """leader.imbalance.check.interval.seconds; None: no automatic balancing task."""
        self._task: asyncio.Task[None] | None = None
        self.unclean_topics: frozenset[str] = frozenset()
        """Topics whose unclean.leader.election.enable is true (a topic ConfigRecord)."""
        self.unclean_interval = unclean_leader_election_check_interval_ms / 1000
        self._leaderless = False
        self._unclean: asyncio.TimerHandle | None = None
        self._unclean_now = False
        self._ctx = LiveContext(lambda: self.image)
        self._commit([FeatureLevelRecord(name=METADATA_VERSION, feature_level=metadata_version.feature_level)])

    def __repr__(self) -> str:
        return f"KraftDriver(epoch={self.epoch}, {self.image!r})"

    @property
    def controller(self) -> KraftDriver:
        return self

    @property
    def ctx(self) -> LiveContext:
        """The image as a controller context, following later deltas (image_context.py)."""
        return self._ctx

    def _options(self) -> ReplayOptions:
        return ReplayOptions(targets="migrating", controller_id=self.controller_id, zk_controller_epoch=self.epoch)

    # ------------------------------------------------------------------ the log and the propagator

    def _commit(self, records: Sequence[Any]) -> None:
        """Append the records as one delta, apply it, publish, send MigrationPropagator's requests."""
        if not records:
            return
        recs = []
        for data in records:
            self.offset += 1
            recs.append(MetadataRecord(self.offset, data.API_KEY, _version(data), data))
        delta = Delta(self.offset, int(time.time() * 1000), self.epoch, tuple(recs), self.controller_id)
        image, sends = propagate_delta(self.image, delta, self._options())
        self._publish(image)
        self._deliver(sends)
        self._schedule_unclean()

    def _schedule_unclean(self) -> None:
        """maybeScheduleNextElectUncleanLeaders after every write (QC:856-861, 1406-1443): while
        some partition is leaderless and none is scheduled, run the check after the interval
        (10 ms if the last run hit the election cap). Needs the running loop; none, no task."""
        if self._unclean is not None or not self._leaderless:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._unclean = loop.call_later(0.01 if self._unclean_now else self.unclean_interval, self._elect_unclean)

    def _elect_unclean(self) -> None:
        """maybeElectUncleanLeaders (RCM:1682-1688)."""
        self._unclean = None
        records = kd.elect_unclean_leaders(self.image, self.unclean_topics)
        self._unclean_now = len(records) >= kd.MAX_ELECTIONS
        self._commit(records)
        self._schedule_unclean()

    def _publish(self, image: MetadataImage) -> None:
        """publishMetadata (MP:90-100): channel brokers = registered, unfenced, migrating."""
        self.image = image
        wanted = {b: reg.broker for b, reg in image.brokers.items() if reg.is_migrating_zk_broker and not reg.fenced}
        for b, broker in list(self.in_channel.items()):
            if wanted.get(b) != broker:
                del self.in_channel[b]
                self.channel.remove_broker(b)
        for b, broker in sorted(wanted.items()):
            if b not in self.in_channel:
                self.in_channel[b] = broker
                self.channel.add_broker(broker)
        leaders = {p.leader for t in image.topics.values() for p in t.partitions.values()}
        self._leaderless = kd.NO_LEADER in leaders
        leaders.discard(kd.NO_LEADER)
        self.leaders = frozenset(leaders)

    def _deliver(self, sends: Sequence[Any]) -> None:
        for s in sends:
            if not s.dropped and s.broker in self.in_channel:
                self.sent += 1
                self.channel.send(s.broker, s.request, self._on_response)

    def _on_response(self, response: Any) -> None:
        if isinstance(response, BaseException) and len(self.errors) < 100:
            self.errors.append(response)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self.imbalance_interval is not None:
            self._task = asyncio.get_running_loop().create_task(self._balance(), name="kraft-leader-balance")

    async def stop(self) -> None:
        if self._unclean is not None:
            self._unclean.cancel()
            self._unclean = None
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _balance(self) -> None:
        """QC's periodic balance (maybeBalancePartitionLeaders, RCM:1632-1636)."""
        assert self.imbalance_interval is not None
        while True:
            await asyncio.sleep(self.imbalance_interval)
            self._commit(kd.imbalanced(self.image))

    # ------------------------------------------------------------------ membership

    def on_broker_event(self, event: BrokerEvent, reg: Registration | None) -> None:
        b = event.broker_id
        known = self.image.brokers.get(b)
        kind = event.kind
        if kind in (EventKind.JOINED, EventKind.BOUNCED, EventKind.UPDATED):
            if reg is None:
                return
            reason = unreachable_reason(reg)
            if reason is not None:
                _log.warning("broker %d is not registered with the KRaft controller: %s", b, reason)
                if known is not None:
                    self._commit(kd.broker_unregistered(self.image, b, self.unclean_topics))
                return
            self._commit([kd.register_broker(
                b, reg.epoch, reg.incarnation_id, reg.listeners, reg.rack, reg.features, reg.log_dirs,
                migrating=reg.is_migrating_zk_broker, fenced=reg.state.fenced if kind == EventKind.UPDATED else True,
                in_controlled_shutdown=kind == EventKind.UPDATED and known is not None and known.in_controlled_shutdown)])
        elif known is None:
            return
        elif kind == EventKind.UNFENCED:
            if known.fenced:
                self._commit(kd.broker_unfenced(self.image, b, self.unclean_topics))
        elif kind in (EventKind.FENCED, EventKind.SHUTDOWN_NOW):
            if not known.fenced:
                self._commit(kd.broker_fenced(self.image, b, self.unclean_topics))
        elif kind == EventKind.FORGOTTEN:
            self._commit(kd.broker_unregistered(self.image, b, self.unclean_topics))
        elif kind == EventKind.CONTROLLED_SHUTDOWN:
            if not known.fenced:
                self._commit(kd.broker_in_controlled_shutdown(self.image, b, self.unclean_topics))

    def live_broker_ids(self) -> list[int]:
        return sorted(self.in_channel)

    # ------------------------------------------------------------------ failover

    def failover(self) -> None:
        """A new term syncs every broker from the image (MP:218-247)."""
        self.epoch += 1
        self.image = MetadataImage(self.image.brokers, self.image.topics, self.image.topic_ids_by_name,
                                   self.image.metadata_version, self.image.offset, self.epoch)
        self._deliver(propagate_image(self.image, self._options(), leader_id=self.controller_id))

    # ------------------------------------------------------------------ operator steps

    def create_topics(self, assignments: Mapping[str, Sequence[Sequence[int]]]) -> None:
        records: list[Any] = []
        for topic, parts in assignments.items():
            records += kd.create_topic(self.image, topic, uuid.uuid5(uuid.NAMESPACE_URL, topic), parts)
        self._commit(records)

    def add_partitions(self, topic: str, assignment: Mapping[int, Sequence[int]]) -> None:
        self._commit(kd.create_partitions(self.image, topic, assignment))

    def delete_topics(self, topics: Sequence[str]) -> None:
        records: list[Any] = []
        for t in topics:
            records += kd.remove_topic(self.image, t)
        self._commit(records)

    def reassign(self, targets: Mapping[TopicPartition, Sequence[int]], callback: Callable[[Any], None]) -> None:
        """AlterPartitionReassignments: one record per partition (none when nothing changes)."""
        records: list[Any] = []
        errors: dict[TopicPartition, Any] = {}
        for tp, target in targets.items():
            try:
                rec = kd.reassign(self.image, tp.topic, tp.partition, target)
            except kd.KraftError as e:
                errors[tp] = e
                continue
            if rec is not None:
                records.append(rec)
        self._commit(records)
        callback(errors)

    def elect_leaders(self, partitions: Sequence[TopicPartition], unclean: bool, callback: Callable[[Any], None]) -> None:
        """ElectLeaders: per partition None (elected) or the error's name."""
        records: list[Any] = []
        result: dict[TopicPartition, Any] = {}
        for tp in partitions:
            try:
                out = kd.elect_leader(self.image, tp.topic, tp.partition, unclean)
            except kd.KraftError as e:
                result[tp] = e.error
                continue
            if isinstance(out, str):
                result[tp] = out
            else:
                records.append(out)
                result[tp] = None
        self._commit(records)
        callback(result)

    def enable_unclean_election(self, topic: str) -> None:
        """A topic config sets unclean.leader.election.enable=true (a ConfigRecord); the next
        unclean check elects its leaderless partitions (KRaft has no immediate trigger at 3.9)."""
        self._commit([kd.topic_config(topic, UNCLEAN_LEADER_ELECTION_ENABLE, "true")])
        self.unclean_topics = self.unclean_topics | {topic}

    # ------------------------------------------------------------------ followers catching up

    def catch_up(self, brokers: Mapping[int, SimulatedBroker]) -> int:
        """AlterPartition for every partition whose caught-up followers are out of its ISR
        (see the module rules); returns how many partitions changed."""
        live = self.in_channel
        records: list[Any] = []
        for topic in self.image.topics.values():
            for pid, p in topic.partitions.items():
                if p.leader not in live:
                    continue
                tp = TopicPartition(topic.name, pid)
                joining = [r for r in p.replicas if r not in p.isr and r in live and _follows(brokers.get(r), tp, p.leader_epoch)]
                if joining:
                    rec = kd.alter_partition(self.image, topic.name, pid, [*p.isr, *joining])
                    if rec is not None:
                        records.append(rec)
        self._commit(records)
        return len(records)


def _follows(broker: SimulatedBroker | None, tp: TopicPartition, leader_epoch: int) -> bool:
    p = None if broker is None else broker.state.partitions.get(tp)
    return p is not None and not p.stopped and p.leader_epoch == leader_epoch
