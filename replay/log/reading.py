"""The one reading loop of a history's log: both engines read their batches only through it.

Rules of this module:
- A read covers a byte range of the segments: it starts at a ``ReadFrom`` (segment index, byte
  position, and the state of the checks there: the offset the next batch must start at and the
  KRaft epoch in office) and stops before a ``stop`` position, or at the end of the log. The
  whole log is ``ReadFrom()`` to None; a Spark unit is one range, and ``LogReader.resume()``
  after a batch is the ReadFrom at which a later read goes on exactly as this one would.
- Every batch read is checked, in this order (kafka-metadata-log-format.md section 4):
  1. dense offsets (binary logs): a batch starts where the one before it ended; a gap or an
     overlap names the batch. With skip_corrupt a batch that starts before the offset expected (a
     repeated or overlapping batch) is skipped whole and reported with its span, never applied
     again; a gap is one counted entry (the batch after it is applied: nothing was skipped),
     unless a corrupt batch skipped just before already explains it;
  2. epochs: the partitionLeaderEpoch never goes down along the log, and a new epoch begins with
     a LeaderChange control batch (KafkaRaftClient appends one when a leader takes office)
     wherever the retained log shows the change, that is after the first batch read. The epoch
     lies outside the CRC, so a violation is the only sign of a flipped one: an error naming the
     batch, or with skip_corrupt the batch is skipped and its span reported. Text inputs check
     only what they show: an epoch below 0 is unknown (a JSON line may omit it), and any control
     batch may open an epoch (kafka-dump-log does not print a LeaderChange's body).
- File names are checked against the offsets inside: a segment read from its start must begin
  with a batch at the base offset its 20-digit name gives (unless a corrupt batch was skipped
  before it), and a log read to its end must reach the snapshot's end offset (``snapshot``: the
  file naming it). A lie is an error naming the file, even with skip_corrupt: the names decide
  the order of the segments and where the history starts, so nothing after them can be trusted.
- Then batches are trimmed to the history's start offset (a snapshot's end: earlier records are
  dropped, a batch ending before it is not yielded) and counted in ``stats``: its counters hold
  what was yielded; ``stats.corrupt`` everything skipped, read or not yielded.
- Hot path: each check's usual case (the next offset, the same epoch, past the start offset) is
  tested inline and the check itself runs only otherwise; ``resume()`` uses the size the segment
  reader saw when it began (what it reads to) rather than a stat per call, since the Spark
  planner asks after every delta. A batch of NoOps only (half of a log's batches) that passes
  the inline checks is counted inline too (count_batch's two counters, without its call).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Literal

import attrs

from .errors import ReadStats, ReplayInputError
from .records import LEADER_CHANGE, LogBatch
from .segments import RecordForm, SegmentReader, count_batch

__all__ = ["LogReader", "OffsetCheck", "EpochCheck", "Position", "ReadFrom", "text_batches", "trim_batch"]

Kind = Literal["log", "checkpoint", "jsonl", "dump"]
TEXT_KINDS: tuple[Kind, ...] = ("jsonl", "dump")
Position = tuple[int, int]  # (segment index, byte position in that segment)
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")


@attrs.frozen(slots=True)
class ReadFrom:
    """Where a read starts and the checks' state there: ``next_offset`` is the offset the next
    batch must start at and ``epoch`` the epoch in office (-1 for both: nothing read before)."""

    segment: int = 0
    position: int = 0
    next_offset: int = -1
    epoch: int = -1

    @property
    def at(self) -> Position:
        return (self.segment, self.position)


class OffsetCheck:
    """Binary logs have dense offsets (every offset is a record): a batch must start where the
    one before it ended. A gap or overlap is an error naming the batch; with skip_corrupt an
    overlapping batch is skipped (``see`` returns False) and reported, a gap is one counted entry
    unless a corrupt batch skipped just before already explains it (module rules, check 1)."""

    __slots__ = ("corrupt", "expected", "skip_corrupt", "stats")

    def __init__(self, stats: ReadStats, skip_corrupt: bool, expected: int = -1) -> None:
        self.stats = stats
        self.skip_corrupt = skip_corrupt
        self.expected = expected
        self.corrupt = stats.corrupt_count

    def see(self, batch: LogBatch, span: tuple[int, int] | None = None) -> bool:
        """Check a batch whose base offset is not the one expected; False: skip it (span: its bytes)."""
        stats = self.stats
        if self.expected >= 0 and batch.base_offset < self.expected:
            err = ReplayInputError(
                batch.source, batch.position,
                f"offsets go backwards: the batch starts at {batch.base_offset}, {self.expected} was expected "
                "(a repeated batch, or a segment that overlaps)",
            )
            stats.skip_or_raise(err, self.skip_corrupt, span=span)
            self.corrupt = stats.corrupt_count
            return False
        if self.expected >= 0 and batch.base_offset != self.expected:
            err = ReplayInputError(batch.source, batch.position,
                                   f"offsets skip {self.expected}..{batch.base_offset - 1}: a segment overlaps or is missing")
            if not self.skip_corrupt:
                raise err
            if stats.corrupt_count == self.corrupt:
                stats.skip_or_raise(err, True)
        self.expected, self.corrupt = batch.last_offset + 1, stats.corrupt_count
        return True


def _opens_epoch(batch: LogBatch, text: bool) -> bool:
    """A batch that may begin a new epoch: a LeaderChange control batch (text: any control batch)."""
    return batch.control and (text or any(c.type == LEADER_CHANGE for c in batch.control_records))


class EpochCheck:
    """Epochs along the log (module rules, check 2). ``epoch`` is the epoch in office: the last
    accepted batch's (-1: none yet). ``problem`` says what is wrong with a batch, or None."""

    __slots__ = ("epoch", "text")

    def __init__(self, epoch: int = -1, *, text: bool = False) -> None:
        self.epoch = epoch
        self.text = text

    def problem(self, batch: LogBatch) -> str | None:
        e = batch.epoch
        if e < 0:
            return None if self.text else f"batch epoch {e} is negative (KRaft epochs start at 0)"
        office = self.epoch
        if office >= 0:
            if e < office:
                return f"batch epoch {e} is below the epoch {office} before it: epochs never go down along the log"
            if e > office and not _opens_epoch(batch, self.text):
                return (
                    f"epoch {e} begins without a LeaderChange control batch (the epoch before it: {office}); "
                    "a batch's partitionLeaderEpoch is not covered by its CRC"
                )
        self.epoch = e
        return None


def trim_batch(batch: LogBatch, start_offset: int) -> LogBatch | None:
    """The part of a batch at or after start_offset (a snapshot's end): None if it ends before,
    the batch itself if it starts at or after, else a copy without the earlier records (its NoOps
    recounted: every offset of a data batch is a record)."""
    if batch.last_offset < start_offset:
        return None
    if batch.base_offset >= start_offset:
        return batch
    kept = tuple(r for r in batch.records if r.offset >= start_offset)
    return attrs.evolve(
        batch,
        records=kept,
        control_records=tuple(c for c in batch.control_records if c.offset >= start_offset),
        noops=0 if batch.control else batch.last_offset - start_offset + 1 - len(kept),
    )


def text_batches(path: str, kind: Kind, skip_corrupt: bool, stats: ReadStats) -> Iterator[LogBatch]:
    """The batches of a text input (JSON lines or kafka-dump-log output), counted in stats."""
    if kind == "jsonl":
        from .jsonl import read_jsonl

        return read_jsonl(path, skip_corrupt=skip_corrupt, stats=stats)
    from .dumplog import read_dump

    return read_dump(path, skip_corrupt=skip_corrupt, stats=stats)


class LogReader:
    """The batches of a history's log in [begin, stop), read, checked, trimmed and counted as the
    module rules say. ``source`` and ``kind`` are the history's; ``segments`` its .log files in
    offset order (none for text inputs, which are read whole from source)."""

    __slots__ = ("_at", "_segment", "begin", "epochs", "form", "kind", "offsets", "segments", "skip_corrupt",
                 "snapshot", "source", "start_offset", "stats", "stop")

    def __init__(
        self,
        *,
        source: str,
        kind: Kind,
        segments: list[str],
        start_offset: int,
        stats: ReadStats,
        skip_corrupt: bool = False,
        begin: ReadFrom | None = None,
        stop: Position | None = None,
        snapshot: str | None = None,
        form: RecordForm | None = None,
    ) -> None:
        self.form = form  # binary inputs' data records' form (segments.RecordForm; None: decoded)
        self.source, self.kind, self.segments, self.snapshot = source, kind, segments, snapshot
        self.start_offset, self.stats, self.skip_corrupt = start_offset, stats, skip_corrupt
        self.begin = ReadFrom() if begin is None else begin
        self.stop = stop
        self.offsets = OffsetCheck(stats, skip_corrupt, self.begin.next_offset) if kind == "log" else None
        self.epochs = EpochCheck(self.begin.epoch, text=kind in TEXT_KINDS)
        self._at: SegmentReader | None = None
        self._segment = self.begin.segment

    def __repr__(self) -> str:
        return f"LogReader({self.source!r}, {self.kind}, {self.begin} .. {self.stop})"

    def resume(self) -> ReadFrom:
        """Where a read that goes on after the last batch yielded starts (the next segment's start
        when that batch ended its file), with the checks' state there."""
        segment, reader = self._segment, self._at
        position = self.begin.position if reader is None else reader.end
        expected = self.offsets.expected if self.offsets is not None else -1
        if reader is not None and segment + 1 < len(self.segments):
            # The size the reader saw when it began, not a stat per call (the planner asks after
            # every delta): it read to there.
            size = reader.size if reader.size >= 0 else os.path.getsize(reader.source)
            if position >= size:
                segment, position = segment + 1, 0
        return ReadFrom(segment, position, expected, self.epochs.epoch)

    def _read(self) -> Iterator[LogBatch]:
        if self.kind in TEXT_KINDS:
            seen = ReadStats(corrupt=self.stats.corrupt, unprinted=self.stats.unprinted)
            yield from text_batches(self.source, self.kind, self.skip_corrupt, seen)
            return
        for i, pos, end in self.ranges():
            self._segment = i
            self._at = SegmentReader(
                self.segments[i], skip_corrupt=self.skip_corrupt, stats=self.stats, start=pos, stop=end, count=False,
                form=self.form,
            )
            if pos != 0 or self.named_base(i) is None:
                yield from self._at
                continue
            it, before = iter(self._at), self.stats.corrupt_count
            first = next(it, None)
            if first is not None:
                self.check_segment_start(i, first, before)
                yield first
            yield from it
        if self.stop is None:
            self.check_end()

    def ranges(self) -> Iterator[tuple[int, int, int | None]]:
        """(segment index, start, stop or None: its end) of each segment the read covers."""
        begin, stop = self.begin, self.stop
        last = stop[0] if stop is not None else len(self.segments) - 1
        for i in range(begin.segment, last + 1):
            pos = begin.position if i == begin.segment else 0
            end = stop[1] if stop is not None and i == stop[0] else None
            if end is None or end > pos:
                yield i, pos, end

    def named_base(self, segment: int) -> int | None:
        """The base offset the 20-digit name of segment gives (None: not so named)."""
        named = _SEGMENT_NAME.match(os.path.basename(self.segments[segment]))
        return None if named is None else int(named.group(1))

    def check_segment_start(self, segment: int, first: LogBatch, corrupt_before: int) -> None:
        """The first batch read of a segment read from its start (corrupt_before: the skipped
        count when its reading began) must start at the offset its name gives (module rules)."""
        base = self.named_base(segment)
        if base is not None and first.base_offset != base and self.stats.corrupt_count == corrupt_before:
            raise ReplayInputError(
                self.segments[segment], first.position,
                f"the file name says the segment starts at offset {base}, but its first batch starts at "
                f"{first.base_offset}: the name does not match the segment",
            )

    def check_end(self) -> None:
        """A log read to its end must reach the snapshot's end offset (module rules)."""
        if self.snapshot is not None and self.offsets is not None:
            reached = self.offsets.expected
            if 0 <= reached < self.start_offset:
                raise ReplayInputError(
                    self.snapshot, 0,
                    f"the snapshot's name says it ends at offset {self.start_offset}, but the log ends at offset "
                    f"{reached}: the name does not match the log",
                )

    def __iter__(self) -> Iterator[LogBatch]:
        offsets, epochs, stats, start = self.offsets, self.epochs, self.stats, self.start_offset
        for batch in self._read():
            # Each check's usual case inline (module rules), the checks themselves otherwise (admit).
            if offsets is not None and batch.base_offset == offsets.expected:
                e = batch.epoch
                if e >= 0 and e == epochs.epoch and batch.base_offset >= start:
                    offsets.expected, offsets.corrupt = batch.last_offset + 1, stats.corrupt.total  # corrupt_count, no call
                    if batch.records or batch.control:
                        count_batch(stats, batch)
                    else:  # NoOps only (half of a log's batches): count_batch's two counts, without its call
                        stats.batches += 1
                        stats.noops += batch.noops
                    yield batch
                    continue
            admitted = self.admit(batch, self._span(batch))
            if admitted is not None:
                count_batch(stats, admitted)
                yield admitted

    def admit(self, batch: LogBatch, span: tuple[int, int] | None) -> LogBatch | None:
        """A batch read (span: its bytes, binary inputs) through the checks and the trim of the
        module rules: the batch to yield, or None (skipped, or before the start offset). Raises
        what the checks raise."""
        offsets, epochs, stats = self.offsets, self.epochs, self.stats
        if offsets is not None:
            if batch.base_offset == offsets.expected:
                offsets.expected, offsets.corrupt = batch.last_offset + 1, stats.corrupt.total  # corrupt_count, no call
            elif not offsets.see(batch, span):
                return None
        e = batch.epoch
        if e < 0 or e != epochs.epoch:
            problem = epochs.problem(batch)
            if problem is not None:
                stats.skip_or_raise(_located(batch, problem, epochs.text), self.skip_corrupt, span=span)
                return None
        if batch.base_offset < self.start_offset:
            return trim_batch(batch, self.start_offset)
        return batch

    def _span(self, batch: LogBatch) -> tuple[int, int] | None:
        """The bytes of the batch just read (binary inputs), for a skipped batch's report."""
        if self._at is None or self.kind in TEXT_KINDS:
            return None
        return (batch.position, self._at.end - batch.position)


def _located(batch: LogBatch, reason: str, text: bool) -> ReplayInputError:
    """An error at a batch: its file and byte offset, or for text input ("<jsonl:PATH>") its line."""
    if not text:
        return ReplayInputError(batch.source, batch.position, reason)
    source = batch.source
    if source.startswith("<") and source.endswith(">"):
        source = source[1:-1].partition(":")[2]
    return ReplayInputError(source, batch.position, reason, unit="line")
