"""The Spark engine's driver: the same rows as ``replay_local``, computed by Spark executors.

Rules of this module:
- The roles are the Data Source API's: a picklable source (spark/source.py: ``HistorySource``,
  opened once on the driver, for planning, and by each task for its own range), a plan that
  yields units (in parallel where that is exact; else one planning task, spark/plan.py, routed
  to partition i by partitionBy; ``SparkReplay.planned`` says which and why), a unit task (spark/unit.py:
  ``run_unit`` -> ``UnitEnd``, its send groups kept in a file of its own in a scratch directory
  beside the requests, group_spill: not through the JVM) and a write task (spark/write.py:
  ``write_unit`` -> ``WriteEnd``, which numbers and writes the rows). The driver only arranges
  stages and merges small results; the log never reaches it. The scratch directory is removed
  when the run ends, however it ends.
- The parallel plan of a run that writes rows is one stage (spark/onepass.py): a task per byte
  range reads it once, reports its net effect, and replays it from the image the driver composes
  meanwhile. A run without rows (no scratch directory to exchange through) plans in two stages
  (spark/ranges.py: the range tasks' net effects, composed by the driver, then the units, each
  reading its range again). On the 1M-record generated log (--digest none, local[2], load 5-7)
  the one stage left the two workers idle 0.5 s each instead of 6.5-7.0 (the driver's
  composition, the range stage's last task), for the same CPU (43.2 / 45.3 s against 43.6 / 45.7).
- The one pass cuts fewer units than the other plans (plan.PASS_UNITS_PER_CORE: why), its last
  round in halves when they are large (plan.TAPER_BYTES: why); a caller that knows the cores
  before the session (a local master: master.local_cores) begins its cuts in a thread while the
  JVM starts (``EarlyCuts``: the hop over every batch's prefix, 0.7-1.0 s at 10M records, was
  the driver's alone between the JVM and the first task), taken when they fit; and
  writes each unit's rows in the unit's own task once the units before it have published their
  counts (spark/onepass.py), into the scratch directory; the driver moves the parts into
  ``requests_dir`` when every unit succeeded. A pass that ends in the serial plan leaves no part
  behind (the scratch directory goes), and the serial plan writes in a stage of its own.
- The write tasks of the other plans run largest first (by the frame bytes each unit's summary counts, which
  they hash): a large unit started last would leave the other cores idle at the stage's end.
  The parts keep their unit's name, so the order of the files is the unit order whatever ran first.
- ``seq`` is per broker over the whole replay: the driver collects each unit's ``UnitEnd`` (its
  per-broker counts, summary and read counters) and turns the counts into per-unit starting
  points (prefix sums, in unit order), broadcast to the write tasks.
- Every task's function runs through ``common.tuning.worker_task`` (a Spark worker's collector
  settings: PySpark runs a full collection after every task; engine's rules).
- Errors cross as values: a unit or write task that failed on what the user can act on (bad
  input, a refused record, an OS error naming its path) hands its error in its UnitEnd or
  WriteEnd, and the driver raises the earliest one (the first in log order, as the sequential
  engine meets it); a unit's before anything is written. Nothing here or in the caller parses
  exception text; an unexpected failure (a bug, a lost executor) propagates as Spark reports it.
- Wall time of each phase is returned: "plan" is the serial planning task's (work in one task),
  "plan_cuts" the driver's cuts, "plan_ranges" / "plan_combine" the two-stage plan's (parallel
  tasks, driver; "plan_ranges" also what a one pass cost before it fell back to the serial
  plan), then "replay" (the one pass: ranges and units) and "write"; the figures of real runs live in
  benchmarks/results/replay_bench.json.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING

import attrs

from ctrlbatch.common.tuning import worker_task

from ..log.errors import ReadStats
from ..log.reading import Position
from ..log.sources import History
from ..propagate.propagator import ReplayOptions
from ..rows.rows import NO_FRAMES
from ..rows.summary import ReplaySummary
from .group_spill import spill_dir
from .onepass import WriteTo, one_pass
from .plan import (
    Unit,
    pass_taper,
    pass_unit_bytes_for,
    plan_units,
    unit_bytes_for,
    unit_count,
)
from .ranges import RangePlan, batch_cuts, plan_ranges, serial_reason
from .source import HistorySource
from .unit import UnitEnd, first_error, run_unit
from .write import WriteEnd, write_unit

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext
    from pyspark.sql import SparkSession

__all__ = ["EarlyCuts", "HistorySource", "SparkReplay", "replay_spark", "unit_bytes_for"]


@attrs.frozen(slots=True, repr=False)
class SparkReplay:
    """What the driver gets back: the per-unit summaries merged, and rows written."""

    summary: ReplaySummary
    stats: ReadStats
    rows: int
    units: int
    seconds: dict[str, float]  # wall time of each phase: plan (or plan_cuts, plan_ranges, plan_combine), replay, write
    planned: str = "serial"  # "parallel", or "serial: why" (spark/ranges.py's rules)

    def __repr__(self) -> str:
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in self.seconds.items())
        return f"SparkReplay({self.rows:,} rows, {self.units} units; {phases})"


def _frame_bytes(end: UnitEnd) -> int:
    """The frame bytes a unit's write task hashes: what its time goes by."""
    return sum(c["bytes"] for c in end.summary.by_api.values())


def first_seqs(ends: list[UnitEnd]) -> dict[int, dict[int, int]]:
    """Each unit's first seq per broker: the prefix sums of the earlier units' counts."""
    first: dict[int, dict[int, int]] = {}
    running: Counter[int] = Counter()
    for end in sorted(ends, key=lambda e: e.index):
        first[end.index] = dict(running)
        running.update(end.counts)
    return first


def _move_written(ends: list[UnitEnd], staged: str, directory: str) -> int:
    """The one pass's parts moved from ``staged`` to ``directory`` (the first write error raised
    instead); the rows written."""
    written = [e.written for e in ends if e.written is not None]
    error = first_error(written)
    if error is not None:
        raise error
    os.makedirs(directory, exist_ok=True)
    for name in sorted(os.listdir(staged)):
        os.replace(os.path.join(staged, name), os.path.join(directory, name))
    return sum(w.rows for w in written)


def _serial_units(sc: SparkContext, source: HistorySource, coalesce: int, unit_bytes: int, count: int) -> RDD[Unit]:
    """The serial plan's units, unit i in partition i (spark/plan.py)."""
    plans = sc.parallelize([0], 1).flatMap(lambda _: plan_units(source, coalesce, unit_bytes, count))
    return plans.partitionBy(count, lambda k: k).values()


class EarlyCuts:
    """The one pass's cuts (ranges.batch_cuts: 0.7-1.0 s over the 10M-record log's 578 MB) made in
    a thread of their own while the JVM starts, for the cores a local master gives (module rules):
    ``replay_spark`` takes them when it asks for the same unit size, count and halves, else cuts
    itself. An error here is dropped: the same cuts made again raise it where they always did."""

    def __init__(self, history: History, cores: int) -> None:
        self.unit_bytes = pass_unit_bytes_for(history, cores)
        count = unit_count(history, self.unit_bytes)
        self.halves_from, halves = pass_taper(history, cores, self.unit_bytes, count)
        self.max_units = count + halves
        self._begins: list[Position] | None = None
        self._thread = threading.Thread(target=self._cut, args=(list(history.segments),), name="ctrlbatch-cuts",
                                        daemon=True)
        self._thread.start()

    def _cut(self, segments: list[str]) -> None:
        with contextlib.suppress(Exception):
            self._begins = [(0, 0), *batch_cuts(segments, self.unit_bytes, self.max_units, halves_from=self.halves_from)]

    def begins(self, unit_bytes: int, max_units: int, halves_from: int | None) -> list[Position] | None:
        """The cuts, if made for these arguments and without an error; else None."""
        if (unit_bytes, max_units, halves_from) != (self.unit_bytes, self.max_units, self.halves_from):
            return None
        self._thread.join()
        return self._begins


def replay_spark(
    spark: SparkSession,
    source: HistorySource,
    options: ReplayOptions,
    *,
    coalesce: int = 1,
    requests_dir: str | os.PathLike[str] | None = None,
    with_frames: bool = False,
    unit_bytes: int | None = None,
    history: History | None = None,
    early: EarlyCuts | None = None,
) -> SparkReplay:
    """Replay ``source`` on ``spark``; rows go to ``requests_dir`` (Parquet) when given.
    ``history``: ``source`` already opened on the driver (by the caller), else it is opened here.
    ``early``: the one pass's cuts, begun by the caller before the session started (``EarlyCuts``).

    Returns the merged summary and read counters; the log itself never reaches the driver."""
    if not isinstance(source, HistorySource):
        raise TypeError(f"source: expected a HistorySource, got {type(source).__name__}")
    if not isinstance(options, ReplayOptions):
        raise TypeError(f"options: expected ReplayOptions, got {type(options).__name__}")
    if not isinstance(coalesce, int) or isinstance(coalesce, bool) or coalesce < 1:
        raise ValueError(f"coalesce: expected an integer >= 1, got {coalesce!r}")
    if with_frames and options.digest == "none":
        raise ValueError(NO_FRAMES)
    if unit_bytes is not None and (not isinstance(unit_bytes, int) or unit_bytes < 1):
        raise ValueError(f"unit_bytes: expected a positive integer or None, got {unit_bytes!r}")
    sc: SparkContext = spark.sparkContext
    if history is None:
        history = source.open()  # fail early, on the driver, with the reader's error for a bad path
    once = requests_dir is not None and serial_reason(history, coalesce) is None  # the one pass (spark/onepass.py)
    sized = unit_bytes is None  # the one pass halves its last round (plan.taper) only for units it sizes itself
    if unit_bytes is None:
        unit_bytes = (pass_unit_bytes_for if once else unit_bytes_for)(history, sc.defaultParallelism)
    seconds: dict[str, float] = {}
    clock = time.monotonic()
    count = unit_count(history, unit_bytes)
    spill = None if requests_dir is None else spill_dir(requests_dir)
    plan: RangePlan | None = None
    staged: str | None = None  # the one pass's rows (spark/onepass.py)
    try:
        ends: list[UnitEnd] | None = None
        if once and spill is not None and requests_dir is not None:  # read once (spark/onepass.py)
            halves_from, halves = pass_taper(history, sc.defaultParallelism, unit_bytes, count) if sized else (None, 0)
            made = None if early is None or not sized else early.begins(unit_bytes, count + halves, halves_from)
            begins: list[Position] = made if made is not None else [
                (0, 0), *batch_cuts(history.segments, unit_bytes, count + halves, halves_from=halves_from)
            ]
            seconds["plan_cuts"] = time.monotonic() - clock
            staged = os.path.join(spill, "rows")  # the pass's parts, moved to requests_dir once it succeeded
            os.makedirs(os.fspath(requests_dir), exist_ok=True)  # made as the rows' writing starts, as before
            passed = one_pass(sc, source, options, begins, spill, WriteTo(staged, with_frames, options.digest))
            seconds.update(passed.seconds)
            ends, planned = passed.ends, "parallel" if passed.reason is None else f"serial: {passed.reason}"
            clock = time.monotonic()
            if ends is None:
                routed = _serial_units(sc, source, coalesce, unit_bytes, count)
        else:
            plan = plan_ranges(sc, source, history, coalesce, unit_bytes, count)
            seconds.update(plan.seconds)
            if plan.units is not None:
                planned = "parallel"
                routed = plan.routed(sc)  # one unit per slice: slice i is unit i
                clock = time.monotonic()
            else:
                planned = f"serial: {plan.reason}"
                routed = _serial_units(sc, source, coalesce, unit_bytes, count)
        if ends is None:
            ends = routed.map(lambda unit: worker_task(run_unit, source, options, coalesce, unit, spill)).collect()
        error = first_error(ends)
        if error is not None:
            raise error
        replayed, clock = time.monotonic() - clock, time.monotonic()
        summary, stats = ReplaySummary(), ReadStats()
        for end in sorted(ends, key=lambda e: e.index):
            summary.merge(end.summary)
            stats.merge(end.stats)
        if planned != "parallel":
            seconds["plan"] = max(e.planned_after for e in ends)  # the planning task's own clock (one task)
        if "replay" not in seconds:  # the one pass timed its own stage
            seconds["replay"] = replayed - seconds.get("plan", 0.0)  # the units, in parallel (and the job's start-up)
        rows = 0
        if requests_dir is not None and staged is not None and all(e.written is not None for e in ends):
            rows = _move_written(ends, staged, os.fspath(requests_dir))  # the one pass wrote them
        elif requests_dir is not None and spill is not None:
            directory = os.fspath(requests_dir)
            os.makedirs(directory, exist_ok=True)
            starts = sc.broadcast(first_seqs(ends))
            indices = [e.index for e in sorted(ends, key=_frame_bytes, reverse=True)]  # largest first
            digest = options.digest
            written: list[WriteEnd] = sc.parallelize(indices, len(indices)).map(
                lambda i: worker_task(write_unit, i, spill, starts.value[i], directory, with_frames, digest)
            ).collect()
            error = first_error(written)
            if error is not None:
                raise error
            rows = sum(w.rows for w in written)
        seconds["write"] = time.monotonic() - clock
    finally:
        if spill is not None:
            shutil.rmtree(spill, ignore_errors=True)
        if plan is not None:
            plan.release()
    return SparkReplay(summary, stats, rows, len(ends), seconds, planned)
