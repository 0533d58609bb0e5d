"""The records table's partitions: byte ranges of the log cut on batch boundaries, read in parallel.

Rules of this module (record batch v2: DefaultRecordBatch.java:44-100, kafka-metadata-log-format.md 4):
- Planning reads no record: ``cuts`` hops the 12-byte (baseOffset, batchLength) prefixes of the
  segments (as spark/ranges.py's batch_cuts does) and cuts at the first batch start past every
  ``unit_bytes``, remembering the batch before each cut.
- A partition reads its range through the one reading loop's reader (``History.reader``: the
  same checks, snapshot trim and skip-corrupt rule as the replay; in the JSON record form,
  json_fused.py, so data records arrive as their ``data`` text), its usual batches turned into
  rows where their bytes are read (log_rows.py, the same rows and errors), starting one batch early, at the
  batch before its cut, and drops that batch's rows: the offset and epoch checks then meet the
  partition's first batch in the state the sequential read has there (the batch before it
  accepted), so a gap, an overlap or an epoch without a LeaderChange across a cut fails (or is
  skipped) exactly as in one read. (If that earlier batch is itself corrupt and skipped, the
  sequential read checks the next batch against nothing either: skipping explains the gap.)
- A snapshot (fromSnapshot, or a .checkpoint input) is one partition read whole, before the log:
  Snapshot.batches checks its header first and its footer last. Text inputs (JSON lines,
  kafka-dump-log output) have no byte ranges: one partition.
- A partition is plain values (``Part``), so it pickles small and the data source's planning
  process (which has no SparkContext) can make it; everything ``read`` needs is in it.
- Errors: what the reader raises (ReplayInputError: file, byte offset, reason) propagates as is.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

import attrs
import pyarrow as pa

from ..log.reading import Position, ReadFrom
from ..log.sources import History, open_history
from .json_fused import JSON_FORM
from .log_rows import log_rows
from .options import TableOptions
from .record_rows import ROWS_PER_BATCH, RecordColumns, record_batches

__all__ = ["MAX_PARTS", "MIN_CORE_UNIT", "Part", "cuts", "plan_parts", "read_part", "unit_bytes_for"]

_PREFIX = struct.Struct(">qi")
WINDOW = 1 << 20
MIN_UNIT = 16 << 20
MIN_CORE_UNIT = 1 << 20
MAX_UNIT = 64 << 20
PARTS_PER_LOG = 16
MAX_PARTS = 1024


@attrs.frozen(slots=True)
class Part:
    """One partition: ``kind`` "snapshot", "text" or "log"; a log part reads from ``begin``
    (the batch before its cut when ``overlap``) to ``stop`` (None: the end of the log)."""

    index: int
    kind: str
    begin: Position = (0, 0)
    stop: Position | None = None
    overlap: bool = False


def unit_bytes_for(total: int, cores: int | None = None) -> int:
    """Equal partitions of about MIN_UNIT bytes each, at most PARTS_PER_LOG of them (then larger),
    none over MAX_UNIT. Why not smaller: a Spark task has a fixed cost, measured at about 0.1 s
    of Python worker and 0.05 s of JVM CPU on the project machine (benchmarks/tables_bench.py's
    log of 58 MB on local[2]: 16 parts cost 3.9 + 1.3 s of job CPU, 4 parts 3.1 + 0.6 s), while
    16 MiB of log is about 0.9 s of reading. Why equal: a few parts on a few cores finish
    together only if they are alike.

    With ``cores`` (the session's default parallelism, which register(spark) gives the data
    source): the fewest parts that are a multiple of cores, none over MAX_UNIT and none under
    MIN_CORE_UNIT: every core reads one equal part per wave, so the fixed cost is paid once per
    core and wave, and no core waits for another's second task."""
    if cores is not None and cores > 0:
        parts = max(1, min(cores * -(-total // (cores * MAX_UNIT)), total // MIN_CORE_UNIT))
    else:
        parts = min(PARTS_PER_LOG, max(1, -(-total // MIN_UNIT)))
    return max(1, min(MAX_UNIT, -(-total // parts)))


def cuts(segments: list[str], unit_bytes: int, max_parts: int = MAX_PARTS) -> list[tuple[Position, Position]]:
    """(cut, the batch before it): batch starts, one past every ``unit_bytes`` of input, at most
    ``max_parts - 1``. A bad length ends the hop in that segment (the reader names it).

    The planner runs before any task, so the hop is tight: batches are hopped in runs that need
    neither a new window nor a cut check, and the hop ends once no batch can start past the
    next cut (the last part's batches are not hopped)."""
    out: list[tuple[Position, Position]] = []
    sizes = [os.path.getsize(path) for path in segments]
    total = sum(sizes)
    done, next_cut = 0, unit_bytes
    prev_seg, prev_pos = -1, 0
    unpack = _PREFIX.unpack_from
    for seg, path in enumerate(segments):
        size = sizes[seg]
        if next_cut >= total:
            return out  # no batch starts at or past the next cut
        with open(path, "rb") as f:
            buf, base, limit = b"", 0, -1
            pos, last = 0, size - _PREFIX.size
            while pos <= last:
                if done + pos >= next_cut and prev_seg >= 0:
                    out.append(((seg, pos), (prev_seg, prev_pos)))
                    if len(out) + 1 >= max_parts:
                        return out
                    next_cut = done + pos + unit_bytes
                    if next_cut >= total:
                        return out
                if pos > limit:
                    f.seek(pos)
                    buf, base = f.read(WINDOW), pos
                    limit = pos + len(buf) - _PREFIX.size
                    if limit < pos:
                        break
                # The batch at pos, then those after it up to hop_to: in the window (so in the
                # file: limit <= last) and before the next cut (what the checks above would pass).
                hop_to = min(limit, next_cut - done - 1)
                while True:
                    length = unpack(buf, pos - base)[1]
                    if length <= 0:
                        break
                    prev_seg = seg
                    prev_pos = pos
                    pos += _PREFIX.size + length
                    if pos > hop_to:
                        break
                if length <= 0:
                    break
        done += size
    return out


def open_table(options: TableOptions) -> History:
    """The history the table reads (sources.open_history: its checks and one-line errors)."""
    return open_history(options.path, from_snapshot=options.from_snapshot, skip_corrupt=options.skip_corrupt)


def plan_parts(options: TableOptions, cores: int | None = None) -> list[Part]:
    """The partitions of the table (module rules); cores: unit_bytes_for's."""
    history = open_table(options)
    parts: list[Part] = []
    if history.snapshot is not None:
        parts.append(Part(0, "snapshot"))
    if history.kind in ("jsonl", "dump") and history.snapshot is None:
        return [Part(0, "text")]
    segments = [] if history.snapshot is not None and history.snapshot.path == history.source else history.segments
    if history.kind in ("jsonl", "dump") or not segments:
        return parts
    total = sum(os.path.getsize(s) for s in segments)
    unit = options.unit_bytes or unit_bytes_for(total, cores)
    begins: list[tuple[Position, Position | None]] = [((0, 0), None), *cuts(segments, unit)]
    for i, (begin, before) in enumerate(begins):
        stop = begins[i + 1][0] if i + 1 < len(begins) else None
        start = before if before is not None else begin
        parts.append(Part(len(parts), "log", start, stop, before is not None))
    return parts


def read_part(options: TableOptions, part: Part, rows: int = ROWS_PER_BATCH) -> Iterator[pa.RecordBatch]:
    """The Arrow record batches of one partition (module rules)."""
    history = open_table(options)
    noops = options.include_noops
    if part.kind == "snapshot":
        yield from record_batches(history.snapshot_batches(), include_noops=noops, snapshot=True, rows=rows)
        return
    if part.kind == "text":
        yield from record_batches(history.batches(), include_noops=noops, rows=rows)
        return
    reader = history.reader(ReadFrom(*part.begin), part.stop, form=JSON_FORM)
    seg, pos = part.begin
    drop = (history.segments[seg], pos) if part.overlap else None  # read only to set the checks
    yield from log_rows(reader, RecordColumns(include_noops=noops), rows, drop)
