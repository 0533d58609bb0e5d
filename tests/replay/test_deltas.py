"""Delta grouping: one delta per data batch, transactions never split (MetadataBatchLoader's
rules, including its edge cases), control batches only move the KRaft leader, coalescing."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.replay.image.deltas import group_deltas
from ctrlbatch.replay.image.image import MetadataReplayError
from ctrlbatch.replay.log.records import (
    ABORT_TRANSACTION_RECORD,
    BEGIN_TRANSACTION_RECORD,
    CONFIG_RECORD,
    END_TRANSACTION_RECORD,
    LEADER_CHANGE,
    TOPIC_RECORD,
    ControlRecord,
    LogBatch,
    MetadataRecord,
)
from ctrlbatch.replay.schema.record_classes import control_class, record_class

SAMPLE = Path(__file__).resolve().parents[2].parent / "shared" / "samples" / "kraft-single-node"

BEGIN, END, ABORT, DATA = BEGIN_TRANSACTION_RECORD, END_TRANSACTION_RECORD, ABORT_TRANSACTION_RECORD, CONFIG_RECORD


def rec(offset: int, type_id: int) -> MetadataRecord:
    cls = record_class(type_id)
    assert cls is not None
    fields: dict[str, Any] = {}
    if type_id == TOPIC_RECORD:
        fields = {"name": f"t{offset}", "topic_id": uuid.UUID(int=offset)}
    return MetadataRecord(offset, type_id, 0, cls(**fields))


def batches(*types: list[int], epoch: int = 1) -> list[LogBatch]:
    """One batch per list of record types, offsets consecutive from 10, timestamp = 1000 + base."""
    out, offset = [], 10
    for ts in types:
        records = tuple(rec(offset + i, t) for i, t in enumerate(ts))
        last = offset + max(len(ts), 1) - 1
        out.append(LogBatch(offset, last, epoch, 1000 + offset, False, records, (), 0 if ts else 1, "t", offset))
        offset = last + 1
    return out


def leader_change(offset: int, leader: int, epoch: int) -> LogBatch:
    cls = control_class(LEADER_CHANGE)
    assert cls is not None
    data = cls(leader_id=leader)
    return LogBatch(offset, offset, epoch, 0, True, (), (ControlRecord(offset, LEADER_CHANGE, data),), 0, "t", offset)


def summary(deltas: Any) -> list[tuple[int, list[int]]]:
    return [(d.last_offset, [r.offset for r in d.records]) for d in deltas]


def test_one_delta_per_data_batch_with_the_provenance_of_its_batch() -> None:
    bs = batches([DATA, DATA], [], [DATA])  # the empty batch held only NoOps
    deltas = list(group_deltas(bs))
    assert summary(deltas) == [(11, [10, 11]), (12, []), (13, [13])]
    assert [(d.timestamp, d.epoch) for d in deltas] == [(1010, 1), (1012, 1), (1013, 1)]


def test_control_batches_make_no_delta_but_set_the_kraft_leader() -> None:
    data = batches([DATA], [DATA], epoch=4)
    deltas = list(group_deltas([data[0], leader_change(11, 3, 4), data[1]]))
    assert [(d.last_offset, d.leader_id) for d in deltas] == [(10, None), (11, 3)]


def test_a_transaction_over_several_batches_is_one_delta_without_its_markers() -> None:
    deltas = list(group_deltas(batches([BEGIN, DATA], [DATA], [DATA, END], [DATA])))
    assert summary(deltas) == [(14, [11, 12, 13]), (15, [15])]
    assert deltas[0].timestamp == 1013  # the last batch of the transaction


def test_records_before_a_begin_in_the_same_batch_are_published_first() -> None:
    deltas = list(group_deltas(batches([DATA, DATA, BEGIN, DATA], [END])))
    # MetadataBatchLoader emits the records before the Begin with the offset of the record before it
    assert summary(deltas) == [(11, [10, 11]), (14, [13])]


def test_a_begin_after_a_noop_of_its_batch_publishes_an_empty_delta_ending_at_the_noop() -> None:
    """Kafka's indexWithinBatch counts the NoOp (the controller's accumulator may put a NoOp and
    the next append in one batch): the Begin is not the first record, so the loader publishes
    what it holds (nothing) with lastOffset = the NoOp's offset, then the transaction."""
    (b,) = batches([DATA, BEGIN, DATA, END])
    noop_first = attrs.evolve(b, records=b.records[1:], noops=1)  # offset 10 is a NoOp
    assert summary(group_deltas([noop_first])) == [(10, []), (13, [12])]
    deltas = list(group_deltas(batches([DATA, DATA]) + [attrs.evolve(noop_first, base_offset=12, records=tuple(
        rec(o, t) for o, t in ((13, BEGIN), (14, DATA), (15, END))), last_offset=15)]))
    assert summary(deltas) == [(11, [10, 11]), (12, []), (15, [14])]


def test_a_begin_starting_a_new_batch_after_a_pending_batch_publishes_nothing_extra() -> None:
    deltas = list(group_deltas(batches([BEGIN], [DATA], [END])))
    assert summary(deltas) == [(12, [11])]


def test_an_aborted_transaction_is_an_empty_delta() -> None:
    deltas = list(group_deltas(batches([BEGIN, DATA], [DATA], [ABORT], [DATA])))
    assert summary(deltas) == [(13, []), (14, [14])]


def test_records_after_an_abort_in_its_batch_are_published_with_it_as_kafka_does() -> None:
    deltas = list(group_deltas(batches([BEGIN, DATA], [ABORT, DATA])))
    assert summary(deltas) == [(13, [11, 13])]


@pytest.mark.parametrize(
    ("types", "message"),
    [
        ([[BEGIN, DATA, BEGIN]], r"offset 12 \(BEGIN_TRANSACTION_RECORD v0\): .*already in a transaction"),
        ([[DATA, END]], r"offset 11 .*EndTransactionRecord without having seen a BeginTransactionRecord"),
        ([[ABORT]], "AbortTransactionRecord without having seen a BeginTransactionRecord"),
    ],
)
def test_misplaced_transaction_markers_are_errors_naming_the_record(types: list[list[int]], message: str) -> None:
    with pytest.raises(MetadataReplayError, match=message):
        list(group_deltas(batches(*types)))


def test_coalesce_merges_consecutive_deltas_and_checks_its_argument() -> None:
    bs = batches([DATA], [DATA, DATA], [], [DATA], [DATA])
    deltas = list(group_deltas(bs, coalesce=2))
    assert summary(deltas) == [(12, [10, 11, 12]), (14, [14]), (15, [15])]
    assert deltas[0].timestamp == 1011
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="coalesce"):
            list(group_deltas(bs, coalesce=bad))  # type: ignore[arg-type]


@given(st.lists(st.lists(st.sampled_from([DATA, TOPIC_RECORD]), max_size=4), max_size=12), st.integers(1, 5))
def test_without_transactions_deltas_partition_the_records_in_order(types: list[list[int]], n: int) -> None:
    bs = batches(*types)
    one = list(group_deltas(bs))
    assert len(one) == len(bs)
    assert [r.offset for d in one for r in d.records] == [r.offset for b in bs for r in b.records]
    merged = list(group_deltas(bs, coalesce=n))
    assert len(merged) == -(-len(bs) // n)
    assert [r.offset for d in merged for r in d.records] == [r.offset for b in bs for r in b.records]
    assert [d.last_offset for d in merged] == [one[min(i * n + n, len(one)) - 1].last_offset for i in range(len(merged))]


def test_the_sample_has_one_delta_per_data_batch_and_its_bootstrap_transaction_is_one() -> None:
    from ctrlbatch.replay.log.sources import open_history

    deltas = list(group_deltas(open_history(str(SAMPLE)).batches()))
    assert len(deltas) == 4813  # 4,814 batches, one of them the LeaderChange control batch
    first = deltas[0]
    assert first.last_offset == 4 and [r.type for r in first.records] == [12, 21]
    assert all(d.leader_id == 1 and d.epoch == 1 for d in deltas)
    shutdown = next(d for d in deltas if d.records and d.records[0].offset == 4871)
    assert shutdown.last_offset == 4925 and len(shutdown.records) == 55


def test_a_transaction_still_open_at_the_end_is_not_published() -> None:
    assert summary(group_deltas(batches([DATA], [BEGIN, DATA], [DATA]))) == [(10, [10])]


@st.composite
def _committed_histories(draw: Any) -> list[list[int]]:
    """Batches of DATA with well-formed Begin..End transactions (possibly spanning batches,
    possibly empty, possibly left open at the end)."""
    flat: list[int] = []
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            flat.extend([BEGIN, *[DATA] * draw(st.integers(0, 3)), END])
        else:
            flat.extend([DATA] * draw(st.integers(1, 3)))
    if draw(st.booleans()):
        flat.extend([BEGIN, *[DATA] * draw(st.integers(0, 2))])  # still open at the end
    cuts = sorted(draw(st.sets(st.integers(1, max(len(flat) - 1, 1)), max_size=6)))
    return [flat[a:b] for a, b in zip([0, *cuts], [*cuts, len(flat)], strict=True) if flat[a:b]]


@given(_committed_histories(), st.integers(1, 3))
def test_with_transactions_every_record_is_published_once_and_no_transaction_is_split(
    types: list[list[int]], n: int
) -> None:
    bs = batches(*types)
    records = [r for b in bs for r in b.records]
    # the transactions (offsets of their data records) and the records of one still open at the end
    txns: list[list[int]] = []
    current: list[int] | None = None
    open_tail: list[int] = []
    for r in records:
        if r.type == BEGIN:
            current = []
        elif r.type == END:
            assert current is not None
            txns.append(current)
            current = None
        elif current is not None:
            current.append(r.offset)
    if current is not None:
        open_tail = current
    for deltas in (list(group_deltas(bs)), list(group_deltas(bs, coalesce=n))):
        published = [r.offset for d in deltas for r in d.records]
        expected = [r.offset for r in records if r.type == DATA and r.offset not in open_tail]
        assert published == expected
        lasts = [d.last_offset for d in deltas]
        assert lasts == sorted(set(lasts))
        where = {r.offset: i for i, d in enumerate(deltas) for r in d.records}
        for txn in txns:
            assert len({where[o] for o in txn}) <= 1
            if txn:  # a transaction's delta ends at or after its End
                assert deltas[where[txn[0]]].last_offset > txn[-1]
