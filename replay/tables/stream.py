"""Following a live ``__cluster_metadata-0``: the kraft_metadata stream's offsets and reads.

Rules of this module (kafka-metadata-log-format.md section 4: the header fields read here are
DefaultRecordBatch.java:44-100's; a new leader appends a LeaderChange at the start of its epoch,
KafkaRaftClient.java:636; pyspark-notes.md section 14: the stream reader's contract):
- An offset is ``{"offset": N, "crc": C, "epoch": E}``: N the next log offset to emit; C and E the
  CRC-32C and partitionLeaderEpoch of the batch that ends at N - 1 (-1: none, where the stream
  began). The stream starts at the oldest offset on disk (the first segment's base offset).
- ``latest_offset`` (on the driver) scans batch headers only, from where the last scan ended
  (``Follower`` keeps where the last few offsets it handed out begin, each checked against the
  file before it is trusted, so a trigger costs the new batches, not the segment), and stops at
  the last complete batch: a batch still being written (its header says more bytes than the
  file holds) is left for a later trigger. A segment ends where the next one (by base offset)
  begins; a new segment is picked up when the offsets run on into it.
- Before a range is planned, its start is found again on disk and checked, so no wrong row is
  ever emitted: an offset before the oldest segment is gone (deleted after a snapshot); a log
  that now ends before the start, no batch starting at it, or the batch before it with another
  CRC means the log changed under an offset already emitted (KAFKA-14704: the uncommitted tail
  is truncated when the KRaft leader changes). Each stops the stream with one line saying which
  offset, file and byte offset (``StreamError``).
- ``partitions(start, end)`` is a pure function of the two offsets and the files (Spark asks for
  the uncommitted range again after a restart): the range's batch headers cut into reads of
  about ``unitBytes`` (default STREAM_UNIT_BYTES), each from a batch start with the epoch and
  offset of the batch before it (so a backlog, such as a stream's first micro-batch over a
  retained log, is read in parallel). ``read_stream_part`` reads one on an executor through the
  one reading loop (``LogReader``: CRC, offset and epoch checks, seeded with the batch before
  it), up to the batch ending at its ``end - 1``, whose CRC it checks against the one planned.
- Streaming reads a directory's log only: fromSnapshot and file inputs are refused up front.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator
from typing import Any

import attrs
import pyarrow as pa

from ctrlbatch.common import CommandError

from ..log.errors import ReadStats, ReplayInputError
from ..log.reading import LogReader, ReadFrom
from ..log.records import LogBatch
from ..log.segments import HEADER, MAX_BATCH_BYTES, MIN_BATCH_LENGTH, PREFIX
from ..log.sources import METADATA_DIR
from .json_fused import JSON_FORM
from .options import OptionError, TableOptions
from .record_rows import record_batches

__all__ = ["Follower", "StreamError", "StreamPart", "check_stream_options", "read_stream_part"]

_SEGMENT = re.compile(r"^(\d{20})\.log$")
STREAM_UNIT_BYTES = 8 << 20  # bytes of batches per read of a micro-batch (unitBytes sets it)
_HEAD = struct.Struct(">qiibI")  # baseOffset, batchLength, partitionLeaderEpoch, magic, crc
_LAST_DELTA = struct.Struct(">i")  # lastOffsetDelta, at byte 23
KAFKA_14704 = "the uncommitted tail was truncated when the KRaft leader changed (KAFKA-14704)"


class StreamError(CommandError):
    """The log on disk no longer holds what the stream emitted or is about to read (module rules)."""


def check_stream_options(options: TableOptions) -> str:
    """The metadata directory the stream follows, or OptionError naming what cannot be streamed."""
    if options.from_snapshot is not None:
        raise OptionError("kraft_metadata option fromSnapshot: a stream follows the log only; read the snapshot "
                         "with spark.read instead")
    path = options.path
    if not os.path.isdir(path):
        raise OptionError(f"kraft_metadata stream: {path} is not a directory: a stream follows a {METADATA_DIR} "
                         "directory (or the data directory holding it)")
    inner = os.path.join(path, METADATA_DIR)
    return inner if os.path.basename(os.path.normpath(path)) != METADATA_DIR and os.path.isdir(inner) else path


@attrs.frozen(slots=True)
class Header:
    """A complete batch's header fields the stream needs."""

    path: str
    position: int
    length: int  # the whole batch, prefix included
    base_offset: int
    last_offset: int
    epoch: int
    crc: int


def _segments(directory: str) -> list[tuple[int, str]]:
    try:
        names = os.listdir(directory)
    except OSError as e:
        raise StreamError(f"{directory}: {e.strerror or type(e).__name__}") from None
    found = [(int(m.group(1)), n) for n in names if (m := _SEGMENT.match(n))]
    return [(base, os.path.join(directory, n)) for base, n in sorted(found)]


def _headers(path: str, position: int, last_segment: bool) -> Iterator[Header]:
    """The complete batches of a segment from ``position`` on, from their headers (no CRC check:
    the read checks it). A partial batch ends the active (last) segment; in an older one it is a
    truncated file: the reader's error."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, the generator may be left early
    except OSError as e:
        raise StreamError(f"{path}: {e.strerror or type(e).__name__}") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        while position < size:
            f.seek(position)
            head = f.read(HEADER)
            if len(head) < HEADER:
                if last_segment:
                    return
                raise ReplayInputError(path, position, f"truncated batch: {len(head)} bytes left, a batch header needs "
                                                       f"{HEADER}")
            base, length, epoch, _magic, crc = _HEAD.unpack_from(head)
            if not MIN_BATCH_LENGTH <= length <= MAX_BATCH_BYTES:
                raise ReplayInputError(path, position + 8, f"batch length {length} is impossible")
            total = length + PREFIX
            if position + total > size:
                if last_segment:
                    return  # being written: a later trigger takes it
                raise ReplayInputError(path, position, f"truncated batch: its header says {total} bytes, only "
                                                       f"{size - position} remain")
            (delta,) = _LAST_DELTA.unpack_from(head, 23)
            yield Header(path, position, total, base, base + delta, epoch, crc)
            position += total


def _header_at(path: str, position: int) -> Header | None:
    for h in _headers(path, position, True):
        return h
    return None


@attrs.frozen(slots=True)
class Spot:
    """Where offset ``offset`` begins on disk: segment index in ``segments``, byte position."""

    segments: tuple[str, ...]
    index: int
    position: int
    offset: int


class Follower:
    """The driver's side of the stream (module rules): offsets, checks and partitions."""

    def __init__(self, options: TableOptions) -> None:
        self.options = options
        self.directory = check_stream_options(options)
        # offset -> where it begins and the batch before it, for the last few offsets handed out (the
        # end of the last scan, and the start before it, which partitions() asks for next)
        self._known: dict[int, tuple[Spot, Header | None]] = {}

    def __repr__(self) -> str:
        return f"Follower({self.directory!r})"

    def initial_offset(self) -> dict[str, int]:
        segments = _segments(self.directory)
        if not segments:
            raise StreamError(f"{self.directory}: no .log segment to follow")
        return {"offset": segments[0][0], "crc": -1, "epoch": -1}

    def _find(self, offset: dict[str, Any]) -> tuple[Spot, Header | None]:
        """Where ``offset`` begins on disk, checked (module rules), and the batch before it."""
        n, crc = int(offset["offset"]), int(offset.get("crc", -1))
        segments = _segments(self.directory)
        paths = tuple(p for _b, p in segments)
        if not segments or n < segments[0][0]:
            oldest = f"the oldest segment {segments[0][1]} starts at offset {segments[0][0]}" if segments else "no segment"
            raise StreamError(f"{self.directory}: offset {n} is no longer on disk ({oldest}): the segments holding it "
                              "were deleted (after a snapshot); restart the stream without its checkpoint")
        cached = self._known.get(n)
        if cached is not None and cached[0].segments[cached[0].index] in paths:
            spot, seen = cached
            if seen is None or _header_at(seen.path, seen.position) == seen:
                spot = Spot(paths, paths.index(spot.segments[spot.index]), spot.position, n)
                return self._checked(spot, seen, n, crc)
        index = max(i for i, (base, _p) in enumerate(segments) if base <= n)
        before: Header | None = None
        if index > 0 and segments[index][0] == n:
            for h in _headers(paths[index - 1], 0, False):
                before = h
        last = index + 1 == len(paths)
        for h in _headers(paths[index], 0, last):
            if h.base_offset == n:
                return self._checked(Spot(paths, index, h.position, n), before, n, crc)
            if h.last_offset >= n:
                raise StreamError(
                    f"{h.path}, byte offset {h.position}: no batch starts at offset {n}, already emitted up to it (the "
                    f"batch there holds offsets {h.base_offset}-{h.last_offset}): the log changed under it: "
                    f"{KAFKA_14704}")
            before = h
        end = before.last_offset + 1 if before is not None else segments[index][0]
        if end < n:
            where = f"{before.path}, byte offset {before.position + before.length}" if before else paths[index]
            raise StreamError(f"{where}: the log now ends at offset {end}, before offset {n} already emitted: {KAFKA_14704}")
        position = before.position + before.length if before is not None and before.path == paths[index] else 0
        return self._checked(Spot(paths, index, position, n), before, n, crc)

    def _remember(self, spot: Spot, before: Header | None, keep: int = 4) -> None:
        self._known.pop(spot.offset, None)
        self._known[spot.offset] = (spot, before)  # the newest last: the oldest goes first
        while len(self._known) > keep:
            del self._known[next(iter(self._known))]

    def _checked(self, spot: Spot, before: Header | None, n: int, crc: int) -> tuple[Spot, Header | None]:
        if crc >= 0 and before is not None and (before.last_offset != n - 1 or before.crc != crc):
            raise StreamError(
                f"{before.path}, byte offset {before.position}: the batch of offsets {before.base_offset}-"
                f"{before.last_offset} changed after offset {n - 1} was emitted (CRC {crc:#010x} then, "
                f"{before.crc:#010x} now): {KAFKA_14704}")
        return spot, before

    def latest_offset(self, start: dict[str, Any]) -> dict[str, int]:
        """The offset after the last complete batch on disk (module rules)."""
        spot, start_before = self._find(start)
        before = start_before
        paths, index, position = spot.segments, spot.index, spot.position
        next_offset = spot.offset
        while True:
            last = index + 1 == len(paths)
            for h in _headers(paths[index], position, last):
                if h.base_offset != next_offset:
                    raise ReplayInputError(h.path, h.position, f"offsets {'go backwards' if h.base_offset < next_offset else f'skip {next_offset}..{h.base_offset - 1}'}: a segment overlaps or is missing")
                before, next_offset = h, h.last_offset + 1
                position = h.position + h.length
            if last:
                break
            following = int(os.path.basename(paths[index + 1])[:20])
            if following != next_offset:  # the reader's words for it (reading.OffsetCheck)
                gap = "go backwards" if following < next_offset else f"skip {next_offset}..{following - 1}"
                raise ReplayInputError(paths[index + 1], 0, f"offsets {gap}: a segment overlaps or is missing")
            index, position = index + 1, 0
        self._remember(spot, start_before)
        self._remember(Spot(paths, index, position, next_offset), before)
        if before is None or next_offset == int(start["offset"]):
            return dict(start)
        return {"offset": next_offset, "crc": before.crc, "epoch": before.epoch}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The reads of [start, end): one per ``unit`` bytes of batches (module rules)."""
        stop = int(end["offset"])
        if stop <= int(start["offset"]):
            return []
        spot, _before = self._find(start)
        unit = self.options.unit_bytes or STREAM_UNIT_BYTES
        parts: list[StreamPart] = []
        begin = (spot.index, spot.position, spot.offset, int(start.get("epoch", -1)))
        done, index, position = 0, spot.index, spot.position
        paths = spot.segments
        while index < len(paths) and begin[2] < stop:
            for h in _headers(paths[index], position, index + 1 == len(paths)):
                done += h.length
                if h.last_offset + 1 >= stop or done >= unit:
                    parts.append(StreamPart(paths[begin[0]:], begin[1], begin[2], begin[3], h.last_offset + 1, h.crc))
                    begin, done = (index, h.position + h.length, h.last_offset + 1, h.epoch), 0
                if h.last_offset + 1 >= stop:
                    break
            index, position = index + 1, 0
        if not parts or parts[-1].end != stop or parts[-1].end_crc != int(end["crc"]):
            raise StreamError(f"{paths[spot.index]}: the log no longer holds offsets {spot.offset}-{stop - 1} as they "
                              f"were found: {KAFKA_14704}")
        return [attrs.astuple(p, recurse=False) for p in parts]


@attrs.frozen(slots=True)
class StreamPart:
    """One micro-batch's read: segments from the one holding ``offset`` (at byte ``position``)
    up to the batch ending at ``end - 1``, whose CRC is ``end_crc``; ``epoch`` is the epoch of
    the batch before ``offset`` (-1: none)."""

    segments: tuple[str, ...]
    position: int
    offset: int
    epoch: int
    end: int
    end_crc: int


def _upto(batches: Iterator[LogBatch], part: StreamPart) -> Iterator[LogBatch]:
    last = part.end - 1
    final: LogBatch | None = None
    for batch in batches:
        if batch.last_offset > last:
            raise StreamError(f"{batch.source}, byte offset {batch.position}: the batch of offsets {batch.base_offset}-"
                              f"{batch.last_offset} runs past offset {last}, where a batch ended when it was planned: "
                              f"the log changed under it: {KAFKA_14704}")
        yield batch
        final = batch
        if batch.last_offset == last:
            break
    if final is None or final.last_offset != last:
        got = "nothing" if final is None else f"up to offset {final.last_offset}"
        raise StreamError(f"{part.segments[0]}: offsets {part.offset}-{last} were planned but the log now holds {got} "
                          f"there: {KAFKA_14704}")
    head = _header_at(final.source, final.position)
    if head is None or head.crc != part.end_crc:
        raise StreamError(f"{final.source}, byte offset {final.position}: the batch of offsets {final.base_offset}-"
                          f"{final.last_offset} changed after it was planned: {KAFKA_14704}")


def read_stream_part(options: TableOptions, part: StreamPart) -> Iterator[pa.RecordBatch]:
    """The rows of one micro-batch (module rules)."""
    segments = [os.fspath(p) for p in part.segments]
    reader = LogReader(
        source=os.path.dirname(segments[0]), kind="log", segments=segments, start_offset=0, stats=ReadStats(),
        skip_corrupt=options.skip_corrupt, begin=ReadFrom(0, part.position, part.offset, part.epoch), form=JSON_FORM,
    )
    yield from record_batches(_upto(iter(reader), part), include_noops=options.include_noops)
