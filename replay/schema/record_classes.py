"""The record value codec of the metadata and control records, over their generated classes.

Rules: the classes are metadata_classes.py, generated from metadata_catalog by metadata_classgen
(one frozen slotted attrs class per schema, attributes in snake_case, structs nested in their
record class, e.g. `RegisterBrokerRecord.BrokerEndpoint`, so pickle finds them by reference in
any process); a test fails when that file is stale. A metadata record value is framed: unsigned
varint frame version (1), type, version, body; a control record value is its schema body at
version 0 (ControlRecordUtils).

The reading loop's fast path (``fast_decoder``): the body decoder of one (type, version) as
requests/gen_decoder.py generates it, called directly instead of through decode_value, the
class's decode_prefix and codec.py's translating wrapper (three calls, about 0.6 us a record), and
compiled with two helpers of its own. A UUID maker that sets the two slots of uuid.UUID (int,
is_safe = unknown, as UUID(bytes=...) leaves them) instead of running UUID.__init__'s checks
(0.5 us against 1.4 us on the project machine), and hands out one object for the same 16 bytes
while they are among the last 16,384 ids made (a dict lookup, 0.05 us): a topic's id is in each of
its partitions' records, and equal UUIDs are interchangeable (immutable, compared by value). And
wire.read_uvarint with its one-byte case first, for the tags and sizes of tagged fields. The
fast decoder does not translate
its failures: a caller that sees one decodes the value again with decode_value, whose error it
reports (tests/replay/test_reading_fast.py: both give the same values, and the same errors).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from ctrlbatch.requests.errors import DecodeError
from ctrlbatch.requests.gen_decoder import decoder_source
from ctrlbatch.requests.model import Message
from ctrlbatch.requests.wire import read_uvarint, uvarint

from .metadata_classes import CONTROL_CLASSES, RECORD_CLASSES

FRAME_VERSION = 1
CONTROL_VERSION = 0


# Looked up by a type id known only at run time, a class has no static type beyond Message; these
# two return Any so that callers may build records by keyword. Code that knows which record it
# handles imports the class from metadata_classes and is checked field by field.


def record_class(type_id: int) -> Any:
    """The generated class of metadata record type type_id (a Message subclass), or None if unknown."""
    return RECORD_CLASSES.get(type_id)


def control_class(type_id: int) -> Any:
    """The generated class of control record type type_id (a Message subclass), or None if unknown."""
    return CONTROL_CLASSES.get(type_id)


def _read_uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 28:
            raise DecodeError("bad unsigned varint in the record frame", offset=pos)
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def decode_value(buf: bytes, pos: int, end: int) -> tuple[int, int, Message]:
    """Decode the framed metadata record in buf[pos:end]: (type, version, data).

    Raises DecodeError (with a reason) on a wrong frame version, an unknown type or version,
    a body that does not parse, or trailing bytes after the body."""
    if end - pos >= 3 and buf[pos] == FRAME_VERSION and buf[pos + 1] < 0x80 and buf[pos + 2] < 0x80:
        type_id, version, p = buf[pos + 1], buf[pos + 2], pos + 3  # the common one-byte frame
    else:
        frame, p = _read_uvarint(buf, pos, end)
        if frame != FRAME_VERSION:
            raise DecodeError(
                f"unsupported record frame version {frame} (expected {FRAME_VERSION})", offset=pos
            )
        type_id, p = _read_uvarint(buf, p, end)
        version, p = _read_uvarint(buf, p, end)
    cls = RECORD_CLASSES.get(type_id)
    if cls is None:
        raise DecodeError(f"unknown metadata record type {type_id}", offset=pos)
    if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
        raise DecodeError(
            f"unknown version {version} of {cls.MESSAGE.name} (type {type_id}; versions {cls.MESSAGE.valid_versions})",
            offset=pos,
        )
    data, stop = cls.decode_prefix(buf, version, p)
    if stop != end:
        raise DecodeError(
            f"{cls.MESSAGE.name} v{version}: the body is {stop - p} bytes but the value holds {end - p}",
            offset=p,
        )
    return type_id, version, data


def encode_value(type_id: int, version: int, data: Message) -> bytes:
    """The framed value of a metadata record (the inverse of decode_value)."""
    return uvarint(FRAME_VERSION) + uvarint(type_id) + uvarint(version) + data.encode(version)


def decode_control(type_id: int, buf: bytes, pos: int, end: int) -> Message:
    """Decode a control record value (schema body at version 0); DecodeError if unknown or bad."""
    cls = CONTROL_CLASSES.get(type_id)
    if cls is None:
        raise DecodeError(f"unknown control record type {type_id}", offset=pos)
    data, stop = cls.decode_prefix(buf, CONTROL_VERSION, pos)
    if stop != end:
        raise DecodeError(
            f"{cls.MESSAGE.name}: the body is {stop - pos} bytes but the value holds {end - pos}", offset=pos
        )
    return data


def encode_control(data: Message) -> bytes:
    return data.encode(CONTROL_VERSION)


_new = object.__new__
_set = object.__setattr__
_from_bytes = int.from_bytes
_UNKNOWN = uuid.SafeUUID.unknown
_UUID = uuid.UUID


_UUIDS: dict[bytes, uuid.UUID] = {}
UUID_CACHE = 1 << 14


def _uuid_of(bytes: bytes) -> uuid.UUID:  # noqa: A002 (the keyword the generated code passes)
    """uuid.UUID(bytes=bytes) for 16 bytes, without UUID.__init__'s checks, one object for the
    recent uses of the same id (the module rules)."""
    u = _UUIDS.get(bytes)
    if u is None:
        if len(_UUIDS) >= UUID_CACHE:
            _UUIDS.clear()
        u = _UUIDS[bytes] = _new(_UUID)
        _set(u, "int", _from_bytes(bytes, "big"))
        _set(u, "is_safe", _UNKNOWN)
    return u


def ruv_short_first(buf: bytes, pos: int) -> tuple[int, int]:
    """wire.read_uvarint with its one-byte case first (every tag and size of a record's tagged fields)."""
    if pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
    return read_uvarint(buf, pos)


FastDecoder = Callable[[bytes, int], tuple[Message, int]]


def struct_classes(cls: Any) -> dict[str, type]:
    """A record class and every struct class it holds, by name: what a generated decoder builds."""
    classes: dict[str, type] = {cls.MESSAGE.name: cls}
    todo = list(cls.STRUCT_TYPES.values())
    while todo:
        c = todo.pop()
        if c.__name__ not in classes:
            classes[c.__name__] = c
            todo.extend(c.STRUCT_TYPES.values())
    return classes


def fast_decoder(type_id: int, version: int) -> FastDecoder | None:
    """The untranslated body decoder of metadata record type_id at version, (buf, pos) ->
    (data, end), or None for an unknown type or version (see the module rules)."""
    cls = RECORD_CLASSES.get(type_id)
    if cls is None or not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
        return None
    src = decoder_source(cls.MESSAGE, version, struct_classes(cls))
    fn: FastDecoder = src.compile(f"<ctrlbatch fast decode {cls.MESSAGE.name} v{version}>", {"_UUID": _uuid_of, "_ruv": ruv_short_first})["decode"]
    return fn
