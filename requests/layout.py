"""Where things sit in an encoded body, for callers that assemble bodies from shared parts.

Rules: facts derived from the spec only. The batch uses them to encode a partition state once
and reuse its bytes in every broker's request, to splice a pre-encoded array into an encoded
envelope, and to patch a broker epoch into a shared body at its fixed offset. Everything here
is checked against the plain encoder by tests/requests/test_layout.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .errors import EncodeError
from .model import Message
from .spec import FIXED, StructSpec
from .wire import uvarint

_I32 = __import__("struct").Struct(">i")


@functools.cache
def struct_encoder(cls: type[Message], struct_name: str, version: int) -> Callable[[Any], bytes]:
    """The generated encoder of one struct of cls at version, on its own."""
    from .codec import _compile
    from .gen_encoder import encoder_source
    from .spec import iter_structs

    spec = cls.MESSAGE
    if struct_name == spec.name:
        st = spec.struct
    else:
        st = next(s for s in iter_structs(spec.fields) if s.name == struct_name)
    fast = _compile(*encoder_source(spec, version, struct_spec=st), f"<ctrlbatch encode {struct_name} of {spec.name} v{version}>")["encode"]
    checked_ns = _compile(*encoder_source(spec, version, True, st), f"<ctrlbatch encode {struct_name} v{version} checked>")

    def encode(obj: Any) -> bytes:
        try:
            return fast(obj)  # type: ignore[no-any-return]
        except Exception as first:
            try:
                checked_ns["encode"](obj)
            except EncodeError:
                raise
            except Exception as e:
                if type(e).__name__ == "UnsupportedVersionError":
                    raise
                raise EncodeError(f"{spec.name} v{version}: field {checked_ns['_at']}: {e}") from e
            raise EncodeError(f"{spec.name} v{version}: {first}") from first

    return encode


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


def splice_array(
    envelope: bytes, offset: int, flexible: bool, count: int, elements: list[bytes]
) -> list[bytes]:
    """Replace the empty array encoded at offset in envelope by count pre-encoded elements:
    returns the pieces to join (or to write one after another)."""
    empty = 1 if flexible else 4
    return [envelope[:offset], array_count(count, flexible), *elements, envelope[offset + empty :]]
