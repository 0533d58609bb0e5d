"""The net effect of a run of metadata deltas on the image, without the image: what the Spark
plan's range tasks compute in parallel, and the driver composes in log order.

Rules of this module (image.py is the semantics; this module only re-orders its work):
- ``NetBuilder.add(delta)`` replays one delta's records the way ``image._Delta`` does, but over an
  unknown base: what the range itself set is known (a broker's registration, a topic created in
  the range with all its partitions, a partition's PartitionRecord and the changes merged on it
  with ``PartitionRegistration.merge``); what depends on the base is kept as a composed change
  (``PartitionChange``: field-wise last-wins plus how many times the leader and partition
  epochs moved; ``BrokerPatch``: the fencing, shutdown, directory and cordoned-directory
  changes, with the broker epoch they require). Its size is bounded by the keys the image holds, not by the records.
- ``NetEffect.apply(image)`` is the image after the range's deltas, exactly as folding them one by
  one with ``apply_delta`` gives it, dict order included (copy on write: the base is not mutated):
  a key the range removed loses its place, a key the range added (or re-added after removing it)
  goes to the end in the order the fold appends it; every other key keeps its place.
- The one implementation of that is ``compose(packed net, packed image)`` on plain values
  (``NetEffect.pack``, packed_image): the Spark driver composes one image per unit with it, and
  building an object per partition there cost 4x the time (1M records, 16 units: 12.6 s of CPU
  with objects and attrs pickles, 2.9 s packed). ``apply`` packs, composes and unpacks, so the
  property tests of ``apply`` test ``compose``; ``PartitionChange.apply`` is ``changed_values``.
- Whatever a fold would refuse, and whatever this module does not compose, raises
  ``NotComposable`` (while building, or while applying, when it depends on the base). The caller
  (spark/plan.py) then plans the run serially, as before, which raises Kafka's error exactly.
  Not composed: the record types of ``SERIAL_TYPES``, each with its reason (ClearElrRecord: its
  topics and partitions depend on the base: every topic, or a name looked up in it; the run is
  planned serially and the summary's ``planned`` says "serial: ... (CLEAR_ELR_RECORD) is not
  composed"), a TopicRecord for a live
  topic id or a live name, a topic touched again in the delta that removes it, a topic removed or
  re-created after being touched in the same delta.
- One record-semantics table: every record type the image replays (``image.REPLAYED_TYPES``,
  its dispatch table) is in exactly one of ``NET_STEPS`` (composed) and ``SERIAL_TYPES`` (planned
  serially, on purpose); the module refuses to load otherwise (``semantics_mismatch``), so a
  record type the image learns cannot silently make every Spark run plan serially
  (tests/replay/test_record_semantics.py).
- The builder keeps one list per partition (``_Acc``: ``PART_FIELDS`` order and whether the
  range set it) and changes it in place: a PartitionChangeRecord costs a lookup of its topic in
  the delta and of its partition, and builds no object (``PartitionRegistration.merge`` and
  ``PartitionChange.then`` built one per record); a delta's first touch of a topic the range
  knows works on the range's own parts dict, which needs no undoing, since a delta that fails
  raises NotComposable and the builder is dropped with it. ``packed()`` is ``effect().pack()``
  built from the lists. Measured (1M-record generated log, its 8 ranges, one process): the
  builder's add and pack 1.6 -> 1.0 s of CPU beyond the reading and grouping (2.0 s); a range
  of 64k PartitionChangeRecords 0.132 -> 0.066 s.
- ``topic_ids_by_name`` is derived from the topics: with the cases above excluded, every delta
  keeps "each live topic's name maps to it, in topic order" true (deletions pop the deleted
  topic's name, a created topic appends its free name, a changed topic's name already maps to
  it), and the empty image starts it true.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from types import MappingProxyType
from typing import Any, NamedTuple

import attrs

from ctrlbatch.context import MetadataVersion

from ..log import records as rec
from .image import (
    FENCING_CHANGE,
    IGNORED_TYPES,
    METADATA_VERSION_FEATURE,
    NO_LEADER_CHANGE,
    NO_RECOVERY_STATE_CHANGE,
    RECOVERY_STATES,
    REPLAYED_TYPES,
    SHUTDOWN_CHANGE,
    TRANSACTION_TYPES,
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    metadata_version_for_level,
)
from .packed_image import PART_FIELDS, PackedImage, PackedPartition, pack_image, part_values, unpack_image

__all__ = [
    "NET_STEPS", "SERIAL_TYPES", "BrokerPatch", "NetBuilder", "NetEffect", "NotComposable", "PackedNet", "PartitionChange",
    "compose", "not_composed", "semantics_mismatch",
]


class NotComposable(Exception):
    """The range's effect is not composed here (or a fold would refuse it): plan serially."""


@attrs.frozen(slots=True)
class PartitionChange:
    """PartitionChangeRecords merged into one, to be merged on a base partition later."""

    replicas: tuple[int, ...] | None = None
    isr: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    leader: int | None = None  # the last leader set (not NO_LEADER_CHANGE), None: unchanged
    leader_bumps: int = 0  # records that set a leader: each bumps the leader epoch
    leader_recovery_state: int | None = None
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    count: int = 0  # records: each bumps the partition epoch

    def then(self, d: Any) -> PartitionChange:
        """This change followed by PartitionChangeRecord d (absent fields keep ours)."""
        lrs = d.leader_recovery_state
        elr = getattr(d, "eligible_leader_replicas", None)
        last_known_elr = getattr(d, "last_known_elr", None)
        set_leader = d.leader != NO_LEADER_CHANGE
        return PartitionChange(
            self.replicas if d.replicas is None else tuple(d.replicas),
            self.isr if d.isr is None else tuple(d.isr),
            self.removing_replicas if d.removing_replicas is None else tuple(d.removing_replicas),
            self.adding_replicas if d.adding_replicas is None else tuple(d.adding_replicas),
            d.leader if set_leader else self.leader,
            self.leader_bumps + set_leader,
            self.leader_recovery_state if lrs == NO_RECOVERY_STATE_CHANGE else lrs,
            self.elr if elr is None else tuple(elr),
            self.last_known_elr if last_known_elr is None else tuple(last_known_elr),
            self.count + 1,
        )

    def apply(self, base: PartitionRegistration) -> PartitionRegistration:
        """``base.merge`` of each record in turn, in one step (``changed_values`` on packed values)."""
        return PartitionRegistration(*changed_values(change_values(self), part_values(base)))


change_values: Any = operator.attrgetter(*(f.name for f in attrs.fields(PartitionChange)))


def changed_values(change: tuple[Any, ...], base: PackedPartition) -> PackedPartition:
    """A packed PartitionChange merged on a packed partition (``PART_FIELDS`` order, checked below)."""
    replicas, isr, removing, adding, leader, bumps, recovery, elr, last_known_elr, count = change
    return (
        base[0] if replicas is None else replicas,
        base[1] if isr is None else isr,
        base[2] if removing is None else removing,
        base[3] if adding is None else adding,
        base[4] if leader is None else leader,
        base[5] if recovery is None else recovery,
        base[6] + bumps,
        base[7] + count,
        base[8] if elr is None else elr,
        base[9] if last_known_elr is None else last_known_elr,
    )


if PART_FIELDS != ("replicas", "isr", "removing_replicas", "adding_replicas", "leader", "leader_recovery_state",
                   "leader_epoch", "partition_epoch", "elr", "last_known_elr"):
    raise RuntimeError("net_effect.changed_values: PartitionRegistration's fields changed; update it")


NO_CHANGE = PartitionChange()


@attrs.frozen(slots=True)
class BrokerPatch:
    """Fence, unfence and registration changes of a broker registered before the range: they
    need its registration epoch to be ``epoch``; None keeps the base's value."""

    epoch: int
    fenced: bool | None = None
    in_controlled_shutdown: bool | None = None
    directories: tuple[uuid.UUID, ...] | None = None
    cordoned_log_dirs: tuple[uuid.UUID, ...] | None = None  # None: unchanged (BrokerRegistrationChangeRecord v3)

    def apply(self, base: BrokerRegistration) -> BrokerRegistration:
        if base.epoch != self.epoch:
            raise NotComposable(f"broker {base.id}: epoch {self.epoch} expected, the image has {base.epoch}")
        return attrs.evolve(
            base,
            fenced=base.fenced if self.fenced is None else self.fenced,
            in_controlled_shutdown=(
                base.in_controlled_shutdown if self.in_controlled_shutdown is None else self.in_controlled_shutdown
            ),
            directories=base.directories if self.directories is None else self.directories,
            cordoned_log_dirs=base.cordoned_log_dirs if self.cordoned_log_dirs is None else self.cordoned_log_dirs,
        )


_Part = PartitionRegistration | PartitionChange
_Broker = BrokerRegistration | BrokerPatch | None

# A partition as the builder accumulates it (module rules: one list per partition, changed in
# place): PART_FIELDS order, then whether it is set (a PartitionRecord in the range: the fields
# are values) or a change of a base partition (None: unchanged; leader_epoch and
# partition_epoch count the records that bump them, as PartitionChange's leader_bumps and count).
_Acc = list[Any]
_SET = 10  # the flag's place
_LEADER, _RECOVERY, _LEADER_EPOCH, _PARTITION_EPOCH = 4, 5, 6, 7


def _set_acc(d: Any) -> _Acc:
    """A PartitionRecord's accumulator: PartitionRegistration.from_record's values."""
    return [*part_values(PartitionRegistration.from_record(d)), True]


def _change_acc() -> _Acc:
    return [None, None, None, None, None, None, 0, 0, None, None, False]


def _merge_into(a: _Acc, d: Any) -> None:
    """PartitionChangeRecord d merged into accumulator a in place: ``PartitionRegistration.merge``
    on a set partition, ``PartitionChange.then`` on a change (the same steps on either layout)."""
    v = d.replicas
    if v is not None:
        a[0] = tuple(v)
    v = d.isr
    if v is not None:
        a[1] = tuple(v)
    v = d.removing_replicas
    if v is not None:
        a[2] = tuple(v)
    v = d.adding_replicas
    if v is not None:
        a[3] = tuple(v)
    v = d.leader
    if v != NO_LEADER_CHANGE:
        a[_LEADER] = v
        a[_LEADER_EPOCH] += 1
    v = d.leader_recovery_state
    if v != NO_RECOVERY_STATE_CHANGE:
        a[_RECOVERY] = v
    a[_PARTITION_EPOCH] += 1
    v = getattr(d, "eligible_leader_replicas", None)
    if v is not None:
        a[8] = tuple(v)
    v = getattr(d, "last_known_elr", None)
    if v is not None:
        a[9] = tuple(v)


def _part(a: _Acc) -> _Part:
    """The accumulator as the NetEffect holds it."""
    if a[_SET]:
        return PartitionRegistration(*a[:_SET])
    return PartitionChange(a[0], a[1], a[2], a[3], a[4], a[6], a[5], a[8], a[9], a[7])


def _change_tuple(a: _Acc) -> tuple[Any, ...]:
    """A change accumulator as ``change_values`` gives its PartitionChange."""
    return (a[0], a[1], a[2], a[3], a[4], a[6], a[5], a[8], a[9], a[7])


class _Topic:
    """A topic as the range knows it: ``created`` (in the range, after its last removal: parts
    are all its partitions and name is known) or a topic of the base (parts: what changed)."""

    __slots__ = ("created", "name", "parts")

    def __init__(self, created: bool, name: str | None, parts: dict[int, _Acc]) -> None:
        self.created, self.name, self.parts = created, name, parts


_UNKNOWN: Any = object()  # a key the range has not touched


@attrs.frozen(slots=True)
class NetEffect:
    """The net effect of a run of deltas (see the module rules). ``deltas`` 0: it changes nothing."""

    deltas: int
    offset: int
    epoch: int
    metadata_version: MetadataVersion | None
    brokers: Mapping[int, _Broker]  # None: unregistered
    broker_popped: frozenset[int]  # unregistered at some point: the broker lost its place
    broker_since: Mapping[int, int]  # when an added broker took its place at the end
    topics: Mapping[uuid.UUID, tuple[bool, str | None, Mapping[int, _Part]] | None]  # None: removed
    topic_since: Mapping[uuid.UUID, int]  # when a created topic took its place at the end
    base_removed: Mapping[uuid.UUID, int]  # base topics the range removed, and when
    absent_required: frozenset[uuid.UUID]  # topic ids created while unknown: not in the base
    names_required: Mapping[str, int]  # names created while unknown: a base topic holding one was removed before

    def apply(self, image: MetadataImage) -> MetadataImage:
        """The image after the range's deltas (module rules); NotComposable if the base does not fit.
        The one implementation is ``compose`` on packed values: this packs, composes, unpacks."""
        if self.deltas == 0:
            return image
        return unpack_image(compose(self.pack(), pack_image(image)))

    def pack(self) -> PackedNet:
        """The net effect as plain values (what a range task hands the driver; module rules)."""
        topics: dict[uuid.UUID, PackedTopic | None] = {}
        for tid, t in self.topics.items():
            if t is None:
                topics[tid] = None
                continue
            created, name, parts = t
            sets = {p: part_values(v) for p, v in parts.items() if isinstance(v, PartitionRegistration)}
            changed = {p: change_values(v) for p, v in parts.items() if isinstance(v, PartitionChange)}
            topics[tid] = (created, name, sets, changed)
        return PackedNet(self.deltas, self.offset, self.epoch, self.metadata_version, dict(self.brokers),
                         self.broker_popped, dict(self.broker_since), topics, dict(self.topic_since),
                         dict(self.base_removed), self.absent_required, dict(self.names_required))


PackedTopic = tuple[bool, str | None, dict[int, PackedPartition], dict[int, tuple[Any, ...]]]


class PackedNet(NamedTuple):
    """A NetEffect as plain values: a topic's parts split into partitions set (PartitionRecord,
    or a change merged on one the range knows: ``part_values``) and changes of base partitions
    (``change_values``). Only set partitions can be new to a topic, so the split keeps the order
    a fold appends them in."""

    deltas: int
    offset: int
    epoch: int
    metadata_version: MetadataVersion | None
    brokers: dict[int, _Broker]
    broker_popped: frozenset[int]
    broker_since: dict[int, int]
    topics: dict[uuid.UUID, PackedTopic | None]
    topic_since: dict[uuid.UUID, int]
    base_removed: dict[uuid.UUID, int]
    absent_required: frozenset[uuid.UUID]
    names_required: dict[str, int]


def compose(net: PackedNet, image: PackedImage) -> PackedImage:
    """The image after the range's deltas, on packed values (module rules): what is not
    touched is shared with ``image``, a changed topic gets a new partitions dict."""
    if net.deltas == 0:
        return image
    brokers = _brokers(net, image.brokers) if net.brokers else image.brokers
    topics, names = image.topics, image.topic_ids_by_name
    if net.topics:
        topics = _topics(net, image)
        names = {t[0]: tid for tid, t in topics.items()}
    return PackedImage(image.part_fields, brokers, topics, names, net.metadata_version or image.metadata_version,
                       net.offset, net.epoch)


def _brokers(net: PackedNet, base: Mapping[int, BrokerRegistration]) -> dict[int, BrokerRegistration]:
    values, popped = net.brokers, net.broker_popped
    out: dict[int, BrokerRegistration] = {}
    for bid, reg in base.items():
        v = values.get(bid, _UNKNOWN)
        if v is _UNKNOWN:
            out[bid] = reg
        elif bid not in popped:
            out[bid] = v.apply(reg) if isinstance(v, BrokerPatch) else v
    added = sorted((net.broker_since[b], b) for b, v in values.items() if v is not None and (b in popped or b not in base))
    for _, bid in added:
        v = values[bid]
        if not isinstance(v, BrokerRegistration):
            raise NotComposable(f"broker {bid} is changed but not registered")
        out[bid] = v
    return out


def _topics(net: PackedNet, image: PackedImage) -> dict[uuid.UUID, tuple[str, dict[int, PackedPartition]]]:
    base = image.topics
    for tid in net.absent_required:
        if tid in base:
            raise NotComposable(f"TopicRecord for topic id {tid}, which the image has")
    for name, when in net.names_required.items():
        holder = image.topic_ids_by_name.get(name)
        if holder is not None and net.base_removed.get(holder, when) >= when:
            raise NotComposable(f"TopicRecord for the name {name!r}, which a live topic holds")
    for tid in net.base_removed:
        if tid not in base:
            raise NotComposable(f"RemoveTopicRecord for topic id {tid}, which the image lacks")
    out: dict[uuid.UUID, tuple[str, dict[int, PackedPartition]]] = {}
    known = net.topics
    for tid, topic in base.items():
        t = known.get(tid, _UNKNOWN)
        if t is _UNKNOWN:
            out[tid] = topic
        elif t is not None and not t[0]:
            name, parts = topic
            merged = dict(parts)
            merged.update(t[2])  # set partitions: a new one goes to the end, as the fold appends it
            for p, change in t[3].items():
                old = parts.get(p)
                if old is None:
                    raise NotComposable(f"PartitionChangeRecord for partition {p} of {tid}, which the image lacks")
                merged[p] = changed_values(change, old)
            out[tid] = (name, merged)
    for tid, t in known.items():
        if t is not None and not t[0] and tid not in base:
            raise NotComposable(f"records for topic id {tid}, which the image lacks")
    for _, tid in sorted((when, tid) for tid, when in net.topic_since.items()):
        t = known[tid]
        assert t is not None and t[1] is not None and not t[3]  # created: all its partitions are known
        out[tid] = (t[1], t[2])
    return out


# A topic the delta touches: created by it, its name, its parts, whether a partition missing from
# them is in neither the image nor the delta (a topic the range or the delta created).
_TopicEntry = tuple[bool, str | None, dict[int, _Acc], bool]


class _DeltaNet:
    """One delta's pending changes, over what the range knows (mirrors image._Delta)."""

    __slots__ = ("brokers", "metadata_version", "net", "removed", "topics")

    def __init__(self, net: NetBuilder) -> None:
        self.net = net
        self.brokers: dict[int, _Broker] = {}
        self.topics: dict[uuid.UUID, _TopicEntry] = {}
        self.removed: dict[uuid.UUID, None] = {}
        self.metadata_version: MetadataVersion | None = None

    # -- brokers

    def _patch(self, broker_id: int, epoch: int) -> BrokerRegistration | BrokerPatch:
        current = self.brokers[broker_id] if broker_id in self.brokers else self.net.brokers.get(broker_id, _UNKNOWN)
        if current is _UNKNOWN:
            return BrokerPatch(epoch)
        if current is None:
            raise NotComposable(f"broker {broker_id} is not registered")
        if current.epoch != epoch:
            raise NotComposable(f"broker {broker_id}: epoch {epoch} does not match {current.epoch}")
        return current

    def register(self, d: Any) -> None:
        reg = BrokerRegistration.from_record(d)
        self.brokers[reg.id] = reg

    def unregister(self, d: Any) -> None:
        self.brokers[d.broker_id] = None

    def fence(self, d: Any, fenced: bool) -> None:
        self.brokers[d.id] = attrs.evolve(self._patch(d.id, d.epoch), fenced=fenced)

    def change(self, d: Any) -> None:
        current = self._patch(d.broker_id, d.broker_epoch)
        if d.fenced not in FENCING_CHANGE or d.in_controlled_shutdown not in SHUTDOWN_CHANGE:
            raise NotComposable("unknown fencing or shutdown change")
        fenced, shutdown = FENCING_CHANGE[d.fenced], SHUTDOWN_CHANGE[d.in_controlled_shutdown]
        dirs = tuple(sorted(d.log_dirs)) if d.log_dirs else None
        cordoned = d.cordoned_log_dirs  # None: no change (image._Delta.change_broker)
        if isinstance(current, BrokerPatch):
            self.brokers[d.broker_id] = BrokerPatch(
                current.epoch,
                current.fenced if fenced is None else fenced,
                current.in_controlled_shutdown if shutdown is None else shutdown,
                current.directories if dirs is None else dirs,
                current.cordoned_log_dirs if cordoned is None else cordoned,
            )
            return
        self.brokers[d.broker_id] = attrs.evolve(
            current,
            fenced=current.fenced if fenced is None else fenced,
            in_controlled_shutdown=current.in_controlled_shutdown if shutdown is None else shutdown,
            directories=current.directories if dirs is None else dirs,
            cordoned_log_dirs=current.cordoned_log_dirs if cordoned is None else cordoned,
        )

    # -- topics

    def _touchable(self, tid: uuid.UUID) -> None:
        if self.removed and tid in self.removed:
            raise NotComposable(f"topic id {tid} is touched in the delta that removes it")

    def _entry(self, tid: uuid.UUID, known: Any) -> _TopicEntry:
        """The delta's entry of a topic it touches first (``known``: the range's, None: removed).
        A topic of the range is changed in place (module rules: its own parts dict)."""
        entry = (False, None, {}, False) if known is _UNKNOWN else (False, None, known.parts, known.created)
        self.topics[tid] = entry
        return entry

    def _changed_topic(self, tid: uuid.UUID) -> dict[int, _Acc]:
        self._touchable(tid)
        entry = self.topics.get(tid)
        if entry is None:
            known = self.net.topics.get(tid, _UNKNOWN)
            if known is None:
                raise NotComposable(f"no topic with id {tid}")
            entry = self._entry(tid, known)
        return entry[2]

    def topic(self, d: Any) -> None:
        tid = d.topic_id
        self._touchable(tid)
        if tid in self.topics or self.net.topics.get(tid) is not None:
            raise NotComposable(f"TopicRecord for topic id {tid}, which is live")
        self.topics[tid] = (True, d.name, {}, True)

    def partition(self, d: Any) -> None:
        if d.leader_recovery_state not in RECOVERY_STATES:
            raise NotComposable("unknown leaderRecoveryState")
        self._changed_topic(d.topic_id)[d.partition_id] = _set_acc(d)

    def partition_change(self, d: Any) -> None:
        """The hot path (445k of 550k records per 1M generated records): the topic id hashed once
        per record once the delta has touched its topic, the partition changed in place."""
        tid, p = d.topic_id, d.partition_id
        if self.removed and tid in self.removed:
            raise NotComposable(f"topic id {tid} is touched in the delta that removes it")
        entry = self.topics.get(tid)
        if entry is None:
            known = self.net.topics.get(tid, _UNKNOWN)
            if known is None:
                raise NotComposable(f"partition {p} of topic id {tid} is in neither the image nor this delta")
            entry = self._entry(tid, known)
        parts = entry[2]
        acc = parts.get(p)
        if acc is None:
            if entry[3]:  # the range (or this delta) created the topic: it knows every partition
                raise NotComposable(f"partition {p} of topic id {tid} is in neither the image nor this delta")
            acc = parts[p] = _change_acc()
        lrs = d.leader_recovery_state
        if lrs != NO_RECOVERY_STATE_CHANGE and lrs not in RECOVERY_STATES:
            raise NotComposable("unknown leaderRecoveryState")
        _merge_into(acc, d)

    def remove_topic(self, d: Any) -> None:
        tid = d.topic_id
        self._touchable(tid)
        if tid in self.topics:
            raise NotComposable(f"topic id {tid} is removed in the delta that touched it")
        if self.net.topics.get(tid, _UNKNOWN) is None:
            raise NotComposable(f"Unable to delete topic with id {tid}: no such topic found.")
        self.removed[tid] = None

    def feature_level(self, d: Any) -> None:
        if d.name == METADATA_VERSION_FEATURE:
            mv = metadata_version_for_level(d.feature_level)
            if mv is None:
                raise NotComposable(f"unknown metadata.version feature level {d.feature_level}")
            self.metadata_version = mv

    def replay(self, records: Iterable[Any]) -> None:
        steps, passed_over = NET_STEPS, PASSED_OVER
        for record in records:
            t = record.type
            step = _partition_change if t == rec.PARTITION_CHANGE_RECORD else steps.get(t)
            if step is not None:
                try:
                    step(self, record.data)
                except (AttributeError, TypeError, ValueError) as e:
                    raise NotComposable(f"malformed record data: {e}") from e
            elif t not in passed_over:
                raise NotComposable(not_composed(t))


def not_composed(record_type: int) -> str:
    """The NotComposable message of a record type this module does not compose (SERIAL_TYPES)."""
    return f"record type {record_type} ({rec.RECORD_TYPE_NAMES.get(record_type, '?')}) is not composed"


_partition_change = _DeltaNet.partition_change


def _nothing(delta: _DeltaNet, d: object) -> None:
    pass


# How each record type the image replays is composed here (the image's own table is
# image.REPLAYED_TYPES; semantics_mismatch checks the two agree when this module loads).
NET_STEPS: Mapping[int, Callable[[_DeltaNet, Any], None]] = MappingProxyType({
    rec.REGISTER_BROKER_RECORD: _DeltaNet.register,
    rec.UNREGISTER_BROKER_RECORD: _DeltaNet.unregister,
    rec.FENCE_BROKER_RECORD: lambda s, d: s.fence(d, True),
    rec.UNFENCE_BROKER_RECORD: lambda s, d: s.fence(d, False),
    rec.BROKER_REGISTRATION_CHANGE_RECORD: _DeltaNet.change,
    rec.TOPIC_RECORD: _DeltaNet.topic,
    rec.PARTITION_RECORD: _DeltaNet.partition,
    rec.PARTITION_CHANGE_RECORD: _DeltaNet.partition_change,
    rec.REMOVE_TOPIC_RECORD: _DeltaNet.remove_topic,
    rec.FEATURE_LEVEL_RECORD: _DeltaNet.feature_level,
    rec.REGISTER_CONTROLLER_RECORD: _nothing,  # no effect on what these requests read
    rec.UNREGISTER_CONTROLLER_RECORD: _nothing,
})
# Record types the image replays and this module does not compose, on purpose, and why: a range
# holding one is planned serially, and the summary's "planned" line says "serial: ... is not composed".
SERIAL_TYPES: Mapping[int, str] = MappingProxyType({
    rec.CLEAR_ELR_RECORD: "its topics and partitions depend on the base: every topic, or a name looked up in it",
})
PASSED_OVER = IGNORED_TYPES | TRANSACTION_TYPES  # replayed by Kafka into areas these requests never read


def semantics_mismatch(replayed: AbstractSet[int], composed: AbstractSet[int], serial: AbstractSet[int],
                       passed_over: AbstractSet[int]) -> list[str]:
    """Where the image's table (``replayed``) and this module's (``composed`` and ``serial``)
    disagree, one line per record type; empty when every replayed type is exactly one of the two."""
    problems = []
    for t in sorted(replayed | composed | serial):
        name = f"{rec.RECORD_TYPE_NAMES.get(t, '?')} ({t})"
        if t in composed and t in serial:
            problems.append(f"{name}: both composed and planned serially")
        elif t not in replayed:
            kind = "composed by net_effect" if t in composed else "planned serially by net_effect"
            problems.append(f"{name}: {kind}, not replayed by the image"
                            + (" (passed over)" if t in passed_over else ""))
        elif t not in composed and t not in serial:
            problems.append(f"{name}: replayed by the image, neither composed by net_effect nor planned serially")
    return problems


_MISMATCH = semantics_mismatch(REPLAYED_TYPES, NET_STEPS.keys(), SERIAL_TYPES.keys(), PASSED_OVER)
if _MISMATCH:
    raise RuntimeError("net_effect: the record-semantics tables disagree: " + "; ".join(_MISMATCH))


class NetBuilder:
    """Folds deltas (``add``) into what the range knows; ``effect()`` freezes it."""

    def __init__(self) -> None:
        self.time = 0
        self.deltas = 0
        self.offset = self.epoch = -1
        self.metadata_version: MetadataVersion | None = None
        self.brokers: dict[int, _Broker] = {}
        self.broker_popped: set[int] = set()
        self.broker_since: dict[int, int] = {}
        self.topics: dict[uuid.UUID, _Topic | None] = {}
        self.topic_since: dict[uuid.UUID, int] = {}
        self.base_removed: dict[uuid.UUID, int] = {}
        self.absent_required: set[uuid.UUID] = set()
        self.names_required: dict[str, int] = {}
        self.live_names: dict[str, uuid.UUID] = {}  # names of the live topics created in the range

    def add(self, records: tuple[Any, ...], offset: int, epoch: int) -> None:
        """One delta (its records, last offset and epoch), as apply_delta folds it."""
        self.deltas += 1
        self.offset, self.epoch = offset, epoch
        if not records:
            return
        delta = _DeltaNet(self)
        delta.replay(records)
        if delta.metadata_version is not None:
            self.metadata_version = delta.metadata_version
        for bid, reg in delta.brokers.items():  # image._Delta.apply: in the delta's order
            self.time += 1
            if reg is None:
                self.broker_popped.add(bid)
                self.broker_since.pop(bid, None)
            elif self.brokers.get(bid) is None:  # absent or unknown: a place at the end, unless the base has it
                self.broker_since[bid] = self.time
            self.brokers[bid] = reg
        for tid in delta.removed:  # deletions first (TsD:129-153)
            self.time += 1
            known = self.topics.get(tid, _UNKNOWN)
            if known is _UNKNOWN or not known.created:
                self.base_removed[tid] = self.time
            else:
                del self.live_names[known.name]
            self.topics[tid] = None
            self.topic_since.pop(tid, None)
        for tid, (created, name, parts, _) in delta.topics.items():
            self.time += 1
            if created:
                assert name is not None
                if name in self.live_names:
                    raise NotComposable(f"TopicRecord for the name {name!r}, which a live topic holds")
                if tid not in self.topics:
                    self.absent_required.add(tid)
                self.live_names[name] = tid
                self.names_required.setdefault(name, self.time)
                self.topics[tid] = _Topic(True, name, dict(parts))
                self.topic_since[tid] = self.time
            elif self.topics.get(tid) is None:  # first touched in the range: its parts are the delta's
                self.topics[tid] = _Topic(False, None, parts)
            # else: a topic of the range, changed in place (_DeltaNet._entry)

    def effect(self) -> NetEffect:
        return NetEffect(
            self.deltas, self.offset, self.epoch, self.metadata_version, dict(self.brokers),
            frozenset(self.broker_popped), dict(self.broker_since),
            {tid: None if t is None else (t.created, t.name, {p: _part(a) for p, a in t.parts.items()})
             for tid, t in self.topics.items()},
            dict(self.topic_since), dict(self.base_removed), frozenset(self.absent_required),
            dict(self.names_required),
        )

    def packed(self) -> PackedNet:
        """``effect().pack()``, from the accumulators (no object per partition)."""
        topics: dict[uuid.UUID, PackedTopic | None] = {}
        for tid, t in self.topics.items():
            if t is None:
                topics[tid] = None
                continue
            parts = t.parts
            sets = {p: tuple(a[:_SET]) for p, a in parts.items() if a[_SET]}
            changed = {p: _change_tuple(a) for p, a in parts.items() if not a[_SET]}
            topics[tid] = (t.created, t.name, sets, changed)
        return PackedNet(self.deltas, self.offset, self.epoch, self.metadata_version, dict(self.brokers),
                         frozenset(self.broker_popped), dict(self.broker_since), topics, dict(self.topic_since),
                         dict(self.base_removed), frozenset(self.absent_required), dict(self.names_required))
