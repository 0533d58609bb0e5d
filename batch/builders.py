"""Request builders: the inputs of one control request, turned into a body object or bytes.

Rules: like Kafka's AbstractControlRequest.Builder subclasses (LAIRq, UMRq, SRRq `build`),
each builder holds what the batch decided and builds the request at its pinned version.
`build(broker_epoch)` gives the message object (the reference, field for field as Kafka
builds it); `encode_body(broker_epoch, ...)` gives the same bytes as build(epoch).encode(version)
(tests check it), to be shared among brokers: only the 8 epoch bytes at the layout's
epoch_offset differ per broker. What depends only on (message, version) is computed once per
process (`body_layout`). LeaderAndIsr bodies are assembled from pre-encoded parts kept per
send (`SendParts`): each partition state encoded once, so a state sent to several brokers is
encoded once, and each topic's header (name, id) looked up once (encoded once per process);
the envelope too: its fixed-width head once per (version, controller, KRaft flag, epoch, type)
per process (`_lair_head`, the broker epoch written in per body), each live leader once per
send. UpdateMetadata bodies are the codec's envelope without live brokers, with the live
brokers' bytes spliced in before the tagged fields (`live_brokers_piece`: a bounded
process-level cache keyed by the immutable live-broker tuple; the tagged-field section, which
holds Type in v8+, is taken as the codec writes it, `_umr_ends`). Why the bytes cannot differ:
every piece is the codec's own encoding of an immutable value at the same version, cut where
the spec puts fields of fixed width or the last array; the tests compare each body with
build(epoch).encode(version) (tests/batch/test_live_brokers_splice.py, check_wire).
Sizes only: `size_body(parts)` gives len(encode_body(...)) from the fields, with nothing
encoded (the codec's generated sizers, requests/gen_sizer.py, Kafka's MessageSizeAccumulator
idea), sharing work the same way: each LeaderAndIsr state sized once per send (`SendParts`),
the fixed-width head by its spec offset, the live brokers' size per live-broker tuple; an
UpdateMetadata v5+ body of a list of states from its envelope's size (per field values) and each
state's and topic header's (per name) size, no topic state made (2,918 bodies of the 1M-record
log's first 3,000 deltas: 0.27 s -> 0.16 s CPU, same sizes: tests/batch/test_sizes_only.py).
`shared_body(..., sizes_only=True)` gives a `SharedBody` that knows its size and holds no
bytes; asking it for bytes is an error (tests/batch/test_sizes_only.py).
Hot path: `encode_body` tells a LeaderAndIsrStates (no subclass, never registered) by its exact
type, not isinstance: LazyStates is an ABC, whose isinstance runs a Python-level
ABCMeta.__instancecheck__ on every body (197k LeaderAndIsr bodies in the 1M-record replay).
`LeaderAndIsrBuilder.encode_body_from_runs`: the same body when the caller already holds the
TopicStates array's pieces per topic, made with `lair_run_pieces` (the pieces encode_body
uses: the state encoder, `_topic_head`, the count table, the tail); replay/propagate/incremental.py
makes them topic by topic while it makes the states (66.026 G -> 65.640 G instructions, its rules).
Pieces for callers that hold no state objects (replay/propagate/incremental.py, issue 26):
`lair_state_args` / `umr_run_pieces` (the codec's state encoders taking the makers' fields as
arguments: make_lair_state / make_umr_state's values, the same bytes, untranslated errors),
`lair_head_pieces` (the head cut around the broker epoch, kept per values), `lair_leaders_pieces`
(a live leader's encoder, counts, tail: a caller keeps each leader's bytes), `lair_body_from_runs`,
and `UpdateMetadataBuilder.encode_body_from_runs` (the envelope's pieces kept per values,
`_umr_envelope`, around the caller's TopicStates runs and the live brokers' piece). Each body
equals build(epoch).encode(version): tests/batch/test_body_from_runs.py (hypothesis).
"""

from __future__ import annotations

import functools
import itertools
import operator
import struct
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from ctrlbatch.context import ZERO_UUID, SecurityProtocol, TopicPartition
from ctrlbatch.requests import (
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
    StopReplicaPartitionState,
    StopReplicaPartitionV0,
    StopReplicaRequest,
    StopReplicaTopicState,
    StopReplicaTopicV1,
    UnsupportedVersionError,
    UpdateMetadataBroker,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)
from ctrlbatch.requests.apis import LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA
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
from ctrlbatch.requests.model import Message

from .lair_rows import LAIR_STATE_FIELDS, LeaderAndIsrRows, LeaderAndIsrStates, make_lair_state
from .partition_info import UMR_STATE_FIELDS, UpdateMetadataStates, make_umr_state

_EPOCH = struct.Struct(">q")  # BrokerEpoch is an int64 in every control request
_COUNTS = 256  # array length prefixes kept ready (a topic's states per broker are usually few)
_TOPIC_HEADS = 16384  # topic headers remembered (a failover batch of 200,000 partitions has 4,000 topics)


@attrs.frozen
class BodyLayout:
    """What a body of `message` at `version` looks like, whatever its content (computed once)."""

    message: type[Message]
    version: int
    flexible: bool
    epoch_offset: int | None
    """Where BrokerEpoch sits (every field before it is fixed-width), None below its first version."""


@functools.cache
def body_layout(message: type[Message], version: int) -> BodyLayout:
    epoch_offset = None
    if version in message.MESSAGE.field("BrokerEpoch").versions:
        epoch_offset = fixed_offset(message.SPEC, version, "BrokerEpoch")
    return BodyLayout(message, version, message.is_flexible(version), epoch_offset)


@attrs.frozen
class _LeaderAndIsrLayout:
    """LeaderAndIsr at one version, for assembling bodies from pre-encoded parts."""

    body: BodyLayout
    states_field: str
    """TopicStates (v2+, grouped by topic) or UngroupedPartitionStates (v0-1)."""
    states_offset: int
    """Where that array sits in an envelope encoded without states (fixed-width fields before it)."""
    empty_array: bytes
    encode_state: Callable[[LeaderAndIsrPartitionState], bytes]
    encode_topic: Callable[[LeaderAndIsrTopicState], bytes]
    encode_leader: Callable[[LeaderAndIsrLiveLeader], bytes]
    size_state: Callable[[LeaderAndIsrPartitionState], int]
    size_topic: Callable[[LeaderAndIsrTopicState], int]
    size_leader: Callable[[LeaderAndIsrLiveLeader], int]
    topic_tail: bytes
    """What ends a topic state after its partition states: its tagged-field count when flexible."""
    counts: tuple[bytes, ...]
    """The length prefixes of arrays of 0.._COUNTS - 1 elements, looked up instead of encoded."""
    count_sizes: tuple[int, ...]
    """Their sizes (sizes only)."""
    encode_state_args: Callable[..., bytes]
    """The state encoder taking LAIR_STATE_FIELDS as arguments (untranslated: layout.struct_args_encoder)."""


@functools.cache
def _lair_layout(version: int) -> _LeaderAndIsrLayout:
    grouped = version >= 2
    field = "TopicStates" if grouped else "UngroupedPartitionStates"
    offset = fixed_offset(LeaderAndIsrRequest.SPEC, version, field)
    assert offset is not None, f"LeaderAndIsr v{version}: {field} follows a variable-width field"
    body = body_layout(LeaderAndIsrRequest, version)
    encode_topic = struct_encoder(LeaderAndIsrRequest, "LeaderAndIsrTopicState", version) if grouped else _no_topics
    size_topic = struct_sizer(LeaderAndIsrRequest, "LeaderAndIsrTopicState", version) if grouped else _no_topics
    return _LeaderAndIsrLayout(
        body, field, offset, array_count(0, body.flexible),
        struct_encoder(LeaderAndIsrRequest, "LeaderAndIsrPartitionState", version), encode_topic,
        struct_encoder(LeaderAndIsrRequest, "LeaderAndIsrLiveLeader", version),
        struct_sizer(LeaderAndIsrRequest, "LeaderAndIsrPartitionState", version), size_topic,
        struct_sizer(LeaderAndIsrRequest, "LeaderAndIsrLiveLeader", version),
        no_tagged_fields(body.flexible),
        tuple(array_count(n, body.flexible) for n in range(_COUNTS)),
        tuple(array_count_size(n, body.flexible) for n in range(_COUNTS)),
        struct_args_encoder(LeaderAndIsrRequest, "LeaderAndIsrPartitionState", version, LAIR_STATE_FIELDS),
    )


def _no_topics(_topic: LeaderAndIsrTopicState) -> Any:
    raise AssertionError("LeaderAndIsr v0-1 has no topic states")


def _group_by_topic(states: Sequence[Any]) -> dict[str, list[Any]]:
    """Partition states grouped by topic, topics in first-seen order, states in input order."""
    groups: dict[str, list[Any]] = {}
    for s in states:
        g = groups.get(s.topic_name)
        if g is None:
            groups[s.topic_name] = [s]
        else:
            g.append(s)
    return groups


def _topic_states(cls: Any, states: Sequence[Any], topic_ids: dict[str, uuid.UUID]) -> tuple[Any, ...]:
    """The builders' v2+/v5+ grouping: one topic state per topic, ZERO_UUID for a topic without an id."""
    return tuple(
        cls(topic_name=t, topic_id=topic_ids.get(t, ZERO_UUID), partition_states=tuple(ss))
        for t, ss in _group_by_topic(states).items()
    )


@attrs.define(slots=True, eq=False)
class SharedBody:
    """Encoded bytes shared by several brokers' requests, with the broker epoch's place in them;
    or, sized only (``sized`` set: see the module rules), just their length."""

    data: bytes
    epoch_offset: int | None
    sized: int | None = None
    """The body's size when it was sized, not encoded: data is then empty and pieces() refuses."""

    @property
    def size(self) -> int:
        """The body's bytes, encoded or not."""
        return len(self.data) if self.sized is None else self.sized

    def pieces(self, broker_epoch: int) -> list[bytes | memoryview]:
        if self.sized is not None:
            raise ValueError(f"{self!r} was sized, not encoded (sizes only): it has no bytes to send")
        off = self.epoch_offset
        if off is None:
            return [self.data]
        view = memoryview(self.data)
        return [view[:off], _EPOCH.pack(broker_epoch), view[off + _EPOCH.size :]]

    def __repr__(self) -> str:
        sized = ", sized only" if self.sized is not None else ""
        return f"SharedBody({self.size:,} bytes, epoch at {self.epoch_offset}{sized})"


def shared_body(
    builder: Builder, broker_epoch: int, epoch_offset: int | None, parts: SendParts | None = None,
    *, sizes_only: bool = False,
) -> SharedBody:
    """The body of builder with broker_epoch written in, encoded (encode_body) or, sizes_only,
    sized (size_body: the same length, nothing encoded)."""
    if sizes_only:
        return SharedBody(b"", epoch_offset, builder.size_body(parts))
    return SharedBody(builder.encode_body(broker_epoch, parts), epoch_offset)


class SendParts:
    """One send's encoded pieces of LeaderAndIsr bodies, shared by all its builders.

    state_bytes: each partition state's bytes under id(state). The batch holds every state until
    the send ends, so an id names one state meanwhile (a value key would hash all 13 fields).
    topic_heads: each topic's header bytes under its name (the send's topic ids are a snapshot)."""

    __slots__ = (
        "state_bytes", "topic_heads", "leader_bytes", "state_sizes", "topic_head_sizes", "leader_sizes", "rows",
        "row_bytes",
    )

    def __init__(self) -> None:
        self.state_bytes: dict[int, bytes] = {}
        self.rows: LeaderAndIsrRows | None = None
        self.row_bytes: list[bytes | None] = []
        """The batch's LeaderAndIsr states held as rows (lair_rows.py): each row's bytes, by row
        number, for the rows object `rows` (the send's)."""
        self.topic_heads: dict[str, bytes] = {}
        self.leader_bytes: dict[int, bytes] = {}
        """Each live leader's bytes under id(leader), like state_bytes (the builders hold them)."""
        self.state_sizes: dict[int, int] = {}
        """Sizes only: each state's size under id(state), as state_bytes; the others likewise."""
        self.topic_head_sizes: dict[str, int] = {}
        self.leader_sizes: dict[int, int] = {}


@functools.lru_cache(maxsize=256)
def _lair_head(version: int, controller_id: int, kraft: bool, controller_epoch: int, update_type: int) -> bytes:
    """A LeaderAndIsr body's bytes before its states array (fixed-width fields), broker epoch -1:
    the same for every body of a send but for the 8 epoch bytes, which encode_body puts in."""
    empty = LeaderAndIsrRequest(
        controller_id=controller_id, is_k_raft_controller=kraft if version >= 7 else False,
        controller_epoch=controller_epoch, type=update_type if version >= 5 else 0,
    ).encode(version)
    return empty[: _lair_layout(version).states_offset]


@functools.lru_cache(maxsize=_TOPIC_HEADS)
def _topic_head(version: int, topic: str, topic_id: int) -> bytes:
    """A LeaderAndIsr topic state's bytes before its partition states (its name and id, given
    as the UUID's int: a cache hit then compares ints in C, not UUIDs in Python)."""
    empty = LeaderAndIsrTopicState(topic_name=topic, topic_id=uuid.UUID(int=topic_id))
    return without_empty_last_array(_lair_layout(version).encode_topic(empty), LeaderAndIsrRequest.is_flexible(version))


@functools.lru_cache(maxsize=_TOPIC_HEADS)
def _topic_head_size(version: int, topic: str) -> int:
    """len(_topic_head(version, topic, id)) for any id: the id is a fixed-width UUID (v5+), so the
    size is the name's, kept per process like the bytes (a delta's LeaderAndIsr send sizes the
    head of each topic it touches: up to 2,000 topics, each a topic state made and sized)."""
    layout = _lair_layout(version)
    empty = LeaderAndIsrTopicState(topic_name=topic, topic_id=ZERO_UUID)
    return layout.size_topic(empty) - layout.count_sizes[0] - len(layout.topic_tail)


def lair_run_pieces(
    version: int,
) -> tuple[Callable[[LeaderAndIsrPartitionState], bytes], Callable[[str, dict[str, uuid.UUID]], bytes], Callable[[int], bytes], bytes]:
    """What LeaderAndIsrBuilder.encode_body_from_runs's caller makes a topic's run of (v2+):
    the state encoder, the topic head (name, id: ZERO_UUID without one), the count of n states,
    the topic's tail; the pieces encode_body uses."""
    layout = _lair_layout(version)
    flexible = layout.body.flexible
    counts = layout.counts

    def head(topic: str, topic_ids: dict[str, uuid.UUID]) -> bytes:
        return _topic_head(version, topic, topic_ids.get(topic, ZERO_UUID).int)

    def count(n: int) -> bytes:
        return counts[n] if n < _COUNTS else array_count(n, flexible)

    return layout.encode_state, head, count, layout.topic_tail


def lair_state_args(version: int) -> Callable[..., bytes]:
    """LeaderAndIsr's partition state encoder at `version` taking LAIR_STATE_FIELDS as arguments
    (untranslated: on a failure it raises the codec's raw error; make the state and encode it
    with ``lair_run_pieces``'s encoder for the translated one): the same bytes as that encoder
    gives the state made from the same values, with no state made."""
    return _lair_layout(version).encode_state_args


@functools.lru_cache(maxsize=256)
def lair_head_pieces(
    version: int, controller_id: int, kraft: bool, controller_epoch: int, update_type: int,
) -> tuple[bytes, bytes]:
    """A LeaderAndIsr body's bytes before its TopicStates array (v2+: fixed-width fields), cut
    around the broker epoch's 8 bytes: (before, after). Every body of a send has them."""
    fixed = _lair_head(version, controller_id, kraft, controller_epoch, update_type)
    at = _lair_layout(version).body.epoch_offset
    if at is None:
        raise ValueError(f"LeaderAndIsr v{version}: no broker epoch (lair_head_pieces is for v2+)")
    return fixed[:at], fixed[at + _EPOCH.size :]


def lair_leaders_pieces(version: int) -> tuple[Callable[[LeaderAndIsrLiveLeader], bytes], Callable[[int], bytes], bytes]:
    """lair_leaders_piece's parts: a live leader's encoder, the count of n leaders, the body's
    tagged-field count (a caller keeping each leader's bytes joins them itself)."""
    layout = _lair_layout(version)
    flexible = layout.body.flexible
    counts = layout.counts

    def count(n: int) -> bytes:
        return counts[n] if n < _COUNTS else array_count(n, flexible)

    return layout.encode_leader, count, layout.topic_tail


def lair_leaders_piece(version: int, leaders: Sequence[LeaderAndIsrLiveLeader]) -> bytes:
    """A LeaderAndIsr body's end (what _append_live_leaders appends): the LiveLeaders array and
    the body's tagged-field count."""
    encode, count, tail = lair_leaders_pieces(version)
    return b"".join([count(len(leaders)), *map(encode, leaders), tail])


def lair_body_from_runs(head: tuple[bytes, bytes], broker_epoch: int, topics: bytes, runs: list[bytes], leaders: bytes) -> bytes:
    """LeaderAndIsrBuilder.encode_body(broker_epoch) (v2+) from its pieces: ``head`` from
    lair_head_pieces, ``topics`` the count of the topics (lair_run_pieces' count), ``runs`` their
    pieces (per topic: head, count, the states' bytes, tail, as lair_run_pieces makes them, in
    the states' order), ``leaders`` from lair_leaders_piece."""
    out = [head[0], _EPOCH.pack(broker_epoch), head[1], topics]
    out += runs
    out.append(leaders)
    return b"".join(out)


def _append_live_leaders(
    ap: Callable[[bytes], None], leaders: Sequence[Any], layout: _LeaderAndIsrLayout, flexible: bool, parts: SendParts,
) -> None:
    """A LeaderAndIsr body's end: LiveLeaders (each leader encoded once per send) and the body's
    tagged-field count (no_tagged_fields, as a topic's tail)."""
    ap(layout.counts[len(leaders)] if len(leaders) < _COUNTS else array_count(len(leaders), flexible))
    leader_bytes = parts.leader_bytes
    enc_leader = layout.encode_leader
    for node in leaders:
        leader = leader_bytes.get(id(node))
        if leader is None:
            leader = leader_bytes[id(node)] = enc_leader(node)
        ap(leader)
    ap(layout.topic_tail)


def _append_topic_runs(
    out: list[bytes], states: Sequence[LeaderAndIsrPartitionState], topic_ids: dict[str, uuid.UUID],
    heads: dict[str, bytes], state_bytes: dict[int, bytes], layout: _LeaderAndIsrLayout, version: int,
) -> bool:
    """LeaderAndIsr v2+'s TopicStates array appended to `out` in one pass over the states, when
    each topic's states are one run (a batch adds a topic's partitions together): each run's
    count is put in when it ends, with no list per topic (a failover send made 200,000 of them,
    and the collector walked them). False, with `out` as it was, when a topic comes back after
    another: then encode_body groups them (_group_by_topic), topics in first-seen order."""
    flexible = layout.body.flexible
    counts = layout.counts
    tail = layout.topic_tail
    enc_state = layout.encode_state
    known = state_bytes.get
    ap = out.append
    start = len(out)
    ap(b"")  # the number of topics, put in at the end
    seen: set[str] = set()
    topic: str | None = None
    count_at = n = 0
    for s in states:
        t = s.topic_name
        if t != topic:
            if topic is not None:
                out[count_at] = counts[n] if n < _COUNTS else array_count(n, flexible)
                ap(tail)
            if t in seen:
                del out[start:]
                return False
            seen.add(t)
            head = heads.get(t)
            if head is None:
                head = heads[t] = _topic_head(version, t, topic_ids.get(t, ZERO_UUID).int)
            ap(head)
            count_at = len(out)
            ap(b"")
            topic, n = t, 0
        b = known(id(s))
        if b is None:
            b = state_bytes[id(s)] = enc_state(s)
        ap(b)
        n += 1
    if topic is not None:
        out[count_at] = counts[n] if n < _COUNTS else array_count(n, flexible)
        ap(tail)
    out[start] = array_count(len(seen), flexible)
    return True


def encode_rows(parts: SendParts, rows: LeaderAndIsrRows, version: int) -> None:
    """Each row's LeaderAndIsr state encoded at `version` into parts.row_bytes, in row order:
    the rows reference the context's objects in the order the adds met them, so one pass in
    that order reads memory in order (a broker's rows, read first by _append_row_runs, are
    spread over the whole context: measured 0.61 -> 0.44 s for a failover's 200,000 rows). A row
    whose state does not encode is left for _append_row_runs, which raises the codec's error
    only if a body needs that row (the error, and when it is raised, stay as before)."""
    layout = _lair_layout(version)
    fast = _fast(layout.encode_state)
    args = layout.encode_state_args
    new = rows.new
    gate = rows.gate
    out: list[bytes | None] = []
    ap = out.append
    row = 0
    for tp, le, a in zip(rows.tps, rows.leadership, rows.assignment, strict=True):
        try:
            if a is None:
                ap(fast(le))
            else:  # the fields LeaderAndIsrRows.state makes the state of, encoded as arguments
                lai = le.leader_and_isr
                ap(args(
                    tp.topic, tp.partition, le.controller_epoch, lai.leader, lai.leader_epoch, lai.isr,
                    lai.partition_epoch, a.replicas, a.adding_replicas, a.removing_replicas, row in new,
                    int(lai.leader_recovery_state) if gate else 0,
                ))
        except Exception:
            ap(None)
        row += 1
    parts.rows = rows
    parts.row_bytes = out


def _append_row_runs(
    out: list[bytes], states: LeaderAndIsrStates, topic_ids: dict[str, uuid.UUID], parts: SendParts,
    layout: _LeaderAndIsrLayout, version: int,
) -> bool:
    """_append_topic_runs for the batch's rows (lair_rows.py): each row's state made, encoded
    once per send (parts.row_bytes) and dropped; a state already read (states.made) is encoded
    as it is. The same bytes: the state a row stands for, encoded by the same encoder."""
    rows = states.rows
    leadership_of = rows.leadership
    assignment_of = rows.assignment
    new = rows.new
    gate = rows.gate
    make = make_lair_state
    if parts.rows is not rows:
        parts.rows = rows
        parts.row_bytes = [None] * len(rows)
    elif len(parts.row_bytes) < len(rows):
        parts.row_bytes.extend([None] * (len(rows) - len(parts.row_bytes)))
    row_bytes = parts.row_bytes
    made = states.made
    heads = parts.topic_heads
    flexible = layout.body.flexible
    counts = layout.counts
    tail = layout.topic_tail
    enc_state = layout.encode_state
    fast = _fast(enc_state)
    ap = out.append
    start = len(out)
    ap(b"")  # the number of topics, put in at the end
    seen: set[str] = set()
    topic: str | None = None
    count_at = n = 0
    for tp, row in zip(states.keys, states.row_numbers, strict=True):
        t = tp.topic
        if t != topic:
            if topic is not None:
                out[count_at] = counts[n] if n < _COUNTS else array_count(n, flexible)
                ap(tail)
            if t in seen:
                del out[start:]
                return False
            seen.add(t)
            head = heads.get(t)
            if head is None:
                head = heads[t] = _topic_head(version, t, topic_ids.get(t, ZERO_UUID).int)
            ap(head)
            count_at = len(out)
            ap(b"")
            topic, n = t, 0
        b = row_bytes[row]
        if b is None:
            s = made.get(row) if made else None
            if s is None:  # LeaderAndIsrRows.state, inline (200,000 rows in a failover)
                a = assignment_of[row]
                if a is None:
                    s = leadership_of[row]
                else:
                    le = leadership_of[row]
                    lai = le.leader_and_isr
                    s = make(
                        t, tp.partition, le.controller_epoch, lai.leader, lai.leader_epoch, lai.isr,
                        lai.partition_epoch, a.replicas, a.adding_replicas, a.removing_replicas, row in new,
                        int(lai.leader_recovery_state) if gate else 0,
                    )
            try:
                b = fast(s)
            except Exception:
                b = enc_state(s)  # raises the codec's translated error
            row_bytes[row] = b
        ap(b)
        n += 1
    if topic is not None:
        out[count_at] = counts[n] if n < _COUNTS else array_count(n, flexible)
        ap(tail)
    out[start] = array_count(len(seen), flexible)
    return True


def _fast(encode: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """The codec's untranslated encoder behind `encode` (requests/codec.py), or encode itself."""
    return getattr(encode, "fast", encode)


def _builder_repr(self: Any) -> str:
    """Short whatever the size: the states are counted, not shown."""
    if isinstance(self, StopReplicaBuilder):
        n = sum(len(states) for _, states in self.topic_states)
    else:
        n = len(self.partition_states)
    return f"{type(self).__name__}(v{self.version}, controller {self.controller_id}, epoch {self.controller_epoch}, {n} partitions)"


@attrs.define(slots=True, eq=False, repr=False)
class LeaderAndIsrBuilder:
    version: int
    controller_id: int
    controller_epoch: int
    partition_states: list[LeaderAndIsrPartitionState]
    topic_ids: dict[str, uuid.UUID]
    live_leaders: tuple[LeaderAndIsrLiveLeader, ...]
    kraft_controller: bool = False
    update_type: int = 0
    api_key = LEADER_AND_ISR.key
    __repr__ = _builder_repr

    def build(self, broker_epoch: int) -> LeaderAndIsrRequest:
        v = self.version
        topic_states: tuple[LeaderAndIsrTopicState, ...] = ()
        ungrouped: tuple[LeaderAndIsrPartitionState, ...] = ()
        if v >= 2:
            topic_states = _topic_states(LeaderAndIsrTopicState, self.partition_states, self.topic_ids)
        else:
            ungrouped = tuple(self.partition_states)
        return attrs.evolve(self.build_no_states(broker_epoch), ungrouped_partition_states=ungrouped, topic_states=topic_states)

    def encode_body(self, broker_epoch: int, parts: SendParts | None = None) -> bytes:
        """The body bytes: the envelope (everything but the states, encoded by the codec) with
        the states array spliced in at its fixed offset; parts already in `parts` (shared by
        this send's builders) are not encoded again."""
        version = self.version
        layout = _lair_layout(version)
        parts = SendParts() if parts is None else parts
        state_bytes = parts.state_bytes
        flexible = layout.body.flexible
        # The envelope from cached pieces: the fixed-width head (epoch put in), then the states,
        # then LiveLeaders (the last field: each leader encoded once per send) and the tagged
        # fields' count (LeaderAndIsr has no tagged field at the top).
        fixed = _lair_head(version, self.controller_id, self.kraft_controller, self.controller_epoch, self.update_type)
        epoch_at = layout.body.epoch_offset
        out = [fixed] if epoch_at is None else [fixed[:epoch_at], _EPOCH.pack(broker_epoch), fixed[epoch_at + 8 :]]
        ap = out.append
        known = state_bytes.get
        enc_state = layout.encode_state
        states: Sequence[LeaderAndIsrPartitionState] = self.partition_states  # a LeaderAndIsrStates, or a list
        if version >= 2:
            topic_ids = self.topic_ids
            heads = parts.topic_heads
            tail = layout.topic_tail
            counts = layout.counts
            if (type(states) is LeaderAndIsrStates and _append_row_runs(out, states, topic_ids, parts, layout, version)) or (
                _append_topic_runs(out, states, topic_ids, heads, parts.state_bytes, layout, version)
            ):
                groups: dict[str, list[LeaderAndIsrPartitionState]] = {}
            else:
                groups = _group_by_topic(states)
                ap(array_count(len(groups), flexible))
            for topic, group in groups.items():
                head = heads.get(topic)
                if head is None:
                    head = heads[topic] = _topic_head(version, topic, topic_ids.get(topic, ZERO_UUID).int)
                ap(head)
                n = len(group)
                ap(counts[n] if n < _COUNTS else array_count(n, flexible))
                for s in group:
                    b = known(id(s))
                    if b is None:
                        b = state_bytes[id(s)] = enc_state(s)
                    ap(b)
                ap(tail)
        else:
            ap(array_count(len(states), flexible))
            for s in states:
                b = known(id(s))
                if b is None:
                    b = state_bytes[id(s)] = enc_state(s)
                ap(b)
        _append_live_leaders(ap, self.live_leaders, layout, flexible, parts)
        return b"".join(out)

    def encode_body_from_runs(self, broker_epoch: int, runs: list[bytes], topics: int, parts: SendParts) -> bytes:
        """encode_body(broker_epoch, parts) (v2+) with the TopicStates array's topics already
        made by the caller (``runs``: per topic its head, the count of its states, their bytes
        and the tail, from ``lair_run_pieces``; ``topics`` of them, in the states' order): the
        same pieces joined, no pass over the states here."""
        version = self.version
        layout = _lair_layout(version)
        flexible = layout.body.flexible
        fixed = _lair_head(version, self.controller_id, self.kraft_controller, self.controller_epoch, self.update_type)
        epoch_at = layout.body.epoch_offset
        out = [fixed] if epoch_at is None else [fixed[:epoch_at], _EPOCH.pack(broker_epoch), fixed[epoch_at + 8 :]]
        counts = layout.counts
        out.append(counts[topics] if topics < _COUNTS else array_count(topics, flexible))
        out += runs
        _append_live_leaders(out.append, self.live_leaders, layout, flexible, parts)
        return b"".join(out)

    def size_body(self, parts: SendParts | None = None) -> int:
        """len(encode_body(...)) from the fields: the fixed-width head (its spec offset), the
        states array (per topic at v2+: header, count, states, tagged count), LiveLeaders and
        the tagged count. Sizes in `parts` are not computed again; order does not matter."""
        version = self.version
        layout = _lair_layout(version)
        parts = SendParts() if parts is None else parts
        flexible = layout.body.flexible
        tail = len(layout.topic_tail)
        sizes = parts.state_sizes
        known = sizes.get
        size_state = layout.size_state
        states = self.partition_states
        total = layout.states_offset
        count_sizes = layout.count_sizes
        if version >= 2:
            # Per topic: its head, the count of its states, the tail. Counted per run of one topic
            # (a batch adds a topic's partitions together); a topic met again adds to its count.
            per_topic: dict[str, int] = {}
            topic: str | None = None
            run = 0
            for s in states:
                n = known(id(s))
                if n is None:
                    n = sizes[id(s)] = size_state(s)
                total += n
                t = s.topic_name
                if t != topic:
                    if topic is not None:
                        per_topic[topic] = per_topic.get(topic, 0) + run
                    topic, run = t, 0
                run += 1
            if topic is not None:
                per_topic[topic] = per_topic.get(topic, 0) + run
            total += array_count_size(len(per_topic), flexible)
            heads = parts.topic_head_sizes
            for t, count in per_topic.items():
                head = heads.get(t)
                if head is None:
                    head = heads[t] = _topic_head_size(version, t)
                total += head + (count_sizes[count] if count < _COUNTS else array_count_size(count, flexible)) + tail
        else:
            total += array_count_size(len(states), flexible)
            for s in states:
                n = known(id(s))
                if n is None:
                    n = sizes[id(s)] = size_state(s)
                total += n
        leaders = self.live_leaders
        total += count_sizes[len(leaders)] if len(leaders) < _COUNTS else array_count_size(len(leaders), flexible)
        leader_sizes = parts.leader_sizes
        size_leader = layout.size_leader
        for node in leaders:
            n = leader_sizes.get(id(node))
            if n is None:
                n = leader_sizes[id(node)] = size_leader(node)
            total += n
        return total + tail

    def build_no_states(self, broker_epoch: int) -> LeaderAndIsrRequest:
        """The request without partition states: the envelope they are spliced into."""
        v = self.version
        return LeaderAndIsrRequest(
            controller_id=self.controller_id,
            is_k_raft_controller=self.kraft_controller if v >= 7 else False,
            controller_epoch=self.controller_epoch,
            broker_epoch=broker_epoch,
            type=self.update_type if v >= 5 else 0,
            live_leaders=self.live_leaders,
        )


@attrs.define(slots=True, eq=False, repr=False)
class UpdateMetadataBuilder:
    version: int
    controller_id: int
    controller_epoch: int
    partition_states: list[UpdateMetadataPartitionState]
    """A list, or a sequence made when read: the batch's UpdateMetadataStates (states made when read; encode_body encodes them without)."""
    live_brokers: tuple[UpdateMetadataBroker, ...]
    topic_ids: dict[str, uuid.UUID]
    kraft_controller: bool = False
    update_type: int = 0
    api_key = UPDATE_METADATA.key
    __repr__ = _builder_repr

    def check_endpoints(self) -> None:
        """UMRq.Builder's endpoint rules for the oldest versions (UMRq:37-78)."""
        v = self.version
        for b in self.live_brokers:
            if v == 0:
                if len(b.endpoints) != 1:
                    raise UnsupportedVersionError("UpdateMetadataRequest v0 requires a single endpoint")
                if b.endpoints[0].security_protocol != SecurityProtocol.PLAINTEXT:
                    raise UnsupportedVersionError("UpdateMetadataRequest v0 only handles PLAINTEXT endpoints")
            elif v < 3:
                for e in b.endpoints:
                    if e.listener and e.listener != _default_listener(e.security_protocol):
                        shown = ", ".join(_endpoint_text(x) for x in b.endpoints)
                        raise UnsupportedVersionError(
                            "UpdateMetadataRequest v0-v3 does not support custom listeners, request version: "
                            f"{v}, endpoints: [{shown}]"
                        )

    def build(self, broker_epoch: int) -> UpdateMetadataRequest:
        v = self.version
        self.check_endpoints()
        live = self.live_brokers
        if v == 0:
            live = tuple(
                attrs.evolve(b, v0_host=b.endpoints[0].host, v0_port=b.endpoints[0].port, endpoints=()) for b in live
            )
        return attrs.evolve(self.build_no_live_brokers(broker_epoch), live_brokers=live)

    def build_no_live_brokers(self, broker_epoch: int, with_states: bool = True) -> UpdateMetadataRequest:
        """The request without live brokers: the envelope their cached bytes are spliced into
        (without partition states too unless with_states: the envelope of encode_body's splice)."""
        v = self.version
        topic_states: tuple[UpdateMetadataTopicState, ...] = ()
        ungrouped: tuple[UpdateMetadataPartitionState, ...] = ()
        if not with_states:
            pass
        elif v >= 5:
            topic_states = _topic_states(UpdateMetadataTopicState, self.partition_states, self.topic_ids)
        else:
            ungrouped = tuple(self.partition_states)
        return UpdateMetadataRequest(
            controller_id=self.controller_id,
            is_k_raft_controller=self.kraft_controller if v >= 8 else False,
            type=self.update_type if v >= 8 else 0,
            controller_epoch=self.controller_epoch,
            broker_epoch=broker_epoch,
            ungrouped_partition_states=ungrouped,
            topic_states=topic_states,
        )

    def encode_body(self, broker_epoch: int, parts: SendParts | None = None) -> bytes:
        """The body bytes: the envelope (everything but the live brokers, encoded by the codec)
        with the live brokers' bytes, encoded once per live-broker tuple (live_brokers_piece),
        in place of its empty last array. One body per send: nothing to share between parts."""
        version = self.version
        piece = live_brokers_piece(version, self.live_brokers)  # checks the endpoints (build() does)
        empty, tail = _umr_ends(version, self.update_type if version >= 8 else 0)
        states = self.partition_states
        spliced = version >= _UMR_TOPICS_SINCE and isinstance(states, UpdateMetadataStates)
        env = self.build_no_live_brokers(broker_epoch, with_states=not spliced).encode(version)
        end = len(env) - len(empty) - len(tail)
        if env[end:] != empty + tail:  # cannot happen while LiveBrokers is the last positional field
            raise AssertionError(f"UpdateMetadata v{version}: the envelope does not end with {empty + tail!r}")
        if not spliced:
            return b"".join((env[:end], piece, tail))
        # The batch's states (partition_info.py): the TopicStates array encoded state by state in
        # place of the envelope's empty one, at its fixed offset; no state object is kept.
        off = _umr_layout(version).states_offset
        if env[off : off + len(empty)] != empty:
            raise AssertionError(f"UpdateMetadata v{version}: no empty TopicStates at offset {off}")
        topics = _umr_topic_array(version, states, self.topic_ids)  # type: ignore[arg-type]
        return b"".join((env[:off], topics, env[off + len(empty) : end], piece, tail))

    def encode_body_from_runs(self, broker_epoch: int, topics: int, runs: list[bytes]) -> bytes:
        """encode_body(broker_epoch) (v5+) with the TopicStates array's topics already made by
        the caller (``runs``: per topic its head, the count of its states, their bytes and the
        tail, from ``umr_run_pieces``; ``topics`` of them, grouped as _topic_states groups the
        states): the envelope's pieces (kept per values) and the live brokers' bytes
        (live_brokers_piece) joined around them, no state made or walked here."""
        version = self.version
        piece = live_brokers_piece(version, self.live_brokers)  # checks the endpoints (build() does)
        before, mid, after, tail = _umr_envelope(
            version, self.controller_id, self.kraft_controller, self.controller_epoch, self.update_type,
        )
        layout = _umr_layout(version)
        out = [before, _EPOCH.pack(broker_epoch), mid,
               layout.counts[topics] if topics < _COUNTS else array_count(topics, layout.flexible)]
        out += runs
        out += (after, piece, tail)
        return b"".join(out)

    def size_body(self, parts: SendParts | None = None) -> int:
        """len(encode_body(...)) from the fields: the envelope without live brokers, sized, with
        the live brokers' size (live_brokers_size) in place of its empty last array."""
        version = self.version
        live = live_brokers_size(version, self.live_brokers)  # checks the endpoints (build() does)
        empty = array_count_size(0, body_layout(UpdateMetadataRequest, version).flexible)
        states = self.partition_states
        if version >= _UMR_TOPICS_SINCE and type(states) is list:
            # The envelope without states (fixed-width fields: sized once per values), its empty
            # TopicStates array replaced by the states' sizes, grouped as _topic_states groups
            # them: no topic state made, no request walked (_umr_topics_size).
            envelope = _umr_envelope_size(
                version, self.controller_id, self.kraft_controller, self.controller_epoch, self.update_type,
            )
            return envelope - empty + _umr_topics_size(version, states) - empty + live
        return self.build_no_live_brokers(-1).encoded_size(version) - empty + live


_UMR_TOPICS_SINCE = 5  # UpdateMetadata's first version with topic states (grouped by topic)


@functools.lru_cache(maxsize=256)
def _umr_envelope_size(version: int, controller_id: int, kraft: bool, controller_epoch: int, update_type: int) -> int:
    """The size of an UpdateMetadata body without states and without live brokers (both arrays empty)."""
    return UpdateMetadataBuilder(
        version, controller_id, controller_epoch, [], (), {}, kraft, update_type,
    ).build_no_live_brokers(-1, with_states=False).encoded_size(version)


@functools.cache
def _umr_sizers(version: int) -> tuple[Callable[[UpdateMetadataPartitionState], int], bool, int]:
    """UpdateMetadata v5+'s partition state sizer, whether the version is flexible, a topic's tail size."""
    flexible = UpdateMetadataRequest.is_flexible(version)
    return (
        struct_sizer(UpdateMetadataRequest, "UpdateMetadataPartitionState", version), flexible,
        len(no_tagged_fields(flexible)),
    )


@functools.lru_cache(maxsize=_TOPIC_HEADS)
def _umr_topic_head_size(version: int, topic: str) -> int:
    """An UpdateMetadata v5+ topic state's size before its partition states (its name, and its id
    from v7: a fixed-width UUID, so the size is the name's)."""
    flexible = UpdateMetadataRequest.is_flexible(version)
    empty = UpdateMetadataTopicState(topic_name=topic, topic_id=ZERO_UUID)
    whole = struct_sizer(UpdateMetadataRequest, "UpdateMetadataTopicState", version)(empty)
    return whole - array_count_size(0, flexible) - len(no_tagged_fields(flexible))


def _umr_topics_size(version: int, states: Sequence[UpdateMetadataPartitionState]) -> int:
    """The size of the TopicStates array of these states (v5+): per topic (grouped, in any order)
    its head, the count of its states and its tail, then each state's size."""
    size_state, flexible, tail = _umr_sizers(version)
    runs: dict[str, int] = {}
    topic: str | None = None
    total = run = 0
    for s in states:
        total += size_state(s)
        t = s.topic_name
        if t != topic:
            if topic is not None:
                runs[topic] = runs.get(topic, 0) + run
            topic, run = t, 0
        run += 1
    if topic is not None:
        runs[topic] = runs.get(topic, 0) + run
    total += array_count_size(len(runs), flexible)
    for t, count in runs.items():
        total += _umr_topic_head_size(version, t) + array_count_size(count, flexible) + tail
    return total


@attrs.frozen
class _UpdateMetadataLayout:
    """UpdateMetadata v5+ at one version, for encoding its TopicStates array state by state."""

    flexible: bool
    states_offset: int
    """Where TopicStates sits (every field before it is fixed-width)."""
    encode_state: Callable[[UpdateMetadataPartitionState], bytes]
    encode_topic: Callable[[UpdateMetadataTopicState], bytes]
    topic_tail: bytes
    """What ends a topic state after its partition states: its tagged-field count when flexible."""
    counts: tuple[bytes, ...]
    encode_state_args: Callable[..., bytes]
    """The state encoder taking UMR_STATE_FIELDS as arguments (untranslated: layout.struct_args_encoder)."""


@functools.cache
def _umr_layout(version: int) -> _UpdateMetadataLayout:
    offset = fixed_offset(UpdateMetadataRequest.SPEC, version, "TopicStates")
    assert offset is not None, f"UpdateMetadata v{version}: TopicStates follows a variable-width field"
    flexible = UpdateMetadataRequest.is_flexible(version)
    return _UpdateMetadataLayout(
        flexible, offset,
        struct_encoder(UpdateMetadataRequest, "UpdateMetadataPartitionState", version),
        struct_encoder(UpdateMetadataRequest, "UpdateMetadataTopicState", version),
        no_tagged_fields(flexible), tuple(array_count(n, flexible) for n in range(_COUNTS)),
        struct_args_encoder(UpdateMetadataRequest, "UpdateMetadataPartitionState", version, UMR_STATE_FIELDS),
    )


@functools.lru_cache(maxsize=_TOPIC_HEADS)
def _umr_topic_head(version: int, topic: str, topic_id: int) -> bytes:
    """An UpdateMetadata topic state's bytes before its partition states (its name, v7+ its id;
    the id given as the UUID's int, as _topic_head)."""
    layout = _umr_layout(version)
    empty = layout.encode_topic(UpdateMetadataTopicState(topic_name=topic, topic_id=uuid.UUID(int=topic_id)))
    return without_empty_last_array(empty, layout.flexible)


def _umr_topic_array(version: int, states: UpdateMetadataStates, topic_ids: dict[str, uuid.UUID]) -> bytes:
    """UpdateMetadata v5+'s TopicStates array of the batch's states, as build() groups them
    (_topic_states: topics in first-seen order, each topic's states in map order): each state
    made from the stored values, encoded and dropped at once (partition_info.py). One pass when
    each topic's partitions are one run of the map (a batch adds a topic's partitions together)
    and no state is stored as such, else grouped first."""
    layout = _umr_layout(version)
    flexible = layout.flexible
    counts = layout.counts
    tail = layout.topic_tail
    enc = layout.encode_state
    fast = _fast(enc)
    args = layout.encode_state_args
    make = make_umr_state
    explicit = UpdateMetadataPartitionState
    refs = states.refs
    # refs and replicas hold the same keys in the same order (PartitionInfoMap keeps them so)
    rows: Iterable[tuple[TopicPartition, Any, tuple[int, ...] | None]] = zip(refs, refs.values(), states.replicas.values(), strict=True)
    # A state stored as such (None beside it) is grouped under its own topic_name, as build() does.
    runs = None if None in states.replicas.values() else _topic_runs(refs)
    if runs is None:  # a topic comes back after another, or stored states: group row by row
        grouped: dict[str, list[tuple[TopicPartition, Any, tuple[int, ...] | None]]] = {}
        for row in rows:
            tp, v, _ = row
            t = v.topic_name if type(v) is explicit else tp.topic
            g = grouped.get(t)
            if g is None:
                grouped[t] = [row]
            else:
                g.append(row)
        rows = [row for g in grouped.values() for row in g]
        runs = [(t, len(g)) for t, g in grouped.items()]
    out: list[bytes] = [array_count(len(runs), flexible)]
    ap = out.append
    rows_it = iter(rows)
    for topic, n in runs:
        ap(_umr_topic_head(version, topic, topic_ids.get(topic, ZERO_UUID).int))
        ap(counts[n] if n < _COUNTS else array_count(n, flexible))
        for tp, v, reps in itertools.islice(rows_it, n):
            if type(v) is explicit:
                try:
                    ap(fast(v))
                except Exception:
                    ap(enc(v))  # raises the codec's translated error
                continue
            lai = v.leader_and_isr  # state_of's fields, encoded as arguments (no state made)
            try:
                ap(args(
                    topic, tp.partition, v.controller_epoch, lai.leader, lai.leader_epoch, lai.isr,
                    lai.partition_epoch, reps, (),
                ))
            except Exception:
                ap(enc(make(
                    topic, tp.partition, v.controller_epoch, lai.leader, lai.leader_epoch, lai.isr,
                    lai.partition_epoch, reps, (),
                )))  # raises the codec's translated error
        ap(tail)
    return b"".join(out)


def umr_run_pieces(
    version: int,
) -> tuple[Callable[..., bytes], Callable[[UpdateMetadataPartitionState], bytes], Callable[[str, int], bytes], Callable[[int], bytes], bytes]:
    """What UpdateMetadataBuilder.encode_body_from_runs's caller makes a topic's run of (v5+):
    the state encoder taking UMR_STATE_FIELDS as arguments (untranslated, as lair_state_args),
    the state encoder, the topic head (name, v7+ id given as the UUID's int: ZERO_UUID's 0
    without one), the count of n states, the topic's tail; the pieces _umr_topic_array uses."""
    if version < _UMR_TOPICS_SINCE:
        raise ValueError(f"UpdateMetadata v{version}: no topic states (umr_run_pieces is for v{_UMR_TOPICS_SINCE}+)")
    layout = _umr_layout(version)
    flexible = layout.flexible
    counts = layout.counts

    def head(topic: str, topic_id: int) -> bytes:
        return _umr_topic_head(version, topic, topic_id)

    def count(n: int) -> bytes:
        return counts[n] if n < _COUNTS else array_count(n, flexible)

    return layout.encode_state_args, layout.encode_state, head, count, layout.topic_tail


@functools.lru_cache(maxsize=256)
def _umr_envelope(
    version: int, controller_id: int, kraft: bool, controller_epoch: int, update_type: int,
) -> tuple[bytes, bytes, bytes, bytes]:
    """An UpdateMetadata v5+ body without states and live brokers, cut where encode_body splices:
    (before the broker epoch, after it up to TopicStates, after TopicStates up to LiveBrokers,
    the tagged-field section after LiveBrokers)."""
    env = UpdateMetadataBuilder(
        version, controller_id, controller_epoch, [], (), {}, kraft, update_type,
    ).build_no_live_brokers(-1, with_states=False).encode(version)
    empty, tail = _umr_ends(version, update_type if version >= 8 else 0)
    end = len(env) - len(empty) - len(tail)
    off = _umr_layout(version).states_offset
    at = body_layout(UpdateMetadataRequest, version).epoch_offset
    if env[end:] != empty + tail or env[off : off + len(empty)] != empty or at is None or at + _EPOCH.size > off:
        raise AssertionError(f"UpdateMetadata v{version}: the envelope is not laid out as encode_body splices it")
    return env[:at], env[at + _EPOCH.size : off], env[off + len(empty) : end], tail


def _topic_runs(keys: Iterable[TopicPartition]) -> list[tuple[str, int]] | None:
    """(topic, number of partitions) per run of one topic in keys, or None when a topic has two runs."""
    runs: list[tuple[str, int]] = []
    for topic, group in itertools.groupby(keys, _tp_topic):
        runs.append((topic, sum(1 for _ in group)))
    if len(runs) != len({t for t, _ in runs}):
        return None
    return runs


_tp_topic = operator.attrgetter("topic")


@functools.lru_cache(maxsize=64)
def _umr_ends(version: int, update_type: int) -> tuple[bytes, bytes]:
    """What ends an UpdateMetadata body with no live brokers: the empty LiveBrokers array and the
    tagged-field section after it (which holds Type in v8+ when it is not 0)."""
    empty = array_count(0, body_layout(UpdateMetadataRequest, version).flexible)
    states = fixed_offset(UpdateMetadataRequest.SPEC, version, "TopicStates" if version >= 5 else "UngroupedPartitionStates")
    assert states is not None, f"UpdateMetadata v{version}: the states follow a variable-width field"
    minimal = UpdateMetadataRequest(type=update_type).encode(version)  # no states, no live brokers
    return empty, minimal[states + 2 * len(empty) :]


# The live brokers' bytes of the last few live-broker tuples (a bounded cache of a pure function).
# The key is the tuple itself, first compared by identity: the batch hands every send the one
# tuple it keeps for an unchanged broker set (request_batch.live_brokers), and the entry holds
# that tuple, so its id cannot be reused; then by value (an equal tuple built elsewhere, e.g.
# replay.full_image's). The bytes are a function of (version, the tuple's value), and the tuple
# and its frozen values never change, so a hit gives exactly what encoding would (property test:
# tests/batch/test_live_brokers_splice.py). Nothing invalidates an entry; the oldest is dropped.
# Measured on the 200k-record generated log: 2,389 UpdateMetadata v8 encodes of 100 live brokers
# cost 2.9 s (profiled) before this cache.
_LIVE_PIECES_KEPT = 8
_live_pieces: list[tuple[int, tuple[UpdateMetadataBroker, ...], bytes]] = []


def live_brokers_piece(version: int, live: tuple[UpdateMetadataBroker, ...]) -> bytes:
    """UpdateMetadata's LiveBrokers array as encoded at `version` (length prefix included):
    the bytes a body with these live brokers ends with, before its tagged-field count."""
    for v, kept, piece in _live_pieces:
        if kept is live and v == version:
            return piece
    for v, kept, piece in _live_pieces:  # an equal tuple built elsewhere: compared by value, still far cheaper than encoding
        if v == version and kept == live:
            return piece
    builder = UpdateMetadataBuilder(version, 0, 0, [], live, {})
    full = builder.build(-1).encode(version)  # the live brokers as build() gives them (v0: host and port)
    empty, tail = _umr_ends(version, 0)
    head = builder.build_no_live_brokers(-1).encode(version)
    head = head[: len(head) - len(empty) - len(tail)]
    if not (full.startswith(head) and full.endswith(tail)):  # LiveBrokers is the last positional field
        raise AssertionError(f"UpdateMetadata v{version}: LiveBrokers does not end the body")
    piece = full[len(head) : len(full) - len(tail)]
    _live_pieces.insert(0, (version, live, piece))
    del _live_pieces[_LIVE_PIECES_KEPT:]
    return piece


_live_sizes: list[tuple[int, tuple[UpdateMetadataBroker, ...], int]] = []  # as _live_pieces, for sizes


def live_brokers_size(version: int, live: tuple[UpdateMetadataBroker, ...]) -> int:
    """len(live_brokers_piece(version, live)), sized from the fields and kept like it (a
    bounded cache of a pure function of the version and the tuple's value)."""
    for v, kept, size in _live_sizes:
        if kept is live and v == version:
            return size
    for v, kept, size in _live_sizes:
        if v == version and kept == live:
            return size
    builder = UpdateMetadataBuilder(version, 0, 0, [], live, {})
    empty = array_count_size(0, body_layout(UpdateMetadataRequest, version).flexible)
    size = builder.build(-1).encoded_size(version) - builder.build_no_live_brokers(-1).encoded_size(version) + empty
    _live_sizes.insert(0, (version, live, size))
    del _live_sizes[_LIVE_PIECES_KEPT:]
    return size


def _default_listener(protocol_id: int) -> str | None:
    """The listener name a protocol id implies when none is configured (None for an unknown id)."""
    try:
        return SecurityProtocol(protocol_id).default_listener_name
    except ValueError:
        return None


def _endpoint_text(e: Any) -> str:
    return f"UpdateMetadataEndpoint(port={e.port}, host='{e.host}', listener='{e.listener}', securityProtocol={e.security_protocol})"


@attrs.define(slots=True, eq=False, repr=False)
class StopReplicaBuilder:
    version: int
    controller_id: int
    controller_epoch: int
    delete_partitions: bool
    topic_states: list[tuple[str, list[StopReplicaPartitionState]]]
    kraft_controller: bool = False
    api_key = STOP_REPLICA.key
    __repr__ = _builder_repr

    def build(self, broker_epoch: int) -> StopReplicaRequest:
        v = self.version
        kw: dict[str, Any] = {}
        if v >= 3:
            kw["topic_states"] = tuple(
                StopReplicaTopicState(topic_name=t, partition_states=tuple(ps)) for t, ps in self.topic_states
            )
        elif v >= 1:
            kw["topics"] = tuple(
                StopReplicaTopicV1(name=t, partition_indexes=tuple(p.partition_index for p in ps)) for t, ps in self.topic_states
            )
        else:
            kw["ungrouped_partitions"] = tuple(
                StopReplicaPartitionV0(topic_name=t, partition_index=p.partition_index) for t, ps in self.topic_states for p in ps
            )
        return StopReplicaRequest(
            controller_id=self.controller_id,
            is_k_raft_controller=self.kraft_controller if v >= 4 else False,
            controller_epoch=self.controller_epoch,
            broker_epoch=broker_epoch,
            delete_partitions=self.delete_partitions if v < 3 else False,
            **kw,
        )

    def encode_body(self, broker_epoch: int, parts: SendParts | None = None) -> bytes:
        """The body bytes (one body per broker: nothing to share between parts)."""
        return self.build(broker_epoch).encode(self.version)

    def size_body(self, parts: SendParts | None = None) -> int:
        """len(encode_body(...)) from the fields."""
        return self.build(-1).encoded_size(self.version)


Builder = LeaderAndIsrBuilder | UpdateMetadataBuilder | StopReplicaBuilder
