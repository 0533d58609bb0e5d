"""The Spark engine: the same rows as ``replay_local``, computed by Spark executors.

Rules of this module (pyspark-notes.md Part A §2; the design):
- The history is cut into *units*: byte ranges of the segments that end right after a batch
  closing a delta (no transaction open, no ``--coalesce`` group pending). A unit carries the
  image before its first delta (shipped as plain tuples), the last LeaderChange batch before it
  (so its delta grouping sees the same KRaft leader) and the offset it must start at (the dense
  offset check spans units), so each unit replays on its own, in parallel.
- One planning task reads the history once (``History.batches()``: the same checks as the
  sequential reader), grouping deltas and folding the image with ``apply_delta`` only (no
  requests): the sequential part (164 s of a 1,555 s Spark run on the 10M-record benchmark
  log, 11% of it). Spark routes unit i to partition i. Nothing of the log reaches
  the driver. Its time is reported as the "plan" phase (``Unit.planned_after``).
- A unit task reads only its byte range (``read_segment(start=, stop=)``), runs the batch
  engine per delta (``propagate_delta``), and keeps each request once: an UpdateMetadata body
  shared by N brokers is one *send group* with its broker list, expanded per broker only when
  the rows are written.
- ``seq`` is per broker over the whole replay: each unit reports its per-broker counts (tiny),
  the driver turns them into per-unit starting points (prefix sums), and the write tasks number
  the rows and hash each frame (correlation id = seq, client id = controller id).
- Rows are written by the write tasks with pyarrow straight into ``requests/part-NNNNN.parquet``,
  one file per unit, in unit order, so the files read back in send order.
- Text inputs (JSON lines, kafka-dump-log output) have no byte ranges: they form one unit.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import struct
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from ctrlbatch.common import CommandError
from ctrlbatch.requests import request_head

from .deltas import Delta, group_deltas
from .errors import BatchTrail, ReadStats
from .image import EMPTY_IMAGE, MetadataImage, MetadataReplayError, apply_delta
from .records import LEADER_CHANGE, LogBatch
from .sources import History, open_history

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

__all__ = ["HistorySource", "SparkReplay", "replay_spark", "unit_bytes_for"]

ROWS_PER_CHUNK = 65_536  # rows per Arrow table written
_BROKER_EPOCH = struct.Struct(">q")  # the brokerEpoch field inside a shared body (batch/builders.py)
UNITS_PER_CORE = 8  # several units per core even out units of uneven cost
MIN_UNIT_BYTES = 256 << 10
MAX_UNIT_BYTES = 8 << 20  # bounds a unit's output (about 7x its input) on huge logs
MAX_UNITS = 64  # tasks cost ~10-50 ms each and a unit carries an image: a few dozen are plenty
_TEXT_KINDS = ("jsonl", "dump")
Position = tuple[int, int]  # (segment index, byte position in that segment)


@attrs.frozen(slots=True)
class HistorySource:
    """How an executor reopens the history (a picklable recipe, not the data)."""

    path: str
    from_snapshot: str | None = None
    skip_corrupt: bool = False

    def open(self) -> History:
        snap: Any = self.from_snapshot
        return open_history(self.path, from_snapshot=snap, skip_corrupt=self.skip_corrupt)


@attrs.frozen(slots=True, repr=False)
class Unit:
    """A run of consecutive deltas that replays on its own: where it starts and stops in the
    segments, the image before it, and the last LeaderChange control batch before it."""

    index: int
    start: Position | None  # None: from the beginning of the log
    stop: Position | None  # None: to the end of the log
    image: MetadataImage
    leader_batch: LogBatch | None
    with_snapshot: bool  # unit 0 of a history with a snapshot: it rebuilds the image and takes the image path
    expected_offset: int = -1  # the first offset this unit must start with (-1: unit 0)
    planned_after: float = 0.0  # seconds the planning task had run when it cut this unit (the last: all of it)

    def __repr__(self) -> str:
        return f"Unit({self.index}, {self.start} .. {self.stop}, image offset {self.image.offset})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Ship the image as plain tuples: pickling 10^5 attrs objects costs seconds, tuples do not."""
        return (_unit, (self.index, self.start, self.stop, pack_image(self.image), self.leader_batch,
                        self.with_snapshot, self.expected_offset, self.planned_after))


def _unit(index: int, start: Position | None, stop: Position | None, image: tuple[Any, ...],
          leader_batch: LogBatch | None, with_snapshot: bool, expected_offset: int, planned_after: float) -> Unit:
    return Unit(index, start, stop, unpack_image(image), leader_batch, with_snapshot, expected_offset, planned_after)


def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in attrs.fields(cls))


def pack_image(image: MetadataImage) -> tuple[Any, ...]:
    """The image as nested tuples of plain values (every attrs field, so nothing is lost)."""
    from .image import PartitionRegistration, TopicImage

    part_fields = _field_names(PartitionRegistration)
    topic_fields = [n for n in _field_names(TopicImage) if n not in ("id", "partitions")]
    topics = tuple(
        (tid, tuple(getattr(t, n) for n in topic_fields),
         tuple((p, tuple(getattr(reg, n) for n in part_fields)) for p, reg in t.partitions.items()))
        for tid, t in image.topics.items()
    )
    rest = {n: getattr(image, n) for n in _field_names(MetadataImage) if n != "topics"}
    return (part_fields, tuple(topic_fields), topics, rest)


def unpack_image(packed: tuple[Any, ...]) -> MetadataImage:
    from .image import PartitionRegistration, TopicImage

    part_fields, topic_fields, topics, rest = packed
    if part_fields != _field_names(PartitionRegistration):
        raise RuntimeError("the executors run another version of ctrlbatch than the driver (PartitionRegistration)")
    rebuilt = {
        tid: TopicImage(id=tid, partitions={p: PartitionRegistration(*values) for p, values in parts},
                        **dict(zip(topic_fields, fields, strict=True)))
        for tid, fields, parts in topics
    }
    return MetadataImage(topics=rebuilt, **rest)


@attrs.frozen(slots=True)
class SendGroup:
    """One request body delivered to one or more brokers (the UpdateMetadata fan-out stays one)."""

    row: dict[str, Any]  # the row's broker-independent columns
    api_key: int
    api_version: int
    data: bytes
    epoch_offset: int | None
    brokers: tuple[int, ...]
    broker_epochs: tuple[int, ...]


@attrs.frozen(slots=True, repr=False)
class SparkReplay:
    """What the driver gets back: the per-unit summaries merged, and rows written."""

    summary: Any
    stats: ReadStats
    rows: int
    units: int
    seconds: dict[str, float]  # wall time of each phase: plan, replay, write

    def __repr__(self) -> str:
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in self.seconds.items())
        return f"SparkReplay({self.rows:,} rows, {self.units} units; {phases})"


# ---------------------------------------------------------------- reading a unit's batches


def _segment_batches(
    history: History, start: Position | None, stop: Position | None, stats: ReadStats, expected_offset: int = -1
) -> Iterator[LogBatch]:
    """The log batches of history in [start, stop), read, checked, trimmed and counted exactly
    as History.batches() does for the whole log; ``expected_offset`` is where the batch before
    the range ended (+1), so the dense-offset check also holds across unit boundaries."""
    from .segments import count_batch, read_segment
    from .sources import OffsetCheck, trim_batch

    segments = history.segments
    first = start[0] if start else 0
    last = stop[0] if stop else len(segments) - 1
    begin_offset = history.start_offset
    seen = ReadStats(corrupt=stats.corrupt, unprinted=stats.unprinted)  # what is read; stats: what is yielded
    dense = OffsetCheck(stats, history.skip_corrupt)
    dense.expected = expected_offset
    for i in range(first, last + 1):
        pos = start[1] if start and i == start[0] else 0
        end = stop[1] if stop and i == stop[0] else None
        if end is not None and end <= pos:
            continue
        for batch in read_segment(segments[i], skip_corrupt=history.skip_corrupt, stats=seen, start=pos, stop=end):
            dense.see(batch)
            trimmed = trim_batch(batch, begin_offset)
            if trimmed is None:
                continue
            count_batch(stats, trimmed)
            yield trimmed


def _is_leader_change(batch: LogBatch) -> bool:
    return batch.control and any(c.type == LEADER_CHANGE for c in batch.control_records)


# ---------------------------------------------------------------- planning (one task)


def _snapshot_image(history: History, counted: Any = None) -> tuple[MetadataImage, Delta | None]:
    """The image the snapshot holds and its pseudo-delta (as replay_local builds them), or the
    empty image and None without a snapshot."""
    from .local_engine import snapshot_image

    snapshot = history.snapshot
    if snapshot is None:
        return EMPTY_IMAGE, None
    batches = history.snapshot_batches()
    image, timestamp, _ = snapshot_image(
        batches if counted is None else counted(batches), end_offset=snapshot.end_offset, epoch=snapshot.epoch
    )
    return image, Delta(image.offset, timestamp, image.epoch, (), None, 0)


class _Tracker:
    """Feeds batches to group_deltas, remembering the last one, the last LeaderChange and where
    the recent ones are (to name the place of a record the replay refuses)."""

    def __init__(self, batches: Iterable[LogBatch], trail: BatchTrail) -> None:
        self._batches = iter(batches)
        self.trail = trail
        self.current: LogBatch | None = None
        self.last_leader: LogBatch | None = None

    def __iter__(self) -> Iterator[LogBatch]:
        for batch in self._batches:
            self.current = batch
            self.trail.see(batch)
            if _is_leader_change(batch):
                self.last_leader = batch
            yield batch


_PREFIX = struct.Struct(">qi")  # baseOffset, batchLength: a batch is batchLength + 12 bytes


def _end_of(batch: LogBatch, segment: int, sizes: list[int]) -> Position:
    """The position right after ``batch`` (the next segment's start when it ends its file), so
    the next unit also reads whatever lies between two good batches (a corrupt one, skipped)."""
    with open(batch.source, "rb") as f:
        f.seek(batch.position)
        _base, length = _PREFIX.unpack(f.read(_PREFIX.size))
    end = batch.position + length + _PREFIX.size
    return (segment + 1, 0) if end >= sizes[segment] and segment + 1 < len(sizes) else (segment, end)


def plan_units(source: HistorySource, coalesce: int, unit_bytes: int, max_units: int) -> Iterator[tuple[int, Unit]]:
    """Walk the history once (apply only) and cut it into at most ``max_units`` units of about
    ``unit_bytes`` input bytes each, right after a batch that ends a delta (no transaction open,
    no --coalesce group pending)."""
    began = time.monotonic()
    history = source.open()
    with_snapshot = history.snapshot is not None
    if history.kind in _TEXT_KINDS or not history.segments:
        yield 0, Unit(0, None, None, EMPTY_IMAGE, None, with_snapshot)
        return
    image, _ = _snapshot_image(history)
    sizes = [os.path.getsize(s) for s in history.segments]
    before = [sum(sizes[:i]) for i in range(len(sizes))]
    index = {s: i for i, s in enumerate(history.segments)}
    tracker = _Tracker(history.batches(), BatchTrail("byte"))
    start: Position | None = None
    start_image, start_leader, start_expected = image, None, -1
    count = 0
    next_cut = unit_bytes
    try:
        for delta in group_deltas(tracker, coalesce):
            image = _advance(image, delta)
            batch = tracker.current
            assert batch is not None
            segment = index[batch.source]
            done = before[segment] + batch.position
            if delta.last_offset == batch.last_offset and done >= next_cut and count + 1 < max_units:
                stop = _end_of(batch, segment, sizes)
                yield count, Unit(count, start, stop, start_image, start_leader, with_snapshot and count == 0,
                                  start_expected, time.monotonic() - began)
                count += 1
                start, start_image, start_leader, start_expected = stop, image, tracker.last_leader, batch.last_offset + 1
                next_cut = done + unit_bytes
    except MetadataReplayError as e:
        raise e.with_source(tracker.trail.where(e.offset) or str(history.source)) from None
    yield count, Unit(count, start, None, start_image, start_leader, with_snapshot and count == 0, start_expected,
                      time.monotonic() - began)


def _advance(image: MetadataImage, delta: Delta) -> MetadataImage:
    """The image after delta, exactly as propagate_delta leaves it (without building requests)."""
    return apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)[0]


# ---------------------------------------------------------------- running a unit


def _template_row(delta: Any, send: Any) -> dict[str, Any]:
    """The columns every broker's copy of this request shares (rows.request_row without the
    broker, seq and hash, which the write stage fills in)."""
    from .rows import partition_count, update_type_of

    req = send.request
    builder = req.builder
    controller_id = builder.controller_id
    head = request_head(req.api_key, req.version, 0, str(controller_id), len(req.shared.data))
    return {
        "delta": delta.last_offset,
        "timestamp": delta.timestamp,
        "api_key": req.api_key,
        "api_version": req.version,
        "controller_id": controller_id,
        "controller_epoch": builder.controller_epoch,
        "update_type": update_type_of(send),
        "partitions": partition_count(send),
        "bytes": len(head) + len(req.shared.data),
        "dropped": False,
    }


def _groups_of(delta: Any, sends: list[Any]) -> Iterator[SendGroup]:
    """Delivered sends as groups: consecutive sends of one shared body become one group."""
    group: list[Any] = []

    def flush() -> SendGroup:
        req = group[0].request
        return SendGroup(
            _template_row(delta, group[0]), req.api_key, req.version, bytes(req.shared.data),
            req.shared.epoch_offset, tuple(s.broker for s in group), tuple(s.request.broker_epoch for s in group),
        )

    for send in sends:
        if send.dropped:
            continue
        if group and (send.request.shared is not group[0].request.shared
                      or send.request.builder is not group[0].request.builder):
            yield flush()
            group = []
        group.append(send)
    if group:
        yield flush()


def run_unit(source: HistorySource, options: Any, coalesce: int, unit: Unit) -> Iterator[Any]:
    """Replay one unit: its SendGroups in send order, then ``(index, counts, summary, stats, planned_after)``."""
    from .propagator import propagate_delta, propagate_image
    from .summary import ReplaySummary

    history = source.open()
    summary = ReplaySummary()
    stats = ReadStats()
    counts: Counter[int] = Counter()
    trail = BatchTrail("line" if history.kind in _TEXT_KINDS else "byte")

    def counted(batches: Iterable[LogBatch]) -> Iterator[LogBatch]:
        for b in batches:
            trail.see(b)
            summary.count_batch(b)
            yield b

    def emit(delta: Delta, sends: list[Any]) -> Iterator[SendGroup]:
        delivered = 0
        for send in sends:
            if send.dropped:
                summary.count_dropped(send.request.api_key)
        for group in _groups_of(delta, sends):
            row = dict(group.row)
            for broker in group.brokers:
                row["broker"] = broker
                summary.count_row(row)
            delivered += len(group.brokers)
            counts.update(group.brokers)
            yield group
        summary.count_delta(delivered)

    image = unit.image
    if unit.with_snapshot:
        image, start = _snapshot_image(history, counted)
        assert start is not None
        yield from emit(start, propagate_image(image, options))
    if history.kind in _TEXT_KINDS or not history.segments:
        batches: Iterable[LogBatch] = history.batches()
    else:
        batches = _segment_batches(history, unit.start, unit.stop, stats, unit.expected_offset)
    batches = counted(batches)
    if unit.leader_batch is not None:
        batches = _prepend(unit.leader_batch, batches)
    try:
        for delta in group_deltas(batches, coalesce):
            image, sends = propagate_delta(image, delta, options)
            yield from emit(delta, sends)
    except MetadataReplayError as e:
        raise e.with_source(trail.where(e.offset) or str(history.source)) from None
    history.stats.merge(stats)
    yield (unit.index, dict(counts), summary, history.stats, unit.planned_after)


def _last(items: Iterable[Any]) -> list[Any]:
    return list(deque(items, maxlen=1))


def _prepend(first: LogBatch, rest: Iterable[LogBatch]) -> Iterator[LogBatch]:
    yield first
    yield from rest


# ---------------------------------------------------------------- writing a unit's rows


_CORRELATION = struct.Struct(">i")
_CORRELATION_AT = 8  # size int32, api key int16, api version int16, then the correlation id (all header versions)


class _Frames:
    """Hashes the frames of one group: the head is encoded once and only the correlation id
    (seq) and the broker epoch change per broker; the hash of the bytes before them is shared."""

    def __init__(self, group: SendGroup) -> None:
        head = request_head(group.api_key, group.api_version, 0, str(group.row["controller_id"]), len(group.data))
        self.head = head
        self.prefix = hashlib.sha256(head[:_CORRELATION_AT])
        self.tail = head[_CORRELATION_AT + _CORRELATION.size :]
        data = memoryview(group.data)
        off = group.epoch_offset
        self.parts = (data,) if off is None else (data[:off], data[off + _BROKER_EPOCH.size :])

    def sha256(self, seq: int, broker_epoch: int) -> str:
        h = self.prefix.copy()
        h.update(_CORRELATION.pack(seq))
        h.update(self.tail)
        parts = self.parts
        h.update(parts[0])
        if len(parts) == 2:
            h.update(_BROKER_EPOCH.pack(broker_epoch))
            h.update(parts[1])
        return h.hexdigest()

    def frame(self, seq: int, broker_epoch: int) -> bytes:
        parts = self.parts
        epoch = (_BROKER_EPOCH.pack(broker_epoch), parts[1]) if len(parts) == 2 else ()
        return b"".join((self.head[:_CORRELATION_AT], _CORRELATION.pack(seq), self.tail, parts[0], *epoch))


def expand_columns(
    groups: Iterable[SendGroup], first_seq: dict[int, int], with_frames: bool, names: Iterable[str]
) -> Iterator[dict[str, list[Any]]]:
    """The rows of the groups (one per broker, numbered from first_seq, which is updated) as
    column lists, in chunks of about ``ROWS_PER_CHUNK`` rows."""
    names = list(names)
    columns: dict[str, list[Any]] = {n: [] for n in names}
    shared = [n for n in names if n not in ("broker", "seq", "sha256", "frame")]
    brokers, seqs, hashes, frames = columns["broker"], columns["seq"], columns["sha256"], columns["frame"]
    for group in groups:
        frames_of = _Frames(group)
        n = len(group.brokers)
        for name in shared:
            columns[name].extend([group.row[name]] * n)
        for broker, epoch in zip(group.brokers, group.broker_epochs, strict=True):
            seq = first_seq.get(broker, 0)
            first_seq[broker] = seq + 1
            brokers.append(broker)
            seqs.append(seq)
            hashes.append(frames_of.sha256(seq, epoch))
            frames.append(frames_of.frame(seq, epoch) if with_frames else None)
        if len(brokers) >= ROWS_PER_CHUNK:
            yield columns
            columns = {n: [] for n in names}
            brokers, seqs, hashes, frames = columns["broker"], columns["seq"], columns["sha256"], columns["frame"]
    if brokers:
        yield columns


def expand_rows(groups: Iterable[SendGroup], first_seq: dict[int, int], with_frames: bool) -> Iterator[dict[str, Any]]:
    """The same rows as dicts (for tests and small outputs)."""
    from .rows import REQUEST_SCHEMA

    for columns in expand_columns(groups, first_seq, with_frames, REQUEST_SCHEMA.names):
        names = list(columns)
        for values in zip(*columns.values(), strict=True):
            yield dict(zip(names, values, strict=True))


def write_unit(index: int, groups: Iterable[Any], first_seq: dict[int, int], directory: str, with_frames: bool) -> int:
    """Write one unit's rows to ``directory/part-<index>.parquet``; returns the row count."""
    from .output import ParquetRows
    from .rows import REQUEST_SCHEMA

    writer = ParquetRows(Path(directory), REQUEST_SCHEMA, name=f"part-{index:05d}.parquet")
    sends = (g for g in groups if isinstance(g, SendGroup))
    for columns in expand_columns(sends, dict(first_seq), with_frames, REQUEST_SCHEMA.names):
        writer.write_columns(columns)
    writer.close()
    return writer.count


# ---------------------------------------------------------------- the driver


# The last line of a Python traceback that Spark relays: "package.module.ErrorClass: message".
_PERSON_ERROR = re.compile(r"^(?:[\w.]+\.)?(ReplayInputError|MetadataReplayError|CommandError): (.+)$", re.M)


@contextlib.contextmanager
def _executor_errors() -> Iterator[None]:
    """Turn an executor's input error (relayed by Spark inside a long Java/Python trace) back
    into a CommandError with the reader's own message: file, byte offset or line, reason."""
    try:
        yield
    except CommandError:
        raise
    except Exception as e:
        found = _PERSON_ERROR.findall(str(e))
        if not found:
            raise
        raise CommandError(found[-1][1].strip()) from None


def _total_bytes(history: History) -> int:
    return sum(os.path.getsize(s) for s in history.segments)


def unit_bytes_for(history: History, cores: int) -> int:
    """Input bytes per unit: about UNITS_PER_CORE units per core, within [MIN, MAX]_UNIT_BYTES,
    but never so small that MAX_UNITS units leave a remainder for the last one (on 552 MB,
    8 MiB units made the 64th unit 24 MB: one core worked alone at the end)."""
    total = _total_bytes(history)
    wanted = max(MIN_UNIT_BYTES, min(MAX_UNIT_BYTES, total // max(1, cores * UNITS_PER_CORE)))
    return max(wanted, -(-total // MAX_UNITS))


def replay_spark(
    spark: SparkSession,
    source: HistorySource,
    options: Any,
    *,
    coalesce: int = 1,
    requests_dir: str | os.PathLike[str] | None = None,
    with_frames: bool = False,
    unit_bytes: int | None = None,
) -> SparkReplay:
    """Replay ``source`` on ``spark``; rows go to ``requests_dir`` (Parquet) when given.

    Returns the merged summary and read counters; the log itself never reaches the driver."""
    from pyspark import StorageLevel

    if not isinstance(source, HistorySource):
        raise TypeError(f"source: expected a HistorySource, got {type(source).__name__}")
    if not isinstance(coalesce, int) or coalesce < 1:
        raise ValueError(f"coalesce: expected an integer >= 1, got {coalesce!r}")
    if unit_bytes is not None and (not isinstance(unit_bytes, int) or unit_bytes < 1):
        raise ValueError(f"unit_bytes: expected a positive integer or None, got {unit_bytes!r}")
    sc: SparkContext = spark.sparkContext
    history = source.open()  # fail early, on the driver, with the reader's error for a bad path
    if unit_bytes is None:
        unit_bytes = unit_bytes_for(history, sc.defaultParallelism)
    seconds: dict[str, float] = {}
    clock = time.monotonic()
    count = min(MAX_UNITS, _total_bytes(history) // unit_bytes + 1)
    plans = sc.parallelize([0], 1).flatMap(lambda _: plan_units(source, coalesce, unit_bytes, count))
    routed = plans.partitionBy(count, lambda k: k).values()
    groups = routed.flatMap(lambda unit: run_unit(source, options, coalesce, unit)).persist(StorageLevel.DISK_ONLY)
    with _executor_errors():
        trailers = groups.mapPartitions(_last).collect()  # groups are small: the fan-out is not expanded yet
    replayed, clock = time.monotonic() - clock, time.monotonic()
    trailers.sort(key=lambda t: t[0])
    first: dict[int, dict[int, int]] = {}  # unit index -> its first seq per broker
    running: Counter[int] = Counter()
    for index, counts, _summary, _stats, _planned in trailers:
        first[index] = dict(running)
        running.update(counts)
    from .summary import ReplaySummary

    summary = ReplaySummary()
    stats = ReadStats()
    seconds["plan"] = max(t[4] for t in trailers)  # the planning task's own clock (one task, sequential)
    seconds["replay"] = replayed - seconds["plan"]  # the units, in parallel (and the job's start-up)
    for _index, _counts, part, part_stats, _planned in trailers:
        summary.merge(part)
        stats.merge(part_stats)
    rows = 0
    if requests_dir is not None:
        directory = os.fspath(requests_dir)
        os.makedirs(directory, exist_ok=True)
        starts = sc.broadcast(first)
        with _executor_errors():
            written = groups.mapPartitionsWithIndex(
                lambda i, it: [write_unit(i, it, starts.value[i], directory, with_frames)] if i in starts.value else []
            ).collect()
        rows = sum(written)
    seconds["write"] = time.monotonic() - clock
    groups.unpersist()
    return SparkReplay(summary, stats, rows, len(trailers), seconds)

