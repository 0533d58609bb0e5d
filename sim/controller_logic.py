"""SimController: a small controller that drives the batch engine over a channel (the standalone ``ctrlbatch-controller``).

Rules:
- It is no longer the simulation's controller: ``ctrlbatch simulate`` and SimCluster run Kafka's
  KafkaController in zk mode (zk_driver.py) and Kafka's KRaft controller in migration mode in
  kraft mode (kraft_driver.py: KRaft's decisions, kraft_decisions.py, sent as
  MigrationPropagator sends them). SimController remains behind controller_cli.py's standalone
  endpoint, with simplified decisions, not Kafka's: leaders are "first live ISR replica, else
  first live replica" (unclean election always on); a crashed broker stays in the ISR of the
  partitions it followed; reassignment takes the new replicas as caught up at once; controlled
  shutdown moves leadership in one batch and never leaves a leader in place; topic deletion
  ignores dead replicas; no preferred or automatic election, no partition expansion, no
  ISR-change handling.
- It owns a ControllerContext and one ControllerBrokerRequestBatch whose transport is a channel
  (anything with ``send``, ``add_broker`` and ``remove_broker``: ctrlbatch.transport's channel).
- Broker membership follows kafka-broker-registration.md §5: a new broker id is added to the
  context and the channel, then onBrokerStartup (KafkaController.scala:579-590): UpdateMetadata
  with no partitions to the others and with every partition to the new broker (KAFKA-7537), then
  LeaderAndIsr for its replicas. A bounce is a failure then a startup; a failure removes the
  broker from the channel and the context, elects leaders for the partitions it led (first live
  ISR replica, else first live replica) and sends LeaderAndIsr and UpdateMetadata.
- Scenario steps (controlled shutdown, failover, topic creation and deletion, reassignment) send
  what Kafka's controller sends for them, in one batch per step; see each method.
- ``expected_view()`` is the metadata every live broker must cache once the channel is idle.
- Callbacks (responses) arrive on the channel's loop; topic deletion completes when every
  replica answered its delete StopReplica without error.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from ctrlbatch.batch import (
    ControllerBrokerRequestBatch,
    OutboundRequest,
    TopicDeletionStopReplicaResponseReceived,
    UpdateType,
)
from ctrlbatch.batch.transport import ResponseCallback
from ctrlbatch.context import (
    Broker,
    ControllerContext,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    MetadataVersion,
    ReplicaAssignment,
    TopicPartition,
)

from .image_context import LiveContext
from .metadata_cache import CachedBroker, CacheView, PartitionView

__all__ = ["Channel", "SimController", "expected_view"]

_log = logging.getLogger("ctrlbatch.sim.controller")


class Channel(Protocol):
    def send(self, broker_id: int, request: OutboundRequest, callback: ResponseCallback | None) -> None: ...

    def add_broker(self, broker: Broker) -> None: ...

    def remove_broker(self, broker_id: int) -> None: ...


def expected_view(ctx: ControllerContext | LiveContext) -> CacheView:
    """What UpdateMetadata has told every live broker, if all of it arrived: the live-or-shutting-
    down brokers, every partition with a leader whose topic is not queued for deletion, their ids.
    A LiveContext (kraft mode) reads the KRaft image as MigrationPropagator's context does."""
    brokers = {
        b.id: CachedBroker(b.id, tuple((e.listener_name, e.host, e.port, int(e.security_protocol)) for e in b.endpoints), b.rack)
        for b in ctx.live_or_shutting_down_brokers
    }
    parts: dict[TopicPartition, PartitionView] = {}
    for tp in ctx.partitions_leadership_info:
        view = ctx.update_metadata_view(tp)
        if view is None or view[3]:
            continue
        info, replicas, offline, _queued = view
        lai = info.leader_and_isr
        parts[tp] = PartitionView(info.controller_epoch, lai.leader, lai.leader_epoch, lai.isr, lai.partition_epoch,
                                  replicas, offline)
    topics = {tp.topic for tp in parts}
    return CacheView(brokers, parts, {t: i for t, i in ctx.topic_ids.items() if t in topics})


class SimController:
    """The controller side of a simulation (see the module rules)."""

    def __init__(
        self,
        channel: Channel,
        *,
        controller_id: int = 3000,
        controller_epoch: int = 1,
        metadata_version: MetadataVersion = MetadataVersion.IBP_3_9_IV0,
        kraft_controller: bool = True,
        on_remove: Callable[[int], None] | None = None,
    ) -> None:
        self.channel = channel
        self.ctx = ControllerContext()
        self.ctx.epoch = controller_epoch
        self.controller_id = controller_id
        self.on_remove = on_remove
        self.responses: list[Any] = []
        self.deleted_topics: list[str] = []
        self._deletion_pending: dict[str, set[tuple[TopicPartition, int]]] = {}
        self.batch = ControllerBrokerRequestBatch(
            controller_id, self.ctx, metadata_version, channel, on_event=self._on_event, kraft_controller=kraft_controller,
        )

    def __repr__(self) -> str:
        return (f"SimController(epoch={self.ctx.epoch}, {len(self.ctx.live_broker_id_and_epochs)} brokers, "
                f"{len(self.ctx.partitions_leadership_info)} partitions)")

    @property
    def epoch(self) -> int:
        return self.ctx.epoch

    def _send(self, build: Callable[[], None]) -> None:
        self.batch.new_batch()
        build()
        self.batch.send_requests_to_brokers(self.ctx.epoch)

    def _on_event(self, event: Any) -> None:
        self.responses.append(event)
        if isinstance(event, TopicDeletionStopReplicaResponseReceived):
            for tp, code in event.partition_errors.items():
                pending = self._deletion_pending.get(tp.topic)
                if pending is not None and code == 0:
                    pending.discard((tp, event.broker_id))
                    if not pending:
                        self._complete_deletion(tp.topic)

    # ------------------------------------------------------------------ membership

    def broker_joined(self, broker: Broker, epoch: int) -> None:
        """A new broker (or one back after a failure): context, channel, onBrokerStartup."""
        if broker.id in self.ctx.live_or_shutting_down_broker_ids:
            return
        existing = [b for b in self.ctx.live_or_shutting_down_broker_ids]
        self.ctx.add_live_brokers({broker: epoch})
        self.channel.add_broker(broker)
        if existing:
            self._send(lambda: self.batch.add_update_metadata_request_for_brokers(existing, ()))
        self._send(lambda: self.batch.add_update_metadata_request_for_brokers([broker.id], self._all_partitions()))
        hosted = [tp for tp in self._all_partitions() if broker.id in self.ctx.partition_replica_assignment(tp)]
        offline = {tp for tp in hosted if self._leader(tp) < 0}  # a set: one pass over hosted, O(hosted)

        def build() -> None:
            for tp in hosted:
                if tp in offline:
                    self._elect(tp, exclude=())
                    self._add_leader_and_isr(tp, self._live_replicas(tp))
                else:
                    self._add_leader_and_isr(tp, [broker.id])

        if hosted:
            self._send(build)

    def broker_bounced(self, broker: Broker, epoch: int) -> None:
        self.broker_failed(broker.id)
        self.broker_joined(broker, epoch)

    def broker_failed(self, broker_id: int) -> None:
        """onBrokerFailure: leaders elected away from the broker, its replicas offline everywhere;
        UpdateMetadata to the remaining brokers even when no partition is affected (the live
        broker set changed, KafkaController.onReplicasBecomeOffline)."""
        if broker_id not in self.ctx.live_or_shutting_down_broker_ids:
            return
        self.channel.remove_broker(broker_id)
        if self.on_remove is not None:
            self.on_remove(broker_id)
        self.ctx.remove_live_brokers([broker_id])
        self.ctx.shutting_down_broker_ids.discard(broker_id)
        affected = [tp for tp in self._all_partitions() if broker_id in self.ctx.partition_replica_assignment(tp)]
        if not self.ctx.live_or_shutting_down_broker_ids:
            return

        def build() -> None:
            for tp in affected:
                if self._leader(tp) == broker_id:
                    self._elect(tp, exclude=(broker_id,))
                    self._add_leader_and_isr(tp, self._live_replicas(tp))
            self.batch.add_update_metadata_request_for_brokers(self.ctx.live_or_shutting_down_broker_ids, affected)

        self._send(build)

    def controlled_shutdown(self, broker_id: int) -> int:
        """KafkaController.doControlledShutdown: leadership moves off the broker (LeaderAndIsr to
        the remaining replicas, UpdateMetadata to all), and its follower replicas stop
        (StopReplica delete=false). Returns the number of partitions it led before."""
        self.ctx.shutting_down_broker_ids.add(broker_id)
        led = [tp for tp in self._all_partitions() if self._leader(tp) == broker_id]
        followed = [tp for tp in self._all_partitions()
                    if broker_id in self.ctx.partition_replica_assignment(tp) and self._leader(tp) != broker_id]

        def build() -> None:
            # a partition whose only replica shuts down loses its leader (as in KRaft) and still
            # needs its UpdateMetadata, which no LeaderAndIsr add schedules then
            uncovered = []
            for tp in led:
                self._elect(tp, exclude=(broker_id,))
                others = [r for r in self._live_replicas(tp) if r != broker_id]
                self._add_leader_and_isr(tp, others)
                if not others:
                    uncovered.append(tp)
            for tp in followed:
                self.batch.add_stop_replica_request_for_brokers([broker_id], tp, False)
                self._shrink_isr(tp, broker_id)
                self._add_leader_and_isr(tp, [self._leader(tp)])
                if self._leader(tp) < 0:
                    uncovered.append(tp)
            if uncovered:
                self.batch.add_update_metadata_request_for_brokers(self.ctx.live_or_shutting_down_broker_ids, uncovered)

        self._send(build)
        return len(led)

    # ------------------------------------------------------------------ topics

    def create_topics(self, assignments: Mapping[str, Sequence[Sequence[int]]], topic_ids: Mapping[str, uuid.UUID] | None = None) -> None:
        """New topics: leader = first live replica, ISR = live replicas; LeaderAndIsr is_new."""
        created: list[TopicPartition] = []
        for topic, parts in assignments.items():
            self.ctx.set_all_topics([*self.ctx.all_topics, topic])
            self.ctx.add_topic_id(topic, (topic_ids or {}).get(topic) or uuid.uuid5(uuid.NAMESPACE_URL, topic))
            for p, replicas in enumerate(parts):
                tp = TopicPartition(topic, p)
                self.ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment(tuple(replicas)))
                live = [r for r in replicas if r in self.ctx.live_broker_ids]
                leader = live[0] if live else LeaderAndIsr.NO_LEADER
                self.ctx.put_partition_leadership_info(
                    tp, LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, tuple(live)), self.ctx.epoch))
                created.append(tp)

        def build() -> None:
            for tp in created:
                assignment = self.ctx.partition_full_replica_assignment(tp)
                info = self.ctx.partition_leadership_info(tp)
                assert info is not None
                self.batch.add_leader_and_isr_request_for_brokers(self._live_replicas(tp), tp, info, assignment, True)

        self._send(build)

    def delete_topics(self, topics: Iterable[str]) -> None:
        """TopicDeletionManager: UpdateMetadata with leader -2 to all, then StopReplica
        (delete=true) to every live replica; complete when they all answered NONE."""
        topics = list(topics)
        self.ctx.queue_topic_deletion(topics)
        self.ctx.begin_topic_deletion(topics)
        parts = [tp for t in topics for tp in sorted(self.ctx.partitions_for_topic(t))]
        for t in topics:
            self._deletion_pending[t] = {(tp, r) for tp in parts if tp.topic == t for r in self._live_replicas(tp)}

        def build() -> None:
            self.batch.add_update_metadata_request_for_brokers(self.ctx.live_or_shutting_down_broker_ids, parts)
            for tp in parts:
                self.batch.add_stop_replica_request_for_brokers(self._live_replicas(tp), tp, True)

        self._send(build)
        for t in topics:
            if not self._deletion_pending[t]:
                self._complete_deletion(t)

    def _complete_deletion(self, topic: str) -> None:
        self._deletion_pending.pop(topic, None)
        self.ctx.remove_topic(topic)
        self.deleted_topics.append(topic)

    @property
    def deletions_pending(self) -> int:
        return len(self._deletion_pending)

    def reassign(self, tp: TopicPartition, target: Sequence[int]) -> None:
        """KafkaController.onPartitionReassignment, with new replicas caught up at once:
        RS = ORS + TRS with adding/removing (LeaderAndIsr to RS), then the leader moves into TRS
        if needed and ISR = live TRS (LeaderAndIsr to TRS), StopReplica delete=true to the
        removed replicas, and UpdateMetadata to all."""
        old = self.ctx.partition_full_replica_assignment(tp)
        target = tuple(target)
        rs = tuple(dict.fromkeys((*target, *old.replicas)))
        adding = tuple(r for r in target if r not in old.replicas)
        removing = tuple(r for r in old.replicas if r not in target)
        self.ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment(rs, adding, removing))
        info = self.ctx.partition_leadership_info(tp)
        assert info is not None
        lai = info.leader_and_isr
        self.ctx.put_partition_leadership_info(tp, LeaderIsrAndControllerEpoch(
            LeaderAndIsr(lai.leader, tuple(dict.fromkeys((*lai.isr, *[r for r in adding if r in self.ctx.live_broker_ids]))),
                         lai.leader_epoch + 1, lai.partition_epoch + 1), self.ctx.epoch))
        self._send(lambda: self._add_leader_and_isr(tp, self._live_replicas(tp)))
        self.ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment(target))
        info = self.ctx.partition_leadership_info(tp)
        assert info is not None
        lai = info.leader_and_isr
        live_target = [r for r in target if r in self.ctx.live_broker_ids]
        leader = lai.leader if lai.leader in live_target else (live_target[0] if live_target else LeaderAndIsr.NO_LEADER)
        self.ctx.put_partition_leadership_info(tp, LeaderIsrAndControllerEpoch(
            LeaderAndIsr(leader, tuple(live_target), lai.leader_epoch + 1, lai.partition_epoch + 1), self.ctx.epoch))

        def build() -> None:
            self._add_leader_and_isr(tp, live_target)
            gone = [r for r in removing if r in self.ctx.live_or_shutting_down_broker_ids]
            self.batch.add_stop_replica_request_for_brokers(gone, tp, True)
            self.batch.add_update_metadata_request_for_brokers(self.ctx.live_or_shutting_down_broker_ids, [tp])

        self._send(build)

    def failover(self) -> None:
        """A new KRaft controller (epoch + 1) syncs the brokers from its image, as the migration
        propagator does (kafka-migration-propagator.md, MP:219-246): UpdateMetadata with every
        partition to every broker, then a FULL batch: LeaderAndIsr (is_new) for every partition to
        its replicas, which brings a FULL UpdateMetadata with everything. No StopReplica: FULL
        lets a broker drop stray logs and deleted topics by itself."""
        self.ctx.epoch += 1
        self._send(lambda: self.batch.add_update_metadata_request_for_brokers(
            self.ctx.live_or_shutting_down_broker_ids, self._all_partitions()))

        def build() -> None:
            self.batch.set_update_type(UpdateType.FULL)
            for tp in self._all_partitions():
                info = self.ctx.partition_leadership_info(tp)
                assert info is not None
                self.batch.add_leader_and_isr_request_for_brokers(
                    self.ctx.partition_replica_assignment(tp), tp, info, self.ctx.partition_full_replica_assignment(tp), True)

        self._send(build)

    # ------------------------------------------------------------------ helpers

    def _all_partitions(self) -> list[TopicPartition]:
        return list(self.ctx.partitions_leadership_info)

    def _leader(self, tp: TopicPartition) -> int:
        info = self.ctx.partition_leadership_info(tp)
        return LeaderAndIsr.NO_LEADER if info is None else info.leader_and_isr.leader

    def _live_replicas(self, tp: TopicPartition) -> list[int]:
        live = self.ctx.live_or_shutting_down_broker_ids
        return [r for r in self.ctx.partition_replica_assignment(tp) if r in live]

    def _elect(self, tp: TopicPartition, exclude: Sequence[int]) -> None:
        """New leader: first live ISR replica not excluded, else first live replica; epoch + 1."""
        info = self.ctx.partition_leadership_info(tp)
        assert info is not None
        lai = info.leader_and_isr
        live = [r for r in self._live_replicas(tp) if r not in exclude and r not in self.ctx.shutting_down_broker_ids]
        in_isr = [r for r in live if r in lai.isr]
        leader = (in_isr or live or [LeaderAndIsr.NO_LEADER])[0]
        isr = tuple(in_isr) if in_isr else ((leader,) if leader >= 0 else lai.isr)
        self.ctx.put_partition_leadership_info(
            tp, LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr, lai.leader_epoch + 1, lai.partition_epoch + 1), self.ctx.epoch))

    def _shrink_isr(self, tp: TopicPartition, broker_id: int) -> None:
        info = self.ctx.partition_leadership_info(tp)
        assert info is not None
        lai = info.leader_and_isr
        if broker_id in lai.isr and len(lai.isr) > 1:
            self.ctx.put_partition_leadership_info(tp, LeaderIsrAndControllerEpoch(
                LeaderAndIsr(lai.leader, tuple(r for r in lai.isr if r != broker_id), lai.leader_epoch, lai.partition_epoch + 1),
                self.ctx.epoch))

    def _add_leader_and_isr(self, tp: TopicPartition, brokers: Sequence[int]) -> None:
        info = self.ctx.partition_leadership_info(tp)
        if info is None or not brokers:
            return
        self.batch.add_leader_and_isr_request_for_brokers(
            list(brokers), tp, info, self.ctx.partition_full_replica_assignment(tp), False)
