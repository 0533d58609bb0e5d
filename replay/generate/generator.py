"""A synthetic, seeded `__cluster_metadata-0` directory, written the way a KRaft controller writes it.

Rules:
- Deterministic: the same parameters give the same bytes. One `random.Random(seed)` drives every
  choice; nothing iterates a set or a dict keyed by object identity.
- The bytes are Kafka's (writer.py; segments named by 20-digit base offset, rolled at
  segment_bytes); the hot records (PartitionRecord, PartitionChangeRecord, NoOp) are encoded by
  hand for speed and tests check them against the codec; every other record goes through it.
- The history is semantically valid, as MetadataDelta would replay it: a LeaderChange control
  batch opens each KRaft epoch; a bootstrap transaction (Begin, FeatureLevel metadata.version,
  ZkMigrationState, End); brokers register fenced with epoch = the offset of their registration
  and are unfenced; topics are a TopicRecord with its PartitionRecords in one batch, or in a
  Begin..End transaction over batches of at most 10,000 records. Then a seeded mix of events
  (EVENTS): leader elections, ISR shrink and expand, reassignments (start, then completion),
  topic creation and deletion, broker failures, controlled shutdowns and restarts, KRaft leader
  changes, and one metadata.version upgrade, with NoOp batches making up noop_ratio of the
  records. Always leader in ISR, ISR within replicas (leader -1 when no live ISR member is left),
  record versions as the metadata.version in force writes them (kafka-metadata-records.md 2.1;
  kafka-metadata-versions-4x.md for levels 22-33: PartitionRecord/PartitionChangeRecord v2 from
  23, RegisterBrokerRecord v4 from 30; BrokerRegistrationChangeRecord keeps its call-site versions).
- Kafka 4.x levels (22-33; 3.x histories keep their bytes: nothing below is drawn or written
  under level 23). From 4.0-IV1 (23) eligible.leader.replicas.version 1 is written (in the
  bootstrap transaction, or right after the upgrade) and the model keeps ELRs as a KIP-966
  controller does (PartitionChangeBuilder.java:431-571 at apache/kafka trunk@1eb7644, the ELR
  code 4.0 shipped; ReplicationControlManager.java:1381-1387, 1905-1950, 2257-2263 there):
  every change computes the target ELR and last known ELR (at or above the effective min ISR,
  min(min.insync.replicas, replication factor), both empty; below it the ELR gains the old ISR
  members outside the new ISR) and writes them only when they differ; a leaving broker leaves
  even the last ISR (the ISR may be empty, leader -1); an unfenced broker in the ELR of a
  leaderless partition with an empty ISR is elected from it; a new incarnation of a broker first
  gets the unclean-shutdown changes (out of every ISR and ELR it is in, into the last known
  ELR; ClusterControlManager.java:431-454 there) in its registration batch. PartitionRecords
  carry a non-empty ELR / last known ELR (snapshots). min.insync.replicas is MIN_ISR (the
  controllers' static config) until a ConfigRecord changes it.
- 4.x events (EVENTS_4X): ``clear_elr``: a min.insync.replicas ConfigRecord for a live topic
  or (1 in 8) the cluster, then the ClearElrRecord ConfigurationControlManager writes for it
  (the topic's name, or empty), in one batch; ``elr_churn``: one transaction (one delta) that
  removes a live topic, creates one, shrinks some of its ISRs below min ISR and changes the
  cluster's min.insync.replicas with its ClearElrRecord(""): the delta-level rules of 4.1+'s
  TopicsDelta in one delta; ``cordon`` (4.3-IV0 on): a live broker cordons or uncordons its log
  dir, a BrokerRegistrationChangeRecord v3 (registrations v4 carry none: KAFKA-20441);
  ``controller_registration`` (RegisterControllerRecord of a voter) and, at 4.4-IV2,
  ``controller_unregistration``. The model clears ELRs as TopicDelta.maybeClearElr does.
- Generation stops after the event during which `records` records were reached (control
  records and NoOps included), so the count is reached exactly or passed by one event.
"""

from __future__ import annotations

import json
import os
import random
import struct
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from typing import IO, Any

import attrs

from ctrlbatch.requests.wire import uvarint

from ..log import records as rec
from ..schema.record_classes import control_class, encode_control, encode_value, record_class
from .writer import encode_batch_raw, encode_records

MAX_RECORDS_PER_BATCH = 10_000  # QuorumController.java:184
VOTERS = (3000, 3001, 3002)
START_TIME_MS = 1_700_000_000_000
NOOP_INTERVAL_MS = 500
MV_TRANSACTIONS = 13  # 3.6-IV1
MV_NO_LEADER_BUMP_ON_SHRINK = 12  # 3.6-IV0
MV_DIRECTORIES = 17  # 3.7-IV2
MV_LATEST = 21  # 3.9-IV0, the newest production level in 3.9 (the default upgrade)
MV_ELR = 23  # 4.0-IV1: PartitionRecord/PartitionChangeRecord v2, ClearElrRecord
MV_CORDONED = 30  # 4.3-IV0: RegisterBrokerRecord v4
MV_NEWEST = 33  # 4.4-IV2, the newest level Kafka 4.x defines (kafka-metadata-versions-4x.md)
RACKS = ("rack-a", "rack-b", "rack-c")

# Event weights of the default mix (an event not possible at that moment is drawn again).
EVENTS: tuple[tuple[str, int], ...] = (
    ("leader_election", 20),
    ("isr_shrink", 20),
    ("isr_expand", 20),
    ("reassignment_start", 6),
    ("reassignment_complete", 6),
    ("create_topic", 3),
    ("delete_topic", 2),
    ("broker_failure", 2),
    ("controlled_shutdown", 2),
    ("broker_restart", 6),
    ("kraft_leader_change", 1),
)
# Drawn only at levels >= MV_ELR (appended after EVENTS so that 3.x draws are unchanged).
EVENTS_4X: tuple[tuple[str, int], ...] = (
    ("clear_elr", 2),
    ("elr_churn", 1),
    ("cordon", 2),
    ("controller_registration", 1),
    ("controller_unregistration", 1),
)
ELR_FEATURE = "eligible.leader.replicas.version"
MIN_ISR = 2  # min.insync.replicas of the controllers' server.properties (not in the log)
MIN_ISR_VALUES = (1, 2, 2, 3)  # what a min.insync.replicas change sets
CONFIG_TOPIC, CONFIG_BROKER = 2, 4  # ConfigResource.Type ids

_I32 = struct.Struct(">i")
_PARTITION_HEAD = struct.Struct(">i16s")
_LEADER_EPOCHS = struct.Struct(">iii")


_INT_ARRAYS = [struct.Struct(f">{n}i") for n in range(64)]


def _int_array(values: Sequence[int]) -> bytes:
    n = len(values)
    return uvarint(n + 1) + (_INT_ARRAYS[n] if n < 64 else struct.Struct(f">{n}i")).pack(*values)


def _uuid_array(values: Sequence[bytes]) -> bytes:
    return uvarint(len(values) + 1) + b"".join(values)


def partition_change_value(
    version: int,
    partition_id: int,
    topic_id: bytes,
    *,
    isr: Sequence[int] | None = None,
    leader: int = -2,
    replicas: Sequence[int] | None = None,
    removing: Sequence[int] | None = None,
    adding: Sequence[int] | None = None,
    directories: Sequence[bytes] | None = None,
    elr: Sequence[int] | None = None,
    last_known_elr: Sequence[int] | None = None,
) -> bytes:
    """A framed PartitionChangeRecord (v0-2): every field but the key is tagged, written only
    when it differs from its default (null lists, leader -2), in tag order (v2's ELRs: tags 6, 7)."""
    tags = []
    if isr is not None:
        tags.append(b"\x00" + _sized(_int_array(isr)))
    if leader != -2:
        tags.append(b"\x01\x04" + _I32.pack(leader))
    if replicas is not None:
        tags.append(b"\x02" + _sized(_int_array(replicas)))
    if removing is not None:
        tags.append(b"\x03" + _sized(_int_array(removing)))
    if adding is not None:
        tags.append(b"\x04" + _sized(_int_array(adding)))
    if elr is not None and version >= 2:
        tags.append(b"\x06" + _sized(_int_array(elr)))
    if last_known_elr is not None and version >= 2:
        tags.append(b"\x07" + _sized(_int_array(last_known_elr)))
    if directories is not None and version >= 1:
        tags.append(b"\x08" + _sized(_uuid_array(directories)))
    return (
        b"\x01\x05"
        + bytes((version,))
        + _PARTITION_HEAD.pack(partition_id, topic_id)
        + bytes((len(tags),))
        + b"".join(tags)
    )


def _sized(payload: bytes) -> bytes:
    return uvarint(len(payload)) + payload


_EMPTY_ARRAY = b"\x01"


def partition_value(
    version: int,
    partition_id: int,
    topic_id: bytes,
    replicas: Sequence[int],
    isr: Sequence[int],
    removing: Sequence[int],
    adding: Sequence[int],
    leader: int,
    leader_epoch: int,
    partition_epoch: int,
    directories: Sequence[bytes],
    elr: Sequence[int] = (),
    last_known_elr: Sequence[int] = (),
) -> bytes:
    """A framed PartitionRecord (v0-2) with leaderRecoveryState RECOVERED (its default: no tag) and,
    in v2, the ELR and last known ELR (tags 1, 2) when not empty, as PartitionRegistration.toRecord
    sets them (null, no tag, otherwise)."""
    parts = [
        b"\x01\x03",
        bytes((version,)),
        _PARTITION_HEAD.pack(partition_id, topic_id),
        _int_array(replicas),
        _int_array(isr),
        _int_array(removing) if removing else _EMPTY_ARRAY,
        _int_array(adding) if adding else _EMPTY_ARRAY,
        _LEADER_EPOCHS.pack(leader, leader_epoch, partition_epoch),
    ]
    if version >= 1:
        parts.append(_uuid_array(directories))
    tags = []
    if elr and version >= 2:
        tags.append(b"\x01" + _sized(_int_array(elr)))
    if last_known_elr and version >= 2:
        tags.append(b"\x02" + _sized(_int_array(last_known_elr)))
    parts.append(bytes((len(tags),)))
    parts.extend(tags)
    return b"".join(parts)


def record_versions(level: int) -> tuple[int, int]:
    """(RegisterBrokerRecord version, PartitionRecord/PartitionChangeRecord version) at a
    metadata.version feature level (MetadataVersion.java:377-422; 4.x: kafka-metadata-versions-4x.md)."""
    register = (
        0 if level < 7 else 1 if level < 8 else 2 if level < MV_DIRECTORIES else 3 if level < MV_CORDONED else 4
    )
    return register, 0 if level < MV_DIRECTORIES else 1 if level < MV_ELR else 2


@attrs.frozen
class GeneratorConfig:
    """What to generate. metadata_version / upgrade_to are feature levels (8 = 3.4-IV0 .. 21 =
    3.9-IV0 .. 33 = 4.4-IV2); upgrade_to None means no upgrade. snapshots: how many <end>-<epoch>.checkpoint
    files to write along the way (evenly spaced)."""

    brokers: int = 5
    topics: int = 10
    partitions: int = 100
    records: int = 10_000
    seed: int = 0
    replication_factor: int = 3
    segment_bytes: int = 1 << 30
    metadata_version: int = 14
    upgrade_to: int | None = MV_LATEST
    noop_ratio: float = 0.5
    snapshots: int = 0

    def check(self) -> None:
        """Name the first wrong parameter."""
        checks: list[tuple[str, bool, str]] = [
            ("brokers", self.brokers >= 1, "at least 1"),
            ("topics", self.topics >= 1, "at least 1"),
            ("partitions", self.partitions >= self.topics, "at least one per topic"),
            ("records", self.records >= 1, "at least 1"),
            ("replication_factor", 1 <= self.replication_factor <= self.brokers, "between 1 and brokers"),
            ("segment_bytes", self.segment_bytes >= 1024, "at least 1024"),
            (
                "metadata_version",
                8 <= self.metadata_version <= MV_NEWEST,
                f"a feature level from 8 (3.4-IV0) to {MV_NEWEST} (4.4-IV2)",
            ),
            ("noop_ratio", 0.0 <= self.noop_ratio < 1.0, "in [0, 1)"),
            ("snapshots", self.snapshots >= 0, "at least 0"),
        ]
        if self.upgrade_to is not None:
            checks.append(
                (
                    "upgrade_to",
                    self.metadata_version < self.upgrade_to <= MV_NEWEST,
                    f"above metadata_version, at most {MV_NEWEST}",
                )
            )
        for name, ok, rule in checks:
            if not ok:
                raise ValueError(f"{name}: must be {rule}, got {getattr(self, name)!r}")


@attrs.frozen
class GenerateResult:
    """What was written: the metadata directory, its segments and snapshots, counts."""

    directory: str
    segments: tuple[str, ...]
    snapshots: tuple[str, ...]
    records: int
    batches: int
    last_offset: int
    by_type: dict[str, int]


class _Partition:
    __slots__ = (
        "topic",
        "index",
        "replicas",
        "isr",
        "leader",
        "leader_epoch",
        "partition_epoch",
        "adding",
        "removing",
        "target",
        "elr",
        "last_known_elr",
    )

    def __init__(self, topic: _Topic, index: int, replicas: list[int]) -> None:
        self.topic = topic
        self.index = index
        self.replicas = replicas
        self.isr = list(replicas)
        self.leader = replicas[0]
        self.leader_epoch = 0
        self.partition_epoch = 0
        self.adding: list[int] = []
        self.removing: list[int] = []
        self.target: list[int] | None = None
        self.elr: list[int] = []
        self.last_known_elr: list[int] = []


class _Topic:
    __slots__ = ("name", "id", "id_bytes", "partitions", "live", "min_isr")

    def __init__(self, name: str, topic_id: uuid.UUID) -> None:
        self.name = name
        self.id = topic_id
        self.id_bytes = topic_id.bytes
        self.partitions: list[_Partition] = []
        self.live = True
        self.min_isr: int | None = None  # a topic-level min.insync.replicas, None: the cluster's


class _Broker:
    __slots__ = ("id", "epoch", "incarnation", "fenced", "shutting_down", "log_dir", "log_dir_bytes", "cordoned")

    def __init__(self, broker_id: int, log_dir: uuid.UUID) -> None:
        self.id = broker_id
        self.epoch = -1
        self.incarnation = uuid.UUID(int=0)
        self.fenced = True
        self.shutting_down = False
        self.log_dir = log_dir
        self.log_dir_bytes = log_dir.bytes
        self.cordoned: bool | None = None  # None: not known (a v4 registration carries null)

    @property
    def alive(self) -> bool:
        return not self.fenced and not self.shutting_down


class _Segments:
    """Appends batches to <base offset>.log files, rolling at segment_bytes."""

    def __init__(self, directory: str, segment_bytes: int) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.paths: list[str] = []
        self._file: IO[bytes] | None = None
        self._size = 0

    def write(self, base_offset: int, batch: bytes) -> None:
        if self._file is None or (self._size and self._size + len(batch) > self.segment_bytes):
            self.close()
            path = os.path.join(self.directory, f"{base_offset:020d}.log")
            self.paths.append(path)
            self._file = open(path, "wb", buffering=4 << 20)  # noqa: SIM115 - closed by close()
            self._size = 0
        self._file.write(batch)
        self._size += len(batch)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class _Generator:
    def __init__(self, config: GeneratorConfig, directory: str, progress: Any) -> None:
        self.c = config
        self.rng = random.Random(config.seed)
        self.directory = directory
        self.segments = _Segments(directory, config.segment_bytes)
        self.progress = progress
        self.offset = 0
        self.epoch = 0
        self.leader_index = -1
        self.time = START_TIME_MS
        self.level = config.metadata_version
        self.register_version, self.partition_version = record_versions(self.level)
        self.records = 0
        self.data_records = 0
        self.noops = 0
        self.batches = 0
        self.by_type: Counter[int] = Counter()
        self.epoch_starts: list[tuple[int, int]] = []
        self.brokers = [_Broker(i, self._uuid()) for i in range(1, config.brokers + 1)]
        self.topics: list[_Topic] = []
        self.parts: list[_Partition] = []
        self.shrunk: list[_Partition] = []
        self.by_broker: list[list[_Partition]] = [[] for _ in self.brokers]  # may hold stale entries
        self.reassigning: list[_Partition] = []
        self.topic_counter = 0
        self.snapshot_paths: list[str] = []
        self.upgraded = config.upgrade_to is None
        self.elr_enabled = False  # eligible.leader.replicas.version 1, written once the level allows it
        self.min_isr = MIN_ISR
        self.controllers: dict[int, bool] = {v: False for v in VOTERS}  # registered (KIP-919) or not
        per = config.snapshots + 1
        self.snapshot_marks = [config.records * (i + 1) // per for i in range(config.snapshots)]
        self._set_events()
        self._noop_batch = encode_records([rec.NOOP_VALUE])

    def _set_events(self) -> None:
        """The events drawn at the level in force (EVENTS, plus EVENTS_4X from MV_ELR)."""
        mix = EVENTS + EVENTS_4X if self.level >= MV_ELR else EVENTS
        self.events: list[Callable[[], bool]] = [getattr(self, f"_{name}") for name, _w in mix]
        self.weights = [w for _n, w in mix]

    # --- low level: ids, batches, commits

    def _uuid(self) -> uuid.UUID:
        while True:
            u = uuid.UUID(int=self.rng.getrandbits(128))
            if u.int > 1:  # not Uuid.ZERO_UUID nor Uuid.ONE_UUID (the metadata topic)
                return u

    def _write(self, count: int, records_bytes: bytes, *, control: bool = False) -> None:
        batch = encode_batch_raw(self.offset, self.epoch, self.time, count, records_bytes, control=control)
        self.segments.write(self.offset, batch)
        self.offset += count
        self.records += count
        self.batches += 1
        if self.progress is not None:
            self.progress.advance(count)

    def _batch(self, values: list[bytes], types: list[int]) -> None:
        self.by_type.update(types)
        self.data_records += len(values)
        self._write(len(values), encode_records(values))

    def _commit(self, values: list[bytes], types: list[int]) -> None:
        """Write one operation's records: one batch, or a Begin..End transaction over batches
        of at most MAX_RECORDS_PER_BATCH when it is larger (MV >= 3.6-IV1; before, one batch)."""
        self.time += self.rng.randint(1, 200)
        if len(values) <= MAX_RECORDS_PER_BATCH or self.level < MV_TRANSACTIONS:
            self._batch(values, types)
            return
        begin = self._value(rec.BEGIN_TRANSACTION_RECORD, 0, name=f"{types[-1]}-{self.offset}")
        end = self._value(rec.END_TRANSACTION_RECORD, 0)
        values = [begin, *values, end]
        types = [rec.BEGIN_TRANSACTION_RECORD, *types, rec.END_TRANSACTION_RECORD]
        for i in range(0, len(values), MAX_RECORDS_PER_BATCH):
            self._batch(values[i : i + MAX_RECORDS_PER_BATCH], types[i : i + MAX_RECORDS_PER_BATCH])

    def _value(self, type_id: int, version: int, **fields: Any) -> bytes:
        cls = record_class(type_id)
        assert cls is not None
        return encode_value(type_id, version, cls(**fields))

    def _noop(self) -> None:
        self.time += NOOP_INTERVAL_MS
        self.by_type[rec.NO_OP_RECORD] += 1
        self.noops += 1
        self._write(1, self._noop_batch)

    def _leader_change(self) -> None:
        self.epoch += 1
        self.leader_index = (self.leader_index + 1) % len(VOTERS)
        cls = control_class(rec.LEADER_CHANGE)
        assert cls is not None
        voters = tuple(cls.Voter(voter_id=v) for v in VOTERS)
        msg = cls(version=0, leader_id=VOTERS[self.leader_index], voters=voters, granting_voters=voters[:2])
        self.epoch_starts.append((self.epoch, self.offset))
        self.time += self.rng.randint(1, 2000)
        self._write(
            1, encode_records([encode_control(msg)], [struct.pack(">hh", 0, rec.LEADER_CHANGE)]), control=True
        )

    # --- the records of the model

    def _dirs(self, replicas: Sequence[int]) -> list[bytes]:
        if self.partition_version < 1:
            return []  # no directories before 3.7-IV2
        return [self.brokers[r - 1].log_dir_bytes for r in replicas]

    def _partition_record(self, p: _Partition) -> bytes:
        return partition_value(
            self.partition_version, p.index, p.topic.id_bytes, p.replicas, p.isr, p.removing, p.adding,
            p.leader, p.leader_epoch, p.partition_epoch, self._dirs(p.replicas), p.elr, p.last_known_elr,
        )  # fmt: skip

    def _min_isr(self, p: _Partition) -> int:
        """ReplicationControlManager.getTopicEffectiveMinIsr: the topic's (else the cluster's)
        min.insync.replicas, at most the replication factor of partition 0."""
        configured = self.min_isr if p.topic.min_isr is None else p.topic.min_isr
        return min(configured, len(p.topic.partitions[0].replicas))

    def _target_elr(self, p: _Partition, target_isr: list[int], unclean: int | None) -> tuple[list[int], list[int]]:
        """PartitionChangeBuilder.maybePopulateTargetElr: at or above min ISR both are empty; below
        it the ELR is the old ELR and ISR minus the target ISR (and an uncleanly shut down replica),
        the last known ELR the rest of those and the old one. Java's HashSet of small ints
        iterates in ascending order, so the lists are sorted."""
        if len(target_isr) >= self._min_isr(p):
            return [], []
        candidates = set(p.elr) | set(p.isr)
        elr = sorted(r for r in candidates if r not in target_isr and r != unclean)
        known = sorted(r for r in candidates | set(p.last_known_elr) if r not in target_isr and r not in elr)
        return elr, known

    def _change(
        self,
        p: _Partition,
        *,
        isr: list[int] | None = None,
        leader: int = -2,
        replicas: list[int] | None = None,
        removing: list[int] | None = None,
        adding: list[int] | None = None,
        elr: list[int] | None = None,
        last_known_elr: list[int] | None = None,
        unclean: int | None = None,
    ) -> bytes:
        """Apply a change to the model the way PartitionRegistration.merge does; its record. With
        ELR enabled the ELR and last known ELR are the builder's (``_target_elr``) unless given (an
        election from the ELR), and written when they differ (maybeUpdateRecordElr)."""
        new_elr = new_known = None
        if self.elr_enabled:
            if elr is None or last_known_elr is None:
                elr, last_known_elr = self._target_elr(p, p.isr if isr is None else isr, unclean)
            new_elr = elr if elr != p.elr else None
            new_known = last_known_elr if last_known_elr != p.last_known_elr else None
            p.elr, p.last_known_elr = elr, last_known_elr
        if isr is not None:
            p.isr = isr
        if leader != -2:
            p.leader = leader
            p.leader_epoch += 1
        if replicas is not None:
            p.replicas = replicas
        if removing is not None:
            p.removing = removing
        if adding is not None:
            p.adding = adding
        p.partition_epoch += 1
        dirs = self._dirs(replicas) if replicas is not None and self.partition_version >= 1 else None
        return partition_change_value(
            self.partition_version, p.index, p.topic.id_bytes, isr=isr, leader=leader, replicas=replicas,
            removing=removing, adding=adding, directories=dirs, elr=new_elr, last_known_elr=new_known,
        )  # fmt: skip

    def _register(self, b: _Broker) -> None:
        """RegisterBrokerRecord; a new incarnation of a known broker first has its partition changes
        of an unclean shutdown (ClusterControlManager.registerBroker), with ELR enabled."""
        values = self._unclean_shutdown(b) if self.elr_enabled and b.epoch >= 0 else []
        in_txn = len(values) + 1 > MAX_RECORDS_PER_BATCH and self.level >= MV_TRANSACTIONS  # a Begin goes first
        b.epoch = self.offset + len(values) + in_txn
        b.incarnation = self._uuid()
        b.fenced = True
        b.shutting_down = False
        b.cordoned = None  # a v4 registration carries none (KAFKA-20441: the heartbeat sends them)
        types = [rec.PARTITION_CHANGE_RECORD] * len(values) + [rec.REGISTER_BROKER_RECORD]
        self._commit([*values, self._registration(b)], types)

    def _unclean_shutdown(self, b: _Broker) -> list[bytes]:
        """ReplicationControlManager.handleBrokerUncleanShutdown: b leaves the ISRs, then the ELRs
        it is in (excluded from the ELR, so it joins the last known ELR); no leader changes."""
        values = []
        # By membership, not by replica (brokersToIsrs / brokersToElrs): an ELR may keep a replica a
        # completed reassignment removed (maybePopulateTargetElr does not filter by replicas).
        live = [p for p in self.parts if p.topic.live]
        for p in live:
            if b.id in p.isr:
                values.append(self._change(p, isr=[r for r in p.isr if r != b.id], unclean=b.id))
        for p in live:
            if b.id in p.elr:
                values.append(self._change(p, unclean=b.id))
        return values

    def _registration(self, b: _Broker) -> bytes:
        cls = record_class(rec.REGISTER_BROKER_RECORD)
        assert cls is not None
        endpoint = cls.BrokerEndpoint(name="PLAINTEXT", host=f"broker-{b.id}", port=9092, security_protocol=0)
        newest = max(MV_LATEST, self.level, self.c.upgrade_to or 0)  # a 4.x broker supports its level
        feature = cls.BrokerFeature(name="metadata.version", min_supported_version=1, max_supported_version=newest)
        data = cls(
            broker_id=b.id, is_migrating_zk_broker=False, incarnation_id=b.incarnation, broker_epoch=b.epoch,
            end_points=(endpoint,), features=(feature,), rack=RACKS[b.id % len(RACKS)], fenced=b.fenced,
            in_controlled_shutdown=b.shutting_down, log_dirs=(b.log_dir,) if self.register_version >= 3 else (),
            cordoned_log_dirs=None if b.cordoned is None or self.register_version < 4 else (b.log_dir,) * b.cordoned,
        )  # fmt: skip
        return encode_value(rec.REGISTER_BROKER_RECORD, self.register_version, data)

    def _broker_change(self, b: _Broker, *, fenced: int = 0, in_controlled_shutdown: int = 0) -> bytes:
        return self._value(
            rec.BROKER_REGISTRATION_CHANGE_RECORD, 1 if in_controlled_shutdown else 0, broker_id=b.id,
            broker_epoch=b.epoch, fenced=fenced, in_controlled_shutdown=in_controlled_shutdown,
        )  # fmt: skip

    def _alive(self) -> list[_Broker]:
        return [b for b in self.brokers if b.alive]

    def _new_topic(self, n_partitions: int) -> None:
        values: list[bytes] = []
        types: list[int] = []
        self._topic_records(n_partitions, values, types)
        self._commit(values, types)

    def _topic_records(self, n_partitions: int, values: list[bytes], types: list[int]) -> _Topic:
        """A new topic in the model; its TopicRecord and PartitionRecords appended to values."""
        alive = [b.id for b in self._alive()]
        rf = min(self.c.replication_factor, len(alive))
        topic = _Topic(f"topic-{self.topic_counter:05d}", self._uuid())
        self.topic_counter += 1
        start = self.rng.randrange(len(alive))
        values.append(self._value(rec.TOPIC_RECORD, 0, name=topic.name, topic_id=topic.id))
        for i in range(n_partitions):
            p = _Partition(topic, i, [alive[(start + i + k) % len(alive)] for k in range(rf)])
            topic.partitions.append(p)
            values.append(self._partition_record(p))
        self.topics.append(topic)
        self.parts.extend(topic.partitions)
        for p in topic.partitions:
            for r in p.replicas:
                self.by_broker[r - 1].append(p)
        types += [rec.TOPIC_RECORD] + [rec.PARTITION_RECORD] * n_partitions
        return topic

    # --- the run

    def run(self) -> None:
        self._leader_change()
        self.time += 200
        bootstrap = [
            self._value(rec.BEGIN_TRANSACTION_RECORD, 0, name="Bootstrap records"),
            self._value(rec.FEATURE_LEVEL_RECORD, 0, name="metadata.version", feature_level=self.level),
            *([self._elr_feature()] if self.level >= MV_ELR else []),
            self._value(rec.ZK_MIGRATION_STATE_RECORD, 0, zk_migration_state=0),
            self._value(rec.END_TRANSACTION_RECORD, 0),
        ]
        self._batch(bootstrap, [23, 12, *([12] if self.level >= MV_ELR else []), 21, 24])
        for b in self.brokers:
            self._register(b)
        for b in self.brokers:
            b.fenced = False
            self._commit([self._broker_change(b, fenced=-1)], [rec.BROKER_REGISTRATION_CHANGE_RECORD])
        base, extra = divmod(self.c.partitions, self.c.topics)
        for t in range(self.c.topics):
            self._new_topic(base + (1 if t < extra else 0))
            self._fill_noops()
        while self.records < self.c.records:
            if not self.upgraded and self.records >= self.c.records * 2 // 5:
                self._upgrade()
            elif self.snapshot_marks and self.records >= self.snapshot_marks[0]:
                self.snapshot_marks.pop(0)
                self._snapshot()
            else:
                while not self.rng.choices(self.events, self.weights)[0]():
                    pass
            self._fill_noops()
        self.segments.close()

    def _fill_noops(self) -> None:
        r = self.c.noop_ratio
        want = int(self.data_records * r / (1.0 - r)) if r else 0
        while self.noops < want and self.records < self.c.records:
            self._noop()

    def _upgrade(self) -> None:
        assert self.c.upgrade_to is not None
        self.level = self.c.upgrade_to
        self.upgraded = True
        self.register_version, self.partition_version = record_versions(self.level)
        self._set_events()
        value = self._value(rec.FEATURE_LEVEL_RECORD, 0, name="metadata.version", feature_level=self.level)
        self._commit([value], [rec.FEATURE_LEVEL_RECORD])
        if self.level >= MV_ELR and not self.elr_enabled:  # then the operator turns ELR on
            self._commit([self._elr_feature()], [rec.FEATURE_LEVEL_RECORD])

    def _elr_feature(self) -> bytes:
        """eligible.leader.replicas.version 1 (KIP-966): from here on the model keeps ELRs."""
        self.elr_enabled = True
        return self._value(rec.FEATURE_LEVEL_RECORD, 0, name=ELR_FEATURE, feature_level=1)

    # --- events: each returns False when it is not possible right now

    def _sample(self, k: int, accept: Callable[[_Partition], bool]) -> list[_Partition]:
        """Up to k distinct live partitions that accept, in draw order (bounded tries)."""
        if len(self.parts) > 64 and sum(1 for t in self.topics if not t.live) * 2 > len(self.topics):
            self._compact()
        out: list[_Partition] = []
        seen: set[tuple[str, int]] = set()
        for _ in range(4 * k + 8):
            p = self.parts[self.rng.randrange(len(self.parts))]
            key = (p.topic.name, p.index)
            if p.topic.live and key not in seen and accept(p):
                seen.add(key)
                out.append(p)
                if len(out) == k:
                    break
        return out

    def _compact(self) -> None:
        self.topics = [t for t in self.topics if t.live]
        self.parts = [p for p in self.parts if p.topic.live]

    def _batch_size(self) -> int:
        return self.rng.randint(1, max(1, min(500, len(self.parts) // 50)))

    def _is_alive(self, broker_id: int) -> bool:
        return self.brokers[broker_id - 1].alive

    def _leader_election(self) -> bool:
        """Preferred-leader / rebalance elections: a new leader from the live ISR."""

        def ok(p: _Partition) -> bool:
            return p.leader != -1 and any(r != p.leader and self._is_alive(r) for r in p.isr)

        chosen = self._sample(self._batch_size(), ok)
        if not chosen:
            return False
        values = []
        for p in chosen:
            candidates = [r for r in p.isr if r != p.leader and self._is_alive(r)]
            values.append(self._change(p, leader=self.rng.choice(candidates)))
        self._commit(values, [rec.PARTITION_CHANGE_RECORD] * len(values))
        return True

    def _isr_shrink(self) -> bool:
        """A follower falls out of the ISR (AlterPartition); before 3.6-IV0 the leader epoch is bumped."""
        chosen = self._sample(self._batch_size(), lambda p: p.leader != -1 and len(p.isr) >= 2)
        if not chosen:
            return False
        values = []
        for p in chosen:
            out = self.rng.choice([r for r in p.isr if r != p.leader])
            bump = p.leader if self.level < MV_NO_LEADER_BUMP_ON_SHRINK else -2
            values.append(self._change(p, isr=[r for r in p.isr if r != out], leader=bump))
            self.shrunk.append(p)
        self._commit(values, [rec.PARTITION_CHANGE_RECORD] * len(values))
        return True

    def _missing(self, p: _Partition) -> list[int]:
        return [r for r in p.replicas if r not in p.isr and self._is_alive(r)]

    def _isr_expand(self) -> bool:
        """Caught-up replicas rejoin the ISR (an offline partition is left to the election on unfence)."""
        values: list[bytes] = []
        k = self._batch_size()
        for _ in range(4 * k + 8):
            if not self.shrunk or len(values) >= k:
                break
            i = self.rng.randrange(len(self.shrunk))
            p = self.shrunk[i]
            missing = self._missing(p) if p.topic.live and p.leader != -1 else []
            if not missing:
                self.shrunk[i] = self.shrunk[-1]
                self.shrunk.pop()
                if p.topic.live and p.leader != -1 and len(p.isr) < len(p.replicas):
                    self.shrunk.append(p)  # its missing replicas are down: keep it for later
                continue
            values.append(self._change(p, isr=p.isr + [self.rng.choice(missing)]))
        if not values:
            return False
        self._commit(values, [rec.PARTITION_CHANGE_RECORD] * len(values))
        return True

    def _reassignment_start(self) -> bool:
        """Move one replica to another live broker: replicas = target + removed, adding, removing."""
        alive = [b.id for b in self._alive()]

        def ok(p: _Partition) -> bool:
            return p.target is None and p.leader != -1 and len(p.replicas) < len(alive)

        chosen = self._sample(max(1, self._batch_size() // 4), ok)
        if not chosen:
            return False
        values = []
        for p in chosen:
            new = self.rng.choice([b for b in alive if b not in p.replicas])
            out = self.rng.choice(p.replicas)
            target = [new if r == out else r for r in p.replicas]
            p.target = target
            values.append(self._change(p, replicas=target + [out], removing=[out], adding=[new]))
            self.reassigning.append(p)
            self.by_broker[new - 1].append(p)
        self._commit(values, [rec.PARTITION_CHANGE_RECORD] * len(values))
        return True

    def _reassignment_complete(self) -> bool:
        """The adding replicas caught up: replicas = target, ISR trimmed, leader re-chosen (epoch bump)."""
        values: list[bytes] = []
        keep: list[_Partition] = []
        for p in self.reassigning:
            if not p.topic.live or p.target is None:
                continue
            if len(values) >= 50 or not all(self._is_alive(r) for r in p.adding) or self.rng.random() < 0.3:
                keep.append(p)
                continue
            target = p.target
            isr = [r for r in p.isr if r in target] + [r for r in p.adding if r not in p.isr]
            live = [r for r in target if r in isr and self._is_alive(r)]
            leader = p.leader if p.leader in live else live[0]
            p.target = None
            values.append(self._change(p, isr=isr, leader=leader, replicas=target, removing=[], adding=[]))
        self.reassigning = keep
        if not values:
            return False
        self._commit(values, [rec.PARTITION_CHANGE_RECORD] * len(values))
        return True

    def _create_topic(self) -> bool:
        avg = max(1, self.c.partitions // self.c.topics)
        self._new_topic(self.rng.randint(1, 2 * avg))
        return True

    def _delete_topic(self) -> bool:
        live = [t for t in self.topics if t.live]
        if len(live) <= 1:
            return False
        topic = self.rng.choice(live)
        topic.live = False
        self._commit([self._value(rec.REMOVE_TOPIC_RECORD, 0, topic_id=topic.id)], [rec.REMOVE_TOPIC_RECORD])
        return True

    def _leave(self, b: _Broker) -> list[bytes]:
        """The PartitionChangeRecords that take broker b out: leadership to a live ISR member
        (or -1 when none is left, the ISR keeping b), b out of every ISR it is not the last of.
        With ELR enabled b leaves even the last ISR (PartitionChangeBuilder.build: "If ELR is
        enabled, the ISR is allowed to be empty"), joining the ELR below min ISR."""
        values = []
        for p in self._hosted(b):
            if not p.topic.live or b.id not in p.isr:
                continue
            rest = [r for r in p.isr if r != b.id]
            if p.leader == b.id:
                live = [r for r in rest if self._is_alive(r)]
                if live:
                    values.append(self._change(p, leader=live[0], isr=rest))
                    self.shrunk.append(p)
                elif self.elr_enabled:
                    values.append(self._change(p, leader=-1, isr=rest))
                else:
                    values.append(self._change(p, leader=-1))
            elif rest or self.elr_enabled:
                values.append(self._change(p, isr=rest))
                self.shrunk.append(p)
        return values

    def _hosted(self, b: _Broker) -> list[_Partition]:
        """The live partitions b is a replica of, in a deterministic order (and the index compacted)."""
        seen: set[tuple[str, int]] = set()
        out = []
        for p in self.by_broker[b.id - 1]:
            key = (p.topic.name, p.index)
            if p.topic.live and b.id in p.replicas and key not in seen:
                seen.add(key)
                out.append(p)
        self.by_broker[b.id - 1] = out
        return list(out)

    def _victim(self) -> _Broker | None:
        alive = self._alive()
        if len(alive) <= max(1, self.c.replication_factor):
            return None
        return self.rng.choice(alive)

    def _broker_failure(self) -> bool:
        """Heartbeats stop: the partition changes, then the fence (one operation)."""
        b = self._victim()
        if b is None:
            return False
        b.fenced = True
        values = self._leave(b)
        values.append(self._broker_change(b, fenced=1))
        self._commit(
            values,
            [rec.PARTITION_CHANGE_RECORD] * (len(values) - 1) + [rec.BROKER_REGISTRATION_CHANGE_RECORD],
        )
        return True

    def _controlled_shutdown(self) -> bool:
        """InControlledShutdown with the leadership moves, then (a later batch) the fence."""
        b = self._victim()
        if b is None:
            return False
        b.shutting_down = True
        values = [self._broker_change(b, in_controlled_shutdown=1), *self._leave(b)]
        self._commit(
            values,
            [rec.BROKER_REGISTRATION_CHANGE_RECORD] + [rec.PARTITION_CHANGE_RECORD] * (len(values) - 1),
        )
        b.fenced = True
        self._commit([self._broker_change(b, fenced=1)], [rec.BROKER_REGISTRATION_CHANGE_RECORD])
        return True

    def _broker_restart(self) -> bool:
        """A fenced broker comes back: after a controlled shutdown (or, half of the time, after a
        failure) it is a new process that registers again (new epoch and incarnation); otherwise
        it resumes heartbeats under its old epoch. Then it is unfenced together with the election
        of the partitions it was the last ISR member of."""
        down = [b for b in self.brokers if b.fenced]
        if not down:
            return False
        b = self.rng.choice(down)
        if b.shutting_down or self.rng.random() < 0.5:
            self._register(b)
        b.fenced = False
        values = [self._broker_change(b, fenced=-1)]
        for p in self._hosted(b):
            if p.topic.live and p.leader == -1 and b.id in p.isr:
                values.append(self._change(p, leader=b.id))
            elif p.topic.live and p.leader == -1 and not p.isr and b.id in p.elr:
                # an election from the ELR (PartitionChangeBuilder.tryElection): b becomes the ISR
                # and leaves the ELR; the last known ELR was populated before the election
                known = [r for r in p.last_known_elr if r not in p.elr]
                elr = [r for r in p.elr if r != b.id]
                values.append(self._change(p, leader=b.id, isr=[b.id], elr=elr, last_known_elr=known))
                self.shrunk.append(p)
            elif p.topic.live and b.id in p.replicas and b.id not in p.isr:
                self.shrunk.append(p)
        self._commit(
            values,
            [rec.BROKER_REGISTRATION_CHANGE_RECORD] + [rec.PARTITION_CHANGE_RECORD] * (len(values) - 1),
        )
        return True

    def _kraft_leader_change(self) -> bool:
        self._leader_change()
        return True

    def _clear_elr(self) -> bool:
        """min.insync.replicas changed for one live topic or (1 in 8) the cluster: its ConfigRecord,
        then the ClearElrRecord ConfigurationControlManager adds for it (the topic's name, or
        empty for the cluster), in one batch; the model's ELRs are cleared as TopicDelta does."""
        live = [t for t in self.topics if t.live]
        value = str(self.rng.choice(MIN_ISR_VALUES))
        if self.rng.random() < 0.125 or not live:
            config = self._value(rec.CONFIG_RECORD, 0, resource_type=CONFIG_BROKER, resource_name="",
                                 name="min.insync.replicas", value=value)
            self.min_isr, name, cleared = int(value), "", live
        else:
            topic = self.rng.choice(live)
            config = self._value(rec.CONFIG_RECORD, 0, resource_type=CONFIG_TOPIC, resource_name=topic.name,
                                 name="min.insync.replicas", value=value)
            topic.min_isr, name, cleared = int(value), topic.name, [topic]
        self._clear_model_elr(cleared)
        clear = self._value(rec.CLEAR_ELR_RECORD, 0, topic_name=name)
        self._commit([config, clear], [rec.CONFIG_RECORD, rec.CLEAR_ELR_RECORD])
        return True

    def _clear_model_elr(self, topics: list[_Topic]) -> None:
        """TopicDelta.maybeClearElr: a partition with an ELR or last known ELR loses both, and its
        partition epoch moves by one."""
        for t in topics:
            for p in t.partitions:
                if p.elr or p.last_known_elr:
                    p.elr, p.last_known_elr = [], []
                    p.partition_epoch += 1

    def _elr_churn(self) -> bool:
        """One delta (a metadata transaction) that removes a live topic, creates another, shrinks
        some of the new topic's ISRs below min ISR (an ELR), then changes the cluster's
        min.insync.replicas (ConfigRecord, ClearElrRecord("")): the 4.1+ ClearElrRecord rules
        (a topic removed in the delta stays removed, the created topic is cleared) in one delta."""
        live = [t for t in self.topics if t.live]
        alive = [b.id for b in self._alive()]
        if len(live) <= 1 or not self.elr_enabled or len(alive) < 2:
            return False
        gone = self.rng.choice(live)
        gone.live = False
        values = [self._value(rec.REMOVE_TOPIC_RECORD, 0, topic_id=gone.id)]
        types = [rec.REMOVE_TOPIC_RECORD]
        topic = self._topic_records(self.rng.randint(1, 4), values, types)
        for p in topic.partitions:
            if len(p.isr) >= 2 and self.rng.random() < 0.7:
                out = self.rng.choice([r for r in p.isr if r != p.leader])
                values.append(self._change(p, isr=[r for r in p.isr if r != out]))
                types.append(rec.PARTITION_CHANGE_RECORD)
                self.shrunk.append(p)
        value = str(self.rng.choice(MIN_ISR_VALUES))
        values.append(self._value(rec.CONFIG_RECORD, 0, resource_type=CONFIG_BROKER, resource_name="",
                                  name="min.insync.replicas", value=value))
        values.append(self._value(rec.CLEAR_ELR_RECORD, 0, topic_name=""))
        types += [rec.CONFIG_RECORD, rec.CLEAR_ELR_RECORD]
        self.min_isr = int(value)
        self._clear_model_elr([t for t in self.topics if t.live])
        begin = self._value(rec.BEGIN_TRANSACTION_RECORD, 0, name=f"elr-churn-{self.offset}")
        end = self._value(rec.END_TRANSACTION_RECORD, 0)
        self.time += self.rng.randint(1, 200)
        self._batch([begin, *values, end], [rec.BEGIN_TRANSACTION_RECORD, *types, rec.END_TRANSACTION_RECORD])
        return True

    def _cordon(self) -> bool:
        """KIP-1066 (4.3-IV0 on): a live broker cordons its log dir, or uncordons it, which its
        heartbeat reports and the controller records as a BrokerRegistrationChangeRecord v3."""
        alive = self._alive()
        if self.level < MV_CORDONED or not alive:
            return False
        b = self.rng.choice(alive)
        b.cordoned = not b.cordoned
        value = self._value(
            rec.BROKER_REGISTRATION_CHANGE_RECORD, 3, broker_id=b.id, broker_epoch=b.epoch,
            cordoned_log_dirs=(b.log_dir,) if b.cordoned else (),
        )  # fmt: skip
        self._commit([value], [rec.BROKER_REGISTRATION_CHANGE_RECORD])
        return True

    def _controller_registration(self) -> bool:
        """A controller (a voter) registers (KIP-919), with a new incarnation."""
        cls: Any = record_class(rec.REGISTER_CONTROLLER_RECORD)
        voter = self.rng.choice(VOTERS)
        self.controllers[voter] = True
        endpoint = cls.ControllerEndpoint(name="CONTROLLER", host=f"controller-{voter}", port=9093,
                                          security_protocol=0)
        feature = cls.ControllerFeature(name="metadata.version", min_supported_version=1,
                                        max_supported_version=max(self.level, self.c.upgrade_to or 0))
        value = self._value(rec.REGISTER_CONTROLLER_RECORD, 0, controller_id=voter, incarnation_id=self._uuid(),
                            zk_migration_ready=False, end_points=(endpoint,), features=(feature,))
        self._commit([value], [rec.REGISTER_CONTROLLER_RECORD])
        return True

    def _controller_unregistration(self) -> bool:
        """A registered controller is unregistered (KIP-1312, 4.4-IV2 on)."""
        registered = [v for v in VOTERS if self.controllers[v]]
        if self.level < MV_NEWEST or not registered:
            return False
        voter = self.rng.choice(registered)
        self.controllers[voter] = False
        value = self._value(rec.UNREGISTER_CONTROLLER_RECORD, 0, controller_id=voter)
        self._commit([value], [rec.UNREGISTER_CONTROLLER_RECORD])
        return True

    # --- snapshots and the side files

    def _snapshot(self) -> None:
        """<end>-<epoch>.checkpoint of the state now: header, the image as records, footer."""
        header_cls, footer_cls = control_class(rec.SNAPSHOT_HEADER), control_class(rec.SNAPSHOT_FOOTER)
        assert header_cls is not None and footer_cls is not None
        values = [
            self._value(rec.FEATURE_LEVEL_RECORD, 0, name="metadata.version", feature_level=self.level),
            self._value(rec.ZK_MIGRATION_STATE_RECORD, 0, zk_migration_state=0),
        ]
        values += [self._registration(b) for b in self.brokers]
        for t in self.topics:
            if t.live:
                values.append(self._value(rec.TOPIC_RECORD, 0, name=t.name, topic_id=t.id))
                values += [self._partition_record(p) for p in t.partitions]
        path = os.path.join(self.directory, f"{self.offset:020d}-{self.epoch:010d}.checkpoint")
        with open(path, "wb", buffering=4 << 20) as f:
            head = encode_control(header_cls(version=0, last_contained_log_timestamp=self.time))
            key = struct.pack(">hh", 0, rec.SNAPSHOT_HEADER)
            f.write(
                encode_batch_raw(0, self.epoch, self.time, 1, encode_records([head], [key]), control=True)
            )
            offset = 1
            for i in range(0, len(values), MAX_RECORDS_PER_BATCH):
                chunk = values[i : i + MAX_RECORDS_PER_BATCH]
                f.write(
                    encode_batch_raw(
                        offset, self.epoch, self.time, len(chunk), encode_records(chunk), control=False
                    )
                )
                offset += len(chunk)
            foot = encode_records(
                [encode_control(footer_cls(version=0))], [struct.pack(">hh", 0, rec.SNAPSHOT_FOOTER)]
            )
            f.write(encode_batch_raw(offset, self.epoch, self.time, 1, foot, control=True))
        self.snapshot_paths.append(path)

    def write_side_files(self) -> None:
        """partition.metadata, leader-epoch-checkpoint and quorum-state, as a real directory has."""
        with open(os.path.join(self.directory, "partition.metadata"), "w") as f:
            f.write("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
        with open(os.path.join(self.directory, "leader-epoch-checkpoint"), "w") as f:
            f.write(f"0\n{len(self.epoch_starts)}\n" + "".join(f"{e} {o}\n" for e, o in self.epoch_starts))
        state = {
            "clusterId": "",
            "leaderId": VOTERS[self.leader_index],
            "leaderEpoch": self.epoch,
            "votedId": -1,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": v} for v in VOTERS],
            "data_version": 0,
        }
        with open(os.path.join(self.directory, "quorum-state"), "w") as f:
            f.write(json.dumps(state, separators=(",", ":")))


def metadata_dir(out_dir: str | os.PathLike[str]) -> str:
    """OUT_DIR itself when it is named __cluster_metadata-0, else OUT_DIR/__cluster_metadata-0."""
    out = os.fspath(out_dir)
    return (
        out
        if os.path.basename(os.path.normpath(out)) == "__cluster_metadata-0"
        else os.path.join(out, "__cluster_metadata-0")
    )


def generate_log(
    out_dir: str | os.PathLike[str],
    *,
    brokers: int = 5,
    topics: int = 10,
    partitions: int = 100,
    records: int = 10_000,
    seed: int = 0,
    jsonl: str | os.PathLike[str] | None = None,
    progress: Any = None,
    **options: Any,
) -> GenerateResult:
    """Write a synthetic __cluster_metadata-0 directory (see the module rules) and, with jsonl,
    the same history as JSON lines. options: the other GeneratorConfig fields. The directory
    must not hold .log files already. progress: a ctrlbatch.common.Progress (advanced per record)."""
    config = GeneratorConfig(
        brokers=brokers, topics=topics, partitions=partitions, records=records, seed=seed, **options
    )
    config.check()
    directory = metadata_dir(out_dir)
    os.makedirs(directory, exist_ok=True)
    if any(n.endswith((".log", ".checkpoint")) for n in os.listdir(directory)):
        raise ValueError(f"out_dir: {directory} already holds a log; choose an empty directory")
    gen = _Generator(config, directory, progress)
    try:
        gen.run()
    finally:
        gen.segments.close()
    gen.write_side_files()
    if jsonl is not None:
        from ..log.jsonl import write_jsonl
        from ..log.sources import open_history

        with open(jsonl, "w", encoding="utf-8", buffering=4 << 20) as fh:
            write_jsonl(open_history(directory).batches(), fh)
    return GenerateResult(
        directory,
        tuple(gen.segments.paths),
        tuple(gen.snapshot_paths),
        gen.records,
        gen.batches,
        gen.offset - 1,
        {rec.RECORD_TYPE_NAMES.get(t, str(t)): n for t, n in sorted(gen.by_type.items())},
    )
