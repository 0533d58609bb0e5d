"""The one pass's last range builds no net effect (spark/onepass.py's rules): what only the net
builder refused there is replayed from the exact image. A record the fold refuses fails the last
unit with the sequential engine's error (the same error the serial plan raised before, when the
builder refused the range); in an earlier range the builder still ends the pass. A range the fold
accepts but the builder does not compose replays in parallel with the sequential rows; a record
type of SERIAL_TYPES still plans serially, saying why, wherever it is."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from ctrlbatch.common import CommandError
from ctrlbatch.replay.engine.local import replay_local
from ctrlbatch.replay.generate.generator import generate_log, metadata_dir
from ctrlbatch.replay.generate.writer import encode_batch
from ctrlbatch.replay.image.image import MetadataReplayError
from ctrlbatch.replay.log import records as rec
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.propagate.propagator import ReplayOptions
from ctrlbatch.replay.schema.record_classes import encode_value, record_class
from ctrlbatch.replay.spark.source import HistorySource

from .test_spark_onepass import _pass

UNIT_BYTES = 3000
Z = uuid.UUID(int=0xABC)


def _value(type_id: int, **fields: Any) -> bytes:
    cls: Any = record_class(type_id)
    return encode_value(type_id, 0, cls(**fields))


def _log(tmp: Path, tail: list[bytes], padding: int) -> HistorySource:
    """A generated log with ``tail`` appended (one batch: one delta, never cut), then ``padding``
    batches creating fresh topics (enough to put the tail in an earlier range)."""
    generate_log(tmp / "data", brokers=4, topics=4, partitions=16, records=1500, seed=3, segment_bytes=1 << 20)
    directory = metadata_dir(tmp / "data")
    last = None
    for batch in open_history(directory).batches():
        last = batch
    assert last is not None
    offset, epoch, stamp = last.last_offset + 1, last.epoch, last.timestamp
    raw = encode_batch(offset, epoch, stamp, tail) + b"".join(
        encode_batch(offset + len(tail) + i, epoch, stamp,
                     [_value(rec.TOPIC_RECORD, name=f"pad{i}", topic_id=uuid.UUID(int=0x1000 + i))])
        for i in range(padding))
    segment = sorted(p for p in os.listdir(directory) if p.endswith(".log"))[-1]
    with open(os.path.join(directory, segment), "ab") as f:
        f.write(raw)
    return HistorySource(directory)


# The fold refuses the second RemoveTopicRecord (no such topic); the builder refuses the delta
# without the base (a topic removed in the delta that touched it).
REFUSED = [_value(rec.TOPIC_RECORD, name="zz", topic_id=Z), _value(rec.REMOVE_TOPIC_RECORD, topic_id=Z),
           _value(rec.REMOVE_TOPIC_RECORD, topic_id=Z)]


def _local_error(source: HistorySource) -> str:
    with pytest.raises(MetadataReplayError) as local:
        replay_local(source.open(), ReplayOptions()).drain()
    assert "Unable to delete topic with id" in str(local.value)
    return str(local.value)


def test_a_refused_record_in_the_last_range_fails_its_unit_with_the_sequential_error(tmp_path: Path) -> None:
    source = _log(tmp_path, REFUSED, 0)
    expected = _local_error(source)
    exchange = str(tmp_path / "exchange")
    os.mkdir(exchange)
    reason, ends = _pass(source, UNIT_BYTES, exchange)
    assert reason is None and all(e is not None for e in ends) and len(ends) > 3
    failed = [e for e in ends if e is not None and e.error is not None]
    assert [e.index for e in failed] == [len(ends) - 1]
    assert str(failed[0].error) == expected


def test_a_refused_record_in_an_earlier_range_still_ends_the_pass(tmp_path: Path) -> None:
    source = _log(tmp_path, REFUSED, 200)
    _local_error(source)
    exchange = str(tmp_path / "exchange")
    os.mkdir(exchange)
    reason, ends = _pass(source, UNIT_BYTES, exchange)
    assert reason is not None and reason.endswith(f"NotComposable: topic id {Z} is removed in the delta that touched it")
    assert int(reason.split()[1].rstrip(":")) < len(ends) - 1


def test_a_range_the_fold_accepts_but_the_builder_does_not_compose_replays_in_parallel_when_last(
    tmp_path: Path,
) -> None:
    """A TopicRecord for a live topic id (the fold starts the topic again, empty): the builder
    refuses it; in the last range the unit replays it from the exact image. (Before, the pass
    ended and the run was planned serially, with the same rows.)"""
    source = _log(tmp_path, [_value(rec.TOPIC_RECORD, name="zz", topic_id=Z),
                             _value(rec.TOPIC_RECORD, name="zz2", topic_id=Z)], 0)
    expected = replay_local(source.open(), ReplayOptions()).drain()
    exchange = str(tmp_path / "exchange")
    os.mkdir(exchange)
    reason, ends = _pass(source, UNIT_BYTES, exchange)
    assert reason is None and all(e is not None and e.error is None for e in ends)
    from ctrlbatch.replay.rows.rows import expand_rows
    from ctrlbatch.replay.spark.engine import first_seqs
    from ctrlbatch.replay.spark.group_spill import read_groups, spill_path

    done = [e for e in ends if e is not None]
    starts = first_seqs(done)
    rows: list[dict[str, Any]] = []
    for e in done:
        rows += expand_rows(read_groups(spill_path(exchange, e.index)), dict(starts[e.index]), False)
    assert rows == expected
    # in an earlier range it is a reason to plan serially, as before
    other = tmp_path / "other"
    other.mkdir()
    source = _log(other, [_value(rec.TOPIC_RECORD, name="zz", topic_id=Z),
                          _value(rec.TOPIC_RECORD, name="zz2", topic_id=Z)], 200)
    exchange = str(other / "exchange")
    os.mkdir(exchange)
    reason, _ = _pass(source, UNIT_BYTES, exchange)
    assert reason is not None and reason.endswith(f"NotComposable: TopicRecord for topic id {Z}, which is live")


def test_a_serial_type_in_the_last_range_still_plans_serially(tmp_path: Path) -> None:
    source = _log(tmp_path, [_value(rec.CLEAR_ELR_RECORD, topic_name="")], 0)
    exchange = str(tmp_path / "exchange")
    os.mkdir(exchange)
    reason, ends = _pass(source, UNIT_BYTES, exchange)
    assert reason == f"range {len(ends) - 1}: NotComposable: record type 28 (CLEAR_ELR_RECORD) is not composed"


@pytest.mark.parametrize("padding", [0, 200])
def test_the_engine_raises_the_sequential_error_wherever_the_refused_record_is(
    spark: Any, tmp_path: Path, padding: int
) -> None:
    from ctrlbatch.replay.spark.engine import replay_spark

    source = _log(tmp_path, REFUSED, padding)
    expected = _local_error(source)
    with pytest.raises(CommandError) as remote:
        replay_spark(spark, source, ReplayOptions(), requests_dir=tmp_path / "out", unit_bytes=UNIT_BYTES)
    assert str(remote.value) == expected
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.parquet"))


def test_the_engine_replays_a_builder_refused_last_range_in_parallel(spark: Any, tmp_path: Path) -> None:
    from ctrlbatch.replay.spark.engine import replay_spark

    source = _log(tmp_path, [_value(rec.TOPIC_RECORD, name="zz", topic_id=Z),
                             _value(rec.TOPIC_RECORD, name="zz2", topic_id=Z)], 0)
    local = replay_local(source.open(), ReplayOptions())
    rows = local.drain()
    result = replay_spark(spark, source, ReplayOptions(), requests_dir=tmp_path / "out", unit_bytes=UNIT_BYTES)
    assert result.planned == "parallel" and result.units > 3
    assert pq.read_table(tmp_path / "out").to_pylist() == rows
    assert result.summary.to_dict() == local.summary.to_dict()


def test_a_pass_that_ends_early_leaves_no_staged_image(tmp_path: Path) -> None:
    """The driver pickles image i+1 as soon as it is composed, under a name of its own; a pass
    that ends (here: range 1 does not go on from range 0) removes it."""
    import threading

    from ctrlbatch.replay.log.reading import Position
    from ctrlbatch.replay.spark import onepass
    from ctrlbatch.replay.spark.ranges import batch_cuts

    from .test_spark_onepass import _Alive

    generate_log(tmp_path / "data", brokers=4, topics=4, partitions=16, records=1500, seed=2, segment_bytes=4096)
    source = HistorySource(str(tmp_path / "data"))
    begins: list[Position] = [(0, 0), *batch_cuts(source.open().segments, UNIT_BYTES, 1000)]
    exchange = str(tmp_path / "exchange")
    os.mkdir(exchange)
    wrong = [begins[0], begins[2], *begins[2:]]
    task = threading.Thread(target=lambda: [
        onepass.range_unit(source, ReplayOptions(), i, wrong[i], wrong[i + 1] if i + 1 < len(wrong) else None,
                           exchange, 30.0)
        for i in range(2)
    ], daemon=True)
    task.start()
    reason = onepass._compose_images(exchange, len(wrong), begins, _Alive())  # type: ignore[arg-type]
    onepass._publish(os.path.join(exchange, onepass.ABORT), None)
    task.join(timeout=60)
    assert reason is not None and reason.startswith("range 0 ended at ")
    assert sorted(n for n in os.listdir(exchange) if n.startswith("image-")) == ["image-00000.image"]
