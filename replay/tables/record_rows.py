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
- Rows are gathered as their batches and records (control records and NoOps as records of
  their JSON text) and cut into Arrow record batches of at most about ``ROWS_PER_BATCH`` rows,
  so a partition's memory is bounded by that, whatever its size; the columns are made per
  Arrow batch (RecordColumns says why).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np
import pyarrow as pa

from ..log.records import CONTROL_TYPE_NAMES, NO_OP_RECORD, RECORD_TYPE_NAMES, LogBatch, make_record
from ..schema.record_classes import CONTROL_VERSION
from .json_fast import to_json_text
from .schema import RECORDS_ARROW, TIMESTAMP

__all__ = ["ROWS_PER_BATCH", "RecordColumns", "file_of", "record_batches"]

ROWS_PER_BATCH = 16_384
_MAX_MS = ((1 << 63) - 1) // 1000  # the last ms whose micros fit an int64
_OFFSET, _TYPE, _VERSION, _DATA = (attrgetter(a) for a in ("offset", "type", "version", "data"))
_BASE, _LAST, _EPOCH, _TIMESTAMP, _CONTROL, _SOURCE, _POSITION = (
    attrgetter(a) for a in ("base_offset", "last_offset", "epoch", "timestamp", "control", "source", "position"))
_NOOP_ROW = make_record(-1, NO_OP_RECORD, 0, "{}")  # a NoOp's row but its offset (the batch gives it)


def file_of(source: str) -> str:
    """The file a batch came from: a text input's batches say ``<kind:PATH>``."""
    if source.startswith("<") and source.endswith(">"):
        return source[1:-1].partition(":")[2]
    return source


class RecordColumns:
    """Rows gathered batch by batch; ``take()`` hands them over as an Arrow record batch and
    starts afresh. Why columns are made at ``take()``, not row by row: a row appended to 13
    lists cost more than the Arrow arrays (about 0.6 us a row of the 1M-record log); now a row
    is one record object, its columns read with ``map(attrgetter)`` in C and the batch's values
    repeated per row by numpy (tests/replay/test_tables_columns.py: the same batches as the
    row-by-row columns, on random batches)."""

    __slots__ = ("batches", "filled", "groups", "include_noops", "rows", "snapshot")

    def __init__(self, *, include_noops: bool, snapshot: bool = False) -> None:
        self.include_noops = include_noops
        self.snapshot = snapshot
        self.batches: list[LogBatch] = []  # the batches holding rows
        self.groups: list[Sequence[Any]] = []  # each one's rows: records (offset, type, version, data)
        self.filled: list[int] = []  # the groups filled with NoOps: their rows are every offset of the batch
        self.rows = 0

    def add(self, batch: LogBatch) -> None:
        """The rows of one batch (module rules)."""
        if batch.control:
            rows: Sequence[Any] = [
                make_record(c.offset, c.type, CONTROL_VERSION, to_json_text(c.data, CONTROL_VERSION))
                for c in batch.control_records]
        elif self.include_noops and batch.noops:
            if batch.records:
                filled: list[Any] = []
                records = iter(batch.records)
                nxt = next(records, None)
                for offset in range(batch.base_offset, batch.last_offset + 1):
                    if nxt is not None and nxt.offset == offset:
                        filled.append(nxt)
                        nxt = next(records, None)
                    else:
                        filled.append(_NOOP_ROW)
                rows = filled
            else:  # a batch of NoOps only (the controller's twice a second)
                rows = (_NOOP_ROW,) * (batch.last_offset - batch.base_offset + 1)
            if rows:
                self.filled.append(len(self.groups))
        else:
            rows = batch.records
        if rows:
            self.batches.append(batch)
            self.groups.append(rows)
            self.rows += len(rows)

    def take(self) -> pa.RecordBatch:
        batches, groups, filled, n = self.batches, self.groups, self.filled, self.rows
        self.batches, self.groups, self.filled, self.rows = [], [], [], 0
        records = list(chain.from_iterable(groups)) if n != len(groups) else [g[0] for g in groups]
        offsets = np.fromiter(map(_OFFSET, records), np.int64, n)
        type_ids = list(map(_TYPE, records))
        versions = list(map(_VERSION, records))
        datas = list(map(_DATA, records))
        if set(map(type, datas)) - {str}:  # a record without a fused decoder: decoded
            datas = [d if d.__class__ is str else to_json_text(d, v) for d, v in zip(datas, versions, strict=True)]
        counts = None if n == len(groups) else np.fromiter(map(len, groups), np.int64, len(groups))

        def per_row(values: Any) -> Any:
            return values if counts is None else np.repeat(values, counts)

        if filled:  # a filled group's rows are the offsets of its batch, in order (NoOps say -1)
            sizes = np.fromiter(map(len, groups), np.int64, len(groups))
            starts = np.cumsum(sizes) - sizes
            is_filled = np.zeros(len(groups), np.bool_)
            is_filled[filled] = True
            rows_filled = np.repeat(is_filled, sizes)
            firsts = np.fromiter(map(_BASE, batches), np.int64, len(batches)) - starts
            offsets[rows_filled] = (np.repeat(firsts, sizes) + np.arange(n, dtype=np.int64))[rows_filled]
        controls = per_row(np.fromiter(map(_CONTROL, batches), np.bool_, len(batches)))
        type_id_column = pa.array(type_ids, pa.int16())
        # a row's name is its (type id, control) pair's: looked up once per pair present
        keys, at = np.unique(type_id_column.to_numpy().astype(np.int64) * 2 + controls, return_inverse=True)
        names = pa.array([(CONTROL_TYPE_NAMES if k & 1 else RECORD_TYPE_NAMES).get(k >> 1, str(k >> 1))
                          for k in keys.tolist()], pa.string())
        times = per_row(np.fromiter(map(_TIMESTAMP, batches), np.int64, len(batches)))
        if times.size and int(times.max()) > _MAX_MS:  # its micros overflow: refused as the Python ints were
            timestamps = pa.array([t * 1000 if t >= 0 else None for t in times.tolist()], TIMESTAMP)
        else:
            timestamps = pa.array(times * 1000, TIMESTAMP, mask=times < 0)
        files = {s: file_of(s) for s in set(map(_SOURCE, batches))}
        columns = [
            pa.array(offsets),
            pa.array(per_row(np.fromiter(map(_BASE, batches), np.int64, len(batches)))),
            pa.array(per_row(np.fromiter(map(_LAST, batches), np.int64, len(batches)))),
            pa.array(per_row(np.fromiter(map(_EPOCH, batches), np.int64, len(batches))), pa.int32()),
            timestamps,
            pa.array(controls),
            names.take(pa.array(at.reshape(-1))),
            type_id_column,
            pa.array(versions, pa.int16()),
            pa.array(datas, pa.string()),
            pa.array(np.full(n, self.snapshot)),
            pa.array(per_row(np.array([files[b.source] for b in batches], object)), pa.string()),
            pa.array(per_row(np.fromiter(map(_POSITION, batches), np.int64, len(batches)))),
        ]
        return pa.RecordBatch.from_arrays(columns, schema=RECORDS_ARROW)


def record_batches(
    batches: Iterable[LogBatch], *, include_noops: bool, snapshot: bool = False, rows: int = ROWS_PER_BATCH
) -> Iterator[pa.RecordBatch]:
    """The rows of the batches as Arrow record batches of at most about ``rows`` rows (a batch's
    rows are never split; an empty input gives none)."""
    out = RecordColumns(include_noops=include_noops, snapshot=snapshot)
    add, kept, groups = out.add, out.batches.append, out.groups.append
    for batch in batches:
        records = batch.records
        if batch.control or (include_noops and batch.noops) or not records:
            add(batch)
        else:  # add()'s usual case, inline: a data batch's records are its rows
            kept(batch)
            groups(records)
            out.rows += len(records)
        if out.rows >= rows:
            yield out.take()
            kept, groups = out.batches.append, out.groups.append
    if out.rows:
        yield out.take()
