"""Which partitions each broker hosts, kept across deltas: a changed broker's partitions without a
walk over every partition of the image.

Why: a delta that changes a target broker sends LeaderAndIsr for every partition the broker hosts
(MigrationPropagator.scala 3.9, MP:145-162; propagator.py's batch B). Finding them by testing every
partition's replicas costs a Python step per partition of the image: 50,000 per such delta, 12.7M
on the 1M-record generated log (475 broker deltas), about 6% of its sizes-only replay.

Rules of this module:
- What it holds: for one topics mapping (``MetadataImage.topics``), each broker's hosted partitions
  per topic id, keyed by the id's ``int`` (uuid.UUID.__hash__ is a Python function, one call per
  look-up; an int hashes in C): one partition as the int itself, two or more as a sorted tuple (most (broker,
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
  ``hosted_keys`` is the same list with (name, partition) tuples, what the propagator's plans
  are keyed by (``hosted`` makes its TopicPartitions from it): a broker delta of the default
  shape hosts ~1,500 partitions, each a TopicPartition (attrs __init__) made and dropped before.
- Memory (objects reachable from the index and not from the image, end of the generated logs,
  sizes-only propagation): 6.2 MiB at 1M records, 10.3 MiB at 10M. With a set per (broker,
  topic) and a copy of every partition's replica tuple it was 17.9 and 32.5 MiB, and the
  sequential replay's peak RSS grew 1.11x from 1M to 10M records (issue 13's target 1.1x).
- Measured: in one process, both indexes advanced over every delta and asked for every broker
  delta's partitions (the same lists; load 5.0-5.2 on 2 cores): default shape (1M records, 475
  broker deltas) advance 1.44 -> 0.85 s, hosted 3.72 -> 2.23 s; 10 large topics (387) advance
  0.83 -> 0.55 s, hosted 1.45 -> 0.81 s. The walk it replaced: 2.43 s on the default shape's
  226 changed-target deltas (load 5.6).
- Built per topic (its brokers' lists keyed by the broker, then one store per (broker, topic)) and
  keyed by the id's int: a build of the default shape's image at 500k records (50,877 partitions,
  what each Spark unit does once, from its unpacked image) 134 -> 44 ms CPU, the 10 large topics'
  34 -> 19 ms (A/B in one process, load 3.2 on 2 cores); over the 1M-record default log's 226
  broker deltas advance 0.77 -> 0.69 s and hosted 0.99 -> 0.71 s.
- ``advance`` reads a changed partition's old registration from the delta's ``previous``
  (apply_delta looked it up already) and tests deleted-and-changed only when a topic was deleted
  (``keys().isdisjoint(dict)`` hashes every changed id even against no keys): no topic id hashed
  per changed topic. cachegrind of a unit (the 1M default log's image at delta 250k, then 15k
  deltas, sha256): 8.595 G -> 8.570 G instructions.
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
        # broker -> topic id's int -> its one hosted partition (an int) or several (a sorted tuple, two or more)
        self._by_broker: dict[int, dict[int, int | tuple[int, ...]]] = {}
        self._names: Mapping[str, uuid.UUID] | None = None
        self._names_by_id: dict[int, tuple[uuid.UUID, list[str]]] = {}
        self.builds = 0  # walks of a whole image so far (tests see what advancing saved)

    def __repr__(self) -> str:
        return f"HostedIndex({len(self._by_broker)} brokers, {self.builds} builds)"

    def _add(self, key: int, p: int, replicas: tuple[int, ...]) -> None:
        by_broker = self._by_broker
        for r in replicas:
            topics = by_broker.get(r)
            if topics is None:
                topics = by_broker[r] = {}
            hosted = topics.get(key)
            if hosted is None:
                topics[key] = p
            elif isinstance(hosted, int):
                if hosted != p:
                    topics[key] = (hosted, p) if hosted < p else (p, hosted)
            else:
                i = bisect_left(hosted, p)
                if i == len(hosted) or hosted[i] != p:
                    topics[key] = (*hosted[:i], p, *hosted[i:])

    def _remove(self, key: int, p: int, replicas: tuple[int, ...]) -> None:
        by_broker = self._by_broker
        for r in replicas:
            topics = by_broker[r]
            hosted = topics.get(key)
            if hosted is None:
                continue
            if isinstance(hosted, int):
                if hosted == p:
                    del topics[key]
                continue
            i = bisect_left(hosted, p)
            if i < len(hosted) and hosted[i] == p:
                rest = hosted[:i] + hosted[i + 1 :]
                topics[key] = rest[0] if len(rest) == 1 else rest

    def _drop(self, key: int) -> None:
        """Forget a whole topic: its entry under every broker (not partition by partition)."""
        for topics in self._by_broker.values():
            topics.pop(key, None)

    def _add_topics(self, topics: Iterable[tuple[uuid.UUID, TopicImage]]) -> None:
        """Index whole topics the index does not hold: each topic's partitions gathered per broker
        in lists (keyed by the broker's int: no topic id hashed per replica), then kept as _add
        keeps them (a new topic of thousands of partitions is not inserted partition by partition)."""
        by_broker = self._by_broker
        for tid, topic in topics:
            key = tid.int
            lists: dict[int, list[int]] = {}
            for p, reg in topic.partitions.items():
                for r in reg.replicas:
                    found = lists.get(r)
                    if found is None:
                        lists[r] = [p]
                    else:
                        found.append(p)
            for r, ps in lists.items():
                kept = by_broker.get(r)
                if kept is None:
                    kept = by_broker[r] = {}
                kept[key] = ps[0] if len(ps) == 1 else tuple(sorted(set(ps)))

    def _build(self, topics: Mapping[uuid.UUID, TopicImage]) -> None:
        self._by_broker = {}
        self._add_topics(topics.items())
        self._topics = topics
        self.builds += 1

    def advance(self, before: Mapping[uuid.UUID, TopicImage], after: Mapping[uuid.UUID, TopicImage], changes: Any) -> None:
        """Follow one delta from the image whose topics are ``before`` to ``after`` (its DeltaChanges)."""
        if after is before or self._topics is None:
            return
        deleted = changes.deleted_topics
        if self._topics is not before or (deleted and not deleted.keys().isdisjoint(changes.changed_topics)):
            self._topics = None
            return
        for tid in deleted:
            self._drop(tid.int)
        created: list[tuple[uuid.UUID, TopicImage]] = []
        for tid, change in changes.changed_topics.items():
            if change.created:  # apply_delta starts it empty: indexed whole
                self._drop(tid.int)
                topic = after.get(tid)
                if topic is not None:
                    created.append((tid, topic))
                continue
            # the registrations before the delta (None: a new partition, or a topic ``before`` lacks,
            # which the index then lacks too): apply_delta's own look-ups, no topic id hashed here
            get = change.previous.get
            key = tid.int
            for p, reg in change.partitions.items():
                new = reg.replicas
                old = get(p)  # most changes keep the replica tuple (leader and ISR changes)
                if old is None:
                    self._add(key, p, new)
                elif old.replicas is not new and old.replicas != new:
                    self._remove(key, p, old.replicas)
                    self._add(key, p, new)
        if created:
            self._add_topics(created)
        self._topics = after

    def _names_of(self, names: Mapping[str, uuid.UUID]) -> dict[int, tuple[uuid.UUID, list[str]]]:
        if self._names is not names:
            by_id: dict[int, tuple[uuid.UUID, list[str]]] = {}
            for name, tid in names.items():
                key = tid.int
                have = by_id.get(key)
                if have is None:
                    by_id[key] = (tid, [name])
                else:
                    have[1].append(name)
            self._names, self._names_by_id = names, by_id
        return self._names_by_id

    def hosted(self, image: MetadataImage, brokers: Collection[int]) -> list[tuple[TopicPartition, PartitionRegistration]]:
        """The partitions with a replica on one of ``brokers``, by (topic name, partition)."""
        return [(TopicPartition(*key), reg) for key, reg in self.hosted_keys(image, brokers)]

    def hosted_keys(self, image: MetadataImage, brokers: Collection[int]) -> list[tuple[tuple[str, int], PartitionRegistration]]:
        """``hosted``'s list with each partition as a (topic name, partition) tuple: what the
        propagator's plans are keyed by, no TopicPartition made (module rules)."""
        topics = image.topics
        if self._topics is not topics:
            self._build(topics)
        by_broker = self._by_broker
        found: Mapping[int, int | tuple[int, ...] | set[int]]
        if len(brokers) == 1:  # the usual case: the broker's own entries, read only
            found = by_broker.get(next(iter(brokers)), {})
        else:
            union: dict[int, set[int]] = {}
            for b in brokers:
                for key, ps in by_broker.get(b, {}).items():
                    have = union.get(key)
                    if have is None:
                        have = union[key] = set()
                    if isinstance(ps, int):
                        have.add(ps)
                    else:
                        have.update(ps)
            found = union
        names_by_id = self._names_of(image.topic_ids_by_name)
        named: list[tuple[str, int, uuid.UUID]] = []
        for key in found:
            ided = names_by_id.get(key)
            if ided is not None:
                tid = ided[0]
                named.extend([(name, key, tid) for name in ided[1]])
        named.sort()
        out: list[tuple[tuple[str, int], PartitionRegistration]] = []
        for name, key, tid in named:
            parts = topics[tid].partitions
            entry = found[key]
            if isinstance(entry, int):
                out.append(((name, entry), parts[entry]))
            else:  # a broker's own tuple is sorted already; a union is a set
                ordered = entry if isinstance(entry, tuple) else sorted(entry)
                out.extend([((name, p), parts[p]) for p in ordered])
        return out
