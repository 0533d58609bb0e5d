"""record_rows' columns, made per Arrow batch, against the row-by-row columns they replaced.

``reference_batches`` is the former RecordColumns (one list per column, every row appended to
each) kept here as the oracle: on random batches (data batches with and without NoOps, text
inputs' ``<jsonl:PATH>`` sources, null and huge timestamps, unknown record types, a real log's
decoded data and control records) the new columns must give the same Arrow batches, cut at the
same rows, and refuse the same input.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay import open_history
from ctrlbatch.replay.log.records import (
    CONTROL_TYPE_NAMES,
    NO_OP_RECORD,
    RECORD_TYPE_NAMES,
    LogBatch,
    make_batch,
    make_record,
)
from ctrlbatch.replay.schema.record_classes import CONTROL_VERSION
from ctrlbatch.replay.tables.json_fast import to_json_text
from ctrlbatch.replay.tables.record_rows import file_of, record_batches
from ctrlbatch.replay.tables.schema import RECORDS_ARROW

from .conftest import SAMPLE


def _text(data: Any, version: int) -> str:
    return data if isinstance(data, str) else to_json_text(data, version)


def _reference_rows(batch: LogBatch, include_noops: bool) -> list[tuple[int, str, int, int, str]]:
    """(offset, type, type_id, version, data) of a batch's rows, as the former add() made them."""
    if batch.control:
        return [(c.offset, CONTROL_TYPE_NAMES.get(c.type, str(c.type)), c.type, CONTROL_VERSION,
                 to_json_text(c.data, CONTROL_VERSION)) for c in batch.control_records]
    out = []
    if include_noops and batch.noops:
        records = iter(batch.records)
        nxt = next(records, None)
        for offset in range(batch.base_offset, batch.last_offset + 1):
            if nxt is not None and nxt.offset == offset:
                out.append((offset, RECORD_TYPE_NAMES.get(nxt.type, str(nxt.type)), nxt.type, nxt.version,
                            _text(nxt.data, nxt.version)))
                nxt = next(records, None)
            else:
                out.append((offset, RECORD_TYPE_NAMES[NO_OP_RECORD], NO_OP_RECORD, 0, "{}"))
        return out
    return [(r.offset, RECORD_TYPE_NAMES.get(r.type, str(r.type)), r.type, r.version, _text(r.data, r.version))
            for r in batch.records]


def reference_batches(batches: Iterable[LogBatch], *, include_noops: bool, snapshot: bool,
                      rows: int) -> Iterator[pa.RecordBatch]:
    """The former record_batches: every row appended to one list per column."""
    columns: list[list[Any]] = [[] for _ in RECORDS_ARROW]

    def take() -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays(
            [pa.array(c, type=f.type) for c, f in zip(columns, RECORDS_ARROW, strict=True)], schema=RECORDS_ARROW)

    for batch in batches:
        ts = batch.timestamp * 1000 if batch.timestamp >= 0 else None
        for offset, name, type_id, version, data in _reference_rows(batch, include_noops):
            row = (offset, batch.base_offset, batch.last_offset, batch.epoch, ts, batch.control, name, type_id, version,
                   data, snapshot, file_of(batch.source), batch.position)
            for column, value in zip(columns, row, strict=True):
                column.append(value)
        if len(columns[0]) >= rows:
            yield take()
            columns = [[] for _ in RECORDS_ARROW]
    if columns[0]:
        yield take()


@functools.cache
def sample_batches() -> tuple[LogBatch, ...]:
    """The real log's batches, decoded (data records as objects, control records among them)."""
    history = open_history(SAMPLE)
    return (*history.snapshot_batches(), *history.batches())


KNOWN = sorted(RECORD_TYPE_NAMES)
TEXTS = st.text(st.characters(codec="utf-8"), max_size=12).map(lambda t: '{"k":' + repr(t) + "}")


@st.composite
def data_batch(draw: st.DrawFn) -> LogBatch:
    """A data batch of the reading loop's shape: records at increasing offsets in the batch, the
    rest NoOps; data as JSON text (the JSON form)."""
    base = draw(st.integers(0, 1 << 40))
    size = draw(st.integers(1, 6))
    offsets = sorted(draw(st.sets(st.integers(0, size - 1), max_size=size)))
    records = tuple(make_record(base + o, draw(st.sampled_from([*KNOWN, 999, -1, -32768, 32767])), draw(st.integers(0, 3)),
                                draw(TEXTS)) for o in offsets)
    timestamp = draw(st.sampled_from([-1, 0, 1_700_000_000_000, draw(st.integers(-5, 1 << 50))]))
    source = draw(st.sampled_from(["/logs/00000000000000000000.log", "<jsonl:/in/x.jsonl>", "<dump:/in/y.txt>"]))
    return make_batch(base, base + size - 1, draw(st.integers(0, (1 << 31) - 1)), timestamp, False, records, (),
                      size - len(offsets), source, draw(st.integers(0, 1 << 40)), 0)


BATCHES = st.lists(st.one_of(data_batch(), st.integers(0, 10_000)), max_size=40)


def _both(batches: list[LogBatch], include_noops: bool, snapshot: bool, rows: int) -> tuple[Any, Any]:
    def run(make: Any) -> Any:
        try:
            return [b for b in make(batches, include_noops=include_noops, snapshot=snapshot, rows=rows)]
        except Exception as e:  # the same refusal on both paths
            return type(e)

    return run(reference_batches), run(record_batches)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BATCHES, st.booleans(), st.booleans(), st.integers(1, 30))
def test_columns_equal_the_row_by_row_columns(picks: list[Any], include_noops: bool, snapshot: bool,
                                              rows: int) -> None:
    real = sample_batches()
    batches = [real[p % len(real)] if isinstance(p, int) else p for p in picks]
    expected, got = _both(batches, include_noops, snapshot, rows)
    if isinstance(expected, type):
        assert got is expected
        return
    assert [b.num_rows for b in got] == [b.num_rows for b in expected]
    for g, e in zip(got, expected, strict=True):
        assert g.schema == RECORDS_ARROW
        assert g.equals(e)


def test_the_whole_sample_equals_the_row_by_row_columns() -> None:
    """Every batch of the real log, NoOps, control records and decoded data included."""
    for include_noops in (False, True):
        expected, got = _both(list(sample_batches()), include_noops, False, 50)
        assert isinstance(expected, list) and len(expected) > 1
        assert pa.Table.from_batches(got).equals(pa.Table.from_batches(expected))


@pytest.mark.parametrize("timestamp", [((1 << 63) - 1) // 1000, ((1 << 63) - 1) // 1000 + 1, (1 << 63) - 1])
def test_timestamps_at_the_int64_micros_limit_as_before(timestamp: int) -> None:
    """The last ms whose micros fit is a row; past it both refuse the batch (Arrow's overflow)."""
    batch = make_batch(0, 0, 0, timestamp, False, (make_record(0, 2, 0, "{}"),), (), 0, "f", 0, 0)
    expected, got = _both([batch], False, False, 10)
    if timestamp * 1000 < 1 << 63:
        assert isinstance(got, list) and got[0].equals(expected[0])
        assert got[0]["timestamp"].cast(pa.int64()).to_pylist() == [timestamp * 1000]
    else:
        assert isinstance(expected, type) and issubclass(expected, Exception)
        assert got is expected
