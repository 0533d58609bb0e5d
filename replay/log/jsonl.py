"""JSON lines of metadata records: reading them as LogBatch, and writing them from batches.

Rules: one record per line, `{"offset": O, "type": T, "version": V, "data": {...}}` with data in
the JSON shape kafka-dump-log --cluster-metadata-decoder prints (json_convert.py). type is the
record type name (PARTITION_CHANGE_RECORD) or its numeric id; a control record uses its control
name (LEADER_CHANGE, SNAPSHOT_HEADER, ...) or a numeric id with "control": true; its "data" may
be null for a body the source did not show (kafka-dump-log prints LEADER_CHANGE by name only):
such a record is counted in ReadStats.unprinted but not kept, since its content (the
leader id) is unknown; its batch is still a control batch. Optional keys
describe the batch: "batch" (its base offset), "epoch" (partitionLeaderEpoch), "timestamp" (ms).
Consecutive lines with the same "batch" form one batch; a line without "batch" is a batch of its
own. Missing epoch / timestamp read as -1. NO_OP_RECORD lines are counted on their batch, like
binary NoOps. Offsets must increase. Blank lines are ignored. A line over MAX_LINE_BYTES is an error
(it is read in pieces, never held whole). Errors name the file and line.
Every number is checked against the range of the field it stands for in a record batch
(LINE_FIELDS: offsets and timestamps are int64, the epoch is the int32 partitionLeaderEpoch,
the version an int16), and the record's own fields against their schema types (json_convert),
so a value no Kafka log can hold is a line error naming the field, never an OverflowError later.
Strings are bounded as Kafka bounds them (json_convert.MAX_STRING_BYTES; a topic name by
NAME_LIMITS). Messages quote at most a short prefix of a bad value (json_convert.quoted).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import IO, Any

import attrs

from ..schema.json_convert import JsonRecordError, from_json, quoted, to_json
from ..schema.record_classes import CONTROL_VERSION, control_class, record_class
from .errors import ReadStats, ReplayInputError, stats_for
from .records import (
    CONTROL_TYPE_IDS,
    CONTROL_TYPE_NAMES,
    NO_OP_RECORD,
    RECORD_TYPE_IDS,
    RECORD_TYPE_NAMES,
    TOPIC_RECORD,
    ControlRecord,
    LogBatch,
    MetadataRecord,
)
from .segments import count_batch

MAX_LINE_BYTES = 64 << 20  # a line is one record: far above any real one (cf. segments.MAX_BATCH_BYTES)

INT16 = (-(1 << 15), (1 << 15) - 1)
INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)
OFFSET = (0, INT64[1])

# The batch-describing keys of a line: (range, what it is in a record batch v2).
LINE_FIELDS: dict[str, tuple[tuple[int, int], str]] = {
    "offset": (OFFSET, "a non-negative int64 record offset"),
    "batch": (OFFSET, "a non-negative int64 base offset"),
    "epoch": (INT32, "an int32 partitionLeaderEpoch"),
    "timestamp": (INT64, "an int64 timestamp in ms"),
    "version": (INT16, "an int16 record version"),
}

# Kafka's bounds on names that are tighter than MAX_STRING_BYTES: (record type, field) ->
# (limit in characters, where Kafka sets it). A TopicRecord is only written for a topic whose
# name passed Topic.validate (CreateTopics in ReplicationControlManager), which refuses a name
# longer than Topic.MAX_NAME_LENGTH = 249 (clients/.../common/internals/Topic.java).
NAME_LIMITS: dict[tuple[int, str], tuple[int, str]] = {
    (TOPIC_RECORD, "name"): (249, "Kafka's Topic.MAX_NAME_LENGTH, checked by Topic.validate when a topic is created"),
}


def checked_number(key: str, value: Any, name: str | None = None) -> int:
    """value as the LINE_FIELDS field key, or LineError naming the field (as the input calls it:
    name, default key), its range and the value."""
    (lo, hi), what = LINE_FIELDS[key]
    if type(value) is not int or not lo <= value <= hi:
        raise LineError(f'"{name or key}" must be {what} ({lo}..{hi}), not {quoted(value)}')
    return int(value)


def numbered_lines(fh: IO[bytes]) -> Iterator[tuple[int, bytes | None]]:
    """(line number from 1, raw line) of a binary file, reading at most MAX_LINE_BYTES of a line:
    a longer one is consumed in pieces and given as None, so a file without newlines costs no memory."""
    limit = MAX_LINE_BYTES
    number = 0
    while raw := fh.readline(limit + 1):
        number += 1
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield number, raw
            continue
        while (rest := fh.readline(1 << 20)) and not rest.endswith(b"\n"):
            pass
        yield number, None


def too_long() -> LineError:
    return LineError(f"the line is longer than {MAX_LINE_BYTES} bytes: not a metadata record")


class LineError(Exception):
    """A problem with one line of a text input; the reader adds the file and line number."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@attrs.frozen
class UnprintedControl:
    """A control record whose body the input does not show: counted, not kept (module rules)."""

    offset: int
    type: int


Parsed = MetadataRecord | ControlRecord | UnprintedControl | None


def parse_record(type_field: Any, version: Any, data: Any, offset: int, *, control: bool = False) -> Parsed:
    """One record from its JSON parts (shared with the kafka-dump-log reader); None for a NoOp.

    Raises LineError with the reason."""
    version = checked_number("version", version)
    if isinstance(type_field, str):
        if type_field in CONTROL_TYPE_IDS:
            control, type_id = True, CONTROL_TYPE_IDS[type_field]
        elif type_field in RECORD_TYPE_IDS:
            type_id = RECORD_TYPE_IDS[type_field]
        else:
            raise LineError(f"unknown record type {quoted(type_field)}")
    elif type(type_field) is int:
        type_id = type_field
    else:
        raise LineError(f'"type" must be a record type name or id, not {quoted(type_field)}')
    if control:
        cls = control_class(type_id)
        if cls is None:
            raise LineError(f"unknown control record type {quoted(type_field)}")
        if version != CONTROL_VERSION:
            raise LineError(f"control records are read at version {CONTROL_VERSION}, not {version}")
        if data is None:  # a body the source did not show (kafka-dump-log's LEADER_CHANGE)
            return UnprintedControl(offset, type_id)
    else:
        cls = record_class(type_id)
        if cls is None:
            raise LineError(f"unknown metadata record type {quoted(type_field)}")
        if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
            raise LineError(
                f"unknown version {version} of {RECORD_TYPE_NAMES[type_id]} (versions {cls.MESSAGE.valid_versions})"
            )
        if type_id == NO_OP_RECORD:
            return None
    try:
        obj = from_json(cls, data, version, "data")
    except JsonRecordError as e:
        raise LineError(
            f"{CONTROL_TYPE_NAMES.get(type_id) if control else RECORD_TYPE_NAMES[type_id]}: {e}"
        ) from None
    if not control:
        _check_names(type_id, obj)
    return ControlRecord(offset, type_id, obj) if control else MetadataRecord(offset, type_id, version, obj)


def _check_names(type_id: int, obj: Any) -> None:
    for (limited, field), (limit, source) in NAME_LIMITS.items():
        value = getattr(obj, field, None) if limited == type_id else None
        if isinstance(value, str) and len(value) > limit:
            raise LineError(
                f"{RECORD_TYPE_NAMES[type_id]}: data.{field}: a name of {len(value):,} characters "
                f"({quoted(value)}); at most {limit} ({source})"
            )


class BatchBuilder:
    """Collects records line by line into LogBatch values (shared with the kafka-dump-log reader)."""

    def __init__(self, source: str, stats: ReadStats) -> None:
        self.source = source
        self.stats = stats
        self.last_offset = -1
        self._reset(None, -1, -1, 0)

    def _reset(self, key: object, epoch: int, timestamp: int, line: int) -> None:
        self.key = key
        self.epoch = epoch
        self.timestamp = timestamp
        self.line = line
        self.base = -1
        self.control: bool | None = None
        self.records: list[MetadataRecord] = []
        self.controls: list[ControlRecord] = []
        self.noops = 0
        self.unprinted: list[int] = []

    def check_offset(self, value: Any) -> int:
        offset = checked_number("offset", value)
        if offset <= self.last_offset:
            raise LineError(f"offset {offset} is not after the previous record's offset {self.last_offset}")
        return offset

    def starts_new(self, key: object) -> bool:
        return key is None or key != self.key

    def flush(self) -> LogBatch | None:
        if self.control is None:
            return None
        batch = LogBatch(
            self.base,
            self.last_offset,
            self.epoch,
            self.timestamp,
            self.control,
            tuple(self.records),
            tuple(self.controls),
            self.noops,
            self.source,
            self.line,
        )
        count_batch(self.stats, batch)
        self.stats.unprinted.update(CONTROL_TYPE_NAMES[t] for t in self.unprinted)
        self.control = None
        return batch

    def begin(self, key: object, epoch: int, timestamp: int, line: int) -> LogBatch | None:
        done = self.flush()
        self._reset(key, epoch, timestamp, line)
        return done

    def add(self, offset: int, record: Parsed) -> None:
        is_control = isinstance(record, ControlRecord | UnprintedControl)
        if self.control is None:
            self.control = is_control
        if self.base < 0:
            self.base = offset
        if self.control != is_control:
            raise LineError("a batch holds either control records or data records, not both")
        self.last_offset = offset
        if record is None:
            self.noops += 1
        elif isinstance(record, ControlRecord):
            self.controls.append(record)
        elif isinstance(record, UnprintedControl):
            self.unprinted.append(record.type)
        else:
            self.records.append(record)


def _int_or(doc: dict[str, Any], key: str, default: int) -> int:
    return checked_number(key, doc.get(key, default))


def read_jsonl(
    path: str | os.PathLike[str], *, skip_corrupt: bool = False, stats: ReadStats | None = None
) -> Iterator[LogBatch]:
    """The batches of a JSON-lines file, in file order (see the module rules)."""
    src = os.fspath(path)
    stats = stats_for(skip_corrupt, stats)
    builder = BatchBuilder(f"<jsonl:{src}>", stats)
    with open(src, "rb") as fh:
        for number, raw in numbered_lines(fh):
            try:
                if raw is None:
                    raise too_long()
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise LineError(f"invalid UTF-8 at column {e.start + 1}") from None
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                except json.JSONDecodeError as e:
                    raise LineError(f"invalid JSON: {e.msg} at column {e.colno}") from None
                except (ValueError, RecursionError) as e:  # a number too long, nesting too deep
                    raise LineError(f"invalid JSON: {type(e).__name__}: {str(e)[:80]}") from None
                if not isinstance(doc, dict):
                    raise LineError(f"expected a JSON object, got {type(doc).__name__}")
                missing = [k for k in ("offset", "type", "version", "data") if k not in doc]
                if missing:
                    raise LineError(f"missing {', '.join(repr(k) for k in missing)}")
                offset = builder.check_offset(doc["offset"])
                control = doc.get("control", False)
                if type(control) is not bool:
                    raise LineError(f'"control" must be true or false, not {quoted(control)}')
                record = parse_record(doc["type"], doc["version"], doc["data"], offset, control=control)
                key = doc.get("batch")
                if key is not None:
                    checked_number("batch", key)
                epoch, timestamp = _int_or(doc, "epoch", -1), _int_or(doc, "timestamp", -1)
                if builder.starts_new(key):
                    done = builder.begin(key, epoch, timestamp, number)
                    if done is not None:
                        yield done
                builder.add(offset, record)
            except LineError as e:
                stats.skip_or_raise(ReplayInputError(src, number, e.reason, unit="line"), skip_corrupt)
    done = builder.flush()
    if done is not None:
        yield done


def batch_lines(batch: LogBatch) -> Iterator[str]:
    """The JSON lines of one batch, NoOps included at the offsets no kept record has (a control
    batch without kept records has no line)."""
    tail = f',"batch":{batch.base_offset},"epoch":{batch.epoch},"timestamp":{batch.timestamp}}}'
    if batch.control:
        for c in batch.control_records:
            data = json.dumps(to_json(c.data, CONTROL_VERSION), separators=(",", ":"))
            yield f'{{"offset":{c.offset},"type":"{CONTROL_TYPE_NAMES[c.type]}","version":0,"data":{data}{tail}'
        return
    noop = '"type":"NO_OP_RECORD","version":0,"data":{}'
    records = iter(batch.records)
    nxt = next(records, None)
    for offset in range(batch.base_offset, batch.last_offset + 1):
        if nxt is not None and nxt.offset == offset:
            data = json.dumps(to_json(nxt.data, nxt.version), separators=(",", ":"))
            yield f'{{"offset":{offset},"type":"{RECORD_TYPE_NAMES[nxt.type]}","version":{nxt.version},"data":{data}{tail}'
            nxt = next(records, None)
        else:
            yield f'{{"offset":{offset},{noop}{tail}'


def write_jsonl(batches: Iterable[LogBatch], out: IO[str]) -> int:
    """Write batches as JSON lines (the inverse of read_jsonl); returns the number of lines.

    NoOps are written as NO_OP_RECORD lines at the offsets of the batch that no record holds,
    so reading the lines back gives equal batches (every offset of a KRaft batch is a record)."""
    n = 0
    for batch in batches:
        for line in batch_lines(batch):
            out.write(line)
            out.write("\n")
            n += 1
    return n
