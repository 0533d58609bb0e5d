"""The Spark engine's plan in parallel: byte ranges read at once, their net effects composed in order.

Rules of this module (the design: issue 13; the serial plan it stands in for: spark/plan.py):
- Cuts without decoding: ``batch_cuts`` hops the 12-byte (offset, length) prefixes of the
  segments, a batch at a time (0.5 s per million batches on these machines), and cuts at the
  first batch start past every ``unit_bytes``. Nothing else of a batch is read there. It reads
  the segments a window at a time and never maps them: every page of a mapped segment counted
  in the driver's RSS (the hop touches them all), which made the driver's peak grow with the
  log (552 MB of segments at 10M records: 664 MiB peak, 255 at 1M).
- Phase 1, one task per range (``range_report``): the range's batches through the one reading
  loop (``History.reader``: the same checks), its deltas (``group_deltas``) folded into a
  ``net_effect.NetBuilder``; it reports the net effect, the reading checks' state at its end
  (next offset, epoch in office), where its read ended, its first batch (records dropped: what
  the epoch check reads), its last LeaderChange batch, whether a transaction is open at its end.
  A range task checks its first batch against nothing (it does not know the state before it):
  the driver does, with the range before it (``plan_ranges``).
- Batches kept for the one pass (``kept``: spark/onepass.py replays them in the same task):
  batches of NoOps only, outside a transaction, after the range's first batch, go into the list
  as runs (log/records.py's NoOpRun: consecutive ones of one epoch and one file) and not on to
  the grouping and the builder, whose whole work on each (a delta of no records: the offset and
  epoch it ends at, one more delta) ``_kept`` does inline. Why: half a log's batches are such;
  each kept object (a LogBatch alive until its replay), its trip through RangeWatch,
  group_deltas and NetBuilder.add, and then through the replay's counting, grouping and engine
  loop cost ~2 us. Measured, with the engine's counted_runs: the 1M-record default log on
  local[2], three alternating runs each (load 0.8-1.9): wall 23.7 / 22.7 / 22.7 -> 23.0 / 22.0 /
  21.5 s, workers' CPU 36.4 / 34.9 / 34.5 -> 35.5 / 34.3 / 33.6 s (with spark/write.py's hash
  helper); the 10 large topics' log 26.3 -> 25.8 s of CPU; the 10M-record log, one run each
  (load 2.2-3.3 with Spark's own processes): 198.2 -> 193.8 s, workers' CPU 377.7 -> 369.7 s.
  tests/replay/test_noop_runs.py checks
  over random batch sequences that the report is the one every batch gives, that the items
  stand for exactly the batches read, and that replaying them gives the same groups, first
  offsets, image, summary and counts.
- The driver (``plan_ranges``) walks the reports in order: the ranges must meet (a read ended
  exactly where the next began), offsets must run on and the epoch check must pass on each
  range's first batch as the sequential reader would check it, no transaction may be open at a
  cut; then each unit's starting image is the previous one with the range's net effect applied
  (``net_effect.compose`` on packed values, exact by construction; its cost is what the image
  holds, per unit: a new dict per touched topic, a tuple per touched partition, no object).
- Memory on the driver is bounded by the image, not by the log: the range reports (their net
  effects packed: ``NetBuilder.packed``) are kept on disk by Spark (DISK_ONLY) and read here one at
  a time (``toLocalIterator``), and each unit's packed image is broadcast (written to a file) as
  soon as it is composed, so the driver holds one image, the next and two net effects at a time:
  the iterator fetches the next report while the driver composes (``prefetchPartitions``; each
  report is a job of its own, whose start-up otherwise stood between every two compositions).
  Measured (benchmarks/spark_plan_bench.py's header): the driver's peak over the plan 187 MiB
  with 16 units (1M records), 202 MiB with 21 (3M). The broadcasts are destroyed when the run ends
  (``RangePlan.release``).
- Anything else gives None with the reason, and the engine plans serially as before (which
  raises the exact error, with file and byte offset, where there is one): a range's reading or
  replay error or anything not composed (net_effect's rules), a failed continuity check, a
  transaction open at a cut, and up front: text inputs, a snapshot start, --skip-corrupt
  (skipped batches make the checks' state depend on what was skipped), --coalesce > 1 (groups
  span cuts). So the parallel plan is taken only where it is exact; the fallback costs the
  phase 1 tasks' time on top of the serial plan, once, on bad or unusual input.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import attrs

from ctrlbatch.common import CommandError
from ctrlbatch.common.tuning import worker_task

from ..image.deltas import group_deltas
from ..image.image import EMPTY_IMAGE
from ..image.net_effect import SERIAL_TYPES, NetBuilder, NotComposable, PackedNet, compose, not_composed
from ..image.packed_image import PackedImage, pack_image, unpack_image
from ..log.reading import TEXT_KINDS, EpochCheck, Position, ReadFrom
from ..log.records import (
    ABORT_TRANSACTION_RECORD,
    BEGIN_TRANSACTION_RECORD,
    END_TRANSACTION_RECORD,
    LogBatch,
    NoOpRun,
)
from ..log.sources import History
from .plan import HistorySource, Unit, is_leader_change

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext
    from pyspark.broadcast import Broadcast



def _unpacked(unit: Unit, image: PackedImage) -> Unit:
    return attrs.evolve(unit, image=unpack_image(image))

__all__ = ["RangePlan", "RangeReport", "RangeWatch", "batch_cuts", "continuity_problem", "plan_ranges", "range_report",
           "serial_reason"]

_PREFIX = struct.Struct(">qi")  # baseOffset, batchLength: the 12 bytes before every batch
_TXN = {BEGIN_TRANSACTION_RECORD: True, END_TRANSACTION_RECORD: False, ABORT_TRANSACTION_RECORD: False}


def serial_reason(history: History, coalesce: int) -> str | None:
    """Why this run is planned serially (module rules), or None."""
    for reason, applies in (
        ("a text input has no byte ranges", history.kind in TEXT_KINDS or history.kind != "log"),
        ("the history starts from a snapshot", history.snapshot is not None),
        ("--skip-corrupt", history.skip_corrupt),
        ("--coalesce > 1", coalesce != 1),
        ("no segments", not history.segments),
    ):
        if applies:
            return reason
    return None


WINDOW = 1 << 20  # bytes batch_cuts reads at a time


def batch_cuts(segments: list[str], unit_bytes: int, max_units: int, window: int = WINDOW,
               halves_from: int | None = None) -> list[Position]:
    """Batch starts, one past every ``unit_bytes`` of input, at most ``max_units - 1`` of them;
    with ``halves_from``, one past every ``unit_bytes // 2`` after a cut at or past that byte of
    the input (the one pass's last round: plan.taper). A bad length ends the hop in
    that segment (the reader names it; the cuts stay batch starts). The segments are read
    ``window`` bytes at a time (module rules: not mapped)."""
    cuts: list[Position] = []
    half = halves_from is not None and halves_from <= 0
    done, next_cut = 0, unit_bytes // 2 if half else unit_bytes
    unpack = _PREFIX.unpack_from
    for seg, path in enumerate(segments):
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            buf, base, limit = b"", 0, -1  # buf holds the file from offset base; a prefix at <= limit is in it
            pos, last, cut_at = 0, size - _PREFIX.size, next_cut - done
            while pos <= last:
                if pos >= cut_at and (seg, pos) != (0, 0):
                    cuts.append((seg, pos))
                    if len(cuts) + 1 >= max_units:
                        return cuts
                    half = half or (halves_from is not None and done + pos >= halves_from)
                    next_cut = done + pos + (unit_bytes // 2 if half else unit_bytes)
                    cut_at = next_cut - done
                if pos > limit:
                    f.seek(pos)
                    buf, base = f.read(max(window, _PREFIX.size)), pos
                    limit = pos + len(buf) - _PREFIX.size
                    if limit < pos:
                        break
                length = unpack(buf, pos - base)[1]
                if length <= 0:
                    break
                pos += _PREFIX.size + length
        done += size
    return cuts


@attrs.frozen(slots=True, repr=False)
class RangeReport:
    """What a phase-1 task found in its range (module rules); ``problem`` set: plan serially."""

    index: int
    net: PackedNet | None  # NetBuilder.packed(): plain values pickle and compose fast
    first: LogBatch | None  # the range's first batch, records dropped
    ended_at: Position | None
    next_offset: int
    epoch: int
    leader: LogBatch | None
    open_transaction: bool
    seconds: float
    problem: str | None = None

    def __repr__(self) -> str:
        state = self.problem or f"{0 if self.net is None else self.net.deltas} deltas"
        return f"RangeReport({self.index}, {state})"


class RangeWatch:
    """Passes the range's batches on, noting the first, the last LeaderChange and transactions."""

    def __init__(self, batches: Iterable[LogBatch]) -> None:
        self.batches = batches
        self.first: LogBatch | None = None
        self.leader: LogBatch | None = None
        self.open = False

    def __iter__(self) -> Iterator[LogBatch]:
        txn = _TXN
        for batch in self.batches:
            if self.first is None:
                self.first = attrs.evolve(batch, records=())
            if batch.control:
                if is_leader_change(batch):
                    self.leader = batch
            else:
                for r in batch.records:
                    opened = txn.get(r.type)
                    if opened is not None:
                        self.open = opened
            yield batch


def _kept(batches: Iterable[LogBatch], into: list[LogBatch | NoOpRun], net: NetBuilder | None) -> Iterator[LogBatch]:
    """The batches, each appended to ``into`` as it passes, except the batches of NoOps only
    outside a transaction after the first: consecutive ones of one epoch and file go into
    ``into`` as one NoOpRun and are not passed on (module rules). Each is a delta of no records
    (deltas.py's fast path), whose whole effect on ``net`` (NetBuilder.add's) is made here."""
    txn = _TXN
    run: NoOpRun | None = None
    opened = False  # a transaction open after the batches passed (RangeWatch's ``open``)
    passed = False
    for batch in batches:
        if passed and not batch.records and batch.noops and not batch.control and not opened:
            if run is not None and batch.epoch == run.epoch and batch.source == run.source:
                run.add(batch)
            else:
                run = NoOpRun.of(batch)
                into.append(run)
            if net is not None:  # net.add((), batch.last_offset, batch.epoch), inline
                net.deltas += 1
                net.offset, net.epoch = batch.last_offset, batch.epoch
            continue
        run = None
        passed = True
        into.append(batch)
        for r in batch.records:
            now = txn.get(r.type)
            if now is not None:
                opened = now
        yield batch


def range_report(source: HistorySource, index: int, begin: Position, stop: Position | None,
                 history: History | None = None, kept: list[LogBatch | NoOpRun] | None = None,
                 net: bool = True) -> RangeReport:
    """Phase 1 of one range: read it, fold its deltas into a net effect (never raises on input).
    ``history``: ``source`` already opened (its ``stats`` count the read); ``kept``: a list the
    batches read are appended to (spark/onepass.py replays them); ``net`` False: no net effect
    (the report's ``net`` is None), only a record type of ``SERIAL_TYPES`` is refused as the
    builder refuses it (the one pass's last range: spark/onepass.py's rules)."""
    began = time.monotonic()
    if history is None:
        history = source.open()
    reader = history.reader(ReadFrom(*begin), stop)
    builder = NetBuilder()
    watch = RangeWatch(reader if kept is None else _kept(reader, kept, builder if net else None))
    problem = None
    try:
        if net:
            for delta in group_deltas(watch, 1):
                builder.add(delta.records, delta.last_offset, delta.epoch)
        else:
            serial = SERIAL_TYPES
            for delta in group_deltas(watch, 1):
                for r in delta.records:
                    if r.type in serial:
                        raise NotComposable(not_composed(r.type))
    except (CommandError, NotComposable, OSError) as e:  # the serial plan then raises it exactly
        problem = f"{type(e).__name__}: {e}"
    if problem is not None:
        return RangeReport(index, None, None, None, -1, -1, None, False, time.monotonic() - began, problem)
    end = reader.resume()
    expected = reader.offsets.expected if reader.offsets is not None else -1
    return RangeReport(index, builder.packed() if net else None, watch.first, end.at, expected, reader.epochs.epoch,
                       watch.leader, watch.open, time.monotonic() - began)


def continuity_problem(before: RangeReport, report: RangeReport, begin: Position) -> str | None:
    """Why range ``report`` does not go on from ``before`` as one sequential read would, or None."""
    first = report.first
    if before.ended_at != begin:
        return f"range {before.index} ended at {before.ended_at}, not at the next range's start {begin}"
    if before.open_transaction:
        return f"a transaction is open at the end of range {before.index}"
    if first is None:
        return f"range {report.index} holds no batch"
    if first.base_offset != before.next_offset:
        return f"range {report.index} starts at offset {first.base_offset}, not {before.next_offset}"
    if EpochCheck(before.epoch).problem(first) is not None:
        return f"range {report.index}'s first batch fails the epoch check"
    return None


def combine(reports: Iterable[RangeReport], begins: list[Position], planned: float,
            ship: Callable[[Unit, PackedImage], Unit] = _unpacked) -> list[Unit] | str:
    """Each range's unit, starting from the image the earlier ranges' net effects compose to;
    or why the ranges do not compose (module rules). ``ship`` gets each unit (its image left
    empty) and its packed image, and returns what is kept (by default the unit with its image;
    the engine: the image broadcast, so the driver holds one image at a time)."""
    units: list[Unit] = []
    image, leader = pack_image(EMPTY_IMAGE), None
    before: RangeReport | None = None
    for i, report in enumerate(reports):
        if report.problem is not None or report.net is None:
            return f"range {i}: {report.problem}"
        start: ReadFrom | None = None
        if before is not None:
            why = continuity_problem(before, report, begins[i])
            if why is not None:
                return why
            start = ReadFrom(*begins[i], before.next_offset, before.epoch)
        stop = None if i + 1 == len(begins) else ReadFrom(*begins[i + 1], report.next_offset, report.epoch)
        units.append(ship(Unit(i, start, stop, EMPTY_IMAGE, leader, False, planned), image))
        try:
            image = compose(report.net, image)
        except NotComposable as e:
            return f"range {i}: {e}"
        leader = report.leader or leader
        before = report
    return units


@attrs.frozen(slots=True)
class RangePlan:
    """The parallel plan's units (images left out: ``images[i]`` is unit i's, broadcast as
    ``pack_image`` tuples), or why the run is planned serially; and its phases' wall."""

    units: list[Unit] | None
    reason: str | None
    seconds: dict[str, float]
    images: list[Broadcast[PackedImage]] = attrs.field(factory=list)

    def routed(self, sc: SparkContext) -> RDD[Unit]:
        """Unit i in partition i, its image unpacked in the task."""
        assert self.units is not None
        images = self.images
        if not images:
            return sc.parallelize(self.units, len(self.units))
        return sc.parallelize(self.units, len(self.units)).map(
            lambda u: attrs.evolve(u, image=unpack_image(images[u.index].value))
        )

    def release(self) -> None:
        """The images' broadcasts gone, on the executors and on the driver (its temp files)."""
        for image in self.images:
            image.destroy()


def plan_ranges(sc: SparkContext, source: HistorySource, history: History, coalesce: int, unit_bytes: int,
                max_units: int) -> RangePlan:
    """The units of the run, planned in parallel where that is exact (module rules)."""
    reason = serial_reason(history, coalesce)
    if reason is not None:
        return RangePlan(None, reason, {})
    clock = time.monotonic()
    begins: list[Position] = [(0, 0), *batch_cuts(history.segments, unit_bytes, max_units)]
    cut = time.monotonic() - clock
    if len(begins) == 1:
        return RangePlan([Unit(0, None, None, EMPTY_IMAGE, None, False)], None, {"plan_cuts": cut})
    from pyspark import StorageLevel

    bounds = [(i, begins[i], begins[i + 1] if i + 1 < len(begins) else None) for i in range(len(begins))]
    # computed in parallel and kept on disk, then read here one at a time: the driver never
    # holds every net effect (at 10M records each names most of the 50,000 partitions)
    reports = sc.parallelize(bounds, len(bounds)).map(lambda b: worker_task(range_report, source, *b))
    reports.persist(StorageLevel.DISK_ONLY)
    images: list[Broadcast[PackedImage]] = []
    try:
        reports.count()
        ranges = time.monotonic() - clock - cut

        def ship(unit: Unit, image: PackedImage) -> Unit:
            images.append(sc.broadcast(image))
            return unit

        units = combine(reports.toLocalIterator(prefetchPartitions=True), begins, 0.0, ship)
    finally:
        reports.unpersist()
    seconds = {"plan_cuts": cut, "plan_ranges": ranges, "plan_combine": time.monotonic() - clock - cut - ranges}
    if isinstance(units, str):
        for image in images:
            image.unpersist()
        return RangePlan(None, units, seconds)
    return RangePlan(units, None, seconds, images)
