"""A delta's partition-level batch (plan B) sent without feeding the generic batch add by add.

Why: about 2,200 of every 200,000 generated records make a "small" delta (some 25 partitions
changed, LeaderAndIsr to ~27 brokers, UpdateMetadata to 100); through
ControllerBrokerRequestBatch each builds a state per add (each broker's first add, then each
partition's), re-reads the context for UpdateMetadata on every LeaderAndIsr add and keeps
per-broker maps it then copies into lists. Here every state is made once and the per-broker
lists are built directly. Measured on /tmp/prof200k (CPU time, collector off, load 10-12 on 2
cores): the sends of a small delta 3.35-3.60 ms through the batch, 1.98-2.02 ms here; its whole
propagation (apply, plans, sends) 4.4-4.7 ms -> 3.0 ms.

Rules of this module:
- What it computes: for a plan without ``everything`` (the propagator's batch B of a delta, type
  INCREMENTAL, and of an image, type FULL), the Sends the batch makes when ``propagator._run``
  feeds it the plan and sends (CCM:742-765), in the same order:
  1. LeaderAndIsr: one state per planned partition (the plan's leadership and registration,
     is_new=True, the recovery state gated by the metadata version as the batch gates it), to
     each of its brokers >= 0; brokers ascending (the batch's first-add order), each broker's
     partitions by (topic, partition); only live-or-shutting-down brokers with states; brokers
     with equal lists share one builder and body (the batch compares lists by value; a state is
     made once per partition, so equal lists are the same partitions, compared by identity);
     live leaders found as ``_send_leader_and_isr`` finds them (the live brokers' order, one
     node per Broker value on the inter-broker listener); topic ids a snapshot of the context's.
  2. UpdateMetadata: brokers = the plan's (ascending), then, when the plan has LeaderAndIsr, the
     live-or-shutting-down ones not yet there (the batch's CCM:446 add); sent to the live ones,
     one shared body. States by (topic, partition): from the context as
     ``_add_update_metadata_partition`` makes them (offline replicas, leader -2 and epochs 0
     while queued for deletion, skipped without leadership) for partitions planned from the
     context or with LeaderAndIsr (whose add overwrites an explicit state), else the plan's
     explicit state (a deleted topic's) as ``add_update_metadata_request_for_brokers_with_state``
     makes it.
  3. StopReplica (delete) per broker ascending, its partitions by (topic, partition), the leader
     epoch from the context; one request per live broker (below v3 the request's delete flag is
     set, as the batch's delete-only split sends it).
- Why the bytes equal the batch's: the states are made by the batch's own makers from the same
  values, the envelopes by the same builders (LeaderAndIsrBuilder with one SendParts per send,
  UpdateMetadataBuilder with the batch's cached live-broker tuple, StopReplicaBuilder), the body
  shared through SharedBody with the first destination's epoch written in, as the batch does.
  tests/replay/test_incremental.py compares every Send (broker, dropped flag, api, version,
  broker epoch, builder fields, body bytes) with the batch-built one on every delta of the real
  sample and of generated logs (hypothesis).
- When it falls back (returns None: the propagator runs the batch): a plan with ``everything``
  (batch A, full_image.py's or the batch's), and any error while building: the batch then
  raises its own error (e.g. an old UpdateMetadata version with custom listeners, a leader
  without the inter-broker listener) with its own message. So that this cannot hide a bug of
  its own, the test asserts it returns sends on every delta where the batch succeeds.
- Leadership is read from the partition's registration, not from a LeaderIsrAndControllerEpoch:
  the plan's entry holds the image's registration (``found``) and KRaft epoch, and a state's
  leader, epochs, ISR and recovery state are that registration's fields, the controller epoch the
  image's; an UpdateMetadata state reads the registration the context finds for its partition
  (offline = replicas not registered; never queued for deletion: the topic is in the image). The
  same values MCCC.partitionLeadershipInfo gives (channel_context.leadership_of copies these fields;
  the image checks the recovery state when it replays a record), so the same bytes; what is not
  made is a LeaderAndIsr per changed partition (attrs' converters: a tuple() and an enum call) and
  its wrapper. Measured on the 1M-record default log (4,222 deltas with records, sizes only, CPU
  time in one process, A and B alternating, load 2.8-3.4): propagation and rows above the fold
  14.06 / 14.22 s -> 10.54 / 10.38 s (with channel_context's identity-keyed leadership memo).
- What it caches: across sends, only the LeaderAndIsr live-leader nodes per (live-broker view
  object, listener) (``_leader_nodes``: the last one; the view is shared by consecutive images
  with the same brokers mapping and never changes, and a node is a pure function of its Broker
  value and the listener), and with them each body's LiveLeaders tuple per set of leader ids
  (the leader itself for a body of one partition, the commonest: a pure function of that set
  and the nodes; at most ``_LEADER_SETS`` sets, then forgotten). Another view or listener
  rebuilds both. Figure: 66.816 G -> 66.026 G instructions (-1.2%; cachegrind, the whole
  ``ctrlbatch replay --engine local --digest sha256`` of the 100k-record default log, 54,000
  LeaderAndIsr bodies: the found-leaders list, its sort and dict per body were most of
  ``_leader_and_isr``'s own time). Nothing else outlives a call:
  keeping each partition's LeaderAndIsr state and bytes across sends (keyed by its leadership
  and registration objects) was tried and measured no gain on /tmp/prof200k (small deltas
  change the partitions they send; a changed broker's deltas spend their time elsewhere).
- Hot path, LeaderAndIsr encoded (v2+, not sizes only: ``_leader_and_isr_runs``): the states
  are encoded topic by topic (the plan's sorted items: a topic's partitions are one run), each
  once when its first live broker is met, from make_lair_state's values as arguments
  (builders.lair_state_args: the same encoder, no state made), and each live broker's
  TopicStates pieces (topic head, count, the states' bytes, tail: builders.lair_run_pieces)
  appended as its topic ends; a body joins them with the send's head and its LiveLeaders' bytes
  (builders.lair_body_from_runs). A body's states are a ``_LairStates`` (batch/lazy_states.py):
  the broker's row numbers in the sorted items, made as the states above only when read (the
  rows only count them; tests/replay/test_incremental.py compares them with the batch's, state
  by state); brokers with equal row lists share the body. Figure: 66.026 G -> 65.640 G
  instructions (-0.6%; cachegrind, the whole sha256 replay of the 100k-record default log, where
  a body holds 1 state; at 1M records 627k states in 197k bodies) for the runs; the states
  encoded from their values, with the UpdateMetadata runs below: see "Figures (issue 26)".
- Hot path, UpdateMetadata encoded (v5+, not sizes only): the body is the envelope's pieces
  (kept per values) around the TopicStates array made per topic as LeaderAndIsr's
  (builders.umr_run_pieces, UpdateMetadataBuilder.encode_body_from_runs), each state encoded
  from its arguments; no state, topic state or request object is made (the codec encoded the
  whole request before). When every planned partition has a LeaderAndIsr entry (each add puts
  its key in umr: equal sizes are equal key sets) the states are read from the sorted
  LeaderAndIsr items (``_umr_lisr_runs``), so umr is not sorted and no tuple is made per state;
  else from make_umr_state's argument tuples (``_umr_runs``). The builder's states are a
  ``_UmrStates``, made when read. Offline replicas: ``all(map(live.__contains__, replicas))``
  (C) first, the list only when one is offline.
- Kept across sends, each for the last object it was made from (an image never changes; apply_delta
  keeps the mapping objects while no record changes them): the builders' topic-id snapshot per
  names mapping (``_topic_ids``; the batch copies it per send), the UpdateMetadata live-broker
  tuple per live-broker view (``_live_brokers``: request_batch.live_brokers compared a new tuple
  of 100 Brokers by value per send), each live leader's node and bytes per (view, listener,
  version) with the LiveLeaders bytes per set of leader ids (``_LeaderPieces``, at most
  _LEADER_SETS sets), and each topic's head bytes per name with the id object it was made for
  (``_heads``: valid while the name maps to that very id object, at most _HEADS_KEPT per
  version, then forgotten). Each is a pure function of what it is keyed by.
- Figures (issue 26; cachegrind instructions of the whole ``ctrlbatch replay --engine local`` of
  the 100k-record default log, PYTHONHASHSEED=0, main 151f1b0 -> this, with hosted.py's
  hosted_keys, propagator's inlined hosted adds and rows.py's one-row hashing and column
  chunks): sha256 65.163 G -> 63.792 G (-2.1%); sizes only 30.067 G -> 30.101 G (+0.1%: its
  paths, states made and sized, are unchanged; rows.py's chunks count more instructions and
  take less CPU, see its rules). CPU (user+sys, main and this alternating, load 3.9-5.3 on 2
  cores): 1M-record default log sha256 46.46 / 44.38 s -> 42.83 / 41.01 s (-7.5%; its hash floor
  is ~16.7 s, so the work above it ~-12%); the large shape (10 topics x 5,000) 1M sha256
  33.68 / 31.57 s -> 32.07 / 31.53 s (~-2.5%: few topics, bodies of many states); 1M default
  sizes only 22.52 / 24.61 s -> 23.16 / 23.50 s (no change beyond the noise).
- Hot paths: the plan's maps are keyed by (topic, partition) tuples (propagator's rules) and
  sorted by those keys (``_by_partition``, key=itemgetter(0): the keys are unique; sorting the
  items themselves compared (key, value) tuples, two levels of tuple comparison per step:
  292 -> 121 us for 190 items, timeit, load ~8); a TopicPartition is made only to ask the context (a StopReplica's
  leader epoch, a partition without a LeaderAndIsr entry); an UpdateMetadata state of a partition with a LeaderAndIsr entry
  reads the entry's ``found``, which is the context's registration of it (both come from the
  same image: propagator._delta_plans / _image_plans look it up by name and partition as
  channel_context does), instead of calling ``ctx.partition_registration``. Figures: with the
  fold's and the propagator's (commits 1ae1bb8, c0581ff; cachegrind instructions, 100k-record
  default log): 26.504 G -> 26.354 G sizes only, then 60.471 G -> 59.865 G with sha256.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Iterable, Mapping, Sized
from itertools import groupby
from typing import Any

from ctrlbatch.batch import OutboundRequest, UpdateType
from ctrlbatch.batch.builders import (
    LeaderAndIsrBuilder,
    SendParts,
    SharedBody,
    StopReplicaBuilder,
    UpdateMetadataBuilder,
    body_layout,
    lair_body_from_runs,
    lair_head_pieces,
    lair_leaders_pieces,
    lair_run_pieces,
    lair_state_args,
    shared_body,
    umr_run_pieces,
)
from ctrlbatch.batch.checks import int_tuple
from ctrlbatch.batch.lazy_states import LazyStates
from ctrlbatch.batch.request_batch import (
    live_brokers,
    make_lair_state,
    make_umr_state,
)
from ctrlbatch.batch.versions import (
    LEADER_RECOVERY_STATE_SINCE,
    leader_and_isr_version,
    stop_replica_version,
    update_metadata_version,
)
from ctrlbatch.context import Broker, MetadataVersion, TopicPartition
from ctrlbatch.requests import (
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    StopReplicaPartitionState,
    StopReplicaRequest,
    UpdateMetadataBroker,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)

from .channel_context import MigrationControllerChannelContext

__all__ = ["Lean", "incremental_sends"]

_topic_of = operator.attrgetter("topic_name")
_leader_of = operator.attrgetter("leader")
_first = operator.itemgetter(0)


def _topic_of_key(item: tuple[tuple[str, int], Any]) -> str:
    return item[0][0]

Lean = tuple[int, OutboundRequest]
"""A send as (broker, request); the propagator marks it dropped or not."""


def _by_partition(plan_map: Mapping[tuple[str, int], Any]) -> list[tuple[tuple[str, int], Any]]:
    """``plan_map``'s items sorted by their (topic, partition) keys: unique, so the order is the
    items' own; the keys themselves compared (module rules)."""
    return sorted(plan_map.items(), key=_first)


_LEADER_SETS = 4096  # live-leader tuples kept per view (a set of leader ids each); then forgotten
_Nodes = dict[int, list[tuple[int, LeaderAndIsrLiveLeader]]]
_FoundLeaders = dict[Any, tuple[LeaderAndIsrLiveLeader, ...]]
_nodes_kept: list[tuple[object, str, _Nodes, _FoundLeaders]] = []


def _leader_nodes(brokers: Iterable[Broker], listener: str) -> tuple[_Nodes, _FoundLeaders]:
    """Each live broker id's LeaderAndIsr live-leader nodes with their place in the live
    brokers (one per Broker value with that id, as _send_leader_and_isr finds them), and the
    live leaders already found per set of leader ids (``_live_leaders``); kept for the last
    view object (immutable: channel_context shares it between images)."""
    kept = _nodes_kept[0] if _nodes_kept else None
    if kept is not None and kept[0] is brokers and kept[1] == listener:
        return kept[2], kept[3]
    nodes: _Nodes = {}
    for i, b in enumerate(brokers):
        n = b.node(listener)
        nodes.setdefault(b.id, []).append((i, LeaderAndIsrLiveLeader(broker_id=n.id, host_name=n.host, port=n.port)))
    found: _FoundLeaders = {}
    _nodes_kept[:] = [(brokers, listener, nodes, found)]
    return nodes, found


def _leaders_of(
    values: list[LeaderAndIsrPartitionState], nodes: _Nodes, found: _FoundLeaders,
) -> tuple[LeaderAndIsrLiveLeader, ...]:
    """A body's LiveLeaders: those of its states' leader ids, found once per set of ids and
    live-broker view (module rules)."""
    lids: int | frozenset[int] = values[0].leader if len(values) == 1 else frozenset(map(_leader_of, values))
    leaders = found.get(lids)
    if leaders is None:
        if len(found) >= _LEADER_SETS:
            found.clear()
        leaders = found[lids] = _live_leaders((lids,) if isinstance(lids, int) else lids, nodes)
    return leaders


class _LeaderPieces:
    """For one (live-broker view object, listener, version): each live broker id's LeaderAndIsr
    live-leader nodes with their place in the live brokers and their bytes (``nodes``, as
    _leader_nodes finds them, each encoded once), and per set of leader ids the body's
    LiveLeaders with their bytes (``found``, at most _LEADER_SETS sets, then forgotten)."""

    __slots__ = ("count", "found", "nodes", "single", "tail")

    def __init__(self, brokers: Iterable[Broker], listener: str, version: int) -> None:
        encode, self.count, self.tail = lair_leaders_pieces(version)
        self.nodes: dict[int, list[tuple[int, LeaderAndIsrLiveLeader, bytes]]] = {}
        for lid, found in _leader_nodes(brokers, listener)[0].items():
            self.nodes[lid] = [(i, node, encode(node)) for i, node in found]
        # one node per id (the channel context's view: one Broker per id): no two ids give equal
        # nodes (a node carries its id), so a set's leaders need no de-duplication
        self.single = all(len(found) == 1 for found in self.nodes.values())
        self.found: dict[Any, tuple[tuple[LeaderAndIsrLiveLeader, ...], bytes]] = {}

    def of(self, lids: int | frozenset[int]) -> tuple[tuple[LeaderAndIsrLiveLeader, ...], bytes]:
        """A body's LiveLeaders and their bytes, for the set of its states' leader ids (``lids``:
        the id itself for one state): CCM:544-546 (_live_leaders) found once per set."""
        got = self.found.get(lids)
        if got is None:
            nodes = self.nodes
            if len(self.found) >= _LEADER_SETS:
                self.found.clear()
            if isinstance(lids, int):
                entries = nodes.get(lids, [])
            else:
                entries = [e for lid in lids for e in nodes.get(lid, ())]
                entries.sort(key=_first)
            if self.single:
                leaders = tuple([e[1] for e in entries])
                data = [e[2] for e in entries]
            else:  # each node once (by value), in the live brokers' order
                kept = dict.fromkeys([e[1] for e in entries])
                first = {e[1]: e[2] for e in reversed(entries)}
                leaders = tuple(kept)
                data = [first[node] for node in leaders]
            got = self.found[lids] = (leaders, b"".join([self.count(len(leaders)), *data, self.tail]))
        return got


_pieces_kept: list[tuple[object, str, int, _LeaderPieces]] = []


def _leader_pieces(brokers: Iterable[Broker], listener: str, version: int) -> _LeaderPieces:
    """The _LeaderPieces of the last (view object, listener, version): the view is immutable
    and shared by consecutive images (channel_context), a node a function of its Broker value
    and the listener, its bytes of the node and the version."""
    kept = _pieces_kept[0] if _pieces_kept else None
    if kept is not None and kept[0] is brokers and kept[1] == listener and kept[2] == version:
        return kept[3]
    pieces = _LeaderPieces(brokers, listener, version)
    _pieces_kept[:] = [(brokers, listener, version, pieces)]
    return pieces


def _live_leaders(
    lids: Iterable[int], nodes: _Nodes,
) -> tuple[LeaderAndIsrLiveLeader, ...]:
    """CCM:544-546: the nodes of the live brokers that lead here (``lids``), in the live
    brokers' order, each node once."""
    found_leaders = [e for lid in lids for e in nodes.get(lid, ())]
    found_leaders.sort(key=_first)
    return tuple(dict.fromkeys(node for _, node in found_leaders))


def incremental_sends(
    plan: Any, ctx: MigrationControllerChannelContext, mv: MetadataVersion, *, controller_id: int,
    header_epoch: int, listener: str, sizes_only: bool = False,
) -> list[Lean] | None:
    """The batch's sends for ``plan`` (propagator._Plan) as (broker, request), or None to fall
    back to the batch (see the module rules)."""
    if plan.everything:
        return None
    try:
        return _sends(plan, ctx, mv, controller_id, header_epoch, listener, sizes_only)
    except Exception:  # the batch raises its own error for the same plan
        return None


def _sends(
    plan: Any, ctx: MigrationControllerChannelContext, mv: MetadataVersion, controller_id: int, header_epoch: int,
    listener: str, sizes_only: bool = False,
) -> list[Lean]:
    out: list[Lean] = []
    update_type = int(UpdateType(plan.update_type))
    live_ids = ctx.live_or_shutting_down_broker_ids
    epochs = ctx.live_broker_id_and_epochs
    lisr = _by_partition(plan.lisr)
    if lisr:
        _leader_and_isr(out, lisr, ctx, mv, controller_id, header_epoch, listener, update_type, sizes_only)
    _update_metadata(out, plan, ctx, mv, controller_id, header_epoch, update_type, sizes_only, lisr)
    if plan.stop:
        version = stop_replica_version(mv)
        epoch_offset = body_layout(StopReplicaRequest, version).epoch_offset
        stops: dict[int, dict[str, list[StopReplicaPartitionState]]] = {}
        for (topic, partition), brokers in _by_partition(plan.stop):
            state = StopReplicaPartitionState(partition, ctx.leader_epoch(TopicPartition(topic, partition)), True)
            for b in brokers:
                if b >= 0:
                    stops.setdefault(b, {}).setdefault(topic, []).append(state)
        for b in sorted(stops):
            if b in live_ids:
                builder = StopReplicaBuilder(
                    version, controller_id, header_epoch, version < 3, list(stops[b].items()), True,
                )
                epoch = epochs[b]
                out.append((b, OutboundRequest(builder, epoch, shared_body(builder, epoch, epoch_offset, sizes_only=sizes_only))))
    return out


def _leader_and_isr(
    out: list[Lean], lisr: list[tuple[tuple[str, int], Any]], ctx: MigrationControllerChannelContext,
    mv: MetadataVersion, controller_id: int, header_epoch: int, listener: str, update_type: int,
    sizes_only: bool = False,
) -> None:
    version = leader_and_isr_version(mv)
    gate = mv.is_at_least(LEADER_RECOVERY_STATE_SINCE)
    if version >= 2 and not sizes_only:
        _leader_and_isr_runs(out, lisr, ctx, version, gate, controller_id, header_epoch, listener, update_type)
        return
    per_broker: dict[int, list[LeaderAndIsrPartitionState]] = {}
    for (topic, partition), entry in lisr:
        lead = entry.found  # the leadership's fields, read from its registration (module rules)
        reg = entry.reg
        state = make_lair_state(
            topic, partition, entry.epoch, lead.leader, lead.leader_epoch, lead.isr, lead.partition_epoch,
            reg.replicas, reg.adding_replicas, reg.removing_replicas, True,
            lead.leader_recovery_state if gate else 0,
        )
        for b in entry.brokers:
            states = per_broker.get(b)
            if states is None:
                if b < 0:
                    continue
                states = per_broker[b] = []
            states.append(state)
    live_ids = ctx.live_or_shutting_down_broker_ids
    epochs = ctx.live_broker_id_and_epochs
    topic_ids = dict(ctx.topic_ids)  # a snapshot shared by this send's builders, as the batch's
    epoch_offset = body_layout(LeaderAndIsrRequest, version).epoch_offset
    parts = SendParts()
    leaders_of: tuple[_Nodes, _FoundLeaders] | None = None
    shared: dict[tuple[int, ...], tuple[LeaderAndIsrBuilder, SharedBody]] = {}
    for b in sorted(per_broker):
        if b not in live_ids:
            continue
        values = per_broker[b]
        key = tuple(map(id, values))
        epoch = epochs[b]
        found = shared.get(key)
        if found is None:
            if leaders_of is None:
                leaders_of = _leader_nodes(ctx.live_or_shutting_down_brokers, listener)
            leaders = _leaders_of(values, *leaders_of)
            builder = LeaderAndIsrBuilder(
                version, controller_id, header_epoch, values, topic_ids, leaders, True, update_type,
            )
            found = shared[key] = (builder, shared_body(builder, epoch, epoch_offset, parts, sizes_only=sizes_only))
        out.append((b, OutboundRequest(found[0], epoch, found[1])))


def _leader_and_isr_runs(
    out: list[Lean], lisr: list[tuple[tuple[str, int], Any]], ctx: MigrationControllerChannelContext,
    version: int, gate: bool, controller_id: int, header_epoch: int, listener: str, update_type: int,
) -> None:
    """_leader_and_isr's sends, encoded (v2+): each state encoded from its values (no state
    made), each body's TopicStates made topic by topic, its states a _LairStates of row numbers
    (module rules)."""
    epochs = ctx.live_broker_id_and_epochs
    topic_ids = _topic_ids(ctx.topic_ids)
    args = lair_state_args(version)
    _, head_of, count, tail = lair_run_pieces(version)
    rows_of: dict[int, list[int]] = {}  # a live broker's rows (indexes into lisr), in order
    runs: dict[int, list[bytes]] = {}
    topics: dict[int, int] = {}
    leader_at: list[int] = []  # each row's leader
    heads = _heads(4, version)
    row = -1
    for topic, items in groupby(lisr, _topic_of_key):  # sorted: a topic's partitions are one run
        touched: dict[int, list[bytes]] = {}
        for (_, partition), entry in items:
            row += 1
            lead = entry.found  # the leadership's fields, read from its registration (module rules)
            leader_at.append(lead.leader)
            data = None
            for b in entry.brokers:
                if b not in epochs:  # ids < 0 and brokers not live get no body (epochs: the live ids)
                    continue
                if data is None:  # make_lair_state's values, encoded as arguments
                    reg = entry.reg
                    data = args(
                        topic, partition, entry.epoch, lead.leader, lead.leader_epoch, lead.isr, lead.partition_epoch,
                        reg.replicas, reg.adding_replicas, reg.removing_replicas, True,
                        lead.leader_recovery_state if gate else 0,
                    )
                got = touched.get(b)
                if got is None:
                    touched[b] = [data]
                    rows = rows_of.get(b)
                    if rows is None:
                        rows_of[b] = [row]
                    else:
                        rows.append(row)
                else:
                    got.append(data)
                    rows_of[b].append(row)
        if touched:
            tid = topic_ids.get(topic)
            kept = heads.get(topic)
            if kept is None or kept[0] is not tid:  # the topic's head, kept with its id object (module rules)
                if len(heads) >= _HEADS_KEPT:
                    heads.clear()
                kept = heads[topic] = (tid, head_of(topic, topic_ids))
            head = kept[1]
            for b, got in touched.items():
                run = runs.get(b)
                if run is None:
                    run = runs[b] = []
                    topics[b] = 1
                else:
                    topics[b] += 1
                run.append(head)
                run.append(count(len(got)))
                run += got
                run.append(tail)
    epoch_offset = body_layout(LeaderAndIsrRequest, version).epoch_offset
    head_pieces = lair_head_pieces(version, controller_id, True, header_epoch, update_type)
    pieces: _LeaderPieces | None = None
    made: dict[int, LeaderAndIsrPartitionState] = {}
    shared: dict[tuple[int, ...], tuple[LeaderAndIsrBuilder, SharedBody]] = {}
    for b in sorted(rows_of):
        rows = rows_of[b]
        key = tuple(rows)  # equal lists are the same rows (module rules)
        epoch = epochs[b]
        found = shared.get(key)
        if found is None:
            if pieces is None:
                pieces = _leader_pieces(ctx.live_or_shutting_down_brokers, listener, version)
            leaders = pieces.of(leader_at[rows[0]] if len(rows) == 1 else frozenset(map(leader_at.__getitem__, rows)))
            builder = LeaderAndIsrBuilder(
                version, controller_id, header_epoch, _LairStates(lisr, rows, gate, made),  # type: ignore[arg-type]
                topic_ids, leaders[0], True, update_type,
            )
            body = lair_body_from_runs(head_pieces, epoch, count(topics[b]), runs[b], leaders[1])
            found = shared[key] = (builder, SharedBody(body, epoch_offset))
        out.append((b, OutboundRequest(found[0], epoch, found[1])))


class _LairStates(LazyStates[LeaderAndIsrPartitionState]):
    """One body's LeaderAndIsr states, made only when read (the rows only count them): each
    row of the send's sorted plan items made as _leader_and_isr makes its state, once per send
    (``made``, shared by the send's bodies, so a partition sent to several brokers is one object)."""

    KIND = "LeaderAndIsr"
    __slots__ = ("_gate", "_lisr", "_made", "_rows", "_states")

    def __init__(
        self, lisr: list[tuple[tuple[str, int], Any]], rows: list[int], gate: bool, made: dict[int, LeaderAndIsrPartitionState],
    ) -> None:
        self._lisr = lisr
        self._rows = rows
        self._gate = gate
        self._made = made
        self._states: list[LeaderAndIsrPartitionState] | None = None

    def _all(self) -> list[LeaderAndIsrPartitionState]:
        if self._states is None:
            made = self._made
            out = []
            for row in self._rows:
                state = made.get(row)
                if state is None:
                    (topic, partition), entry = self._lisr[row]
                    lead, reg = entry.found, entry.reg
                    state = made[row] = make_lair_state(
                        topic, partition, entry.epoch, lead.leader, lead.leader_epoch, lead.isr, lead.partition_epoch,
                        reg.replicas, reg.adding_replicas, reg.removing_replicas, True,
                        lead.leader_recovery_state if self._gate else 0,
                    )
                out.append(state)
            self._states = out
        return self._states

    def __len__(self) -> int:
        return len(self._rows)


class _UmrStates(LazyStates[UpdateMetadataPartitionState]):
    """An UpdateMetadata body's states, made only when read: from the sorted LeaderAndIsr items
    (``items``: each partition's registration, _lisr_values) or from ``values`` (each
    make_umr_state's arguments as a tuple, or an explicit state itself)."""

    KIND = "UpdateMetadata"
    __slots__ = ("_epoch", "_items", "_live", "_states", "_values")

    def __init__(
        self, items: list[tuple[tuple[str, int], Any]] | None, epoch: int, live: Mapping[int, int],
        values: list[Any] | None,
    ) -> None:
        self._items = items
        self._epoch = epoch
        self._live = live
        self._values = values
        self._states: list[UpdateMetadataPartitionState] | None = None

    def _all(self) -> list[UpdateMetadataPartitionState]:
        if self._states is None:
            items = self._items
            values: list[Any] = (
                self._values if self._values is not None else _lisr_values(items or [], self._epoch, self._live)
            )
            self._states = [make_umr_state(*v) if type(v) is tuple else v for v in values]
        return self._states

    def __len__(self) -> int:
        kept: Sized | None = self._items if self._values is None else self._values
        return 0 if kept is None else len(kept)


_HEADS_KEPT = 16384  # topic heads kept per (api, version), then forgotten (builders keeps as many)
_heads_kept: dict[tuple[int, int], dict[str, tuple[uuid.UUID | None, bytes]]] = {}


def _heads(api_key: int, version: int) -> dict[str, tuple[uuid.UUID | None, bytes]]:
    """The topic heads (name and id: builders' _topic_head / _umr_topic_head) kept per name with
    the id object they were made for: a topic's id object is the same while its name maps to it
    (apply_delta copies the names mapping, not its ids), so ``is`` finds a valid head without the
    id's hash; another id (a re-created topic) or None makes it again (module rules)."""
    heads = _heads_kept.get((api_key, version))
    if heads is None:
        heads = _heads_kept[api_key, version] = {}
    return heads


_topic_ids_kept: list[tuple[Mapping[str, uuid.UUID], dict[str, uuid.UUID]]] = []


def _topic_ids(names: Mapping[str, uuid.UUID]) -> dict[str, uuid.UUID]:
    """The LeaderAndIsr builders' snapshot of the context's topic ids (as the batch's), copied
    once per names mapping: an image never changes its mapping and apply_delta keeps it while
    no topic is created or deleted, so the last copy serves consecutive images (module rules)."""
    kept = _topic_ids_kept[0] if _topic_ids_kept else None
    if kept is not None and kept[0] is names:
        return kept[1]
    snapshot = dict(names)
    _topic_ids_kept[:] = [(names, snapshot)]
    return snapshot


_live_kept: list[tuple[object, int, tuple[UpdateMetadataBroker, ...]]] = []


def _live_brokers(brokers: Iterable[Broker], version: int) -> tuple[UpdateMetadataBroker, ...]:
    """request_batch.live_brokers(tuple(brokers), version), kept for the last live-broker view
    object (immutable, shared by consecutive images: channel_context): no tuple of 100 Brokers
    made and compared by value per send (module rules)."""
    kept = _live_kept[0] if _live_kept else None
    if kept is not None and kept[0] is brokers and kept[1] == version:
        return kept[2]
    live = live_brokers(tuple(brokers), version)
    _live_kept[:] = [(brokers, version, live)]
    return live


def _update_metadata(
    out: list[Lean], plan: Any, ctx: MigrationControllerChannelContext, mv: MetadataVersion, controller_id: int,
    header_epoch: int, update_type: int, sizes_only: bool = False,
    lisr_items: list[tuple[tuple[str, int], Any]] | None = None,
) -> None:
    live_ids = ctx.live_or_shutting_down_broker_ids
    order = dict.fromkeys(sorted(b for b in plan.umr_brokers if b >= 0))
    if plan.lisr:
        order.update(dict.fromkeys(live_ids))
    destinations = [b for b in order if b in live_ids]
    if not destinations:
        return
    lisr = plan.lisr
    epoch = ctx.kraft_epoch
    live = ctx.live_broker_id_and_epochs
    # every partition has a LeaderAndIsr entry (each add puts its key in umr, so equal sizes are
    # equal key sets): each state reads its entry's ``found`` whatever umr holds, in the sorted
    # LeaderAndIsr items' order, so neither umr is sorted nor a tuple made per state (module rules)
    from_lisr = lisr_items is not None and len(plan.umr) == len(lisr)
    values: list[Any] | None = None
    if not from_lisr:
        values = []  # make_umr_state's arguments, or an explicit state
        ap = values.append
        is_live = live.__contains__
        registration = ctx.partition_registration
        for tp, explicit in _by_partition(plan.umr):
            topic, partition = tp
            entry = lisr.get(tp)
            # the context's registration of tp: a LeaderAndIsr entry's ``found`` is it (module rules)
            p = (entry.found if entry is not None
                 else registration(TopicPartition(topic, partition)) if explicit is None else None)
            if p is not None:  # without leadership the batch skips it (CCM:466-486)
                # umr_state_from_view(tp, ctx.update_metadata_view(tp)), read from the registration
                # (module rules); never queued for deletion: the partition's topic is in the image
                reps = p.replicas
                ap((topic, partition, epoch, p.leader, p.leader_epoch, p.isr, p.partition_epoch, reps,
                    () if all(map(is_live, reps)) else tuple([r for r in reps if r not in live])))
            elif explicit is not None:
                ap(_explicit(topic, partition, explicit))
    states = _UmrStates(lisr_items if from_lisr else None, epoch, live, values)
    version = update_metadata_version(mv)
    topic_ids = ctx.topic_ids
    live_brokers_ = _live_brokers(ctx.live_or_shutting_down_brokers, version)
    epochs = ctx.live_broker_id_and_epochs
    epoch_offset = body_layout(UpdateMetadataRequest, version).epoch_offset
    if sizes_only or version < _UMR_RUNS_SINCE:
        made = list(states)
        builder = UpdateMetadataBuilder(
            version, controller_id, header_epoch, made, live_brokers_,
            {t: topic_ids[t] for t in dict.fromkeys(map(_topic_of, made)) if t in topic_ids}, True, update_type,
        )
        body = shared_body(builder, epochs[destinations[0]], epoch_offset, sizes_only=sizes_only)
    else:
        if values is None:
            assert lisr_items is not None
            used, topics, runs = _umr_lisr_runs(lisr_items, epoch, live, topic_ids, version)
        else:
            used, topics, runs = _umr_runs(values, topic_ids, version)
        builder = UpdateMetadataBuilder(
            version, controller_id, header_epoch, states, live_brokers_,  # type: ignore[arg-type]
            used, True, update_type,
        )
        body = SharedBody(builder.encode_body_from_runs(epochs[destinations[0]], topics, runs), epoch_offset)
    for b in destinations:
        out.append((b, OutboundRequest(builder, epochs[b], body)))


def _lisr_values(items: list[tuple[tuple[str, int], Any]], epoch: int, live: Mapping[int, int]) -> list[tuple[Any, ...]]:
    """make_umr_state's arguments for each of the sorted LeaderAndIsr items: the partition's
    registration (``found``), the image's KRaft epoch, offline = its replicas not registered."""
    is_live = live.__contains__
    return [
        (topic, partition, epoch, p.leader, p.leader_epoch, p.isr, p.partition_epoch, p.replicas,
         () if all(map(is_live, p.replicas)) else tuple([r for r in p.replicas if r not in live]))
        for (topic, partition), p in [(key, entry.found) for key, entry in items]
    ]


def _umr_lisr_runs(
    items: list[tuple[tuple[str, int], Any]], epoch: int, live: Mapping[int, int], topic_ids: Mapping[str, uuid.UUID],
    version: int,
) -> tuple[dict[str, uuid.UUID], int, list[bytes]]:
    """_umr_runs(_lisr_values(items, epoch, live), topic_ids, version) without the values: each
    state encoded from the registration's fields as arguments (module rules)."""
    args, _, head_of, count, tail = umr_run_pieces(version)
    heads = _heads(6, version)
    is_live = live.__contains__
    used: dict[str, uuid.UUID] = {}
    runs: list[bytes] = []
    ap = runs.append
    current: str | None = None
    count_at = n = topics = 0
    for (topic, partition), entry in items:
        p = entry.found
        reps = p.replicas
        data = args(topic, partition, epoch, p.leader, p.leader_epoch, p.isr, p.partition_epoch, reps,
                    () if all(map(is_live, reps)) else tuple([r for r in reps if r not in live]))
        if topic != current:
            if current is not None:
                runs[count_at] = count(n)
                ap(tail)
            ap(_run_head(topic, topic_ids, used, heads, head_of))
            count_at = len(runs)
            ap(b"")
            current, n = topic, 0
            topics += 1
        ap(data)
        n += 1
    if current is not None:
        runs[count_at] = count(n)
        ap(tail)
    return used, topics, runs


def _run_head(
    topic: str, topic_ids: Mapping[str, uuid.UUID], used: dict[str, uuid.UUID],
    heads: dict[str, tuple[uuid.UUID | None, bytes]], head_of: Any,
) -> bytes:
    """A run's topic head (name, id): kept per name with its id object (module rules); the id
    noted in ``used`` (the builder's topic ids). Once per topic of a body, not per state."""
    tid = topic_ids.get(topic)
    if tid is not None:
        used[topic] = tid
    kept = heads.get(topic)
    if kept is None or kept[0] is not tid:
        if len(heads) >= _HEADS_KEPT:
            heads.clear()
        kept = heads[topic] = (tid, head_of(topic, 0 if tid is None else tid.int))  # ZERO_UUID's int without an id
    return kept[1]


_UMR_RUNS_SINCE = 5  # UpdateMetadata's first version with topic states: bodies from runs (umr_run_pieces)


def _umr_runs(
    values: list[Any], topic_ids: Mapping[str, uuid.UUID], version: int,
) -> tuple[dict[str, uuid.UUID], int, list[bytes]]:
    """The builder's topic ids (its states' topics that have one, in first-seen order), the
    number of topics and the TopicStates array's pieces (per topic: head, count, the states'
    bytes, tail) of states in (topic, partition) order: a topic's states are one run."""
    args, encode, head_of, count, tail = umr_run_pieces(version)
    heads = _heads(6, version)
    used: dict[str, uuid.UUID] = {}
    runs: list[bytes] = []
    ap = runs.append
    current: str | None = None
    count_at = n = topics = 0
    for v in values:
        if type(v) is tuple:
            topic = v[0]
            data = args(*v)
        else:
            topic = v.topic_name
            data = encode(v)
        if topic != current:
            if current is not None:
                runs[count_at] = count(n)
                ap(tail)
            ap(_run_head(topic, topic_ids, used, heads, head_of))
            count_at = len(runs)
            ap(b"")
            current, n = topic, 0
            topics += 1
        ap(data)
        n += 1
    if current is not None:
        runs[count_at] = count(n)
        ap(tail)
    return used, topics, runs


def _explicit(topic: str, partition: int, kw: Mapping[str, Any]) -> UpdateMetadataPartitionState:
    """add_update_metadata_request_for_brokers_with_state's state (CCM:492-513)."""
    return make_umr_state(  # type: ignore[no-any-return]
        topic, partition, kw["controller_epoch"], kw["leader"], kw["leader_epoch"], int_tuple(kw["isr"], "isr"),
        kw["partition_epoch"], int_tuple(kw["replicas"], "replicas"),
        int_tuple(kw["offline_replicas"], "offline_replicas"),
    )
