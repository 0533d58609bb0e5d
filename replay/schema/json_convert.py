"""Decoded records to and from Kafka's JSON form (the generated <Record>JsonConverter).

Rules (kafka-metadata-log-format.md section 1.3): keys are the camelCase field names in schema
order; fields absent from the version are left out; tagged fields are written only when they
differ from their default, and read as the default when absent; other fields are mandatory; uuid
is URL-safe base64 without padding (22 characters), bytes standard base64, structs objects.
Keys Kafka does not know are ignored, as Kafka's reader does. Problems raise JsonRecordError
naming the field path and why; callers add the file and line. Every number must fit its schema
type's range. Every string is at most MAX_STRING_BYTES of UTF-8, as in Kafka: a record string's
length is written as an int16 (or a compact length checked against 0x7fff), so the generated
readers refuse a longer one ("string field X had invalid length N", MessageDataGenerator) and
the writers refuse to serialize it: no record on disk holds one. An error quotes at most
MAX_QUOTED characters of the value, so a message stays short whatever the input holds.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import Any

from ctrlbatch.requests.spec import FieldSpec, StructSpec, camel_case

_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}


MAX_STRING_BYTES = 0x7FFF  # Kafka's bound on any string of a record (module rules)
MAX_QUOTED = 60  # characters of a bad value an error message shows


class JsonRecordError(ValueError):
    """A JSON record that does not fit its schema: path to the field and reason."""


def quoted(value: object) -> str:
    """repr(value), cut to MAX_QUOTED characters with the full length said: error messages quote
    user input, and a 60 MB string must not become a 60 MB message. Long ints are cut without
    calling repr (Python refuses to print ints beyond 4,300 digits)."""
    if type(value) is int and value.bit_length() > 256:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    if isinstance(value, (str, list, dict)) and len(value) > MAX_QUOTED:
        kind = {str: "characters", list: "items", dict: "keys"}[type(value)]
        head = repr(value[:MAX_QUOTED]) if isinstance(value, (str, list)) else "{...}"
        return f"{head[:MAX_QUOTED]}... ({len(value):,} {kind})"
    text = repr(value)
    return text if len(text) <= MAX_QUOTED else f"{text[:MAX_QUOTED]}..."


def uuid_to_json(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def uuid_from_json(text: object, path: str) -> uuid.UUID:
    if not isinstance(text, str) or len(text) != 22:
        raise JsonRecordError(f"{path}: expected a 22-character base64 uuid, got {quoted(text)}")
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
    except (binascii.Error, ValueError):
        raise JsonRecordError(f"{path}: {text!r} is not a base64 uuid") from None


def _scalar_to_json(t: str, v: Any) -> Any:
    if t == "uuid":
        return uuid_to_json(v)
    if t in ("bytes", "records"):
        return None if v is None else base64.b64encode(v).decode("ascii")
    return v


def _written(f: FieldSpec, version: int, value: Any) -> bool:
    if version not in f.versions:
        return False
    if version in f.tagged_versions:
        if f.is_array or f.struct is not None:
            return value is not None and (value != () or f.default == "null")
        return bool(value != f.default_value())
    return True


def to_json(obj: Any, version: int, spec: StructSpec | None = None) -> dict[str, Any]:
    """The JSON object Kafka writes for a decoded record (or struct) at version."""
    out: dict[str, Any] = {}
    for f in (spec or obj.SPEC).fields:
        value = getattr(obj, f.attr)
        if not _written(f, version, value):
            continue
        key = camel_case(f.name)
        if value is None:
            out[key] = None
        elif f.struct is not None:
            out[key] = (
                [to_json(x, version, f.struct) for x in value]
                if f.is_array
                else to_json(value, version, f.struct)
            )
        elif f.is_array:
            t = f.element_type
            out[key] = [_scalar_to_json(t, x) for x in value] if t in ("uuid", "bytes") else list(value)
        else:
            out[key] = _scalar_to_json(f.type, value)
    return out


def _scalar_from_json(t: str, v: Any, path: str) -> Any:
    rng = _INT_RANGES.get(t)
    if rng is not None:
        if type(v) is not int or not rng[0] <= v <= rng[1]:
            raise JsonRecordError(f"{path}: expected an {t} ({rng[0]}..{rng[1]}), got {quoted(v)}")
        return v
    if t == "bool":
        if type(v) is not bool:
            raise JsonRecordError(f"{path}: expected true or false, got {quoted(v)}")
        return v
    if t == "string":
        if not isinstance(v, str):
            raise JsonRecordError(f"{path}: expected a string, got {quoted(v)}")
        if len(v) > MAX_STRING_BYTES // 4 and (n := len(v.encode("utf-8", "surrogatepass"))) > MAX_STRING_BYTES:
            raise JsonRecordError(
                f"{path}: a string of {n:,} bytes; Kafka allows at most {MAX_STRING_BYTES:,} bytes in a "
                "record string (an int16 length), so no record holds it"
            )
        return v
    if t == "uuid":
        return uuid_from_json(v, path)
    if t == "float64":
        if type(v) not in (int, float):
            raise JsonRecordError(f"{path}: expected a number, got {quoted(v)}")
        return float(v)
    if t in ("bytes", "records"):
        if not isinstance(v, str):
            raise JsonRecordError(f"{path}: expected base64 text, got {quoted(v)}")
        try:
            return base64.b64decode(v, validate=True)
        except binascii.Error:
            raise JsonRecordError(f"{path}: {v[:40]!r} is not base64") from None
    raise JsonRecordError(f"{path}: unsupported schema type {t}")


def from_json(cls: Any, data: Any, version: int, path: str) -> Any:
    """Build the decoded-record object of cls (or a struct class) from Kafka's JSON at version."""
    if not isinstance(data, dict):
        raise JsonRecordError(f"{path}: expected a JSON object, got {type(data).__name__}")
    kwargs: dict[str, Any] = {}
    for f in cls.SPEC.fields:
        if version not in f.versions:
            continue
        key = camel_case(f.name)
        at = f"{path}.{key}"
        if key not in data:
            if version in f.tagged_versions:
                continue  # absent tagged field: its default
            raise JsonRecordError(f"{at}: missing, and it is mandatory in version {version}")
        v = data[key]
        if v is None:
            if version not in f.nullable_versions:
                raise JsonRecordError(f"{at}: null, but it is not nullable in version {version}")
            kwargs[f.attr] = None
            continue
        if f.is_array:
            if not isinstance(v, list):
                raise JsonRecordError(f"{at}: expected an array, got {quoted(v)}")
            if f.struct is not None:
                sub = cls.STRUCT_TYPES[f.attr]
                kwargs[f.attr] = tuple(from_json(sub, x, version, f"{at}[{i}]") for i, x in enumerate(v))
            else:
                t = f.element_type
                kwargs[f.attr] = tuple(_scalar_from_json(t, x, f"{at}[{i}]") for i, x in enumerate(v))
        elif f.struct is not None:
            kwargs[f.attr] = from_json(cls.STRUCT_TYPES[f.attr], v, version, at)
        else:
            kwargs[f.attr] = _scalar_from_json(f.type, v, at)
    return cls(**kwargs)
