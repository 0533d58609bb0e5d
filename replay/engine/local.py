"""The sequential replay engine: one process folds the image and runs the real batch per delta.

Rules:
- With a snapshot, the replay starts from its image and takes the image path (its "delta" is
  the snapshot's last contained offset, end offset - 1; its timestamp the header's
  lastContainedLogTimestamp); then every delta of the log after it, in offset order. The
  snapshot is folded over the empty image, so Kafka's finishSnapshot (whatever the snapshot
  does not hold is removed) has nothing to remove.
- Each delivered request becomes a row (rows.expand_rows or rows.expand_columns) in send order; ``seq`` counts per
  broker from 0 over the whole replay, and is the frame's correlation id. Dropped requests
  are counted per API, not rowed.
- A record the replay refuses (MetadataReplayError) is named by the file and byte offset (or
  line) of its batch, as input errors are (errors.BatchTrail).
- The engine skeleton (engine.EngineRun) and the row maker (rows.expand_columns) are the ones the
  Spark engine's units use: this module only chains them over the whole history.
- Rows are produced lazily (an iterator): memory stays flat in the log size (and the C heap
  does not fragment with it: common.tuning.fixed_mmap_threshold). The summary is
  complete once the rows are exhausted; ``ReplayResult.image`` is then the final image.
- The cyclic collector runs rarely while the rows are produced (common.tuning.rare_collections).
- Rows come as dicts (``rows``) or as column chunks (``columns``, what the Parquet writer takes:
  no dict per row); a result is consumed one way, once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import attrs

from ..image.image import EMPTY_IMAGE, MetadataImage
from ..log.sources import History
from ..propagate.propagator import ReplayOptions
from ..rows.rows import NO_FRAMES, REQUEST_SCHEMA, expand_columns, expand_rows
from ..rows.summary import ReplaySummary
from .skeleton import EngineRun, snapshot_image

__all__ = ["ReplayResult", "replay_local", "snapshot_image"]


class _Progress(Protocol):
    def advance(self, n: int = 1) -> None: ...


@attrs.define(repr=False)
class ReplayResult:
    """Rows (an iterator, consumed once) and the summary they fill as they are consumed; or the
    same rows as column chunks (``columns``): take one of the two."""

    rows: Iterator[dict[str, Any]]
    summary: ReplaySummary
    image: MetadataImage = EMPTY_IMAGE
    columns: Iterator[dict[str, list[Any]]] = attrs.field(factory=lambda: iter(()))

    def __repr__(self) -> str:
        return f"ReplayResult({self.summary!r})"

    def drain(self) -> list[dict[str, Any]]:
        """All the rows (for tests and small logs)."""
        return list(self.rows)


def replay_local(
    history: History,
    options: ReplayOptions,
    *,
    coalesce: int = 1,
    progress: _Progress | None = None,
    with_frames: bool = False,
) -> ReplayResult:
    """Replay a sources.History sequentially; see the module rules."""
    if with_frames and options.digest == "none":
        raise ValueError(NO_FRAMES)
    run = EngineRun(history, options, coalesce, None if progress is None else progress.advance)
    result = ReplayResult(iter(()), run.summary)

    def rows() -> Iterator[dict[str, Any]]:
        groups = run.groups(history.batches(), from_snapshot=history.snapshot is not None)
        yield from expand_rows(groups, {}, with_frames)
        result.image = run.image

    def columns() -> Iterator[dict[str, list[Any]]]:
        groups = run.groups(history.batches(), from_snapshot=history.snapshot is not None)
        yield from expand_columns(groups, {}, with_frames, REQUEST_SCHEMA.names)
        result.image = run.image

    result.rows = rows()
    result.columns = columns()
    return result
