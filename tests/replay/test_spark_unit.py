"""The Spark engine's pieces without Spark: what crosses from executors to the driver is typed
(UnitChunk / UnitEnd), errors included as values that survive pickling; the plan's cuts hand
each unit the reading loop's state, so units replayed one by one give the sequential rows."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from ctrlbatch.common import CommandError
from ctrlbatch.replay.errors import ReplayInputError
from ctrlbatch.replay.generator import generate_log
from ctrlbatch.replay.image import MetadataReplayError
from ctrlbatch.replay.local_engine import replay_local
from ctrlbatch.replay.propagator import ReplayOptions
from ctrlbatch.replay.rows import expand_rows
from ctrlbatch.replay.spark_engine import first_seqs
from ctrlbatch.replay.spark_plan import HistorySource, plan_units
from ctrlbatch.replay.spark_unit import UnitChunk, first_error, run_unit


def _units_run(source: HistorySource, unit_bytes: int, coalesce: int = 1) -> list[list[UnitChunk]]:
    """Every unit of the plan replayed (each chunk pickled and unpickled, as Spark ships it)."""
    out = []
    for _, unit in plan_units(source, coalesce, unit_bytes, 1000):
        unit = pickle.loads(pickle.dumps(unit))
        out.append([pickle.loads(pickle.dumps(c)) for c in run_unit(source, ReplayOptions(), coalesce, unit)])
    return out


def test_units_replayed_one_by_one_give_the_sequential_rows(tmp_path: Path) -> None:
    generate_log(tmp_path / "data", brokers=4, topics=4, partitions=16, records=2500, seed=9, segment_bytes=4096)
    source = HistorySource(str(tmp_path / "data"))
    expected = replay_local(source.open(), ReplayOptions(), with_frames=True).drain()
    units = _units_run(source, 3000)
    assert len(units) > 5
    for chunks in units:  # exactly one end per unit, on its last chunk
        assert [c.end is not None for c in chunks] == [False] * (len(chunks) - 1) + [True]
    ends = [chunks[-1].end for chunks in units]
    assert all(e is not None and e.error is None for e in ends)
    starts = first_seqs([e for e in ends if e is not None])
    rows: list[dict[str, Any]] = []
    for i, chunks in enumerate(units):
        rows += expand_rows((g for c in chunks for g in c.groups), dict(starts[i]), True)
    assert rows == expected


def test_a_refused_record_crosses_as_a_value_with_its_place(refused_record_log: tuple[Path, int]) -> None:
    directory, _ = refused_record_log
    source = HistorySource(str(directory))
    with pytest.raises(MetadataReplayError) as local:
        replay_local(source.open(), ReplayOptions()).drain()
    ends = [chunks[-1].end for chunks in _units_run(source, 10**6)]
    error = first_error([e for e in ends if e is not None])
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
    units = _units_run(source, 2000)
    assert len(units) > 2
    ends = [chunks[-1].end for chunks in units]
    errors = [e.error for e in ends if e is not None and e.error is not None]
    assert len(errors) == 1 and isinstance(errors[0], ReplayInputError) and isinstance(errors[0], CommandError)
    assert str(first_error([e for e in ends if e is not None])) == str(local.value)
