"""Run-time helpers that generated codecs call: varints, tagged sections, cached formats.

Rules: pure functions over bytes; no state but bounded format caches. Varints follow
ByteUtils.java: an unsigned varint is at most 5 bytes and is read as a Java int (values of
2**31 and above wrap negative, as in Kafka, so a length prefix there means null).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from .errors import DecodeError, EncodeError

# Kafka's limits and encodings, named once (the generators import them from here).
MAX_STRING_LENGTH = 0x7FFF  # a string is at most Short.MAX_VALUE bytes, compact or not (the generator's check)
VARINT_ONE_BYTE_MAX = 0x7F  # a varint byte holds 7 bits; a larger first byte has a continuation bit
NULL_INT32_LENGTH = b"\xff\xff\xff\xff"  # classic null array / bytes: length -1 as int32
NULL_INT16_LENGTH = b"\xff\xff"  # classic null string: length -1 as int16
NULL_COMPACT_LENGTH = b"\x00"  # compact null: length + 1 = 0
EMPTY_TAGGED_FIELDS = b"\x00"  # a tagged-field section with no fields: count 0
UV_TABLE_SIZE = 1 << 14  # values below 2**14 take at most two varint bytes: tabled, as the common case
_VARINT_MAX_BYTES = 5  # 32 bits in 7-bit groups (ByteUtils.readUnsignedVarint)
_PAYLOAD = 0x7F  # the 7 value bits of a varint byte
_CONTINUES = 0x80  # the bit saying another byte follows
_UINT32 = 0xFFFFFFFF  # varints carry 32 bits, read as a Java int


def _uvarint_slow(n: int) -> bytes:
    if n < 0:
        n &= _UINT32
    out = bytearray()
    while n >= _CONTINUES:
        out.append((n & _PAYLOAD) | _CONTINUES)
        n >>= 7
    out.append(n)
    return bytes(out)


# Varint bytes for small values, so the common case is a list index.
_UV_TABLE: list[bytes] = [_uvarint_slow(i) for i in range(UV_TABLE_SIZE)]


def uvarint(n: int) -> bytes:
    """Unsigned varint bytes of n (0 <= n < 2**32)."""
    if 0 <= n < UV_TABLE_SIZE:
        return _UV_TABLE[n]
    if n > _UINT32:
        raise EncodeError(f"unsigned varint value {n} does not fit in 32 bits")
    return _uvarint_slow(n)


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read an unsigned varint at pos: (value as a Java int, next position)."""
    value = 0
    shift = 0
    end = len(buf)
    for _ in range(_VARINT_MAX_BYTES):
        if pos >= end:
            raise DecodeError("the buffer ends inside a varint", offset=pos)
        b = buf[pos]
        pos += 1
        value |= (b & _PAYLOAD) << shift
        if not b & _CONTINUES:
            value &= _UINT32  # a 5th byte above 0x0f overflows silently, as in Java
            return (value - (1 << 32) if value >= 1 << 31 else value), pos
        shift += 7
    raise DecodeError(
        "Varint is too long, the most significant bit in the 5th byte is set, "
        f"converted value: {value & _UINT32:x}",
        offset=pos - 1,
    )


# struct.Struct caches: element format -> count -> Struct. Bounded by clearing.
_ARRAY_CACHE: dict[tuple[str, int], struct.Struct] = {}
_RUN_CACHE_LIMIT = 4096


def array_struct(elem: str, n: int) -> struct.Struct:
    """A Struct for n big-endian elements of format elem, cached."""
    key = (elem, n)
    s = _ARRAY_CACHE.get(key)
    if s is None:
        if len(_ARRAY_CACHE) > _RUN_CACHE_LIMIT:
            _ARRAY_CACHE.clear()
        s = _ARRAY_CACHE[key] = struct.Struct(f">{n}{elem}")
    return s


def run_struct_maker(template: tuple[object, ...]) -> Callable[[dict[object, struct.Struct], object], struct.Struct]:
    """For a fused run whose pieces are format text or ("a"|"s", elem, lenfmt) dynamic pieces,
    return make(cache, key) building the Struct for the run's dynamic lengths `key`."""

    def make(cache: dict[object, struct.Struct], key: object) -> struct.Struct:
        ks = key if isinstance(key, tuple) else (key,)
        parts = [">"]
        j = 0
        for piece in template:
            if isinstance(piece, str):
                parts.append(piece)
            else:
                assert isinstance(piece, tuple)
                elem, lenfmt = str(piece[1]), str(piece[2])
                n = ks[j]
                j += 1
                parts.append(str(lenfmt))
                parts.append(f"{n}{elem}")
        if len(cache) > _RUN_CACHE_LIMIT:
            cache.clear()
        s = cache[key] = struct.Struct("".join(parts))
        return s

    return make


def write_tags(ap: Callable[[bytes], object], known: list[tuple[int, bytes]], unknown: tuple[tuple[int, bytes], ...]) -> None:
    """Write a tagged-field section: known (already ascending) merged with raw unknown tags."""
    fields = known
    if unknown:
        fields = sorted(list(known) + [(int(t), bytes(v)) for t, v in unknown])
        for a, b in zip(fields, fields[1:], strict=False):
            if a[0] == b[0]:
                raise EncodeError(f"tagged field {a[0]} is set twice")
    ap(uvarint(len(fields)))
    for tag, value in fields:
        if tag < 0:
            raise EncodeError(f"tag {tag} is negative")
        ap(uvarint(tag))
        ap(uvarint(len(value)))
        ap(value)


def uvarint_size(n: int) -> int:
    """The bytes of uvarint(n) (ByteUtils.sizeOfUnsignedVarint): 7 value bits per byte; a
    negative n is written as its 32-bit pattern, so it takes 5."""
    if 0 <= n < _CONTINUES:
        return 1
    if n < 0:
        n &= _UINT32
    elif n > _UINT32:
        raise EncodeError(f"unsigned varint value {n} does not fit in 32 bits")
    return (n.bit_length() + 6) // 7


def tags_size(known: list[tuple[int, int]], unknown: tuple[tuple[int, bytes], ...]) -> int:
    """The bytes write_tags writes for known (tag, value size) pairs and raw unknown tags, with
    its refusals (a tag set twice, a negative tag)."""
    fields = known
    if unknown:
        fields = sorted(list(known) + [(int(t), len(bytes(v))) for t, v in unknown])
        for a, b in zip(fields, fields[1:], strict=False):
            if a[0] == b[0]:
                raise EncodeError(f"tagged field {a[0]} is set twice")
    total = uvarint_size(len(fields))
    for tag, size in fields:
        if tag < 0:
            raise EncodeError(f"tag {tag} is negative")
        total += uvarint_size(tag) + uvarint_size(size) + size
    return total
