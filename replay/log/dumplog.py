"""kafka-dump-log --cluster-metadata-decoder text output, read as LogBatch values.

Rules (kafka-metadata-log-format.md section 1.2): a batch line (`baseOffset: B lastOffset: L
count: C ... partitionLeaderEpoch: E ... isControl: X ... CreateTime: T ... isvalid: V`) starts a
batch; the record lines after it (`| offset: O ... payload: {"type","version","data"}`, or
` payload: ...` under --skip-record-metadata, where offsets count up from B) are its records.
Control records print as `controlType: NAME(id)` (LEADER_CHANGE: the body is not printed, so
the record is counted in ReadStats.unprinted but not kept, see jsonl.UnprintedControl) or `SnapshotHeader
{json}` / `SnapshotFooter` / `KRaftVersion` / `KRaftVoters`; under --skip-record-metadata their
lines are empty, so such a control batch has no control_records. `Dumping`, `Log
starting offset`, `Snapshot end offset` and `KRaft bootstrap snapshot` lines are headers. An
invalid batch (isvalid: false), a record Kafka could not decode (`Error at ..., skipping.`), a
batch whose record count differs from `count:`, `Found N invalid bytes` and any other line are
errors naming the file and line (so is a line over jsonl.MAX_LINE_BYTES, never held whole); with
skip_corrupt they are counted, each with the lines it drops (a bad batch is dropped whole: its
entry's span runs from its batch line to the next batch line or the end).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator

import attrs

from ..schema.json_convert import from_json, quoted
from ..schema.record_classes import CONTROL_VERSION, control_class
from .errors import ReadStats, ReplayInputError, stats_for
from .jsonl import (
    BatchBuilder,
    LineError,
    Parsed,
    UnprintedControl,
    checked_number,
    numbered_lines,
    parse_record,
    too_long,
)
from .records import CONTROL_TYPE_IDS, ControlRecord, LogBatch

_HEADERS = ("Dumping ", "Log starting offset:", "KRaft bootstrap snapshot")
_SNAPSHOT = re.compile(r"^Snapshot end offset: (\d+), epoch: (\d+)\s*$")
_RECORD_OFFSET = re.compile(r"^\| offset: (\d+) ")
_CONTROL_TYPE = re.compile(r" controlType: ([A-Z_]+)\((-?\d+)\)\s*$")
# kafka-dump-log's renderings of control records with a printed body (DLS:317-328).
_CONTROL_RENDERINGS = {
    "SnapshotHeader": "SNAPSHOT_HEADER",
    "SnapshotFooter": "SNAPSHOT_FOOTER",
    "KRaftVersion": "KRAFT_VERSION",
    "KRaftVoters": "KRAFT_VOTERS",
}
_CONTROL_BODY = re.compile(r" (SnapshotHeader|SnapshotFooter|KRaftVersion|KRaftVoters) (\{.*\})\s*$")


def snapshot_header(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(end offset, epoch) if the dump is of a <end>-<epoch>.checkpoint snapshot, else None."""
    with open(path, "rb") as fh:
        for _number, raw in numbered_lines(fh):
            if raw is None:
                continue
            line = raw.decode("utf-8", "replace")
            m = _SNAPSHOT.match(line)
            if m:
                return int(m.group(1)), int(m.group(2))
            if line.startswith(("baseOffset:", "|", " payload:")):
                return None
    return None


@attrs.frozen
class _BatchLine:
    base: int
    last: int
    count: int
    epoch: int
    control: bool
    timestamp: int
    valid: bool


def _batch_line(line: str) -> _BatchLine:
    tokens = line.split()
    if len(tokens) % 2:
        raise LineError("a batch line is pairs of 'key: value'")
    fields = {k.rstrip(":"): v for k, v in zip(tokens[::2], tokens[1::2], strict=True)}
    time = fields.get("CreateTime", fields.get("LogAppendTime"))
    try:
        if fields.get("magic", "2") != "2":
            raise LineError(f"record batch magic {quoted(fields['magic'])} is not supported (only v2)")
        if fields.get("compresscodec", "none") != "none":
            raise LineError(
                f"{quoted(fields['compresscodec'])}-compressed batch: KRaft metadata batches are never compressed"
            )
        return _BatchLine(  # the numbers in the ranges of their batch fields, as in JSON lines
            checked_number("offset", int(fields["baseOffset"]), "baseOffset"),
            checked_number("offset", int(fields["lastOffset"]), "lastOffset"),
            int(fields["count"]),
            checked_number("epoch", int(fields["partitionLeaderEpoch"]), "partitionLeaderEpoch"),
            _bool(fields["isControl"]),
            checked_number("timestamp", int(time), "CreateTime") if time is not None else -1,
            _bool(fields.get("isvalid", "true")),
        )
    except KeyError as e:
        raise LineError(f"the batch line has no {quoted(e.args[0])[1:-1]}:") from None
    except ValueError as e:
        raise LineError(f"bad number in the batch line ({e})") from None


def _bool(text: str) -> bool:
    if text not in ("true", "false"):
        raise LineError(f"expected true or false, got {quoted(text)}")
    return text == "true"


def _record(line: str, offset: int) -> Parsed:
    """The record of a record line (a MetadataRecord, ControlRecord, or None for a NoOp)."""
    head, sep, payload = line.partition(" payload: ")
    if sep:
        if payload.startswith("Error at "):
            raise LineError(f"kafka-dump-log could not decode this record: {quoted(payload.strip())[1:-1]}")
        try:
            doc = json.loads(payload)
        except json.JSONDecodeError as e:
            raise LineError(f"invalid JSON payload: {e.msg} at column {e.colno + len(head) + 10}") from None
        except (ValueError, RecursionError) as e:  # a number too long, nesting too deep
            raise LineError(f"invalid JSON payload: {type(e).__name__}: {str(e)[:80]}") from None
        if not isinstance(doc, dict) or not {"type", "version", "data"} <= doc.keys():
            raise LineError('the payload is not {"type", "version", "data"}')
        return parse_record(doc["type"], doc["version"], doc["data"], offset)
    m = _CONTROL_TYPE.search(line)
    if m:
        name, type_id = m.group(1), int(m.group(2))
        if CONTROL_TYPE_IDS.get(name) != type_id:
            raise LineError(f"unknown control record type {name}({type_id})")
        return UnprintedControl(offset, type_id)
    m = _CONTROL_BODY.search(line)
    if m:
        type_id = CONTROL_TYPE_IDS[_CONTROL_RENDERINGS[m.group(1)]]
        cls = control_class(type_id)
        try:
            data = from_json(cls, json.loads(m.group(2)), CONTROL_VERSION, m.group(1))
        except (ValueError, RecursionError) as e:  # JSONDecodeError and JsonRecordError are ValueErrors
            raise LineError(f"{m.group(1)}: {str(e)[:200]}") from None
        return ControlRecord(offset, type_id, data)
    raise LineError("a record line without a payload or control record")


def read_dump(
    path: str | os.PathLike[str], *, skip_corrupt: bool = False, stats: ReadStats | None = None
) -> Iterator[LogBatch]:
    """The batches of a kafka-dump-log text output, in file order (see the module rules)."""
    src = os.fspath(path)
    stats = stats_for(skip_corrupt, stats)
    builder = BatchBuilder(f"<dump:{src}>", stats)
    head: _BatchLine | None = None
    bad_batch = False
    seen = 0
    batch_at = 0  # the line of the current batch line
    open_bad: tuple[int, int] | None = None  # (corrupt entry, first line) of the bad batch being dropped

    def skipped(reason: str, number: int, lines: tuple[int, int] | None = None) -> None:
        """Report a bad line (or the lines of a dropped batch: first, count) or raise."""
        err = ReplayInputError(src, number, reason, unit="line")
        stats.skip_or_raise(err, skip_corrupt, span=(number, 1) if lines is None else lines)

    def close_bad(end: int) -> None:
        """The dropped batch ends before line end: its entry's span covers all its lines."""
        nonlocal open_bad
        if open_bad is not None:
            index, first = open_bad
            stats.corrupt.amend(index, (first, end - first))
            open_bad = None

    def finish(number: int) -> LogBatch | None:
        """Close the open batch; check its record count against its header."""
        if head is None or bad_batch:
            builder.control = None  # drop what the bad batch collected (it is counted as corrupt)
            builder.begin(None, -1, -1, number)
            return None
        if seen != head.count and not (head.control and seen == 0):  # see the module rules
            raise LineError(f"the batch at line {builder.line} announces {head.count} records, {seen} follow")
        builder.last_offset = max(builder.last_offset, head.last)
        return builder.begin(None, -1, -1, number)

    with open(src, "rb") as fh:
        number = 0
        for number, raw in numbered_lines(fh):  # noqa: B007 - number is used after the loop
            try:
                if raw is None:
                    raise too_long()
                try:
                    line = raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as e:
                    raise LineError(f"invalid UTF-8 at column {e.start + 1}") from None
                if not line.strip() or line.startswith(_HEADERS) or _SNAPSHOT.match(line):
                    continue
                if line.startswith("baseOffset:"):
                    close_bad(number)
                    try:
                        done = finish(number)
                    except LineError as e:  # the previous batch was bad: report it, go on with this one
                        skipped(e.reason, number, (batch_at, number - batch_at))
                        builder.control, done = None, None  # drop the bad batch
                    head, seen, batch_at = None, 0, number
                    bad_batch = True  # until the line parses
                    if done is not None:
                        yield done
                    head = _batch_line(line)
                    if not head.valid:
                        raise LineError(
                            "kafka-dump-log found this batch invalid (isvalid: false, CRC mismatch)"
                        )
                    if head.base <= builder.last_offset:
                        raise LineError(
                            f"batch offset {head.base} is not after the previous offset {builder.last_offset}"
                        )
                    bad_batch = False
                    builder.begin(head.base, head.epoch, head.timestamp, number)
                    builder.control, builder.base = head.control, head.base
                    continue
                if line.startswith("Found ") and "invalid bytes" in line:
                    raise LineError(line.strip())
                if line.startswith(("|", " payload:", "payload:")):
                    if head is None:
                        raise LineError("a record line before any batch line")
                    if bad_batch:
                        continue
                    m = _RECORD_OFFSET.match(line)
                    offset = int(m.group(1)) if m else head.base + seen
                    if not head.base <= offset <= head.last:
                        raise LineError(
                            f"record offset {offset} is outside its batch {head.base}-{head.last}"
                        )
                    record = _record(line, offset)
                    if head.control != isinstance(record, ControlRecord | UnprintedControl):
                        raise LineError(
                            "a control batch holds only control records, a data batch only data records"
                        )
                    builder.check_offset(offset)
                    builder.add(offset, record)
                    seen += 1
                    continue
                raise LineError(f"not a line of kafka-dump-log output: {line[:60]!r}")
            except LineError as e:
                skipped(e.reason, number)
                if head is not None and open_bad is None:  # the rest of this batch is dropped with it
                    open_bad = (stats.corrupt_count - 1, batch_at)
                bad_batch = head is not None
        close_bad(number + 1)
        try:
            done = finish(number + 1)
        except LineError as e:
            skipped(e.reason, number, (batch_at, number + 1 - batch_at))
            done = None
        if done is not None:
            yield done
