"""The output rows of a replay: one per delivered request, and their Parquet schema.

Rules:
- ``REQUEST_SCHEMA`` is the one schema both engines write (requests/ Parquet): timestamp (epoch
  ms, of the delta's last batch), broker, seq (per broker, from 0, over the whole replay),
  api_key, api (its Kafka name, API_NAMES), api_version, controller_id, controller_epoch (the
  header's), update_type (the Type field by name, UPDATE_TYPE_NAMES: Kafka's
  AbstractControlRequest.Type; null where the request has none: StopReplica, LeaderAndIsr below
  v5, UpdateMetadata below v8), partitions (partition states in the request), bytes (the whole
  frame with its 4-byte size prefix), sha256 (hex of that frame), frame (the frame itself, only
  with --with-frames), delta_first_offset and delta_last_offset (the delta's offsets: from just
  after the delta before it, or its first data batch's base offset if later, to its last; a
  snapshot's pseudo-delta starts at 0), so rows join the records table, and cause (the event the
  delta's records show: image/causes.py; ``SNAPSHOT`` for the snapshot's pseudo-delta). Every row
  is a delivered request: dropped sends have no row (the summary counts them), so there is no
  column saying so; the delta's last offset is its id (no separate ``delta`` column).
- The frame is ``OutboundRequest.encode(correlation_id=seq, client_id=str(controller_id))``,
  encoded and hashed by the one frame encoder (frames.FrameEncoder) for both engines.
- Both engines make rows the same way: the delivered sends of a delta become ``SendGroup``
  values (consecutive sends of one shared body and builder: the UpdateMetadata fan-out stays one
  group), which ``expand_columns`` (column chunks, for Parquet) or ``expand_rows`` (dicts, one at
  a time) turn into rows, numbering ``seq`` per broker. The Spark engine ships the groups between
  its stages and expands them where the rows are written.
- Sizes only (``--digest none``, ReplayOptions.digest): bodies are sized, not encoded
  (batch/builders.py shared_body), so a group has no ``data``; its rows' ``bytes`` is the frame's
  length computed from the fields (requests.request_frame_size: size prefix, sized header, sized
  body), equal to the encoded frame's (tests/replay/test_sizes_only.py compares every row of the
  sample and of generated logs), and ``sha256`` is null. The column stays, so both options write
  the same columns in the same order (a reader or a join that names sha256 keeps working, and
  two runs compare column for column); its schema is ``SIZES_SCHEMA``, REQUEST_SCHEMA with
  sha256 nullable: each option always writes its one schema (``request_schema``). Frames cannot
  be kept: there are none (expand_* refuse with_frames).
- Row making is on the hot path of both engines: benchmarks/rows_bench.py holds it to at least
  the speed of the per-send encoder it replaced (results/rows_bench.json). Per group, not per
  column or row: ``expand_columns`` keeps each group's shared values as one tuple per row
  (``_shared_values``, _row_base's values without the dict) and makes each column when a chunk
  is yielded (list(map(itemgetter(i), rows)), in C: 11.4 ms per 65,536-row chunk against 19.7 ms
  for zip(*rows), CPU time A/B in one process, load ~8; yet cachegrind counts more
  instructions for it: over the 100k-record replay's 4 chunks map/itemgetter +~0.4 G, zip and
  the collections its 65,536 iterators triggered -~0.2 G: the passes are cheap in cache), hashes a group of several rows in one call (FrameEncoder.sha256s; a one-row group,
  most of them, is hashed by frames.frame_sha256 without an encoder, unless frames are kept),
  and ``_group`` makes a one-send group's broker and epoch tuples without a list. The
  per-broker columns are required in ``names`` (a ValueError names the missing ones). tests/replay/test_rows_columns.py
  compares them with expand_rows (any column subset and order, sized and encoded groups).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from typing import Any

import attrs
import pyarrow as pa

from ctrlbatch.batch.events import UpdateType
from ctrlbatch.requests import request_frame_size

from ..image.causes import OTHER, delta_cause
from ..propagate.propagator import Send
from .frames import FrameEncoder, frame_sha256, frame_size

__all__ = [
    "API_NAMES", "NO_FRAMES", "REQUEST_SCHEMA", "SHARED_HASH_BYTES", "SIZES_SCHEMA", "UPDATE_TYPE_NAMES", "SendGroup", "expand_columns",
    "expand_rows", "frame_of", "partition_count", "request_row", "request_schema", "send_groups", "update_type_of",
]

ROWS_PER_CHUNK = 65_536  # rows per column chunk (one Arrow table written)
SHARED_HASH_BYTES = 1 << 20  # a group's frames hashed half by expand_columns' helper from this many bytes

REQUEST_SCHEMA = pa.schema(
    [
        pa.field("timestamp", pa.int64(), nullable=False),
        pa.field("broker", pa.int32(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("api_key", pa.int16(), nullable=False),
        pa.field("api", pa.string(), nullable=False),
        pa.field("api_version", pa.int16(), nullable=False),
        pa.field("controller_id", pa.int32(), nullable=False),
        pa.field("controller_epoch", pa.int32(), nullable=False),
        pa.field("update_type", pa.string(), nullable=True),
        pa.field("partitions", pa.int32(), nullable=False),
        pa.field("bytes", pa.int64(), nullable=False),
        pa.field("sha256", pa.string(), nullable=False),
        pa.field("frame", pa.binary(), nullable=True),
        pa.field("delta_first_offset", pa.int64(), nullable=False),
        pa.field("delta_last_offset", pa.int64(), nullable=False),
        pa.field("cause", pa.string(), nullable=False),
    ]
)

SIZES_SCHEMA = REQUEST_SCHEMA.set(
    REQUEST_SCHEMA.get_field_index("sha256"), pa.field("sha256", pa.string(), nullable=True)
)
NO_FRAMES = "--with-frames: there are no frames to keep with --digest none (requests are sized, not encoded)"


def request_schema(digest: str) -> pa.Schema:
    """The requests/ schema of a replay with this digest ("sha256" or "none"; module rules)."""
    if digest == "sha256":
        return REQUEST_SCHEMA
    if digest == "none":
        return SIZES_SCHEMA
    raise ValueError(f"digest: expected sha256 or none, got {digest!r}")


API_NAMES = {4: "LeaderAndIsr", 5: "StopReplica", 6: "UpdateMetadata"}
UPDATE_TYPE_NAMES = {t.value: t.name for t in UpdateType}  # 0 UNKNOWN, 1 INCREMENTAL, 2 FULL
# The first version whose body has the Type field (LeaderAndIsr v5+, UpdateMetadata v8+).
_TYPE_SINCE = {4: 5, 6: 8}
_PARTITIONS: dict[int, Callable[[Any], int]] = {
    4: lambda b: len(b.partition_states),
    6: lambda b: len(b.partition_states),
    5: lambda b: sum(len(states) for _topic, states in b.topic_states),
}


def partition_count(send: Send) -> int:
    """The number of partition states the request carries."""
    return _PARTITIONS[send.request.api_key](send.request.builder)


def update_type_of(send: Send) -> int | None:
    r = send.request
    since = _TYPE_SINCE.get(r.api_key)
    if since is None or r.version < since:
        return None
    builder: Any = r.builder
    return int(builder.update_type)


def frame_of(send: Send, seq: int) -> bytes:
    return send.request.encode(correlation_id=seq, client_id=str(send.request.builder.controller_id))


@attrs.frozen(slots=True, repr=False)
class SendGroup:
    """One request body delivered to one or more brokers, in send order, with the columns every
    broker's row of it shares. ``size`` is the bytes of each frame, ``epoch_offset`` the broker
    epoch's place in ``data`` (None: the body has none). ``data`` is None when the body was
    sized, not encoded (sizes only: no sha256, no frame)."""

    delta: int
    timestamp: int
    api_key: int
    api_version: int
    controller_id: int
    controller_epoch: int
    update_type: int | None
    partitions: int
    size: int
    data: bytes | None
    epoch_offset: int | None
    brokers: tuple[int, ...]
    broker_epochs: tuple[int, ...]
    first_offset: int = -1  # the delta's first offset (delta is its last)
    cause: str = OTHER  # the delta's cause (image/causes.py)

    def __repr__(self) -> str:
        return f"SendGroup(api {self.api_key} v{self.api_version}, delta {self.delta}, {len(self.brokers)} brokers)"

    def frames(self) -> FrameEncoder:
        if self.data is None:
            raise ValueError(f"{self!r}: sized, not encoded (sizes only): it has no frames")
        return FrameEncoder(self.api_key, self.api_version, str(self.controller_id), self.data, self.epoch_offset)


def _group(delta: Any, sends: list[Send], first_offset: int, cause: str) -> SendGroup:
    req = sends[0].request
    builder: Any = req.builder
    api_key, version, controller_id = builder.api_key, builder.version, builder.controller_id
    since = _TYPE_SINCE.get(api_key)
    shared = req.shared
    client_id = str(controller_id)
    if shared.sized is not None:
        size, data = request_frame_size(api_key, version, client_id, shared.sized), None
    else:
        size, data = frame_size(api_key, version, client_id, len(shared.data)), bytes(shared.data)
    return SendGroup(
        delta.last_offset, delta.timestamp, api_key, version, controller_id, builder.controller_epoch,
        None if since is None or version < since else int(builder.update_type), _PARTITIONS[api_key](builder),
        size, data, shared.epoch_offset,
        *((sends[0].broker,), (req.broker_epoch,)) if len(sends) == 1 else  # most groups: no list made
        (tuple([s.broker for s in sends]), tuple([s.request.broker_epoch for s in sends])), first_offset, cause,
    )


def send_groups(
    delta: Any, sends: Iterable[Send], first_offset: int | None = None, cause: str | None = None,
) -> Iterator[SendGroup]:
    """The delivered sends of a delta (a Delta: last_offset, timestamp, records) as groups, in send
    order: consecutive sends of one shared body and builder become one group; dropped sends are
    left out. first_offset: the delta's first offset (None: its last); cause: the delta's cause
    (None: read from its records, once, when it delivers anything)."""
    first = delta.last_offset if first_offset is None else first_offset
    group: list[Send] = []
    for send in sends:
        if send.dropped:
            continue
        if group and (send.request.shared is not group[0].request.shared
                      or send.request.builder is not group[0].request.builder):
            if cause is None:
                cause = delta_cause(getattr(delta, "records", ()))
            yield _group(delta, group, first, cause)
            group = []
        group.append(send)
    if group:
        if cause is None:
            cause = delta_cause(getattr(delta, "records", ()))
        yield _group(delta, group, first, cause)


_EXPANDED = ("broker", "seq", "sha256", "frame")


def _row_base(group: SendGroup) -> dict[str, Any]:
    """A row of group in REQUEST_SCHEMA's column order, without its _EXPANDED (per broker) values."""
    return {
        "timestamp": group.timestamp, "broker": None, "seq": None, "api_key": group.api_key,
        "api": API_NAMES[group.api_key], "api_version": group.api_version, "controller_id": group.controller_id,
        "controller_epoch": group.controller_epoch,
        "update_type": None if group.update_type is None else UPDATE_TYPE_NAMES.get(group.update_type, "UNKNOWN"),
        "partitions": group.partitions, "bytes": group.size, "sha256": None, "frame": None,
        "delta_first_offset": group.first_offset, "delta_last_offset": group.delta, "cause": group.cause,
    }


def _shared_values(group: SendGroup) -> tuple[Any, ...]:
    """_row_base(group)'s values of the _SHARED columns, in that order, without the dict (tests
    compare the two on every group of the real sample and generated logs)."""
    return (
        group.timestamp, group.api_key, API_NAMES[group.api_key], group.api_version, group.controller_id,
        group.controller_epoch,
        None if group.update_type is None else UPDATE_TYPE_NAMES.get(group.update_type, "UNKNOWN"),
        group.partitions, group.size, group.first_offset, group.delta, group.cause,
    )


_SHARED = tuple(n for n in REQUEST_SCHEMA.names if n not in _EXPANDED)


def expand_columns(
    groups: Iterable[SendGroup], next_seq: dict[int, int], with_frames: bool, names: Iterable[str] = REQUEST_SCHEMA.names,
    helper: Executor | None = None,
) -> Iterator[dict[str, list[Any]]]:
    """The rows of the groups (one per broker, numbered from next_seq, which is updated) as
    column lists in the order of ``names``, in chunks of about ``ROWS_PER_CHUNK`` rows; with
    ``helper`` (a one-thread executor), a group of at least ``SHARED_HASH_BYTES`` of frames is
    hashed half by it (module rules)."""
    names = list(names)
    unknown = [n for n in names if n not in REQUEST_SCHEMA.names]
    if unknown:
        raise ValueError(f"names: not columns of REQUEST_SCHEMA: {unknown}")
    missing = [n for n in _EXPANDED if n not in names]
    if missing:
        raise ValueError(f"names: the per-broker columns {missing} are required")
    shared = [n for n in names if n not in _EXPANDED]
    # Each group's shared values are kept as one tuple per row and turned into columns when a
    # chunk is yielded (one C pass per column): not one append per column per group (module rules).
    getters = [operator.itemgetter(_SHARED.index(n)) for n in shared]
    rows: list[tuple[Any, ...]] = []

    def chunk() -> dict[str, list[Any]]:
        for name, get in zip(shared, getters, strict=True):
            columns[name] = list(map(get, rows))
        rows.clear()
        return columns

    columns: dict[str, list[Any]] = {n: [] for n in names}
    brokers, seqs, hashes, kept = columns["broker"], columns["seq"], columns["sha256"], columns["frame"]
    client_ids: dict[int, str] = {}
    for group in groups:
        in_group = group.brokers
        n = len(in_group)
        values = _shared_values(group)
        if n == 1:  # most groups (every LeaderAndIsr body is one broker's)
            rows.append(values)
        else:
            rows.extend([values] * n)
        data = group.data
        if data is None:  # sized only: no digest, no frame
            if with_frames:
                raise ValueError(NO_FRAMES)
            for broker in in_group:
                seq = next_seq.get(broker, 0)
                next_seq[broker] = seq + 1
                brokers.append(broker)
                seqs.append(seq)
            hashes.extend([None] * n)
            kept.extend([None] * n)
        elif n == 1 and not with_frames:  # most groups: one hash, no FrameEncoder (frames.frame_sha256)
            broker = in_group[0]
            seq = next_seq.get(broker, 0)
            next_seq[broker] = seq + 1
            brokers.append(broker)
            seqs.append(seq)
            cid = group.controller_id
            client_id = client_ids.get(cid)
            if client_id is None:
                client_id = client_ids[cid] = str(cid)
            hashes.append(frame_sha256(
                group.api_key, group.api_version, client_id, data, group.epoch_offset, seq, group.broker_epochs[0],
            ))
            kept.append(None)
        else:
            frames = group.frames()
            numbered: list[int] = []
            for broker in in_group:
                seq = next_seq.get(broker, 0)
                next_seq[broker] = seq + 1
                numbered.append(seq)
            brokers.extend(in_group)
            seqs.extend(numbered)
            if helper is not None and n > 1 and frames.size * n >= SHARED_HASH_BYTES:
                hashes.extend(frames.sha256s_shared(numbered, group.broker_epochs, helper))
            else:
                hashes.extend(frames.sha256s(numbered, group.broker_epochs))  # one call per group (frames.py)
            if with_frames:
                kept.extend([frames.frame(seq, e) for seq, e in zip(numbered, group.broker_epochs, strict=True)])
            else:
                kept.extend([None] * n)
        if len(brokers) >= ROWS_PER_CHUNK:
            yield chunk()
            columns = {n: [] for n in names}
            brokers, seqs, hashes, kept = columns["broker"], columns["seq"], columns["sha256"], columns["frame"]
    if brokers:
        yield chunk()


def expand_rows(groups: Iterable[SendGroup], next_seq: dict[int, int], with_frames: bool) -> Iterator[dict[str, Any]]:
    """The same rows as dicts, one at a time, in REQUEST_SCHEMA's column order (the sequential engine's rows)."""
    for group in groups:
        base = _row_base(group)
        frames = None if group.data is None else group.frames()
        if frames is None and with_frames:
            raise ValueError(NO_FRAMES)
        last = len(group.brokers) - 1
        for i, (broker, epoch) in enumerate(zip(group.brokers, group.broker_epochs, strict=True)):
            seq = next_seq.get(broker, 0)
            next_seq[broker] = seq + 1
            row = base if i == last else base.copy()  # the last row of a group takes the base itself
            if frames is None:
                row["broker"], row["seq"], row["sha256"], row["frame"] = broker, seq, None, None
            else:
                row["broker"], row["seq"], row["sha256"] = broker, seq, frames.sha256(seq, epoch)
                row["frame"] = frames.frame(seq, epoch) if with_frames else None
            yield row


def request_row(delta: Any, send: Send, seq: int, with_frames: bool = False) -> dict[str, Any]:
    """The row of one delivered request; ``delta`` has last_offset and timestamp (a Delta)."""
    if send.dropped:
        raise ValueError(f"send: a dropped request has no row ({send!r}); count it instead")
    return next(expand_rows(send_groups(delta, [send]), {send.broker: seq}, with_frames))
