"""A binary log part's rows straight from its bytes: the reading loop specialised to the records table.

Rules of this module (record batch v2: kafka-metadata-log-format.md section 4; the reading loop's
rules: log/reading.py, log/segments.py):
- Why: the table needs a batch's rows, not the LogBatch and MetadataRecord objects the shared
  loop builds, and not the three generators a batch crosses there (segment, range, checks). A
  batch in the usual case is turned into column values where its bytes are read; that made the
  table's rows cheaper than the shared loop's decoding alone (benchmarks/tables_bench.py).
- The usual case, every test of it the shared loop's own: the batch's length is sound (the
  prefix checks of SegmentReader), magic 2, its CRC-32C matches, no compression and no control
  flag, the offset the check expects, the epoch in office (not negative), at or past the
  history's start offset, not the first batch of a segment read from its name's offset (that
  one is checked against the name), and, for each record, the shape segments._decode's fast path
  takes (one- or two-byte varints, a null key, no headers, a value ending the record), offset
  deltas 0, 1, 2, ... with one record for every offset of the batch, and a NoOp value or a
  one-byte frame whose (type, version) has a JSON decoder (json_fused.py) that ends where the
  value ends. A NoOp batch is the shared loop's NoOp batch (with includeNoOps: its offset range
  is one offset).
- Anything else, and any batch before the first one a part keeps, takes the shared loop's own
  path, batch by batch: segments' decode_at (its errors, its JSON form), the reader's
  check_segment_start and admit (the offset and epoch checks, skip-corrupt's rules, the trim),
  then RecordColumns.add; a batch whose records leave the usual case half way has its rows
  taken back first. So every row and every error is the shared loop's (tests/replay/
  test_tables_log_rows.py: rows, errors and skipped spans equal on sound and corrupted logs).
- The check state is the reader's own objects (OffsetCheck, EpochCheck, ReadStats). A usual
  batch moves it as the reader's inline case does (the next expected offset; the skipped count
  at the last accepted batch, refreshed at the first usual batch after anything was skipped:
  it cannot change in between). The batch counters (ReadStats.batches, records...) are not
  kept: the table reports none of them; skipped input is reported as the reader reports it.
- Segments are read in the shared loop's 8 MiB chunks (segments.refill).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

import crc32c
import pyarrow as pa

from ..log.errors import ReplayInputError
from ..log.reading import LogReader
from ..log.records import NO_OP_RECORD, NOOP_VALUE, RECORD_TYPE_NAMES
from ..log.segments import (
    ATTR_COMPRESSION,
    ATTR_CONTROL,
    BATCH_HEADER,
    HEADER,
    MAGIC,
    MAX_BATCH_BYTES,
    MIN_BATCH_LENGTH,
    NOOP_BATCH_RECORDS,
    PREFIX,
    BadBatch,
    check_length,
    decode_at,
    refill,
)
from .record_rows import MAX_TIMESTAMP_MS, RecordColumns

__all__ = ["log_rows"]

_PREFIX = struct.Struct(">qi")
_UNUSUAL_ATTRIBUTES = ATTR_COMPRESSION | ATTR_CONTROL
_NOOP_NAME = RECORD_TYPE_NAMES[NO_OP_RECORD]
_NAMES = {t: RECORD_TYPE_NAMES.get(t, str(t)) for t in range(0x80)}


def log_rows(
    reader: LogReader, columns: RecordColumns, rows: int, drop: tuple[str, int] | None = None
) -> Iterator[pa.RecordBatch]:
    """The rows of reader's range (a binary log's, in reader.form: the JSON form) as Arrow
    record batches of about ``rows`` rows; drop (file, position): the first batch kept is not
    a row if it is that one (a part's overlap batch: plan.py's rules)."""
    offsets, epochs, stats, form = reader.offsets, reader.epochs, reader.stats, reader.form
    if offsets is None or form is None:
        raise ValueError("log_rows reads a binary log in a record form")
    fast, start_offset, skip_corrupt = form.fast, reader.start_offset, reader.skip_corrupt
    include_noops = columns.include_noops
    unpack_prefix, unpack_header, crc = _PREFIX.unpack_from, BATCH_HEADER.unpack_from, crc32c.crc32c
    names, noops_batches = _NAMES, NOOP_BATCH_RECORDS
    refresh = True  # offsets.corrupt is refreshed at the next usual batch (module rules)
    for seg, start, stop in reader.ranges():
        src = reader.segments[seg]
        first_pending = start == 0 and reader.named_base(seg) is not None
        corrupt_before = stats.corrupt_count
        size = os.path.getsize(src)
        end_at = size if stop is None else min(stop, size)
        (offs, bases, lasts, epoch_col, times, controls, types, type_ids, versions, datas, snaps, files,
         positions) = columns.columns
        snapshot = columns.snapshot
        with open(src, "rb") as f:
            f.seek(start)
            buf = b""
            at = pos = start  # at: the file offset of buf[0]
            while pos < end_at:
                total = 0
                try:
                    i = pos - at
                    if len(buf) - i < PREFIX:
                        buf, at, i = refill(f, buf, i, pos, PREFIX, end_at)
                    if len(buf) - i < PREFIX:
                        raise BadBatch(pos, f"truncated batch: {len(buf) - i} bytes left, a batch header needs {HEADER}",
                                       resumable=False)
                    length = unpack_prefix(buf, i)[1]
                    if not MIN_BATCH_LENGTH <= length <= MAX_BATCH_BYTES or length > end_at - pos - PREFIX:
                        check_length(length, end_at - pos, pos)  # raises
                    total = length + PREFIX
                    if len(buf) - i < total:
                        buf, at, i = refill(f, buf, i, pos, total, end_at)
                    end = i + total
                    if not first_pending and drop is None:
                        (base, _, epoch, magic, batch_crc, attributes, last_delta, _, max_ts, _, _, _, count) = (
                            unpack_header(buf, i))
                        if (base == offsets.expected and epoch == epochs.epoch and epoch >= 0 and magic == MAGIC
                                and not attributes & _UNUSUAL_ATTRIBUTES and base >= start_offset and count >= 0
                                and crc(buf[i + 21:end] if total < 4096 else memoryview(buf)[i + 21:end]) == batch_crc):
                            # The usual case (module rules): the rows where the bytes are read.
                            n0 = len(offs)
                            p = i + HEADER
                            usual = True
                            if count == 1 and end - p == 11 and buf[p:end] in noops_batches:
                                if include_noops:
                                    if last_delta:
                                        usual = False
                                    else:
                                        offs.append(base)
                                        types.append(_NOOP_NAME)
                                        type_ids.append(NO_OP_RECORD)
                                        versions.append(0)
                                        datas.append("{}")
                            elif count != last_delta + 1:
                                usual = False
                            else:
                                for k in range(count):
                                    if p >= end:
                                        usual = False
                                        break
                                    b = buf[p]
                                    if b < 0x80:
                                        rlen, p = (b >> 1) ^ -(b & 1), p + 1
                                    elif p + 1 < end and buf[p + 1] < 0x80:
                                        v = (b & 0x7F) | (buf[p + 1] << 7)
                                        rlen, p = (v >> 1) ^ -(v & 1), p + 2
                                    else:
                                        usual = False
                                        break
                                    rec_end = p + rlen
                                    if rlen < 6 or rec_end > end or buf[p + 1] >= 0x80:
                                        usual = False
                                        break
                                    q = p + 2
                                    b = buf[q]
                                    if b < 0x80:
                                        delta, q = (b >> 1) ^ -(b & 1), q + 1
                                    elif buf[q + 1] < 0x80:
                                        v = (b & 0x7F) | (buf[q + 1] << 7)
                                        delta, q = (v >> 1) ^ -(v & 1), q + 2
                                    else:
                                        usual = False
                                        break
                                    if delta != k or q + 2 >= rec_end or buf[q] != 1:
                                        usual = False
                                        break
                                    b = buf[q + 1]
                                    if b < 0x80:
                                        value_len, value_at = b >> 1, q + 2
                                    elif buf[q + 2] < 0x80 and not b & 1:
                                        value_len, value_at = ((b & 0x7F) | (buf[q + 2] << 7)) >> 1, q + 3
                                    else:
                                        usual = False
                                        break
                                    value_end = rec_end - 1
                                    if b & 1 or value_at + value_len != value_end or buf[value_end]:
                                        usual = False
                                        break
                                    p = rec_end
                                    if value_len == 4 and buf[value_at:value_end] == NOOP_VALUE:
                                        if include_noops:
                                            offs.append(base + k)
                                            types.append(_NOOP_NAME)
                                            type_ids.append(NO_OP_RECORD)
                                            versions.append(0)
                                            datas.append("{}")
                                        continue
                                    t, v = buf[value_at + 1], buf[value_at + 2]
                                    dec = fast.get(t << 8 | v) if value_len >= 3 and buf[value_at] == 1 else None
                                    if dec is None:
                                        usual = False
                                        break
                                    try:
                                        data, data_end = dec(buf, value_at + 3)
                                    except Exception:
                                        data_end = -1
                                    if data_end != value_end:
                                        usual = False
                                        break
                                    offs.append(base + k)
                                    types.append(names[t])
                                    type_ids.append(t)
                                    versions.append(v)
                                    datas.append(data)
                                if p != end:
                                    usual = False
                            if usual:
                                offsets.expected = base + last_delta + 1
                                if refresh:
                                    offsets.corrupt, refresh = stats.corrupt_count, False
                                pos += total
                                n = len(offs) - n0
                                if n:
                                    ts = max_ts * 1000 if 0 <= max_ts <= MAX_TIMESTAMP_MS else None
                                    last = base + last_delta
                                    if n == 1:  # most batches of a KRaft log hold one record
                                        bases.append(base)
                                        lasts.append(last)
                                        epoch_col.append(epoch)
                                        times.append(ts)
                                        controls.append(False)
                                        snaps.append(snapshot)
                                        files.append(src)
                                        positions.append(pos - total)
                                    else:
                                        bases.extend([base] * n)
                                        lasts.extend([last] * n)
                                        epoch_col.extend([epoch] * n)
                                        times.extend([ts] * n)
                                        controls.extend([False] * n)
                                        snaps.extend([snapshot] * n)
                                        files.extend([src] * n)
                                        positions.extend([pos - total] * n)
                                    columns.rows += n
                                    if columns.rows >= rows:
                                        yield columns.take()
                                        (offs, bases, lasts, epoch_col, times, controls, types, type_ids, versions,
                                         datas, snaps, files, positions) = columns.columns
                                continue
                            for c in (offs, types, type_ids, versions, datas):  # take the batch's rows back
                                del c[n0:]
                    batch = decode_at(buf, i, end, src, pos, form)
                except BadBatch as e:
                    span = (pos, total) if e.resumable else (pos, end_at - pos)  # the batch, or the rest
                    stats.skip_or_raise(ReplayInputError(src, e.position, e.reason), skip_corrupt, span=span)
                    refresh = True
                    if not e.resumable:
                        break
                    pos += total
                    continue
                # The shared loop's path (module rules).
                pos += total
                if first_pending:
                    reader.check_segment_start(seg, batch, corrupt_before)
                    first_pending = False
                admitted = reader.admit(batch, (batch.position, total))
                refresh = True
                if admitted is None:
                    continue
                if drop is not None:
                    dropped, drop = (admitted.source, admitted.position) == drop, None
                    if dropped:
                        continue
                columns.add(admitted)
                if columns.rows >= rows:
                    yield columns.take()
                (offs, bases, lasts, epoch_col, times, controls, types, type_ids, versions, datas, snaps, files,
                 positions) = columns.columns
    if reader.stop is None:
        reader.check_end()
    if columns.rows:
        yield columns.take()
