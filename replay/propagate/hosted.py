"""Which partitions each broker hosts, kept across deltas: a changed broker's partitions without a
walk over every partition of the image.

Why: a delta that changes a target broker sends LeaderAndIsr for every partition the broker hosts
(MigrationPropagator.scala 3.9, MP:145-162; propagator.py's batch B). Finding them by testing every
partition's replicas costs a Python step per partition of the image: 50,000 per such delta, 12.7M
on the 1M-record generated log (475 broker deltas), about 6% of its sizes-only replay.

Rules of this module:
- What it holds: for one topics mapping (``MetadataImage.topics``), each broker's hosted partitions
  per topic id, and each partition's replica tuple they were indexed from.
- How it follows the image: ``advance(before, after, changes)`` after each delta (apply_delta's
  DeltaChanges): when the index describes ``before``, only the delta's partitions whose replica
  tuple is another object are moved (apply_delta keeps an unchanged tuple: PartitionRegistration.merge);
  deleted topics are dropped, created ones replaced whole (apply_delta starts them empty). A
  topic both deleted and changed in one delta, or any other mapping, leaves the index unknown; it
  is then built from the image when next asked (``hosted``), one walk. A NoOp delta keeps the
  topics mapping object, so it needs no advance.
- What ``hosted(image, brokers)`` returns: exactly propagator._hosted_by's list: (TopicPartition,
  registration) for every partition of a topic named in ``topic_ids_by_name`` (each name that maps
  to the topic's id) with a replica among ``brokers``, by (name, partition).
  tests/replay/test_hosted.py compares it with the walk on every broker delta of generated logs.
- Memory: one entry per partition replica of the image: 17 MB for the 50,000-partition generated
  image (tracemalloc). Yet the sequential replay's peak RSS on the 10M-record generated log is
  34 MB higher with the index (/usr/bin/time, same log: 358.9 MiB, 324.6 MiB with the walk in its
  place, 325.8 MiB before the index), against 2 MB at 1M records, so the driver's 1M -> 10M ratio
  is 1.11x (issue 13's target 1.1x). Not yet explained: copying a (broker, topic) set that shrank
  (a set keeps its table) changed nothing (356.8 MiB). Open in issue 26.
- Measured (1M-record logs, the 226 / 184 broker deltas, in one process, load 5.6): the walk
  2.43 s, the index 0.60 s plus 0.56 s of advancing over every delta (default shape); 10 large
  topics 1.71 s against 0.30 + 0.67 s.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import Any

from ctrlbatch.context import TopicPartition

from ..image.image import MetadataImage, PartitionRegistration, TopicImage

__all__ = ["HostedIndex"]


class HostedIndex:
    """Each broker's hosted partitions for the last topics mapping (see the module rules)."""

    __slots__ = ("_by_broker", "_names", "_names_by_id", "_replicas", "_topics", "builds")

    def __init__(self) -> None:
        self._topics: Mapping[uuid.UUID, TopicImage] | None = None
        self._replicas: dict[uuid.UUID, dict[int, tuple[int, ...]]] = {}
        self._by_broker: dict[int, dict[uuid.UUID, set[int]]] = {}
        self._names: Mapping[str, uuid.UUID] | None = None
        self._names_by_id: dict[uuid.UUID, list[str]] = {}
        self.builds = 0  # walks of a whole image so far (tests see what advancing saved)

    def __repr__(self) -> str:
        return f"HostedIndex({len(self._replicas)} topics, {self.builds} builds)"

    def _add(self, tid: uuid.UUID, p: int, replicas: tuple[int, ...]) -> None:
        by_broker = self._by_broker
        for r in replicas:
            topics = by_broker.get(r)
            if topics is None:
                topics = by_broker[r] = {}
            hosted = topics.get(tid)
            if hosted is None:
                topics[tid] = {p}
            else:
                hosted.add(p)

    def _remove(self, tid: uuid.UUID, p: int, replicas: tuple[int, ...]) -> None:
        by_broker = self._by_broker
        for r in replicas:
            hosted = by_broker[r].get(tid)
            if hosted is not None:
                hosted.discard(p)
                if not hosted:
                    del by_broker[r][tid]

    def _drop(self, tid: uuid.UUID) -> None:
        known = self._replicas.pop(tid, None)
        if known:
            for p, replicas in known.items():
                self._remove(tid, p, replicas)

    def _build(self, topics: Mapping[uuid.UUID, TopicImage]) -> None:
        self._replicas, self._by_broker = {}, {}
        for tid, topic in topics.items():
            known = self._replicas[tid] = {}
            for p, reg in topic.partitions.items():
                known[p] = reg.replicas
                self._add(tid, p, reg.replicas)
        self._topics = topics
        self.builds += 1

    def advance(self, before: Mapping[uuid.UUID, TopicImage], after: Mapping[uuid.UUID, TopicImage], changes: Any) -> None:
        """Follow one delta from the image whose topics are ``before`` to ``after`` (its DeltaChanges)."""
        if after is before or self._topics is None:
            return
        if self._topics is not before or not changes.deleted_topics.keys().isdisjoint(changes.changed_topics):
            self._topics = None
            return
        for tid in changes.deleted_topics:
            self._drop(tid)
        replicas = self._replicas
        for tid, change in changes.changed_topics.items():
            if change.created:
                self._drop(tid)
            known = replicas.get(tid)
            if known is None:
                known = replicas[tid] = {}
            get = known.get  # most changes keep the replica tuple (leader and ISR changes): found in one pass
            moved = [(p, reg.replicas) for p, reg in change.partitions.items() if get(p) is not reg.replicas]
            for p, new in moved:
                old = get(p)
                if old is not None:
                    if old == new:
                        known[p] = new
                        continue
                    self._remove(tid, p, old)
                known[p] = new
                self._add(tid, p, new)
        self._topics = after

    def _names_of(self, names: Mapping[str, uuid.UUID]) -> dict[uuid.UUID, list[str]]:
        if self._names is not names:
            by_id: dict[uuid.UUID, list[str]] = {}
            for name, tid in names.items():
                by_id.setdefault(tid, []).append(name)
            self._names, self._names_by_id = names, by_id
        return self._names_by_id

    def hosted(self, image: MetadataImage, brokers: Collection[int]) -> list[tuple[TopicPartition, PartitionRegistration]]:
        """The partitions with a replica on one of ``brokers``, by (topic name, partition)."""
        topics = image.topics
        if self._topics is not topics:
            self._build(topics)
        by_broker = self._by_broker
        found: Mapping[uuid.UUID, set[int]]
        if len(brokers) == 1:  # the usual case: the broker's own sets, read only
            found = by_broker.get(next(iter(brokers)), {})
        else:
            found = {}
            for b in brokers:
                for tid, ps in by_broker.get(b, {}).items():
                    have = found.get(tid)
                    if have is None:
                        found[tid] = set(ps)
                    else:
                        have.update(ps)
        names_by_id = self._names_of(image.topic_ids_by_name)
        named = sorted((name, tid) for tid in found for name in names_by_id.get(tid, ()))
        out: list[tuple[TopicPartition, PartitionRegistration]] = []
        for name, tid in named:
            parts = topics[tid].partitions
            out.extend([(TopicPartition(name, p), parts[p]) for p in sorted(found[tid])])
        return out
