"""The kraft_metadata data source and replay_dataframe on the shared local[2] session.

Record for record against the one-process reader (the sample, generated 3.x and 4.x logs, a
snapshot start, skip-corrupt), SQL through a temporary view, the corrupt-input error, an
executor without ctrlbatch, a stream over a log a test writer appends to, and the requests
DataFrame against the Parquet rows of the local engine.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from ctrlbatch.replay import RECORDS_SCHEMA, REQUESTS_SCHEMA, ReplayInputError, register, replay_dataframe

from .tables_logs import LiveLog, make_logs
from .test_tables_rows import one_read


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_logs(tmp_path_factory.mktemp("tables-spark"))


@pytest.fixture(scope="module")
def md(spark: Any) -> Any:
    register(spark)
    return spark


def table_rows(md: Any, path: Path, **options: str) -> list[dict[str, Any]]:
    reader = md.read.format("kraft_metadata")
    for k, v in options.items():
        reader = reader.option(k, v)
    df = reader.load(str(path))
    assert df.schema == RECORDS_SCHEMA
    return [r.asDict() for r in df.collect()]


def reference(path: Path, include_noops: bool = False, **open_args: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = one_read(path, include_noops=include_noops, **open_args).to_pylist()
    for r in rows:  # collect() gives naive datetimes in the process's zone (UTC here: conftest sets TZ)
        r["timestamp"] = None if r["timestamp"] is None else r["timestamp"].replace(tzinfo=None)
    return rows


def test_the_data_source_reads_what_the_one_process_reader_reads(md: Any, sample_dir: Path,
                                                                   logs: dict[str, Path]) -> None:
    assert os.environ["TZ"] == "UTC"
    assert table_rows(md, sample_dir, includeNoOps="true") == reference(sample_dir, include_noops=True)
    assert table_rows(md, logs["3x"], unitBytes="20000") == reference(logs["3x"])
    assert table_rows(md, logs["4x"], unitBytes="30000") == reference(logs["4x"])
    assert table_rows(md, logs["3x"], fromSnapshot="newest", unitBytes="30000") == reference(
        logs["3x"], from_snapshot="newest")
    skipped = table_rows(md, logs["corrupt"], skipCorrupt="true", unitBytes="25000")
    assert skipped == reference(logs["corrupt"], skip_corrupt=True) and len(skipped) < len(reference(logs["3x"]))


def test_sql_through_a_temporary_view(md: Any, sample_dir: Path) -> None:
    md.sql(f"CREATE OR REPLACE TEMPORARY VIEW md USING kraft_metadata OPTIONS (path '{sample_dir}')")
    counts = {r["type"]: r["n"] for r in md.sql("SELECT type, count(*) AS n FROM md GROUP BY type").collect()}
    ref = reference(sample_dir)
    assert counts == {t: sum(1 for r in ref if r["type"] == t) for t in {r["type"] for r in ref}}
    leaders = md.sql(
        "SELECT offset, variant_get(parse_json(data), '$.leader', 'int') AS leader FROM md "
        "WHERE type = 'PARTITION_CHANGE_RECORD' AND variant_get(parse_json(data), '$.leader', 'int') IS NOT NULL "
        "ORDER BY offset").collect()
    assert leaders and all(r["leader"] in (-1, 1) for r in leaders)


def test_a_corrupt_input_fails_with_the_readers_line(md: Any, logs: dict[str, Path]) -> None:
    with pytest.raises(ReplayInputError) as expected:
        list(__import__("ctrlbatch.replay", fromlist=["open_history"]).open_history(logs["corrupt"]).batches())
    with pytest.raises(Exception) as failed:
        md.read.format("kraft_metadata").load(str(logs["corrupt"])).collect()
    lines = str(failed.value).splitlines()
    assert lines[:2] == ["An exception was thrown from the Python worker:",
                         f"ctrlbatch.replay.log.errors.ReplayInputError: {expected.value}"]
    assert "File " not in str(failed.value)  # no traceback: the reader's line right under Spark's heading


def test_bad_options_fail_at_load_naming_the_option(md: Any, sample_dir: Path) -> None:
    with pytest.raises(Exception) as failed:
        md.read.format("kraft_metadata").option("unitBytes", "-3").load(str(sample_dir))
    text = str(failed.value)
    assert ("ctrlbatch.replay.tables.options.OptionError: kraft_metadata option unitBytes: expected a positive "
            "integer (bytes per partition), got '-3'") in text and "Traceback" not in text


def test_an_executor_without_ctrlbatch_fails_naming_what_it_lacks(md: Any, sample_dir: Path) -> None:
    """The classes Spark ships are pickled by value: a Python that cannot import ctrlbatch
    unpickles them and then fails in one line naming spark.pyspark.python."""
    from pyspark import cloudpickle

    from ctrlbatch.replay.tables.source import KraftMetadataDataSource

    source = KraftMetadataDataSource({"path": str(sample_dir)})
    blob = cloudpickle.dumps((KraftMetadataDataSource, source.reader(RECORDS_SCHEMA)))  # type: ignore[no-untyped-call]
    script = (
        "import pickle, sys\n"
        "sys.modules['ctrlbatch'] = None  # this Python cannot import ctrlbatch\n"
        "cls, reader = pickle.loads(sys.stdin.buffer.read())\n"
        "try:\n    reader.partitions()\nexcept RuntimeError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], input=blob, capture_output=True, timeout=60)
    out = done.stdout.decode().strip()
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert out.startswith("kraft_metadata: this Spark Python process cannot import ctrlbatch") and "\n" not in out
    assert "spark.pyspark.python" in out
    assert pickle.loads(blob)[0] is not None


def test_a_stream_follows_a_live_log(md: Any, tmp_path: Path) -> None:
    live = LiveLog(tmp_path / "data")
    checkpoint = str(tmp_path / "checkpoint")
    seen: list[int] = []

    def collect(frame: Any, _batch_id: int) -> None:
        seen.extend(r["offset"] for r in frame.select("offset").collect())

    def start() -> Any:
        return (md.readStream.format("kraft_metadata").option("includeNoOps", "true").load(str(live.root))
                .writeStream.foreachBatch(collect).option("checkpointLocation", checkpoint).start())

    live.add(0, 4)
    live.append(live.batch(5)[:25])  # a batch being written
    query = start()
    try:
        query.processAllAvailable()
        assert seen == [0, 1, 2, 3, 4]
        live.append(live.batch(5)[25:])
        live.roll(6)
        live.add(6, 8)
        query.processAllAvailable()
        assert seen == list(range(9))
    finally:
        query.stop()
    live.add(9, 11)
    query = start()  # restarted from its checkpoint: nothing twice, nothing skipped
    try:
        query.processAllAvailable()
        assert seen == list(range(12))
        live.rewrite_last(11, timestamp=5_000)  # the tail truncated and written again (KAFKA-14704)
        live.add(12, 12)
        with pytest.raises(Exception) as failed:
            query.processAllAvailable()
        text = str(failed.value)
        assert "the batch of offsets 11-11 changed after offset 11 was emitted" in text and "Traceback" not in text
    finally:
        query.stop()
    assert seen == list(range(12))


def test_a_stream_restarted_after_its_segments_were_deleted_stops(md: Any, tmp_path: Path) -> None:
    live = LiveLog(tmp_path / "data")
    checkpoint = str(tmp_path / "checkpoint")
    seen: list[int] = []

    def start() -> Any:
        return (md.readStream.format("kraft_metadata").option("includeNoOps", "true").load(str(live.root))
                .writeStream.foreachBatch(lambda f, _i: seen.extend(r["offset"] for r in f.collect()))
                .option("checkpointLocation", checkpoint).start())

    live.add(0, 2)
    query = start()
    query.processAllAvailable()
    query.stop()
    live.roll(3)
    live.add(3, 5)
    live.roll(6)
    live.add(6, 7)
    live.delete(0)
    live.delete(3)
    query = start()
    try:
        with pytest.raises(Exception) as failed:
            query.processAllAvailable()
    finally:
        query.stop()
    assert "offset 3 is no longer on disk" in str(failed.value) and seen == [0, 1, 2]
    assert "Traceback" not in str(failed.value)


def test_the_requests_dataframe_is_the_parquet_output(md: Any, sample_dir: Path, logs: dict[str, Path],
                                                      tmp_path: Path) -> None:
    from ctrlbatch.replay.run.job import ReplayJob, execute

    for name, path, snapshot in (("sample", sample_dir, None), ("3x", logs["3x"], "newest"), ("4x", logs["4x"], None)):
        out = tmp_path / name
        execute(ReplayJob(str(path), engine="local", from_snapshot=snapshot, progress=False), out)
        expected = pq.read_table(out / "requests").to_pylist()
        frame = replay_dataframe(md, path, from_snapshot=snapshot, work_dir=tmp_path / f"{name}-work")
        assert frame.schema == REQUESTS_SCHEMA
        got = [r.asDict() for r in frame.collect()]
        assert len(got) == len(expected) > 0
        for row, want in zip(got, expected, strict=True):
            assert row.pop("delta_time").timestamp() * 1000 == want["timestamp"]
            assert row == want
        assert all(w["delta_first_offset"] <= w["delta_last_offset"] for w in expected)


def test_the_requests_dataframe_fails_with_the_replays_line(md: Any, logs: dict[str, Path]) -> None:
    with pytest.raises(ReplayInputError, match="CRC-32C mismatch"):
        replay_dataframe(md, logs["corrupt"])
