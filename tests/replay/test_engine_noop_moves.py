"""The engine skeleton's deferred NoOp moves and its fused batch loop (engine/skeleton.py's rules):
over random batch sequences (NoOp-only batches, partition changes, LeaderChange control batches,
committed and aborted transactions, any coalesce), every delta with records is propagated from
the same image as the eager fold (every delta applied in turn, NoOp-only ones with
``apply_delta(image, ())``) gives, with the same first offset as ``DeltaStarts.first`` called for
every delta; the final image is the eager one, and the summary counts every batch, record and
delta. Also the fold's trusted constructors (image.py's rules) against the classes' __init__."""

from __future__ import annotations

import types
import uuid
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctrlbatch.replay.engine.skeleton as skeleton
from ctrlbatch.replay.engine.skeleton import DeltaStarts, EngineRun
from ctrlbatch.replay.image import image as image_module
from ctrlbatch.replay.image.deltas import group_deltas
from ctrlbatch.replay.image.image import (
    EMPTY_IMAGE,
    DeltaChanges,
    MetadataImage,
    PartitionRegistration,
    TopicChange,
    TopicImage,
    apply_delta,
)
from ctrlbatch.replay.log.records import (
    ABORT_TRANSACTION_RECORD,
    BEGIN_TRANSACTION_RECORD,
    CONTROL_TYPE_NAMES,
    END_TRANSACTION_RECORD,
    LEADER_CHANGE,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    RECORD_TYPE_NAMES,
    REGISTER_BROKER_RECORD,
    TOPIC_RECORD,
    ControlRecord,
    LogBatch,
    MetadataRecord,
)
from ctrlbatch.replay.propagate.propagator import ReplayOptions, propagate_delta
from ctrlbatch.replay.schema.record_classes import control_class, record_class

TOPIC = uuid.UUID(int=0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0)
BROKERS = (1, 2, 3)
PARTITIONS = 4


def _data(type_id: int, **fields: Any) -> Any:
    return record_class(type_id)(**fields)


def _setup_records(offset: int) -> list[MetadataRecord]:
    cls = record_class(REGISTER_BROKER_RECORD)
    records = [
        MetadataRecord(offset + i, REGISTER_BROKER_RECORD, 1, cls(
            broker_id=b, broker_epoch=10 + b, is_migrating_zk_broker=True, fenced=False,
            end_points=(cls.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9092 + b),),
        ))
        for i, b in enumerate(BROKERS)
    ]
    records.append(MetadataRecord(offset + 3, TOPIC_RECORD, 0, _data(TOPIC_RECORD, name="t", topic_id=TOPIC)))
    for p in range(PARTITIONS):
        records.append(MetadataRecord(offset + 4 + p, PARTITION_RECORD, 0, _data(
            PARTITION_RECORD, partition_id=p, topic_id=TOPIC, replicas=BROKERS, isr=BROKERS, leader=1,
            leader_epoch=0, partition_epoch=0,
        )))
    return records


# one batch: ("noop", n) | ("change", partition, leader) | ("control", leader) | ("begin",) | ("end",) | ("abort",)
_STEP = st.one_of(
    st.tuples(st.just("noop"), st.integers(1, 3)),
    st.tuples(st.just("change"), st.integers(0, PARTITIONS - 1), st.sampled_from((-2, 1, 2, 3))),
    st.tuples(st.just("control"), st.sampled_from(BROKERS)),
    st.tuples(st.just("begin")), st.tuples(st.just("end")), st.tuples(st.just("abort")),
)


def _batches(steps: list[tuple[Any, ...]]) -> list[LogBatch]:
    """Dense offsets, epochs going up at control batches; transaction markers only where valid."""
    offset, epoch, in_txn, out = 0, 1, False, []

    def data(records: list[MetadataRecord], noops: int = 0) -> None:
        nonlocal offset
        n = len(records) + noops
        out.append(LogBatch(offset, offset + n - 1, epoch, 1000 + offset, False, tuple(records), (), noops, "mem", offset, 80))
        offset += n

    data(_setup_records(0))
    for step in steps:
        kind = step[0]
        if kind == "noop":
            data([], step[1])
        elif kind == "change":
            data([MetadataRecord(offset, PARTITION_CHANGE_RECORD, 0, _data(
                PARTITION_CHANGE_RECORD, topic_id=TOPIC, partition_id=step[1], leader=step[2],
            ))])
        elif kind == "control":
            epoch += 1
            leader = control_class(LEADER_CHANGE)(leader_id=step[1])
            out.append(LogBatch(offset, offset, epoch, 0, True, (), (ControlRecord(offset, LEADER_CHANGE, leader),),
                                0, "mem", offset, 60))
            offset += 1
        elif (kind == "begin") != in_txn:  # a marker only where the loader accepts it
            type_id = {"begin": BEGIN_TRANSACTION_RECORD, "end": END_TRANSACTION_RECORD,
                       "abort": ABORT_TRANSACTION_RECORD}[kind]
            data([MetadataRecord(offset, type_id, 0, _data(type_id))])
            in_txn = kind == "begin"
    return out


_HISTORY = types.SimpleNamespace(kind="log", snapshot=None, source="mem")


@settings(max_examples=60, deadline=None)
@given(st.lists(_STEP, max_size=40), st.integers(1, 3), st.sampled_from([0, 1, 4096]))
def test_deferred_noop_moves_give_the_eager_images_first_offsets_and_summary(
    steps: list[tuple[Any, ...]], coalesce: int, pending_max: int
) -> None:
    batches = _batches(steps)
    options = ReplayOptions()
    # the eager reference: every delta applied in turn, DeltaStarts.first for every delta
    image, starts, expected = EMPTY_IMAGE, DeltaStarts(), []
    for delta in group_deltas(starts.watch(iter(batches)), coalesce):
        first = starts.first(delta.last_offset)
        if delta.records == ():
            image = apply_delta(image, (), offset=delta.last_offset, epoch=delta.epoch)[0]
        else:
            expected.append((delta.last_offset, image, first))
            image = propagate_delta(image, delta, options)[0]
    deltas = sum(1 for _ in group_deltas(iter(batches), coalesce))

    seen: list[tuple[int, MetadataImage, int]] = []
    firsts: dict[int, int] = {}
    run = EngineRun(_HISTORY, options, coalesce)  # type: ignore[arg-type]
    real_deliver = run._deliver

    def watching(prev: MetadataImage, delta: Any, opts: ReplayOptions) -> Any:
        seen.append((delta.last_offset, prev, -1))
        return propagate_delta(prev, delta, opts)

    def deliver(delta: Any, sends: Any, first_offset: int, cause: str | None = None) -> Any:
        firsts[delta.last_offset] = first_offset
        return real_deliver(delta, sends, first_offset, cause)

    run._deliver = deliver  # type: ignore[method-assign]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(skeleton, "propagate_delta", watching)
        mp.setattr(skeleton, "_PENDING_MAX", pending_max)  # 0, 1: DeltaStarts settled at every NoOp-only delta
        list(run.groups(iter(batches)))
    assert [(o, i) for o, i, _ in seen] == [(o, i) for o, i, _ in expected]  # the same images, field by field
    assert all(firsts[o] == f for o, _, f in expected)
    assert run.image == image
    # the summary: every batch and record counted, every delta once
    summary = run.summary
    assert summary.deltas == deltas and summary.log_batches == len(batches)
    assert summary.noop_batches == sum(1 for b in batches if not b.control and not b.records)
    records: Counter[str] = Counter()
    for b in batches:
        records.update(RECORD_TYPE_NAMES[r.type] for r in b.records)
        records.update(CONTROL_TYPE_NAMES[c.type] for c in b.control_records)
        records["NO_OP_RECORD"] += b.noops
    assert summary.records_by_type == +records
    assert list(run.trail._recent)[-1][:2] == (batches[-1].base_offset, batches[-1].last_offset)


def test_the_engine_image_after_trailing_noops_is_moved_to_the_last() -> None:
    batches = _batches([("change", 0, 2), ("noop", 2), ("noop", 1)])
    run = EngineRun(_HISTORY, ReplayOptions())  # type: ignore[arg-type]
    list(run.groups(iter(batches)))
    assert (run.image.offset, run.image.epoch) == (batches[-1].last_offset, batches[-1].epoch)
    assert run.image.topics[TOPIC].partitions[0].leader == 2


_IDS = st.tuples(st.integers(0, 5)).map(lambda t: tuple(range(t[0])))


@settings(max_examples=80, deadline=None)
@given(st.lists(_IDS, min_size=4, max_size=4), st.lists(st.integers(-3, 1 << 31), min_size=4, max_size=4),
       _IDS, _IDS)
def test_the_folds_trusted_constructors_make_the_classes_values(
    lists: list[tuple[int, ...]], ints: list[int], elr: tuple[int, ...], lkelr: tuple[int, ...]
) -> None:
    made = image_module._make_partition(*lists, *ints, elr, lkelr)
    reference = PartitionRegistration(lists[0], lists[1], lists[2], lists[3], ints[0], ints[1], ints[2], ints[3],
                                      elr, lkelr)
    assert made == reference and hash(made) == hash(reference) and repr(made) == repr(reference)
    assert type(made) is PartitionRegistration and made.without_elr() == reference.without_elr()
    tid = uuid.UUID(int=ints[2] & ((1 << 128) - 1))
    parts = {0: made}
    assert image_module._make_topic(tid, "x", parts) == TopicImage(tid, "x", parts)
    assert image_module._make_change(tid, "x", True, parts, {0: None}) == TopicChange(tid, "x", True, parts, {0: None})
    brokers: dict[int, Any] = {}
    assert image_module._make_image(brokers, {tid: TopicImage(tid, "x", parts)}, {"x": tid},
                                    EMPTY_IMAGE.metadata_version, ints[0], ints[1]) == MetadataImage(
        brokers, {tid: TopicImage(tid, "x", parts)}, {"x": tid}, EMPTY_IMAGE.metadata_version, ints[0], ints[1])
    assert image_module._make_changes(True, False, {}, {}, {}, None) == DeltaChanges(True, False, {}, {}, {}, None)


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3), st.booleans()), max_size=60), st.integers(1, 5))
def test_delta_starts_settled_early_give_the_same_first_offsets(spans: list[tuple[int, int, bool]], every: int) -> None:
    """DeltaStarts.settle (called through long NoOp-only stretches, so the deque stays bounded)
    pops only what first() would pop: the first offsets are those of a run that never settles."""
    eager, lazy = DeltaStarts(), DeltaStarts()
    offset = 0
    firsts: tuple[list[int], list[int]] = ([], [])
    for k, (control, length, noop_only) in enumerate(spans):
        offset += control  # control batches before it: no entry (they belong to no delta)
        for starts in (eager, lazy):
            starts.pending.append((offset, offset + length - 1))
        last = offset + length - 1
        offset += length
        if noop_only:  # a delta with no rows: its first offset unused
            eager.last = lazy.last = last
            if k % every == 0:
                lazy.settle()
                assert all(end > lazy.last for _, end in lazy.pending)
        else:
            firsts[0].append(eager.first(last))
            firsts[1].append(lazy.first(last))
    assert firsts[0] == firsts[1]
