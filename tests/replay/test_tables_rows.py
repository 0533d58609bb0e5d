"""The records table without Spark: rows, partitions, options and the stream's offsets.

The rows of a batch are checked against write_jsonl's lines (an independent writer of the same
kafka-dump-log JSON); the partitioned read against one read of the whole history through the
one reading loop, for any unitBytes (Hypothesis), with a snapshot start and with skip-corrupt.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay import open_history
from ctrlbatch.replay.engine.skeleton import DeltaStarts
from ctrlbatch.replay.log.jsonl import write_jsonl
from ctrlbatch.replay.log.records import LogBatch
from ctrlbatch.replay.tables.options import OPTIONS, parse_options
from ctrlbatch.replay.tables.plan import cuts, plan_parts, read_part
from ctrlbatch.replay.tables.record_rows import record_batches
from ctrlbatch.replay.tables.schema import RECORDS_ARROW

from .tables_logs import make_logs


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_logs(tmp_path_factory.mktemp("tables"))


def one_read(path: Path, *, include_noops: bool = False, **open_args: Any) -> pa.Table:
    """The reference: the history read once (snapshot, then log), as rows."""
    history = open_history(path, **open_args)
    batches = [*record_batches(history.snapshot_batches(), include_noops=include_noops, snapshot=True),
               *record_batches(history.batches(), include_noops=include_noops)]
    return pa.Table.from_batches(batches, schema=RECORDS_ARROW)


def partitioned(options: dict[str, str]) -> tuple[pa.Table, int]:
    opts = parse_options(options)
    parts = plan_parts(opts)
    return pa.Table.from_batches([b for p in parts for b in read_part(opts, p, rows=97)], schema=RECORDS_ARROW), len(parts)


def test_rows_are_the_json_lines_of_each_batch(sample_dir: Path, logs: dict[str, Path]) -> None:
    for path in (sample_dir, logs["3x"], logs["4x"]):
        history = open_history(path)
        batches: list[LogBatch] = list(history.batches())
        text = io.StringIO()
        write_jsonl(batches, text)
        lines = [json.loads(line) for line in text.getvalue().splitlines()]
        rows = pa.Table.from_batches(list(record_batches(batches, include_noops=True))).to_pylist()
        assert len(rows) == len(lines) > 1000
        for row, line in zip(rows, lines, strict=True):
            assert (row["offset"], row["type"], row["version"], row["batch_base_offset"], row["batch_epoch"]) == (
                line["offset"], line["type"], line["version"], line["batch"], line["epoch"])
            assert json.loads(row["data"]) == line["data"]
            assert row["timestamp"].timestamp() * 1000 == line["timestamp"]
        types = {r["type"] for r in rows}
        assert {"LEADER_CHANGE", "NO_OP_RECORD", "PARTITION_CHANGE_RECORD"} <= types or path != sample_dir


def test_noops_are_rows_only_when_asked(sample_dir: Path) -> None:
    without = one_read(sample_dir)
    with_noops = one_read(sample_dir, include_noops=True)
    noops = with_noops.filter(pa.compute.equal(with_noops["type"], "NO_OP_RECORD"))
    assert noops.num_rows == 4801  # pyspark-notes.md 1.1: the sample's NoOps
    assert with_noops.num_rows - noops.num_rows == without.num_rows
    assert "NO_OP_RECORD" not in set(without["type"].to_pylist())
    assert set(noops["data"].to_pylist()) == {"{}"}


@pytest.mark.parametrize("name", ["3x", "4x"])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(unit=st.integers(min_value=1, max_value=200_000))
def test_partitions_read_what_one_read_reads(logs: dict[str, Path], name: str, unit: int) -> None:
    table, parts = partitioned({"path": str(logs[name]), "unitBytes": str(unit), "includeNoOps": "true"})
    assert table.equals(one_read(logs[name], include_noops=True))
    size = sum(p.stat().st_size for p in (logs[name] / "__cluster_metadata-0").glob("*.log"))
    assert 1 <= parts <= min(size // unit + 1, 1024)  # a cut at the first batch start past every unitBytes


def test_a_snapshot_start_reads_the_snapshot_then_the_log_after_it(logs: dict[str, Path]) -> None:
    table, parts = partitioned({"path": str(logs["3x"]), "fromSnapshot": "newest", "unitBytes": "20000"})
    ref = one_read(logs["3x"], from_snapshot="newest")
    assert table.equals(ref) and parts > 2
    snap = table.filter(table["snapshot"])
    assert snap["type"][0].as_py() == "SNAPSHOT_HEADER" and snap["type"][-1].as_py() == "SNAPSHOT_FOOTER"
    end = int(next((logs["3x"] / "__cluster_metadata-0").glob("*.checkpoint")).name[:20])
    assert end > 0
    log = table.filter(pa.compute.invert(table["snapshot"]))
    assert min(log["offset"].to_pylist()) >= max(int(p.name[:20]) for p in (logs["3x"] / "__cluster_metadata-0").glob("*.checkpoint"))


def test_a_checkpoint_file_is_its_own_table(logs: dict[str, Path]) -> None:
    checkpoint = sorted((logs["3x"] / "__cluster_metadata-0").glob("*.checkpoint"))[0]
    table, parts = partitioned({"path": str(checkpoint)})
    assert parts == 1 and table.equals(one_read(checkpoint)) and all(table["snapshot"].to_pylist())
    assert table["offset"][0].as_py() == 0  # offsets inside a .checkpoint restart at 0


def test_skip_corrupt_skips_the_same_batches_in_every_partitioning(logs: dict[str, Path]) -> None:
    path = logs["corrupt"]
    ref = one_read(path, skip_corrupt=True)
    clean = one_read(logs["3x"])
    assert 0 < clean.num_rows - ref.num_rows < 10
    for unit in (500, 3_000, 25_000, 1 << 30):
        table, _ = partitioned({"path": str(path), "skipCorrupt": "true", "unitBytes": str(unit)})
        assert table.equals(ref), unit


def test_a_corrupt_batch_fails_with_the_readers_one_line_in_any_partition(logs: dict[str, Path]) -> None:
    from ctrlbatch.replay import ReplayInputError

    with pytest.raises(ReplayInputError) as reference:
        list(open_history(logs["corrupt"]).batches())
    opts = parse_options({"path": str(logs["corrupt"]), "unitBytes": "5000"})
    failures = []
    for part in plan_parts(opts):
        try:
            list(read_part(opts, part))
        except ReplayInputError as e:
            failures.append(str(e))
    assert failures[0] == str(reference.value) and "CRC-32C mismatch" in failures[0] and len(failures) == 2
    assert all("\n" not in f for f in failures)


def test_a_gap_across_a_cut_is_found_as_in_one_read(tmp_path: Path) -> None:
    from ctrlbatch.replay import ReplayInputError

    from .tables_logs import LiveLog

    live = LiveLog(tmp_path)
    live.add(0, 9)
    live.append(live.batch(11))  # offset 10 is missing
    live.add(12, 14)
    with pytest.raises(ReplayInputError) as reference:
        list(open_history(live.root).batches())
    size = live.segment.stat().st_size
    for unit in range(1, size, 7):
        opts = parse_options({"path": str(live.root), "unitBytes": str(unit)})
        errors = []
        for part in plan_parts(opts):
            try:
                list(read_part(opts, part))
            except ReplayInputError as e:
                errors.append(str(e))
        assert errors == [str(reference.value)], unit


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "kraft_metadata: no path"),
        ({"path": "x", "skipCorrupt": "yes"}, "kraft_metadata option skipCorrupt: expected true or false, got 'yes'"),
        ({"path": "x", "INCLUDENOOPS": "1"}, "kraft_metadata option includeNoOps: expected true or false, got '1'"),
        ({"path": "x", "unitBytes": "0"}, "kraft_metadata option unitBytes: expected a positive integer"),
        ({"path": "x", "unitBytes": "1k"}, "kraft_metadata option unitBytes: expected a positive integer"),
        ({"path": "x", "fromSnapshot": ""}, "kraft_metadata option fromSnapshot: expected 'newest'"),
    ],
)
def test_bad_options_are_refused_naming_the_option(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_options(options)
    assert str(e.value).startswith(message)
    assert set(OPTIONS) == {"path", "fromSnapshot", "skipCorrupt", "includeNoOps", "unitBytes"}


def test_options_are_case_insensitive_and_paths_absolute() -> None:
    opts = parse_options({"PATH": "rel/dir", "includenoops": "TRUE", "UnitBytes": "42", "fromsnapshot": "newest"})
    assert opts.include_noops and opts.unit_bytes == 42 and opts.from_snapshot == "newest"
    assert Path(opts.path).is_absolute()


@settings(max_examples=50, deadline=None)
@given(sizes=st.lists(st.lists(st.integers(min_value=49, max_value=300), min_size=0, max_size=30), min_size=1,
                      max_size=4), unit=st.integers(min_value=1, max_value=3000))
def test_cuts_are_batch_starts_after_every_unit(tmp_path_factory: pytest.TempPathFactory, sizes: list[list[int]],
                                                unit: int) -> None:
    import struct

    root = tmp_path_factory.mktemp("cuts")
    segments, starts = [], []
    for s, lengths in enumerate(sizes):
        path = root / f"{s}.log"
        data, pos = b"", 0
        for length in lengths:
            starts.append((s, pos))
            data += struct.pack(">qi", 0, length) + bytes(length)
            pos += 12 + length
        path.write_bytes(data)
        segments.append(str(path))
    found = cuts(segments, unit)
    flat = [(s, p) for s, p in starts]
    for cut, before in found:
        assert cut in flat and before in flat and flat.index(before) + 1 == flat.index(cut)
    assert [c for c, _b in found] == sorted(c for c, _b in found)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(min_value=1, max_value=4)), min_size=1, max_size=40),
       st.data())
def test_delta_starts_are_after_the_delta_before_and_at_data(batches: list[tuple[bool, int]], data: Any) -> None:
    """DeltaStarts: each delta begins after the one before it, at or after its first data batch."""
    offset, spans = 0, []
    for control, n in batches:
        spans.append((control, offset, offset + n - 1))
        offset += n
    data_spans = [(b, e) for c, b, e in spans if not c]
    if not data_spans:
        return
    # deltas end at the end of some data batches (one per batch, or merged), always the last one
    ends = sorted(set(data.draw(st.lists(st.sampled_from([e for _b, e in data_spans]))) + [data_spans[-1][1]]))
    starts = DeltaStarts()
    fake = [LogBatch(b, e, 1, 0, c, (), (), 0, "x", 0) for c, b, e in spans]
    seen = starts.watch(iter(fake))
    previous = -1
    for end in ends:
        for batch in seen:
            if batch.last_offset == end and not batch.control:
                break
        first = starts.first(end)
        first_data = min(b for b, e in data_spans if e > previous)
        assert first == max(previous + 1, first_data)
        assert previous < first <= end
        previous = end


def test_the_compiled_json_is_to_jsons_text_for_every_record(sample_dir: Path, logs: dict[str, Path]) -> None:
    from ctrlbatch.replay.schema.json_convert import to_json
    from ctrlbatch.replay.schema.record_classes import CONTROL_VERSION
    from ctrlbatch.replay.tables.json_fast import to_json_text

    dumps = json.JSONEncoder(separators=(",", ":")).encode
    kinds = set()
    for path in (sample_dir, logs["3x"], logs["4x"]):
        history = open_history(path, from_snapshot="newest") if path == logs["3x"] else open_history(path)
        for batch in [*history.snapshot_batches(), *history.batches()]:
            for r in batch.records:
                assert to_json_text(r.data, r.version) == dumps(to_json(r.data, r.version))
                kinds.add((r.type, r.version))
            for c in batch.control_records:
                assert to_json_text(c.data, CONTROL_VERSION) == dumps(to_json(c.data, CONTROL_VERSION))
                kinds.add((-c.type, 0))
    assert len(kinds) >= 15  # data and control records of many types and versions


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_compiled_json_is_to_jsons_text_for_any_record(data: Any) -> None:
    """Every record class at every version, any field values (tagged ones set or default)."""
    from ctrlbatch.replay.schema.json_convert import to_json
    from ctrlbatch.replay.schema.metadata_classes import RECORD_CLASSES
    from ctrlbatch.replay.tables.json_fast import to_json_text
    from ctrlbatch.testing.messages import all_versions, messages

    cls, version = data.draw(st.sampled_from(all_versions(list(RECORD_CLASSES.values()))))
    obj = data.draw(messages(cls, version))
    assert to_json_text(obj, version) == json.JSONEncoder(separators=(",", ":")).encode(to_json(obj, version))


def test_json_lines_and_dump_text_are_tables_too(logs: dict[str, Path], tmp_path: Path) -> None:
    """A JSON lines input (write_jsonl of the 3.x log) gives the binary log's rows, but for where
    they are (its file, a line); so does kafka-dump-log text where it prints the records."""
    path = tmp_path / "history.jsonl"
    with open(path, "w") as f:
        write_jsonl(open_history(logs["3x"]).batches(), f)
    table, parts = partitioned({"path": str(path), "includeNoOps": "true"})
    binary = one_read(logs["3x"], include_noops=True)
    assert parts == 1 and table.equals(one_read(path, include_noops=True))
    same = ["offset", "batch_base_offset", "batch_last_offset", "batch_epoch", "timestamp", "control", "type",
            "type_id", "version", "data"]
    assert table.select(same).equals(binary.select(same))
    assert set(table["file"].to_pylist()) == {str(path)} and table["position"][0].as_py() == 1
    dump = Path(__file__).parent / "data" / "dump-excerpt.txt"
    rows, _ = partitioned({"path": str(dump), "includeNoOps": "true"})
    assert rows.equals(one_read(dump, include_noops=True)) and rows.num_rows > 0


def test_one_log_segment_is_a_table(logs: dict[str, Path]) -> None:
    segment = sorted((logs["4x"] / "__cluster_metadata-0").glob("*.log"))[0]
    table, parts = partitioned({"path": str(segment), "unitBytes": "10000"})
    assert parts > 2 and table.equals(one_read(segment)) and table.num_rows > 100
    assert set(table["file"].to_pylist()) == {str(segment)}


def reference_cuts(segments: list[str], unit: int, max_parts: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """cuts' rule, spelled out: walk every batch start; cut at the first one at or past unit bytes
    after the last cut (or the start), remembering the batch before; a length <= 0 ends a segment."""
    import struct

    out: list[tuple[tuple[int, int], tuple[int, int]]] = []
    done, next_cut, prev = 0, unit, None
    for seg, path in enumerate(segments):
        data = Path(path).read_bytes()
        pos = 0
        while pos <= len(data) - 12:
            if done + pos >= next_cut and prev is not None:
                out.append(((seg, pos), prev))
                if len(out) + 1 >= max_parts:
                    return out
                next_cut = done + pos + unit
            length = struct.unpack_from(">qi", data, pos)[1]
            if length <= 0:
                break
            prev = (seg, pos)
            pos += 12 + length
        done += len(data)
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.lists(st.integers(min_value=-3, max_value=300), min_size=0, max_size=30), min_size=1,
                      max_size=4),
       unit=st.integers(min_value=1, max_value=3000), max_parts=st.integers(min_value=1, max_value=40),
       window=st.sampled_from([16, 40, 100, 1 << 20]), tail=st.integers(min_value=0, max_value=20))
def test_cuts_are_the_rules_cuts(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                                 sizes: list[list[int]], unit: int, max_parts: int, window: int, tail: int) -> None:
    """Any batch lengths (bad ones too), a truncated tail, any window the hop reads through."""
    import struct

    from ctrlbatch.replay.tables import plan

    root = tmp_path_factory.mktemp("cuts")
    segments = []
    for s, lengths in enumerate(sizes):
        data = b"".join(struct.pack(">qi", 0, length) + bytes(max(length, 0)) for length in lengths) + bytes(tail)
        (root / f"{s}.log").write_bytes(data)
        segments.append(str(root / f"{s}.log"))
    monkeypatch.setattr(plan, "WINDOW", window)
    assert cuts(segments, unit, max_parts) == reference_cuts(segments, unit, max_parts)


def test_a_cut_falls_on_a_batch_that_starts_exactly_a_unit_after_the_last(tmp_path: Path) -> None:
    import struct

    path = tmp_path / "0.log"
    path.write_bytes(b"".join(struct.pack(">qi", 0, 10) + bytes(10) for _ in range(10)))  # starts 0, 22, 44, ...
    assert cuts([str(path)], 44) == [((0, 44), (0, 22)), ((0, 88), (0, 66)), ((0, 132), (0, 110)), ((0, 176), (0, 154))]
    assert cuts([str(path)], 44) == reference_cuts([str(path)], 44, 1024)
