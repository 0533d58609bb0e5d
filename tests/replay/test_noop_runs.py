"""NoOp-only batches kept as runs (log/records.py's NoOpRun; spark/ranges.py's ``_kept``; the
engine's ``counted_runs``): over random batch sequences (NoOp-only batches across epochs and
files, partition changes, LeaderChange control batches, committed and aborted transactions),
the range's report is the one made from every batch, the kept items stand for exactly the
batches read, and replaying them gives the same send groups, first offsets, image, summary and
per-broker counts as replaying every batch."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.engine.skeleton import EngineRun
from ctrlbatch.replay.image.deltas import group_deltas
from ctrlbatch.replay.image.net_effect import NetBuilder
from ctrlbatch.replay.log.records import LogBatch, NoOpRun
from ctrlbatch.replay.propagate.propagator import ReplayOptions
from ctrlbatch.replay.spark import ranges

from .test_engine_noop_moves import _HISTORY, _STEP, _batches


def _in_files(batches: list[LogBatch], cuts: set[int]) -> list[LogBatch]:
    """The batches spread over files: a new file from each position in ``cuts`` on, the even
    positions with a later epoch too (the reader refuses that in a binary log without a
    LeaderChange; a run stops at either all the same); a batch at a position in ``cuts`` that
    3 divides is of unknown size (a text input's)."""
    out, file, bump = [], 0, 0
    for i, b in enumerate(batches):
        if i in cuts:
            file += 1
            bump += i % 2 == 0
        size = 0 if i in cuts and i % 3 == 0 else b.size
        out.append(attrs.evolve(b, source=f"0000{file}.log", epoch=b.epoch + bump, size=size))
    return out


def _after_noops(batches: list[LogBatch], lead: int) -> list[LogBatch]:
    """``lead`` NoOp-only batches, then the batches (offsets moved on by ``lead``): a range that
    begins with NoOps, as most do in a real log."""
    def moved(b: LogBatch) -> LogBatch:
        return attrs.evolve(
            b, base_offset=b.base_offset + lead, last_offset=b.last_offset + lead, position=b.position + lead,
            records=tuple(attrs.evolve(r, offset=r.offset + lead) for r in b.records),
            control_records=tuple(attrs.evolve(c, offset=c.offset + lead) for c in b.control_records),
        )

    first = batches[0]
    noops = [LogBatch(i, i, first.epoch, 900 + i, False, (), (), 1, first.source, i, 72) for i in range(lead)]
    return noops + [moved(b) for b in batches]


def _report(batches: list[LogBatch], kept: list[Any] | None) -> tuple[Any, ...]:
    """What range_report takes from a range's batches: the net effect, the first batch, the
    last LeaderChange and whether a transaction is open."""
    builder = NetBuilder()
    watch = ranges.RangeWatch(iter(batches) if kept is None else ranges._kept(iter(batches), kept, builder))
    for delta in group_deltas(watch, 1):
        builder.add(delta.records, delta.last_offset, delta.epoch)
    return builder.packed(), watch.first, watch.leader, watch.open


def _kept_and_batches(steps: list[tuple[Any, ...]], cuts: set[int], lead: int = 0) -> tuple[list[LogBatch], list[Any]]:
    batches = _in_files(_after_noops(_batches(steps), lead), cuts)
    kept: list[Any] = []
    assert _report(batches, kept) == _report(batches, None)
    return batches, kept


@settings(max_examples=80, deadline=None)
@given(st.lists(_STEP, max_size=40), st.sets(st.integers(1, 45), max_size=12), st.integers(0, 3))
def test_kept_items_stand_for_exactly_the_batches_read(steps: list[tuple[Any, ...]], cuts: set[int], lead: int) -> None:
    batches, kept = _kept_and_batches(steps, cuts, lead)
    at = 0
    for item in kept:
        if type(item) is LogBatch:
            assert item is batches[at]
            at += 1
            continue
        assert type(item) is NoOpRun and at > 0  # the first batch is always passed on
        covered = batches[at: at + item.count]
        at += item.count
        assert all(not b.control and not b.records and b.noops for b in covered)
        assert {(b.epoch, b.source) for b in covered} == {(item.epoch, item.source)}
        assert (item.base_offset, item.last_offset, item.position) == (
            covered[0].base_offset, covered[-1].last_offset, covered[0].position)
        assert (item.timestamp, item.noops, item.size, item.unsized) == (
            covered[-1].timestamp, sum(b.noops for b in covered), sum(b.size for b in covered),
            sum(1 for b in covered if not b.size))
    assert at == len(batches)
    for a, b in zip(kept, kept[1:], strict=False):  # two runs meet only where the epoch or the file changes
        if type(a) is NoOpRun and type(b) is NoOpRun:
            assert (a.epoch, a.source) != (b.epoch, b.source)


def _first_offsets(run: EngineRun) -> list[int]:
    """The first offset of every delta ``run`` delivers, as it delivers them."""
    seen: list[int] = []
    real = run._deliver

    def deliver(delta: Any, sends: Any, first: int, cause: str | None = None) -> Any:
        seen.append(first)
        return real(delta, sends, first, cause)

    run._deliver = deliver  # type: ignore[method-assign]
    return seen


@settings(max_examples=80, deadline=None)
@given(st.lists(_STEP, max_size=40), st.sets(st.integers(1, 45), max_size=12), st.integers(0, 3))
def test_replaying_the_runs_is_replaying_every_batch(steps: list[tuple[Any, ...]], cuts: set[int], lead: int) -> None:
    batches, kept = _kept_and_batches(steps, cuts, lead)
    options = ReplayOptions()
    every, folded = EngineRun(_HISTORY, options), EngineRun(_HISTORY, options)  # type: ignore[arg-type]
    firsts = [_first_offsets(every), _first_offsets(folded)]
    assert list(folded.groups(iter(kept), runs=True)) == list(every.groups(iter(batches)))
    assert firsts[1] == firsts[0]
    assert folded.image == every.image
    assert folded.summary.to_dict() == every.summary.to_dict()
    assert folded.delivered == every.delivered


def test_a_run_is_counted_as_its_batches_with_progress() -> None:
    batches = _batches([("change", 0, 2), ("noop", 1), ("noop", 2), ("noop", 1), ("change", 1, 3)])
    kept: list[Any] = []
    _report(batches, kept)
    assert [type(item).__name__ for item in kept] == ["LogBatch", "LogBatch", "NoOpRun", "LogBatch"]
    assert repr(kept[2]) == f"NoOpRun({batches[2].base_offset}-{batches[4].last_offset} e1, 3 batches)"
    told: list[int] = []
    run = EngineRun(_HISTORY, ReplayOptions(), on_batch=told.append)  # type: ignore[arg-type]
    list(run.groups(iter(kept), runs=True))
    assert sum(told) == len(batches) and run.summary.noop_batches == 3
    assert run.summary.deltas_without_requests == 3 and run.summary.log_batches == len(batches)


def test_runs_are_replayed_with_coalesce_one_only() -> None:
    run = EngineRun(_HISTORY, ReplayOptions(), 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="coalesce 1 only"):
        list(run.groups(iter([]), runs=True))
