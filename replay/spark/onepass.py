"""The parallel plan and the units in one stage: each task reads its byte range once.

Rules of this module (the two-stage plan it stands in for: spark/ranges.py, whose checks and
reports it reuses; issue 26: "read the log once"):
- One task per range (``range_unit``) reads its batches once through the one reading loop and
  keeps them (a unit's input is at most plan.MAX_UNIT_BYTES: about 5x that in objects), folds
  their deltas into a net effect (``ranges.RangeReport``, as ``range_report`` computes it) and
  publishes the report as a file; then it waits for its starting image, and replays the batches
  it kept from that image (``engine.EngineRun``, as spark/unit.py does); its send groups are
  kept in the task (spark/kept_groups.py) when it writes its rows, else spilled as group_spill
  says. Before, the range stage and the unit stage read and decoded every batch
  twice, the driver composed the images while both cores stood idle, and the unit stage began
  only after the slowest range task.
- The driver (``one_pass``) runs the stage's job in a thread and, meanwhile, walks the reports
  in range order as they appear: image 0 is the empty image, image i+1 is image i with report
  i's net effect composed (``net_effect.compose``), and report i must go on from report i-1
  (``ranges.continuity_problem``: where the read ended, offsets, the epoch check of its first
  batch, no transaction open at the cut), exactly the checks of ``ranges.combine``. Image i goes
  to a file, with the last LeaderChange batch before its range, once report i passed them (no
  unit replays a range that does not go on from the one before); it is pickled to a file of its
  own name as soon as it is composed, and renamed then, so only the report's load and checks and
  a rename stand between a report and its unit's start, not the image's pickling (1M-record
  log, local[2], load 2-2.5, noisy: the 8 tasks' waits for their images 2.09 -> 1.71 s of wall in
  all). A pass that ends early removes the image it staged. It needs only reports 0..i,
  from task i itself (published before it waits) and tasks started before it (a stage's tasks
  start in partition order), so no task waits for one that has not started, and the composition
  overlaps the replay.
- The last range's net effect would be composed into no image: its task reads the range, with
  every check of its report (the continuity fields, a reading error, a delta the grouping
  refuses, a record type of net_effect.SERIAL_TYPES, each a problem as before), but builds no net
  effect (``range_report(net=False)``). What only the builder would have refused there is
  replayed from the exact image: a record the fold refuses fails the unit with the error the
  serial plan raises (both the fold's MetadataReplayError, named by the engine's trail:
  engine.skeleton.locate), and a range the fold accepts but the builder does not compose (a
  topic re-created, or touched and removed, in one delta) is replayed in parallel, with the rows
  the serial plan gives. The base-dependent checks (net_effect.compose) never ran on the last
  range. Measured (1M-record log, 8 units, one process): the last task's range 0.50 -> 0.33 s of CPU.
- The exchange directory is the run's scratch directory (group_spill.spill_dir: every executor
  reaches it, since the write tasks write beside it). Files appear under their final names only
  when complete (written under a name of their own, then renamed). Whoever waits for one looks
  every ``POLL`` seconds for the first ``POLL_QUICK`` of its wait, then every ``POLL_SLOW``: the
  driver waits for each report through most of a unit (every 5 ms, its looks cost about 1.5 s of
  CPU over the 10M-record log's pass, on the cores the tasks need). A file is then seen up to
  50 ms after it appears, which delays a task only if it is already waiting for what follows
  (an image staged after its report), by at most that.
- Anything the two-stage plan would plan serially ends the pass: a range's problem, a failed
  check, a net effect that does not compose. The driver writes the ``abort`` file, every task
  still waiting returns None, the stage's results are dropped, and the engine plans serially
  (which raises the exact error where there is one), as before. A task waits at most
  ``WAIT_LIMIT`` seconds for its image (the driver gone, or tasks started out of order on a
  cluster): it then returns None and the run is planned serially too, saying why. A failed task
  (a lost executor) would wait for a retry that may find every slot held by tasks waiting for its
  report: the driver, while a report is late, asks Spark every second whether a task of the
  stage failed, and if so ends the pass the same way.
- With ``WriteTo`` (the engine's runs) a task also writes its unit's rows (spark/write.py's
  ``write_rows``, into the directory it names), from the groups it kept, never pickled
  (kept_groups: why): it publishes its per-broker counts, waits for
  the counts of every unit before it (published by tasks started before it, as the reports are),
  sums them in unit order into its first seq per broker (engine.first_seqs), and writes. The
  write stage after the pass, and the idle cores at its barrier, are gone: the hashing of unit i
  runs while unit i+1 replays (the 1M-record logs, local[2]: see benchmarks' figures in the
  commit). A unit that failed writes nothing (the driver raises its error); its counts are
  published all the same, so no later task waits for them.
- Only for a binary log read from its start (``ranges.serial_reason``) and a run that writes rows
  (the exchange directory is the spill directory); the other runs plan as before.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from ctrlbatch.common import CommandError, os_error_line
from ctrlbatch.common.tuning import worker_task

from ..engine.skeleton import EngineRun
from ..image.image import EMPTY_IMAGE
from ..image.net_effect import NotComposable, compose
from ..image.packed_image import PackedImage, pack_image, unpack_image
from ..log.reading import Position
from ..log.records import LogBatch, NoOpRun
from ..propagate.propagator import ReplayOptions
from .group_spill import spill_path, write_groups
from .kept_groups import KeptGroups
from .ranges import RangeReport, continuity_problem, range_report
from .source import HistorySource
from .unit import UnitEnd
from .write import write_rows

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["ABORT", "WAIT_LIMIT", "OnePass", "WriteTo", "one_pass", "range_unit"]

WAIT_LIMIT = 1800.0  # seconds a task waits for its image (module rules)
POLL = 0.005  # seconds between two looks for a file, for the first POLL_QUICK seconds of a wait
POLL_QUICK = 0.25  # seconds of a wait polled every POLL (module rules)
POLL_SLOW = 0.05  # seconds between two looks after them (module rules: a long wait polls 10x less)
FAILURE_EVERY = 1.0  # seconds between two questions of the driver to Spark: did a task fail?
ABORT = "abort"


def _pause(since: float) -> None:
    """Sleep before the next look for a file, in a wait that began at ``since`` (monotonic)."""
    time.sleep(POLL if time.monotonic() - since < POLL_QUICK else POLL_SLOW)


def _report_path(exchange: str, index: int) -> str:
    return os.path.join(exchange, f"range-{index:05d}.report")


def _image_path(exchange: str, index: int) -> str:
    return os.path.join(exchange, f"image-{index:05d}.image")


def _stage(path: str, value: object) -> str:
    """``value`` pickled beside ``path`` under a name of its own; renamed to ``path``, it is published."""
    partial = f"{path}.{uuid.uuid4().hex}.partial"
    try:
        with open(partial, "wb") as f:
            pickle.dump(value, f, protocol=5)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return partial


def _publish(path: str, value: object) -> None:
    """``value`` pickled to ``path``, which appears only complete (module rules)."""
    partial = _stage(path, value)
    try:
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def _load(path: str) -> Any:
    with open(path, "rb") as f:
        return pickle.load(f)  # noqa: S301 - only this job's tasks and driver write these files


def _counts_path(exchange: str, index: int) -> str:
    return os.path.join(exchange, f"counts-{index:05d}.counts")


def _wait_counts(exchange: str, index: int, limit: float) -> dict[int, int] | None:
    """Unit ``index``'s first seq per broker: the counts of units 0..index-1 summed in unit order
    (engine.first_seqs), each read once its file appears; None: aborted, or ``limit`` passed."""
    abort = os.path.join(exchange, ABORT)
    began = time.monotonic()
    deadline = began + limit
    running: Counter[int] = Counter()
    for i in range(index):
        path = _counts_path(exchange, i)
        while not os.path.exists(path):
            if os.path.exists(abort) or not os.path.isdir(exchange) or time.monotonic() > deadline:
                return None
            _pause(began)
        running.update(_load(path))
    return dict(running)


@attrs.frozen(slots=True)
class WriteTo:
    """Where the one pass writes each unit's rows (spark/write.py's ``write_rows`` arguments)."""

    directory: str
    with_frames: bool
    digest: str


def _wait_image(exchange: str, index: int, limit: float) -> tuple[PackedImage, LogBatch | None] | None:
    """The unit's packed image and leader batch, or None: the pass was aborted, or ``limit`` passed."""
    path, abort = _image_path(exchange, index), os.path.join(exchange, ABORT)
    began = time.monotonic()
    deadline = began + limit
    while True:
        if os.path.exists(path):
            image, leader = _load(path)
            return image, leader
        if os.path.exists(abort) or not os.path.isdir(exchange) or time.monotonic() > deadline:
            return None
        _pause(began)


def _drained(batches: list[LogBatch | NoOpRun]) -> Iterator[LogBatch | NoOpRun]:
    """The kept batches, each dropped from the list as the replay takes it: the groups the task
    keeps (kept_groups) grow while the batches go, so the peak is not their sum (a 58 MB unit,
    the 1M-record log: 613 -> 523 MiB with 64 KiB bodies kept in the file)."""
    for i in range(len(batches)):
        batch = batches[i]
        batches[i] = None  # type: ignore[call-overload]
        yield batch


def range_unit(
    source: HistorySource, options: ReplayOptions, index: int, begin: Position, stop: Position | None,
    exchange: str, limit: float = WAIT_LIMIT, write: WriteTo | None = None,
) -> UnitEnd | None:
    """Range ``index`` read once: its report published, then its unit replayed from the image
    the driver composed, and with ``write`` its rows written (module rules). None: the pass was
    aborted (plan serially)."""
    began = time.monotonic()
    try:
        history = source.open()
    except CommandError as e:  # the input changed under the run (the driver opened it)
        _publish(_report_path(exchange, index),
                 RangeReport(index, None, None, None, -1, -1, None, False, time.monotonic() - began, str(e)))
        return None
    batches: list[LogBatch | NoOpRun] = []  # NoOp-only batches as runs (ranges._kept)
    report = range_report(source, index, begin, stop, history, batches, net=stop is not None)  # the last: no net
    _publish(_report_path(exchange, index), report)
    if report.problem is not None:
        return None
    got = _wait_image(exchange, index, limit)
    if got is None:
        return None
    image, leader = got
    run = EngineRun(history, options, 1)
    kept = None if write is None else KeptGroups(exchange, index)
    groups = run.groups(batches if kept is None else _drained(batches), image=unpack_image(image), leader=leader, runs=True)
    del image, got
    try:
        error: CommandError | None = None
        try:
            if kept is None:
                write_groups(spill_path(exchange, index), groups)
            else:
                kept.keep(groups)
        except CommandError as e:  # a refused record, already named by file and offset
            error = e
        except OSError as e:  # the spill file or the kept bodies' file (disk full, ...)
            error = CommandError(os_error_line(e))
        counts = dict(run.delivered)
        replayed = UnitEnd(index, counts, run.summary, history.stats, 0.0, error)
        if write is None or kept is None:  # the same test twice: kept is None exactly when write is (for mypy)
            return replayed
        del run, groups, batches  # the replay's state and the kept batches: not held while the rows are written
        _publish(_counts_path(exchange, index), counts)
        first = _wait_counts(exchange, index, limit)
        if first is None:
            return None
        written = None if error is not None else write_rows(
            index, kept, first, write.directory, write.with_frames, write.digest
        )
        return attrs.evolve(replayed, written=written)
    finally:
        if kept is not None:
            kept.close()


@attrs.frozen(slots=True)
class OnePass:
    """The pass's unit ends (None: planned serially, ``reason`` says why) and its wall: "replay",
    or "plan_ranges" when it ended in a serial plan (the time it cost before that plan)."""

    ends: list[UnitEnd] | None
    reason: str | None
    seconds: dict[str, float]


class _Job(threading.Thread):
    """The stage's job (collect), run beside the driver's composition; ``failed()``: a task of
    it failed (and waits for its retry, which may find no free slot: module rules)."""

    def __init__(self, run: Any, failed: Callable[[], bool] = lambda: False) -> None:
        super().__init__(name="ctrlbatch-one-pass", daemon=True)
        self._run = run
        self.failed = failed
        self.result: list[UnitEnd | None] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self._run()
        except BaseException as e:  # noqa: BLE001 - handed to the driver's thread, which raises it
            self.error = e


def _compose_images(exchange: str, count: int, begins: list[Position], job: _Job) -> str | None:
    """Publish image 0..count-1 as the reports arrive (module rules): image i once report i
    is checked against report i-1, so no unit replays a range that does not go on from the one
    before it; the reason to plan serially, or None."""
    image, leader = pack_image(EMPTY_IMAGE), None
    before: RangeReport | None = None
    staged: str | None = _stage(_image_path(exchange, 0), (image, leader))  # published once report 0 checks out
    try:
        for i in range(count):
            path = _report_path(exchange, i)
            began = asked = time.monotonic()
            while not os.path.exists(path):
                if not job.is_alive():
                    if os.path.exists(path):
                        break
                    return f"range {i}: no report (its task waited too long or failed)"
                if time.monotonic() - asked >= FAILURE_EVERY:
                    asked = time.monotonic()
                    if job.failed():
                        return f"range {i}: no report yet and a task failed (its retry may find every slot waiting)"
                _pause(began)
            report: RangeReport = _load(path)
            if report.problem is not None or (report.net is None and i + 1 < count):
                return f"range {i}: {report.problem}"
            if before is not None:
                why = continuity_problem(before, report, begins[i])
                if why is not None:
                    return why
            assert staged is not None
            os.replace(staged, _image_path(exchange, i))
            staged = None
            if i + 1 < count:
                assert report.net is not None  # only the last range's is None
                try:
                    image = compose(report.net, image)
                except NotComposable as e:
                    return f"range {i}: {e}"
                leader = report.leader or leader
                staged = _stage(_image_path(exchange, i + 1), (image, leader))
            before = report
        return None
    finally:
        if staged is not None:
            with contextlib.suppress(OSError):
                os.unlink(staged)


def one_pass(sc: SparkContext, source: HistorySource, options: ReplayOptions, begins: list[Position],
             exchange: str, write: WriteTo | None = None) -> OnePass:
    """Every range read once, planned and replayed in one stage, with ``write`` its rows written
    there too (module rules)."""
    clock = time.monotonic()
    count = len(begins)
    bounds = [(i, begins[i], begins[i + 1] if i + 1 < count else None) for i in range(count)]
    rdd = sc.parallelize(bounds, count).map(
        lambda b: worker_task(range_unit, source, options, b[0], b[1], b[2], exchange, WAIT_LIMIT, write)
    )
    tracker = sc.statusTracker()

    def failed() -> bool:  # this driver runs one job at a time: the active stages are the pass's
        infos = (tracker.getStageInfo(stage) for stage in tracker.getActiveStageIds())
        return any(info is not None and info.numFailedTasks > 0 for info in infos)

    job = _Job(rdd.collect, failed)
    job.start()
    try:
        reason = _compose_images(exchange, count, begins, job)
    except BaseException:  # the tasks still waiting end at once (the caller stops the job)
        with contextlib.suppress(OSError):
            _publish(os.path.join(exchange, ABORT), None)
        raise
    if reason is not None:
        _publish(os.path.join(exchange, ABORT), None)
    job.join()
    if job.error is not None:
        raise job.error
    took = time.monotonic() - clock
    assert job.result is not None
    if reason is None and any(end is None for end in job.result):
        reason = "a range task ended without its unit"
    if reason is not None:  # the pass counts as the planning it was, before the serial plan
        return OnePass(None, reason, {"plan_ranges": took})
    return OnePass([end for end in job.result if end is not None], None, {"replay": took})
