"""The reading loop's fast paths give exactly what its reference paths give: the fast record
decoders (record_classes.fast_decoder) against decode_value for every record type and version of
the catalog, whole batches decoded with and without them (values, and errors for corrupt bytes),
the trusted constructors against the classes' own __init__, and group_deltas' fast path against
the loader's walk of every batch."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator
from typing import Any

import attrs
import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.generate.writer import encode_batch
from ctrlbatch.replay.image.deltas import Delta, _Loader, _make_delta, _merge, group_deltas
from ctrlbatch.replay.image.image import MetadataReplayError
from ctrlbatch.replay.log import segments
from ctrlbatch.replay.log.errors import ReplayInputError
from ctrlbatch.replay.log.records import (
    ABORT_TRANSACTION_RECORD,
    BEGIN_TRANSACTION_RECORD,
    CONFIG_RECORD,
    END_TRANSACTION_RECORD,
    LEADER_CHANGE,
    NOOP_VALUE,
    ControlRecord,
    LogBatch,
    MetadataRecord,
    make_batch,
    make_control,
    make_record,
)
from ctrlbatch.replay.log.segments import decode_batch
from ctrlbatch.replay.schema.metadata_classes import RECORD_CLASSES, LeaderChangeMessage
from ctrlbatch.replay.schema.record_classes import (
    control_class,
    decode_value,
    encode_value,
    fast_decoder,
    record_class,
)
from ctrlbatch.testing.messages import all_versions, messages

VERSIONS = all_versions(list(RECORD_CLASSES.values()))


def same(a: Any, b: Any) -> bool:
    """Equal, and equal down to every object's type and state (a UUID's is_safe included)."""
    return bool(a == b) and _alike(a, b)


def _alike(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, uuid.UUID):
        return a.int == b.int and a.is_safe is b.is_safe
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_alike(x, y) for x, y in zip(a, b, strict=True))
    if attrs.has(type(a)):
        return all(_alike(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))
    return bool(a == b)


@pytest.mark.parametrize(("cls", "version"), VERSIONS, ids=[f"{c.__name__}-v{v}" for c, v in VERSIONS])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fast_decoder_of_every_record_type_and_version_decodes_what_decode_value_does(
    cls: Any, version: int, data: st.DataObject
) -> None:
    obj = data.draw(messages(cls, version))
    pad = data.draw(st.binary(max_size=3))
    buf = pad + encode_value(cls.API_KEY, version, obj)
    type_id, v, reference = decode_value(buf, len(pad), len(buf))
    assert (type_id, v) == (cls.API_KEY, version)
    fast = fast_decoder(cls.API_KEY, version)
    assert fast is not None
    decoded, stop = fast(buf, len(pad) + 3)  # every type id and version fits a one-byte frame
    assert stop == len(buf)
    assert same(decoded, reference)


def test_fast_decoder_knows_only_the_catalog() -> None:
    assert fast_decoder(6, 0) is None  # no metadata record has type 6
    cls = record_class(CONFIG_RECORD)
    assert fast_decoder(CONFIG_RECORD, cls.MAX_VERSION + 1) is None


def test_the_fast_uuid_is_the_uuid_of_its_bytes() -> None:
    from ctrlbatch.replay.schema.record_classes import _uuid_of

    for u in (uuid.uuid4(), uuid.UUID(int=1), uuid.UUID(int=(1 << 128) - 1)):
        made = _uuid_of(u.bytes)
        assert same(made, uuid.UUID(bytes=u.bytes)) and hash(made) == hash(u) and str(made) == str(u)
        assert made.is_safe is uuid.SafeUUID.unknown


# ------------------------------------------------------------------ whole batches


@st.composite
def record_values(draw: st.DrawFn) -> bytes:
    """A framed record value of any type and version, or a NoOp."""
    if draw(st.integers(0, 3)) == 0:
        return NOOP_VALUE
    cls, version = draw(st.sampled_from(VERSIONS))
    assert cls.API_KEY is not None
    return encode_value(cls.API_KEY, version, draw(messages(cls, version, max_size=2)))


@st.composite
def batch_bytes(draw: st.DrawFn) -> bytes:
    values = draw(st.lists(record_values(), min_size=1, max_size=4))
    return encode_batch(draw(st.integers(0, 1 << 40)), draw(st.integers(0, 50)), draw(st.integers(0, 1 << 41)), values)


def generic(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """fn(...) with the fast record decoders off: every record through decode_value."""
    saved_table, saved_maker = dict(segments._FAST), vars(segments)["fast_decoder"]
    segments._FAST.clear()
    setattr(segments, "fast_decoder", lambda _t, _v: None)  # noqa: B010 (a module's global, replaced a while)
    try:
        return fn(*args, **kwargs)
    finally:
        setattr(segments, "fast_decoder", saved_maker)  # noqa: B010
        segments._FAST.update(saved_table)


def outcome(buf: bytes) -> Any:
    try:
        return decode_batch(buf, source="b.log", position=100)
    except ReplayInputError as e:
        return ("error", str(e))


@settings(max_examples=200, deadline=None)
@given(batch_bytes())
def test_a_batch_decodes_the_same_with_and_without_the_fast_decoders(buf: bytes) -> None:
    outcome(buf)  # the first decoding fills the fast table for this batch's (type, version)s
    fast, reference = outcome(buf), generic(outcome, buf)
    assert not isinstance(reference, tuple), reference
    assert same(fast, reference)
    assert len(fast.records) + fast.noops == fast.last_offset - fast.base_offset + 1  # every offset a record
    assert all(r.type != 20 or r.data.unknown_tagged_fields for r in fast.records)  # NoOps counted, not kept


def _with_crc(buf: bytearray) -> bytes:
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


@settings(max_examples=300, deadline=None)
@given(batch_bytes(), st.data())
def test_corrupt_records_give_the_same_error_or_value_with_and_without_the_fast_decoders(
    buf: bytes, data: st.DataObject
) -> None:
    mutated = bytearray(buf)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(61, len(buf) - 1))  # the records, after the batch header
        mutated[i] = data.draw(st.integers(0, 255))
    bad = _with_crc(mutated)  # a sound CRC: the records themselves are checked
    outcome(buf)
    fast, reference = outcome(bad), generic(outcome, bad)
    assert same(fast, reference)


def test_a_noop_batch_is_counted_and_keeps_no_record() -> None:
    buf = encode_batch(7, 1, 99, [NOOP_VALUE])
    batch = decode_batch(buf, source="b.log", position=0)
    assert same(batch, LogBatch(7, 7, 1, 99, False, (), (), 1, "b.log", 0, len(buf)))
    assert same(batch, generic(decode_batch, buf, source="b.log", position=0))


# ------------------------------------------------------------------ trusted constructors


@given(st.integers(), st.integers(), st.integers(), st.integers(), st.booleans(), st.integers(0, 5), st.text(max_size=5),
       st.integers())
def test_the_trusted_constructors_build_what_the_classes_build(
    a: int, b: int, c: int, d: int, flag: bool, n: int, source: str, size: int
) -> None:
    data = record_class(CONFIG_RECORD)(name=source)
    records = tuple(MetadataRecord(a + i, CONFIG_RECORD, 0, data) for i in range(n))
    assert same(make_record(a, CONFIG_RECORD, 0, data), MetadataRecord(a, CONFIG_RECORD, 0, data))
    assert same(make_control(b, LEADER_CHANGE, data), ControlRecord(b, LEADER_CHANGE, data))
    assert same(make_batch(a, b, c, d, flag, records, (), n, source, size, size),
                LogBatch(a, b, c, d, flag, records, (), n, source, size, size))
    assert same(_make_delta(a, b, c, records, None if flag else n, n), Delta(a, b, c, records, None if flag else n, n))


# ------------------------------------------------------------------ group_deltas


BEGIN, END, ABORT, DATA = BEGIN_TRANSACTION_RECORD, END_TRANSACTION_RECORD, ABORT_TRANSACTION_RECORD, CONFIG_RECORD


def reference_deltas(batches: list[LogBatch], coalesce: int) -> Iterator[Delta]:
    """group_deltas without its fast path: the loader walks every batch."""
    loader = _Loader()
    group: list[Delta] = []
    for batch in batches:
        if batch.control:
            for c in batch.control_records:
                if isinstance(c.data, LeaderChangeMessage):
                    loader.leader_id = c.data.leader_id
            continue
        for delta in loader.load(batch):
            group.append(delta)
            if len(group) == coalesce:
                yield _merge(group) if coalesce > 1 else group[0]
                group = []
    if group:
        yield _merge(group)


@st.composite
def histories(draw: st.DrawFn) -> list[LogBatch]:
    """Data batches of DATA records, transaction markers (well placed or not) and NoOps, with
    LeaderChange control batches between them."""
    out: list[LogBatch] = []
    offset = 0
    for _ in range(draw(st.integers(0, 10))):
        if draw(st.integers(0, 5)) == 0:
            data = control_class(LEADER_CHANGE)(leader_id=draw(st.integers(0, 3)))
            out.append(LogBatch(offset, offset, 1, offset, True, (), (ControlRecord(offset, LEADER_CHANGE, data),), 0, "t", offset))
            offset += 1
            continue
        kinds = draw(st.lists(st.sampled_from([DATA, DATA, DATA, BEGIN, END, ABORT, -1]), max_size=4))
        records = tuple(
            MetadataRecord(offset + i, k, 0, record_class(k)()) for i, k in enumerate(kinds) if k >= 0
        )
        noops = sum(1 for k in kinds if k < 0) or (0 if kinds else 1)
        last = offset + max(len(kinds), 1) - 1
        out.append(LogBatch(offset, last, 1, 1000 + offset, False, records, (), noops, "t", offset))
        offset = last + 1
    return out


def deltas_or_error(it: Iterator[Delta]) -> Any:
    got: list[Delta] = []
    try:
        for d in it:
            got.append(d)
    except MetadataReplayError as e:
        return got, str(e)
    return got, None


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(1, 3))
def test_group_deltas_fast_path_publishes_what_the_loader_publishes(batches: list[LogBatch], coalesce: int) -> None:
    fast = deltas_or_error(group_deltas(batches, coalesce))
    reference = deltas_or_error(reference_deltas(batches, coalesce))
    assert same(fast, reference)


def test_the_uuid_cache_shares_equal_ids_and_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from ctrlbatch.replay.schema import record_classes

    monkeypatch.setattr(record_classes, "UUID_CACHE", 4)
    monkeypatch.setattr(record_classes, "_UUIDS", {})
    ids = [uuid.UUID(int=i).bytes for i in range(10)]
    made = [record_classes._uuid_of(b) for b in ids]
    assert [u.int for u in made] == list(range(10))
    assert len(record_classes._UUIDS) <= 4
    assert record_classes._uuid_of(ids[-1]) is made[-1]  # a recent id: the same object
