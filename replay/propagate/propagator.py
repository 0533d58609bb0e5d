"""Kafka 3.9's MigrationPropagator over a replayed image: the requests each delta (or a snapshot
image) makes the KRaft controller send to ZooKeeper-mode brokers.

Rules (kafka-migration-propagator.md §2-7, MigrationPropagator.scala 3.9):
- A delta that touches neither topics nor the cluster sends nothing. Otherwise batch A (type
  UNKNOWN): UpdateMetadata with every partition to the changed target brokers (registered,
  unfenced, new or changed registration), plus the other target brokers (with no partitions of
  their own) when any broker changed. Then batch B (INCREMENTAL): LeaderAndIsr (is_new) for
  every partition a changed target broker hosts; for a deleted topic, StopReplica(delete) to
  all its replicas and an explicit UpdateMetadata state (leader -2, epochs 0, the header's
  controller epoch) to the old target brokers, with Kafka's inverted offline list unless
  ``correct_offline``; for each changed partition, LeaderAndIsr (is_new) to all its replicas and
  StopReplica(delete) to the replicas it lost.
- Controlled shutdown: a BrokerRegistrationChangeRecord that only sets inControlledShutdown
  leaves the broker unfenced, so the broker is a *changed* target broker (MP:122-125 filters
  changedBrokers on registration present, isMigratingZkBroker and not fenced; nothing else):
  batch A sends it and the other target brokers UpdateMetadata with every partition, and batch B
  LeaderAndIsr for every partition it hosts. The reference's §5.3 ("only counts as
  brokersChanged: a UMR with the broker list") contradicts its own §2 table and Kafka's code;
  we follow the code (checked against MigrationPropagator.scala at 3.9). A broker that is not a
  target (``--targets migrating``, a KRaft broker) does give only the broker-list UpdateMetadata.
- An image (a snapshot) sends UpdateMetadata with everything to every target broker, then a
  FULL batch: LeaderAndIsr for every partition to all replicas (and its UpdateMetadata to all
  brokers); never StopReplica.
- Targets: "migrating" is Kafka's filter (isMigratingZkBroker); "all" (the default) treats every
  registered broker as a migrating ZooKeeper broker, since real KRaft logs have none. The batch
  addresses every registered broker; only registered, unfenced targets receive: a request to
  any other is returned as ``Send(dropped=True)`` (Kafka's channel manager drops it).
- Controller id: the KRaft leader of the delta (the last LeaderChange), else
  ``options.controller_id``. Header controller epoch: ``options.zk_controller_epoch``, else the
  KRaft epoch of the delta's last batch. Versions: from ``options.ibp``, else the image's
  metadata.version. ``options.digest`` "none" (sizes only): every body is sized, not encoded
  (builders.shared_body through incremental.py, full_image.py and the batch's sizes_only), so
  the same requests are sent, each knowing its length and holding no bytes.
Deterministic order (beyond Kafka, whose maps are hash maps): the batch keeps first-add order,
so it is fed in canonical order: UpdateMetadata brokers ascending and partitions by (topic,
partition); each broker's first LeaderAndIsr / StopReplica add in ascending broker order, then
partitions by (topic, partition). The content equals what Kafka's call sequence accumulates
(the same states, sets and last-write-wins results), only ordered.
Full image: an UpdateMetadata-only plan with every partition (batch A of a delta with a changed
target broker, and of an image) is not fed to the batch partition by partition at v5+: its body
is assembled from full_image.TopicPieces, the encoded topic states kept across deltas (a memo,
one per process, bounded by the image: see full_image's rules), with the batch's own envelope,
destinations and order; tests/replay/test_full_image.py checks every such body against the
batch-built one.
Hosted partitions: a changed target broker's partitions (batch B) come from hosted.HostedIndex,
which propagate_delta advances with each delta's changes, not from a walk over every partition
(``_hosted_by`` stays as the reference tests/replay/test_hosted.py compares it with).
Partition-level batch: every other plan (batch B of a delta, INCREMENTAL, and of an image, FULL)
is not fed to the batch add by add either: incremental.py builds the same Sends directly (each
state made once, per-broker lists built in the canonical order above, the batch's makers and
builders), and falls back to the batch on anything it does not cover (see its rules);
tests/replay/test_incremental.py checks every such Send against the batch-built one. The
target and channel broker sets are kept for the last brokers mapping (``_targets``: an image's
mapping never changes and apply_delta keeps it while no broker record touches it).
Hot path: a plan's maps are keyed by (topic, partition) tuples (``PartKey``), not
TopicPartition: a tuple is made and hashed in C, a TopicPartition runs attrs' __init__ and
__hash__ (Python) each time; ``_run`` (the batch's path) makes the TopicPartitions it feeds,
in the same (topic, partition) order. ``_delta_plans`` makes the changed topics' LeaderAndIsr
adds with ``_Plan.add_lisr``'s body inlined (the same last-write-wins entry, the same ``umr``
side effect), and a changed target broker's hosted partitions (HostedIndex.hosted_keys: the
keys without TopicPartitions; b is new and the keys unique, so each is a first add). 498k changed partitions in the 1M-record replay; the tuple keys took the
replay of the 100k-record default log with sha256 from 60.471 G to 59.865 G instructions
(cachegrind, deterministic: the machine is shared).
Public: ReplayOptions, Send, propagate_delta, propagate_image (and TARGETS). The partial-image
helpers at the end (_touched_topics, _needs_full_image, _partial_image) state a contract the
tests check; no engine uses them yet. A ClearElrRecord reads its name's topic (image.py's 4.1+
rules), or with an empty name every topic of the image (``_TouchedTopics.every``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal

import attrs

from ctrlbatch.batch import ControllerBrokerRequestBatch, OutboundRequest, UpdateType
from ctrlbatch.batch.versions import update_metadata_version
from ctrlbatch.context import (
    IllegalStateError,
    LeaderAndIsr,
    MetadataVersion,
    ReplicaAssignment,
    TopicPartition,
)

from ..image.deltas import Delta
from ..image.image import (
    BROKER_TYPES,
    BrokerRegistration,
    DeltaChanges,
    MetadataImage,
    MetadataReplayError,
    PartitionRegistration,
    apply_delta,
)
from ..log.records import MetadataRecord
from ..schema.metadata_classes import (
    ClearElrRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from .channel_context import MigrationControllerChannelContext, leadership_of
from .full_image import FIRST_VERSION, TopicPieces, full_image_body
from .hosted import HostedIndex
from .incremental import incremental_sends

__all__ = [
    "TARGETS",
    "ReplayOptions",
    "Send",
    "propagate_delta",
    "propagate_image",
]

TARGETS = ("all", "migrating")
_TARGET_FILTERS: dict[str, Callable[[BrokerRegistration], bool]] = {
    "all": lambda reg: True,
    "migrating": lambda reg: reg.is_migrating_zk_broker,
}


def _check_int(name: str) -> Callable[[Any, Any, Any], None]:
    def check(_self: Any, _attr: Any, value: Any) -> None:
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ValueError(f"{name}: expected an integer, got {value!r}")

    return check


def _check_targets(_self: Any, _attr: Any, value: Any) -> None:
    if value not in TARGETS:
        raise ValueError(f"targets: expected one of {', '.join(TARGETS)}, got {value!r}")


DIGESTS = ("sha256", "none")


def _check_digest(_self: Any, _attr: Any, value: Any) -> None:
    if value not in DIGESTS:
        raise ValueError(f"digest: expected one of {', '.join(DIGESTS)}, got {value!r}")


def _check_ibp(_self: Any, _attr: Any, value: Any) -> None:
    if value is not None and not isinstance(value, MetadataVersion):
        raise ValueError(f"ibp: expected a MetadataVersion or None, got {value!r}")


@attrs.frozen(slots=True)
class ReplayOptions:
    """How to replay: which brokers are ZooKeeper brokers, ids, epochs, versions, quirks."""

    targets: Literal["all", "migrating"] = attrs.field(default="all", validator=_check_targets)
    controller_id: int = attrs.field(default=1, validator=_check_int("controller_id"))
    zk_controller_epoch: int | None = attrs.field(default=None, validator=_check_int("zk_controller_epoch"))
    ibp: MetadataVersion | None = attrs.field(default=None, validator=_check_ibp)
    correct_offline: bool = False
    inter_broker_listener: str = "PLAINTEXT"
    digest: Literal["sha256", "none"] = attrs.field(default="sha256", validator=_check_digest)
    """none: bodies are sized, not encoded (builders.shared_body); rows carry no sha256 or frame."""


@attrs.frozen(slots=True, repr=False)
class Send:
    """One request the batch sent, in send order; dropped when the broker has no channel."""

    broker: int
    request: OutboundRequest
    dropped: bool

    def __repr__(self) -> str:
        flag = " dropped" if self.dropped else ""
        return f"Send(broker={self.broker}, api={self.request.api_key} v{self.request.version}{flag})"


class _Collector:
    """The Transport: every send becomes a Send, dropped unless the broker has a channel."""

    def __init__(self, channel: frozenset[int]) -> None:
        self.channel = channel
        self.sends: list[Send] = []

    def send(self, broker_id: int, request: OutboundRequest, callback: Any) -> None:
        self.sends.append(Send(broker_id, request, broker_id not in self.channel))


# ----------------------------------------------------------------------------- plans


@attrs.define(slots=True)
class _Lisr:
    brokers: set[int]
    found: PartitionRegistration  # the leadership's source: the partition's registration in the image
    reg: PartitionRegistration  # the replica assignment's source (one object, not a new one per add)
    epoch: int  # the image's KRaft epoch: the leadership's controller epoch

    @property
    def info(self) -> Any:
        """The leadership the batch is given (LeaderIsrAndControllerEpoch: MCCC.partitionLeadershipInfo),
        made only when asked: incremental.py reads ``found``'s fields instead (see its rules)."""
        return leadership_of(self.found, self.epoch)


PartKey = tuple[str, int]
"""A partition in a plan: (topic, partition)."""


@attrs.define(slots=True)
class _Plan:
    """One batch's adds, keyed so that Kafka's last-write-wins results are kept; sorted at run."""

    update_type: UpdateType
    umr_brokers: set[int] = attrs.field(factory=set)
    # every partition of the image, from the context (batch A, the image path): sent from
    # full_image's pieces (v5+), or added to the batch like ``umr``'s None entries
    everything: bool = False
    # Keyed by (topic, partition) (a PartKey, not a TopicPartition: module rules, "Hot path").
    # key -> None (state from the context) or an explicit state's keyword arguments
    umr: dict[PartKey, dict[str, Any] | None] = attrs.field(factory=dict)
    lisr: dict[PartKey, _Lisr] = attrs.field(factory=dict)
    stop: dict[PartKey, set[int]] = attrs.field(factory=dict)

    def empty(self) -> bool:
        return not (self.umr_brokers or self.lisr or self.stop)

    def add_lisr(
        self, tp: PartKey, brokers: Iterable[int], found: PartitionRegistration, reg: PartitionRegistration,
        epoch: int,
    ) -> None:
        """The add of tp's leadership (``found``'s, at KRaft ``epoch``) and ``reg``'s assignment."""
        entry = self.lisr.get(tp)
        if entry is None:
            self.lisr[tp] = _Lisr(set(brokers), found, reg, epoch)
        else:
            entry.brokers.update(brokers)
            entry.found, entry.reg, entry.epoch = found, reg, epoch
        self.umr[tp] = None  # the add's side effect (CCM:446)

    def add_stop(self, tp: PartKey, brokers: Iterable[int]) -> None:
        self.stop.setdefault(tp, set()).update(brokers)


def _run(batch: ControllerBrokerRequestBatch, plan: _Plan, header_epoch: int, image: MetadataImage) -> None:
    """Feed the plan to the batch in canonical order, then send."""
    batch.new_batch()
    batch.set_update_type(plan.update_type)
    if plan.umr_brokers:
        batch.add_update_metadata_request_for_brokers(sorted(plan.umr_brokers))
    if plan.everything:
        plan.umr.update(((tp.topic, tp.partition), None) for tp, _ in _all_partitions(image))
    from_context: list[TopicPartition] = []
    for key in sorted(plan.umr):  # by (topic, partition), as the TopicPartitions sort
        explicit = plan.umr[key]
        tp = TopicPartition(*key)
        if explicit is None:
            from_context.append(tp)
            continue
        if from_context:
            batch.add_update_metadata_request_for_brokers((), from_context)
            from_context = []
        batch.add_update_metadata_request_for_brokers_with_state((), tp, **explicit)
    if from_context:
        batch.add_update_metadata_request_for_brokers((), from_context)
    lisr = [(TopicPartition(*key), entry, _assignment(entry.reg)) for key, entry in sorted(plan.lisr.items())]
    first: dict[int, tuple[TopicPartition, _Lisr, ReplicaAssignment]] = {}
    for tp, entry, assignment in lisr:
        for b in entry.brokers:
            first.setdefault(b, (tp, entry, assignment))
    for b in sorted(first):
        tp, entry, assignment = first[b]
        batch.add_leader_and_isr_request_for_brokers((b,), tp, entry.info, assignment, True)
    for tp, entry, assignment in lisr:
        batch.add_leader_and_isr_request_for_brokers(sorted(entry.brokers), tp, entry.info, assignment, True)
    stop = [(TopicPartition(*key), brokers) for key, brokers in sorted(plan.stop.items())]
    first_stop: dict[int, TopicPartition] = {}
    for tp, brokers in stop:
        for b in brokers:
            first_stop.setdefault(b, tp)
    for b in sorted(first_stop):
        batch.add_stop_replica_request_for_brokers((b,), first_stop[b], True)
    for tp, brokers in stop:
        batch.add_stop_replica_request_for_brokers(sorted(brokers), tp, True)
    batch.send_requests_to_brokers(header_epoch)


def _assignment(reg: PartitionRegistration) -> ReplicaAssignment:
    return ReplicaAssignment(reg.replicas, reg.adding_replicas, reg.removing_replicas)


def _all_partitions(image: MetadataImage) -> list[tuple[TopicPartition, PartitionRegistration]]:
    """Every partition of the image by (topic name, partition), named as in the image's name map."""
    out: list[tuple[TopicPartition, PartitionRegistration]] = []
    names = image.topic_ids_by_name
    for name in sorted(names):
        topic = image.topics.get(names[name])
        if topic is not None:
            parts = topic.partitions
            out.extend((TopicPartition(name, p), parts[p]) for p in sorted(parts))
    return out


_HOSTED = HostedIndex()  # a memo (hosted.py's rules): follows the images propagate_delta makes, bounded by the image


def _hosted_by(image: MetadataImage, brokers: set[int]) -> Iterator[tuple[TopicPartition, PartitionRegistration]]:
    """The reference walk HostedIndex.hosted replaces (tests/replay/test_hosted.py compares them).
    The partitions (in _all_partitions' order) with a replica on one of brokers: only those
    get a TopicPartition (a full image has 50,000; a changed broker hosts a few thousand). Each
    topic's partitions are filtered before they are sorted: the few hosted ones are sorted, not
    all of them."""
    names = image.topic_ids_by_name
    topics = image.topics
    disjoint = brokers.isdisjoint
    only = next(iter(brokers)) if len(brokers) == 1 else None  # the usual case: `in` a tuple beats isdisjoint
    for name in sorted(names):
        topic = topics.get(names[name])
        if topic is not None:
            parts = topic.partitions
            if only is not None:
                hosted = [p for p, reg in parts.items() if only in reg.replicas]
            else:
                hosted = [p for p, reg in parts.items() if not disjoint(reg.replicas)]
            if hosted:
                hosted.sort()
                for p in hosted:
                    yield TopicPartition(name, p), parts[p]


def _delta_plans(
    image: MetadataImage, changes: DeltaChanges, options: ReplayOptions, ctx: MigrationControllerChannelContext,
    header_epoch: int,
) -> tuple[_Plan, _Plan]:
    """sendRPCsToBrokersFromMetadataDelta (MP:114-216) as two plans."""
    is_target = _TARGET_FILTERS[options.targets]
    changed_zk = {
        b for b, reg in changes.changed_brokers.items() if reg is not None and is_target(reg) and not reg.fenced
    }
    zk = _targets(image.brokers, options.targets)[0]
    old_zk = zk - changed_zk
    brokers_changed = bool(changes.changed_brokers)

    a = _Plan(UpdateType.UNKNOWN)
    if changed_zk:
        a.umr_brokers |= changed_zk
        a.everything = True
    if brokers_changed:
        a.umr_brokers |= old_zk

    b = _Plan(UpdateType.INCREMENTAL)
    epoch = image.epoch  # the context's: its leadership's controller epoch
    if changed_zk:
        # reg is the image's own: its leadership is partition_leadership_info(tp)'s, without the
        # look-up. b.add_lisr(key, changed_zk.intersection(reg.replicas), reg, reg, epoch), inlined:
        # b is new and the keys are unique, so each is a first add (module rules)
        hosted_lisr, hosted_umr = b.lisr, b.umr
        only = next(iter(changed_zk)) if len(changed_zk) == 1 else None  # hosted: a replica is on it
        for key, reg in _HOSTED.hosted_keys(image, changed_zk):  # MP:145-162 (hosted.py: _hosted_by without the walk)
            hosted_lisr[key] = _Lisr({only} if only is not None else changed_zk.intersection(reg.replicas), reg, reg, epoch)
            hosted_umr[key] = None
    if changes.deleted_topics or changes.changed_topics:
        b.umr_brokers |= old_zk
    registered = image.brokers
    for old in changes.deleted_topics.values():  # MP:170-183
        for p, reg in old.partitions.items():
            key = (old.name, p)
            online = [r for r in reg.replicas if r in registered]  # isReplicaOnline, not negated
            offline = [r for r in reg.replicas if r not in registered] if options.correct_offline else online
            b.add_stop(key, reg.replicas)
            b.umr[key] = {
                "controller_epoch": header_epoch,
                "leader": LeaderAndIsr.LEADER_DURING_DELETE,
                "leader_epoch": LeaderAndIsr.INITIAL_LEADER_EPOCH,
                "partition_epoch": LeaderAndIsr.INITIAL_PARTITION_EPOCH,
                "isr": reg.isr,
                "replicas": reg.replicas,
                "offline_replicas": offline,
            }
    names, topics = image.topic_ids_by_name, image.topics
    lisr, umr = b.lisr, b.umr
    for change in changes.changed_topics.values():  # MP:187-213
        # partition_leadership_info(tp) with the name's topic looked up once, not per partition
        name = change.name
        tid = names.get(name)
        now = None if tid is None else topics.get(tid)
        parts: Mapping[int, PartitionRegistration] = {} if now is None else now.partitions
        previous = change.previous
        for p, reg in change.partitions.items():
            key = (name, p)
            found = parts.get(p)
            if found is not None:  # b.add_lisr(key, reg.replicas, found, reg, epoch), inlined (module rules)
                entry = lisr.get(key)
                if entry is None:
                    lisr[key] = _Lisr(set(reg.replicas), found, reg, epoch)
                else:
                    entry.brokers.update(reg.replicas)
                    entry.found, entry.reg, entry.epoch = found, reg, epoch
                umr[key] = None
            old_reg = previous.get(p)
            if old_reg is not None and old_reg.replicas != reg.replicas:  # equal lists remove nobody
                removed = set(old_reg.replicas).difference(reg.replicas)
                if removed:
                    b.add_stop(key, removed)
    if b.lisr:
        b.umr_brokers.update(ctx.live_or_shutting_down_broker_ids)
    return a, b


def _image_plans(image: MetadataImage, options: ReplayOptions, ctx: MigrationControllerChannelContext) -> tuple[_Plan, _Plan]:
    """sendRPCsToBrokersFromMetadataImage (MP:218-247) as two plans."""
    is_target = _TARGET_FILTERS[options.targets]
    a = _Plan(UpdateType.UNKNOWN, everything=True)
    a.umr_brokers = {b for b, reg in image.brokers.items() if is_target(reg)}
    b = _Plan(UpdateType.FULL)
    for tp, reg in _all_partitions(image):  # reg is the image's: partition_leadership_info(tp)'s source
        b.add_lisr((tp.topic, tp.partition), reg.replicas, reg, reg, image.epoch)
    if b.lisr:
        b.umr_brokers.update(ctx.live_or_shutting_down_broker_ids)
    return a, b


def _send(
    image: MetadataImage, plans: tuple[_Plan, _Plan], ctx: MigrationControllerChannelContext, options: ReplayOptions,
    controller_id: int, header_epoch: int, where: str, pieces: TopicPieces | None, lean: bool = True,
) -> list[Send]:
    """Run the plans; an UpdateMetadata-only plan with every partition is built from ``pieces``
    (full_image.py) at v5+, or through the batch like the others without them; a plan without
    every partition is built by incremental.py (``lean``), or through the batch when it falls
    back or without ``lean``."""
    if all(p.empty() for p in plans):
        return []
    channel = _targets(image.brokers, options.targets)[1]
    transport = _Collector(channel)
    mv = options.ibp or image.metadata_version
    batch: ControllerBrokerRequestBatch | None = None  # made when a plan needs it
    sizes_only = options.digest == "none"
    try:
        for plan in plans:
            if plan.empty():
                continue
            if plan.everything and not (plan.umr or plan.lisr or plan.stop):
                version = update_metadata_version(mv)
                if version >= FIRST_VERSION and pieces is not None:
                    _send_full_image(transport, image, plan, ctx, version, controller_id, header_epoch, pieces, sizes_only)
                    continue
            if lean:
                sends = incremental_sends(
                    plan, ctx, mv, controller_id=controller_id, header_epoch=header_epoch,
                    listener=options.inter_broker_listener, sizes_only=sizes_only,
                )
                if sends is not None:
                    transport.sends.extend([Send(broker, request, broker not in channel) for broker, request in sends])
                    continue
            if batch is None:
                batch = ControllerBrokerRequestBatch(
                    controller_id, ctx, mv, transport,
                    kraft_controller=True, inter_broker_listener_name=options.inter_broker_listener,
                    sizes_only=sizes_only,
                )
            _run(batch, plan, header_epoch, image)
    except IllegalStateError as e:
        raise MetadataReplayError(None, f"{where}: the batch failed: {e}") from e
    return transport.sends


_targets_kept: list[tuple[Mapping[int, BrokerRegistration], str, tuple[frozenset[int], frozenset[int]]]] = []


def _targets(brokers: Mapping[int, BrokerRegistration], targets: str) -> tuple[frozenset[int], frozenset[int]]:
    """The target brokers and those with a channel (registered, unfenced targets), kept for
    the last brokers mapping: apply_delta keeps the mapping object while no broker record
    changes it, and an image never changes, so the same object gives the same sets (small
    deltas: 100 filter calls each saved)."""
    kept = _targets_kept[0] if _targets_kept else None
    if kept is not None and kept[0] is brokers and kept[1] == targets:
        return kept[2]
    is_target = _TARGET_FILTERS[targets]
    zk = frozenset(b for b, reg in brokers.items() if is_target(reg))
    sets = zk, frozenset(b for b in zk if not brokers[b].fenced)
    _targets_kept[:] = [(brokers, targets, sets)]
    return sets


def _send_full_image(
    transport: _Collector, image: MetadataImage, plan: _Plan, ctx: MigrationControllerChannelContext, version: int,
    controller_id: int, header_epoch: int, pieces: TopicPieces, sizes_only: bool = False,
) -> None:
    """What the batch sends for an UpdateMetadata-only plan with every partition (CCM:572-620: to
    each of its brokers that is live, in add order, one shared body), the body from the pieces."""
    live = ctx.live_or_shutting_down_broker_ids
    destinations = [b for b in sorted(plan.umr_brokers) if b in live]
    if not destinations:
        return
    epochs = ctx.live_broker_id_and_epochs
    full = full_image_body(
        pieces, image, version=version, controller_id=controller_id, header_epoch=header_epoch,
        update_type=plan.update_type, first_broker_epoch=epochs[destinations[0]],
        live=list(ctx.live_or_shutting_down_brokers), sizes_only=sizes_only,
    )
    for broker in destinations:
        transport.send(broker, OutboundRequest(full.builder, epochs[broker], full.body), None)


_PIECES = TopicPieces()  # a memo (full_image's rules): bounded by the image, same bytes without it


def _controller(leader_id: int | None, options: ReplayOptions) -> int:
    return leader_id if leader_id is not None and leader_id >= 0 else options.controller_id


def _propagate_changes(
    image: MetadataImage, changes: DeltaChanges, options: ReplayOptions, *, controller_id: int, header_epoch: int,
    pieces: TopicPieces | None = _PIECES, lean: bool = True,
) -> list[Send]:
    """The sends for a delta already applied: ``image`` is the image after it. ``pieces=None``
    and ``lean=False`` take the batch path for every plan (the tests' reference)."""
    if not changes.touched:
        return []
    ctx = MigrationControllerChannelContext(image)
    plans = _delta_plans(image, changes, options, ctx, header_epoch)
    where = f"delta at offset {image.offset}"
    return _send(image, plans, ctx, options, controller_id, header_epoch, where, pieces, lean)


def propagate_delta(prev: MetadataImage, delta: Delta, options: ReplayOptions) -> tuple[MetadataImage, list[Send]]:
    """Apply ``delta`` to ``prev``; return the new image and the requests, in send order."""
    if not isinstance(options, ReplayOptions):
        raise TypeError(f"options: expected ReplayOptions, got {type(options).__name__}")
    image, changes = apply_delta(prev, delta.records, offset=delta.last_offset, epoch=delta.epoch)
    _HOSTED.advance(prev.topics, image.topics, changes)
    header_epoch = delta.epoch if options.zk_controller_epoch is None else options.zk_controller_epoch
    sends = _propagate_changes(
        image, changes, options, controller_id=_controller(delta.leader_id, options), header_epoch=header_epoch
    )
    return image, sends


def propagate_image(
    image: MetadataImage,
    options: ReplayOptions,
    *,
    offset: int | None = None,
    timestamp: int | None = None,
    epoch: int | None = None,
    leader_id: int | None = None,
) -> list[Send]:
    """The snapshot path: the requests for a whole image. ``offset`` and ``epoch`` (default: the
    image's) are its provenance: the epoch is the partition states' controller epoch and, unless
    zk_controller_epoch, the header's; ``timestamp`` is accepted for symmetry with Delta."""
    if not isinstance(options, ReplayOptions):
        raise TypeError(f"options: expected ReplayOptions, got {type(options).__name__}")
    del timestamp
    image = attrs.evolve(
        image, offset=image.offset if offset is None else offset, epoch=image.epoch if epoch is None else epoch
    )
    return _image_sends(image, options, leader_id)


def _image_sends(
    image: MetadataImage, options: ReplayOptions, leader_id: int | None, pieces: TopicPieces | None = _PIECES,
    lean: bool = True,
) -> list[Send]:
    header_epoch = image.epoch if options.zk_controller_epoch is None else options.zk_controller_epoch
    ctx = MigrationControllerChannelContext(image)
    plans = _image_plans(image, options, ctx)
    where = f"image at offset {image.offset}"
    return _send(image, plans, ctx, options, _controller(leader_id, options), header_epoch, where, pieces, lean)


# ----------------------------------------------------------------------------- partial images


@attrs.frozen(slots=True)
class _TouchedTopics:
    """The topics a delta's propagation reads: a partial image must hold every topic of the
    previous image whose id is in ``ids`` or whose name is in ``names``."""

    ids: frozenset[uuid.UUID]
    names: frozenset[str]
    every: bool = False  # a ClearElrRecord with an empty name reads every topic of the image


def _touched_topics(records: Iterable[MetadataRecord], image: MetadataImage | None = None) -> _TouchedTopics:
    """The ids and names a delta's records touch. With the previous image, also the names of
    the touched ids and the ids now holding those names (a deleted or re-created name)."""
    ids: set[uuid.UUID] = set()
    names: set[str] = set()
    every = False
    for r in records:
        d = r.data
        if isinstance(d, TopicRecord):
            ids.add(d.topic_id)
            names.add(d.name)
        elif isinstance(d, (PartitionRecord, PartitionChangeRecord, RemoveTopicRecord)):
            ids.add(d.topic_id)
        elif isinstance(d, ClearElrRecord):  # a name is looked up in the image; empty: all its topics
            if d.topic_name:
                names.add(d.topic_name)
            else:
                every = True
    if image is not None and every:
        ids.update(image.topics)
    if image is not None:
        for tid in list(ids):
            topic = image.topics.get(tid)
            if topic is not None:
                names.add(topic.name)
        for name in names:
            holder = image.topic_ids_by_name.get(name)
            if holder is not None:
                ids.add(holder)
    return _TouchedTopics(frozenset(ids), frozenset(names), every)


def _needs_full_image(image: MetadataImage, records: Iterable[MetadataRecord], options: ReplayOptions) -> bool:
    """Whether propagating these records reads every partition of the image: when a target
    broker ends the delta registered, unfenced and changed (batch A's UpdateMetadata with
    everything, and LeaderAndIsr for all it hosts). ``image`` needs only its brokers."""
    broker_records = [r for r in records if r.type in BROKER_TYPES]
    if not broker_records:
        return False
    brokers_only = attrs.evolve(image, topics={}, topic_ids_by_name={})
    _, changes = apply_delta(brokers_only, broker_records)
    is_target = _TARGET_FILTERS[options.targets]
    return any(reg is not None and is_target(reg) and not reg.fenced for reg in changes.changed_brokers.values())


def _partial_image(image: MetadataImage, records: Iterable[MetadataRecord]) -> MetadataImage:
    """The smallest image propagate_delta needs for these records when _needs_full_image is false."""
    records = list(records)
    return image.with_topics(_touched_topics(records, image).ids)
