"""The metadata image a replay folds from KRaft records, and Kafka 3.9's MetadataDelta rules.

Rules (kafka-metadata-records.md; Kafka's ClusterDelta, TopicsDelta, TopicDelta,
PartitionRegistration.merge, BrokerRegistration.cloneWith):
- A ``MetadataImage`` is a frozen, picklable value: brokers by id, topics by id, topic ids by
  name, metadata.version, and the offset and KRaft epoch of the last applied delta. Its dicts
  are never mutated: ``apply_delta`` copies only what a delta changes (copy on write).
- ``apply_delta(image, records)`` replays the records the way ``MetadataDelta.replay`` does and
  returns the new image with the ``DeltaChanges`` MigrationPropagator reads: changed brokers
  (new registration, or None when unregistered), deleted topics (their image before the delta),
  changed topics (the new state of each partition a record touched, and the old one).
- Broker records: a registration replaces the old one; fence/unfence and
  BrokerRegistrationChange need the registered epoch; a change counts only if the registration
  changed. Topic records: removing a topic created or changed in the same delta drops that
  change, and the id counts as deleted only if the image had it; deletions apply before
  additions, so a delete and a re-create of one name ends with the new topic. A TopicRecord
  starts its topic with no partitions, even for an id the image has (Kafka's TopicsDelta does);
  the old partitions stay the "before" state that removed replicas are computed from.
- Records with no effect on these requests (configs, quotas, ACLs, SCRAM, producer ids,
  delegation tokens, migration state, NoOp) are accepted and ignored; transaction markers are
  the delta grouping's business (deltas.py) and are ignored here; an unknown type is an error.
- ClearElrRecord as Kafka 4.1+ replays it (TsD4 = TopicsDelta.java:98-132, TD4 = TopicDelta.java:
  115-136, both of apache/kafka's 4.x metadata module as carried by aiven/inkless@03a721c9, with
  KAFKA-19383 / apache/kafka PR #19916, backported to 4.0.x, and KAFKA-19497 / PR #20242): a
  name is looked up among the topics this delta created first (the latest id of a re-created
  name), then in the image; neither: "Unable to clear elr ..." (TsD4:115-123). An empty name
  covers every topic of the image, then every topic created in the delta (TsD4:128-130). A topic
  this delta deleted is skipped (TsD4:98-104), so it stays deleted; a topic created and removed
  in the delta is no longer among the created ones (KAFKA-19497 drops it on RemoveTopicRecord).
  Each topic it targets becomes a changed topic even with nothing to clear; each of its
  partitions (changed in this delta, or of the image unless the topic was created here) whose
  ELR or last known ELR is not empty is merged with both emptied, which bumps its partition
  epoch by one (TD4: maybeClearElr). Kafka 4.0.0 looked the name up in the image first and
  cleared only image topics, so a topic removed earlier in the delta came back: not replayed.
- Kafka 4.3 (KIP-1066) CordonedLogDirs: RegisterBrokerRecord v4 sets the registration's
  cordoned log dirs (None when null or before v4), BrokerRegistrationChangeRecord v3 replaces
  them when not null (null: no change, empty: all uncordoned; KAFKA-20441's
  ClusterControlManager.replay). They are part of the registration's equality as every
  registration field is (BrokerRegistration.java:352-365 at 3.9). 4.3's BrokerRegistration.java
  could not be read; but ClusterDelta keeps a BrokerRegistrationChangeRecord only when the
  registration it makes differs (ClusterDelta.java:143-150 at 3.9), so a cordon change could
  not reach the image, which KIP-1066 writes it for ("persisted in the metadata log"), unless
  equality compares the cordoned dirs. So a change that only cordons or uncordons makes a
  changed broker and, through MigrationPropagator.scala:122-134, UpdateMetadata with everything
  to every target broker and LeaderAndIsr for its partitions. Kept in record order (whether
  4.3 sorts them is not known).
  UnregisterControllerRecord creates the cluster delta (controllers are not kept).
- metadata.version levels are Kafka 4.x's (context.metadata_level, 1-33); the image keeps the
  3.9 MetadataVersion whose request versions stand for the level: 3.9-IV0 above level 21.
- A record Kafka's replay would throw on raises ``MetadataReplayError`` naming the offset, the
  record type and why.
- Dispatch is a table from record type to a ``_Delta`` method that takes the record's data as
  its generated class (metadata_classes.py), so mypy checks every field read; a row is made by
  ``_on(RecordClass, method)``, which takes the type id from the class and has mypy check that
  the method takes that class. The decoder picks the class by the same type id.
- ``_Delta`` owns its state: ``replay`` sets the touched flags of the sub-deltas a record
  creates, ``apply`` reads them.
- Hot paths (the fold runs once per delta in both engines and is the sizes-only floor):
  ``partition_change`` looks its topic up once per map (the delta's, then the image's) rather
  than through ``_partition`` then ``_changed_topic`` (a topic id's hash is uuid.UUID.__hash__,
  Python code); ``apply`` builds a changed topic's "before" map with ``dict(zip(parts,
  map(before.get, parts)))`` (C) instead of a dict comprehension, ``dict.fromkeys`` when the
  image has no such topic. Measured with propagator's and incremental's first hot paths
  (commit 1ae1bb8): 26.504 G -> 26.354 G instructions (cachegrind) decoding, folding and
  propagating the 100k-record default log, sizes only; uuid.UUID.__hash__ calls of the
  1M-record replay 7.65M -> 6.06M.
  Then (issue 26): the values the fold makes per record, topic and delta (PartitionRegistration,
  TopicImage, TopicChange, MetadataImage, DeltaChanges) are built by trusted constructors
  (log/records.py's rules; these classes have no weakref slot for it, PartitionRegistration
  keeps its cached hash slot, filled with None as attrs' __init__ does); a changed topic's
  entry in ``_Delta.topics`` is keyed by its id's ``int`` (hashed in C; UUID.__hash__ is Python)
  and carries the id and the image's topic found when the entry was made, so ``apply`` looks
  no topic up again; the name check compares the ids' ints (``!=`` on UUIDs runs
  UUID.__eq__ in Python); ``tid in created`` is not asked of an empty set. Fold alone
  (apply_delta over the 2,201 deltas with records of the 100k-record default log, cachegrind):
  1.381 G -> 0.877 G instructions (-36.5%); the large shape's 200k-record log (10 topics of
  5,000 partitions) 2.404 G -> 1.417 G (-41%). What remains there is mostly copy on write: each
  changed topic's partitions map is copied whole (5,000 entries in the large shape).
- A *partial* image (all brokers, features, only some topics) is allowed wherever the topics a
  delta touches are present: see ``_touched_topics`` / ``_needs_full_image`` in propagator.py.
Not kept (no field of LeaderAndIsr v7, UpdateMetadata v8 or StopReplica v4 uses them):
partition directories, configs, controllers. The ELR and last known ELR are kept because
ClearElrRecord changes exactly the partitions that have one, cordoned log dirs and incarnation
ids because a change of them is a broker change.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

import attrs

from ctrlbatch.common import CommandError
from ctrlbatch.context import Broker, EndPoint, MetadataVersion
from ctrlbatch.context.metadata_version import metadata_level
from ctrlbatch.requests.model import Message

from ..log import records as rec
from ..log.records import MetadataRecord, trusted_constructor
from ..schema.metadata_classes import (
    BrokerRegistrationChangeRecord,
    ClearElrRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RegisterControllerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UnregisterControllerRecord,
)

__all__ = [
    "EMPTY_IMAGE",
    "BrokerRegistration",
    "DeltaChanges",
    "MetadataImage",
    "MetadataReplayError",
    "PartitionRegistration",
    "REPLAYED_TYPES",
    "TopicChange",
    "TopicImage",
    "apply_delta",
    "make_partition",
    "metadata_version_for_level",
]

# Replayed by MetadataDelta into areas these requests never read.
IGNORED_TYPES = frozenset({
    rec.CONFIG_RECORD, rec.DELEGATION_TOKEN_RECORD, rec.USER_SCRAM_CREDENTIAL_RECORD, rec.CLIENT_QUOTA_RECORD,
    rec.PRODUCER_IDS_RECORD, rec.ACCESS_CONTROL_ENTRY_RECORD, rec.REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    rec.NO_OP_RECORD, rec.ZK_MIGRATION_STATE_RECORD, rec.REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
    rec.REMOVE_DELEGATION_TOKEN_RECORD,
})
TRANSACTION_TYPES = frozenset(
    {rec.BEGIN_TRANSACTION_RECORD, rec.END_TRANSACTION_RECORD, rec.ABORT_TRANSACTION_RECORD}
)
# Records that make MetadataDelta create its cluster / topics sub-delta (MD:184-258).
BROKER_TYPES = frozenset({
    rec.REGISTER_BROKER_RECORD, rec.UNREGISTER_BROKER_RECORD, rec.FENCE_BROKER_RECORD,
    rec.UNFENCE_BROKER_RECORD, rec.BROKER_REGISTRATION_CHANGE_RECORD,
})
_CLUSTER_TYPES = BROKER_TYPES | {rec.REGISTER_CONTROLLER_RECORD, rec.UNREGISTER_CONTROLLER_RECORD}
_TOPIC_TYPES = frozenset(
    {rec.TOPIC_RECORD, rec.PARTITION_RECORD, rec.PARTITION_CHANGE_RECORD, rec.REMOVE_TOPIC_RECORD,
     rec.CLEAR_ELR_RECORD}
)

NO_LEADER_CHANGE = -2  # PartitionChangeRecord.leader default
NO_RECOVERY_STATE_CHANGE = -1  # PartitionChangeRecord.leaderRecoveryState default
METADATA_VERSION_FEATURE = "metadata.version"
# BrokerRegistrationChangeRecord.fenced: 1 fence, 0 no change, -1 unfence (BrokerRegistrationFencingChange).
FENCING_CHANGE: dict[int, bool | None] = {1: True, 0: None, -1: False}
# BrokerRegistrationChangeRecord.inControlledShutdown: 1 enter, 0 no change.
SHUTDOWN_CHANGE: dict[int, bool | None] = {1: True, 0: None}
RECOVERY_STATES = frozenset({0, 1})

def type_name(record_type: int) -> str:
    return rec.RECORD_TYPE_NAMES.get(record_type, f"record type {record_type}")


class MetadataReplayError(CommandError):
    """A record that Kafka's MetadataDelta would refuse: where (offset, type) and why.

    ``source`` (the file or input) is prefixed by the engines, which know it."""

    def __init__(self, record: MetadataRecord | None, reason: str, *, source: str | None = None) -> None:
        self.offset: int | None = None if record is None else record.offset
        self.record_type: int | None = None if record is None else record.type
        self.reason = reason
        where = "" if source is None else f"{source}: "
        if record is not None:
            where += f"record at offset {record.offset} ({type_name(record.type)} v{record.version}): "
        super().__init__(where + reason)

    def with_source(self, source: str) -> MetadataReplayError:
        """The same error, naming the input it came from."""
        return _rebuild(f"{source}: {self}", self.offset, self.record_type)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (str(self), self.offset, self.record_type))


def _rebuild(message: str, offset: int | None, record_type: int | None) -> MetadataReplayError:
    e = MetadataReplayError.__new__(MetadataReplayError)
    CommandError.__init__(e, message)
    e.offset, e.record_type, e.reason = offset, record_type, message
    return e


def _ids(values: Iterable[int] | None) -> tuple[int, ...]:
    return () if values is None else tuple(values)


@attrs.frozen(slots=True, repr=False)
class BrokerRegistration:
    """A registered broker as the image holds it (Kafka's BrokerRegistration, the fields used here).

    ``broker`` is the context's Broker value (id, endpoints in registration order, rack)."""

    id: int
    epoch: int
    broker: Broker
    features: tuple[tuple[str, int, int], ...]  # sorted by name: Kafka compares them as a map
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool
    directories: tuple[uuid.UUID, ...]  # sorted, as Kafka's constructor sorts them
    incarnation_id: uuid.UUID | None = None
    # Kafka 4.3 (KIP-1066): None until a RegisterBrokerRecord v4 or BrokerRegistrationChangeRecord v3
    # says otherwise; compared like every other field (a cordon-only change is a change: module rules).
    cordoned_log_dirs: tuple[uuid.UUID, ...] | None = None

    def __repr__(self) -> str:
        flags = "".join(
            f for f, on in ((" fenced", self.fenced), (" shutting-down", self.in_controlled_shutdown),
                            (" zk", self.is_migrating_zk_broker)) if on
        )
        return f"BrokerRegistration({self.id} epoch={self.epoch}{flags})"

    @classmethod
    def from_record(cls, data: RegisterBrokerRecord) -> BrokerRegistration:
        """BrokerRegistration.fromRecord (BR:198-221); a listener name given twice keeps the last."""
        endpoints: dict[str, EndPoint] = {}
        for e in data.end_points:
            endpoints[e.name] = EndPoint(e.host, e.port, e.name, e.security_protocol)
        features = {f.name: (f.name, f.min_supported_version, f.max_supported_version) for f in data.features}
        return cls(
            id=data.broker_id,
            epoch=data.broker_epoch,
            broker=Broker(data.broker_id, tuple(endpoints.values()), data.rack),
            features=tuple(features[n] for n in sorted(features)),
            fenced=bool(data.fenced),
            in_controlled_shutdown=bool(data.in_controlled_shutdown),
            is_migrating_zk_broker=bool(data.is_migrating_zk_broker),
            directories=tuple(sorted(data.log_dirs or ())),
            incarnation_id=data.incarnation_id,
            cordoned_log_dirs=data.cordoned_log_dirs,
        )


@attrs.frozen(slots=True, cache_hash=True, weakref_slot=False)
class PartitionRegistration:
    """One partition's state (Kafka's PartitionRegistration, the fields the requests carry)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = -1
    leader_recovery_state: int = 0
    leader_epoch: int = -1
    partition_epoch: int = -1
    elr: tuple[int, ...] = ()  # eligible leader replicas (PartitionRecord v2+, Kafka 4.0-IV1 on)
    last_known_elr: tuple[int, ...] = ()

    @classmethod
    def from_record(cls, data: PartitionRecord) -> PartitionRegistration:
        return _make_partition(
            _ids(data.replicas), _ids(data.isr), _ids(data.removing_replicas), _ids(data.adding_replicas),
            data.leader, data.leader_recovery_state, data.leader_epoch, data.partition_epoch,
            _ids(getattr(data, "eligible_leader_replicas", None)), _ids(getattr(data, "last_known_elr", None)),
        )

    @property
    def has_elr(self) -> bool:
        return bool(self.elr or self.last_known_elr)

    def without_elr(self) -> PartitionRegistration:
        """merge() of a PartitionChangeRecord setting only an empty ELR and last known ELR
        (TopicDelta.maybeClearElr): the partition epoch moves by one, nothing else but the ELRs."""
        return attrs.evolve(self, partition_epoch=self.partition_epoch + 1, elr=(), last_known_elr=())

    def merge(self, data: PartitionChangeRecord) -> PartitionRegistration:
        """PartitionRegistration.merge (PR:241-280): absent lists keep theirs; a leader other
        than -2 is set and bumps the leader epoch; the partition epoch always moves by one."""
        if data.leader == NO_LEADER_CHANGE:
            leader, leader_epoch = self.leader, self.leader_epoch
        else:
            leader, leader_epoch = data.leader, self.leader_epoch + 1
        lrs = data.leader_recovery_state
        elr = getattr(data, "eligible_leader_replicas", None)
        last_known_elr = getattr(data, "last_known_elr", None)
        return _make_partition(
            self.replicas if data.replicas is None else tuple(data.replicas),
            self.isr if data.isr is None else tuple(data.isr),
            self.removing_replicas if data.removing_replicas is None else tuple(data.removing_replicas),
            self.adding_replicas if data.adding_replicas is None else tuple(data.adding_replicas),
            leader,
            self.leader_recovery_state if lrs == NO_RECOVERY_STATE_CHANGE else lrs,
            leader_epoch,
            self.partition_epoch + 1,
            self.elr if elr is None else tuple(elr),
            self.last_known_elr if last_known_elr is None else tuple(last_known_elr),
        )


@attrs.frozen(slots=True, repr=False, weakref_slot=False)
class TopicImage:
    id: uuid.UUID
    name: str
    partitions: Mapping[int, PartitionRegistration]

    def __repr__(self) -> str:
        return f"TopicImage({self.name!r}, {len(self.partitions)} partitions)"


@attrs.frozen(slots=True, repr=False, weakref_slot=False)
class MetadataImage:
    """The replayed cluster state. Never mutate its dicts (they are shared between images)."""

    brokers: Mapping[int, BrokerRegistration] = attrs.field(factory=dict)
    topics: Mapping[uuid.UUID, TopicImage] = attrs.field(factory=dict)
    topic_ids_by_name: Mapping[str, uuid.UUID] = attrs.field(factory=dict)
    metadata_version: MetadataVersion = MetadataVersion.IBP_3_0_IV1  # FeaturesImage.EMPTY's
    offset: int = -1
    epoch: int = -1

    def __repr__(self) -> str:
        return (
            f"MetadataImage(offset={self.offset} epoch={self.epoch} {self.metadata_version} "
            f"{len(self.brokers)} brokers, {len(self.topics)} topics)"
        )

    def topic_by_name(self, name: str) -> TopicImage | None:
        tid = self.topic_ids_by_name.get(name)
        return None if tid is None else self.topics.get(tid)

    def with_topics(self, topic_ids: Iterable[uuid.UUID]) -> MetadataImage:
        """This image keeping only the given topics (a partial image), names pointing at kept ids."""
        keep = {t: self.topics[t] for t in topic_ids if t in self.topics}
        names = {n: t for n, t in self.topic_ids_by_name.items() if t in keep}
        return attrs.evolve(self, topics=keep, topic_ids_by_name=names)


EMPTY_IMAGE = MetadataImage()


@attrs.frozen(slots=True, weakref_slot=False)
class TopicChange:
    """A changed topic of a delta: its name, whether the delta created it, and for each
    partition a record touched the new state and the state before the delta (None if new)."""

    id: uuid.UUID
    name: str
    created: bool
    partitions: Mapping[int, PartitionRegistration]
    previous: Mapping[int, PartitionRegistration | None]


@attrs.frozen(slots=True, weakref_slot=False)
class DeltaChanges:
    """What MigrationPropagator reads from a MetadataDelta."""

    cluster_touched: bool = False
    topics_touched: bool = False
    changed_brokers: Mapping[int, BrokerRegistration | None] = attrs.field(factory=dict)
    deleted_topics: Mapping[uuid.UUID, TopicImage] = attrs.field(factory=dict)
    changed_topics: Mapping[uuid.UUID, TopicChange] = attrs.field(factory=dict)
    metadata_version_changed: MetadataVersion | None = None

    @property
    def touched(self) -> bool:
        """Kafka's test before propagating a delta: topics or cluster delta present (KMD:600-606)."""
        return self.cluster_touched or self.topics_touched


# Trusted constructors (log/records.py's rules) of the values the fold makes per partition, topic
# and delta: the same values as the classes' __init__, without attrs' object.__setattr__ per field
# (module rules, "Hot paths"; tests/replay/test_image_makers.py checks they are equal).
_make_partition: Callable[..., PartitionRegistration] = trusted_constructor(PartitionRegistration)
_make_topic: Callable[..., TopicImage] = trusted_constructor(TopicImage)
_make_image: Callable[..., MetadataImage] = trusted_constructor(MetadataImage)
_make_change: Callable[..., TopicChange] = trusted_constructor(TopicChange)
make_partition = _make_partition  # for packed_image's unpacking: its values are a registration's own fields
_make_changes: Callable[..., DeltaChanges] = trusted_constructor(DeltaChanges)


def metadata_version_for_level(level: int) -> MetadataVersion | None:
    """The 3.9 MetadataVersion whose request versions stand for feature level ``level`` as Kafka 4.x
    numbers it (1-21: its own; 22-33: 3.9-IV0), or None for a level Kafka 4.4 does not know."""
    known = metadata_level(level)
    return None if known is None else known.request_version


_TopicEntry = tuple[uuid.UUID, str, dict[int, PartitionRegistration], "TopicImage | None"]


class _Delta:
    """The pending changes of one delta over a base image (MetadataDelta's cluster/topics/features)."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.brokers: dict[int, BrokerRegistration | None] = {}
        # topic id's int (hashed in C, not by UUID.__hash__: module rules) -> (topic id, name, the
        # partitions this delta changed, the image's topic of that id or None)
        self.topics: dict[int, _TopicEntry] = {}
        self.created: set[uuid.UUID] = set()
        self.deleted: dict[uuid.UUID, TopicImage] = {}
        self.metadata_version: MetadataVersion | None = None
        self.cluster_touched = False
        self.topics_touched = False

    # -- cluster (ClusterDelta)

    def _broker(self, record: MetadataRecord, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        current = self.brokers[broker_id] if broker_id in self.brokers else self.image.brokers.get(broker_id)
        if current is None:
            raise MetadataReplayError(
                record, f"Tried to {action} broker {broker_id}, but that broker was not registered."
            )
        if current.epoch != epoch:
            raise MetadataReplayError(
                record,
                f"Tried to {action} broker {broker_id}, but the given epoch, {epoch}, did not match the "
                f"current broker epoch, {current.epoch}",
            )
        return current

    def register_broker(self, record: MetadataRecord, d: RegisterBrokerRecord) -> None:
        reg = BrokerRegistration.from_record(d)
        self.brokers[reg.id] = reg

    def unregister_broker(self, record: MetadataRecord, d: UnregisterBrokerRecord) -> None:
        self.brokers[d.broker_id] = None

    def fence(self, record: MetadataRecord, d: FenceBrokerRecord | UnfenceBrokerRecord, fenced: bool) -> None:
        current = self._broker(record, d.id, d.epoch, "fence" if fenced else "unfence")
        self.brokers[d.id] = attrs.evolve(current, fenced=fenced)

    def fence_broker(self, record: MetadataRecord, d: FenceBrokerRecord) -> None:
        self.fence(record, d, True)

    def unfence_broker(self, record: MetadataRecord, d: UnfenceBrokerRecord) -> None:
        self.fence(record, d, False)

    def change_broker(self, record: MetadataRecord, d: BrokerRegistrationChangeRecord) -> None:
        current = self._broker(record, d.broker_id, d.broker_epoch, "change")
        if d.fenced not in FENCING_CHANGE:
            raise MetadataReplayError(record, f"unknown value for fenced field: {d.fenced}")
        shutdown = d.in_controlled_shutdown
        if shutdown not in SHUTDOWN_CHANGE:
            raise MetadataReplayError(record, f"unknown value for inControlledShutdown field: {shutdown}")
        fenced, in_shutdown = FENCING_CHANGE[d.fenced], SHUTDOWN_CHANGE[shutdown]
        dirs, cordoned = d.log_dirs, d.cordoned_log_dirs
        new = attrs.evolve(
            current,
            fenced=current.fenced if fenced is None else fenced,
            in_controlled_shutdown=current.in_controlled_shutdown if in_shutdown is None else in_shutdown,
            directories=tuple(sorted(dirs)) if dirs else current.directories,
            cordoned_log_dirs=current.cordoned_log_dirs if cordoned is None else cordoned,  # null: no change
        )
        if new != current:  # CD:148-150: only an actual change is recorded
            self.brokers[d.broker_id] = new

    # -- topics (TopicsDelta / TopicDelta)

    def _changed_topic(self, record: MetadataRecord, topic_id: uuid.UUID) -> dict[int, PartitionRegistration]:
        entry = self.topics.get(topic_id.int)
        if entry is None:
            topic = self.image.topics.get(topic_id)
            if topic is None:
                raise MetadataReplayError(record, f"no topic with id {topic_id} in the image or this delta")
            entry = self.topics[topic_id.int] = (topic_id, topic.name, {}, topic)
        return entry[2]

    def _partition(self, topic_id: uuid.UUID, partition: int) -> PartitionRegistration | None:
        entry = self.topics.get(topic_id.int)
        if entry is not None and partition in entry[2]:
            return entry[2][partition]
        if topic_id in self.created:  # a TopicRecord starts its topic with no partitions (TsD:71-76)
            return None
        topic = self.image.topics.get(topic_id)
        return None if topic is None else topic.partitions.get(partition)

    def topic(self, record: MetadataRecord, d: TopicRecord) -> None:
        tid = d.topic_id
        self.topics[tid.int] = (tid, d.name, {}, self.image.topics.get(tid))
        self.created.add(d.topic_id)

    def partition(self, record: MetadataRecord, d: PartitionRecord) -> None:
        _check_recovery_state(record, d.leader_recovery_state)
        self._changed_topic(record, d.topic_id)[d.partition_id] = PartitionRegistration.from_record(d)

    def partition_change(self, record: MetadataRecord, d: PartitionChangeRecord) -> None:
        # _partition then _changed_topic, inlined with one look-up of the topic per map (the hot
        # record: module rules, "Hot paths")
        tid, pid = d.topic_id, d.partition_id
        key = tid.int
        entry = self.topics.get(key)
        if entry is not None and pid in entry[2]:
            parts = entry[2]
            base = parts[pid]
        else:
            topic = self.image.topics.get(tid)
            created = self.created  # usually empty: no topic id hashed then
            found = None if topic is None or (created and tid in created) else topic.partitions.get(pid)
            if found is None:
                raise MetadataReplayError(
                    record, f"partition {pid} of topic id {tid} is in neither the image nor this delta"
                )
            base = found
            if entry is None:
                assert topic is not None
                entry = self.topics[key] = (tid, topic.name, {}, topic)
            parts = entry[2]
        if d.leader_recovery_state != NO_RECOVERY_STATE_CHANGE:
            _check_recovery_state(record, d.leader_recovery_state)
        parts[pid] = base.merge(d)

    def remove_topic(self, record: MetadataRecord, d: RemoveTopicRecord) -> None:
        tid = d.topic_id
        pending = self.topics.pop(tid.int, None)
        self.created.discard(tid)
        old = self.image.topics.get(tid)
        if pending is None and old is None:
            raise MetadataReplayError(record, f"Unable to delete topic with id {tid}: no such topic found.")
        if old is not None:
            self.deleted[tid] = old

    # -- features

    def feature_level(self, record: MetadataRecord, d: FeatureLevelRecord) -> None:
        if d.name != METADATA_VERSION_FEATURE:
            return
        mv = metadata_version_for_level(d.feature_level)
        if mv is None:
            raise MetadataReplayError(record, f"unknown metadata.version feature level {d.feature_level}")
        self.metadata_version = mv
        # MD:309-322: a metadata.version change creates every sub-delta.
        self.cluster_touched = self.topics_touched = True

    def register_controller(self, record: MetadataRecord, d: RegisterControllerRecord) -> None:
        pass

    def unregister_controller(self, record: MetadataRecord, d: UnregisterControllerRecord) -> None:
        """ClusterDelta.replay(UnregisterControllerRecord): controllers are not kept here."""

    # -- Kafka 4.1+: ClearElrRecord (TopicsDelta.replay(ClearElrRecord) after KAFKA-19383 / KAFKA-19497)

    def clear_elr(self, record: MetadataRecord, d: ClearElrRecord) -> None:
        name = d.topic_name
        if not name:  # every topic of the image, then every topic this delta created
            for each in [*self.image.topics, *self.created]:
                self._maybe_clear_elr(record, each)
            return
        created = self._created_id(name)  # the latest id of the name first: it may be a re-creation
        topic = self.image.topic_by_name(name)
        tid: uuid.UUID | None = created if created is not None else None if topic is None else topic.id
        if tid is None:
            raise MetadataReplayError(record, f"Unable to clear elr for topic with name {name}: no such topic found.")
        self._maybe_clear_elr(record, tid)

    def _maybe_clear_elr(self, record: MetadataRecord, topic_id: uuid.UUID) -> None:
        """TopicsDelta.maybeReplayClearElrRecord: a topic this delta deleted is skipped, not brought back."""
        if topic_id not in self.deleted:
            self._clear_topic_elr(record, topic_id)

    def _created_id(self, name: str) -> uuid.UUID | None:
        """TopicsDelta.createdTopics.get(name): the id of a topic this delta created with that name
        and did not remove again (RemoveTopicRecord drops it: KAFKA-19497)."""
        found = [tid for tid in self.created if self.topics[tid.int][1] == name]
        return found[-1] if found else None

    def _clear_topic_elr(self, record: MetadataRecord, topic_id: uuid.UUID) -> None:
        parts = self._changed_topic(record, topic_id)  # getOrCreateTopicDelta: changed even if nothing clears
        for p, reg in list(parts.items()):
            if reg.has_elr:
                parts[p] = reg.without_elr()
        topic = None if topic_id in self.created else self.image.topics.get(topic_id)
        if topic is not None:
            for p, reg in topic.partitions.items():
                if p not in parts and reg.has_elr:
                    parts[p] = reg.without_elr()

    # -- records

    def replay(self, records: Iterable[MetadataRecord]) -> None:
        """MetadataDelta.replay of each record in turn: the sub-delta a record creates is touched."""
        for record in records:
            t = record.type
            replay = _REPLAY.get(t)
            if replay is not None:
                if t in _TOPIC_TYPES:  # the usual record first (the two sets are disjoint)
                    self.topics_touched = True
                elif t in _CLUSTER_TYPES:
                    self.cluster_touched = True
                try:
                    replay(self, record, record.data)
                except MetadataReplayError:
                    raise
                except (AttributeError, TypeError, ValueError) as e:
                    raise MetadataReplayError(record, f"malformed record data: {e}") from e
            elif t not in IGNORED_TYPES and t not in TRANSACTION_TYPES:
                raise MetadataReplayError(record, f"unknown metadata record type {t}")

    # -- result

    def apply(self, offset: int | None, epoch: int | None) -> tuple[MetadataImage, DeltaChanges]:
        image = self.image
        brokers = image.brokers
        if self.brokers:
            brokers = dict(brokers)
            for bid, reg in self.brokers.items():
                if reg is None:
                    brokers.pop(bid, None)
                else:
                    brokers[bid] = reg
        topics: Mapping[uuid.UUID, TopicImage] = image.topics
        names: Mapping[str, uuid.UUID] = image.topic_ids_by_name
        changed: dict[uuid.UUID, TopicChange] = {}
        if self.deleted or self.topics:
            new_topics = dict(topics)
            new_names = dict(names) if self.deleted or self.created else None
            for tid, old in self.deleted.items():  # TsD:129-153: deletions first
                del new_topics[tid]
                assert new_names is not None
                new_names.pop(old.name, None)
            created = self.created
            for tid, name, parts, base in self.topics.values():  # base: the image's topic, looked up once
                is_new = tid in created if created else False
                if base is None:
                    merged = dict(parts)
                    previous: dict[int, PartitionRegistration | None] = dict.fromkeys(parts)
                else:
                    before = base.partitions
                    merged = dict(parts) if is_new else {**before, **parts}  # TsD:71-76: a TopicRecord starts empty
                    previous = dict(zip(parts, map(before.get, parts), strict=True))
                new_topics[tid] = _make_topic(tid, name, merged)
                named = (names if new_names is None else new_names).get(name)
                if named is None or named.int != tid.int:  # UUID.__eq__ without its Python call
                    if new_names is None:
                        new_names = dict(names)
                    new_names[name] = tid
                changed[tid] = _make_change(tid, name, is_new, parts, previous)
            topics = new_topics
            if new_names is not None:
                names = new_names
        new = _make_image(
            brokers,
            topics,
            names,
            self.metadata_version or image.metadata_version,
            image.offset if offset is None else offset,
            image.epoch if epoch is None else epoch,
        )
        return new, _make_changes(
            self.cluster_touched,
            self.topics_touched,
            self.brokers,
            self.deleted,
            changed,
            self.metadata_version,
        )


def _check_recovery_state(record: MetadataRecord, value: int) -> None:
    if value not in RECOVERY_STATES:
        raise MetadataReplayError(record, f"unknown leaderRecoveryState {value}")


_D = TypeVar("_D", bound=Message)
# The data argument is the record's data, an instance of the row's class (see the module rules).
_Replay = Callable[[_Delta, MetadataRecord, Any], None]


def _on(cls: type[_D], replay: Callable[[_Delta, MetadataRecord, _D], None]) -> tuple[int, _Replay]:
    """A row of the dispatch table: cls's record type id, and a replay that mypy checks takes a cls."""
    if cls.API_KEY is None:
        raise TypeError(f"{cls.__name__} is not a metadata record")
    return cls.API_KEY, replay


_REPLAY: dict[int, _Replay] = dict((
    _on(RegisterBrokerRecord, _Delta.register_broker),
    _on(UnregisterBrokerRecord, _Delta.unregister_broker),
    _on(TopicRecord, _Delta.topic),
    _on(PartitionRecord, _Delta.partition),
    _on(PartitionChangeRecord, _Delta.partition_change),
    _on(FenceBrokerRecord, _Delta.fence_broker),
    _on(UnfenceBrokerRecord, _Delta.unfence_broker),
    _on(RemoveTopicRecord, _Delta.remove_topic),
    _on(FeatureLevelRecord, _Delta.feature_level),
    _on(BrokerRegistrationChangeRecord, _Delta.change_broker),
    _on(RegisterControllerRecord, _Delta.register_controller),
    _on(UnregisterControllerRecord, _Delta.unregister_controller),
    _on(ClearElrRecord, _Delta.clear_elr),
))


# The record types this module replays: the record-semantics table the Spark plan's net effect
# is checked against (net_effect.semantics_mismatch, tests/replay/test_record_semantics.py).
REPLAYED_TYPES = frozenset(_REPLAY)

_NOTHING: Mapping[Any, Any] = MappingProxyType({})
_NO_CHANGES = DeltaChanges(changed_brokers=_NOTHING, deleted_topics=_NOTHING, changed_topics=_NOTHING)


def _moved(image: MetadataImage, offset: int | None, epoch: int | None) -> MetadataImage:
    """The image at another offset/epoch, built positionally: 0.6 us against attrs.evolve's
    1.6 us, on the 5M NoOp deltas of a 10M-record log. So every field is named here (a test checks)."""
    if (offset is None or offset == image.offset) and (epoch is None or epoch == image.epoch):
        return image
    return _make_image(
        image.brokers, image.topics, image.topic_ids_by_name, image.metadata_version,
        image.offset if offset is None else offset, image.epoch if epoch is None else epoch,
    )


def apply_delta(
    image: MetadataImage, records: Iterable[MetadataRecord], *, offset: int | None = None, epoch: int | None = None
) -> tuple[MetadataImage, DeltaChanges]:
    """Replay ``records`` (MetadataRecord: offset, type, version, data) over ``image`` as one
    MetadataDelta; the new image takes ``offset`` and ``epoch`` (default: the old ones)."""
    if not isinstance(image, MetadataImage):
        raise TypeError(f"image: expected a MetadataImage, got {type(image).__name__}")
    if records == ():  # a NoOp-only delta (half of a real log): nothing to replay, only the provenance moves
        return _moved(image, offset, epoch), _NO_CHANGES
    delta = _Delta(image)
    delta.replay(records)
    return delta.apply(offset, epoch)
