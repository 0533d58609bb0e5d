"""Binary KRaft log input: record batch v2 in .log segments and .checkpoint snapshots.

Rules (kafka-metadata-log-format.md section 4): a batch is baseOffset int64, batchLength int32,
partitionLeaderEpoch int32, magic int8 (2), crc uint32 = CRC-32C of everything from attributes to
the end (the `crc32c` package), then the 49 bytes after it and the records. Every length is
checked against the bytes that really remain (and a 64 MiB ceiling) before anything is read or
allocated, so a corrupt length never costs memory. A data record's value is a framed metadata record; a control
record's key is int16 version + int16 type and its value the control schema at version 0.
NoOp values (exactly 01 14 00 00) are counted, not decoded. Problems raise ReplayInputError
naming the file and byte offset; with skip_corrupt they are counted in ReadStats instead.

Hot path (benchmarks/read_bench.py: on a generated log of 200,000 records in 102,357 batches, half
of them NoOps, reading + group_deltas went from 18.0x to 9.7x the floor of reading and
CRC-checking every batch, 17.3 to 9.4 us a record):
- Segments are read in 8 MiB chunks and batches decoded in place (offsets into the chunk).
- A batch of one NoOp (the controller's heartbeat, half of a quiet log) is recognised by one set
  lookup of its 11 record bytes and becomes a LogBatch without a record walk.
- A data record whose value has a one-byte frame goes straight to the fast decoder of its
  (type, version) (record_classes.fast_decoder, installed when the first such record is decoded
  through decode_value). If the fast decoder fails, or does not end where the value ends, the
  record is decoded again through decode_value, which raises the error (or gives the value):
  the fast path never decides anything the reference path would decide otherwise
  (tests/replay/test_reading_fast.py: values and errors, random and corrupted batches).
- Batches and records are built by trusted constructors (records.py's rules).
- A reader may ask for another form of a data record's data (``RecordForm``: the records
  table's JSON text, tables/json_fused.py): the form's fast function takes the fast decoder's
  place, and the fallback converts what decode_value gives; nothing else of the reading changes.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

import attrs
import crc32c

from ctrlbatch.requests.errors import DecodeError

from ..schema.record_classes import FastDecoder, decode_control, decode_value, fast_decoder
from .errors import ReadStats, ReplayInputError, stats_for
from .records import (
    CONTROL_TYPE_NAMES,
    NOOP_VALUE,
    RECORD_TYPE_NAMES,
    ControlRecord,
    LogBatch,
    MetadataRecord,
    make_batch,
    make_control,
    make_record,
)

PREFIX = 12  # baseOffset + batchLength
HEADER = 61  # through recordCount
MIN_BATCH_LENGTH = HEADER - PREFIX
MAGIC = 2
ATTR_COMPRESSION = 0x07
ATTR_CONTROL = 0x20
_COMPRESSION = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordCount
_HEADER = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
# The one record of a NoOp batch around its timestampDelta byte: length 10, attributes 0 |
# offsetDelta 0, null key, value length 4, the NoOp value, no headers.
_NOOP_HEAD = b"\x14\x00"
_NOOP_TAIL = b"\x00\x01\x08" + NOOP_VALUE + b"\x00"
_NOOP_RECORDS = frozenset(_NOOP_HEAD + bytes([ts]) + _NOOP_TAIL for ts in range(0x80))  # any one-byte timestampDelta


@attrs.frozen
class BatchPointer:
    """Where one batch is: file, byte position, total length (prefix included) and its offsets."""

    path: str
    position: int
    length: int
    base_offset: int
    last_offset: int


class _Bad(Exception):
    """A problem with a batch: byte offset in the file and reason. resumable: the batch's length
    is sound, so a reader that skips corrupt input can go on with the next batch."""

    def __init__(self, position: int, reason: str, *, resumable: bool = True) -> None:
        super().__init__(reason)
        self.position = position
        self.reason = reason
        self.resumable = resumable


MAX_BATCH_BYTES = 64 << 20  # far above KRaft's 8 MiB (KafkaRaftClient.MAX_BATCH_SIZE_BYTES)


def _check_length(batch_length: int, remaining: int, position: int) -> None:
    if batch_length > MAX_BATCH_BYTES:
        raise _Bad(
            position + 8,
            f"batch length {batch_length} is over {MAX_BATCH_BYTES >> 20} MiB (KRaft batches are at most 8 MiB)",
            resumable=False,
        )
    if batch_length < MIN_BATCH_LENGTH:
        raise _Bad(
            position + 8,
            f"batch length {batch_length} is shorter than a batch header ({MIN_BATCH_LENGTH})",
            resumable=False,
        )
    if batch_length > remaining - PREFIX:
        raise _Bad(
            position,
            f"truncated batch: its header says {batch_length + PREFIX} bytes, only {remaining} remain",
            resumable=False,
        )


def scan_batches(path: str | os.PathLike[str]) -> Iterator[BatchPointer]:
    """The batches of a file from their headers only (no CRC, no records): cheap split points.

    A truncated or impossible header raises ReplayInputError (the rest of the file is unusable)."""
    src = os.fspath(path)
    size = os.path.getsize(src)
    pos = 0
    with open(src, "rb", buffering=1 << 20) as f:
        while pos < size:
            head = f.read(HEADER)
            try:
                if len(head) < PREFIX:
                    raise _Bad(pos, f"truncated batch: {len(head)} bytes left, a batch header needs {HEADER}")
                base, length = _PREFIX.unpack_from(head)
                _check_length(length, size - pos, pos)
            except _Bad as e:
                raise ReplayInputError(src, e.position, e.reason) from None
            (last_delta,) = _LAST_DELTA.unpack_from(head, 23)
            yield BatchPointer(src, pos, length + PREFIX, base, base + last_delta)
            pos += length + PREFIX
            f.seek(pos)


@attrs.frozen
class RecordForm:
    """What a data record's ``data`` is: the decoded object (``DECODED``) or another form made
    from the same bytes (the records table's JSON text: tables/json_fused.py). ``fast`` holds
    the fast function of each (type << 8 | version) met so far, ``make(type_id, version)`` makes
    one ((buf, pos) -> (data, end), None for an unknown type or version) and ``convert(obj,
    version)`` turns the reference path's decoded object into the form. A form's fast function
    must read exactly the bytes the fast decoder reads and raise where it raises (the module
    rules' fallback then decides, as for decoded records)."""

    fast: dict[int, FastDecoder]
    make: Callable[[int, int], FastDecoder | None]
    convert: Callable[[Any, int], Any] | None = None


def decode_batch(buf: bytes, *, source: str, position: int, form: RecordForm | None = None) -> LogBatch:
    """Decode one whole batch (buf holds exactly its bytes), CRC-32C verified.

    position is the batch's byte offset in source, for error messages and LogBatch.position;
    form what data records' data is (None: decoded)."""
    if type(buf) is not bytes:
        if not isinstance(buf, bytes | bytearray | memoryview):
            raise TypeError(f"buf: expected bytes, not {type(buf).__name__}")
        buf = bytes(buf)
    try:
        if len(buf) < HEADER:
            raise _Bad(position, f"truncated batch: {len(buf)} bytes, a batch header needs {HEADER}")
        _, length = _PREFIX.unpack_from(buf)
        _check_length(length, len(buf), position)
        if length + PREFIX != len(buf):
            raise _Bad(position, f"the batch header says {length + PREFIX} bytes but {len(buf)} were given")
        return _decode(buf, 0, len(buf), source, position, form)
    except _Bad as e:
        raise ReplayInputError(source, e.position, e.reason) from None


def _zigzag(buf: bytes, pos: int, end: int, at: int) -> tuple[int, int]:
    """A signed (zig-zag) varint or varlong at pos, at most 10 bytes, not past end."""
    value = shift = 0
    while True:
        if pos >= end:
            raise _Bad(at + end, "the record ends inside a varint")
        if shift > 63:
            raise _Bad(at + pos, "a varint longer than 10 bytes")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7


def _decode(buf: bytes, start: int, end: int, source: str, position: int, form: RecordForm | None = None) -> LogBatch:
    """Decode the batch buf[start:end]; position is the file offset of buf[start]; data records'
    data in form (None: DECODED). Raises _Bad."""
    at = position - start  # file offset of buf[0]
    (base, _length, epoch, magic, crc, attributes, last_delta, _base_ts, max_ts, _pid, _pe, _seq, count) = (
        _HEADER.unpack_from(buf, start)
    )
    if magic != MAGIC:
        raise _Bad(position + 16, f"record batch magic {magic} is not supported (only v2)")
    # A small batch's bytes are copied (cheaper than a memoryview and its slice), a large one's are not.
    actual = crc32c.crc32c(buf[start + 21 : end] if end - start < 4096 else memoryview(buf)[start + 21 : end])
    if actual != crc:
        raise _Bad(position, f"CRC-32C mismatch: the batch says {crc:#010x}, its bytes give {actual:#010x}")
    compression = attributes & ATTR_COMPRESSION
    if compression:
        name = _COMPRESSION.get(compression, str(compression))
        raise _Bad(position + 21, f"{name}-compressed batch: KRaft metadata batches are never compressed")
    if count < 0:
        raise _Bad(position + 57, f"negative record count {count}")
    pos = start + HEADER
    if count == 1 and end - pos == 11 and not attributes & ATTR_CONTROL and buf[pos:end] in _NOOP_RECORDS:
        # a batch of one NoOp, as the controller writes twice a second: nothing to decode
        return make_batch(base, base + last_delta, epoch, max_ts, False, (), (), 1, source, position, end - start)
    control = bool(attributes & ATTR_CONTROL)
    records: list[MetadataRecord] = []
    controls: list[ControlRecord] = []
    fast = _FAST if form is None else form.fast
    noops = 0
    for _ in range(count):
        rec_at = pos
        b = buf[pos] if pos < end else 0x80
        if b < 0x80:  # one-byte length, the usual case
            length, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif pos + 1 < end and buf[pos + 1] < 0x80:  # two bytes: a record of 64 to 8,191 bytes
            v = (b & 0x7F) | (buf[pos + 1] << 7)
            length, pos = (v >> 1) ^ -(v & 1), pos + 2
        else:
            length, pos = _zigzag(buf, pos, end, at)
        rec_end = pos + length
        if length < 0 or rec_end > end:
            raise _Bad(at + rec_at, f"record length {length} runs past the end of the batch")
        # Fast path, the shape of every KRaft data record: one-byte timestampDelta, offsetDelta of
        # one or two bytes, null key, value length of one or two bytes, no headers.
        value_at = -1
        if length >= 6 and buf[pos + 1] < 0x80:
            q = pos + 2
            b = buf[q]
            if b < 0x80:
                delta, q = (b >> 1) ^ -(b & 1), q + 1
            elif buf[q + 1] < 0x80:
                v = (b & 0x7F) | (buf[q + 1] << 7)
                delta, q = (v >> 1) ^ -(v & 1), q + 2
            else:
                q = rec_end
            if q + 2 < rec_end and buf[q] == 1:
                b = buf[q + 1]
                if b < 0x80:
                    value_len, value_at = b >> 1, q + 2
                elif buf[q + 2] < 0x80 and not b & 1:
                    value_len, value_at = ((b & 0x7F) | (buf[q + 2] << 7)) >> 1, q + 3
                if value_at >= 0 and (b & 1 or value_at + value_len != rec_end - 1 or buf[rec_end - 1]):
                    value_at = -1  # negative length, trailing bytes or headers: the general path decides
        if value_at >= 0:
            key_len, key_at, value_end, pos = -1, value_at, rec_end - 1, rec_end
        else:
            pos += 1  # attributes
            _ts, pos = _zigzag(buf, pos, rec_end, at)
            delta, pos = _zigzag(buf, pos, rec_end, at)
            key_len, pos = _zigzag(buf, pos, rec_end, at)
            key_at = pos
            if key_len > 0:
                pos += key_len
                if pos > rec_end:
                    raise _Bad(at + rec_at, f"key length {key_len} runs past the end of its record")
            value_len, pos = _zigzag(buf, pos, rec_end, at)
            value_at = pos
            value_end = pos + value_len
            if key_len < -1 or pos > rec_end or value_len < -1 or value_end > rec_end:
                raise _Bad(at + rec_at, "a key or value length runs past the end of its record")
            headers, pos = _zigzag(buf, max(value_end, value_at), rec_end, at)
            for _h in range(headers):  # each header costs >= 2 bytes: a huge count fails fast
                hk, pos = _zigzag(buf, pos, rec_end, at)
                pos += max(hk, 0)
                hv, pos = _zigzag(buf, pos, rec_end, at)
                pos += max(hv, 0)
            if headers < 0 or pos != rec_end:
                raise _Bad(at + rec_at, f"record of {length} bytes does not end where its fields end")
        offset = base + delta
        if control:
            if key_len != 4:
                raise _Bad(
                    at + key_at, f"control record at offset {offset} has a {key_len}-byte key (expected 4)"
                )
            ctype = (buf[key_at + 2] << 8) | buf[key_at + 3]
            try:
                data = decode_control(ctype, buf, value_at, value_end)
            except DecodeError as e:
                off = at + (e.offset if e.offset is not None else value_at)
                raise _Bad(off, f"control record at offset {offset}: {_describe(e)}") from None
            controls.append(make_control(offset, ctype, data))
        elif value_len == 4 and buf[value_at:value_end] == NOOP_VALUE:
            noops += 1
        else:
            # The fast path (module rules): a one-byte frame whose (type, version) has a decoder.
            dec = fast.get(buf[value_at + 1] << 8 | buf[value_at + 2]) if value_len >= 3 and buf[value_at] == 1 else None
            if dec is not None:
                try:
                    data, stop = dec(buf, value_at + 3)
                except Exception:
                    stop = -1  # decode_value below says what is wrong
                if stop == value_end:
                    records.append(make_record(offset, buf[value_at + 1], buf[value_at + 2], data))
                    continue
            records.append(_generic_record(buf, value_at, value_end, value_len, offset, at, rec_at, form or DECODED))
    if pos != end:
        raise _Bad(at + pos, f"{end - pos} bytes after the batch's {count} records")
    return make_batch(
        base, base + last_delta, epoch, max_ts, control, tuple(records), tuple(controls), noops, source, position,
        end - start,
    )


def _generic_record(
    buf: bytes, value_at: int, value_end: int, value_len: int, offset: int, at: int, rec_at: int, form: RecordForm
) -> MetadataRecord:
    """A data record through decode_value (the reference path): its error, or its value (in
    form), and form's fast function of its (type, version) installed for the records after it."""
    if value_len < 0:
        raise _Bad(at + rec_at, f"record at offset {offset} has a null value")
    try:
        type_id, version, data = decode_value(buf, value_at, value_end)
    except DecodeError as e:
        off = at + (e.offset if e.offset is not None else value_at)
        raise _Bad(off, f"record at offset {offset}: {_describe(e)}") from None
    if type_id < 0x80 and version < 0x80 and (type_id << 8 | version) not in form.fast:
        dec = form.make(type_id, version)
        if dec is not None:
            form.fast[type_id << 8 | version] = dec
    return make_record(offset, type_id, version, data if form.convert is None else form.convert(data, version))


# (type << 8 | version) -> the fast decoder of a data record in a one-byte frame, filled as
# records of each (type, version) are first decoded through decode_value.
_FAST: dict[int, FastDecoder] = {}
DECODED = RecordForm(_FAST, fast_decoder)
"""The usual form: data records' data is the decoded object."""


def _describe(e: DecodeError) -> str:
    """A codec error without its buffer offset (the caller names the file offset instead)."""
    where = f"{e.message} v{e.version}" if e.message and e.version is not None else e.message
    parts = [p for p in (where, f"field {e.field}" if e.field else "") if p]
    return f"{', '.join(parts)}: {e.reason}" if parts else e.reason


def count_batch(stats: ReadStats, batch: LogBatch) -> None:
    """Add one batch to the counters."""
    stats.batches += 1
    if batch.control:
        stats.control_batches += 1
        for c in batch.control_records:
            stats.control_records[CONTROL_TYPE_NAMES.get(c.type) or str(c.type)] += 1
    if batch.noops:
        stats.noops += batch.noops
    if batch.records:
        counts, names = stats.records, RECORD_TYPE_NAMES
        for r in batch.records:
            counts[names.get(r.type) or str(r.type)] += 1


def read_segment(
    path: str | os.PathLike[str],
    *,
    skip_corrupt: bool = False,
    stats: ReadStats | None = None,
    start: int = 0,
    stop: int | None = None,
) -> Iterator[LogBatch]:
    """Every batch of a .log or .checkpoint file (or of bytes start..stop of it, two batch
    boundaries as scan_batches gives them), in file order, counted in stats.

    A batch with a bad CRC or a bad record is skipped and counted when skip_corrupt, the reading
    goes on with the next batch; a truncated or impossible header ends the file (counted too,
    with the size of the remainder dropped)."""
    return iter(SegmentReader(path, skip_corrupt=skip_corrupt, stats=stats, start=start, stop=stop))


class SegmentReader:
    """read_segment as an object: ``end`` is the byte position right after the last batch
    yielded (where a later read of the same file goes on), ``size`` the file's size when the
    reading began (what it reads to). ``count=False`` leaves the batch
    counters alone (a caller that trims batches counts what it keeps); skipped input is always
    reported in stats.corrupt."""

    __slots__ = ("count", "end", "form", "size", "skip_corrupt", "source", "start", "stats", "stop")

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        skip_corrupt: bool = False,
        stats: ReadStats | None = None,
        start: int = 0,
        stop: int | None = None,
        count: bool = True,
        form: RecordForm | None = None,
    ) -> None:
        self.source = os.fspath(path)
        self.form = form
        self.stats = stats_for(skip_corrupt, stats)
        self.skip_corrupt = skip_corrupt
        self.start = start
        self.stop = stop
        self.end = start
        self.count = count
        self.size = -1  # the file's size when the reading began (-1: not begun)

    def __repr__(self) -> str:
        return f"SegmentReader({self.source!r}, bytes {self.start}..{self.stop}, at {self.end})"

    def __iter__(self) -> Iterator[LogBatch]:
        src, stats, skip_corrupt, form = self.source, self.stats, self.skip_corrupt, self.form
        size = self.size = os.path.getsize(src)
        end_at = size if self.stop is None else min(self.stop, size)
        with open(src, "rb") as f:
            f.seek(self.start)
            buf = b""
            base = pos = self.start  # base: the file offset of buf[0]
            while pos < end_at:
                total = 0
                try:
                    i = pos - base
                    if len(buf) - i < PREFIX:
                        buf, base, i = _refill(f, buf, i, pos, PREFIX, end_at)
                    if len(buf) - i < PREFIX:
                        left = len(buf) - i
                        raise _Bad(
                            pos,
                            f"truncated batch: {left} bytes left, a batch header needs {HEADER}",
                            resumable=False,
                        )
                    length = _PREFIX.unpack_from(buf, i)[1]
                    if not MIN_BATCH_LENGTH <= length <= MAX_BATCH_BYTES or length > end_at - pos - PREFIX:
                        _check_length(length, end_at - pos, pos)  # raises
                    total = length + PREFIX
                    if len(buf) - i < total:
                        buf, base, i = _refill(f, buf, i, pos, total, end_at)
                    batch = _decode(buf, i, i + total, src, pos, form)
                except _Bad as e:
                    span = (pos, total) if e.resumable else (pos, end_at - pos)  # the batch, or the rest
                    stats.skip_or_raise(ReplayInputError(src, e.position, e.reason), skip_corrupt, span=span)
                    if not e.resumable:
                        self.end = end_at
                        return
                    pos += total
                    continue
                pos += total
                self.end = pos
                if self.count:
                    count_batch(stats, batch)
                yield batch


_CHUNK = 8 << 20


def _refill(f: BinaryIO, buf: bytes, i: int, pos: int, need: int, end_at: int) -> tuple[bytes, int, int]:
    """Keep buf[i:] (file offset pos) and read on so that at least need bytes are held, in
    chunks of 8 MiB, never past end_at. Returns (buffer, its file offset, index of pos)."""
    held = len(buf) - i
    want = min(max(_CHUNK, need), end_at - pos) - held
    return buf[i:] + f.read(max(want, 0)), pos, 0


# The pieces a reading loop specialised to one consumer reuses (tables/log_rows.py: the records
# table's rows straight from a segment's bytes), so that it decides nothing differently.
BadBatch = _Bad
BATCH_HEADER = _HEADER
NOOP_BATCH_RECORDS = _NOOP_RECORDS
check_length = _check_length
decode_at = _decode
refill = _refill
