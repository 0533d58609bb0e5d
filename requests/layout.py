"""Where things sit in an encoded body, for callers that assemble bodies from shared parts.

Rules: facts derived from the spec only. The batch uses them to encode a partition state once
and reuse its bytes in every broker's request, to splice pre-encoded array elements into an
encoded envelope, and to patch a broker epoch into a shared body at its fixed offset. The
batch's tests check every body assembled this way against the plain encoder
(tests/batch/conftest.py check_wire).
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import Any

from .model import Message
from .spec import FIXED, StructSpec, iter_structs
from .wire import uvarint, uvarint_size

_I32 = struct.Struct(">i")  # a non-flexible array's length prefix is an int32


@functools.cache
def struct_encoder(cls: type[Message], struct_name: str, version: int) -> Callable[[Any], bytes]:
    """The encoder of one struct of cls at version, on its own (errors translated by codec.py,
    as for whole messages)."""
    from .codec import encoder_for

    spec = cls.MESSAGE
    if struct_name == spec.name:
        return encoder_for(spec, version)
    st = next((s for s in iter_structs(spec.fields) if s.name == struct_name), None)
    if st is None:
        raise KeyError(f"{spec.name} has no struct {struct_name}")
    return encoder_for(spec, version, st)


@functools.cache
def struct_args_encoder(cls: type[Message], struct_name: str, version: int, names: tuple[str, ...]) -> Callable[..., bytes]:
    """The untranslated encoder of one struct of cls at version taking its fields as arguments
    in `names` order (codec.positional_encoder_for): on a failure, make the struct and encode it
    with struct_encoder, which raises the translated error."""
    from .codec import positional_encoder_for

    spec = cls.MESSAGE
    st = next((s for s in iter_structs(spec.fields) if s.name == struct_name), None)
    if st is None:
        raise KeyError(f"{spec.name} has no struct {struct_name}")
    return positional_encoder_for(spec, version, st, names)


@functools.cache
def struct_sizer(cls: type[Message], struct_name: str, version: int) -> Callable[[Any], int]:
    """The sizer of one struct of cls at version, on its own: len(struct_encoder(...)(o))
    without encoding (gen_sizer.py)."""
    from .codec import sizer_for

    spec = cls.MESSAGE
    if struct_name == spec.name:
        return sizer_for(spec, version)
    st = next((s for s in iter_structs(spec.fields) if s.name == struct_name), None)
    if st is None:
        raise KeyError(f"{spec.name} has no struct {struct_name}")
    return sizer_for(spec, version, st)


def array_count_size(n: int, flexible: bool) -> int:
    """len(array_count(n, flexible))."""
    return uvarint_size(n + 1) if flexible else _I32.size


def array_count(n: int, flexible: bool) -> bytes:
    """The length prefix of an n-element (non-null) array."""
    return uvarint(n + 1) if flexible else _I32.pack(n)


def fixed_offset(st: StructSpec, version: int, field_name: str) -> int | None:
    """Byte offset of a positional field when every positional field before it is fixed-width
    (None otherwise)."""
    offset = 0
    for f in st.fields:
        if version not in f.versions or version in f.tagged_versions:
            continue
        if f.name == field_name:
            return offset
        if f.is_array or f.element_type not in FIXED:
            return None
        offset += FIXED[f.element_type][1]
    raise KeyError(f"{st.name} has no positional field {field_name} at version {version}")


def no_tagged_fields(flexible: bool) -> bytes:
    """What ends a struct without tagged fields: in a flexible version their count, 0, as an
    unsigned varint (KIP-482); nothing in other versions."""
    return uvarint(0) if flexible else b""


def without_empty_last_array(encoded: bytes, flexible: bool) -> bytes:
    """A struct's bytes before its last positional field, an array, given the struct encoded
    with that array empty and no tagged fields: the head that pre-encoded elements follow."""
    end = array_count(0, flexible) + no_tagged_fields(flexible)
    if not encoded.endswith(end):
        raise ValueError(f"the struct does not end with an empty array and no tagged fields ({encoded[-8:]!r})")
    return encoded[: len(encoded) - len(end)]
