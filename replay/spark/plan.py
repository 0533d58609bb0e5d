"""The Spark engine's plan: the history cut into units that replay on their own, in parallel.

Rules of this module (pyspark-notes.md Part A §2; the design):
- A *unit* is a byte range of the segments that ends right after a batch closing a delta (no
  transaction open, no ``--coalesce`` group pending). It carries what its replay needs from
  before it: the image before its first delta, the last LeaderChange batch before it (so its
  delta grouping sees the same KRaft leader) and the reading loop's state at its start
  (``reading.ReadFrom``: the offset and epoch checks span units), so each unit replays alone.
- This is the serial plan: the engine takes it only where the parallel plan (spark/ranges.py) is
  not exact or fails (a text input, a snapshot start, --skip-corrupt, --coalesce > 1, a
  ClearElrRecord, bad input: spark/ranges.py's rules), and it stays the reference the parallel plan
  is tested against. One planning task reads the history once through the one reading loop
  (``History.reader``: the same checks as the sequential engine), grouping deltas and folding
  the image with ``apply_delta`` only (no requests); the cut positions come from the reader
  itself (``LogReader.resume``). Its time is reported as the "plan" phase (``Unit.planned_after``).
  Its share of a run is in benchmarks/results/replay_bench.json.
- A planning error (bad input, a refused record, an OS error) is not raised in the task: it ends the plan
  with a unit carrying the error as a value (``Unit.error``), which the unit replay hands to
  the driver (spark/unit.py). Nothing of the log reaches the driver.
- ``plan_units`` yields (unit index, Unit) pairs only because Spark's ``partitionBy`` routes
  (key, value) pairs: the key is the partition the unit goes to, nothing else reads it.
- Units are about ``unit_bytes`` of input each, at most ``max_units`` of them; text inputs
  (JSON lines, kafka-dump-log output) have no byte ranges and are one unit.
- A unit's image crosses to the executors as plain values (packed_image.pack_image): pickling
  10^5 attrs objects costs seconds, tuples do not.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from ctrlbatch.common import CommandError, os_error_line

from ..engine.skeleton import locate, snapshot_start, trail_for
from ..image.deltas import Delta, group_deltas
from ..image.image import EMPTY_IMAGE, MetadataImage, MetadataReplayError, apply_delta
from ..image.packed_image import PackedImage, pack_image, unpack_image
from ..log.errors import BatchTrail
from ..log.reading import TEXT_KINDS, ReadFrom
from ..log.records import LEADER_CHANGE, LogBatch
from ..log.sources import History
from .source import HistorySource

__all__ = [
    "HistorySource", "MAX_UNITS", "MAX_UNIT_BYTES", "MIN_UNIT_BYTES", "PASS_UNITS_PER_CORE", "TAPER_BYTES", "Unit",
    "pack_image", "pass_taper", "pass_unit_bytes_for", "plan_units", "taper", "unit_bytes_for", "unit_count", "unpack_image",
]

UNITS_PER_CORE = 8  # several units per core even out units of uneven cost
# The one pass (spark/onepass.py) takes fewer: its units run in log order (no largest first), but
# each unit pays a fixed cost the sequential engine pays once (its image pickled by the driver,
# unpickled and unpacked in the task, the propagation's caches built cold, the range's net
# effect's setup): measured, 16 -> 8 units on the 1M-record generated log (local[2], sha256,
# load 2.5-3.8): CPU of the process tree 64.8 -> 58.5 s; the 10-large-topic 1M log (16 -> 6 units)
# 46.7 / 47.2 -> 43.4 / 42.6 s. A whole number of rounds per core: no core left alone at the end.
PASS_UNITS_PER_CORE = 4
MIN_UNIT_BYTES = 256 << 10
# The most input a unit gets while the log needs fewer than MAX_UNITS units. A unit's output
# stays out of Spark (group_spill: a file, a chunk at a time; the one pass keeps its groups in
# its task, the full images in a file: kept_groups, whose rules give a task's peak memory), so a
# unit may be as large as UNITS_PER_CORE asks; what a unit costs beside its work is fixed (a range task,
# its image composed on the driver and unpacked in the task, its first full-image body from a
# cold memo): on the 10M-record log (578 MB, local[2]) 16 units took the driver's combine from
# 9.8 to 3.2 s.
MAX_UNIT_BYTES = 64 << 20
MAX_UNITS = 64  # each task has a fixed cost and a unit carries an image: a few dozen are plenty
# The one pass's last round in halves (``taper``), when its units are this large. Units
# run in log order, each on the first core free, so the cores' last units end apart by up to a
# unit's length: on the 10M-record log (local[2], 10 units of 58 MB, 35-47 s each) one core
# worked alone for the last 9.5 s. Halves halve that bound for ``cores`` more units, whose fixed
# cost (image, cold caches: about 0.5 s of CPU each) is worth it only on units of several seconds.
TAPER_BYTES = 16 << 20


@attrs.frozen(slots=True, repr=False)
class Unit:
    """A run of consecutive deltas that replays on its own: where it starts (with the reading
    loop's state there) and stops, the image before it, the last LeaderChange batch before it;
    or, ending a failed plan, the planning error (the unit then replays nothing)."""

    index: int
    start: ReadFrom | None  # None: from the beginning of the log
    stop: ReadFrom | None  # None: to the end of the log (else the next unit's start)
    image: MetadataImage
    leader_batch: LogBatch | None
    with_snapshot: bool  # unit 0 of a history with a snapshot: it rebuilds the image and takes the image path
    planned_after: float = 0.0  # seconds the planning task had run when it cut this unit (the last: all of it)
    error: CommandError | None = None

    def __repr__(self) -> str:
        failed = f", failed: {self.error}" if self.error is not None else ""
        return f"Unit({self.index}, {self.start} .. {self.stop}, image offset {self.image.offset}{failed})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unit, (self.index, self.start, self.stop, pack_image(self.image), self.leader_batch,
                        self.with_snapshot, self.planned_after, self.error))


def _unit(index: int, start: ReadFrom | None, stop: ReadFrom | None, image: PackedImage,
          leader_batch: LogBatch | None, with_snapshot: bool, planned_after: float, error: CommandError | None) -> Unit:
    return Unit(index, start, stop, unpack_image(image), leader_batch, with_snapshot, planned_after, error)


def is_leader_change(batch: LogBatch) -> bool:
    return batch.control and any(c.type == LEADER_CHANGE for c in batch.control_records)


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
            if is_leader_change(batch):
                self.last_leader = batch
            yield batch


def _seen(trail: BatchTrail, batches: Iterable[LogBatch]) -> Iterator[LogBatch]:
    for batch in batches:
        trail.see(batch)
        yield batch


def _advance(image: MetadataImage, delta: Delta) -> MetadataImage:
    """The image after delta, exactly as propagate_delta leaves it (without building requests)."""
    return apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)[0]


def plan_units(source: HistorySource, coalesce: int, unit_bytes: int, max_units: int) -> Iterator[tuple[int, Unit]]:
    """Walk the history once (apply only) and cut it into at most ``max_units`` units of about
    ``unit_bytes`` input bytes each, right after a batch that ends a delta (no transaction open,
    no --coalesce group pending). Yields (unit index, unit): Spark routes unit i to partition i."""
    began = time.monotonic()
    history = source.open()
    with_snapshot = history.snapshot is not None
    if history.kind in TEXT_KINDS or not history.segments:
        yield 0, Unit(0, None, None, EMPTY_IMAGE, None, with_snapshot)
        return
    sizes = [os.path.getsize(s) for s in history.segments]
    before = [sum(sizes[:i]) for i in range(len(sizes))]
    reader = history.reader()
    trail = trail_for(history)
    tracker = _Tracker(reader, trail)
    start: ReadFrom | None = None
    start_image, start_leader = EMPTY_IMAGE, None
    count = 0
    try:
        image, _ = snapshot_start(history, _seen(trail, history.snapshot_batches()))
        start_image = image
        next_cut = unit_bytes
        for delta in group_deltas(tracker, coalesce):
            image = _advance(image, delta)
            batch = tracker.current
            assert batch is not None
            here = reader.resume()
            done = before[here.segment] + here.position
            if delta.last_offset == batch.last_offset and done >= next_cut and count + 1 < max_units:
                yield count, Unit(count, start, here, start_image, start_leader, with_snapshot and count == 0,
                                  time.monotonic() - began)
                count += 1
                start, start_image, start_leader = here, image, tracker.last_leader
                next_cut = done + unit_bytes
    except (CommandError, OSError) as e:
        if isinstance(e, OSError):
            error: CommandError = CommandError(os_error_line(e))
        else:
            error = locate(e, trail, history) if isinstance(e, MetadataReplayError) else e
        yield count, Unit(count, start, None, start_image, start_leader, with_snapshot and count == 0,
                          time.monotonic() - began, error)
        return
    yield count, Unit(count, start, None, start_image, start_leader, with_snapshot and count == 0,
                      time.monotonic() - began)


def unit_bytes_for(history: History, cores: int) -> int:
    """Input bytes per unit: about UNITS_PER_CORE units per core, within [MIN, MAX]_UNIT_BYTES,
    but never so small that MAX_UNITS units leave a remainder for the last one (on 552 MB,
    8 MiB units made the 64th unit 24 MB: one core worked alone at the end)."""
    total = total_bytes(history)
    wanted = max(MIN_UNIT_BYTES, min(MAX_UNIT_BYTES, total // max(1, cores * UNITS_PER_CORE)))
    return max(wanted, -(-total // MAX_UNITS))


def pass_unit_bytes_for(history: History, cores: int) -> int:
    """Input bytes per unit of the one pass: PASS_UNITS_PER_CORE units per core, more where
    MAX_UNIT_BYTES binds, their count a multiple of ``cores`` (at most MAX_UNITS), all of about
    the same size (at least MIN_UNIT_BYTES)."""
    total = total_bytes(history)
    cores = max(1, cores)
    units = max(cores * PASS_UNITS_PER_CORE, -(-total // MAX_UNIT_BYTES))
    units = min(MAX_UNITS, -(-units // cores) * cores)
    return max(MIN_UNIT_BYTES, -(-total // units), -(-total // MAX_UNITS))


def pass_taper(history: History, cores: int, unit_bytes: int, count: int) -> tuple[int | None, int]:
    """The one pass's last round in halves (ranges.batch_cuts' ``halves_from``) and the units that
    adds, for ``count`` units of ``unit_bytes``: ``taper(total_bytes(history), ...)``."""
    return taper(total_bytes(history), cores, unit_bytes, count)


def taper(total: int, cores: int, unit_bytes: int, count: int) -> tuple[int | None, int]:
    """Where the last ``k`` units' worth of ``total`` input bytes starts (cut in halves: ``k``
    more units, at most MAX_UNITS in all) and ``k``: one unit per core, fewer where MAX_UNITS
    binds; (None, 0) when units are below TAPER_BYTES, on one core, or where nothing is left to
    halve. ``count`` is the cuts' bound without it (batch_cuts' ``max_units``); with it the
    bound is ``count + k``, so the halves never run out of cuts (a last unit holding the rest)."""
    k = min(cores, MAX_UNITS - count)
    if cores < 2 or unit_bytes < TAPER_BYTES or k < 1 or total <= k * unit_bytes:
        return None, 0
    return total - k * unit_bytes, k


def unit_count(history: History, unit_bytes: int) -> int:
    """How many units batch_cuts may make of ``unit_bytes`` each (its ``max_units``, before a taper)."""
    return min(MAX_UNITS, total_bytes(history) // unit_bytes + 1)


def total_bytes(history: History) -> int:
    return sum(os.path.getsize(s) for s in history.segments)
