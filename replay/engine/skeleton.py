"""The engine skeleton both engines run: from a history's batches to send groups and a summary.

Rules of this module:
- An ``EngineRun`` replays a stretch of a history: with ``from_snapshot``, first the snapshot
  (its image, folded over the empty image, takes the image path; its pseudo-delta is the
  snapshot's last contained offset, end offset - 1, with the header's lastContainedLogTimestamp),
  then the deltas of the batches it is given (``group_deltas``), each through the batch engine
  (``propagate_delta``). The sequential engine runs one over the whole history, a Spark unit one
  over its byte range, starting from the image the plan carried to it.
- Its output is the delivered sends as ``rows.SendGroup`` values, in send order, each with its
  delta's cause (image/causes.py; the snapshot's pseudo-delta is ``SNAPSHOT``); the summary
  counts every batch read (records by type), dropped sends per API, every delivered request per
  API and broker, and each delta; ``delivered`` counts the requests per broker (a Spark unit's
  share of the per-broker ``seq``). Delivered groups are tallied per (API, cause, broker set) (the
  UpdateMetadata fan-out goes to the same live brokers delta after delta) and settled into the
  summary and ``delivered`` when ``groups`` ends (or is closed) and whenever MAX_TALLY keys are
  held, so counting costs a few operations per group, not per broker, and its memory is bounded.
  Read them once the groups are exhausted (tests/replay/test_local_engine.py checks them against
  count_row on every row).
- A delta without records (NoOps only: half the deltas of a real log, 5M of a 10M-record
  generated one) only moves the image's offset and epoch (apply_delta's own shortcut) and is
  counted as a delta without requests, without the call to propagate_delta, whose changes
  would touch nothing and send nothing: 1.7 us a delta through the general path, 1.2 us here
  (the engine over the 1M-record generated log's 499,957 NoOp batches: 0.86 s, 0.59 s). Its
  first offset is not computed either (DeltaStarts: ``last`` moves, the pops wait for the next
  delta that needs its first offset). The move itself is deferred: the image takes the last
  such delta's offset and epoch just before the next delta with records is propagated, and at
  the end, so every image propagate_delta is given, and ``self.image`` at the end, is the one
  the eager fold (one move per NoOp delta) gives, field by field, while a MetadataImage is made
  once per run of NoOp deltas, not once per delta (tests/replay/test_engine_noop_moves.py checks
  it over random batch sequences, with first offsets and the summary).
- ``counted_runs`` is ``counted`` for batches with NoOpRun items among them (log/records.py:
  the Spark one pass keeps its NoOp-only batches as runs, spark/ranges.py): a run is counted as
  the batches it stands for (summary.count_noop_run: its batches, bytes and NoOps, and the
  deltas beyond the one it makes), seen by the trail and noted by DeltaStarts as one span, and
  grouped as one delta of no records (the deferred move takes its last offset and epoch, what
  its last batch's delta gives). A record the replay refuses is in the delta being replayed, so
  the trail still names its batch. Only with coalesce 1 (the one pass's; else a ValueError).
- ``counted`` does DeltaStarts.watch's noting of data batches in its own loop (one generator
  layer less per batch: ``watch`` stays for other readers). With the fold's cuts (image.py) and
  reading's inline NoOp count, measured (issue 26) with cachegrind on the 100k-record default
  log: this skeleton with propagate_delta reduced to the fold (reading, grouping, folding)
  8.089 G -> 7.059 G instructions (1.98 G of each is start-up and imports); the whole local
  replay, --digest none, 30.112 G -> 29.048 G, with sha256 65.200 G -> 64.141 G; CPU of the 1M-record replay, --digest none,
  22.2 / 22.5 s -> 21.5 / 21.3 s (two alternating runs each, load 3.3-4.1).
- A record the replay refuses (MetadataReplayError) is named by the file and byte offset (or
  line) of its batch, like an input error (errors.BatchTrail), or by the input as a whole when
  its batch has left the trail's window. ``locate`` does it, for the planner too.
- While ``groups`` runs (and is suspended between its groups) the cyclic garbage collector runs
  rarely (``rare_collections``) and large buffers go to mmap, not the heap
  (``fixed_mmap_threshold``), in both engines (the sequential process, each Spark unit); every
  Spark task's function runs through ``worker_task``. The policy, its reasons and its figures
  are the process-wide one of ``ctrlbatch.common.tuning`` (shared with the batch and the
  simulated servers).
- Per batch read (5M in a 10M-record log) ``counted`` does no Python call but the summary's
  count: the trail's entry is appended in place (``BatchTrail.appender``) and the progress is
  told every PROGRESS_EVERY batches and at the end (its line is redrawn by time, so what it
  shows moves by at most that many batches; the count it ends with is exact).
- No I/O of its own and no engine-specific state: what differs between engines (where batches
  come from, what is done with the groups) stays with them.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from typing import Any, TypeVar

from ctrlbatch.common.tuning import fixed_mmap_threshold, rare_collections

from ..image.causes import SNAPSHOT
from ..image.deltas import Delta, group_deltas
from ..image.image import EMPTY_IMAGE, MetadataImage, MetadataReplayError, apply_delta
from ..log.errors import BatchTrail
from ..log.reading import TEXT_KINDS
from ..log.records import SNAPSHOT_HEADER, LogBatch, MetadataRecord, NoOpRun
from ..log.sources import History
from ..propagate.propagator import ReplayOptions, Send, propagate_delta, propagate_image
from ..rows.rows import SendGroup, send_groups
from ..rows.summary import ReplaySummary

__all__ = [
    "DeltaStarts", "EngineRun", "snapshot_image", "snapshot_start",
]

T = TypeVar("T")
MAX_TALLY = 4_096  # distinct (api, cause, broker set) keys tallied before they are settled into the summary
PROGRESS_EVERY = 256  # batches read between two calls of on_batch (the progress line is redrawn by time anyway)
_NOWHERE: deque[tuple[int, int]] = deque(maxlen=0)  # where counted notes data batches without a DeltaStarts


def snapshot_image(batches: Iterable[LogBatch], *, end_offset: int, epoch: int) -> tuple[MetadataImage, int, list[LogBatch]]:
    """The image a snapshot's batches hold, its lastContainedLogTimestamp (0 if absent), and the batches."""
    kept = list(batches)
    timestamp = 0
    records: list[MetadataRecord] = []
    for b in kept:
        if b.control:
            for c in b.control_records:
                if c.type == SNAPSHOT_HEADER:
                    timestamp = int(getattr(c.data, "last_contained_log_timestamp", 0))
        else:
            records.extend(b.records)
    image, _ = apply_delta(EMPTY_IMAGE, records, offset=end_offset - 1, epoch=epoch)
    return image, timestamp, kept


def snapshot_start(history: History, batches: Iterable[LogBatch] | None = None) -> tuple[MetadataImage, Delta | None]:
    """The image a history's snapshot holds and its pseudo-delta, or the empty image and None
    without a snapshot. batches: the snapshot's batches (default: history.snapshot_batches())."""
    snapshot = history.snapshot
    if snapshot is None:
        return EMPTY_IMAGE, None
    read = history.snapshot_batches() if batches is None else batches
    image, timestamp, _ = snapshot_image(read, end_offset=snapshot.end_offset, epoch=snapshot.epoch)
    return image, Delta(image.offset, timestamp, image.epoch, (), None, 0)


_PENDING_MAX = 4096  # DeltaStarts entries kept through NoOp-only deltas before they are settled


class DeltaStarts:
    """Each delta's first offset (rows.py's ``delta_first_offset``): just after the delta before
    it, or the base offset of its first data batch when that is later (control batches between
    deltas belong to none). A Spark unit starts right after a delta, so its first delta's data
    batch decides, as in the sequential run. ``watch`` passes the batches on, noting data
    batches; ``first(delta)`` is called once per delta, in order, or, for a delta whose first
    offset is not needed (a NoOp-only delta: no rows), ``last`` is set to its last offset: the
    entries first() would have popped are popped at the next call, which pops every entry ending
    at or before the last delta's end, so it returns the same offset."""

    __slots__ = ("last", "pending")

    def __init__(self, last: int = -1) -> None:
        self.pending: deque[tuple[int, int]] = deque()  # (base, last offset) of the data batches not yet popped
        self.last = last

    def watch(self, batches: Iterable[LogBatch]) -> Iterator[LogBatch]:
        pending = self.pending
        for b in batches:
            if not b.control:
                pending.append((b.base_offset, b.last_offset))
            yield b

    def settle(self) -> None:
        """Pop the entries ``first`` would pop now (ending at or before ``last``): a long run of
        NoOp-only deltas (an idle cluster's hours) keeps the deque at _PENDING_MAX entries, not
        one per batch."""
        pending, done = self.pending, self.last
        while pending and pending[0][1] <= done:
            pending.popleft()

    def first(self, last_offset: int) -> int:
        self.settle()
        pending, done = self.pending, self.last
        first = done + 1
        if pending and pending[0][0] > first:
            first = pending[0][0]
        self.last = last_offset
        return first


def trail_for(history: History) -> BatchTrail:
    """The trail of a history's batches: byte offsets, or lines for text inputs."""
    return BatchTrail("line" if getattr(history, "kind", "log") in TEXT_KINDS else "byte")


def locate(e: MetadataReplayError, trail: BatchTrail, history: History) -> MetadataReplayError:
    """The refused record's error, naming its batch (or the input as a whole)."""
    return e.with_source(trail.where(e.offset) or str(history.source))


class EngineRun:
    """One replay pass over batches of ``history`` (see the module rules). ``on_batch(n)`` is
    told the batches read since its last call (the sequential engine's progress)."""

    def __init__(
        self, history: History, options: ReplayOptions, coalesce: int = 1, on_batch: Callable[[int], None] | None = None
    ) -> None:
        if not isinstance(options, ReplayOptions):
            raise TypeError(f"options: expected ReplayOptions, got {type(options).__name__}")
        if not isinstance(coalesce, int) or isinstance(coalesce, bool) or coalesce < 1:
            raise ValueError(f"coalesce: expected an integer >= 1, got {coalesce!r}")
        self.history = history
        self.options = options
        self.coalesce = coalesce
        self.summary = ReplaySummary()
        self.trail = trail_for(history)
        self.delivered: Counter[int] = Counter()
        self.image: MetadataImage = EMPTY_IMAGE
        self._on_batch = on_batch
        # (api_key, cause, brokers) -> [groups, partitions, bytes] of the groups delivered since the last _settle
        self._tally: dict[tuple[int, str, tuple[int, ...]], list[int]] = {}

    def __repr__(self) -> str:
        return f"EngineRun({self.history!r}, {self.summary!r})"

    def counted(self, batches: Iterable[LogBatch], starts: DeltaStarts | None = None) -> Iterator[LogBatch]:
        """The batches, each seen by the trail and counted in the summary as it passes; the
        progress told every PROGRESS_EVERY batches and when the batches end (module rules).
        starts: the DeltaStarts whose ``watch`` this loop also does (one generator less a batch)."""
        see, count, on_batch = self.trail.appender(), self.summary.count_batch, self._on_batch
        note = (_NOWHERE if starts is None else starts.pending).append
        if on_batch is None:
            for b in batches:
                see((b.base_offset, b.last_offset, b.source, b.position))  # trail.see(b), without its call
                count(b)
                if not b.control:
                    note((b.base_offset, b.last_offset))  # DeltaStarts.watch's, inline
                yield b
            return
        pending = 0
        try:
            for b in batches:
                see((b.base_offset, b.last_offset, b.source, b.position))
                count(b)
                if not b.control:
                    note((b.base_offset, b.last_offset))
                pending += 1
                if pending == PROGRESS_EVERY:
                    on_batch(pending)
                    pending = 0
                yield b
        finally:
            if pending:
                on_batch(pending)

    def counted_runs(self, batches: Iterable[LogBatch | NoOpRun], starts: DeltaStarts) -> Iterator[LogBatch | NoOpRun]:
        """``counted`` over batches with NoOpRun items among them: a run is counted as its
        batches (summary.count_noop_run), seen by the trail and noted as one span (module rules)."""
        see, count, on_batch, summary = self.trail.appender(), self.summary.count_batch, self._on_batch, self.summary
        note = starts.pending.append
        pending = 0
        try:
            for b in batches:
                see((b.base_offset, b.last_offset, b.source, b.position))
                if b.__class__ is NoOpRun:
                    summary.count_noop_run(b)
                    n = b.count
                else:
                    count(b)
                    n = 1
                if not b.control:
                    note((b.base_offset, b.last_offset))
                if on_batch is not None:
                    pending += n
                    if pending >= PROGRESS_EVERY:
                        on_batch(pending)
                        pending = 0
                yield b
        finally:
            if pending and on_batch is not None:
                on_batch(pending)

    def groups(
        self,
        batches: Iterable[LogBatch] | Iterable[LogBatch | NoOpRun],
        *,
        image: MetadataImage = EMPTY_IMAGE,
        from_snapshot: bool = False,
        leader: LogBatch | None = None,
        runs: bool = False,
    ) -> Iterator[SendGroup]:
        """The send groups of the snapshot (with from_snapshot) and of the deltas of batches,
        starting from image. leader: the last LeaderChange batch before batches (not counted:
        it was read before this stretch), so the deltas carry the KRaft leader in office.
        runs: NoOpRun items may stand among the batches (module rules).
        ``self.image`` is the image after the last delta once the groups are exhausted."""
        fixed_mmap_threshold()
        with rare_collections():
            try:
                yield from self._groups(batches, image, from_snapshot, leader, runs)
            finally:
                self._settle()

    def _groups(
        self, batches: Iterable[Any], image: MetadataImage, from_snapshot: bool, leader: LogBatch | None,
        runs: bool = False,
    ) -> Iterator[SendGroup]:
        try:
            if from_snapshot:
                if self.history.snapshot is None:
                    raise ValueError("from_snapshot: the history has no snapshot to start from")
                image, start = snapshot_start(self.history, self.counted(self.history.snapshot_batches()))
                assert start is not None  # a snapshot gives its pseudo-delta
                yield from self._deliver(start, propagate_image(image, self.options), 0, SNAPSHOT)
            starts = DeltaStarts(image.offset if from_snapshot else -1)
            if runs and self.coalesce != 1:
                raise ValueError("runs: NoOpRun items are replayed with coalesce 1 only")
            stream: Iterable[Any] = self.counted_runs(batches, starts) if runs else self.counted(batches, starts)
            if leader is not None:
                stream = chain((leader,), stream)
            summary, options = self.summary, self.options
            moved: Delta | None = None  # the last NoOp-only delta whose move the image has not taken yet
            for delta in group_deltas(stream, self.coalesce):
                if delta.records == ():  # NoOps only (half of a real log's deltas): nothing is sent (module rules)
                    moved = delta
                    starts.last = delta.last_offset  # its first offset unused: DeltaStarts.first's pops wait
                    if len(starts.pending) > _PENDING_MAX:
                        starts.settle()
                    summary.deltas_without_requests += 1  # count_delta(0), inline
                    continue
                if moved is not None:  # the image every delta sees is the eager one (module rules)
                    image = apply_delta(image, (), offset=moved.last_offset, epoch=moved.epoch)[0]
                    moved = None
                first = starts.first(delta.last_offset)
                image, sends = propagate_delta(image, delta, options)
                yield from self._deliver(delta, sends, first)
            if moved is not None:
                image = apply_delta(image, (), offset=moved.last_offset, epoch=moved.epoch)[0]
            self.image = image
        except MetadataReplayError as e:
            raise locate(e, self.trail, self.history) from None

    def _deliver(
        self, delta: Delta, sends: list[Send], first_offset: int, cause: str | None = None,
    ) -> Iterator[SendGroup]:
        summary, tally = self.summary, self._tally
        for send in sends:
            if send.dropped:
                summary.count_dropped(send.request.api_key)
        delivered = 0
        for group in send_groups(delta, sends, first_offset, cause):
            brokers = group.brokers
            key = (group.api_key, group.cause, brokers)
            counts = tally.get(key)
            if counts is None:
                if len(tally) >= MAX_TALLY:
                    self._settle()
                tally[key] = [1, group.partitions, group.size]
            else:
                counts[0] += 1
                counts[1] += group.partitions
                counts[2] += group.size
            delivered += len(brokers)
            yield group
        summary.count_delta(delivered)

    def _settle(self) -> None:
        """Move the tallied groups into the summary and ``delivered`` (see the module rules)."""
        summary, delivered = self.summary, self.delivered
        for (api_key, cause, brokers), (groups, partitions, size) in self._tally.items():
            summary.count_group(api_key, partitions, size, brokers, groups, cause)
            for b in brokers:
                delivered[b] += groups
        self._tally.clear()
