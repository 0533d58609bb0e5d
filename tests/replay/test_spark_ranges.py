"""The parallel plan (replay/spark/ranges.py) without Spark: its units start exactly where the
sequential reader and fold are at their cuts, or the plan says why it is serial."""

from __future__ import annotations

import bisect
import functools
import itertools
import struct
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.generate.generator import generate_log, metadata_dir
from ctrlbatch.replay.image.deltas import group_deltas
from ctrlbatch.replay.image.image import EMPTY_IMAGE, apply_delta
from ctrlbatch.replay.log.segments import scan_batches
from ctrlbatch.replay.spark.plan import HistorySource, Unit, is_leader_change
from ctrlbatch.replay.spark.ranges import batch_cuts, combine, range_report, serial_reason

from .test_net_effect import _ordered


def local_plan(source: HistorySource, unit_bytes: int, max_units: int = 64) -> list[Unit] | str:
    """plan_ranges with the range tasks run here, one after the other."""
    history = source.open()
    begins = [(0, 0), *batch_cuts(history.segments, unit_bytes, max_units)]
    reports = [range_report(source, i, begins[i], begins[i + 1] if i + 1 < len(begins) else None)
               for i in range(len(begins))]
    return combine(reports, begins, 0.0)


@functools.cache
def _log(seed: int, level: int, upgrade: int | None, segment_bytes: int) -> str:
    out = tempfile.mkdtemp(prefix="spark-ranges-")
    generate_log(out, brokers=5, topics=8, partitions=60, records=2_500, seed=seed, metadata_version=level,
                 upgrade_to=upgrade, segment_bytes=segment_bytes)
    return metadata_dir(out)


@functools.cache
def _sequential(path: str) -> tuple[list[Any], list[Any]]:
    """Along the sequential read: (position after each batch, checks' state, last LeaderChange) and
    (position after each delta's closing batch, image)."""
    history = HistorySource(path).open()
    reader = history.reader()
    states: list[Any] = []
    leader = None

    def watched() -> Any:
        nonlocal leader
        for batch in reader:
            if is_leader_change(batch):
                leader = batch
            assert reader.offsets is not None
            states.append((reader.resume().at, reader.offsets.expected, reader.epochs.epoch, leader))
            yield batch

    images = [((0, 0), EMPTY_IMAGE)]
    image = EMPTY_IMAGE
    for delta in group_deltas(watched()):
        image = apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)[0]
        images.append((reader.resume().at, image))
    return states, images


LOGS = [(1, 14, 21, 4096), (2, 8, 21, 1 << 30), (3, 21, None, 8192), (6, 13, 21, 4096)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(LOGS), st.integers(300, 30_000))
def test_each_unit_starts_where_the_sequential_read_is(log: tuple[int, int, int | None, int], unit_bytes: int) -> None:
    """Random generated logs, random cut sizes: every unit's image is the sequential fold's image
    at its start (dict order included), its LeaderChange batch and reading state are the
    sequential reader's there, and the units cover the log once."""
    path = _log(*log)
    units = local_plan(HistorySource(path), unit_bytes)
    assert not isinstance(units, str), units
    assert units[0].start is None and units[-1].stop is None
    assert all(a.stop == b.start for a, b in zip(units, units[1:], strict=False))
    states, images = _sequential(path)
    at_states = [s[0] for s in states]
    at_images = [i[0] for i in images]
    for unit in units[1:]:
        assert unit.start is not None
        here = unit.start.at
        _, expected_offset, expected_epoch, leader = states[at_states.index(here)]
        assert (unit.start.next_offset, unit.start.epoch) == (expected_offset, expected_epoch)
        assert unit.leader_batch == leader
        image = images[bisect.bisect_right(at_images, here) - 1][1]
        assert unit.image == image and _ordered(unit.image) == _ordered(image)


def test_batch_cuts_are_batch_starts(tmp_path: Path) -> None:
    path = _log(*LOGS[0])
    history = HistorySource(path).open()
    starts = {(i, p.position) for i, s in enumerate(history.segments) for p in scan_batches(s)}
    cuts = batch_cuts(history.segments, 700, 1000)
    assert len(cuts) > 20 and set(cuts) <= starts and cuts == sorted(set(cuts))
    assert len(batch_cuts(history.segments, 700, 5)) == 4


def _hopped(segments: list[str], unit_bytes: int, max_units: int, halves_from: int | None = None) -> list[tuple[int, int]]:
    """batch_cuts' rule, on each segment read whole: the reference the windowed read must match."""
    cuts: list[tuple[int, int]] = []

    def step(at: int) -> int:  # a unit's bytes after a cut at ``at``: half from halves_from on
        return unit_bytes // 2 if halves_from is not None and at >= halves_from else unit_bytes

    done, next_cut = 0, step(0)
    for seg, path in enumerate(segments):
        data = Path(path).read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            if done + pos >= next_cut and (seg, pos) != (0, 0):
                cuts.append((seg, pos))
                if len(cuts) + 1 >= max_units:
                    return cuts
                next_cut = done + pos + step(done + pos)
            length = struct.unpack_from(">qi", data, pos)[1]
            if length <= 0:
                break
            pos += 12 + length
        done += len(data)
    return cuts


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(LOGS), st.integers(1, 5000), st.integers(2, 200), st.integers(1, 3000),
       st.none() | st.integers(-10, 60_000))
def test_batch_cuts_read_in_windows_equal_the_whole_segments(
    log: tuple[int, int, int | None, int], unit_bytes: int, max_units: int, window: int, halves_from: int | None
) -> None:
    """The window only changes how much is read at a time, never the cuts (a window shorter than
    a prefix reads the prefix whole); the same with the last units in halves."""
    segments = HistorySource(_log(*log)).open().segments
    assert batch_cuts(segments, unit_bytes, max_units, window, halves_from) == _hopped(
        segments, unit_bytes, max_units, halves_from
    )


def test_the_last_units_are_halves(tmp_path: Path) -> None:
    """From ``halves_from`` on, a unit is cut past half as many bytes as before it."""
    history = HistorySource(_log(3, 21, None, 1 << 30)).open()
    (segment,) = history.segments
    total = Path(segment).stat().st_size
    whole = batch_cuts(history.segments, 6000, 1000)
    tapered = batch_cuts(history.segments, 6000, 1000, halves_from=total - 2 * 6000)
    at = [0, *(pos for _, pos in tapered), total]
    sizes = [b - a for a, b in itertools.pairwise(at)]
    before = [s for a, s in zip(at, sizes, strict=False) if a < total - 2 * 6000]
    after = [s for a, s in zip(at, sizes, strict=False) if a >= total - 2 * 6000]
    assert len(after) >= 3 and all(s < 6000 for s in after)  # halves: a batch past each target, the last the rest
    assert all(s >= 3000 for s in after[:-1])
    assert all(s >= 6000 for s in before) and tapered[: len(before) - 1] == whole[: len(before) - 1]


def test_what_is_planned_serially_says_why(tmp_path: Path) -> None:
    path = _log(*LOGS[0])
    history = HistorySource(path).open()
    assert serial_reason(history, 1) is None
    assert serial_reason(history, 2) == "--coalesce > 1"
    assert serial_reason(HistorySource(path, skip_corrupt=True).open(), 1) == "--skip-corrupt"
    # a 4.x log with a ClearElrRecord does not compose: the plan says so, and the engine plans serially
    elr = _log(4, 23, 33, 1 << 30)
    reason = local_plan(HistorySource(elr), 2000)
    assert isinstance(reason, str) and "record type 28 (CLEAR_ELR_RECORD) is not composed" in reason


def test_a_broken_continuity_between_ranges_is_found(tmp_path: Path) -> None:
    """A batch epoch flipped right at a cut (outside the CRC): the plan falls back to serial (the
    range finds it at its next batch, or the driver's check with the range before at its first);
    and each of the driver's continuity checks, on reports altered one field at a time."""
    import shutil

    import attrs

    path = Path(tempfile.mkdtemp(prefix="spark-ranges-")) / "log"
    shutil.copytree(_log(2, 8, 21, 1 << 30), path)
    history = HistorySource(str(path)).open()
    cuts = batch_cuts(history.segments, 3000, 64)
    segment = Path(history.segments[0])
    raw = bytearray(segment.read_bytes())
    seg, pos = cuts[len(cuts) // 2]
    epoch = struct.unpack_from(">i", raw, pos + 12)[0]
    assert seg == 0 and epoch > 0
    struct.pack_into(">i", raw, pos + 12, epoch - 1)
    segment.write_bytes(bytes(raw))
    reason = local_plan(HistorySource(str(path)), 3000)
    assert isinstance(reason, str) and "epoch" in reason
    source = HistorySource(_log(2, 8, 21, 1 << 30))
    begins = [(0, 0), *batch_cuts(source.open().segments, 3000, 64)]
    reports = [range_report(source, i, begins[i], begins[i + 1] if i + 1 < len(begins) else None)
               for i in range(len(begins))]
    assert not isinstance(combine(reports, begins, 0.0), str)
    k = len(reports) // 2
    first = reports[k].first
    assert first is not None
    broken: dict[str, tuple[int, dict[str, Any]]] = {
        "fails the epoch check": (k, {"first": attrs.evolve(first, epoch=first.epoch + 1)}),
        f"starts at offset {first.base_offset}, not": (k - 1, {"next_offset": first.base_offset + 1}),
        f"range {k - 1} ended at": (k - 1, {"ended_at": (0, 1)}),
        f"a transaction is open at the end of range {k - 1}": (k - 1, {"open_transaction": True}),
        f"range {k}: boom": (k, {"problem": "boom"}),
    }
    for why, (i, change) in broken.items():
        altered = [attrs.evolve(r, **change) if r.index == i else r for r in reports]
        got: list[Unit] | str = combine(altered, begins, 0.0)
        assert isinstance(got, str) and why in got, (why, got)
