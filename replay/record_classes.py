"""The decoded-value classes of the metadata and control records, and the record value codec.

Rules: classes are generated from metadata_catalog by the project's codec (gen_classes) on first
use, one frozen slotted attrs class per schema, attributes in snake_case. They live in this
module's namespace under the schema name (structs as attributes of their message class, e.g.
`RegisterBrokerRecord.BrokerEndpoint`), so pickle finds them by reference in any process.
A metadata record value is framed: unsigned varint frame version (1), type, version, body; a
control record value is its schema body at version 0 (ControlRecordUtils).
"""

from __future__ import annotations

from typing import Any

from ctrlbatch.requests.errors import DecodeError
from ctrlbatch.requests.gen_classes import load_message_classes
from ctrlbatch.requests.model import Message
from ctrlbatch.requests.spec import MessageSpec
from ctrlbatch.requests.wire import uvarint

from . import metadata_catalog

FRAME_VERSION = 1
CONTROL_VERSION = 0

_SPECS_BY_TYPE: dict[int, MessageSpec] = {
    s.api_key: s for s in metadata_catalog.RECORDS if s.api_key is not None
}
_SPECS_BY_NAME: dict[str, MessageSpec] = {
    s.name: s for s in (*metadata_catalog.RECORDS, *(c[1] for c in metadata_catalog.CONTROL_RECORDS.values()))
}
_CONTROL_SPECS: dict[int, MessageSpec] = {i: s for i, (_n, s) in metadata_catalog.CONTROL_RECORDS.items()}
_built: dict[str, type[Message]] = {}


def _build(spec: MessageSpec) -> type[Message]:
    cls = _built.get(spec.name)
    if cls is None:
        classes = load_message_classes(spec)
        cls = classes.pop(spec.name)
        for name, sub in [(spec.name, cls), *classes.items()]:
            sub.__module__ = __name__
            sub.__qualname__ = name if sub is cls else f"{spec.name}.{name}"
            if sub is not cls:
                setattr(cls, name, sub)
        _built[spec.name] = cls
    return cls


def __getattr__(name: str) -> Any:
    """Module attributes are the generated classes by schema name (this is how pickle finds them)."""
    spec = _SPECS_BY_NAME.get(name)
    if spec is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _build(spec)


def record_class(type_id: int) -> Any:
    """The generated class (a Message subclass) of metadata record type type_id, or None if unknown."""
    spec = _SPECS_BY_TYPE.get(type_id)
    return None if spec is None else _build(spec)


def control_class(type_id: int) -> Any:
    """The generated class (a Message subclass) of control record type type_id, or None if unknown."""
    spec = _CONTROL_SPECS.get(type_id)
    return None if spec is None else _build(spec)


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


def decode_value(buf: bytes, pos: int, end: int) -> tuple[int, int, Any]:
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
    cls = record_class(type_id)
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


def decode_control(type_id: int, buf: bytes, pos: int, end: int) -> Any:
    """Decode a control record value (schema body at version 0); DecodeError if unknown or bad."""
    cls = control_class(type_id)
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
