"""Compiles and wraps the generated codecs of one (message, version).

Rules: the fast encoder/decoder runs first; if it raises anything, the checked flavour runs on
the same input to say precisely which field failed and where, and only DecodeError (decode) or
EncodeError / UnsupportedVersionError (encode) ever reach the caller.
"""

from __future__ import annotations

import struct
from typing import Any

from .errors import DecodeError, EncodeError, UnsupportedVersionError
from .gen_decoder import decoder_source
from .gen_encoder import encoder_source
from .spec import iter_structs


def _classes(cls: Any) -> dict[str, type]:
    out = {cls.MESSAGE.name: cls}
    for attr_cls in _walk(cls):
        out[attr_cls.__name__] = attr_cls
    return out


def _walk(cls: Any) -> list[type]:
    seen: list[type] = []
    todo = list(cls.STRUCT_TYPES.values())
    while todo:
        c = todo.pop()
        if c not in seen:
            seen.append(c)
            todo.extend(c.STRUCT_TYPES.values())
    return seen


def _compile(text: str, ns: dict[str, Any], name: str) -> Any:
    from .emit import Source

    src = Source()
    src.lines = text.splitlines()
    return src.compile(name, ns)


def build(cls: Any, version: int, *, encode: bool) -> Any:
    spec = cls.MESSAGE
    assert len(list(iter_structs(spec.fields))) == len(_walk(cls))
    label = f"{spec.name} v{version}"
    if encode:
        fast = _compile(*encoder_source(spec, version), f"<ctrlbatch encode {label}>")["encode"]
        checked_ns = _compile(*encoder_source(spec, version, checked=True), f"<ctrlbatch encode {label} checked>")
        checked = checked_ns["encode"]

        def encoder(obj: Any) -> bytes:
            try:
                return fast(obj)  # type: ignore[no-any-return]
            except UnsupportedVersionError:
                raise
            except Exception as first:
                try:
                    checked(obj)
                except UnsupportedVersionError:
                    raise
                except Exception as e:
                    raise EncodeError(f"{label}: field {checked_ns['_at'] or spec.name}: {e}") from e
                raise EncodeError(f"{label}: {first}") from first

        return encoder

    classes = _classes(cls)
    fast = _compile(*decoder_source(spec, version, classes), f"<ctrlbatch decode {label}>")["decode"]
    checked_ns = _compile(*decoder_source(spec, version, classes, checked=True), f"<ctrlbatch decode {label} checked>")
    checked = checked_ns["decode"]

    def decoder(data: Any, pos: int = 0) -> tuple[Any, int]:
        if type(data) is not bytes:
            if not isinstance(data, bytes | bytearray | memoryview):
                raise DecodeError(
                    f"expected bytes, bytearray or memoryview, not {type(data).__name__}", message=spec.name, version=version
                )
            data = bytes(data)
        try:
            return fast(data, pos)  # type: ignore[no-any-return]
        except Exception as first:
            try:
                checked(data, pos)
            except DecodeError as e:
                raise DecodeError(
                    e.reason, message=spec.name, version=version,
                    field=checked_ns["_at"], offset=e.offset if e.offset is not None else checked_ns["_o"],
                ) from None
            except (struct.error, IndexError) as e:
                raise DecodeError(
                    f"the data ends inside this field ({e})", message=spec.name, version=version,
                    field=checked_ns["_at"], offset=checked_ns["_o"],
                ) from None
            except UnicodeDecodeError as e:
                raise DecodeError(
                    f"invalid UTF-8 ({e.reason} at byte {e.start} of the string)", message=spec.name,
                    version=version, field=checked_ns["_at"], offset=checked_ns["_o"],
                ) from None
            except Exception as e:
                raise DecodeError(
                    f"{type(e).__name__}: {e}", message=spec.name, version=version,
                    field=checked_ns["_at"], offset=checked_ns["_o"],
                ) from None
            raise DecodeError(f"internal decoder error: {first!r}", message=spec.name, version=version) from first

    return decoder
