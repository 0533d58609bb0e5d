"""The output directory: atomic (a failure leaves no DIR), Parquet rows, summary.json, report.png."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.common import CommandError
from ctrlbatch.replay.output import OutputDir, ParquetRows, write_json
from ctrlbatch.replay.report import broker_timeline, draw_report

SCHEMA = pa.schema([("timestamp", pa.int64()), ("broker", pa.int32()), ("bytes", pa.int64()), ("note", pa.string())])
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_nothing_appears_until_commit(tmp_path: Path) -> None:
    target = tmp_path / "out"
    with OutputDir(target) as out:
        write_json(out.summary_path, {"a": 1})
        assert not target.exists()
        assert out.tmp.parent == tmp_path and out.tmp.name.startswith("out.tmp-")
        out.commit()
    assert json.loads((target / "summary.json").read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_failure_leaves_no_directory(tmp_path: Path) -> None:
    target = tmp_path / "out"
    with pytest.raises(RuntimeError, match="boom"), OutputDir(target) as out:
        write_json(out.summary_path, {"a": 1})
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_a_failure_keeps_the_previous_output(tmp_path: Path) -> None:
    target = tmp_path / "out"
    with OutputDir(target) as out:
        write_json(out.summary_path, {"run": 1})
        out.commit()
    with pytest.raises(RuntimeError), OutputDir(target) as out:
        write_json(out.summary_path, {"run": 2})
        raise RuntimeError("second run fails")
    assert json.loads((target / "summary.json").read_text()) == {"run": 1}
    with OutputDir(target) as out:
        write_json(out.summary_path, {"run": 3})
        out.commit()
    assert json.loads((target / "summary.json").read_text()) == {"run": 3}
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_refuses_to_replace_a_foreign_directory(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "thesis.tex").write_text("precious")
    with pytest.raises(CommandError, match="not a replay output"):
        OutputDir(tmp_path / "docs")
    assert (tmp_path / "docs" / "thesis.tex").read_text() == "precious"


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**12), st.integers(0, 300), st.integers(0, 10**6)), max_size=300))
def test_parquet_rows_round_trip(tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[int, int, int]]) -> None:
    directory = tmp_path_factory.mktemp("rows")
    writer = ParquetRows(directory, SCHEMA)
    writer.write({"timestamp": t, "broker": b, "bytes": n} for t, b, n in rows)
    writer.close()
    table = pq.read_table(directory)
    assert table.schema.equals(SCHEMA)
    assert writer.count == table.num_rows == len(rows)
    assert list(zip(table["timestamp"].to_pylist(), table["broker"].to_pylist(), table["bytes"].to_pylist(), strict=True)) == rows
    assert table["note"].null_count == len(rows)


def test_parquet_rows_writes_row_groups_of_bounded_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ctrlbatch.replay.output as output

    monkeypatch.setattr(output, "ROWS_PER_FILE_GROUP", 10)
    writer = ParquetRows(tmp_path, SCHEMA)
    writer.write({"timestamp": i, "broker": 1, "bytes": i} for i in range(35))
    writer.close()
    meta = pq.ParquetFile(tmp_path / "part-00000.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [10, 10, 10, 5]


@settings(max_examples=10, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5_000_000), st.sampled_from([1, 2, 7, 100]), st.integers(1, 5000)), min_size=1, max_size=200),
    st.integers(1, 50),
)
def test_timeline_counts_every_request_once(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[int, int, int]], bins: int
) -> None:
    directory = tmp_path_factory.mktemp("timeline")
    half = len(rows) // 2  # two files: the scan must sum over both
    for i, part in enumerate((rows[:half], rows[half:])):
        cols: list[tuple[int, ...]] = list(zip(*part, strict=True)) if part else [(), (), ()]
        pq.write_table(
            pa.table({"timestamp": pa.array(cols[0], pa.int64()), "broker": pa.array(cols[1], pa.int32()),
                      "bytes": pa.array(cols[2], pa.int64())}),
            directory / f"part-{i:05d}.parquet",
        )
    tl = broker_timeline(directory, bins)
    assert tl.brokers == tuple(sorted({b for _, b, _ in rows}))
    assert tl.requests.shape == tl.bytes.shape == (len(tl.brokers), bins)
    for i, broker in enumerate(tl.brokers):
        assert tl.requests[i].sum() == sum(1 for _, b, _ in rows if b == broker)
        assert tl.bytes[i].sum() == sum(n for _, b, n in rows if b == broker)
    first = min(t for t, _, _ in rows)
    first_bucket = [tl.requests[:, 0].sum(), sum(1 for t, _, _ in rows if t < tl.edges_ms[1])]
    assert first_bucket[0] == first_bucket[1] and tl.edges_ms[0] == first


def test_report_is_a_png(tmp_path: Path) -> None:
    pq.write_table(
        pa.table({"timestamp": pa.array([0, 1000, 2000, 2000], pa.int64()), "broker": pa.array([1, 2, 1, 1], pa.int32()),
                  "bytes": pa.array([10, 20, 30, 40], pa.int64())}),
        tmp_path / "part-00000.parquet",
    )
    draw_report(broker_timeline(tmp_path, 10), tmp_path / "report.png", title="test")
    assert (tmp_path / "report.png").read_bytes()[:8] == PNG_MAGIC


def test_report_without_requests_is_a_png(tmp_path: Path) -> None:
    (tmp_path / "requests").mkdir()
    writer = ParquetRows(tmp_path / "requests", SCHEMA)
    writer.close()
    tl = broker_timeline(tmp_path / "requests", 10)
    assert tl.brokers == ()
    draw_report(tl, tmp_path / "report.png", title="empty")
    assert (tmp_path / "report.png").read_bytes()[:8] == PNG_MAGIC
