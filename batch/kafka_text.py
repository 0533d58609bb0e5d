"""Kafka's text forms, for error messages and state-change log lines that read like Kafka's.

Rules: generated message classes print as Kafka's generated toString (every field in schema
order, camelCase names, strings quoted with ', arrays as [a, b], uuids in Kafka's base64 form);
Scala collections as HashMap(k -> v, ...) and HashSet(a, b). Our iteration order is insertion
order (Kafka's is hash order, which no caller relies on).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from ctrlbatch.context import kafka_uuid_string
from ctrlbatch.requests.model import Struct
from ctrlbatch.requests.spec import camel_case


def value_text(value: Any) -> str:
    if isinstance(value, Struct):
        return struct_text(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, uuid.UUID):
        return kafka_uuid_string(value)
    if isinstance(value, bytes | bytearray):
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    return str(value)


def struct_text(obj: Struct) -> str:
    fields = ", ".join(f"{camel_case(f.name)}={value_text(getattr(obj, f.attr))}" for f in obj.SPEC.fields)
    return f"{obj.SPEC.name}({fields})"


def scala_map(m: Mapping[Any, Any]) -> str:
    return "HashMap(" + ", ".join(f"{_scala(k)} -> {_scala(v)}" for k, v in m.items()) + ")"


def scala_set(s: Iterable[Any]) -> str:
    return "HashSet(" + ", ".join(_scala(x) for x in s) + ")"


def _scala(v: Any) -> str:
    if isinstance(v, Mapping):
        return scala_map(v)
    if isinstance(v, set | frozenset):
        return scala_set(v)
    if isinstance(v, Struct):
        return struct_text(v)
    return str(v)
