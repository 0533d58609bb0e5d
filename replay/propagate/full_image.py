"""Full-image UpdateMetadata bodies assembled from encoded topic pieces kept across deltas.

Why: a delta that changes a target broker sends UpdateMetadata with every partition of the image
(propagator.py, batch A; and the snapshot path). Built through the batch, each such body costs
one state object, one context look-up and one encode per partition: about 1 s for 50,000
partitions, on 13 deltas of a 200k-record generated log as much time as its other 2,386 deltas
together (benchmarks/replay_bench.py). Between two deltas only the topics a delta touched change.

Rules of this module:
- What is cached: for each topic, the encoded UpdateMetadataTopicState (v5+: name, id, its
  partition states in partition order) under the key (the TopicImage object, the request
  version, the controller epoch written in the states, the registered-broker set). One entry
  per topic id; ``TopicPieces`` holds them.
- What invalidates an entry: another TopicImage object (apply_delta builds a new one for every
  topic a delta touches and keeps the object of every other topic: image.py), another version,
  another controller epoch (the image's KRaft epoch), another set of registered brokers (the
  offline replicas). The topic's bytes are then joined again; of its partition states only those
  are re-encoded whose registration object (kept by apply_delta when untouched) or offline
  replicas differ, or all of them for another version. Another controller epoch re-encodes
  nothing: ControllerEpoch is an int32 at a fixed place of a v5+ state (after PartitionIndex,
  ``_epoch_at`` checks it by encoding a probe under two epochs), so a sized state keeps its size
  and an encoded one gets the new 4 bytes spliced in (``_reepoched``). Before, each KRaft epoch
  change re-encoded every partition: 18 full re-encodes of 50,000 states on the 1M-record
  generated log. Entries of topics the image no longer
  holds are dropped once the entries outnumber the image's topics by 64, so the cache is bounded
  by the image, never by the log (at twice the image's topics, the bound before, the 10M-record
  generated log ended with 11.9 MB of entries against 3.5 MB at 1M records).
- Cost in what changed, not in the topic's size: a topic of thousands of partitions is touched
  by almost every delta, so its entry is almost never reused whole. When only its TopicImage
  object changed (same registered brokers, version, epoch) and its mapping has the entry's
  partitions in the entry's order (apply_delta updates a copy of the old mapping, so a changed
  partition keeps its place), the changed registrations are found by identity in C
  (``_changed``: itertools.compress over operator.is_not) and only they are re-encoded, then the
  kept states joined; otherwise (new partitions, another order, another broker set) the entry is
  walked partition by partition as above. Measured on a 1M-record log of 10 topics x 5,000
  partitions (/tmp A/B in one process, both bodies compared, load 6-7 on 2 cores): 184 bodies
  5.54 s -> 2.87 s CPU; the 2,000-topic default shape 4.76 s -> 4.08 s (the rest is the
  re-encoding of the partitions that did change and the join).
- A cold memo (each Spark unit's first full image, from its unpacked image: every TopicImage
  and registration object is new) builds each topic in one pass (``_fresh``): states encoded from
  the registration's fields by the positional encoder (layout.struct_args_encoder, as
  builders.py; no state object; on a failure the object is made and the codec's encoder raises
  the translated error), offline replicas computed only when ``registered.issuperset`` fails.
  Entries are keyed by the topic id's ``int`` (uuid.UUID.__hash__ is a Python function).
  Measured cold bodies of the images at 500k records (A/B in one process, load 3.0 on 2 cores):
  default shape (2,030 topics, 50,877 partitions) 82 -> 48-64 ms encoded, 59 -> 39 ms sized;
  10 large topics (60,386 partitions) 91 -> 36 ms encoded, 60 -> 31 ms sized.
- Sizes only: a v5+ partition state's size is a function of its Isr, Replicas and
  OfflineReplicas lengths (every other field an int32, none tagged: ``_by_lengths`` reads the
  spec; the sizer checks no value), so it is sized once per lengths (``_state_size``; tested
  against the sizer and the encoder in tests/replay/test_full_image_sizes.py). Cold sized bodies
  of the 500k images 59 -> 27 ms (default shape), 60 -> 14 ms (10 large topics); the 226 sized
  bodies of the 1M-record default log 1.84 -> 1.61 s (load 3.9).
- Why the bytes cannot differ: a topic state's bytes are a function of exactly the key's parts
  (name and id are the TopicImage's; the states are built as the batch builds a state from the
  context: ``_state``, the same maker and values as ``_add_update_metadata_partition``), and the
  body is the batch's own envelope (UpdateMetadataBuilder, the same live brokers, epochs and
  type) with the topic array spliced at its fixed offset, as builders.py splices LeaderAndIsr
  states. tests/replay/test_full_image.py compares every body with the batch-built one on every
  delta of the real sample and of generated logs (hypothesis), and decodes it back.
- Scope: v5+ (topic states grouped by topic). Below v5 (``--ibp`` of 2.1 and older) the states
  are ungrouped and the oldest versions check endpoints: the propagator keeps the batch path.
- No I/O; a ``TopicPieces`` is a memo of a pure function, so a process may share one
  (propagator.py does, bounded as above) and a fresh one gives the same bytes.
"""

from __future__ import annotations

import functools
import itertools
import operator
import struct
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

import attrs

from ctrlbatch.batch import UpdateType
from ctrlbatch.batch.builders import SharedBody, UpdateMetadataBuilder, body_layout
from ctrlbatch.batch.request_batch import live_brokers
from ctrlbatch.context import Broker
from ctrlbatch.requests import UpdateMetadataPartitionState, UpdateMetadataRequest, UpdateMetadataTopicState
from ctrlbatch.requests.layout import (
    array_count,
    array_count_size,
    fixed_offset,
    no_tagged_fields,
    struct_args_encoder,
    struct_encoder,
    struct_sizer,
    without_empty_last_array,
)
from ctrlbatch.requests.spec import iter_structs

from ..image.image import MetadataImage, PartitionRegistration, TopicImage

__all__ = ["FIRST_VERSION", "FullImageBody", "TopicPieces", "full_image_body"]

FIRST_VERSION = 5  # UpdateMetadata's first version with topic states (grouped by topic)

_STATE_FIELDS = (
    "topic_name", "partition_index", "controller_epoch", "leader", "leader_epoch", "isr", "zk_version",
    "replicas", "offline_replicas",
)
_make_state = UpdateMetadataPartitionState.maker(*_STATE_FIELDS)


@attrs.frozen(slots=True)
class _Layout:
    """UpdateMetadata at one version: where the topic states array sits and how its parts encode."""

    flexible: bool
    states_offset: int
    empty_array: bytes
    encode_topic: Any
    encode_state: Any
    topic_tail: bytes  # what ends a topic state after its partition states (its tagged-field count)
    epoch_offset: int | None
    size_topic: Any  # the sizers of the same structs (sizes only: requests/gen_sizer.py)
    size_state: Any
    state_epoch_at: int | None  # where ControllerEpoch (int32) sits in an encoded partition state (_epoch_at)
    encode_state_args: Any  # encode_state taking _STATE_FIELDS as arguments, untranslated (layout.struct_args_encoder)
    state_sizes: dict[tuple[int, int, int], int] | None  # a state's size by (isr, replicas, offline) lengths (_by_lengths)

    def topic_head(self, name: str, topic_id: uuid.UUID) -> bytes:
        """A topic state's bytes before its partition states: name, id, (the array's count follows)."""
        empty = self.encode_topic(UpdateMetadataTopicState(topic_name=name, topic_id=topic_id))
        return without_empty_last_array(empty, self.flexible)

    def topic_head_size(self, name: str, topic_id: uuid.UUID) -> int:
        """len(topic_head(name, topic_id)), sized from the fields."""
        empty = self.size_topic(UpdateMetadataTopicState(topic_name=name, topic_id=topic_id))
        return int(empty) - array_count_size(0, self.flexible) - len(self.topic_tail)


@functools.cache
def _layout(version: int) -> _Layout:
    if version < FIRST_VERSION:
        raise ValueError(f"version: UpdateMetadata v{version} has no topic states (v{FIRST_VERSION}+ only)")
    offset = fixed_offset(UpdateMetadataRequest.SPEC, version, "TopicStates")
    assert offset is not None, f"UpdateMetadata v{version}: TopicStates follows a variable-width field"
    flexible = UpdateMetadataRequest.is_flexible(version)
    return _Layout(
        flexible, offset, array_count(0, flexible),
        struct_encoder(UpdateMetadataRequest, "UpdateMetadataTopicState", version),
        struct_encoder(UpdateMetadataRequest, "UpdateMetadataPartitionState", version),
        no_tagged_fields(flexible),
        body_layout(UpdateMetadataRequest, version).epoch_offset,
        struct_sizer(UpdateMetadataRequest, "UpdateMetadataTopicState", version),
        struct_sizer(UpdateMetadataRequest, "UpdateMetadataPartitionState", version),
        _epoch_at(version),
        struct_args_encoder(UpdateMetadataRequest, "UpdateMetadataPartitionState", version, _STATE_FIELDS),
        {} if _by_lengths(version) else None,
    )


_LENGTHS = ("Isr", "Replicas", "OfflineReplicas")


def _by_lengths(version: int) -> bool:
    """Whether a partition state's size at ``version`` is a function of its three arrays' lengths:
    every field present is an int32 (fixed width) or one of those int32 arrays, none tagged (the
    sizer checks no value: requests/gen_sizer.py). Then a size is sized once per lengths."""
    st = next(s for s in iter_structs(UpdateMetadataRequest.MESSAGE.fields) if s.name == "UpdateMetadataPartitionState")
    for f in st.fields:
        if version in f.tagged_versions:
            return False
        if version in f.versions and f.type != "int32" and not (f.type == "[]int32" and f.name in _LENGTHS):
            return False
    return True


def _state_size(layout: _Layout, name: str, p: int, reg: PartitionRegistration, controller_epoch: int,
                offline: tuple[int, ...]) -> int:
    """The size of _state(...) encoded: by its arrays' lengths when the layout allows (_by_lengths)."""
    sizes = layout.state_sizes
    if sizes is None:
        return int(layout.size_state(_state(name, p, reg, controller_epoch, offline)))
    key = (len(reg.isr), len(reg.replicas), len(offline))
    size = sizes.get(key)
    if size is None:
        size = sizes[key] = int(layout.size_state(_state(name, p, reg, controller_epoch, offline)))
    return size


_EPOCH32 = struct.Struct(">i")


def _epoch_at(version: int) -> int | None:
    """The offset of ControllerEpoch in an encoded v5+ partition state (after PartitionIndex: 4),
    found by encoding one state under two epochs: they must differ in exactly those 4 bytes, which
    hold the epoch, and size the same (a fixed-width int32). None if not (then a new epoch
    re-encodes every state, as before)."""
    encode = struct_encoder(UpdateMetadataRequest, "UpdateMetadataPartitionState", version)
    size = struct_sizer(UpdateMetadataRequest, "UpdateMetadataPartitionState", version)
    probes = [_make_state("t", 7, epoch, 1, 2, (1, 2), 3, (1, 2, 3), (3,)) for epoch in (0x01020304, 0x7F0E0D0C)]
    a, b = (encode(s) for s in probes)
    at = 4
    if len(a) != len(b) or size(probes[0]) != size(probes[1]) or size(probes[0]) != len(a):
        return None
    if a[:at] + a[at + 4:] != b[:at] + b[at + 4:] or a[at: at + 4] != _EPOCH32.pack(0x01020304) \
            or b[at: at + 4] != _EPOCH32.pack(0x7F0E0D0C):
        return None
    return at


def _state(name: str, p: int, reg: PartitionRegistration, controller_epoch: int, offline: tuple[int, ...]) -> Any:
    """A partition's state as the batch adds it from the context (CCM:466-486 with
    MigrationControllerChannelContext: leadership from the registration, the image's KRaft epoch,
    offline = replicas not registered; never queued for deletion: the topic is in the image)."""
    return _make_state(
        name, p, controller_epoch, reg.leader, reg.leader_epoch, reg.isr, reg.partition_epoch, reg.replicas, offline,
    )


def _states(topic: TopicImage, controller_epoch: int, registered: Collection[int]) -> list[Any]:
    parts = topic.partitions
    return [
        _state(topic.name, p, reg, controller_epoch, tuple([r for r in reg.replicas if r not in registered]))
        for p, reg in sorted(parts.items())
    ]


@attrs.define(slots=True, eq=False)
class _Entry:
    """A topic's piece: its whole encoded topic state, its head (name, id), and each partition
    state's bytes with the registration object and offline replicas they were encoded from (a
    touched topic, or a new set of registered brokers, re-encodes only the states that differ).

    The partition columns (``keys``, ``regs``, ``offline``, ``slots``) are in the order of the
    partitions mapping the entry was built from (apply_delta keeps a topic's order: its new
    mapping is the old one updated), ``states`` in partition order (``slots[i]`` is where the
    state of ``keys[i]`` sits), so a touched topic with the same partitions finds what changed
    by comparing registrations by identity in C (``_changed``) and re-encodes only those."""

    topic: TopicImage
    version: int
    controller_epoch: int
    registered: frozenset[int]
    data: bytes
    count: int
    head: Any  # bytes, or their size when sized
    keys: list[int]
    regs: list[PartitionRegistration]
    offline: list[tuple[int, ...]]
    slots: list[int]
    states: list[Any]  # bytes, or sizes when sized
    size: int = 0
    sized: bool = False
    """Sized, not encoded (sizes only): data is empty, head and each state are their sizes."""


def _whole_entry(layout: Any, topic: TopicImage, version: int, controller_epoch: int, registered: frozenset[int],
                 head: Any, keys: list[int], regs: list[PartitionRegistration], offline: list[tuple[int, ...]],
                 slots: list[int], states: list[Any], sized: bool) -> _Entry:
    """The entry of a topic whose every state is at hand: the piece joined (or, sized, its size summed)."""
    if sized:
        data, size = b"", head + array_count_size(len(keys), layout.flexible) + sum(states) + len(layout.topic_tail)
    else:
        data = b"".join((head, array_count(len(keys), layout.flexible), *states, layout.topic_tail))
        size = len(data)
    return _Entry(topic, version, controller_epoch, registered, data, len(keys), head, keys, regs, offline,
                  slots, states, size, sized)


def _changed(parts: Mapping[int, PartitionRegistration], entry: _Entry) -> list[int] | None:
    """The positions (in the entry's order) whose registration object is not the entry's, or
    None when the mapping's partitions or their order differ from the entry's. The comparison
    runs in C: no Python step per unchanged partition."""
    keys = entry.keys
    if len(parts) != len(keys) or list(parts) != keys:
        return None
    return list(itertools.compress(range(len(keys)), map(operator.is_not, parts.values(), entry.regs)))


class TopicPieces:
    """Each topic's encoded UpdateMetadataTopicState, kept across deltas (see the module rules)."""

    __slots__ = ("_entries", "_registered", "encoded")

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}  # by the topic id's int (module rules)
        self._registered: frozenset[int] = frozenset()
        self.encoded = 0  # partition states encoded so far: what the cache saved is visible in tests

    def __repr__(self) -> str:
        return f"TopicPieces({len(self._entries)} topics, {self.encoded} encoded)"

    def registered(self, brokers: Mapping[int, Any]) -> frozenset[int]:
        """The registered-broker set, the same object while it does not change (compared by identity)."""
        kept = self._registered
        if len(kept) != len(brokers) or any(b not in kept for b in brokers):
            kept = self._registered = frozenset(brokers)
        return kept

    def piece(self, topic: TopicImage, topic_id: uuid.UUID, version: int, controller_epoch: int,
              registered: frozenset[int], sizes_only: bool = False) -> _Entry:
        key = topic_id.int
        entry = self._entries.get(key)
        if entry is not None and entry.controller_epoch != controller_epoch and entry.version == version \
                and entry.sized == sizes_only:
            entry = self._reepoched(entry, controller_epoch)
        if entry is not None and entry.controller_epoch == controller_epoch and entry.version == version \
                and entry.topic.name == topic.name and entry.sized == sizes_only:
            if entry.registered is registered:
                if entry.topic is topic:
                    return entry
                changed = _changed(topic.partitions, entry)
                if changed is not None:
                    entry = self._patched(entry, topic, changed)
                    self._entries[key] = entry
                    return entry
            entry = self._built(topic, topic_id, version, controller_epoch, registered, sizes_only, entry)
        else:
            entry = self._fresh(topic, topic_id, version, controller_epoch, registered, sizes_only)
        self._entries[key] = entry
        return entry

    @staticmethod
    def _reepoched(entry: _Entry, controller_epoch: int) -> _Entry | None:
        """The entry with its states' controller epoch replaced, nothing re-encoded: a state's size
        does not depend on it (int32), and its bytes differ only at the layout's state_epoch_at;
        None when the layout has no such place."""
        if entry.sized:
            return attrs.evolve(entry, controller_epoch=controller_epoch)
        layout = _layout(entry.version)
        at = layout.state_epoch_at
        if at is None:
            return None
        epoch = _EPOCH32.pack(controller_epoch)
        end = at + 4
        states = [s[:at] + epoch + s[end:] for s in entry.states]
        data = b"".join((entry.head, array_count(len(entry.keys), layout.flexible), *states, layout.topic_tail))
        return attrs.evolve(entry, controller_epoch=controller_epoch, states=states, data=data)

    def _patched(self, entry: _Entry, topic: TopicImage, changed: list[int]) -> _Entry:
        """The entry for ``topic``, whose partitions are the entry's but for the registrations at
        ``changed``: those states re-encoded (same registered brokers), the others kept."""
        if not changed:
            return attrs.evolve(entry, topic=topic)
        layout = _layout(entry.version)
        sized = entry.sized
        encode = layout.size_state if sized else layout.encode_state
        registered, epoch, name = entry.registered, entry.controller_epoch, topic.name
        parts = topic.partitions
        keys, slots = entry.keys, entry.slots
        regs, offline, states = entry.regs.copy(), entry.offline.copy(), entry.states.copy()
        size = entry.size
        args = None if sized else layout.encode_state_args
        superset = registered.issuperset
        for i in changed:
            p = keys[i]
            reg = parts[p]
            reps = reg.replicas
            off = () if superset(reps) else tuple([r for r in reps if r not in registered])
            if args is None:
                state = _state_size(layout, name, p, reg, epoch, off)
            else:
                try:
                    state = args(name, p, epoch, reg.leader, reg.leader_epoch, reg.isr, reg.partition_epoch, reps, off)
                except Exception:
                    state = encode(_state(name, p, reg, epoch, off))  # raises the codec's translated error
            self.encoded += 1
            slot = slots[i]
            if sized:
                size += state - states[slot]
            regs[i], offline[i], states[slot] = reg, off, state
        if sized:
            data = b""
        else:
            data = b"".join((entry.head, array_count(len(keys), layout.flexible), *states, layout.topic_tail))
            size = len(data)
        return _Entry(topic, entry.version, epoch, registered, data, entry.count, entry.head, keys, regs, offline,
                      slots, states, size, sized)

    def _fresh(self, topic: TopicImage, topic_id: uuid.UUID, version: int, controller_epoch: int,
               registered: frozenset[int], sizes_only: bool) -> _Entry:
        """The entry of a topic with no usable entry (a cold memo: each Spark unit's first full
        image): every state encoded in one pass over the mapping, from the registration's fields
        (no state object made when encoding), offline replicas only where a replica is not
        registered (a C superset test first)."""
        layout = _layout(version)
        name = topic.name
        parts = topic.partitions
        keys = list(parts)
        regs = list(parts.values())
        superset = registered.issuperset
        offline = [() if superset(reg.replicas) else tuple([r for r in reg.replicas if r not in registered])
                   for reg in regs]
        if sizes_only:
            head: Any = layout.topic_head_size(name, topic_id)
            by_key: list[Any] = [_state_size(layout, name, p, reg, controller_epoch, off)
                                 for p, reg, off in zip(keys, regs, offline, strict=True)]
        else:
            head = layout.topic_head(name, topic_id)
            args = layout.encode_state_args
            try:
                by_key = [args(name, p, controller_epoch, reg.leader, reg.leader_epoch, reg.isr, reg.partition_epoch,
                               reg.replicas, off) for p, reg, off in zip(keys, regs, offline, strict=True)]
            except Exception:  # the translated encoder names the failing field
                encode = layout.encode_state
                by_key = [encode(_state(name, p, reg, controller_epoch, off)) for p, reg, off in zip(keys, regs, offline, strict=True)]
        self.encoded += len(keys)
        order = sorted(keys)
        if order == keys:  # the usual case: the mapping is in partition order
            states = by_key
            slots = list(range(len(keys)))
        else:
            slot_of = {p: i for i, p in enumerate(order)}
            slots = [slot_of[p] for p in keys]
            states = by_key.copy()
            for slot, state in zip(slots, by_key, strict=True):
                states[slot] = state
        return _whole_entry(layout, topic, version, controller_epoch, registered, head, keys, regs, offline,
                            slots, states, sizes_only)

    def _built(self, topic: TopicImage, topic_id: uuid.UUID, version: int, controller_epoch: int,
               registered: frozenset[int], sizes_only: bool, old: _Entry | None) -> _Entry:
        """The entry walked partition by partition: with ``old`` (same version, epoch, name and
        kind), a state is re-encoded only if its registration object or offline replicas differ."""
        layout = _layout(version)
        known: dict[int, tuple[PartitionRegistration, tuple[int, ...], Any]] = {}
        if old is not None:
            known = {p: (old.regs[i], old.offline[i], old.states[old.slots[i]]) for i, p in enumerate(old.keys)}
            head = old.head
        else:
            head = layout.topic_head_size(topic.name, topic_id) if sizes_only else layout.topic_head(topic.name, topic_id)
        same_brokers = old is not None and old.registered is registered
        encode = layout.size_state if sizes_only else layout.encode_state
        name = topic.name
        parts = topic.partitions
        order = sorted(parts)
        slot_of = {p: i for i, p in enumerate(order)}
        states: list[Any] = []
        for p in order:
            reg = parts[p]
            was = known.get(p)
            if was is None or was[0] is not reg or not same_brokers:
                off = tuple([r for r in reg.replicas if r not in registered])
                if was is None or was[0] is not reg or was[1] != off:
                    state = _state_size(layout, name, p, reg, controller_epoch, off) if sizes_only \
                        else encode(_state(name, p, reg, controller_epoch, off))
                    was = known[p] = (reg, off, state)
                    self.encoded += 1
                else:
                    known[p] = was
            states.append(was[2])
        keys = list(parts)
        regs = list(parts.values())
        offline = [known[p][1] for p in keys]
        slots = [slot_of[p] for p in keys]
        return _whole_entry(layout, topic, version, controller_epoch, registered, head, keys, regs, offline,
                            slots, states, sizes_only)

    def forget_others(self, image: MetadataImage) -> None:
        """Drop entries of topics the image no longer holds, once there can be more than 64 of them:
        one walk per 64 deleted topics at most."""
        entries = self._entries
        if len(entries) > len(image.topics) + 64:
            held = {tid.int for tid in image.topics}
            for key in [k for k in entries if k not in held]:
                del entries[key]


class _ImageStates(Sequence[Any]):
    """A full image's partition states, built only when read (``OutboundRequest.body``): the
    rows need only their number."""

    __slots__ = ("_args", "_count", "_states")

    def __init__(self, count: int, image: MetadataImage, controller_epoch: int) -> None:
        self._count = count
        self._args = (image, controller_epoch)
        self._states: list[Any] | None = None

    def _all(self) -> list[Any]:
        if self._states is None:
            image, epoch = self._args
            states: list[Any] = []
            for _tid, topic in _topics(image):
                states.extend(_states(topic, epoch, image.brokers))
            self._states = states
        return self._states

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._all())

    def __repr__(self) -> str:
        return f"<{self._count} partition states of the image>"


def _topics(image: MetadataImage) -> Iterator[tuple[uuid.UUID, TopicImage]]:
    """The image's topics by name, as the propagator lists every partition (names map order)."""
    names = image.topic_ids_by_name
    topics = image.topics
    for name in sorted(names):
        tid = names[name]
        topic = topics.get(tid)
        if topic is not None and topic.partitions:
            yield tid, topic


@attrs.frozen(slots=True)
class FullImageBody:
    """A full-image UpdateMetadata: its builder (the request's content) and its shared body."""

    builder: UpdateMetadataBuilder
    body: SharedBody


def full_image_body(
    pieces: TopicPieces,
    image: MetadataImage,
    *,
    version: int,
    controller_id: int,
    header_epoch: int,
    update_type: UpdateType,
    first_broker_epoch: int,
    live: Sequence[Broker],
    sizes_only: bool = False,
) -> FullImageBody:
    """UpdateMetadata with every partition of ``image`` (states from the image, controller epoch
    the image's KRaft epoch), as the batch builds it, the broker epoch of the first destination
    written in the body (SharedBody patches the others)."""
    layout = _layout(version)
    registered = pieces.registered(image.brokers)
    epoch = image.epoch
    chunks: list[bytes] = []
    count = topics = size = 0
    topic_ids: dict[str, uuid.UUID] = {}
    for tid, topic in _topics(image):
        entry = pieces.piece(topic, tid, version, epoch, registered, sizes_only)
        chunks.append(entry.data)
        size += entry.size
        count += entry.count
        topics += 1
        topic_ids[topic.name] = tid
    pieces.forget_others(image)
    builder = UpdateMetadataBuilder(
        version, controller_id, header_epoch, _ImageStates(count, image, epoch),  # type: ignore[arg-type]
        live_brokers(tuple(live), version), topic_ids, True, int(update_type),
    )
    if sizes_only:  # the same length from sizes: the envelope's, its empty array replaced by the topics'
        envelope_size = attrs.evolve(builder, partition_states=[]).size_body()
        total = envelope_size - len(layout.empty_array) + array_count_size(topics, layout.flexible) + size
        return FullImageBody(builder, SharedBody(b"", layout.epoch_offset, total))
    envelope = attrs.evolve(builder, partition_states=[]).encode_body(first_broker_epoch)
    off = layout.states_offset
    assert envelope[off: off + len(layout.empty_array)] == layout.empty_array
    data = b"".join((envelope[:off], array_count(topics, layout.flexible), *chunks, envelope[off + len(layout.empty_array):]))
    return FullImageBody(builder, SharedBody(data, layout.epoch_offset))

