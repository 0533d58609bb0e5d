"""The sequential replay engine: one process folds the image and runs the real batch per delta.

Rules:
- With a snapshot, the replay starts from its image and takes the image path (its "delta" is
  the snapshot's last contained offset, end offset - 1; its timestamp the header's
  lastContainedLogTimestamp); then every delta of the log after it, in offset order. The
  snapshot is folded over the empty image, so Kafka's finishSnapshot (whatever the snapshot
  does not hold is removed) has nothing to remove.
- Each delivered request becomes a row (rows.request_row) in send order; ``seq`` counts per
  broker from 0 over the whole replay, and is the frame's correlation id. Dropped requests
  are counted per API, not rowed.
- A record the replay refuses (MetadataReplayError) is named by the file and byte offset (or
  line) of its batch, as input errors are (errors.BatchTrail).
- Rows are produced lazily (an iterator): memory stays flat in the log size. The summary is
  complete once the rows are exhausted; ``ReplayResult.image`` is then the final image.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import attrs

from .deltas import Delta, group_deltas
from .errors import BatchTrail
from .image import EMPTY_IMAGE, MetadataImage, MetadataReplayError, apply_delta
from .propagator import ReplayOptions, Send, propagate_delta, propagate_image
from .records import SNAPSHOT_HEADER
from .rows import request_row
from .summary import ReplaySummary

__all__ = ["ReplayResult", "replay_local", "snapshot_image"]


class _Progress(Protocol):
    def advance(self, n: int = 1) -> None: ...


@attrs.define(repr=False)
class ReplayResult:
    """Rows (an iterator, consumed once) and the summary they fill as they are consumed."""

    rows: Iterator[dict[str, Any]]
    summary: ReplaySummary
    image: MetadataImage = EMPTY_IMAGE

    def __repr__(self) -> str:
        return f"ReplayResult({self.summary!r})"

    def drain(self) -> list[dict[str, Any]]:
        """All the rows (for tests and small logs)."""
        return list(self.rows)


def snapshot_image(batches: Iterable[Any], *, end_offset: int, epoch: int) -> tuple[MetadataImage, int, list[Any]]:
    """The image a snapshot's batches hold, its lastContainedLogTimestamp (0 if absent), and the batches."""
    kept = list(batches)
    timestamp = 0
    records = []
    for b in kept:
        if b.control:
            for c in b.control_records:
                if c.type == SNAPSHOT_HEADER:
                    timestamp = int(getattr(c.data, "last_contained_log_timestamp", 0))
        else:
            records.extend(b.records)
    image, _ = apply_delta(EMPTY_IMAGE, records, offset=end_offset - 1, epoch=epoch)
    return image, timestamp, kept


class _Rows:
    """Turns sends into rows, keeping the per-broker sequence numbers and the counters."""

    def __init__(self, summary: ReplaySummary, with_frames: bool) -> None:
        self.summary = summary
        self.with_frames = with_frames
        self.seq: dict[int, int] = {}

    def rows(self, delta: Delta, sends: list[Send]) -> list[dict[str, Any]]:
        out = []
        for send in sends:
            if send.dropped:
                self.summary.count_dropped(send.request.api_key)
                continue
            seq = self.seq.get(send.broker, 0)
            self.seq[send.broker] = seq + 1
            row = request_row(delta, send, seq, self.with_frames)
            self.summary.count_row(row)
            out.append(row)
        self.summary.count_delta(len(out))
        return out


def replay_local(
    history: Any,
    options: ReplayOptions,
    *,
    coalesce: int = 1,
    progress: _Progress | None = None,
    with_frames: bool = False,
) -> ReplayResult:
    """Replay a sources.History sequentially; see the module rules."""
    if not isinstance(options, ReplayOptions):
        raise TypeError(f"options: expected ReplayOptions, got {type(options).__name__}")
    if not isinstance(coalesce, int) or isinstance(coalesce, bool) or coalesce < 1:
        raise ValueError(f"coalesce: expected an integer >= 1, got {coalesce!r}")
    summary = ReplaySummary()
    result = ReplayResult(iter(()), summary)
    trail = BatchTrail("line" if getattr(history, "kind", "log") in ("jsonl", "dump") else "byte")

    def counted(batches: Iterable[Any]) -> Iterator[Any]:
        for b in batches:
            trail.see(b)
            summary.count_batch(b)
            if progress is not None:
                progress.advance(1)
            yield b

    def run() -> Iterator[dict[str, Any]]:
        rows = _Rows(summary, with_frames)
        image = EMPTY_IMAGE
        snapshot = history.snapshot
        if snapshot is not None:
            image, timestamp, _ = snapshot_image(
                counted(history.snapshot_batches()), end_offset=snapshot.end_offset, epoch=snapshot.epoch
            )
            start = Delta(image.offset, timestamp, image.epoch, (), None, 0)
            yield from rows.rows(start, propagate_image(image, options))
        for delta in group_deltas(counted(history.batches()), coalesce):
            image, sends = propagate_delta(image, delta, options)
            yield from rows.rows(delta, sends)
        result.image = image

    def guarded() -> Iterator[dict[str, Any]]:
        try:
            yield from run()
        except MetadataReplayError as e:
            raise e.with_source(trail.where(e.offset) or str(history.source)) from None

    result.rows = guarded()
    return result
