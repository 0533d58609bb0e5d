"""The records table's ``data`` column: json_convert.to_json, compiled per record class and version.

Rules of this module:
- ``to_json_text(obj, version)`` is exactly ``json.dumps(to_json(obj, version), separators=(",",
  ":"))`` (json_convert's rules: camelCase keys in schema order, fields absent from the version
  left out, tagged fields only when they differ from their default, uuid as URL-safe base64,
  bytes as base64, structs as objects), and tests/replay/test_tables_rows.py checks it on every
  record of the sample and the generated logs.
- Why compiled: to_json decides per field and per record what only depends on the spec and the
  version (is the field in this version, tagged, an array, a struct; its key and attribute
  name), at 64 us a record made the table 6x slower than decoding the log
  (benchmarks/tables_bench.py). ``encoder(spec, version)`` decides it once, writing one Python
  function per (spec, version) that builds the dict with plain statements (requests/emit.py's
  compile_source, as records.py's trusted constructors), memoised; the C JSON encoder does the rest.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable
from typing import Any

from ctrlbatch.requests.emit import compile_source
from ctrlbatch.requests.spec import FieldSpec, StructSpec, camel_case

from ..schema.json_convert import uuid_to_json

__all__ = ["encoder", "to_json_text"]

_dumps = json.JSONEncoder(separators=(",", ":")).encode
_CONVERT = {"uuid": "_uuid", "bytes": "_b64", "records": "_b64"}


# A topic id recurs in every record of its partitions: its text is kept (bounded).
_uuid = functools.lru_cache(maxsize=1 << 16)(uuid_to_json)


def _b64(v: bytes | None) -> str | None:
    return None if v is None else base64.b64encode(v).decode("ascii")


def _value(f: FieldSpec, version: int, namespace: dict[str, Any]) -> str:
    """The expression of field f's JSON value from ``v`` (not None)."""
    if f.struct is not None:
        name = f"_s{len(namespace)}"
        namespace[name] = encoder(f.struct, version)
        return f"[{name}(x) for x in v]" if f.is_array else f"{name}(v)"
    if f.is_array:
        conv = _CONVERT.get(f.element_type)
        return f"[{conv}(x) for x in v]" if conv else "list(v)"
    conv = _CONVERT.get(f.type)
    return f"{conv}(v)" if conv else "v"


@functools.cache
def encoder(spec: StructSpec, version: int) -> Callable[[Any], dict[str, Any]]:
    """obj -> the dict to_json(obj, version, spec) gives (module rules)."""
    namespace: dict[str, Any] = {"_uuid": _uuid, "_b64": _b64}
    lines = ["def enc(o):", "    d = {}"]
    for f in spec.fields:
        if version not in f.versions:
            continue
        key, value = camel_case(f.name), _value(f, version, namespace)
        lines.append(f"    v = o.{f.attr}")
        store = f"d[{key!r}] = None if v is None else {value}"
        if version in f.tagged_versions:
            if f.is_array or f.struct is not None:
                test = "v is not None and v != ()" if f.default != "null" else "v is not None"
            else:
                default = f"_d{len(namespace)}"
                namespace[default] = f.default_value()
                test = f"v != {default}"
            lines.append(f"    if {test}:")
            lines.append(f"        {store}")
        else:
            lines.append(f"    {store}")
    lines.append("    return d")
    made: Callable[[Any], dict[str, Any]] = compile_source(
        "\n".join(lines) + "\n", f"<ctrlbatch json {spec.name} v{version}>", namespace)["enc"]
    return made


# (record class, version) -> its encoder: a StructSpec hashes all its fields, a class by identity
_BY_CLASS: dict[tuple[type, int], Callable[[Any], dict[str, Any]]] = {}


def to_json_text(obj: Any, version: int) -> str:
    """The record's fields as compact JSON text (module rules)."""
    enc = _BY_CLASS.get((type(obj), version))
    if enc is None:
        enc = _BY_CLASS[(type(obj), version)] = encoder(obj.SPEC, version)
    return _dumps(enc(obj))
