"""The record model of a metadata history: batches of data or control records, as decoded values.

Rules: values are frozen and slotted; a record's `data` is the object the project's codec decodes
from the record spec (record_classes.py): an instance of its type's generated class
(metadata_classes.py), typed here as their base class, Message. NoOp records are counted on
their batch, never kept.
Type ids and names are the specs' apiKey and Kafka's enum names (MetadataRecordType, as
kafka-dump-log prints them); the constants below are checked against the catalog by a test.

Trusted constructors (the reading loop's hot path): ``make_batch``, ``make_record`` and
``make_control`` (and deltas.py's for Delta) take every attribute positionally, in field order,
and build the same value as the class's __init__ without it. Why: a frozen attrs class stores each
slot through object.__setattr__; LogBatch(...) costs about 1.4 us, MetadataRecord(...) 0.6 us on
the project machine (CPython 3.11, quiet), and the reading loop makes one of each per batch of a
log whose batches mostly hold one record. ``trusted_constructor`` fills a twin class of the same
slot layout with plain stores, then switches the object's class (requests/model.py's trick, with
its checks: same slots in the same order, same size, no __dict__ or __weakref__, which is why these
classes have no weakref slot); tests/replay/test_reading_fast.py checks the values are equal.
A class made with attrs' ``cache_hash=True`` (image.PartitionRegistration) has one more slot
after its fields, attrs' cached hash, which the constructor sets to None as attrs' __init__ does
(tests/replay/test_engine_noop_moves.py checks the values and their hashes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import attrs

from ctrlbatch.requests.emit import compile_source
from ctrlbatch.requests.model import Message
from ctrlbatch.requests.specgen import const_name

from ..schema import metadata_catalog

# Metadata record type ids (the specs' apiKey; kafka-metadata-records.md section 2).
REGISTER_BROKER_RECORD = 0
UNREGISTER_BROKER_RECORD = 1
TOPIC_RECORD = 2
PARTITION_RECORD = 3
CONFIG_RECORD = 4
PARTITION_CHANGE_RECORD = 5
FENCE_BROKER_RECORD = 7
UNFENCE_BROKER_RECORD = 8
REMOVE_TOPIC_RECORD = 9
DELEGATION_TOKEN_RECORD = 10
USER_SCRAM_CREDENTIAL_RECORD = 11
FEATURE_LEVEL_RECORD = 12
CLIENT_QUOTA_RECORD = 14
PRODUCER_IDS_RECORD = 15
BROKER_REGISTRATION_CHANGE_RECORD = 17
ACCESS_CONTROL_ENTRY_RECORD = 18
REMOVE_ACCESS_CONTROL_ENTRY_RECORD = 19
NO_OP_RECORD = 20
ZK_MIGRATION_STATE_RECORD = 21
REMOVE_USER_SCRAM_CREDENTIAL_RECORD = 22
BEGIN_TRANSACTION_RECORD = 23
END_TRANSACTION_RECORD = 24
ABORT_TRANSACTION_RECORD = 25
REMOVE_DELEGATION_TOKEN_RECORD = 26
REGISTER_CONTROLLER_RECORD = 27
CLEAR_ELR_RECORD = 28  # Kafka 4.0-IV1 (level 23) on
UNREGISTER_CONTROLLER_RECORD = 29  # Kafka 4.4-IV2 (level 33) on

# Control record type ids (ControlRecordType.java; kafka-metadata-records.md section 8).
LEADER_CHANGE = 2
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4
KRAFT_VERSION = 5
KRAFT_VOTERS = 6

RECORD_TYPE_NAMES: dict[int, str] = {
    s.api_key: const_name(s.name) for s in metadata_catalog.RECORDS if s.api_key is not None
}
RECORD_TYPE_IDS: dict[str, int] = {n: i for i, n in RECORD_TYPE_NAMES.items()}
CONTROL_TYPE_NAMES: dict[int, str] = {i: n for i, (n, _s) in metadata_catalog.CONTROL_RECORDS.items()}
CONTROL_TYPE_IDS: dict[str, int] = {n: i for i, n in CONTROL_TYPE_NAMES.items()}

# The value of every NoOp record: frame version 1, type 20, version 0, no tagged fields.
NOOP_VALUE = b"\x01\x14\x00\x00"


def record_type_name(type_id: int) -> str:
    """20 -> "NO_OP_RECORD" (the name kafka-dump-log prints)."""
    name = RECORD_TYPE_NAMES.get(type_id)
    if name is None:
        raise ValueError(f"type_id: unknown metadata record type {type_id}")
    return name


def record_type_id(name: str) -> int:
    """ "PARTITION_CHANGE_RECORD" -> 5."""
    type_id = RECORD_TYPE_IDS.get(name)
    if type_id is None:
        raise ValueError(f"name: unknown metadata record type {name!r}")
    return type_id


def control_type_name(type_id: int) -> str:
    """2 -> "LEADER_CHANGE"."""
    name = CONTROL_TYPE_NAMES.get(type_id)
    if name is None:
        raise ValueError(f"type_id: unknown control record type {type_id}")
    return name


@attrs.frozen(repr=False, weakref_slot=False)
class MetadataRecord:
    """One data record. Inside a .checkpoint, offset is the snapshot's own offset (from 0).
    A reader in another record form (segments.RecordForm: the records table's JSON form) puts
    that form in data instead of the decoded object."""

    offset: int
    type: int
    version: int
    data: Message

    def __repr__(self) -> str:
        return f"MetadataRecord({self.offset}, {RECORD_TYPE_NAMES.get(self.type, self.type)} v{self.version})"


@attrs.frozen(repr=False, weakref_slot=False)
class ControlRecord:
    """One KRaft control record (LeaderChange, snapshot header/footer, KRaft version, voters)."""

    offset: int
    type: int
    data: Message

    def __repr__(self) -> str:
        return f"ControlRecord({self.offset}, {CONTROL_TYPE_NAMES.get(self.type, self.type)})"


@attrs.frozen(repr=False, weakref_slot=False)
class LogBatch:
    """One record batch. epoch is partitionLeaderEpoch (the KRaft leader epoch that wrote it),
    timestamp its maxTimestamp; position is the batch's byte offset in source (a line number
    for text inputs). Data batches carry records and count their NoOps; control batches carry
    control_records; size is the batch's length in its file, offset and length prefix included
    (0 when unknown: text inputs)."""

    base_offset: int
    last_offset: int
    epoch: int
    timestamp: int
    control: bool
    records: tuple[MetadataRecord, ...]
    control_records: tuple[ControlRecord, ...]
    noops: int
    source: str
    position: int
    size: int = attrs.field(default=0, eq=False)  # of the file form, not the batch: not compared

    def __repr__(self) -> str:
        kind = f"control {len(self.control_records)}" if self.control else f"{len(self.records)} records"
        noops = f" +{self.noops} noops" if self.noops else ""
        return f"LogBatch({self.base_offset}-{self.last_offset} e{self.epoch}, {kind}{noops})"


@attrs.define(slots=True, eq=False, repr=False, weakref_slot=False)
class NoOpRun:
    """Consecutive batches of NoOps only, outside a transaction, of one epoch and one file, held
    as one item where a stretch of the log is kept to be replayed (the Spark one pass:
    spark/ranges.py's ``_kept``). Each such batch is a delta of no records (deltas.py's fast path)
    that only moves the image's offset and epoch; the run stands for them all: it is read like a
    batch of no records ending at the last one's offset, with the last one's epoch and timestamp
    (``control`` and ``records`` as a batch's), so group_deltas makes its one delta, and
    EngineRun's ``counted_runs`` counts its ``count`` batches, bytes and NoOps and the
    ``count - 1`` other deltas. Half a log's batches are such; kept and replayed one by one they
    cost about 2 us each beside the replay (spark/ranges.py's rules give the figures)."""

    base_offset: int
    last_offset: int
    epoch: int
    timestamp: int
    source: str
    position: int
    count: int
    noops: int
    size: int  # the batches' bytes in their file (those of known size)
    unsized: int  # batches of unknown size (text inputs)

    control: ClassVar[bool] = False  # read as a data batch ...
    records: ClassVar[tuple[MetadataRecord, ...]] = ()  # ... of no records

    def __repr__(self) -> str:
        return f"NoOpRun({self.base_offset}-{self.last_offset} e{self.epoch}, {self.count} batches)"

    @classmethod
    def of(cls, batch: LogBatch) -> NoOpRun:
        return cls(batch.base_offset, batch.last_offset, batch.epoch, batch.timestamp, batch.source, batch.position,
                   1, batch.noops, batch.size, 0 if batch.size else 1)

    def add(self, batch: LogBatch) -> None:
        """The next batch of the run (the caller checked it goes on: NoOps only, same epoch and file)."""
        self.last_offset, self.timestamp = batch.last_offset, batch.timestamp
        self.count += 1
        self.noops += batch.noops
        if batch.size:
            self.size += batch.size
        else:
            self.unsized += 1


_CACHED_HASH = "_attrs_cached_hash"  # the slot attrs adds for cache_hash=True (None until __hash__ fills it)


def trusted_constructor(cls: Any) -> Callable[..., Any]:
    """make(attribute, ...) for a frozen slotted attrs class without a weakref slot: every
    attribute positionally in field order, no converters or validators (see the module rules)."""
    names = [a.name for a in attrs.fields(cls)]
    twin = type(f"_{cls.__name__}Filling", cls.__bases__, {"__slots__": cls.__slots__})
    cached = tuple(cls.__slots__) == (*names, _CACHED_HASH)  # attrs' cache_hash=True: the hash not made yet
    fits = (tuple(cls.__slots__) == tuple(names) or cached) and twin.__basicsize__ == cls.__basicsize__
    if not fits or cls.__dictoffset__ or cls.__weakrefoffset__:
        raise TypeError(f"{cls.__name__}: its slots {cls.__slots__} do not fit a trusted constructor")
    stores = "".join(f"    _obj_.{n} = {n}\n" for n in names) + (f"    _obj_.{_CACHED_HASH} = None\n" if cached else "")
    text = f"def make({', '.join(names)}):\n    _obj_ = _new(_Twin)\n{stores}    _obj_.__class__ = _Cls\n    return _obj_\n"
    where = f"<ctrlbatch make {cls.__module__}.{cls.__qualname__}>"
    made: Callable[..., Any] = compile_source(text, where, {"_new": object.__new__, "_Cls": cls, "_Twin": twin})["make"]
    return made


make_record: Callable[..., MetadataRecord] = trusted_constructor(MetadataRecord)
make_control: Callable[..., ControlRecord] = trusted_constructor(ControlRecord)
make_batch: Callable[..., LogBatch] = trusted_constructor(LogBatch)
