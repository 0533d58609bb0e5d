"""A ZooKeeper-mode broker's metadata cache (Kafka 3.9 ZkMetadataCache.updateMetadata), sans I/O.

Rules (kafka-broker-control-requests.md §3.3, cited ZkMC:line):
- Alive brokers are REPLACED by each UpdateMetadata's LiveBrokers (ZkMC:517-541); v0 brokers
  become one PLAINTEXT endpoint and below v3 a listener is named after its protocol (UMReq:157-190).
  The new map reuses each cached broker it equals and one tuple per distinct endpoint list (ours:
  Kafka builds a new snapshot), so a big UpdateMetadata repeating the live brokers, as each one
  does, costs a map of references, not a second copy (issue 24: 8 x 52 MB at once).
- Topic ids: cached ids are kept, a topic sent with the zero id loses its id, a real id overwrites.
- Partition states merge in request order: leader -2 removes the partition (and its topic and id
  once the topic is empty) and lists it as deleted; any other leader stores it and un-deletes it.
  No leader-epoch or zkVersion comparison. No partition states at all: the map is kept as is.
- A FULL request from a KRaft controller (v8+, broker with migration enabled) first deletes every
  cached topic whose id the request does not mention (ZkMC:77-91). Partitions missing from a
  mentioned topic are kept, as in Kafka (ZkMC:92-108 deletes and at once re-adds only new ones).
- ``view()`` is the comparable content: what must equal the controller's view once quiet.
- Shared topic maps (copy on write): simulated brokers of one process apply the same decoded
  UpdateMetadata (shared_decode.py), so a topic whose states in the request carry no deletion and
  cover every partition the cache holds for it gets the request's own partition map, built once
  per decoded request and topic and shared by every cache that applies it; a cache copies a shared
  map before it changes it. The content is what the per-partition merge gives; a full
  UpdateMetadata costs a broker O(topics), not O(partitions), and N brokers hold one map.
  A request whose topic states are fewer than the cached partitions of a shared map gives the
  merge of the two, itself shared by every cache that held that same map (a controlled shutdown
  touching a few partitions of every topic costs N brokers one merge per topic, not N); an
  unshared map is merged partition by partition. ``matches`` compares each distinct map content
  once per pass (``MatchMemo``).
"""

from __future__ import annotations

import collections
import hashlib
import logging
import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ctrlbatch.context import SecurityProtocol, TopicPartition
from ctrlbatch.requests import (
    ZERO_UUID,
    UpdateMetadataBroker,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)

__all__ = ["CachedBroker", "CacheView", "MatchMemo", "MetadataCache", "PartitionView", "alive_brokers", "partition_view",
           "view_digest"]

_log = logging.getLogger("ctrlbatch.sim.broker")
LEADER_DURING_DELETE = -2
FULL = 2


@attrs.frozen
class CachedBroker:
    """An alive broker: id, (listener, host, port, security protocol) per endpoint, rack."""

    id: int
    endpoints: tuple[tuple[str, str, int, int], ...]
    rack: str | None


@attrs.frozen
class PartitionView:
    """The cached content of one partition state (its UpdateMetadata fields but the topic name)."""

    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]


def partition_view(s: UpdateMetadataPartitionState) -> PartitionView:
    return PartitionView(
        s.controller_epoch, s.leader, s.leader_epoch, tuple(s.isr), s.zk_version, tuple(s.replicas),
        tuple(s.offline_replicas),
    )


@attrs.frozen
class CacheView:
    """Comparable cache content: alive brokers by id, partitions, topic ids."""

    brokers: Mapping[int, CachedBroker]
    partitions: Mapping[TopicPartition, PartitionView]
    topic_ids: Mapping[str, uuid.UUID]

    def __repr__(self) -> str:
        return f"CacheView({len(self.brokers)} brokers, {len(self.partitions)} partitions)"


def view_digest(view: CacheView) -> str:
    """A SHA-256 of the view's content in a canonical order: equal views, equal digests (for
    comparing caches across processes)."""
    h = hashlib.sha256()
    for b in sorted(view.brokers):
        h.update(repr(view.brokers[b]).encode())
    for tp in sorted(view.partitions, key=lambda tp: (tp.topic, tp.partition)):
        h.update(f"{tp.topic}\0{tp.partition}\0{view.partitions[tp]!r}".encode())
    for topic in sorted(view.topic_ids):
        h.update(f"{topic}\0{view.topic_ids[topic]}".encode())
    return h.hexdigest()


def alive_brokers(
    request: UpdateMetadataRequest, version: int, known: dict[int, CachedBroker] | None = None,
) -> dict[int, CachedBroker]:
    """The request's LiveBrokers as cached: they replace the cache's (a function of the request alone).

    ``known``: the cache's current alive brokers (read without the state lock: the map is replaced,
    never changed in place). A broker equal to a known one is that object, and equal endpoint
    tuples (and racks) within the request are one object, so the new map holds only what changed:
    every UpdateMetadata carries all live brokers, and otherwise the old map and a new copy of the
    same content both live while one request replaces the last. The map keeps no object the
    decoder allocated per broker (ids are copied): one such object in each of the decoded
    request's pymalloc arenas keeps them all from going back to the system (CPython frees an
    arena only when it is empty): RSS after a 20 MB request was 12.8x the frame, now 3.5x.
    The same brokers in the cached order give the cached map itself: no new map at all."""
    known = known or {}
    if known and len(request.live_brokers) == len(known) and all(
        b.id == c.id and _equal(c, b, version) for b, c in zip(request.live_brokers, known.values(), strict=True)
    ):
        return known  # the same brokers in the cached order (so no id twice): the cached map itself
    same: dict[tuple[tuple[str, str, int, int], ...], tuple[tuple[str, str, int, int], ...]] = {}
    racks: dict[str | None, str | None] = {}
    out: dict[int, CachedBroker] = {}
    for b in request.live_brokers:
        endpoints = _endpoints(b, version)
        rack = b.rack if version >= 2 else None
        old = known.get(b.id)
        if old is not None and old.endpoints == endpoints and old.rack == rack:
            out[old.id] = old
            continue
        bid = b.id + 0  # a new int: the decoder's, kept by the cache, would pin its heap arenas
        out[bid] = CachedBroker(bid, same.setdefault(endpoints, endpoints), racks.setdefault(rack, rack))
    return out


def _endpoints(b: UpdateMetadataBroker, version: int) -> tuple[tuple[str, str, int, int], ...]:
    if version == 0:
        return (("PLAINTEXT", b.v0_host, b.v0_port, 0),)
    return tuple(
        (e.listener if version >= 3 else SecurityProtocol(e.security_protocol).default_listener_name,
         e.host, e.port, e.security_protocol)
        for e in b.endpoints
    )


def _equal(cached: CachedBroker, b: UpdateMetadataBroker, version: int) -> bool:
    return cached.rack == (b.rack if version >= 2 else None) and cached.endpoints == _endpoints(b, version)


StateGroup = Sequence[UpdateMetadataPartitionState]


def _partition_states(request: UpdateMetadataRequest, version: int) -> list[tuple[str, StateGroup]]:
    """The request's partition states by topic name (v5+ names come from the topic states; the
    states are kept as decoded, their own name field empty)."""
    if version < 5:
        return [(s.topic_name, (s,)) for s in request.ungrouped_partition_states]
    return [(t.topic_name, t.partition_states) for t in request.topic_states]


PartitionMap = dict[int, UpdateMetadataPartitionState]
SHARED_REQUESTS = 8
_shared_maps: collections.OrderedDict[int, tuple[Any, dict[Any, Any]]] = collections.OrderedDict()
"""id(topic states) -> (the topic states, held so that their id stays theirs; the shared maps):
the latest SHARED_REQUESTS decoded requests (the brokers of a process apply one after another)."""
_shared_lock = threading.Lock()


def _request_maps(request: UpdateMetadataRequest) -> dict[Any, Any]:
    """The shared maps of one decoded request by topic index (filled as caches apply it). Keyed by
    its topic states, which every broker's copy shares: SharedDecoder gives each broker the memo's
    body with its own BrokerEpoch put back (a new request object, the same topic-state tuple)."""
    states = request.topic_states
    key = id(states)
    with _shared_lock:
        entry = _shared_maps.get(key)
        if entry is None or entry[0] is not states:
            entry = _shared_maps[key] = (states, {})
            if len(_shared_maps) > SHARED_REQUESTS:
                _shared_maps.popitem(last=False)
        else:
            _shared_maps.move_to_end(key)
        return entry[1]


def _shared_map(maps: dict[Any, Any], index: int, group: StateGroup) -> PartitionMap | None:
    """The partition map of the request's ``index``-th topic state, shared by every cache that applies
    this decoded request; None when the topic's states hold a deletion (leader -2)."""
    found = maps.get(index, _MISSING)
    if found is not _MISSING:
        return found  # type: ignore[no-any-return]
    built: PartitionMap | None = {s.partition_index: s for s in group}
    if any(s.leader == LEADER_DURING_DELETE for s in group):
        built = None
    return maps.setdefault(index, built)  # atomic: two threads building one map keep the first


_MISSING = object()


def _merged_map(maps: dict[Any, Any], index: int, base: PartitionMap, group: StateGroup) -> PartitionMap | None:
    """``base`` (a shared map) with the request's ``index``-th topic states merged in, shared by every
    cache that held that same base map when it applied this request; None when the states hold a
    deletion. The entry keeps ``base`` alive so that its id stays its own."""
    key = (index, id(base))
    found = maps.get(key)
    if found is not None and found[0] is base:
        return found[1]  # type: ignore[no-any-return]
    if any(s.leader == LEADER_DURING_DELETE for s in group):
        return None
    merged = dict(base)
    for s in group:
        merged[s.partition_index] = s
    return maps.setdefault(key, (base, merged))[1]  # type: ignore[no-any-return]


@attrs.define
class MatchMemo:
    """What one comparison pass over many caches computes once: the wanted partitions by topic,
    partition views by state object, and the verdict per map content (its partitions and the
    identities of its state objects: caches applying the same decoded requests hold the same
    objects, so N brokers' equal maps are compared once)."""

    want: CacheView
    by_topic: dict[str, dict[int, PartitionView]] = attrs.field(init=False)
    views: dict[int, PartitionView] = attrs.field(factory=dict)
    maps: dict[tuple[str, tuple[int, ...], tuple[int, ...]], bool] = attrs.field(factory=dict)
    """(topic, partitions, ids of their states) -> equal to the wanted map (the states stay alive
    in the caches for the pass, so their ids stay theirs)."""

    def __attrs_post_init__(self) -> None:
        self.by_topic = {}
        for tp, pv in self.want.partitions.items():
            self.by_topic.setdefault(tp.topic, {})[tp.partition] = pv


class MetadataCache:
    """The partition-state map, topic ids, controller id and kind, and alive brokers."""

    def __init__(self) -> None:
        self.partition_states: dict[str, dict[int, UpdateMetadataPartitionState]] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.controller_id: int | None = None
        self.controller_is_kraft = False
        self.alive_brokers: dict[int, CachedBroker] = {}
        self._shared: set[str] = set()
        """Topics whose partition map is shared (copied before any change)."""

    def __repr__(self) -> str:
        n = sum(len(p) for p in self.partition_states.values())
        return f"MetadataCache({len(self.alive_brokers)} brokers, {n} partitions)"

    def has_alive_broker(self, broker_id: int) -> bool:
        return broker_id in self.alive_brokers

    def update(
        self, request: UpdateMetadataRequest, version: int, *, migration_enabled: bool,
        brokers: dict[int, CachedBroker] | None = None,
    ) -> list[TopicPartition]:
        """Apply one UpdateMetadata; returns the deleted partitions in order (ZkMC:465-598).
        ``brokers``: ``alive_brokers(request, version)`` if already computed."""
        groups = _partition_states(request, version)
        if request.is_k_raft_controller and request.type == FULL:
            if version < 8:
                _log.error("Received UpdateMetadataRequest with Type=FULL (2), but version of %d, which should "
                           "not be possible. Not treating this as a full metadata update", version)
            elif not migration_enabled:
                _log.error("Received UpdateMetadataRequest with Type=FULL (2), but ZK migrations are not enabled "
                           "on this broker. Not treating this as a full metadata update")
            else:
                groups = self._full_deletions(request) + groups
        self.controller_id = None if request.controller_id < 0 else request.controller_id
        self.controller_is_kraft = self.controller_id is not None and request.is_k_raft_controller
        self.alive_brokers = alive_brokers(request, version) if brokers is None else brokers
        topic_ids = dict(self.topic_ids)
        for t in request.topic_states if version >= 5 else ():
            if t.topic_id == ZERO_UUID:
                topic_ids.pop(t.topic_name, None)
            else:
                topic_ids[t.topic_name] = t.topic_id
        deleted: dict[TopicPartition, None] = {}
        deleted_topics: set[str] = set()
        cached = self.partition_states
        shared = self._shared
        first_request_group = len(groups) - (len(request.topic_states) if version >= 5 else 0)
        maps = _request_maps(request) if version >= 5 else {}
        for k, (topic, group) in enumerate(groups):
            infos = cached.get(topic)
            if k >= first_request_group and topic not in deleted_topics:
                whole = None
                if infos is None or len(group) >= len(infos):
                    whole = _shared_map(maps, k - first_request_group, group)
                    if whole is not None and (infos is None or infos.keys() <= whole.keys()):
                        cached[topic] = whole
                        shared.add(topic)
                        continue
                    whole = None
                if whole is None and infos is not None and topic in shared:
                    merged = _merged_map(maps, k - first_request_group, infos, group)
                    if merged is not None:
                        cached[topic] = merged
                        continue
            if infos is not None and topic in shared:
                infos = cached[topic] = dict(infos)
                shared.discard(topic)
            for s in group:
                if s.leader == LEADER_DURING_DELETE:
                    tp = TopicPartition(topic, s.partition_index)
                    if infos is not None:
                        infos.pop(tp.partition, None)
                        if not infos:
                            del cached[topic]
                            topic_ids.pop(topic, None)
                            infos = None
                    deleted[tp] = None
                    deleted_topics.add(topic)
                else:
                    if infos is None:
                        infos = cached[topic] = {}
                    infos[s.partition_index] = s
                    if deleted:
                        deleted.pop(TopicPartition(topic, s.partition_index), None)
        self.topic_ids = topic_ids
        return list(deleted)

    def _full_deletions(self, request: UpdateMetadataRequest) -> list[tuple[str, list[UpdateMetadataPartitionState]]]:
        """Deletion entries for every cached topic (with an id) whose id the FULL request lacks:
        leader -2, epochs 0, the request's controller epoch, the old replicas and ISR (ZkMC:126-150)."""
        mentioned = {t.topic_id for t in request.topic_states}
        out: list[tuple[str, list[UpdateMetadataPartitionState]]] = []
        for topic, topic_id in self.topic_ids.items():
            if topic_id in mentioned:
                continue
            _log.info("Deleting topic %s (id %s): absent from a FULL UpdateMetadata", topic, topic_id)
            group: list[UpdateMetadataPartitionState] = []
            out.append((topic, group))
            for p, old in self.partition_states.get(topic, {}).items():
                group.append(UpdateMetadataPartitionState(
                    topic_name=topic, partition_index=p, controller_epoch=request.controller_epoch,
                    leader=LEADER_DURING_DELETE, leader_epoch=0, isr=old.isr, zk_version=0, replicas=old.replicas,
                    offline_replicas=old.offline_replicas,
                ))
        return out

    def matches(self, want: CacheView, memo: MatchMemo | None = None) -> bool:
        """``self.view() == want``, without building the view: a memo shared by one comparison pass
        over many caches converts each state object once and compares each shared map once."""
        memo = MatchMemo(want) if memo is None or memo.want is not want else memo
        if self.alive_brokers != want.brokers or self.topic_ids != want.topic_ids:
            return False
        by_topic = memo.by_topic
        if by_topic.keys() != self.partition_states.keys():
            return False
        for topic, infos in self.partition_states.items():
            key = (topic, tuple(infos), tuple(map(id, infos.values())))
            known_map = memo.maps.get(key)
            if known_map is None:
                known_map = memo.maps[key] = self._map_matches(infos, by_topic[topic], memo.views)
            if not known_map:
                return False
        return True

    @staticmethod
    def _map_matches(infos: PartitionMap, wanted: dict[int, PartitionView], views: dict[int, PartitionView]) -> bool:
        if len(wanted) != len(infos):
            return False
        for p, st in infos.items():
            known = views.get(id(st))
            if known is None:
                known = views[id(st)] = partition_view(st)
            if wanted.get(p) != known:
                return False
        return True

    def view(self) -> CacheView:
        parts = {
            TopicPartition(t, p): partition_view(s) for t, infos in self.partition_states.items() for p, s in infos.items()
        }
        return CacheView(dict(self.alive_brokers), parts, dict(self.topic_ids))
