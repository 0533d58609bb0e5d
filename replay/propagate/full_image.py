"""Full-image UpdateMetadata bodies assembled from encoded topic pieces kept across deltas.

Why: a delta that changes a target broker sends UpdateMetadata with every partition of the image
(propagator.py, batch A; and the snapshot path). Built through the batch, each such body costs
one state object, one context look-up and one encode per partition: about 1 s for 50,000
partitions, on 13 deltas of a 200k-record generated log as much time as its other 2,386 deltas
together (benchmarks/replay_bench.py). Between two deltas only the topics a delta touched change.

Rules of this module:
- What is kept: per request version and kind (encoded, or sized for ``--digest none``; at most
  two arrays, ``_KEPT_ARRAYS``: a run uses one) the whole topic array of the last full image
  (``_Array``): one record (``_Topic``) per name of the image's names mapping, in name order,
  with the topic's pieces (head and count, its partition states in partition order, tail) and
  those pieces joined (``data``, one piece per topic in the body's join), and what the array
  was made from: the names mapping, the topics mapping's ids in its order, the TopicImage
  objects last seen (in name order), the controller epoch (the image's KRaft epoch) written in
  the states and the registered-broker set (the offline replicas).
- Finding what changed without a Python step per topic: the topic objects in name order are
  taken from ``(*topics.values(), None)`` by one itemgetter of positions (no uuid.UUID hash: a
  Python function) and compared with the last seen by identity in C (itertools.compress over
  operator.is_not); apply_delta builds a new TopicImage for every topic a delta touches and
  keeps the object of every other (image.py), so only touched topics are visited. Before, each
  body stepped through every topic in Python (a uuid hash, a memo look-up, a new entry and three
  list copies per touched topic): ~11 us a topic, 12.7 ms a body on the 1M-record default log.
- A touched topic whose mapping has the record's partitions in the record's order (apply_delta
  updates a copy of the old mapping, so a changed partition keeps its place): the changed
  registrations found by identity in C, only they re-encoded, into their slots, in place, and
  the topic joined again; every registration new (an unpacked image) or a new topic: made in one
  pass (``_fresh``); other partitions or order: walked partition by partition, a state kept when
  its registration object and offline replicas are the same (``_walk``); no partitions: empty.
  Another set of registered brokers walks every topic (only the states naming a broker that came
  or went are re-encoded). Another names mapping or topics order places the records again by
  topic id (``_replace``): records of topics no longer named are dropped, so memory follows the
  image, never the log. Why one piece per topic and not the states' pieces in one flat join: a
  body joining its ~55,000 state pieces cost ~4 ms in the replay (cold caches), the topics'
  ~2,000 pieces ~0.1 ms, and a touched topic's join is ~27 pieces.
- Another controller epoch re-encodes nothing: ControllerEpoch is an int32 at a fixed place of
  a v5+ state (after PartitionIndex; ``_epoch_at`` checks it by encoding a probe under two
  epochs, ``_layout`` requires it), so a sized state keeps its size, and an encoded state is
  split there into three pieces (before, the epoch, after: ``_Topic.split``) the first time, once
  per topic, after which each new epoch is one C slice assignment of one shared epoch piece per
  topic and a join (``_reepoch``; 22 new epochs on the 1M-record default log, 291 at 10M). It is
  written at the end of the body, into the kept records only: new states are encoded with it,
  and a record made anew (every topic of a Spark unit's unpacked image) skips the split. A
  cold record stays whole: splitting every state when made would cost the cold body ~10%.
- Measured (A/B in one process on the same images against main 151f1b0's module, every body
  compared). The 226 full images of the 1M-record default log (/tmp/fi/offline.py, process
  CPU, best of 4, load 2.9 on 2 cores): encoded 2.50 -> 1.95 s (11.1 -> 8.6 ms a body, 0.78x),
  sized 1.48 -> 1.24 s (0.84x); inside the replay (wall, load 4.9): 6.04 -> 5.10 s (0.84x), sized
  4.01 -> 2.95 s (0.74x). The 10 topics x 5,000 partitions log (184 bodies, load 4.2): 1.16 ->
  1.09 s, sized 0.63 -> 0.63 s: its ten topics are all touched by every body, so it was already
  paying per partition changed, not per topic. Cold bodies unchanged: 66 -> 64 ms encoded, 44
  -> 43 ms sized (1M default images; 43 -> 43 and 23 -> 21 ms on the large shape); a Spark unit's
  first body on a memo kept from an earlier unit (an unpacked image: every object new) 87 -> 72 ms.
  What remains is per touched topic (~670 a body at 1M: the identity scan of its ~25
  registrations, memory-bound, and its join) and per changed partition (~2,000 a body: its
  encode). benchmarks/full_image_bench.py prints a warm and a cold memo against the batch's own
  encoding of the same bodies.
- A cold memo (each Spark unit's first full image, from its unpacked image: every TopicImage
  and registration object is new) builds each topic in one pass (``_fresh``): states encoded from
  the registration's fields by the positional encoder (layout.struct_args_encoder, as
  builders.py; no state object; on a failure the object is made and the codec's encoder raises
  the translated error), offline replicas computed only when ``registered.issuperset`` fails.
  Measured cold bodies of the images at 500k records (A/B in one process, load 3.0 on 2 cores):
  default shape (2,030 topics, 50,877 partitions) 82 -> 48-64 ms encoded, 59 -> 39 ms sized;
  10 large topics (60,386 partitions) 91 -> 36 ms encoded, 60 -> 31 ms sized.
- Sizes only: a v5+ partition state's size is a function of its Isr, Replicas and
  OfflineReplicas lengths (every other field an int32, none tagged: ``_by_lengths`` reads the
  spec; the sizer checks no value), so it is sized once per lengths (``_state_size``; tested
  against the sizer and the encoder in tests/replay/test_full_image_sizes.py). Cold sized bodies
  of the 500k images 59 -> 27 ms (default shape), 60 -> 14 ms (10 large topics); the 226 sized
  bodies of the 1M-record default log 1.84 -> 1.61 s (load 3.9).
- Why the bytes cannot differ: a topic's pieces are a function of exactly what its record was
  made from (the TopicImage's name, its id, each registration object, the version, the epoch,
  the registered brokers; the states are built as the batch builds a state from the
  context: ``_state``, the same maker and values as ``_add_update_metadata_partition``), and the
  body is the batch's own envelope (UpdateMetadataBuilder, the same live brokers, epochs and
  type) with the topic array spliced at its fixed offset, as builders.py splices LeaderAndIsr
  states. tests/replay/test_full_image.py compares every body with the batch-built one on every
  delta of the real sample and of generated logs (hypothesis), and decodes it back.
- Scope: v5+ (topic states grouped by topic). Below v5 (``--ibp`` of 2.1 and older) the states
  are ungrouped and the oldest versions check endpoints: the propagator keeps the batch path.
- Why the kept array cannot drift: tests/replay/test_full_image_array.py runs random sequences
  of images (topics created, emptied, deleted and re-created, partitions changed, added and
  reordered, the topics mapping reordered, new epochs, brokers coming and going) with encoded
  and sized bodies of several versions interleaved on one memo, each body against the batch's
  encoding of the same request. On any error the array is dropped (no half-updated record).
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
    state_pre: Any  # an encoded state's bytes before its controller epoch (a C slice: operator.itemgetter)
    state_post: Any  # ... and after it

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
    at = _epoch_at(version)
    assert at is not None, f"UpdateMetadata v{version}: no fixed place for a partition state's ControllerEpoch"
    return _Layout(
        flexible, offset, array_count(0, flexible),
        struct_encoder(UpdateMetadataRequest, "UpdateMetadataTopicState", version),
        struct_encoder(UpdateMetadataRequest, "UpdateMetadataPartitionState", version),
        no_tagged_fields(flexible),
        body_layout(UpdateMetadataRequest, version).epoch_offset,
        struct_sizer(UpdateMetadataRequest, "UpdateMetadataTopicState", version),
        struct_sizer(UpdateMetadataRequest, "UpdateMetadataPartitionState", version),
        at,
        struct_args_encoder(UpdateMetadataRequest, "UpdateMetadataPartitionState", version, _STATE_FIELDS),
        {} if _by_lengths(version) else None,
        operator.itemgetter(slice(None, at)),
        operator.itemgetter(slice(at + 4, None)),
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


_NONE: Any = ()  # the columns of a record without partitions (never mutated; no list made per record)


@attrs.define(slots=True, eq=False)
class _Topic:
    """One topic's part of the kept topic array (a name of the image's names, in name order).

    ``pieces`` is what the topic adds to the array: its head and partition count, then each
    partition state in partition order, then its tail. A state is one piece (its bytes; sized:
    its size) until the array gets a new controller epoch; then (``split``) three: the bytes
    before its ControllerEpoch, the epoch (one bytes object shared by every state, so the next
    new epoch is one C slice assignment per topic), the bytes after it. Empty when the image
    holds no partitions for the topic. ``data`` is the pieces joined. The partition columns
    (``keys``, ``regs``, ``offline``, ``slots``) are in the order of the partitions mapping they
    were made from (apply_delta keeps a topic's order: its new mapping is the old one updated);
    ``slots[i]`` is the piece of ``keys[i]``'s state (split: the piece after the epoch), so a
    touched topic with the same partitions finds what changed by comparing registrations by
    identity in C (``_changed``) and re-encodes only those, in place."""

    tid: uuid.UUID
    name: str = ""  # the TopicImage's name the head was made from
    head: Any = None  # bytes (name, id), or their size when sized
    keys: list[int] = _NONE
    regs: list[PartitionRegistration] = _NONE
    offline: list[tuple[int, ...]] = _NONE
    slots: list[int] = _NONE
    pieces: list[Any] = _NONE
    data: bytes = b""  # encoded: the pieces joined (what the body joins: one piece per topic)
    size: int = 0  # sized: the sum of pieces
    split: bool = False  # encoded states in three pieces (after the first new epoch), else whole
    epoch: int = 0  # the controller epoch written in every encoded state (else some hold another)


def _changed(parts: Mapping[int, PartitionRegistration], rec: _Topic) -> list[int] | None:
    """The positions (in the record's order) whose registration object is not the record's, or
    None when the mapping's partitions or their order differ from the record's. The comparison
    runs in C: no Python step per unchanged partition."""
    keys = rec.keys
    if len(parts) != len(keys) or list(parts) != keys:
        return None
    return list(itertools.compress(range(len(keys)), map(operator.is_not, parts.values(), rec.regs)))


@attrs.define(slots=True, eq=False)
class _Array:
    """The whole topic array of a full image at one version, encoded or sized (module rules):
    a record per name of the image's names mapping, in name order, and what it was made from."""

    version: int
    sized: bool
    epoch: int
    registered: frozenset[int]
    names: Mapping[str, uuid.UUID]  # the names mapping the records follow
    topics: Mapping[uuid.UUID, TopicImage]  # the last topics mapping (its keys are ``keys``)
    keys: list[uuid.UUID]  # the topics mapping's ids in its order when the records were placed
    where: Any  # tuple(topics.values()) + (None,) -> the topic objects in name order (an itemgetter)
    seen: tuple[TopicImage | None, ...]  # the topic objects the records were last made from, in name order
    records: list[_Topic]
    topic_ids: dict[str, uuid.UUID] | None = None  # the builder's topic ids (None: to be made again)

    def epoch_piece(self) -> bytes:
        return _EPOCH32.pack(self.epoch)


def _placed(names: Mapping[str, uuid.UUID], topics: Mapping[uuid.UUID, TopicImage]) -> tuple[list[uuid.UUID], Any]:
    """The ids of ``names`` in name order, and an itemgetter taking ``(*topics.values(), None)``
    to each one's topic object (None when the topics mapping lacks it) without hashing a
    uuid.UUID (a Python __hash__): a C step per topic."""
    position = {tid.int: i for i, tid in enumerate(topics)}
    absent = len(position)
    ids = [names[name] for name in sorted(names)]
    at = [position.get(tid.int, absent) for tid in ids]
    if len(at) == 1:
        one = at[0]
        return ids, lambda values: (values[one],)
    return ids, operator.itemgetter(*at) if at else (lambda values: ())


_KEPT_ARRAYS = 2  # arrays kept at once (versions x kinds): a run uses one


class TopicPieces:
    """The full image's topic array kept across deltas, per version and kind (see the module rules)."""

    __slots__ = ("_arrays", "_registered", "encoded")

    def __init__(self) -> None:
        self._arrays: dict[tuple[int, bool], _Array] = {}  # at most _KEPT_ARRAYS
        self._registered: frozenset[int] = frozenset()
        self.encoded = 0  # partition states encoded so far: what the memo saved is visible in tests

    def __repr__(self) -> str:
        held = sum(len(a.records) for a in self._arrays.values())
        return f"TopicPieces({held} topics, {self.encoded} encoded)"

    def registered(self, brokers: Mapping[int, Any]) -> frozenset[int]:
        """The registered-broker set, the same object while it does not change (compared by identity)."""
        kept = self._registered
        if len(kept) != len(brokers) or any(b not in kept for b in brokers):
            kept = self._registered = frozenset(brokers)
        return kept

    def array(self, image: MetadataImage, version: int, sized: bool) -> _Array:
        """The image's topic array at ``version`` (sized or encoded), brought up to date with what
        changed since the last call of the same version and kind. On any error the kept array is
        dropped (no half-updated record survives)."""
        key = (version, sized)
        arrays = self._arrays
        arr = arrays.get(key)
        try:
            registered = self.registered(image.brokers)
            if arr is None:
                arr = self._cold(image, version, sized, registered)
                while len(arrays) >= _KEPT_ARRAYS:
                    del arrays[next(iter(arrays))]
                arrays[key] = arr
            else:
                self._refresh(arr, image, registered)
        except BaseException:
            arrays.pop(key, None)
            raise
        return arr

    def _cold(self, image: MetadataImage, version: int, sized: bool, registered: frozenset[int]) -> _Array:
        """The array of a cold memo (each Spark unit's first full image): every record made in one pass."""
        names, topics = image.topic_ids_by_name, image.topics
        ids, where = _placed(names, topics)
        seen = where((*topics.values(), None))
        arr = _Array(version, sized, image.epoch, registered, names, topics, list(topics), where, seen,
                     [_Topic(t) for t in ids])
        layout = _layout(version)
        for rec, topic in zip(arr.records, seen, strict=True):
            if topic is not None and topic.partitions:
                self._fresh(rec, topic, layout, arr)
        return arr

    def _refresh(self, arr: _Array, image: MetadataImage, registered: frozenset[int]) -> None:
        layout = _layout(arr.version)
        epoch = arr.epoch = image.epoch  # new states get it; the kept ones at the end (_reepoch)
        names, topics = image.topic_ids_by_name, image.topics
        if not (topics is arr.topics or _same_keys(topics, arr.keys)) or (names is not arr.names and names != arr.names):
            self._replace(arr, names, topics)
        arr.names, arr.topics = names, topics
        now = arr.where((*topics.values(), None))
        records = arr.records
        if registered is not arr.registered:  # every partition's offline replicas may differ: walk all
            arr.registered = registered
            for rec, topic in zip(records, now, strict=True):
                self._update(rec, topic, layout, arr, walk=True)
        else:
            for i in itertools.compress(range(len(records)), map(operator.is_not, now, arr.seen)):
                rec, topic = records[i], now[i]
                if topic is not None and rec.pieces and topic.name == rec.name:  # the usual case
                    changed = _changed(topic.partitions, rec)
                    if changed is not None:
                        if len(changed) == len(rec.keys):  # every registration new (an unpacked image)
                            self._fresh(rec, topic, layout, arr)
                        elif changed:
                            self._patch(rec, topic, changed, layout, arr)
                        continue
                self._update(rec, topic, layout, arr, walk=False)
        arr.seen = now
        if not arr.sized:
            for rec in records:
                if rec.epoch != epoch and rec.pieces:
                    _reepoch(rec, epoch, layout)

    def _replace(self, arr: _Array, names: Mapping[str, uuid.UUID], topics: Mapping[uuid.UUID, TopicImage]) -> None:
        """Records placed again for another names mapping or topics order: a kept id keeps its
        record (and what it saw), a new one starts empty (then made as new); records of ids
        no longer named are dropped (memory follows the image)."""
        ids, where = _placed(names, topics)
        old: dict[int, tuple[_Topic, TopicImage | None]] = {}
        for rec, topic in zip(arr.records, arr.seen, strict=True):
            old.setdefault(rec.tid.int, (rec, topic))
        records: list[_Topic] = []
        seen: list[TopicImage | None] = []
        for tid in ids:
            kept = old.pop(tid.int, None)
            rec, topic = kept if kept is not None else (_Topic(tid), None)
            records.append(rec)
            seen.append(topic)
        arr.keys, arr.where, arr.records, arr.seen, arr.topic_ids = list(topics), where, records, tuple(seen), None

    def _update(self, rec: _Topic, topic: TopicImage | None, layout: _Layout, arr: _Array, walk: bool) -> None:
        """The record made for ``topic`` (its name's object now) when not only registrations
        changed (_refresh patches those): made anew when new or renamed, emptied without
        partitions, else walked (other partitions or order, other brokers: states kept where
        the registration object and offline replicas are the same)."""
        if topic is None or not topic.partitions:
            if rec.pieces:
                rec.pieces, rec.data, rec.size, rec.keys, rec.regs, rec.offline, rec.slots = _NONE, b"", 0, _NONE, _NONE, _NONE, _NONE
                arr.topic_ids = None
            return
        if not rec.pieces or topic.name != rec.name:
            arr.topic_ids = None  # a topic (or its name) in the array again
            self._fresh(rec, topic, layout, arr)
            return
        self._walk(rec, topic, layout, arr, same_brokers=not walk)

    def _patch(self, rec: _Topic, topic: TopicImage, changed: list[int], layout: _Layout, arr: _Array) -> None:
        """The states at ``changed`` re-encoded into their slots (same partitions, same brokers)."""
        sized = arr.sized

        registered, epoch, name = arr.registered, arr.epoch, topic.name
        parts = topic.partitions
        keys, slots, regs, offline, pieces = rec.keys, rec.slots, rec.regs, rec.offline, rec.pieces
        args, post, split = layout.encode_state_args, layout.state_post, rec.split
        superset = registered.issuperset
        for i in changed:
            p = keys[i]
            reg = parts[p]
            reps = reg.replicas
            off = () if superset(reps) else tuple([r for r in reps if r not in registered])
            slot = slots[i]
            if sized:
                state = _state_size(layout, name, p, reg, epoch, off)
                rec.size += state - pieces[slot]
            else:
                try:
                    state = args(name, p, epoch, reg.leader, reg.leader_epoch, reg.isr, reg.partition_epoch, reps, off)
                except Exception:  # the codec's encoder raises its translated error (or encodes, as _fresh)
                    state = layout.encode_state(_state(name, p, reg, epoch, off))
                if split:
                    state = post(state)
            regs[i], offline[i], pieces[slot] = reg, off, state
        self.encoded += len(changed)
        if not sized:
            rec.data = b"".join(pieces)

    def _fresh(self, rec: _Topic, topic: TopicImage, layout: _Layout, arr: _Array) -> None:
        """The record of a topic with nothing usable kept (a cold memo: each Spark unit's first full
        image): every state encoded in one pass over the mapping, from the registration's fields
        (no state object made when encoding), offline replicas only where a replica is not
        registered (a C superset test first)."""
        name, sized, registered, epoch = topic.name, arr.sized, arr.registered, arr.epoch
        parts = topic.partitions
        keys = list(parts)
        regs = list(parts.values())
        superset = registered.issuperset
        offline = [() if superset(reg.replicas) else tuple([r for r in reg.replicas if r not in registered])
                   for reg in regs]
        n = len(keys)
        head: Any = rec.head if rec.name == name else None  # kept: same name, id, kind (None when new)
        if sized:
            if head is None:
                head = layout.topic_head_size(name, rec.tid)
            by_key: list[Any] = [_state_size(layout, name, p, reg, epoch, off)
                                 for p, reg, off in zip(keys, regs, offline, strict=True)]
        else:
            if head is None:
                head = layout.topic_head(name, rec.tid)
            args = layout.encode_state_args
            try:
                by_key = [args(name, p, epoch, reg.leader, reg.leader_epoch, reg.isr, reg.partition_epoch,
                               reg.replicas, off) for p, reg, off in zip(keys, regs, offline, strict=True)]
            except Exception:  # the translated encoder names the failing field
                encode = layout.encode_state
                by_key = [encode(_state(name, p, reg, epoch, off)) for p, reg, off in zip(keys, regs, offline, strict=True)]
        self.encoded += n
        order = sorted(keys)
        if order == keys:  # the usual case: the mapping is in partition order
            states = by_key
            at: list[int] | range = range(n)
        else:
            slot_of = {p: i for i, p in enumerate(order)}
            at = [slot_of[p] for p in keys]
            states = by_key.copy()
            for j, state in zip(at, by_key, strict=True):
                states[j] = state
        rec.name, rec.head, rec.keys, rec.regs, rec.offline = name, head, keys, regs, offline
        rec.slots = list(range(1, n + 1)) if type(at) is range else [j + 1 for j in at]
        rec.split, rec.epoch = False, epoch
        if sized:
            rec.pieces = [head + array_count_size(n, layout.flexible), *states, len(layout.topic_tail)]
            rec.size = sum(rec.pieces)
        else:
            rec.pieces = [head + array_count(n, layout.flexible), *states, layout.topic_tail]
            rec.data = b"".join(rec.pieces)

    def _walk(self, rec: _Topic, topic: TopicImage, layout: _Layout, arr: _Array, same_brokers: bool) -> None:
        """The record walked partition by partition (same name: the head kept): a state is
        re-encoded only if its registration object or offline replicas differ."""
        sized, registered, epoch, name = arr.sized, arr.registered, arr.epoch, topic.name
        pieces = rec.pieces
        known = {p: (rec.regs[i], rec.offline[i], rec.slots[i]) for i, p in enumerate(rec.keys)}
        args, pre, post, e = layout.encode_state_args, layout.state_pre, layout.state_post, arr.epoch_piece()
        split = rec.split
        parts = topic.partitions
        n = len(parts)
        out: list[Any] = [rec.head + (array_count_size(n, layout.flexible) if sized else array_count(n, layout.flexible))]
        slot_of: dict[int, int] = {}
        offline_of: dict[int, tuple[int, ...]] = {}
        superset = registered.issuperset
        for p in sorted(parts):
            reg = parts[p]
            was = known.get(p)
            if was is None or was[0] is not reg or not same_brokers:
                reps = reg.replicas
                off = () if superset(reps) else tuple([r for r in reps if r not in registered])
            else:
                off = was[1]
            if was is not None and was[0] is reg and was[1] == off:
                if split:
                    out += (pieces[was[2] - 2], e, pieces[was[2]])
                else:
                    out.append(pieces[was[2]])
            else:
                self.encoded += 1
                if sized:
                    out.append(_state_size(layout, name, p, reg, epoch, off))
                else:
                    try:
                        state = args(name, p, epoch, reg.leader, reg.leader_epoch, reg.isr, reg.partition_epoch,
                                     reg.replicas, off)
                    except Exception:  # the codec's encoder raises its translated error (or encodes, as _fresh)
                        state = layout.encode_state(_state(name, p, reg, epoch, off))
                    if split:
                        out += (pre(state), e, post(state))
                    else:
                        out.append(state)
            slot_of[p] = len(out) - 1
            offline_of[p] = off
        out.append(len(layout.topic_tail) if sized else layout.topic_tail)
        rec.keys = list(parts)
        rec.regs = list(parts.values())
        rec.offline = [offline_of[p] for p in rec.keys]
        rec.slots = [slot_of[p] for p in rec.keys]
        rec.pieces = out
        if sized:
            rec.size = sum(out)
        else:
            rec.data = b"".join(out)


def _same_keys(topics: Mapping[uuid.UUID, TopicImage], keys: list[uuid.UUID]) -> bool:
    """Whether the topics mapping has ``keys`` in that order (apply_delta keeps the key objects,
    so the list comparison is by identity, in C)."""
    return len(topics) == len(keys) and list(topics) == keys


def _reepoch(rec: _Topic, controller_epoch: int, layout: _Layout) -> None:
    """The topic's encoded states given another controller epoch, nothing re-encoded: a state's
    bytes differ only at layout.state_epoch_at. A whole state is split there (once per record:
    _Topic), a split one gets the new shared epoch piece (one C slice assignment); the topic is
    joined again. Done at the end of a body for every record whose ``epoch`` is not the image's:
    a patched or walked record may hold states of both epochs, and each gets the new one; a
    record made anew (``_fresh``: an unpacked image's topics) holds only the new epoch: skipped."""
    pieces = rec.pieces
    n = len(rec.keys)
    epoch = _EPOCH32.pack(controller_epoch)
    if rec.split:
        pieces[2:-1:3] = [epoch] * n
    else:
        states = pieces[1:-1]
        split = zip(map(layout.state_pre, states), itertools.repeat(epoch, n), map(layout.state_post, states),
                    strict=True)
        pieces = rec.pieces = [pieces[0], *itertools.chain.from_iterable(split), pieces[-1]]
        rec.slots = [3 * slot for slot in rec.slots]  # state j: piece 1 + j whole, 3 + 3j split
        rec.split = True
    rec.data = b"".join(pieces)
    rec.epoch = controller_epoch


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
    arr = pieces.array(image, version, sizes_only)
    records = arr.records
    topic_ids = arr.topic_ids
    if topic_ids is None:
        topic_ids = arr.topic_ids = {rec.name: rec.tid for rec in records if rec.pieces}
    count = sum(map(len, map(_KEYS, records)))
    topics = sum(map(bool, map(_PIECES, records)))
    builder = UpdateMetadataBuilder(
        version, controller_id, header_epoch, _ImageStates(count, image, image.epoch),  # type: ignore[arg-type]
        live_brokers(tuple(live), version), topic_ids, True, int(update_type),
    )
    if sizes_only:  # the same length from sizes: the envelope's, its empty array replaced by the topics'
        size = sum(map(_SIZE, records))
        envelope_size = attrs.evolve(builder, partition_states=[]).size_body()
        total = envelope_size - len(layout.empty_array) + array_count_size(topics, layout.flexible) + size
        return FullImageBody(builder, SharedBody(b"", layout.epoch_offset, total))
    envelope = attrs.evolve(builder, partition_states=[]).encode_body(first_broker_epoch)
    off = layout.states_offset
    assert envelope[off: off + len(layout.empty_array)] == layout.empty_array
    data = b"".join((envelope[:off], array_count(topics, layout.flexible), *map(_DATA, records),
                     envelope[off + len(layout.empty_array):]))
    return FullImageBody(builder, SharedBody(data, layout.epoch_offset))


_KEYS = operator.attrgetter("keys")
_PIECES = operator.attrgetter("pieces")
_DATA = operator.attrgetter("data")
_SIZE = operator.attrgetter("size")
