"""Hypothesis strategies for message objects valid at a given version.

Rules: derived from the spec like the codecs, never from the codecs themselves. A value drawn
for (class, version) sets only fields that exist at that version (others keep their defaults,
so encoding never trips the non-ignorable check), respects each field's type range,
nullability and string limit, and in flexible versions may carry unknown tagged fields whose
tags no field of that struct uses.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from ctrlbatch.requests.model import Message, Struct
from ctrlbatch.requests.spec import FieldSpec

_INTS = {
    "int8": st.integers(-(1 << 7), (1 << 7) - 1),
    "int16": st.integers(-(1 << 15), (1 << 15) - 1),
    "uint16": st.integers(0, (1 << 16) - 1),
    "int32": st.integers(-(1 << 31), (1 << 31) - 1),
    "uint32": st.integers(0, (1 << 32) - 1),
    "int64": st.integers(-(1 << 63), (1 << 63) - 1),
}
_SCALARS: dict[str, st.SearchStrategy[Any]] = {
    **_INTS,
    "bool": st.booleans(),
    "float64": st.floats(allow_nan=False),
    "uuid": st.one_of(st.just(uuid.UUID(int=0)), st.uuids()),
    "string": st.text(max_size=12),
    "bytes": st.binary(max_size=12),
    "records": st.binary(max_size=12),
}


def _value(owner: type[Struct], f: FieldSpec, version: int, flexible: bool, max_size: int) -> st.SearchStrategy[Any]:
    if f.struct is not None:
        sub = owner.STRUCT_TYPES[f.attr]
        elem: st.SearchStrategy[Any] = st.deferred(lambda: struct_of(sub, version, flexible, max_size))
    else:
        elem = _SCALARS[f.element_type]
    base = st.lists(elem, max_size=max_size).map(tuple) if f.is_array else elem
    if version in f.nullable_versions:
        return st.one_of(st.none(), base)
    return base


def _unknown_tags(owner: type[Struct]) -> st.SearchStrategy[tuple[tuple[int, bytes], ...]]:
    used = {f.tag for f in owner.SPEC.fields if f.tag is not None}
    tags = st.integers(0, 300).filter(lambda t: t not in used)
    return st.dictionaries(tags, st.binary(max_size=6), max_size=2).map(lambda d: tuple(sorted(d.items())))


def struct_of(cls: type[Struct], version: int, flexible: bool, max_size: int = 3) -> st.SearchStrategy[Any]:
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in cls.SPEC.fields:
        if version in f.versions:
            kwargs[f.attr] = _value(cls, f, version, flexible, max_size)
    if flexible:
        kwargs["unknown_tagged_fields"] = _unknown_tags(cls)
    return st.builds(cls, **kwargs)


def messages(cls: type[Message], version: int, max_size: int = 3) -> st.SearchStrategy[Any]:
    """Objects of cls that can be written at version (list sizes up to max_size)."""
    return struct_of(cls, version, cls.is_flexible(version), max_size)


def project(obj: Any, version: int) -> Any:
    """obj as decoding its encoding at version gives it back: fields absent at that version
    reset to their defaults (non-flexible versions keep no unknown tags)."""
    import attrs

    cls = type(obj)
    changes: dict[str, Any] = {}
    defaults = cls()
    for f in cls.SPEC.fields:
        value = getattr(obj, f.attr)
        if version not in f.versions:
            changes[f.attr] = getattr(defaults, f.attr)
        elif f.struct is not None and value is not None:
            changes[f.attr] = tuple(project(v, version) for v in value) if f.is_array else project(value, version)
    return attrs.evolve(obj, **changes)


def all_versions(classes: list[type[Message]]) -> list[tuple[type[Message], int]]:
    return [(c, v) for c in classes for v in range(c.MIN_VERSION, c.MAX_VERSION + 1)]
