"""The one pass writing each unit's rows in the unit's own task (spark/onepass.py, ``WriteTo``):
the parts read back are the sequential engine's rows, numbered from the earlier units' counts; a
task waiting for an earlier unit's counts ends (None) when the pass is aborted, within its limit;
and the fewer units of the pass (plan.pass_unit_bytes_for) come in whole rounds per core, the
last in halves when the units are large (plan.pass_halves_from)."""

from __future__ import annotations

import os
import pickle
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.engine.local import replay_local
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.log.reading import Position
from ctrlbatch.replay.propagate.propagator import ReplayOptions
from ctrlbatch.replay.spark import onepass
from ctrlbatch.replay.spark.plan import (
    MAX_UNIT_BYTES,
    MAX_UNITS,
    MIN_UNIT_BYTES,
    PASS_UNITS_PER_CORE,
    TAPER_BYTES,
    pass_halves_from,
    pass_unit_bytes_for,
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
       frames=st.booleans())
def test_the_pass_writes_the_sequential_rows(tmp_path_factory: Any, seed: int, unit_bytes: int, digest: str,
                                            frames: bool) -> None:
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
    assert not [n for n in os.listdir(exchange) if n.endswith((".partial", ".groups"))]  # spills gone once written


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


def test_the_last_round_is_in_halves_when_units_are_large(tmp_path: Path) -> None:
    """plan.pass_halves_from: the last ``cores`` units' worth of input, cut in halves, once a unit
    is at least TAPER_BYTES (the 10M-record log's 58 MB units: yes; the 1M log's 7 MB: no)."""
    def sized(total: int) -> Any:
        path = tmp_path / f"{total}.log"
        with open(path, "wb") as f:
            f.truncate(total)
        return SimpleNamespace(segments=[str(path)])

    for total, cores in [(578 << 20, 2), (578 << 20, 3), (5 << 30, 2), (58 << 20, 2), (40 << 20, 8)]:
        history = sized(total)
        size = pass_unit_bytes_for(history, cores)
        at = pass_halves_from(history, cores, size)
        if size < TAPER_BYTES:
            assert at is None
        else:
            assert at == total - cores * size and 0 < at < total
    assert pass_halves_from(sized(578 << 20), 2, 578 << 20) is None  # one unit: no last round to halve
