"""The Spark engine's executor side: one unit replayed, then its rows written.

Rules of this module:
- A unit task reads only its byte range through the one reading loop (``History.reader(begin,
  stop)``, with the checks' state the plan carried) and runs the engine skeleton
  (``engine.EngineRun``) over it, exactly as the sequential engine runs it over the whole log.
  It keeps each request once: an UpdateMetadata body shared by N brokers is one ``SendGroup``
  with its broker list, expanded per broker only when the rows are written.
- What crosses to the driver is typed: every element a unit task yields is a ``UnitChunk`` (a
  unit index and up to ``GROUPS_PER_CHUNK`` groups in send order), and the unit's last chunk,
  only it, carries its ``UnitEnd``: per-broker request counts (tiny), summary, read counters,
  and, when the unit failed, the error as a value (a ReplayInputError or MetadataReplayError
  with the reader's own message). The task itself never fails on bad input, so the driver never
  reads an error out of Spark's text.
- The write task of unit i numbers the rows from the per-broker starting points the driver
  computed (prefix sums of the earlier units' counts), hashes each frame (rows.expand_columns)
  and writes ``part-<i>.parquet`` with pyarrow, so the files read back in send order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import attrs

from ctrlbatch.common import CommandError

from .engine import EngineRun
from .errors import ReadStats
from .propagator import ReplayOptions
from .rows import REQUEST_SCHEMA, SendGroup, expand_columns
from .spark_plan import HistorySource, Unit
from .summary import ReplaySummary

__all__ = ["GROUPS_PER_CHUNK", "UnitChunk", "UnitEnd", "run_unit", "write_unit"]

GROUPS_PER_CHUNK = 1024  # groups per element: fewer, larger pickles between stages


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

    def __repr__(self) -> str:
        failed = f", failed: {self.error}" if self.error is not None else ""
        return f"UnitEnd({self.index}, {sum(self.counts.values()):,} requests{failed})"


@attrs.frozen(slots=True, repr=False)
class UnitChunk:
    """Send groups of one unit in send order; ``end`` is set on the unit's last chunk only."""

    index: int
    groups: tuple[SendGroup, ...]
    end: UnitEnd | None = None

    def __repr__(self) -> str:
        last = ", last" if self.end is not None else ""
        return f"UnitChunk({self.index}, {len(self.groups)} groups{last})"


def run_unit(source: HistorySource, options: ReplayOptions, coalesce: int, unit: Unit) -> Iterator[UnitChunk]:
    """Replay one unit: its groups in chunks, the last chunk carrying the UnitEnd."""
    history = source.open()
    run = EngineRun(history, options, coalesce)
    error = unit.error
    pending: list[SendGroup] = []
    if error is None:
        reader = history.reader(unit.start, None if unit.stop is None else unit.stop.at)
        try:
            for group in run.groups(reader, image=unit.image, from_snapshot=unit.with_snapshot,
                                    leader=unit.leader_batch):
                pending.append(group)
                if len(pending) == GROUPS_PER_CHUNK:
                    yield UnitChunk(unit.index, tuple(pending))
                    pending = []
        except CommandError as e:  # bad input or a refused record, already named by file and offset
            error = e
    end = UnitEnd(unit.index, dict(run.delivered), run.summary, history.stats, unit.planned_after, error)
    yield UnitChunk(unit.index, tuple(pending), end)


def write_unit(index: int, chunks: Iterable[UnitChunk], first_seq: dict[int, int], directory: str,
               with_frames: bool) -> int:
    """Write one unit's rows to ``directory/part-<index>.parquet``; returns the row count."""
    from .output import ParquetRows

    writer = ParquetRows(Path(directory), REQUEST_SCHEMA, name=f"part-{index:05d}.parquet")
    groups = (g for chunk in chunks for g in chunk.groups)
    for columns in expand_columns(groups, dict(first_seq), with_frames, REQUEST_SCHEMA.names):
        writer.write_columns(columns)
    writer.close()
    return writer.count


def first_error(ends: Iterable[UnitEnd]) -> CommandError | None:
    """The error of the earliest failed unit (the first in log order, as the sequential engine
    meets it), or None."""
    failed = sorted((e for e in ends if e.error is not None), key=lambda e: e.index)
    return failed[0].error if failed else None
