"""Opening a metadata history, whatever form it comes in, as one ordered stream of LogBatch.

Rules: the input is recognised by its content, not only its name: a binary batch has magic 2 at
byte 16; JSON lines start with '{'; kafka-dump-log output starts with one of its header lines.
A directory is a `__cluster_metadata-0` directory, or a data directory holding one. Its `.log`
segments are read in base-offset order (the 20-digit names). A snapshot `<end>-<epoch>.checkpoint`
holds the state before offset `end` (exclusive); the history then continues with the log
batches whose last offset is >= end (records before end are dropped from a straddling batch).
Names are checked against what the files hold: a snapshot's batches carry the epoch of its name
(Kafka writes a snapshot at its epoch); segment names and the snapshot's end are checked by the
reading loop (reading.py).
Without a snapshot, a log that does not start at offset 0 is refused: its state is missing; so are
offsets that go backwards or skip (an overlapping or missing segment) unless skip_corrupt.
Every file is checked before it is opened (input_file): only readable regular files are read, so a
FIFO or a device never blocks the reader and a directory named *.log is refused; an OS error names
the path and its reason in one line; an input with no bytes to replay says that it is empty.
This module finds and opens the input; the batches are read by the one reading loop of both
engines (reading.LogReader: its checks, the snapshot trim and the counters).
The KRaft leader in office at a snapshot (``snapshot_leader``) is the last LeaderChange below its
end offset in the retained .log segments, found from batch headers without decoding data batches.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from typing import Literal

import attrs

from ctrlbatch.common import CommandError

from ..schema.metadata_classes import LeaderChangeMessage
from .errors import ReadStats, ReplayInputError, stats_for
from .reading import Kind, LogReader, Position, ReadFrom, trim_batch
from .reading import text_batches as _text_batches
from .records import LEADER_CHANGE, SNAPSHOT_FOOTER, SNAPSHOT_HEADER, LogBatch
from .segments import ATTR_CONTROL, RecordForm, decode_batch, read_segment, scan_batches

__all__ = ["History", "Kind", "Snapshot", "detect_kind", "open_history", "snapshot_leader", "trim_batch"]
METADATA_DIR = "__cluster_metadata-0"
_SEGMENT = re.compile(r"^(\d{20})\.log$")
_CHECKPOINT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_DUMP_STARTS = (
    b"Dumping ",
    b"Log starting offset",
    b"Snapshot end offset",
    b"KRaft bootstrap",
    b"baseOffset:",
)


_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def os_reason(e: OSError) -> str:
    """An OS error's reason as one short line ("Permission denied", "Too many levels of symbolic links")."""
    return e.strerror or errno.errorcode.get(e.errno or 0, type(e).__name__)


def input_file(path: str) -> int:
    """The size of ``path`` if it is a readable regular file, else a one-line CommandError naming it.

    Non-regular files are refused before any open(): opening a FIFO for reading blocks until a
    writer comes, and a device may never end. Readability is checked with a non-blocking open."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise CommandError(f"{path}: {os_reason(e)}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _FILE_KINDS if test(st.st_mode)), "not a regular file")
        raise CommandError(f"{path}: is {kind}, not a regular file: only regular files are read")
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as e:
        raise CommandError(f"{path}: {os_reason(e)}") from None
    return st.st_size


def detect_kind(path: str) -> Kind:
    """What a file holds, from its first bytes (and, for an empty file, its name)."""
    input_file(path)
    with open(path, "rb") as f:
        head = f.read(64)
    if len(head) > 16 and head[16] == 2 and not head.lstrip().startswith((b"{", *_DUMP_STARTS)):
        return "checkpoint" if path.endswith(".checkpoint") else "log"
    stripped = head.lstrip()
    if stripped.startswith(b"{"):
        return "jsonl"
    if stripped.startswith(_DUMP_STARTS):
        return "dump"
    if not head and path.endswith((".log", ".checkpoint")):
        return "checkpoint" if path.endswith(".checkpoint") else "log"
    raise ReplayInputError(
        path,
        0,
        "not a metadata history: expected a record batch v2 file (.log or .checkpoint), JSON lines "
        "or kafka-dump-log output",
    )


@attrs.frozen
class Snapshot:
    """A KRaft snapshot file: the state of everything before end_offset, written at epoch."""

    path: str
    end_offset: int
    epoch: int

    @classmethod
    def from_path(cls, path: str) -> Snapshot:
        """<end>-<epoch>.checkpoint; bootstrap.checkpoint (or another name) means offset 0, epoch 0."""
        m = _CHECKPOINT.match(os.path.basename(path))
        return cls(path, int(m.group(1)), int(m.group(2))) if m else cls(path, 0, 0)

    def batches(self, *, skip_corrupt: bool = False, stats: ReadStats | None = None) -> Iterator[LogBatch]:
        """The snapshot's batches (header and footer control batches included), offsets from 0.

        A snapshot without its header first or its footer last is incomplete: ReplayInputError."""
        stats = stats_for(skip_corrupt, stats)
        kind = detect_kind(self.path)
        if kind in ("log", "checkpoint"):
            it = read_segment(self.path, skip_corrupt=skip_corrupt, stats=stats)
        else:
            it = _text_batches(self.path, kind, skip_corrupt, stats)
        named = _CHECKPOINT.match(os.path.basename(self.path)) is not None
        last: LogBatch | None = None
        for batch in it:
            if named and batch.epoch >= 0 and batch.epoch != self.epoch:
                raise ReplayInputError(
                    self.path, batch.position,
                    f"the file name says epoch {self.epoch}, but the snapshot's batch has epoch {batch.epoch} "
                    "(a snapshot is written at its epoch): the name does not match the snapshot",
                )
            if last is None and not _has_control(batch, SNAPSHOT_HEADER):
                raise ReplayInputError(
                    self.path, batch.position, "a snapshot starts with a SnapshotHeader control batch"
                )
            last = batch
            yield batch
        if last is None or not _has_control(last, SNAPSHOT_FOOTER):
            size = os.path.getsize(self.path)
            raise ReplayInputError(self.path, size, "the snapshot has no SnapshotFooter: it is incomplete")


def _has_control(batch: LogBatch, type_id: int) -> bool:
    return batch.control and any(c.type == type_id for c in batch.control_records)


@attrs.define(repr=False)
class History:
    """A metadata history: an optional snapshot, then log batches in offset order.

    segments are the .log files (in offset order) that hold offsets at or after the snapshot;
    text inputs have none (their batches come from `source`). stats count the batches the
    iterators yielded (snapshot and log) and every corrupt piece skipped on the way."""

    source: str
    kind: Kind
    snapshot: Snapshot | None
    segments: list[str]
    skip_corrupt: bool = False
    stats: ReadStats = attrs.field(factory=ReadStats)

    def __repr__(self) -> str:
        snap = f", snapshot {self.snapshot.end_offset}" if self.snapshot else ""
        return f"History({self.source!r}, {self.kind}, {len(self.segments)} segments{snap})"

    @property
    def start_offset(self) -> int:
        return self.snapshot.end_offset if self.snapshot else 0

    def snapshot_batches(self) -> Iterator[LogBatch]:
        """The snapshot's batches (nothing without a snapshot); counted in stats."""
        if self.snapshot is not None:
            yield from self.snapshot.batches(skip_corrupt=self.skip_corrupt, stats=self.stats)

    def batches(self) -> Iterator[LogBatch]:
        """The log batches after the snapshot, in offset order, control batches included."""
        return iter(self.reader())

    def reader(
        self, begin: ReadFrom | None = None, stop: Position | None = None, form: RecordForm | None = None
    ) -> LogReader:
        """The one reading loop (reading.LogReader) over the log, or over [begin, stop) of it;
        form: what a binary log's data records' data is (segments.RecordForm; None: decoded)."""
        if self.snapshot is not None and self.snapshot.path == self.source:
            segments: list[str] = []  # the input is the snapshot itself: no log after it
            kind: Kind = "log"
        else:
            segments, kind = self.segments, self.kind
        return LogReader(
            source=self.source, kind=kind, segments=segments, start_offset=self.start_offset,
            stats=self.stats, skip_corrupt=self.skip_corrupt, begin=begin, stop=stop,
            snapshot=self.snapshot.path if self.snapshot is not None else None, form=form,
        )


def _names_in(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError as e:
        raise CommandError(f"{directory}: {os_reason(e)}") from None


def _segments_of(directory: str) -> list[tuple[int, str]]:
    found = [(int(m.group(1)), n) for n in _names_in(directory) if (m := _SEGMENT.match(n))]
    segments = [(base, os.path.join(directory, n)) for base, n in sorted(found)]
    for _base, path in segments:
        input_file(path)
    return segments


def _checkpoints_of(directory: str) -> list[Snapshot]:
    found = [os.path.join(directory, n) for n in _names_in(directory) if _CHECKPOINT.match(n)]
    for path in found:
        input_file(path)
    return sorted((Snapshot.from_path(path) for path in found), key=lambda s: s.end_offset)


def _metadata_dir(path: str) -> str:
    if os.path.basename(os.path.normpath(path)) != METADATA_DIR and os.path.isdir(
        os.path.join(path, METADATA_DIR)
    ):
        return os.path.join(path, METADATA_DIR)
    return path


def open_history(
    path: str | os.PathLike[str],
    *,
    from_snapshot: str | os.PathLike[str] | Literal["newest"] | None = None,
    skip_corrupt: bool = False,
) -> History:
    """Open a history: a __cluster_metadata-0 directory (or the data directory holding one), a
    single .log segment, a .checkpoint snapshot, JSON lines, or kafka-dump-log output.

    from_snapshot: None reads the log from offset 0; "newest" starts from the directory's newest
    <end>-<epoch>.checkpoint; a path starts from that snapshot file."""
    src = os.fspath(path)
    if not os.path.lexists(src):
        raise ReplayInputError(src, 0, "no such file or directory", unit="line")
    try:
        is_dir = stat.S_ISDIR(os.stat(src).st_mode)
    except OSError as e:  # a symlink loop, a dangling link, a directory we may not search
        raise CommandError(f"{src}: {os_reason(e)}") from None
    snapshot = _pick_snapshot(src, from_snapshot)
    if is_dir:
        directory = _metadata_dir(src)
        segments = _segments_of(directory)
        if not segments and snapshot is None:
            raise ReplayInputError(
                directory, 0, "no .log segment in this directory (nor a snapshot to start from)"
            )
        if snapshot is None and not any(os.path.getsize(p) for _b, p in segments):
            raise CommandError(
                f"{directory}: the log is empty: its {len(segments)} .log segment(s) hold 0 bytes, "
                "no record batch to replay"
            )
        history = History(src, "log", snapshot, _after(segments, snapshot), skip_corrupt)
    else:
        if input_file(src) == 0:
            raise CommandError(f"{src}: the file is empty (0 bytes): no record batch to replay")
        kind = detect_kind(src)
        if kind == "checkpoint" and snapshot is None:
            return History(src, kind, Snapshot.from_path(src), [], skip_corrupt)
        if kind == "dump" and snapshot is None:
            from .dumplog import snapshot_header

            head = snapshot_header(src)
            if head is not None:  # the dump of a <end>-<epoch>.checkpoint
                return History(src, kind, Snapshot(src, *head), [], skip_corrupt)
        m = _SEGMENT.match(os.path.basename(src))
        if kind == "log":
            history = History(
                src, kind, snapshot, _after([(int(m.group(1)) if m else 0, src)], snapshot), skip_corrupt
            )
        else:
            history = History(src, kind, snapshot, [], skip_corrupt)
    _check_start(history)
    return history


def _pick_snapshot(src: str, choice: str | os.PathLike[str] | None) -> Snapshot | None:
    if choice is None:
        return None
    if choice != "newest":
        file = os.fspath(choice)
        if not os.path.lexists(file):
            raise ReplayInputError(file, 0, "the snapshot file does not exist")
        input_file(file)
        return Snapshot.from_path(file)
    directory = _metadata_dir(src) if os.path.isdir(src) else os.path.dirname(src) or "."
    snaps = _checkpoints_of(directory)
    if not snaps:
        raise ReplayInputError(directory, 0, "no <end offset>-<epoch>.checkpoint snapshot to start from")
    return snaps[-1]


def _after(segments: list[tuple[int, str]], snapshot: Snapshot | None) -> list[str]:
    """The segments holding offsets >= the snapshot's end: drop those whose successor starts at or before it."""
    if snapshot is None:
        return [p for _b, p in segments]
    end = snapshot.end_offset
    return [p for i, (_b, p) in enumerate(segments) if i + 1 == len(segments) or segments[i + 1][0] > end]


def _check_start(history: History) -> None:
    """Refuse a log that starts after the state it needs (older segments deleted, no snapshot)."""
    if history.kind != "log" or not history.segments:
        return
    m = _SEGMENT.match(os.path.basename(history.segments[0]))
    base = int(m.group(1)) if m else 0
    if base > history.start_offset:
        hint = (
            "start from a snapshot (--from-snapshot)" if history.snapshot is None else "use a newer snapshot"
        )
        raise ReplayInputError(
            history.segments[0],
            0,
            f"the log starts at offset {base} but the history needs offset {history.start_offset} onwards: {hint}",
        )


def snapshot_leader(history: History) -> tuple[int, int] | None:
    """The KRaft leader in office at the history's snapshot: (leader id, offset) of the last
    LeaderChange record below the snapshot's end offset in the retained segments of its
    directory (or of the one .log input), or None without a snapshot or such a record.

    Only control batches are decoded (found from their headers), newest segment first, so a
    long log costs a header scan of the segments below the snapshot until one holds a LeaderChange."""
    snap = history.snapshot
    if snap is None or history.kind != "log" or snap.path == history.source:
        return None
    end = snap.end_offset
    if os.path.isdir(history.source):
        segments = _segments_of(_metadata_dir(history.source))
    else:
        m = _SEGMENT.match(os.path.basename(history.source))
        segments = [(int(m.group(1)) if m else 0, history.source)]
    for _base, path in reversed([(b, p) for b, p in segments if b < end]):
        found: tuple[int, int] | None = None
        with open(path, "rb") as f:
            for ptr in scan_batches(path):
                if ptr.base_offset >= end:
                    break
                f.seek(ptr.position + _ATTRIBUTES_AT)
                if not int.from_bytes(f.read(2), "big") & ATTR_CONTROL:
                    continue
                f.seek(ptr.position)
                batch = decode_batch(f.read(ptr.length), source=path, position=ptr.position)
                for c in batch.control_records:
                    if c.type == LEADER_CHANGE and c.offset < end and isinstance(c.data, LeaderChangeMessage):
                        found = (c.data.leader_id, c.offset)
        if found is not None:
            return found
    return None


_ATTRIBUTES_AT = 21  # baseOffset 8, batchLength 4, partitionLeaderEpoch 4, magic 1, crc 4
