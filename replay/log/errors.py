"""Errors and counters of reading a metadata history.

Rules: every problem with the input is a ReplayInputError naming the file, where in it (a byte
offset for binary input, a line for text input) and why. With skip_corrupt the reader records
the same facts as a Corrupt value in ReadStats instead of raising: nothing is dropped silently
(so skipping needs the caller's ReadStats: stats_for).
Both survive pickling (the Spark engine ships them between processes).
- What was skipped is kept bounded (SkippedLog): every skip is counted, by kind (its reason with
  digits masked, at most KINDS_KEPT kinds, the rest under one key), with the input it dropped
  (bytes, lines); only the first CORRUPT_KEPT (100) are kept in full. So four million bad lines
  cost a few counters, not gigabytes, and the summary stays a few kilobytes.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, Literal

import attrs

from ctrlbatch.common import CommandError

Unit = Literal["byte", "line"]


def where(source: str, position: int, unit: Unit) -> str:
    """'<file>, byte offset 123' or '<file>, line 7': how errors and reports name a place."""
    return f"{source}, {'byte offset' if unit == 'byte' else 'line'} {position}"


class BatchTrail:
    """Where the last batches read came from (a bounded window: the batches of the delta being
    replayed), so that a record the replay refuses is named by file and byte offset (or line)
    like an input error. One tuple per batch: small next to decoding the batch."""

    __slots__ = ("_recent", "unit")

    def __init__(self, unit: Unit, size: int = 4096) -> None:
        self._recent: deque[tuple[int, int, str, int]] = deque(maxlen=size)
        self.unit: Unit = unit

    def see(self, batch: Any) -> None:
        self._recent.append((batch.base_offset, batch.last_offset, batch.source, batch.position))

    def appender(self) -> Callable[[tuple[int, int, str, int]], None]:
        """The window's append, for a loop that makes see()'s (base_offset, last_offset, source,
        position) tuple itself: no Python call per batch (engine/skeleton.py's counted)."""
        return self._recent.append

    def where(self, offset: int | None) -> str | None:
        """'<file>, byte offset N (the batch of offsets a-b)' for the batch holding offset, or
        None when it has left the window (the caller then names the input as a whole)."""
        if offset is None:
            return None
        for base, last, source, position in reversed(self._recent):
            if base <= offset <= last:
                if source.startswith("<") and source.endswith(">"):  # a text input's batch: "<jsonl:PATH>"
                    source = source[1:-1].partition(":")[2]
                return f"{where(source, position, self.unit)} (the batch of offsets {base}-{last})"
        return None


class ReplayInputError(CommandError):
    """Input that cannot be read as a metadata history: file, byte offset or line, reason."""

    def __init__(self, source: str, position: int, reason: str, *, unit: Unit = "byte") -> None:
        self.source = source
        self.position = position
        self.reason = reason
        self.unit: Unit = unit
        super().__init__(f"{where(source, position, unit)}: {reason}")

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (self.source, self.position, self.reason, self.unit))

    def as_corrupt(self, span: tuple[int, int] | None = None) -> Corrupt:
        """This error as a skipped piece; span: (first byte, length) of the input dropped for it."""
        return Corrupt(self.source, self.position, self.unit, self.reason, span)


def _rebuild(source: str, position: int, reason: str, unit: Unit) -> ReplayInputError:
    return ReplayInputError(source, position, reason, unit=unit)


@attrs.frozen
class Corrupt:
    """One problem with the input that skip_corrupt counted instead of raising, and why.

    span is (first, length) of the input dropped for it, in the unit of position: bytes of binary
    input (a batch, or the rest of a file after a bad length or a truncation), lines of text
    input. None when nothing was dropped for it (an offset gap names input that is missing, not
    skipped) or the reader does not say."""

    source: str
    position: int
    unit: Unit
    reason: str
    span: tuple[int, int] | None = None

    def __str__(self) -> str:
        text = f"{where(self.source, self.position, self.unit)}: {self.reason}"
        if self.span is None:
            return text
        start, length = self.span
        noun = ("byte" if self.unit == "byte" else "line") + ("" if length == 1 else "s")
        at = "" if start == self.position else f" from {'byte offset' if self.unit == 'byte' else 'line'} {start}"
        return f"{text} (skipped {length:,} {noun}{at})"


CORRUPT_KEPT = 100
"""Skipped pieces kept in full (the first ones); the rest are counted (module rules)."""
KINDS_KEPT = 100
_OTHER_KINDS = "(other reasons)"
_DIGITS = re.compile(r"\d+")


class SkippedLog(list[Corrupt]):
    """The first CORRUPT_KEPT skipped pieces (a list), and counters over all of them: ``total``,
    ``kinds`` (reason with digits masked -> count), ``bytes`` and ``lines`` dropped."""

    def __init__(self, items: list[Corrupt] | None = None) -> None:
        super().__init__()
        self.total = 0
        self.kinds: Counter[str] = Counter()
        self.bytes = 0
        self.lines = 0
        for c in items or ():
            self.add(c)

    def _kind(self, kind: str, n: int = 1) -> None:
        if kind not in self.kinds and len(self.kinds) >= KINDS_KEPT:
            kind = _OTHER_KINDS
        self.kinds[kind] += n

    def add(self, c: Corrupt) -> None:
        self.total += 1
        self._kind(_DIGITS.sub("#", c.reason)[:120])
        self._dropped(c.unit, c.span, 1)
        if len(self) < CORRUPT_KEPT:
            self.append(c)

    def _dropped(self, unit: Unit, span: tuple[int, int] | None, sign: int) -> None:
        if span is not None:
            if unit == "byte":
                self.bytes += sign * span[1]
            else:
                self.lines += sign * span[1]

    def amend(self, index: int, span: tuple[int, int]) -> None:
        """The piece counted index-th (0-based) dropped span after all (a dump batch's lines)."""
        if index < len(self):
            old = self[index]
            self._dropped(old.unit, old.span, -1)
            self._dropped(old.unit, span, 1)
            self[index] = attrs.evolve(old, span=span)

    def merge(self, other: SkippedLog) -> None:
        room = CORRUPT_KEPT - len(self)
        if room > 0:
            self.extend(other[:room])
        self.total += other.total
        self.bytes += other.bytes
        self.lines += other.lines
        for k, n in other.kinds.items():
            self._kind(k, n)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_log, (list(self), self.total, dict(self.kinds), self.bytes, self.lines))

    def summary(self) -> dict[str, object]:
        return {
            "count": self.total,
            "kinds": dict(self.kinds.most_common()),
            "skipped_bytes": self.bytes,
            "skipped_lines": self.lines,
            "listed": len(self),
            "first": [str(c) for c in self],
        }


def _rebuild_log(items: list[Corrupt], total: int, kinds: dict[str, int], nbytes: int, lines: int) -> SkippedLog:
    log = SkippedLog()
    log.extend(items)
    log.total, log.kinds, log.bytes, log.lines = total, Counter(kinds), nbytes, lines
    return log


def _skipped_log(value: SkippedLog | list[Corrupt]) -> SkippedLog:
    return value if isinstance(value, SkippedLog) else SkippedLog(value)


def stats_for(skip_corrupt: bool, stats: ReadStats | None) -> ReadStats:
    """The counters a reader fills: skipping corrupt input needs the caller's, or the skipped
    input would be counted where nobody reads it (silently lost)."""
    if stats is None:
        if skip_corrupt:
            raise ValueError("stats: a ReadStats is required with skip_corrupt=True (skipped input is reported there)")
        return ReadStats()
    if not isinstance(stats, ReadStats):
        raise TypeError(f"stats: expected a ReadStats, got {type(stats).__name__}")
    return stats


@attrs.define(repr=False, on_setattr=attrs.setters.NO_OP)
class ReadStats:
    """What a reader saw: batches, data records by type name, NoOps, control records by type
    name, the corrupt input it skipped (only with skip_corrupt), and control records a text input
    named without a body (not kept in any batch). Mergeable across workers.

    No on-setattr hooks: readers bump these counters once per batch, and attrs' converter hook on
    every assignment cost 13% of the decode loop (``corrupt`` is converted in ``__init__`` only;
    nothing assigns it later)."""

    batches: int = 0
    control_batches: int = 0
    records: Counter[str] = attrs.field(factory=Counter)
    noops: int = 0
    control_records: Counter[str] = attrs.field(factory=Counter)
    corrupt: SkippedLog = attrs.field(factory=SkippedLog, converter=_skipped_log)
    """The first CORRUPT_KEPT pieces skipped, with counters over all (SkippedLog)."""
    unprinted: Counter[str] = attrs.field(factory=Counter)
    """Control records a text input names without their body (kafka-dump-log's LEADER_CHANGE)."""

    def __repr__(self) -> str:
        return (
            f"ReadStats(batches={self.batches}, records={sum(self.records.values())}, "
            f"noops={self.noops}, corrupt={self.corrupt.total})"
        )

    def skip_or_raise(
        self, err: ReplayInputError, skip_corrupt: bool, *, span: tuple[int, int] | None = None
    ) -> None:
        """The one rule for corrupt input: raise err, or with skip_corrupt count it here (with
        the span of bytes dropped for it, if any)."""
        if not skip_corrupt:
            raise err from None
        self.corrupt.add(err.as_corrupt(span))

    @property
    def corrupt_count(self) -> int:
        """Pieces skipped, all of them (``corrupt`` lists the first CORRUPT_KEPT)."""
        return self.corrupt.total

    @property
    def skipped_bytes(self) -> int:
        """Bytes of binary input dropped by skip_corrupt, over every span."""
        return self.corrupt.bytes

    def merge(self, other: ReadStats) -> None:
        self.batches += other.batches
        self.control_batches += other.control_batches
        self.records.update(other.records)
        self.noops += other.noops
        self.control_records.update(other.control_records)
        self.corrupt.merge(other.corrupt)
        self.unprinted.update(other.unprinted)

    def to_dict(self) -> dict[str, object]:
        return {
            "batches": self.batches,
            "control_batches": self.control_batches,
            "records": dict(sorted(self.records.items())),
            "noops": self.noops,
            "control_records": dict(sorted(self.control_records.items())),
            "corrupt": [str(c) for c in self.corrupt],
            "corrupt_count": self.corrupt.total,
            "corrupt_kinds": dict(self.corrupt.kinds.most_common()),
            "skipped_bytes": self.skipped_bytes,
            "skipped_lines": self.corrupt.lines,
            "unprinted_control_records": dict(sorted(self.unprinted.items())),
        }
