"""Which partitions each broker hosts, kept across deltas: a changed broker's partitions without a
walk over every partition of the image.

Why: a delta that changes a target broker sends LeaderAndIsr for every partition the broker hosts
(MigrationPropagator.scala 3.9, MP:145-162; propagator.py's batch B). Finding them by testing every
partition's replicas costs a Python step per partition of the image: 50,000 per such delta, 12.7M
on the 1M-record generated log (475 broker deltas), about 6% of its sizes-only replay.

Rules of this module:
- What it holds: for one topics mapping (``MetadataImage.topics``), each broker's hosted partitions
  per topic id: one partition as the int itself, two or more as a sorted tuple (most (broker,
  topic) pairs hold one to four partitions, and a set object costs 216 bytes; ``hosted`` then
  needs no sort). The replicas a partition was indexed from are the previous image's.
- How it follows the image: ``advance(before, after, changes)`` after each delta (apply_delta's
  DeltaChanges): when the index describes ``before``, only the delta's partitions whose replica
  tuple is another, unequal one are moved, from ``before``'s replicas to the new ones (apply_delta
  keeps an unchanged tuple: PartitionRegistration.merge); a deleted topic's entries are dropped
  per broker, a created one is indexed whole (apply_delta starts it empty), both without a step per
  partition. A topic both deleted and changed in one delta, or any other mapping, leaves the
  index unknown; it is then built from the image when next asked (``hosted``), one walk. A NoOp
  delta keeps the topics mapping object, so it needs no advance.
- What ``hosted(image, brokers)`` returns: exactly propagator._hosted_by's list: (TopicPartition,
  registration) for every partition of a topic named in ``topic_ids_by_name`` (each name that maps
  to the topic's id) with a replica among ``brokers``, by (name, partition).
  tests/replay/test_hosted.py compares it with the walk on every broker delta of generated logs.
- Memory (objects reachable from the index and not from the image, end of the generated logs,
  sizes-only propagation): 6.2 MiB at 1M records, 10.3 MiB at 10M. With a set per (broker,
  topic) and a copy of every partition's replica tuple it was 17.9 and 32.5 MiB, and the
  sequential replay's peak RSS grew 1.11x from 1M to 10M records (issue 13's target 1.1x).
- Measured: in one process, both indexes advanced over every delta and asked for every broker
  delta's partitions (the same lists; load 5.0-5.2 on 2 cores): default shape (1M records, 475
  broker deltas) advance 1.44 -> 0.85 s, hosted 3.72 -> 2.23 s; 10 large topics (387) advance
  0.83 -> 0.55 s, hosted 1.45 -> 0.81 s. The walk it replaced: 2.43 s on the default shape's
  226 changed-target deltas (load 5.6).
"""

from __future__ import annotations

import uuid
from bisect import bisect_left
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ctrlbatch.context import TopicPartition

from ..image.image import MetadataImage, PartitionRegistration, TopicImage

__all__ = ["HostedIndex"]


class HostedIndex:
    """Each broker's hosted partitions for the last topics mapping (see the module rules)."""

    __slots__ = ("_by_broker", "_names", "_names_by_id", "_topics", "builds")

    def __init__(self) -> None:
        self._topics: Mapping[uuid.UUID, TopicImage] | None = None
        # broker -> topic id -> its one hosted partition (an int) or several (a sorted tuple, two or more)
        self._by_broker: dict[int, dict[uuid.UUID, int | tuple[int, ...]]] = {}
        self._names: Mapping[str, uuid.UUID] | None = None
        self._names_by_id: dict[uuid.UUID, list[str]] = {}
        self.builds = 0  # walks of a whole image so far (tests see what advancing saved)

    def __repr__(self) -> str:
        return f"HostedIndex({len(self._by_broker)} brokers, {self.builds} builds)"

    def _add(self, tid: uuid.UUID, p: int, replicas: tuple[int, ...]) -> None:
        by_broker = self._by_broker
        for r in replicas:
            topics = by_broker.get(r)
            if topics is None:
                topics = by_broker[r] = {}
            hosted = topics.get(tid)
            if hosted is None:
                topics[tid] = p
            elif isinstance(hosted, int):
                if hosted != p:
                    topics[tid] = (hosted, p) if hosted < p else (p, hosted)
            else:
                i = bisect_left(hosted, p)
                if i == len(hosted) or hosted[i] != p:
                    topics[tid] = (*hosted[:i], p, *hosted[i:])

    def _remove(self, tid: uuid.UUID, p: int, replicas: tuple[int, ...]) -> None:
        by_broker = self._by_broker
        for r in replicas:
            topics = by_broker[r]
            hosted = topics.get(tid)
            if hosted is None:
                continue
            if isinstance(hosted, int):
                if hosted == p:
                    del topics[tid]
                continue
            i = bisect_left(hosted, p)
            if i < len(hosted) and hosted[i] == p:
                rest = hosted[:i] + hosted[i + 1 :]
                topics[tid] = rest[0] if len(rest) == 1 else rest

    def _drop(self, tid: uuid.UUID) -> None:
        """Forget a whole topic: its entry under every broker (not partition by partition)."""
        for topics in self._by_broker.values():
            topics.pop(tid, None)

    def _add_topics(self, topics: Iterable[tuple[uuid.UUID, TopicImage]]) -> None:
        """Index whole topics the index does not hold: each (broker, topic)'s partitions gathered
        in lists, then kept as _add keeps them (a new topic of thousands of partitions is not
        inserted partition by partition)."""
        lists: dict[int, dict[uuid.UUID, list[int]]] = {}
        for tid, topic in topics:
            for p, reg in topic.partitions.items():
                for r in reg.replicas:
                    per_topic = lists.get(r)
                    if per_topic is None:
                        per_topic = lists[r] = {}
                    found = per_topic.get(tid)
                    if found is None:
                        per_topic[tid] = [p]
                    else:
                        found.append(p)
        by_broker = self._by_broker
        for r, per_topic in lists.items():
            kept = by_broker.get(r)
            if kept is None:
                kept = by_broker[r] = {}
            for tid, ps in per_topic.items():
                kept[tid] = ps[0] if len(ps) == 1 else tuple(sorted(set(ps)))

    def _build(self, topics: Mapping[uuid.UUID, TopicImage]) -> None:
        self._by_broker = {}
        self._add_topics(topics.items())
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
        created: list[tuple[uuid.UUID, TopicImage]] = []
        for tid, change in changes.changed_topics.items():
            old_topic = before.get(tid)
            if change.created or old_topic is None:  # created (apply_delta starts it empty): indexed whole
                self._drop(tid)
                topic = after.get(tid)
                if topic is not None:
                    created.append((tid, topic))
                continue
            get = old_topic.partitions.get
            for p, reg in change.partitions.items():
                new = reg.replicas
                old = get(p)  # most changes keep the replica tuple (leader and ISR changes)
                if old is None:
                    self._add(tid, p, new)
                elif old.replicas is not new and old.replicas != new:
                    self._remove(tid, p, old.replicas)
                    self._add(tid, p, new)
        if created:
            self._add_topics(created)
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
        found: Mapping[uuid.UUID, int | tuple[int, ...] | set[int]]
        if len(brokers) == 1:  # the usual case: the broker's own entries, read only
            found = by_broker.get(next(iter(brokers)), {})
        else:
            union: dict[uuid.UUID, set[int]] = {}
            for b in brokers:
                for tid, ps in by_broker.get(b, {}).items():
                    have = union.get(tid)
                    if have is None:
                        have = union[tid] = set()
                    if isinstance(ps, int):
                        have.add(ps)
                    else:
                        have.update(ps)
            found = union
        names_by_id = self._names_of(image.topic_ids_by_name)
        named = sorted((name, tid) for tid in found for name in names_by_id.get(tid, ()))
        out: list[tuple[TopicPartition, PartitionRegistration]] = []
        for name, tid in named:
            parts = topics[tid].partitions
            entry = found[tid]
            if isinstance(entry, int):
                out.append((TopicPartition(name, entry), parts[entry]))
            else:  # a broker's own tuple is sorted already; a union is a set
                ordered = entry if isinstance(entry, tuple) else sorted(entry)
                out.extend([(TopicPartition(name, p), parts[p]) for p in ordered])
        return out
