"""The one-pass stage's pieces without Spark (spark/onepass.py): each range read once, its report
published, its unit replayed from the image the driver composed, gives the sequential rows; a
range the two-stage plan would refuse ends the pass for every waiting task; a task waits a bounded
time. The engine's runs through Spark are in test_spark_engine.py."""

from __future__ import annotations

import os
import pickle
import threading
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.engine.local import replay_local
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.log.reading import Position
from ctrlbatch.replay.propagate.propagator import ReplayOptions
from ctrlbatch.replay.rows.rows import expand_rows
from ctrlbatch.replay.spark import onepass
from ctrlbatch.replay.spark.engine import first_seqs
from ctrlbatch.replay.spark.group_spill import read_groups, spill_path
from ctrlbatch.replay.spark.ranges import batch_cuts
from ctrlbatch.replay.spark.source import HistorySource
from ctrlbatch.replay.spark.unit import UnitEnd


class _Alive:
    """A job that never ends: the composition waits for every report."""

    def is_alive(self) -> bool:
        return True

    def failed(self) -> bool:
        return False


def _pass(source: HistorySource, unit_bytes: int, exchange: str, options: ReplayOptions | None = None,
          limit: float = 60.0) -> tuple[str | None, list[UnitEnd | None]]:
    """The pass as Spark runs it, in one process: the driver's composition in a thread, the range
    tasks one by one in range order (what crosses pickled and unpickled)."""
    history = source.open()
    begins: list[Position] = [(0, 0), *batch_cuts(history.segments, unit_bytes, 1000)]
    found: dict[str, str | None] = {}

    def compose() -> None:
        found["reason"] = onepass._compose_images(exchange, len(begins), begins, _Alive())  # type: ignore[arg-type]
        if found["reason"] is not None:
            onepass._publish(os.path.join(exchange, onepass.ABORT), None)

    driver = threading.Thread(target=compose, daemon=True)
    driver.start()
    ends = []
    for i in range(len(begins)):
        stop = begins[i + 1] if i + 1 < len(begins) else None
        end = onepass.range_unit(source, options or ReplayOptions(), i, begins[i], stop, exchange, limit)
        ends.append(pickle.loads(pickle.dumps(end)))
    driver.join(timeout=60)
    assert not driver.is_alive()
    return found["reason"], ends


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 50), unit_bytes=st.sampled_from([1500, 3000, 7000]), digest=st.sampled_from(["sha256", "none"]))
def test_ranges_read_once_give_the_sequential_rows(tmp_path_factory: Any, seed: int, unit_bytes: int, digest: str) -> None:
    tmp = tmp_path_factory.mktemp("onepass")
    generate_log(tmp / "data", brokers=4, topics=4, partitions=16, records=2500, seed=seed, segment_bytes=4096)
    source = HistorySource(str(tmp / "data"))
    options = ReplayOptions(digest=digest)  # type: ignore[arg-type]
    expected = replay_local(source.open(), options).drain()
    exchange = str(tmp / "exchange")
    os.mkdir(exchange)
    reason, ends = _pass(source, unit_bytes, exchange, options)
    assert reason is None
    done = [e for e in ends if e is not None]
    assert len(done) == len(ends) > 3 and all(e.error is None for e in done)
    starts = first_seqs(done)
    rows: list[dict[str, Any]] = []
    for e in done:
        rows += expand_rows(read_groups(spill_path(exchange, e.index)), dict(starts[e.index]), False)
    assert rows == expected
    # the log was read once: every batch counted once over the units, as the sequential read counts it
    history = source.open()
    for _ in history.batches():
        pass
    assert sum(e.stats.batches for e in done) == history.stats.batches
    assert not [n for n in os.listdir(exchange) if n.endswith(".partial")]


def test_a_range_that_does_not_compose_ends_the_pass_for_every_task(tmp_path: Path) -> None:
    generate_log(tmp_path / "data", brokers=4, topics=4, partitions=16, records=2500, seed=5, segment_bytes=4096)
    source = HistorySource(str(tmp_path / "data"))
    history = source.open()
    begins: list[Position] = [(0, 0), *batch_cuts(history.segments, 3000, 1000)]
    exchange = str(tmp_path / "exchange")
    os.mkdir(exchange)
    # range 2's report says it could not be read: the driver gives the reason and aborts
    reports = {}
    for i in (0, 1):
        stop = begins[i + 1]
        reports[i] = threading.Thread(
            target=onepass.range_unit, args=(source, ReplayOptions(), i, begins[i], stop, exchange, 30.0), daemon=True
        )
    onepass._publish(onepass._report_path(exchange, 2), onepass.RangeReport(
        2, None, None, None, -1, -1, None, False, 0.0, "ReplayInputError: bad batch"))
    for t in reports.values():
        t.start()
    reason = onepass._compose_images(exchange, len(begins), begins, _Alive())  # type: ignore[arg-type]
    assert reason == "range 2: ReplayInputError: bad batch"
    onepass._publish(os.path.join(exchange, onepass.ABORT), None)
    # a task still to come reads its range, publishes its report, and returns None at once
    start = time.monotonic()
    assert onepass.range_unit(source, ReplayOptions(), 3, begins[3], begins[4], exchange, 30.0) is None
    assert time.monotonic() - start < 10
    assert os.path.exists(onepass._report_path(exchange, 3))
    for t in reports.values():
        t.join(timeout=30)
        assert not t.is_alive()


def test_a_broken_continuity_between_ranges_is_a_reason_to_plan_serially(tmp_path: Path) -> None:
    """Range 1 read from a place that is not where range 0 ended: the driver's checks (those of
    ranges.combine) find it, as they find it in the two-stage plan, before range 1 is replayed."""
    generate_log(tmp_path / "data", brokers=4, topics=4, partitions=16, records=1500, seed=2, segment_bytes=4096)
    source = HistorySource(str(tmp_path / "data"))
    history = source.open()
    begins: list[Position] = [(0, 0), *batch_cuts(history.segments, 3000, 1000)]
    exchange = str(tmp_path / "exchange")
    os.mkdir(exchange)
    wrong = [begins[0], begins[2], *begins[2:]]  # range 1 starts where range 2 does
    t = threading.Thread(target=lambda: [
        onepass.range_unit(source, ReplayOptions(), i, wrong[i], wrong[i + 1] if i + 1 < len(wrong) else None, exchange, 30.0)
        for i in range(len(wrong))
    ], daemon=True)
    t.start()
    reason = onepass._compose_images(exchange, len(wrong), begins, _Alive())  # type: ignore[arg-type]
    onepass._publish(os.path.join(exchange, onepass.ABORT), None)
    t.join(timeout=60)
    assert reason is not None and reason.startswith("range 0 ended at ")
    assert os.path.exists(onepass._image_path(exchange, 0))
    assert not os.path.exists(onepass._image_path(exchange, 1))  # range 1 was never replayed


def test_a_task_waits_for_its_image_a_bounded_time(tmp_path: Path) -> None:
    generate_log(tmp_path / "data", brokers=4, topics=4, partitions=16, records=1500, seed=2, segment_bytes=4096)
    source = HistorySource(str(tmp_path / "data"))
    history = source.open()
    begins: list[Position] = [(0, 0), *batch_cuts(history.segments, 3000, 1000)]
    exchange = str(tmp_path / "exchange")
    os.mkdir(exchange)
    start = time.monotonic()
    assert onepass.range_unit(source, ReplayOptions(), 1, begins[1], begins[2], exchange, 0.2) is None
    assert 0.2 <= time.monotonic() - start < 10
    # and the driver, whose job ended without range 0's report, says so instead of waiting
    class _Ended:
        def is_alive(self) -> bool:
            return False

        def failed(self) -> bool:
            return False

    reason = onepass._compose_images(exchange, len(begins), begins, _Ended())  # type: ignore[arg-type]
    assert reason == "range 0: no report (its task waited too long or failed)"


def test_a_failed_task_ends_the_pass_while_a_report_is_late(tmp_path: Path) -> None:
    """A task that failed (a lost executor) may never be retried while every slot waits for its
    report: the driver asks whether a task failed and ends the pass, instead of waiting."""
    exchange = str(tmp_path / "exchange")
    os.mkdir(exchange)

    class _Failed:
        asked = 0

        def is_alive(self) -> bool:
            return True

        def failed(self) -> bool:
            self.asked += 1
            return True

    job = _Failed()
    start = time.monotonic()
    reason = onepass._compose_images(exchange, 3, [(0, 0), (0, 100), (0, 200)], job)  # type: ignore[arg-type]
    assert reason == "range 0: no report yet and a task failed (its retry may find every slot waiting)"
    assert job.asked == 1 and time.monotonic() - start < 10
