"""Record batches grouped into metadata deltas, the way Kafka's MetadataBatchLoader does.

Rules (kafka-metadata-records.md §6-7; MetadataBatchLoader.java:127-260):
- The delta boundary is not in the log; the policy here is one delta per data record batch
  (Kafka's loader publishes after each commit, which holds one or more batches), control
  batches excluded: they only update the KRaft leader (LeaderChange) reported on later deltas.
- A metadata transaction is never split: from BeginTransaction to End (or Abort) the records
  accumulate over as many batches as it takes. Records before a Begin are published as their
  own delta first (as the loader does), with the batch's timestamp and epoch, ending at the
  offset before the Begin; a Begin that is not its batch's first record (NoOps count, as in
  Kafka's indexWithinBatch) publishes such a delta even when it is empty.
- An aborted transaction publishes an empty delta. As in Kafka, records after the Abort in the
  same batch go back to normal replay and are published with it.
- A Begin inside a transaction, or an End/Abort outside one, is an error naming the offset.
- A transaction still open when the history ends is not published (Kafka's loader would keep
  waiting for its End): its records make no delta.
- ``coalesce=N`` merges N consecutive deltas into one (records concatenated; offset, timestamp,
  epoch and leader of the last).
- A delta's id in the output is its ``last_offset``; ``timestamp`` and ``epoch`` are those of
  its last batch (the loader's provenance).
- Fast path: a batch read outside a transaction that holds no transaction marker is one delta of
  its own records (what the loader makes of it), published without the loader's per-record
  walk; Delta is built by a trusted constructor (records.py's rules). Together about 3 us less
  per batch on a generated log whose batches hold one record each (read_bench.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from ..log.records import (
    ABORT_TRANSACTION_RECORD as ABORT_TRANSACTION,
)
from ..log.records import (
    BEGIN_TRANSACTION_RECORD as BEGIN_TRANSACTION,
)
from ..log.records import (
    END_TRANSACTION_RECORD as END_TRANSACTION,
)
from ..log.records import (
    LEADER_CHANGE,
    trusted_constructor,
)
from .image import MetadataReplayError

__all__ = ["Delta", "group_deltas"]

@attrs.frozen(slots=True, repr=False, weakref_slot=False)
class Delta:
    """One published metadata delta: its records (transaction markers excluded) and provenance."""

    last_offset: int
    timestamp: int
    epoch: int
    records: tuple[Any, ...] = ()
    leader_id: int | None = None
    batches: int = 1

    def __repr__(self) -> str:
        return f"Delta(last_offset={self.last_offset}, {len(self.records)} records, epoch={self.epoch})"


_make_delta: Callable[..., Delta] = trusted_constructor(Delta)
_MARKERS = frozenset({BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION})

# Transaction states of the loader.
_NONE, _STARTED, _CONTINUED, _ENDED, _ABORTED = range(5)
_IN_TXN = (_STARTED, _CONTINUED)


class _Loader:
    def __init__(self) -> None:
        self.state = _NONE
        self.records: list[Any] = []
        self.batches = 0  # batches read since the last publish
        self.last_offset = -1
        self.leader_id: int | None = None

    def _publish(self, records: tuple[Any, ...], batch: Any) -> Delta:
        delta = _make_delta(self.last_offset, batch.timestamp, batch.epoch, records, self.leader_id, max(self.batches, 1))
        self.records = []
        self.batches = 0
        self.state = _NONE
        return delta

    def load(self, batch: Any) -> Iterator[Delta]:
        for record in batch.records:
            t = record.type
            if t == BEGIN_TRANSACTION:
                if self.state in _IN_TXN:
                    raise MetadataReplayError(record, "Encountered BeginTransactionRecord while already in a transaction")
                self.state = _STARTED
            elif t == END_TRANSACTION or t == ABORT_TRANSACTION:
                if self.state not in _IN_TXN:
                    kind = "EndTransactionRecord" if t == END_TRANSACTION else "AbortTransactionRecord"
                    raise MetadataReplayError(record, f"Encountered {kind} without having seen a BeginTransactionRecord")
                self.state = _ENDED if t == END_TRANSACTION else _ABORTED
            else:
                if self.state == _STARTED:
                    self.state = _CONTINUED
                elif self.state in (_ENDED, _ABORTED):
                    self.state = _NONE
                self.records.append(record)
            # Kafka's indexWithinBatch counts NoOps too: offsets are dense, so "not the batch's
            # first record" is an offset after the base, and the delta ends just before the Begin.
            if self.state == _STARTED and (record.offset > batch.base_offset or self.batches > 0):
                if record.offset > batch.base_offset:
                    self.last_offset = record.offset - 1
                yield self._publish(tuple(self.records), batch)
                self.state = _STARTED
            self.last_offset = record.offset
        self.last_offset = batch.last_offset
        self.batches += 1
        if self.state == _ABORTED:
            yield self._publish((), batch)
        elif self.state not in _IN_TXN:
            yield self._publish(tuple(self.records), batch)


def _merge(group: list[Delta]) -> Delta:
    last = group[-1]
    records = tuple(r for d in group for r in d.records)
    return attrs.evolve(last, records=records, batches=sum(d.batches for d in group))


def group_deltas(batches: Iterable[Any], coalesce: int = 1) -> Iterator[Delta]:
    """Deltas from LogBatches in offset order (control batches only update the KRaft leader)."""
    if not isinstance(coalesce, int) or isinstance(coalesce, bool) or coalesce < 1:
        raise ValueError(f"coalesce: expected an integer >= 1, got {coalesce!r}")
    loader = _Loader()
    group: list[Delta] = []
    markers = _MARKERS
    for batch in batches:
        if batch.control:
            for c in batch.control_records:
                if c.type == LEADER_CHANGE:
                    loader.leader_id = c.data.leader_id
            continue
        produced: Iterable[Delta] | None = None
        if loader.state == _NONE:
            for r in batch.records:
                if r.type in markers:
                    break
            else:
                # The fast path (module rules): outside a transaction the loader holds nothing
                # (it publishes at every batch end), so this batch is one delta of its records.
                loader.last_offset = batch.last_offset
                delta = _make_delta(batch.last_offset, batch.timestamp, batch.epoch, batch.records, loader.leader_id, 1)
                if coalesce == 1:
                    yield delta
                    continue
                produced = (delta,)
        for delta in loader.load(batch) if produced is None else produced:
            if coalesce == 1:
                yield delta
                continue
            group.append(delta)
            if len(group) == coalesce:
                yield _merge(group)
                group = []
    if group:
        yield _merge(group)
