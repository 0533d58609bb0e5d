"""The Spark engine's pieces without Spark: what crosses from executors to the driver is typed
(UnitEnd, WriteEnd), errors included as values that survive pickling (OS errors too, one line
naming the path: nothing is read out of Spark's text); the groups stay in each unit's
spill file; the plan's cuts hand each unit the reading loop's state, so units replayed one by
one give the sequential rows."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from ctrlbatch.common import CommandError
from ctrlbatch.replay.engine.local import replay_local
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.image.image import MetadataReplayError
from ctrlbatch.replay.log.errors import ReplayInputError
from ctrlbatch.replay.propagate.propagator import ReplayOptions
from ctrlbatch.replay.rows.rows import expand_rows
from ctrlbatch.replay.spark.engine import first_seqs
from ctrlbatch.replay.spark.group_spill import read_groups, spill_path
from ctrlbatch.replay.spark.plan import plan_units
from ctrlbatch.replay.spark.source import HistorySource
from ctrlbatch.replay.spark.unit import UnitEnd, first_error, run_unit
from ctrlbatch.replay.spark.write import WriteEnd, write_unit


def _units_run(source: HistorySource, unit_bytes: int, spill: str | None = None, coalesce: int = 1) -> list[UnitEnd]:
    """Every unit of the plan replayed (the unit and its end pickled and unpickled, as Spark ships them)."""
    out = []
    for _, unit in plan_units(source, coalesce, unit_bytes, 1000):
        unit = pickle.loads(pickle.dumps(unit))
        out.append(pickle.loads(pickle.dumps(run_unit(source, ReplayOptions(), coalesce, unit, spill))))
    return out


def test_units_replayed_one_by_one_give_the_sequential_rows(tmp_path: Path) -> None:
    generate_log(tmp_path / "data", brokers=4, topics=4, partitions=16, records=2500, seed=9, segment_bytes=4096)
    source = HistorySource(str(tmp_path / "data"))
    expected = replay_local(source.open(), ReplayOptions(), with_frames=True).drain()
    spill = str(tmp_path / "spill")
    os.mkdir(spill)
    ends = _units_run(source, 3000, spill)
    assert len(ends) > 5 and [e.index for e in ends] == list(range(len(ends)))
    assert all(e.error is None for e in ends)
    assert sorted(os.listdir(spill)) == [os.path.basename(spill_path(spill, e.index)) for e in ends]  # no partial file
    starts = first_seqs(ends)
    rows: list[dict[str, Any]] = []
    for e in ends:
        rows += expand_rows(read_groups(spill_path(spill, e.index)), dict(starts[e.index]), True)
    assert rows == expected
    bare = _units_run(source, 3000)  # without a spill directory: the same counts, and no file
    assert [(e.index, e.counts, e.error) for e in bare] == [(e.index, e.counts, e.error) for e in ends]


def test_write_unit_writes_the_units_rows(tmp_path: Path) -> None:
    """The write task's Parquet part holds the unit's rows as the sequential engine numbers them."""
    generate_log(tmp_path / "data", brokers=4, topics=4, partitions=16, records=1500, seed=3, segment_bytes=4096)
    source = HistorySource(str(tmp_path / "data"))
    expected = replay_local(source.open(), ReplayOptions()).drain()
    spill = str(tmp_path / "spill")
    os.mkdir(spill)
    ends = _units_run(source, 2000, spill)
    starts = first_seqs(ends)
    out = tmp_path / "requests"
    out.mkdir()
    written = [pickle.loads(pickle.dumps(write_unit(e.index, spill, starts[e.index], str(out), False))) for e in ends]
    assert all(isinstance(w, WriteEnd) and w.error is None for w in written)
    assert [w.index for w in written] == [e.index for e in ends]
    assert sum(w.rows for w in written) == len(expected)
    table = pq.read_table(out)
    assert table.to_pylist() == expected


def test_a_refused_record_crosses_as_a_value_with_its_place(refused_record_log: tuple[Path, int]) -> None:
    directory, _ = refused_record_log
    source = HistorySource(str(directory))
    with pytest.raises(MetadataReplayError) as local:
        replay_local(source.open(), ReplayOptions()).drain()
    error = first_error(_units_run(source, 10**6))
    assert isinstance(error, MetadataReplayError) and str(error) == str(local.value)


def test_bad_input_crosses_as_a_value_and_the_earliest_error_wins(tmp_path: Path) -> None:
    generate_log(tmp_path / "data", brokers=3, topics=3, partitions=9, records=900, seed=4, segment_bytes=4096)
    segment = sorted((tmp_path / "data" / "__cluster_metadata-0").glob("*.log"))[-1]
    raw = bytearray(segment.read_bytes())
    raw[-2] ^= 0xFF  # the last batch of the log: a CRC mismatch
    segment.write_bytes(bytes(raw))
    source = HistorySource(str(tmp_path / "data"))
    with pytest.raises(ReplayInputError) as local:
        replay_local(source.open(), ReplayOptions()).drain()
    spill = str(tmp_path / "spill")
    os.mkdir(spill)
    ends = _units_run(source, 2000, spill)
    assert len(ends) > 2
    errors = [e.error for e in ends if e.error is not None]
    assert len(errors) == 1 and isinstance(errors[0], ReplayInputError) and isinstance(errors[0], CommandError)
    assert str(first_error(ends)) == str(local.value)
    failed = next(e for e in ends if e.error is not None)
    assert not os.path.exists(spill_path(spill, failed.index))  # the failed unit left no file, not even a partial one
    assert not [n for n in os.listdir(spill) if n.endswith(".partial")]


def _one_unit_spilled(tmp_path: Path) -> tuple[HistorySource, str, UnitEnd]:
    generate_log(tmp_path / "data", brokers=3, topics=3, partitions=9, records=300, seed=5)
    source = HistorySource(str(tmp_path / "data"))
    spill = str(tmp_path / "spill")
    os.mkdir(spill)
    (end,) = _units_run(source, 10**9, spill)
    assert end.error is None
    return source, spill, end


def test_a_write_task_that_cannot_write_hands_back_the_os_error_as_one_line(tmp_path: Path) -> None:
    _, spill, end = _one_unit_spilled(tmp_path)
    blocker = tmp_path / "requests"
    blocker.write_text("a file where the requests directory should be")
    ended = pickle.loads(pickle.dumps(write_unit(end.index, spill, {}, str(blocker), False)))
    assert isinstance(ended, WriteEnd) and ended.rows == 0 and isinstance(ended.error, CommandError)
    assert str(ended.error) == f"{blocker}: File exists" and "\n" not in str(ended.error)
    assert first_error([WriteEnd(3, 5), ended, WriteEnd(7, 0, CommandError("later"))]) is ended.error


def test_a_write_task_whose_spill_file_is_gone_hands_back_its_path(tmp_path: Path) -> None:
    _, spill, end = _one_unit_spilled(tmp_path)
    os.remove(spill_path(spill, end.index))
    ended = write_unit(end.index, spill, {}, str(tmp_path / "requests"), False)
    assert ended.rows == 0 and str(ended.error) == f"{spill_path(spill, end.index)}: No such file or directory"


def test_a_unit_task_that_cannot_spill_hands_back_the_os_error(tmp_path: Path) -> None:
    generate_log(tmp_path / "data", brokers=3, topics=3, partitions=9, records=300, seed=5)
    source = HistorySource(str(tmp_path / "data"))
    missing = str(tmp_path / "no-such-spill-dir")
    (end,) = _units_run(source, 10**9, missing)
    assert isinstance(end.error, CommandError) and str(end.error).startswith(missing)
    assert first_error([end]) is not None and "\n" not in str(end.error)
