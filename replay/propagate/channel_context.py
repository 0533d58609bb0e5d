"""MigrationControllerChannelContext: the batch's ControllerChannelContext over a MetadataImage.

Rules (kafka-migration-propagator.md §3; MigrationControllerChannelContext.scala, 3.9):
- Live-or-shutting-down brokers are *all* registered brokers, fenced and KRaft ones included;
  a broker's epoch is its registration's KRaft broker epoch.
- A topic is queued for deletion (and its deletion in progress) when its name is not in the
  image; its leader epoch is then -2.
- A replica is online when its broker is registered (fenced counts) and in the replica list.
- Leadership comes from the partition registration, with the image's KRaft epoch as the
  controller epoch.
Beyond Kafka: brokers are iterated in ascending id, so UpdateMetadata's LiveBrokers and
LeaderAndIsr's LiveLeaders come out sorted; the broker views are built once per image broker
set and shared; a topic's partitions are found by name once per context (the image never
changes), not through the name's id on every look-up. The optional hints of ControllerContext
that the batch uses to go faster are provided (``broker_membership_version``: constant, the image never changes;
``update_metadata_view``).
Leadership (``leadership_of``) is kept per registration object, not per registration value: an
lru_cache keyed by the registration hashed its ten fields in Python (attrs) on every call, and
apply_delta keeps an unchanged partition's object, so identity finds every reuse. The lean path
(incremental.py) reads ``partition_registration`` and ``kraft_epoch`` and makes no leadership.
"""

from __future__ import annotations

import uuid
from collections.abc import KeysView, Mapping, Sequence
from typing import Any

from ctrlbatch.context import Broker, LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition

from ..image.image import BrokerRegistration, MetadataImage, PartitionRegistration

__all__ = ["MigrationControllerChannelContext", "leadership_of"]

_EPOCH_DURING_DELETE = LeaderAndIsr.EPOCH_DURING_DELETE
_NO_EPOCH = LeaderAndIsr.NO_EPOCH
_UNSEEN: Any = object()


class _BrokerView:
    """Sorted views of an image's brokers, built once per brokers mapping."""

    __slots__ = ("brokers", "epochs", "ids", "source")

    def __init__(self, registrations: Mapping[int, BrokerRegistration]) -> None:
        ordered = sorted(registrations)
        self.source = registrations
        self.epochs: dict[int, int] = {b: registrations[b].epoch for b in ordered}
        self.ids: KeysView[int] = self.epochs.keys()
        self.brokers: KeysView[Broker] = dict.fromkeys(registrations[b].broker for b in ordered).keys()


_last_view: list[_BrokerView] = []


def _broker_view(registrations: Mapping[int, BrokerRegistration]) -> _BrokerView:
    """Images that share a brokers mapping (most consecutive ones) share one view."""
    if _last_view and _last_view[0].source is registrations:
        return _last_view[0]
    view = _BrokerView(registrations)
    _last_view[:] = [view]
    return view


_LEADERSHIP_KEPT = 1 << 16  # registrations whose leadership is kept (the lru_cache it replaces kept as many)
_leadership_kept: dict[int, tuple[PartitionRegistration, int, LeaderIsrAndControllerEpoch]] = {}


def leadership_of(partition: PartitionRegistration, kraft_epoch: int) -> LeaderIsrAndControllerEpoch:
    """MCCC.partitionLeadershipInfo for a known partition (MCCC:43-54). Kept per registration
    object (under its id, with the registration, so the id names it) and KRaft epoch: apply_delta
    keeps an unchanged partition's registration object, so it is made once per change, and a
    look-up neither hashes nor compares the registration's ten fields (attrs' Python __hash__:
    627,198 calls, 0.59 s under the profiler on the 1M-record log, with the lru_cache this
    replaces). Bounded: the whole memo is dropped when it holds _LEADERSHIP_KEPT entries."""
    found = _leadership_kept.get(id(partition))
    if found is not None and found[0] is partition and found[1] == kraft_epoch:
        return found[2]
    if len(_leadership_kept) >= _LEADERSHIP_KEPT:
        _leadership_kept.clear()
    info = LeaderIsrAndControllerEpoch(
        LeaderAndIsr(
            partition.leader, partition.isr, partition.leader_epoch, partition.partition_epoch,
            partition.leader_recovery_state,
        ),
        kraft_epoch,
    )
    _leadership_kept[id(partition)] = (partition, kraft_epoch, info)
    return info


class MigrationControllerChannelContext:
    """Kafka's ControllerChannelContext read from a MetadataImage (immutable, like the image)."""

    broker_membership_version = 0

    def __init__(self, image: MetadataImage) -> None:
        if not isinstance(image, MetadataImage):
            raise TypeError(f"image: expected a MetadataImage, got {type(image).__name__}")
        self.image = image
        view = _broker_view(image.brokers)
        self._epochs = view.epochs
        self._ids = view.ids
        self._brokers = view.brokers
        self._names = image.topic_ids_by_name
        self._topics = image.topics
        self._kraft_epoch = image.epoch
        self._by_name: dict[str, Mapping[int, PartitionRegistration] | None] = {}  # a topic's partitions by name

    def __repr__(self) -> str:
        return f"MigrationControllerChannelContext({self.image!r})"

    def _partition(self, tp: TopicPartition) -> PartitionRegistration | None:
        parts = self._by_name.get(tp.topic, _UNSEEN)
        if parts is _UNSEEN:  # name -> id -> topic once per name: a UUID's hash is Python code
            tid = self._names.get(tp.topic)
            topic = None if tid is None else self._topics.get(tid)
            parts = self._by_name[tp.topic] = None if topic is None else topic.partitions
        return None if parts is None else parts.get(tp.partition)

    def partition_registration(self, tp: TopicPartition) -> PartitionRegistration | None:
        """tp's registration in the image (None: no such partition): what its leadership is made of."""
        return self._partition(tp)

    @property
    def kraft_epoch(self) -> int:
        """The image's KRaft epoch: every leadership's controller epoch (MCCC:43-54)."""
        return self._kraft_epoch

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return topic not in self._names

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return topic not in self._names

    @property
    def topic_ids(self) -> Mapping[str, uuid.UUID]:
        return self._names

    @property
    def live_broker_id_and_epochs(self) -> Mapping[int, int]:
        return self._epochs

    @property
    def live_or_shutting_down_brokers(self) -> KeysView[Broker]:
        return self._brokers

    @property
    def live_or_shutting_down_broker_ids(self) -> KeysView[int]:
        return self._ids

    def is_replica_online(self, broker_id: int, partition: TopicPartition) -> bool:
        return broker_id in self._epochs and broker_id in self.partition_replica_assignment(partition)

    def partition_replica_assignment(self, partition: TopicPartition) -> Sequence[int]:
        p = self._partition(partition)
        return () if p is None else p.replicas

    def leader_epoch(self, partition: TopicPartition) -> int:
        if partition.topic not in self._names:
            return _EPOCH_DURING_DELETE
        p = self._partition(partition)
        return _NO_EPOCH if p is None else p.leader_epoch

    def partition_leadership_info(self, partition: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        p = self._partition(partition)
        return None if p is None else self.leadership_of(p)

    def leadership_of(self, partition: PartitionRegistration) -> LeaderIsrAndControllerEpoch:
        """partition_leadership_info for a registration already found in this context's image."""
        found = _leadership_kept.get(id(partition))  # leadership_of's memo, read without the call
        if found is not None and found[0] is partition and found[1] == self._kraft_epoch:
            return found[2]
        return leadership_of(partition, self._kraft_epoch)

    def update_metadata_view(self, partition: TopicPartition) -> tuple[Any, ...] | None:
        """(leadership, replicas, offline replicas, queued for deletion) in one look-up, or None."""
        p = self._partition(partition)
        if p is None:
            return None
        live = self._epochs
        offline = tuple([r for r in p.replicas if r not in live])
        return self.leadership_of(p), p.replicas, offline, False
