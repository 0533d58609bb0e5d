"""The one pass writing each unit's rows in the unit's own task (spark/onepass.py, ``WriteTo``):
the parts read back are the sequential engine's rows, numbered from the earlier units' counts; a
task waiting for an earlier unit's counts ends (None) when the pass is aborted, within its limit;
and the fewer units of the pass (plan.pass_unit_bytes_for) come in whole rounds per core, the
last in halves when the units are large (plan.taper)."""

from __future__ import annotations

import functools
import itertools
import os
import pickle
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.engine.local import replay_local
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.log.reading import Position
from ctrlbatch.replay.propagate.propagator import ReplayOptions
from ctrlbatch.replay.spark import onepass
from ctrlbatch.replay.spark.engine import EarlyCuts
from ctrlbatch.replay.spark.kept_groups import LARGE_BODY, KeptGroups
from ctrlbatch.replay.spark.plan import (
    MAX_UNIT_BYTES,
    MAX_UNITS,
    MIN_UNIT_BYTES,
    PASS_UNITS_PER_CORE,
    TAPER_BYTES,
    pass_unit_bytes_for,
    taper,
)
from ctrlbatch.replay.spark.ranges import batch_cuts, range_report
from ctrlbatch.replay.spark.source import HistorySource
from ctrlbatch.replay.spark.unit import UnitEnd
from ctrlbatch.replay.spark.write import WriteEnd


class _Alive:
    def is_alive(self) -> bool:
        return True

    def failed(self) -> bool:
        return False


def _begins(source: HistorySource, unit_bytes: int) -> list[Position]:
    return [(0, 0), *batch_cuts(source.open().segments, unit_bytes, 1000)]


def _compose_in_thread(exchange: str, begins: list[Position]) -> threading.Thread:
    def compose() -> None:
        assert onepass._compose_images(exchange, len(begins), begins, _Alive()) is None  # type: ignore[arg-type]

    driver = threading.Thread(target=compose, daemon=True)
    driver.start()
    return driver


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 50), unit_bytes=st.sampled_from([1500, 3000, 7000]), digest=st.sampled_from(["sha256", "none"]),
       frames=st.booleans(), large=st.sampled_from([1, 200, LARGE_BODY]))
def test_the_pass_writes_the_sequential_rows(tmp_path_factory: Any, seed: int, unit_bytes: int, digest: str,
                                            frames: bool, large: int) -> None:
    """... with the bodies kept in the task's file from ``large`` bytes on (kept_groups: these
    logs' bodies are all below LARGE_BODY, so smaller thresholds send them through the file)."""
    frames = frames and digest == "sha256"
    tmp = tmp_path_factory.mktemp("onepass-write")
    generate_log(tmp / "data", brokers=4, topics=4, partitions=16, records=2000, seed=seed, segment_bytes=4096)
    source = HistorySource(str(tmp / "data"))
    options = ReplayOptions(digest=digest)  # type: ignore[arg-type]
    expected = replay_local(source.open(), options, with_frames=frames).drain()
    exchange, out = str(tmp / "exchange"), tmp / "rows"
    os.mkdir(exchange)
    begins = _begins(source, unit_bytes)
    driver = _compose_in_thread(exchange, begins)
    write = onepass.WriteTo(str(out), frames, digest)
    ends: list[UnitEnd] = []
    with mock.patch.object(onepass, "KeptGroups", functools.partial(KeptGroups, large=large)):
        for i in range(len(begins)):
            stop = begins[i + 1] if i + 1 < len(begins) else None
            end = onepass.range_unit(source, options, i, begins[i], stop, exchange, 60.0, write)
            assert end is not None and end.error is None
            ends.append(pickle.loads(pickle.dumps(end)))
    driver.join(timeout=60)
    assert len(ends) > 3
    assert all(isinstance(e.written, WriteEnd) and e.written.error is None for e in ends)
    assert [e.written.index for e in ends if e.written is not None] == list(range(len(ends)))
    assert sum(e.written.rows for e in ends if e.written is not None) == len(expected)
    assert pq.read_table(out).to_pylist() == expected
    assert not [n for n in os.listdir(exchange) if n.endswith((".partial", ".groups", ".bodies"))]  # gone once written


def test_a_task_waiting_for_counts_ends_when_the_pass_is_aborted(tmp_path: Path) -> None:
    generate_log(tmp_path / "data", brokers=4, topics=4, partitions=16, records=1500, seed=2, segment_bytes=4096)
    source = HistorySource(str(tmp_path / "data"))
    begins = _begins(source, 3000)
    exchange = str(tmp_path / "exchange")
    os.mkdir(exchange)
    write = onepass.WriteTo(str(tmp_path / "rows"), False, "sha256")
    # unit 0 runs without writing (no counts published); unit 1 gets its image, then waits for them
    driver = _compose_in_thread(exchange, begins)
    assert onepass.range_unit(source, ReplayOptions(), 0, begins[0], begins[1], exchange, 30.0) is not None
    for i in range(2, len(begins)):  # the later reports, so the driver publishes every image
        onepass._publish(onepass._report_path(exchange, i), range_report(
            source, i, begins[i], begins[i + 1] if i + 1 < len(begins) else None))
    threading.Timer(1.0, onepass._publish, (os.path.join(exchange, onepass.ABORT), None)).start()
    start = time.monotonic()
    assert onepass.range_unit(source, ReplayOptions(), 1, begins[1], begins[2], exchange, 30.0, write) is None
    assert 0.9 < time.monotonic() - start < 10
    assert os.path.exists(onepass._counts_path(exchange, 1))  # its own counts published before it waited
    assert not (tmp_path / "rows").exists()
    # and without an abort, within its limit
    driver.join(timeout=60)
    empty = tmp_path / "empty-exchange"
    empty.mkdir()
    start = time.monotonic()
    assert onepass._wait_counts(str(empty), 1, 0.2) is None
    assert time.monotonic() - start < 5


def test_the_pass_cuts_whole_rounds_per_core(tmp_path: Path) -> None:
    def sized(total: int) -> Any:
        path = tmp_path / f"{total}.log"
        with open(path, "wb") as f:
            f.truncate(total)  # sparse: only the size matters
        return SimpleNamespace(segments=[str(path)])

    for total, cores in [(58 << 20, 2), (67 << 20, 2), (578 << 20, 2), (578 << 20, 3), (5 << 30, 2), (40 << 20, 8)]:
        size = pass_unit_bytes_for(sized(total), cores)
        units = -(-total // size)
        assert size >= MIN_UNIT_BYTES
        assert size <= MAX_UNIT_BYTES or units == MAX_UNITS
        assert units <= MAX_UNITS
        if units < MAX_UNITS:
            assert units % cores == 0 and units >= cores * PASS_UNITS_PER_CORE
    assert pass_unit_bytes_for(sized(58 << 20), 2) == -(-(58 << 20) // (2 * PASS_UNITS_PER_CORE))
    assert pass_unit_bytes_for(sized(1000), 2) == MIN_UNIT_BYTES


def test_the_last_round_is_in_halves_when_units_are_large() -> None:
    """plan.taper: the last ``cores`` units' worth of input, cut in halves, once a unit is at
    least TAPER_BYTES (the 10M-record log's 58 MB units: yes; the 1M log's 7 MB: no), fewer
    units' worth where MAX_UNITS binds, none on one core."""
    for total, cores in [(578 << 20, 2), (578 << 20, 3), (5 << 30, 2), (2 << 30, 14), (8 << 30, 32), (58 << 20, 2)]:
        size = -(-total // (-(-total // MAX_UNIT_BYTES)))  # units of at most MAX_UNIT_BYTES
        count = min(MAX_UNITS, total // size + 1)
        at, k = taper(total, cores, size, count)
        if size < TAPER_BYTES:
            assert (at, k) == (None, 0)
            continue
        want = min(cores, MAX_UNITS - count)
        if total <= want * size:  # nothing left before the last round
            assert (at, k) == (None, 0)
            continue
        assert k == want and count + k <= MAX_UNITS and (at is None) == (k == 0)
        if at is not None:
            assert at == total - k * size
    assert taper(578 << 20, 1, 64 << 20, 10) == (None, 0)  # one core: nothing to balance
    assert taper(578 << 20, 2, 578 << 20, 2) == (None, 0)  # one unit: no last round to halve
    assert taper(4 << 30, 2, 64 << 20, MAX_UNITS) == (None, 0)  # MAX_UNITS units already


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(4, 70), st.integers(1, 16))
def test_the_halves_never_run_out_of_cuts(units: int, cores: int) -> None:
    """With ``count + k`` cuts allowed (engine.replay_spark: count as it computes it), no unit is
    larger than a unit plus a batch, those from ``halves_from`` on than half a unit plus a batch,
    whatever the cores and however close to MAX_UNITS the count is (taper's TAPER_BYTES set
    aside: these units are small)."""
    segments = HistorySource(_one_segment_log()).open().segments
    total = sum(os.path.getsize(s) for s in segments)
    unit_bytes = -(-total // units)
    count = min(MAX_UNITS, total // unit_bytes + 1)
    k = min(cores, MAX_UNITS - count)
    if cores < 2 or k < 1 or total <= k * unit_bytes:
        return
    at = total - k * unit_bytes
    cuts = batch_cuts(segments, unit_bytes, count + k, halves_from=at)
    assert len(cuts) + 1 <= count + k
    starts = [0, *(pos for _, pos in cuts), total]  # one segment: a cut's position is its byte
    largest_batch = max(_batch_sizes(segments[0]))
    for a, b in itertools.pairwise(starts):
        assert b - a <= (unit_bytes // 2 if a >= at else unit_bytes) + largest_batch, (a, b, at)


@functools.cache
def _one_segment_log() -> str:
    out = tempfile.mkdtemp(prefix="onepass-halves-")
    generate_log(out, brokers=4, topics=4, partitions=16, records=3000, seed=3, segment_bytes=1 << 30)
    return out


def _batch_sizes(segment: str) -> list[int]:
    data = Path(segment).read_bytes()
    sizes, pos = [], 0
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos + 8: pos + 12], "big", signed=True)
        sizes.append(12 + length)
        pos += 12 + length
    return sizes


def test_early_cuts_are_the_cuts_the_engine_makes() -> None:
    """engine.EarlyCuts, begun before the JVM: for the arguments it was made for, exactly the cuts
    replay_spark would make; for any other unit size, count or halves, None (the engine cuts)."""
    history = HistorySource(_one_segment_log()).open()
    for cores in (1, 2, 3):
        early = EarlyCuts(history, cores)
        unit_bytes = pass_unit_bytes_for(history, cores)
        assert early.unit_bytes == unit_bytes
        want = [(0, 0), *batch_cuts(history.segments, unit_bytes, early.max_units, halves_from=early.halves_from)]
        assert early.begins(unit_bytes, early.max_units, early.halves_from) == want
        assert early.begins(unit_bytes + 1, early.max_units, early.halves_from) is None
        assert early.begins(unit_bytes, early.max_units + 1, early.halves_from) is None
        assert early.begins(unit_bytes, early.max_units, 12345) is None


def test_early_cuts_drop_their_error(monkeypatch: Any) -> None:
    """An error while the early cuts are made (a segment gone) leaves no cuts: None, and the
    engine makes them itself, raising the reader's error where it always did."""
    from ctrlbatch.replay.spark import engine

    def gone(*args: Any, **kwargs: Any) -> Any:
        raise FileNotFoundError(2, "No such file or directory", "00000000000000000000.log")

    monkeypatch.setattr(engine, "batch_cuts", gone)
    history = HistorySource(_one_segment_log()).open()
    early = EarlyCuts(history, 2)
    assert early.begins(early.unit_bytes, early.max_units, early.halves_from) is None
