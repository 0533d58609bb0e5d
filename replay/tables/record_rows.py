"""A history's batches as rows of the records table, in Arrow record batches.

Rules of this module (schema.py says what each column means; kafka-dump-log's record lines,
kafka-metadata-log-format.md 1.2: a data record's payload is its JSON, DumpLogSegments.scala
(DLS):334-340; control records print their JSON too, DLS:317-328):
- One row per record, in batch order: a data batch's records (with includeNoOps, a NO_OP_RECORD
  row, version 0, data ``{}``, at every offset of the batch no kept record holds: every offset of
  a KRaft data batch is a record, and a NoOp's value is exactly 01 14 00 00, so nothing else of it
  is lost), a control batch's control records. This is jsonl.batch_lines' walk, so the rows of
  a batch are its JSON lines (tests/replay/test_tables_rows.py checks them line for line).
- ``data`` is json_convert.to_json at the record's version (control records at version 0),
  compact (no spaces), keys in schema order: byte-for-byte what write_jsonl writes. A binary
  log's data records come as that text already (the reader's JSON form, json_fused.py: decoded
  straight from their bytes); other records' text is made here by json_fast.to_json_text (the
  same text, compiled per record class and version).
- A text input's batches name their file ``<jsonl:PATH>`` / ``<dump:PATH>`` and a line as their
  position: ``file`` is PATH.
- Rows are gathered as column lists and cut into Arrow record batches of at most
  ``ROWS_PER_BATCH`` rows, so a partition's memory is bounded by that, whatever its size. The
  timestamp column is gathered as microseconds (int64) and cast; a batch time that is negative
  (none) or after 9999-12-31T23:59:59.999Z (``MAX_TIMESTAMP_MS``: the end of Spark's
  TimestampType and of Python's datetime; only a damaged or forged batch) is null, where it
  overflowed before.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from ..log.records import CONTROL_TYPE_NAMES, NO_OP_RECORD, RECORD_TYPE_NAMES, LogBatch
from ..schema.record_classes import CONTROL_VERSION
from .json_fast import to_json_text
from .schema import RECORDS_ARROW, TIMESTAMP

__all__ = ["ROWS_PER_BATCH", "RecordColumns", "file_of", "record_batches"]

ROWS_PER_BATCH = 16_384
_NAMES = RECORDS_ARROW.names
_NOOP_NAME = RECORD_TYPE_NAMES[NO_OP_RECORD]
# The Arrow type each column's Python values are made into: the timestamp's microseconds as int64,
# then cast (a tenth of the time of pyarrow's conversion of ints to timestamps, the same array).
_BUILT_AS = [pa.int64() if f.type == TIMESTAMP else f.type for f in RECORDS_ARROW]
MAX_TIMESTAMP_MS = 253_402_300_799_999
"""The last batch time (ms) the timestamp column holds: 9999-12-31T23:59:59.999Z."""


def file_of(source: str) -> str:
    """The file a batch came from: a text input's batches say ``<kind:PATH>``."""
    if source.startswith("<") and source.endswith(">"):
        return source[1:-1].partition(":")[2]
    return source


class RecordColumns:
    """Rows gathered as one list per column of RECORDS_ARROW; ``take()`` hands them over as an
    Arrow record batch and starts afresh."""

    __slots__ = ("columns", "include_noops", "rows", "snapshot")

    def __init__(self, *, include_noops: bool, snapshot: bool = False) -> None:
        self.include_noops = include_noops
        self.snapshot = snapshot
        self.columns: list[list[Any]] = [[] for _ in _NAMES]
        self.rows = 0

    def add(self, batch: LogBatch) -> None:
        """The rows of one batch (module rules)."""
        (offsets, bases, lasts, epochs, times, controls, types, type_ids, versions, datas, snaps, files,
         positions) = self.columns
        base, last, epoch, control = batch.base_offset, batch.last_offset, batch.epoch, batch.control
        text = to_json_text
        ts = batch.timestamp * 1000 if 0 <= batch.timestamp <= MAX_TIMESTAMP_MS else None
        n_before = len(offsets)
        if control:
            for c in batch.control_records:
                offsets.append(c.offset)
                types.append(CONTROL_TYPE_NAMES.get(c.type, str(c.type)))
                type_ids.append(c.type)
                versions.append(CONTROL_VERSION)
                datas.append(text(c.data, CONTROL_VERSION))
        elif self.include_noops and batch.noops:
            records = iter(batch.records)
            nxt = next(records, None)
            for offset in range(base, last + 1):
                offsets.append(offset)
                if nxt is not None and nxt.offset == offset:
                    types.append(RECORD_TYPE_NAMES.get(nxt.type, str(nxt.type)))
                    type_ids.append(nxt.type)
                    versions.append(nxt.version)
                    d: Any = nxt.data
                    datas.append(d if d.__class__ is str else text(d, nxt.version))
                    nxt = next(records, None)
                else:
                    types.append(_NOOP_NAME)
                    type_ids.append(NO_OP_RECORD)
                    versions.append(0)
                    datas.append("{}")
        else:
            for r in batch.records:
                offsets.append(r.offset)
                types.append(RECORD_TYPE_NAMES.get(r.type, str(r.type)))
                type_ids.append(r.type)
                versions.append(r.version)
                d = r.data  # JSON text in the reader's JSON form (json_fused.JSON_FORM)
                datas.append(d if d.__class__ is str else text(d, r.version))
        n = len(offsets) - n_before
        if n == 1:  # most batches of a KRaft log hold one record
            bases.append(base)
            lasts.append(last)
            epochs.append(epoch)
            times.append(ts)
            controls.append(control)
            snaps.append(self.snapshot)
            files.append(file_of(batch.source))
            positions.append(batch.position)
            self.rows += 1
        elif n:
            bases.extend([base] * n)
            lasts.extend([last] * n)
            epochs.extend([epoch] * n)
            times.extend([ts] * n)
            controls.extend([control] * n)
            snaps.extend([self.snapshot] * n)
            files.extend([file_of(batch.source)] * n)
            positions.extend([batch.position] * n)
            self.rows += n

    def take(self) -> pa.RecordBatch:
        batch = pa.RecordBatch.from_arrays(
            [pa.array(c, type=t).cast(f.type) if t is not f.type else pa.array(c, type=t)
             for c, f, t in zip(self.columns, RECORDS_ARROW, _BUILT_AS, strict=True)],
            schema=RECORDS_ARROW,
        )
        self.columns = [[] for _ in _NAMES]
        self.rows = 0
        return batch


def record_batches(
    batches: Iterable[LogBatch], *, include_noops: bool, snapshot: bool = False, rows: int = ROWS_PER_BATCH
) -> Iterator[pa.RecordBatch]:
    """The rows of the batches as Arrow record batches of at most about ``rows`` rows (a batch's
    rows are never split; an empty input gives none)."""
    out = RecordColumns(include_noops=include_noops, snapshot=snapshot)
    for batch in batches:
        out.add(batch)
        if out.rows >= rows:
            yield out.take()
    if out.rows:
        yield out.take()
