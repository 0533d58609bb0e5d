"""The Spark engine gives the sequential engine's answer: same rows (byte for byte, in order),
same summary, same read counters, on the real sample and on generated logs, whatever the split."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.common import CommandError
from ctrlbatch.replay.engine.local import replay_local
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.propagate.propagator import ReplayOptions
from ctrlbatch.replay.rows.rows import REQUEST_SCHEMA
from ctrlbatch.replay.spark.engine import HistorySource, replay_spark
from ctrlbatch.replay.spark.plan import pack_image, plan_units, unpack_image


def local_answer(source: HistorySource, options: ReplayOptions, coalesce: int = 1, with_frames: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    history = source.open()
    result = replay_local(history, options, coalesce=coalesce, with_frames=with_frames)
    rows = result.drain()
    return rows, result.summary.to_dict(), history.stats.to_dict()


def spark_answer(spark: Any, source: HistorySource, options: ReplayOptions, out: Path, **kw: Any) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any], Any]:
    result = replay_spark(spark, source, options, requests_dir=out, **kw)
    table = pq.read_table(out)
    assert table.schema.equals(REQUEST_SCHEMA)
    assert table.num_rows == result.rows
    return table.to_pylist(), result.summary.to_dict(), result.stats.to_dict(), result


def test_sample_spark_equals_local(spark: Any, sample_dir: Path, tmp_path: Path) -> None:
    source = HistorySource(str(sample_dir))
    options = ReplayOptions()
    rows, summary, stats = local_answer(source, options, with_frames=True)
    assert rows, "the sample produces requests"
    got_rows, got_summary, got_stats, result = spark_answer(
        spark, source, options, tmp_path / "requests", unit_bytes=20_000, with_frames=True
    )
    assert result.units > 5  # really split: units boundaries are exercised
    assert result.planned == "parallel" and "plan" not in result.seconds  # no planning task: spark/ranges.py
    assert got_rows == rows
    assert got_summary == summary
    assert got_stats == stats


@st.composite
def small_logs(draw: st.DrawFn) -> dict[str, Any]:
    brokers = draw(st.integers(1, 6))
    topics = draw(st.integers(1, 6))
    return {
        "brokers": brokers,
        "topics": topics,
        "partitions": draw(st.integers(topics, 4 * topics)),
        "records": draw(st.integers(50, 1500)),
        "seed": draw(st.integers(0, 2**16)),
        "replication_factor": draw(st.integers(1, min(3, brokers))),
    }


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    log=small_logs(),
    coalesce=st.sampled_from([1, 1, 2, 5]),
    unit_bytes=st.sampled_from([2000, 5000, 10**9]),
    targets=st.sampled_from(["all", "migrating"]),
    correct_offline=st.booleans(),
)
def test_generated_logs_spark_equals_local(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, log: dict[str, Any], coalesce: int, unit_bytes: int,
    targets: Any, correct_offline: bool,
) -> None:
    base = tmp_path_factory.mktemp("log")
    generate_log(base / "data", segment_bytes=4096, **log)
    source = HistorySource(str(base / "data"))
    options = ReplayOptions(targets=targets, correct_offline=correct_offline)
    rows, summary, stats = local_answer(source, options, coalesce)
    got_rows, got_summary, got_stats, result = spark_answer(
        spark, source, options, base / "requests", coalesce=coalesce, unit_bytes=unit_bytes
    )
    assert result.planned == ("parallel" if coalesce == 1 else "serial: --coalesce > 1")
    assert got_rows == rows
    assert got_summary == summary
    assert got_stats == stats


def test_from_snapshot_spark_equals_local(spark: Any, tmp_path: Path) -> None:
    generate_log(tmp_path / "data", brokers=4, topics=5, partitions=30, records=3000, seed=7, snapshots=2,
                 segment_bytes=8192)
    source = HistorySource(str(tmp_path / "data"), from_snapshot="newest")
    history = source.open()
    assert history.snapshot is not None and history.snapshot.end_offset > 0
    options = ReplayOptions()
    rows, summary, stats = local_answer(source, options)
    got_rows, got_summary, got_stats, result = spark_answer(spark, source, options, tmp_path / "requests", unit_bytes=2000)
    assert result.planned == "serial: the history starts from a snapshot"
    assert got_rows == rows
    assert {r["delta_last_offset"] for r in rows if r["update_type"] == "FULL"}, "the image path sends FULL requests"
    assert (got_summary, got_stats) == (summary, stats)


def _corrupt_middle_batch(data: Path) -> tuple[Path, int]:
    """Flip a byte inside a data batch in the middle of the first segment; returns (file, batch position)."""
    from ctrlbatch.replay.log.segments import scan_batches

    segment = sorted((data / "__cluster_metadata-0").glob("*.log"))[0]
    pointers = list(scan_batches(segment))
    victim = pointers[len(pointers) // 2]
    raw = bytearray(segment.read_bytes())
    raw[victim.position + victim.length - 2] ^= 0xFF
    segment.write_bytes(bytes(raw))
    return segment, victim.position


def test_corrupt_input_is_named_and_skippable(spark: Any, tmp_path: Path) -> None:
    generate_log(tmp_path / "data", brokers=3, topics=3, partitions=9, records=600, seed=3)
    segment, position = _corrupt_middle_batch(tmp_path / "data")
    source = HistorySource(str(tmp_path / "data"))
    with pytest.raises(CommandError, match=rf"{segment.name}, byte offset {position}: CRC-32C mismatch"):
        replay_spark(spark, source, ReplayOptions(), unit_bytes=3000)
    skipping = HistorySource(str(tmp_path / "data"), skip_corrupt=True)
    rows, summary, stats = local_answer(skipping, ReplayOptions())
    got_rows, got_summary, got_stats, _ = spark_answer(spark, skipping, ReplayOptions(), tmp_path / "r", unit_bytes=3000)
    assert len(got_stats["corrupt"]) == 1 and f"byte offset {position}" in got_stats["corrupt"][0]
    assert (got_rows, got_summary, got_stats) == (rows, summary, stats)


def test_units_cover_the_log_once_and_carry_exact_images(tmp_path: Path) -> None:
    generate_log(tmp_path / "data", brokers=3, topics=4, partitions=12, records=2000, seed=11, segment_bytes=4096)
    source = HistorySource(str(tmp_path / "data"))
    units = [u for _, u in plan_units(source, 1, 5000, 1000)]
    assert [u.index for u in units] == list(range(len(units))) and len(units) > 3
    assert units[0].start is None and units[-1].stop is None
    assert all(a.stop == b.start for a, b in zip(units, units[1:], strict=False))
    for unit in units:
        assert unpack_image(pack_image(unit.image)) == unit.image
    capped = [u for _, u in plan_units(source, 1, 1, 4)]
    assert len(capped) == 4 and capped[-1].stop is None


def test_text_input_is_one_unit(spark: Any, tmp_path: Path) -> None:
    generate_log(tmp_path / "data", brokers=3, topics=2, partitions=6, records=400, seed=5, jsonl=tmp_path / "log.jsonl")
    source = HistorySource(str(tmp_path / "log.jsonl"))
    rows, summary, _ = local_answer(source, ReplayOptions())
    got_rows, got_summary, _, result = spark_answer(spark, source, ReplayOptions(), tmp_path / "r")
    assert result.units == 1
    assert (got_rows, got_summary) == (rows, summary)
    assert rows


def test_bad_arguments_are_named(spark: Any, sample_dir: Path) -> None:
    with pytest.raises(TypeError, match="source"):
        replay_spark(spark, str(sample_dir), ReplayOptions())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="coalesce"):
        replay_spark(spark, HistorySource(str(sample_dir)), ReplayOptions(), coalesce=0)
    with pytest.raises(ValueError, match="unit_bytes"):
        replay_spark(spark, HistorySource(str(sample_dir)), ReplayOptions(), unit_bytes=0)


def test_corrupt_batches_at_unit_boundaries_are_counted_once(spark: Any, tmp_path: Path) -> None:
    """Cuts fall right after a good batch: a corrupt batch just after a cut belongs to the next
    unit, so with --skip-corrupt every skipped batch is reported exactly as the sequential reader does."""
    from ctrlbatch.replay.log.segments import read_segment, scan_batches

    generate_log(tmp_path / "data", brokers=3, topics=3, partitions=9, records=900, seed=4)
    segment = sorted((tmp_path / "data" / "__cluster_metadata-0").glob("*.log"))[0]
    raw = bytearray(segment.read_bytes())
    noop_only = {b.position for b in read_segment(segment) if not b.control and not b.records}
    victims = [p for p in scan_batches(segment) if p.position in noop_only][5::2]  # the replay stays valid
    for p in victims:
        raw[p.position + p.length - 1] ^= 0x01
    segment.write_bytes(bytes(raw))
    source = HistorySource(str(tmp_path / "data"), skip_corrupt=True)
    rows, summary, stats = local_answer(source, ReplayOptions())
    assert len(victims) > 20 and stats["corrupt_count"] == len(victims)
    assert len(stats["corrupt"]) == min(len(victims), 100)  # the first 100 skipped spans in full (SkippedLog)
    starts = {u.start.position for _, u in plan_units(source, 1, 400, 64) if u.start is not None}
    assert starts & {p.position for p in victims}, "some unit starts right at a corrupt batch"
    got_rows, got_summary, got_stats, result = spark_answer(spark, source, ReplayOptions(), tmp_path / "r", unit_bytes=400)
    assert result.units > 10
    assert (got_rows, got_summary, got_stats) == (rows, summary, stats)


def test_a_refused_record_is_named_as_the_sequential_engine_names_it(
    spark: Any, tmp_path: Path, refused_record_log: tuple[Path, int]
) -> None:
    from ctrlbatch.replay.image.image import MetadataReplayError

    directory, bad_at = refused_record_log
    source = HistorySource(str(directory))
    with pytest.raises(MetadataReplayError) as local:
        replay_local(source.open(), ReplayOptions()).drain()
    assert f"00000000000000000000.log, byte offset {bad_at} (the batch of offsets 1-1): record at offset 1" in str(
        local.value
    )
    with pytest.raises(CommandError) as remote:
        replay_spark(spark, source, ReplayOptions(), requests_dir=tmp_path / "out")
    assert str(remote.value) == str(local.value)


def test_units_are_of_equal_size_even_when_the_cap_on_units_binds(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from ctrlbatch.replay.spark.plan import MAX_UNIT_BYTES, MAX_UNITS, MIN_UNIT_BYTES, unit_bytes_for

    def sized(total: int) -> Any:
        path = tmp_path / f"{total}.log"
        with open(path, "wb") as f:
            f.truncate(total)  # sparse: only the size matters
        return SimpleNamespace(segments=[str(path)])

    big = MAX_UNITS * MAX_UNIT_BYTES + 24_000_000  # MAX_UNITS units of MAX_UNIT_BYTES would leave 24 MB to the last
    size = unit_bytes_for(sized(big), 2)
    assert size * MAX_UNITS >= big and size - (big // MAX_UNITS) <= 1
    assert unit_bytes_for(sized(40 << 20), 2) == max(MIN_UNIT_BYTES, min(MAX_UNIT_BYTES, (40 << 20) // 16))
    assert unit_bytes_for(sized(1000), 2) == MIN_UNIT_BYTES


def test_flipped_batch_epochs_at_unit_boundaries_are_found_as_the_sequential_reader_finds_them(
    spark: Any, tmp_path: Path
) -> None:
    """The epoch check's state crosses unit boundaries: a batch whose partitionLeaderEpoch was
    flipped (outside the CRC) right at a unit start is refused with the same message, or with
    --skip-corrupt skipped and reported with its span exactly as the sequential reader does."""
    import struct

    from ctrlbatch.replay.log.segments import read_segment

    generate_log(tmp_path / "data", brokers=3, topics=3, partitions=9, records=900, seed=4)
    segment = sorted((tmp_path / "data" / "__cluster_metadata-0").glob("*.log"))[0]
    plain = HistorySource(str(tmp_path / "data"))
    starts = {u.start.position for _, u in plan_units(plain, 1, 400, 64) if u.start is not None}
    noop_only = {b.position for b in read_segment(segment) if not b.control and not b.records and b.epoch > 0}
    victims = sorted(starts & noop_only)[1::3]
    assert len(victims) > 3
    raw = bytearray(segment.read_bytes())
    for position in victims:
        struct.pack_into(">i", raw, position + 12, 0)  # epoch 0: below the epoch in office
    segment.write_bytes(bytes(raw))
    with pytest.raises(CommandError) as local:
        replay_local(plain.open(), ReplayOptions()).drain()
    with pytest.raises(CommandError) as remote:
        replay_spark(spark, plain, ReplayOptions(), unit_bytes=400)
    assert str(remote.value) == str(local.value) and f"byte offset {victims[0]}: batch epoch 0 is below" in str(local.value)
    source = HistorySource(str(tmp_path / "data"), skip_corrupt=True)
    rows, summary, stats = local_answer(source, ReplayOptions())
    assert [c.split(": ", 1)[0] for c in stats["corrupt"]] == [f"{segment}, byte offset {p}" for p in victims]
    assert all("(skipped " in c for c in stats["corrupt"])
    got_rows, got_summary, got_stats, result = spark_answer(spark, source, ReplayOptions(), tmp_path / "r", unit_bytes=400)
    assert result.units > 10
    assert (got_rows, got_summary, got_stats) == (rows, summary, stats)
