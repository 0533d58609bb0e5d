"""The Spark engine's unit task: one unit replayed (the Data Source API's partition reader).

Rules of this module:
- A unit task reads only its byte range through the one reading loop (``History.reader(begin,
  stop)``, with the checks' state the plan carried) and runs the engine skeleton
  (``engine.EngineRun``) over it, exactly as the sequential engine runs it over the whole log.
  It keeps each request once: an UpdateMetadata body shared by N brokers is one ``SendGroup``
  with its broker list, expanded per broker only when the rows are written.
- The groups stay with the executors: a unit task writes them, in send order, to its own file
  in the run's scratch directory (group_spill: why a file and not Spark's storage, and how a
  retried attempt cannot leave half a file); the write task of the unit reads them back.
- What crosses to the driver is typed and small: each unit task returns one ``UnitEnd``:
  per-broker request counts, summary, read counters, and, when the unit failed, the error as a
  value (a ReplayInputError or MetadataReplayError with the reader's own message). The task
  itself never fails on bad input, so the driver never reads an error out of Spark's text.
- An OS error (the spill file, the input changing under the reader) is an error value too,
  one line naming the path (``common.os_error_line``). The write task is spark/write.py.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from ctrlbatch.common import CommandError, os_error_line

from ..engine.skeleton import EngineRun
from ..log.errors import ReadStats
from ..propagate.propagator import ReplayOptions
from ..rows.summary import ReplaySummary
from .group_spill import spill_path, write_groups
from .plan import Unit
from .source import HistorySource
from .write import WriteEnd

__all__ = ["UnitEnd", "first_error", "run_unit"]


@attrs.frozen(slots=True, repr=False)
class UnitEnd:
    """How a unit ended: its per-broker counts of delivered requests, summary and read counters
    (what it did before any error), the planning task's clock when it was cut, and its error."""

    index: int
    counts: dict[int, int]
    summary: ReplaySummary
    stats: ReadStats
    planned_after: float
    error: CommandError | None = None
    written: WriteEnd | None = None  # the one pass (spark/onepass.py) writes the unit's rows in the same task

    def __repr__(self) -> str:
        failed = f", failed: {self.error}" if self.error is not None else ""
        return f"UnitEnd({self.index}, {sum(self.counts.values()):,} requests{failed})"


def run_unit(source: HistorySource, options: ReplayOptions, coalesce: int, unit: Unit, spill: str | None) -> UnitEnd:
    """Replay one unit; its groups go to ``spill_path(spill, unit.index)`` (kept nowhere without
    ``spill``: a run that writes no rows needs only the counts)."""
    try:
        history = source.open()
    except CommandError as e:  # the input changed under the run (the driver opened it)
        return UnitEnd(unit.index, {}, ReplaySummary(), ReadStats(), unit.planned_after, e)
    run = EngineRun(history, options, coalesce)
    error = unit.error
    if error is None:
        reader = history.reader(unit.start, None if unit.stop is None else unit.stop.at)
        groups = run.groups(reader, image=unit.image, from_snapshot=unit.with_snapshot, leader=unit.leader_batch)
        try:
            if spill is None:
                for _ in groups:
                    pass
            else:
                write_groups(spill_path(spill, unit.index), groups)
        except CommandError as e:  # bad input or a refused record, already named by file and offset
            error = e
        except OSError as e:  # the spill file (disk full, ...) or the input under the reader
            error = CommandError(os_error_line(e))
    return UnitEnd(unit.index, dict(run.delivered), run.summary, history.stats, unit.planned_after, error)


def first_error(ends: Iterable[UnitEnd | WriteEnd]) -> CommandError | None:
    """The error of the earliest failed unit (the first in log order, as the sequential engine
    meets it), or None; for the unit tasks' ends and the write tasks' alike."""
    failed = sorted((e for e in ends if e.error is not None), key=lambda e: e.index)
    return failed[0].error if failed else None
