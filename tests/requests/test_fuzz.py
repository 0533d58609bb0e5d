"""Bad input never escapes as anything but DecodeError, and never costs more than the input.

Three generators of bad bytes, for every shipped (message, version):
- arbitrary bytes (hypothesis);
- valid encodings of drawn objects, then flipped / inserted / deleted / overwritten / truncated
  bytes, including huge and negative length prefixes written over any position (hypothesis);
- a deterministic sweep: a fully populated object's encoding with every "dangerous" byte pattern
  (huge, negative, over-long varint, zero, ...) written over and inserted at every offset.

Each outcome must be an object of the class (which re-encodes and decodes to itself) or a
DecodeError that names the message and version and points at a byte inside the data.
"""

from __future__ import annotations

import time
import tracemalloc
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.requests import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    DecodeError,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from ctrlbatch.requests import messages as msgs
from ctrlbatch.testing import all_versions, messages

CLASSES = [getattr(msgs, n) for n in msgs.__all__]
CASES = all_versions(CLASSES)
IDS = [f"{c.__name__}-v{v}" for c, v in CASES]

# Byte patterns that make length prefixes, counts, tags and sizes huge, negative or malformed.
PATTERNS: tuple[bytes, ...] = (
    b"\x7f\xff\xff\xff",  # int32 2**31-1
    b"\xff\xff\xff\xff",  # int32 -1 (null)
    b"\x80\x00\x00\x00",  # int32 -2**31
    b"\xff\xfe",  # int16 -2
    b"\x7f\xff",  # int16 0x7fff
    b"\x80\x00",  # int16 -32768
    b"\xff\xff\xff\xff\x07",  # uvarint 2**31-1
    b"\xff\xff\xff\xff\x0f",  # uvarint 2**32-1 (a Java -1)
    b"\x80\x80\x80\x80\x80",  # uvarint whose 5th byte still continues
    b"\x81\x80\x02",  # uvarint 0x8001: a compact string of 0x8000 bytes
    b"\x00",
    b"\x01",
    b"\x7f",
    b"\x80",
    b"\xff",
)


def check_decode(cls: Any, version: int, data: bytes) -> Any:
    """Decode; allow only a well-formed DecodeError or an object that round-trips."""
    try:
        obj = cls.decode(data, version)
    except DecodeError as e:
        name = cls.MESSAGE.name
        assert e.message == name, (data.hex(), repr(e))
        assert e.version == version, (data.hex(), repr(e))
        assert f"{name} v{version}" in str(e), (data.hex(), str(e))
        assert type(e.offset) is int, (data.hex(), repr(e), e.offset)
        assert 0 <= e.offset <= len(data), (data.hex(), str(e))
        assert isinstance(e.reason, str) and e.reason, (data.hex(), repr(e))
        assert "internal decoder error" not in e.reason, (data.hex(), str(e))
        # Nothing chains to the failed attempt, whose traceback would keep its partial objects alive.
        assert e.__context__ is None and e.__cause__ is None, (data.hex(), repr(e.__context__))
        return None
    # Anything else (TypeError, IndexError, struct.error, MemoryError, ...) fails the test by escaping.
    assert isinstance(obj, cls)
    again = obj.encode(version)
    assert cls.decode(again, version) == obj, data.hex()
    return obj


# --- (a) arbitrary bytes


@pytest.mark.parametrize(("cls", "version"), CASES, ids=IDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes(cls: Any, version: int, data: bytes) -> None:
    check_decode(cls, version, data)


# --- (b) mutated valid encodings


@st.composite
def _mutate(draw: st.DrawFn, raw: bytes) -> bytes:
    buf = bytearray(raw)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "overwrite", "insert_pattern"]))
        if not buf:
            op = "insert" if op in ("flip", "delete", "truncate", "overwrite") else op
        if op == "flip":
            p = draw(st.integers(0, len(buf) - 1))
            buf[p] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            buf.insert(draw(st.integers(0, len(buf))), draw(st.integers(0, 255)))
        elif op == "delete":
            del buf[draw(st.integers(0, len(buf) - 1))]
        elif op == "truncate":
            del buf[draw(st.integers(0, len(buf) - 1)) :]
        elif op == "overwrite":
            p = draw(st.integers(0, len(buf) - 1))
            pat = draw(st.sampled_from(PATTERNS))
            buf[p : p + len(pat)] = pat
        else:
            p = draw(st.integers(0, len(buf)))
            buf[p:p] = draw(st.sampled_from(PATTERNS))
    return bytes(buf)


@pytest.mark.parametrize(("cls", "version"), CASES, ids=IDS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_valid_encodings(cls: Any, version: int, data: st.DataObject) -> None:
    obj = data.draw(messages(cls, version, max_size=2), label="object")
    raw = obj.encode(version)
    bad = data.draw(_mutate(raw), label="mutated")
    check_decode(cls, version, bad)


# --- (c) deterministic sweep of dangerous patterns over a fully populated object

_INT = {"int8": 7, "int16": 300, "uint16": 65000, "int32": 70000, "uint32": 3_000_000_000, "int64": 1 << 40}


def filled(cls: Any, version: int, flexible: bool) -> Any:
    """An object with every field present at `version` set to a non-default value, every array
    holding one element, and (in flexible versions) an unknown tag in every struct."""
    kwargs: dict[str, Any] = {}
    for i, f in enumerate(cls.SPEC.fields):
        if version not in f.versions:
            continue
        if f.struct is not None:
            sub = cls.STRUCT_TYPES[f.attr]
            one = filled(sub, version, flexible)
            kwargs[f.attr] = (one,) if f.is_array else one
            continue
        e = f.element_type
        if e in _INT:
            v: Any = _INT[e] + i
        elif e == "bool":
            v = True
        elif e == "uuid":
            v = uuid.UUID(int=0x0102030405060708090A0B0C0D0E0F10 + i)
        elif e == "float64":
            v = 1.5
        elif e == "string":
            v = f"s{i}é"
        else:
            v = b"\x01\x02"
        kwargs[f.attr] = (v,) if f.is_array else v
    if flexible:
        kwargs["unknown_tagged_fields"] = ((250, b"\x05\x06"),)
    return cls(**kwargs)


@pytest.mark.parametrize(("cls", "version"), CASES, ids=IDS)
def test_pattern_sweep(cls: Any, version: int) -> None:
    obj = filled(cls, version, cls.is_flexible(version))
    raw = obj.encode(version)
    assert cls.decode(raw, version) == obj
    for p in range(len(raw) + 1):
        for pat in PATTERNS:
            check_decode(cls, version, raw[:p] + pat + raw[p + len(pat) :])
            check_decode(cls, version, raw[:p] + pat + raw[p:])


# --- memory and time: a 10-byte input announcing 2**31-1 elements must not allocate them

HUGE_COLLECTIONS = [
    # LeaderAndIsrResponse v0: ErrorCode int16, then the PartitionErrors count, then 4 bytes.
    pytest.param(LeaderAndIsrResponse, 0, b"\x00\x00" + b"\x7f\xff\xff\xff" + b"\x00" * 4, id="classic-struct-array"),
    # v4 (flexible): compact count 2**31-1 (N+1), 3 bytes left.
    pytest.param(LeaderAndIsrResponse, 4, b"\x00\x00" + b"\xff\xff\xff\xff\x07" + b"\x00" * 3, id="compact-struct-array"),
    # LeaderAndIsrRequest v0: ControllerId, ControllerEpoch, UngroupedPartitionStates count 1, then
    # TopicName "", PartitionIndex..LeaderEpoch and an Isr ([]int32) count of 2**31-1.
    pytest.param(
        LeaderAndIsrRequest, 0,
        b"\x00" * 8 + b"\x00\x00\x00\x01" + b"\x00\x00" + b"\x00" * 16 + b"\x7f\xff\xff\xff" + b"\x00" * 4,
        id="classic-int32-array",
    ),
    # BrokerRegistrationRequest v2 LogDirs ([]uuid): everything empty up to it.
    pytest.param(
        BrokerRegistrationRequest, 2,
        b"\x00" * 4 + b"\x01" + b"\x00" * 16 + b"\x01\x01" + b"\x00" + b"\x00" + b"\xff\xff\xff\xff\x07" + b"\x00" * 4,
        id="compact-uuid-array",
    ),
    # UpdateMetadataResponse v6: ErrorCode, then a tagged section announcing 2**31-1 fields.
    pytest.param(
        msgs.UpdateMetadataResponse, 6, b"\x00\x00" + b"\xff\xff\xff\xff\x07" + b"\x00" * 3, id="tag-count"
    ),
    # BrokerHeartbeatRequest v1: fixed part, then one tagged field 0 (OfflineLogDirs) of huge size.
    pytest.param(
        BrokerHeartbeatRequest, 1,
        b"\x00" * 22 + b"\x01\x00" + b"\xff\xff\xff\xff\x07" + b"\x02" + b"\x00" * 16,
        id="tag-size",
    ),
    # StopReplicaRequest v2 Topics[0].Name: a compact string of 2**31-2 bytes.
    pytest.param(
        StopReplicaRequest, 2, b"\x00" * 16 + b"\x00" + b"\x02" + b"\xff\xff\xff\xff\x07" + b"\x00" * 3,
        id="compact-string",
    ),
]


@pytest.mark.parametrize(("cls", "version", "data"), HUGE_COLLECTIONS)
def test_huge_counts_fail_fast_without_allocating(cls: Any, version: int, data: bytes) -> None:
    # Warm up: compile the codecs and run one failing decode so that only the decode itself is measured.
    cls.decode(cls().encode(version), version)
    with pytest.raises(DecodeError):
        cls.decode(b"", version)
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        with pytest.raises(DecodeError) as info:
            cls.decode(data, version)
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024, f"decoding {len(data)} bytes allocated {peak} bytes at peak"
    assert elapsed < 0.5
    e = info.value
    assert e.message == cls.MESSAGE.name and e.version == version
    assert 0 <= e.offset <= len(data)


def test_ten_bytes_announcing_max_int_elements() -> None:
    data = b"\x00\x00" + b"\x7f\xff\xff\xff" + b"\x00" * 4
    assert len(data) == 10
    with pytest.raises(DecodeError) as info:
        LeaderAndIsrResponse.decode(data, 0)
    assert info.value.reason == (
        "Tried to allocate a collection of size 2147483647, but there are only 4 bytes remaining."
    )
    assert info.value.field == "LeaderAndIsrResponse.PartitionErrors"
    assert info.value.offset == 6


def test_many_tiny_elements_stay_linear() -> None:
    """A count equal to the bytes remaining is allowed; decoding it takes time linear in the input."""
    n = 20000
    # LeaderAndIsrResponse v4: ErrorCode, then n PartitionErrors of 8 bytes each
    # (TopicName "" as 01, PartitionIndex int32, ErrorCode int16, an empty tagged section).
    elem = b"\x01" + b"\x00\x00\x00\x00" + b"\x00\x00" + b"\x00"
    count = n + 1
    prefix = bytearray()
    while count >= 0x80:
        prefix.append((count & 0x7F) | 0x80)
        count >>= 7
    prefix.append(count)
    data = b"\x00\x00" + bytes(prefix) + elem * n + b"\x00"
    t0 = time.perf_counter()
    obj = LeaderAndIsrResponse.decode(data, 4)
    assert len(obj.partition_errors) == n
    assert time.perf_counter() - t0 < 2.0


def test_shipped_classes_are_all_fuzzed() -> None:
    names = {c.__name__ for c, _ in CASES}
    assert {
        "LeaderAndIsrRequest", "LeaderAndIsrResponse", "StopReplicaRequest", "StopReplicaResponse",
        "UpdateMetadataRequest", "UpdateMetadataResponse", "BrokerRegistrationRequest",
        "BrokerRegistrationResponse", "BrokerHeartbeatRequest", "BrokerHeartbeatResponse", "RequestHeader",
        "ResponseHeader",
    } <= names
    assert UpdateMetadataRequest in CLASSES
