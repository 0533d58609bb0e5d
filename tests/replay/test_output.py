"""The output directory: atomic (a failure leaves no DIR), never someone else's data (only an
empty directory or this program's own output is replaced), Parquet rows, summary.json, and a
report.png for any int64 timestamp and int32 broker id."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.common import CommandError
from ctrlbatch.replay.output.output import MARKER, OutputDir, ParquetRows, foreign_reason, write_json
from ctrlbatch.replay.output.report import DATE_MAX_MS, DATE_MIN_MS, broker_timeline, draw_report

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


def test_an_output_dropped_before_any_with_or_try_removes_its_temporary_directory(tmp_path: Path) -> None:
    """What a signal raised right after the constructor returns does: the object is dropped
    before the caller's try holds it, so neither __exit__ nor abort() runs."""
    def interrupted_right_after_construction() -> None:
        OutputDir(tmp_path / "out")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted_right_after_construction()
    assert list(tmp_path.iterdir()) == []
    committed = OutputDir(tmp_path / "kept")
    write_json(committed.summary_path, {"a": 1})
    committed.commit()
    del committed
    assert [p.name for p in tmp_path.iterdir()] == ["kept"]
    assert json.loads((tmp_path / "kept" / "summary.json").read_text()) == {"a": 1}


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
    import ctrlbatch.replay.output.output as output

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


INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _output(target: Path, files: dict[str, str]) -> None:
    with OutputDir(target) as out:
        for name, text in files.items():
            (out.tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (out.tmp / name).write_text(text)
        out.commit()


def test_a_strangers_summary_json_and_files_survive(tmp_path: Path) -> None:
    stranger = tmp_path / "results"
    (stranger / "sub").mkdir(parents=True)
    (stranger / "summary.json").write_text('{"mine": true}')
    (stranger / "sub" / "data.csv").write_text("1,2,3")
    with pytest.raises(CommandError, match=f"not a replay output \\({MARKER} missing\\)"):
        OutputDir(stranger)
    assert (stranger / "summary.json").read_text() == '{"mine": true}'
    assert (stranger / "sub" / "data.csv").read_text() == "1,2,3"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"], "no temporary directory is left"


def test_an_output_is_replaced_but_not_once_a_file_was_added(tmp_path: Path) -> None:
    target = tmp_path / "out"
    _output(target, {"summary.json": "{}", "requests/part-0.parquet": "x"})
    marker = json.loads((target / MARKER).read_text())
    assert sorted(marker["files"]) == ["requests/part-0.parquet", "summary.json"]
    assert marker["files"]["summary.json"] == {"bytes": 2, "sha256": hashlib.sha256(b"{}").hexdigest()}
    _output(target, {"summary.json": '{"run": 2}'})  # its own output: replaced whole
    assert sorted(p.name for p in target.iterdir()) == [MARKER, "summary.json"]
    (target / "notes.txt").write_text("added by a person")
    with pytest.raises(CommandError, match="holds files this program did not write \\('notes.txt'\\)"):
        OutputDir(target)
    assert (target / "notes.txt").read_text() == "added by a person"


def test_an_empty_directory_is_used_and_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    _output(tmp_path / "empty", {"summary.json": "{}"})
    assert (tmp_path / "empty" / "summary.json").is_file()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(CommandError, match="is a symbolic link"):
        OutputDir(tmp_path / "link")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CommandError, match="exists and is not a directory"):
        OutputDir(tmp_path / "file")
    with pytest.raises(CommandError, match="cannot write the output here: .*file is not a directory"):
        OutputDir(tmp_path / "file" / "out")
    with pytest.raises(CommandError, match="cannot write the output here: .*missing does not exist"):
        OutputDir(tmp_path / "missing" / "out")
    assert not (tmp_path / "missing").exists(), "a missing parent is not created"


def test_a_symlink_inside_a_previous_output_makes_it_foreign(tmp_path: Path) -> None:
    target = tmp_path / "out"
    _output(target, {"summary.json": "{}"})
    (tmp_path / "precious").write_text("p")
    (target / "requests").mkdir()
    (target / "requests" / "link").symlink_to(tmp_path / "precious")
    assert foreign_reason(target) is not None
    with pytest.raises(CommandError):
        OutputDir(target)
    assert (tmp_path / "precious").read_text() == "p"


@settings(max_examples=40, deadline=None)
@given(
    own=st.sets(st.sampled_from(["summary.json", "report.png", "requests/a.parquet", "requests/.a.crc"]), min_size=1),
    extra=st.sets(st.sampled_from(["thesis.tex", "requests/b.parquet", "x/y", ".hidden"]), max_size=2),
)
def test_replaceable_exactly_when_every_file_is_listed(
    tmp_path_factory: pytest.TempPathFactory, own: set[str], extra: set[str]
) -> None:
    target = tmp_path_factory.mktemp("prop") / "out"
    _output(target, {name: name for name in own})
    for name in extra:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_text("someone's")
    reason = foreign_reason(target)
    assert (reason is None) == (not extra), reason
    if extra:
        with pytest.raises(CommandError):
            OutputDir(target)
        assert all((target / name).read_text() == "someone's" for name in extra)
    else:
        _output(target, {"summary.json": "{}"})
        assert sorted(os.listdir(target)) == [MARKER, "summary.json"]


def _requests(directory: Path, rows: list[tuple[int, int, int]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    cols: list[tuple[int, ...]] = list(zip(*rows, strict=True)) if rows else [(), (), ()]
    pq.write_table(
        pa.table({"timestamp": pa.array(cols[0], pa.int64()), "broker": pa.array(cols[1], pa.int32()),
                  "bytes": pa.array(cols[2], pa.int64())}),
        directory / "part-00000.parquet",
    )
    return directory


@pytest.mark.parametrize(
    "timestamps",
    [
        [INT64_MIN, INT64_MIN],
        [INT64_MAX],
        [INT64_MIN, INT64_MAX],
        [-1, -5000, -86_400_000],
        [DATE_MIN_MS, DATE_MIN_MS + 1],
        [DATE_MIN_MS - 1, 0],
        [DATE_MAX_MS - 2000, DATE_MAX_MS],
        [DATE_MAX_MS, DATE_MAX_MS + 1],
    ],
)
def test_report_draws_any_int64_timestamp(tmp_path: Path, timestamps: list[int]) -> None:
    rows = [(t, [INT32_MIN, 0, INT32_MAX][i % 3], 100 + i) for i, t in enumerate(timestamps)]
    tl = broker_timeline(_requests(tmp_path / "requests", rows), 20)
    assert int(tl.requests.sum()) == len(rows) and int(tl.bytes.sum()) == sum(n for _, _, n in rows)
    assert all(int(a) <= int(b) for a, b in zip(tl.edges_ms[:-1], tl.edges_ms[1:], strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "singular limits" or date-range warning either
        draw_report(tl, tmp_path / "report.png", title="edges")
    assert (tmp_path / "report.png").read_bytes()[:8] == PNG_MAGIC


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(INT64_MIN, INT64_MAX), st.integers(INT32_MIN, INT32_MAX), st.integers(0, 10**9)),
             min_size=1, max_size=40),
    st.integers(1, 120),
)
def test_timeline_counts_every_request_once_at_any_timestamp_and_broker_id(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[int, int, int]], bins: int
) -> None:
    tl = broker_timeline(_requests(tmp_path_factory.mktemp("edges"), rows), bins)
    assert tl.brokers == tuple(sorted({b for _, b, _ in rows}))
    for i, broker in enumerate(tl.brokers):
        assert tl.requests[i].sum() == sum(1 for _, b, _ in rows if b == broker)
    lo = min(t for t, _, _ in rows)
    assert int(tl.edges_ms[0]) <= lo and len(tl.edges_ms) == bins + 1


def test_a_forged_marker_or_a_changed_file_deletes_nothing(tmp_path: Path) -> None:
    """A marker written by hand (the old list form, or digests that do not match) and an output
    whose file was changed after the run are refused; nothing in them is touched."""
    forged = tmp_path / "forged"
    forged.mkdir()
    (forged / "summary.json").write_text('{"mine": true}')
    (forged / MARKER).write_text(json.dumps({"written_by": "ctrlbatch replay", "files": ["summary.json"]}))
    with pytest.raises(CommandError, match="lists no digests of the files a run wrote"):
        OutputDir(forged)
    (forged / MARKER).write_text(json.dumps({"written_by": "ctrlbatch replay", "run": "x",
                                             "files": {"summary.json": {"bytes": 14, "sha256": "0" * 64}}}))
    with pytest.raises(CommandError, match="holds files that are not what this program wrote \\('summary.json'"):
        OutputDir(forged)
    assert (forged / "summary.json").read_text() == '{"mine": true}'
    target = tmp_path / "out"
    _output(target, {"summary.json": "{}", "requests/part-0.parquet": "x"})
    (target / "requests" / "part-0.parquet").write_text("y")  # same size, other bytes
    with pytest.raises(CommandError, match="'requests/part-0.parquet' changed since"):
        OutputDir(target)
    assert (target / "requests" / "part-0.parquet").read_text() == "y"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["forged", "out"], "no temporary directory is left"
