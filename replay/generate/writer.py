"""Writing record batch v2, the inverse of segments.py: for the generator and for tests.

Rules: the bytes are what Kafka's raft client writes (kafka-metadata-log-format.md section 4):
no compression, CreateTime, producer id/epoch/sequence -1, one record per value with
timestampDelta 0 (every record of a batch gets the batch time), consecutive offsetDeltas, no
headers; CRC-32C over attributes..end. Data records have a null key; control records the key
int16 version 0 + int16 type. Values are given already encoded (record_classes.encode_value).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import crc32c

ATTR_CONTROL = 0x20
_TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordCount
_HEAD = struct.Struct(">qiib")  # baseOffset, batchLength, partitionLeaderEpoch, magic
_CRC = struct.Struct(">I")
_CONTROL_KEY = struct.Struct(">hh")


def _zigzag(n: int) -> bytes:
    v = (n << 1) ^ (n >> 63)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


_ZZ = [_zigzag(i) for i in range(1 << 14)]


def zigzag(n: int) -> bytes:
    """Signed zig-zag varint bytes (cached for 0 <= n < 16384)."""
    return _ZZ[n] if 0 <= n < 16384 else _zigzag(n)


_NULL_KEY = zigzag(-1)


def encode_records(values: Sequence[bytes], keys: Sequence[bytes | None] | None = None) -> bytes:
    """The records section: value i at offsetDelta i, key i (None = null key) if keys are given."""
    parts = []
    zz = _ZZ
    for i, value in enumerate(values):
        key = None if keys is None else keys[i]
        key_part = _NULL_KEY if key is None else zigzag(len(key)) + key
        # attributes 0, timestampDelta 0, offsetDelta i, key, value, 0 headers
        body = (
            b"\x00\x00"
            + (zz[i] if i < 16384 else _zigzag(i))
            + key_part
            + zigzag(len(value))
            + value
            + b"\x00"
        )
        parts.append(zigzag(len(body)))
        parts.append(body)
    return b"".join(parts)


def encode_batch(
    base_offset: int,
    epoch: int,
    timestamp: int,
    values: Sequence[bytes],
    *,
    control_types: Sequence[int] | None = None,
) -> bytes:
    """One batch holding values at base_offset.. . control_types makes it a control batch whose
    record i has the key (version 0, control_types[i])."""
    if not values:
        raise ValueError("values: a batch holds at least one record")
    keys = None if control_types is None else [_CONTROL_KEY.pack(0, t) for t in control_types]
    recs = encode_records(values, keys)
    return encode_batch_raw(
        base_offset, epoch, timestamp, len(values), recs, control=control_types is not None
    )


def encode_batch_raw(
    base_offset: int, epoch: int, timestamp: int, count: int, records: bytes, *, control: bool
) -> bytes:
    """A batch from an already encoded records section of count records."""
    tail = (
        _TAIL.pack(ATTR_CONTROL if control else 0, count - 1, timestamp, timestamp, -1, -1, -1, count)
        + records
    )
    return _HEAD.pack(base_offset, len(tail) + 9, epoch, 2) + _CRC.pack(crc32c.crc32c(tail)) + tail
