"""The schema model: what a Kafka message spec says, as frozen values.

Rules: this module only describes. It knows Kafka's type names, version ranges and defaults
(generator/.../FieldSpec.java), and nothing about bytes. Any Kafka JSON spec (requests,
responses, headers, KRaft metadata records) fits it; json_spec.py reads one, catalog.py holds
the project's own description of the messages it ships, gen_classes.py / gen_encoder.py /
gen_decoder.py turn a spec into code. `fields_at` is the one place that decides which fields a
version writes, as what, and which it leaves out (the generators' VersionConditional).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import attrs

from .versions import NONE, Versions

# Fixed-width primitives: Kafka type -> (struct format char, width, Python type name).
FIXED: dict[str, tuple[str, int, str]] = {
    "bool": ("?", 1, "bool"),
    "int8": ("b", 1, "int"),
    "int16": ("h", 2, "int"),
    "uint16": ("H", 2, "int"),
    "int32": ("i", 4, "int"),
    "uint32": ("I", 4, "int"),
    "int64": ("q", 8, "int"),
    "float64": ("d", 8, "float"),
    "uuid": ("16s", 16, "uuid.UUID"),
}
# Length-prefixed primitives; "records" is nullable bytes on the wire.
VARIABLE: dict[str, str] = {"string": "str", "bytes": "bytes", "records": "bytes"}
PRIMITIVES = frozenset(FIXED) | frozenset(VARIABLE)

ZERO_UUID = uuid.UUID(int=0)
_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake_case(name: str) -> str:
    """Kafka JSON name to Python attribute: split before every capital ("isKRaftController" ->
    "is_k_raft_controller", "V0Host" -> "v0_host"), the rule kio uses too."""
    return _CAMEL.sub("_", name).lower()


def camel_case(name: str) -> str:
    """Kafka's Java field name (lower camel), used verbatim in Kafka's error messages."""
    return name[:1].lower() + name[1:]


@attrs.frozen
class StructSpec:
    name: str
    versions: Versions
    fields: tuple[FieldSpec, ...]

    def field(self, name: str) -> FieldSpec:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


@attrs.frozen
class FieldSpec:
    name: str
    type: str
    versions: Versions
    about: str = ""
    nullable_versions: Versions = NONE
    tagged_versions: Versions = NONE
    tag: int | None = None
    default: str | None = None
    ignorable: bool = False
    flexible_versions: Versions | None = None
    struct: StructSpec | None = None

    @property
    def attr(self) -> str:
        return snake_case(self.name)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES

    @property
    def nullable(self) -> bool:
        """Nullable in some version: the Python value may be None."""
        return not self.nullable_versions.empty

    def default_value(self) -> Any:
        """The Python value a field takes when absent (FieldSpec.java's default rules).

        Structs give None here; the generators build the default struct themselves."""
        d = self.default
        if d == "null":
            return None
        if self.is_array:
            return ()
        t = self.type
        if t in _INT_RANGES:
            if d is None or d == "":
                return 0
            return int(d, 16) if d.lower().startswith(("0x", "-0x")) else int(d)
        if t == "bool":
            return d is not None and d.strip().lower() == "true"
        if t == "float64":
            return float(d) if d else 0.0
        if t == "string":
            return d if d is not None else ""
        if t in ("bytes", "records"):
            return b""
        if t == "uuid":
            return uuid.UUID(d) if d else ZERO_UUID
        return None

    def int_range(self) -> tuple[int, int] | None:
        return _INT_RANGES.get(self.element_type)


@attrs.frozen
class MessageSpec:
    name: str
    type: str
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    fields: tuple[FieldSpec, ...]

    @property
    def struct(self) -> StructSpec:
        return StructSpec(self.name, self.valid_versions, self.fields)

    def field(self, name: str) -> FieldSpec:
        return self.struct.field(name)


@attrs.frozen
class FieldsAt:
    """The fields of a struct at one version, in spec order, by how that version treats them."""

    positional: tuple[FieldSpec, ...]  # in the version, not tagged: written in order
    tagged: tuple[FieldSpec, ...]  # tagged in the version: in the tagged-field section
    absent: tuple[FieldSpec, ...]  # not in the version: must keep their default unless ignorable


def fields_at(st: StructSpec, version: int) -> FieldsAt:
    positional, tagged, absent = [], [], []
    for f in st.fields:
        if version in f.tagged_versions:
            tagged.append(f)
        elif version in f.versions:
            positional.append(f)
        else:
            absent.append(f)
    return FieldsAt(tuple(positional), tuple(tagged), tuple(absent))


def iter_structs(fields: tuple[FieldSpec, ...]):  # type: ignore[no-untyped-def]
    """Every distinct nested struct, depth first, each once (common structs are shared)."""
    seen: set[str] = set()

    def walk(fs: tuple[FieldSpec, ...]):  # type: ignore[no-untyped-def]
        for f in fs:
            s = f.struct
            if s is not None and s.name not in seen:
                yield from walk(s.fields)
                seen.add(s.name)
                yield s

    yield from walk(fields)


# --- A compact constructor vocabulary, used by catalog.py (our own description of the specs).


def field(
    name: str,
    type: str,
    versions: str,
    *,
    about: str = "",
    nullable: str | None = None,
    tagged: str | None = None,
    tag: int | None = None,
    default: str | None = None,
    ignorable: bool = False,
    flexible: str | None = None,
    struct: StructSpec | None = None,
) -> FieldSpec:
    return FieldSpec(
        name=name,
        type=type,
        versions=Versions.parse(versions),
        about=about,
        nullable_versions=Versions.parse(nullable),
        tagged_versions=Versions.parse(tagged),
        tag=tag,
        default=default,
        ignorable=ignorable,
        flexible_versions=Versions.parse(flexible) if flexible is not None else None,
        struct=struct,
    )


def struct(name: str, versions: str, *fields: FieldSpec) -> StructSpec:
    return StructSpec(name, Versions.parse(versions), fields)


def message(
    name: str, type: str, api_key: int | None, valid: str, flexible: str, *fields: FieldSpec
) -> MessageSpec:
    return MessageSpec(name, type, api_key, Versions.parse(valid), Versions.parse(flexible), fields)
