"""Compiles the generated codecs of one (message, version) and translates their failures.

Rules: this module is the one place where a codec's failure becomes the error a caller sees
(h11's _reraise_as_remote_protocol_error is the model), and only DecodeError (decode) or
EncodeError / UnsupportedVersionError (encode) ever reach the caller. The failing field travels
in the exception (FieldFailure) or is read from the failing frame, never through shared state,
so codecs may run in several threads at once (tests/requests/test_codec_translation.py).

- Encoding (`translating`): the fast encoder runs; if it raises anything but
  UnsupportedVersionError, the checked flavour runs on the same object to name the failing
  field, and raises FieldFailure carrying that field's path and its error.
- Decoding (`translating_decoder`): the decoder runs; if it raises, the failure is explained
  from the line it happened on (gen_decoder.py's line notes) and the frame's position and loop
  indices, with no second decoding. Inside the `except` block only plain values are taken from
  the frame; the DecodeError is raised after it, once the traceback (and with it the failed
  attempt's partial objects) is released, so nothing chains to it and nothing is held twice.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from types import CodeType, TracebackType
from typing import Any, NoReturn

import attrs

from .emit import compile_source
from .errors import DecodeError, EncodeError, UnsupportedVersionError, check_buffer
from .gen_decoder import FieldNote, RunNote, decoder_source
from .gen_encoder import FieldFailure, encoder_source, positional_encoder_source
from .gen_sizer import sizer_source
from .spec import MessageSpec, StructSpec, iter_structs

Encoder = Callable[[Any], bytes]
Sizer = Callable[[Any], int]
Decoder = Callable[..., tuple[Any, int]]  # (data, pos=0) -> (object, end)

__all__ = [
    "Decoder", "Encoder", "FieldFailure", "Sizer", "build", "check_version", "encoder_for", "sizer_for", "translating", "translating_decoder",
]


# ---------------------------------------------------------------- encoding


def translating(fast: Encoder, checked: Encoder, label: str) -> Encoder:
    """An encoder that runs `fast` and, when it fails, explains the failure with `checked` (a
    generated checked encoder, which raises FieldFailure), raising EncodeError("<label>: field
    <path>: <error>") or the UnsupportedVersionError met. label names the message and version."""

    def encode(obj: Any) -> bytes:
        try:
            return fast(obj)
        except UnsupportedVersionError:
            raise
        except Exception as e:
            first = e.with_traceback(None)  # the failed attempt's frames (its partial output) go now
        _explain_encode(checked, obj, first, label)

    # The untranslated encoder, for a caller's loop over many structs that catches a failure and
    # runs this encoder on the same object to raise the translated error (batch/builders.py).
    encode.fast = fast  # type: ignore[attr-defined]
    return encode


def _explain_encode(checked: Encoder, obj: Any, first: Exception, label: str) -> NoReturn:
    try:
        checked(obj)
    except FieldFailure as failure:
        error = failure.error
        path = failure.path
    else:
        raise EncodeError(f"{label}: {first}") from first
    if isinstance(error, UnsupportedVersionError):
        raise error
    raise EncodeError(f"{label}: field {path}: {error}") from error


def encoder_for(spec: MessageSpec, version: int, struct_spec: StructSpec | None = None) -> Encoder:
    """The translated encoder of spec at version: the whole message, or one of its structs on its
    own (struct_spec), for callers that assemble bodies from shared parts."""
    what = spec.name if struct_spec is None or struct_spec.name == spec.name else f"{struct_spec.name} of {spec.name}"
    fast = _exec(encoder_source(spec, version, struct_spec=struct_spec), f"<ctrlbatch encode {what} v{version}>")
    checked = _exec(
        encoder_source(spec, version, checked=True, struct_spec=struct_spec), f"<ctrlbatch encode {what} v{version} checked>"
    )
    return translating(fast["encode"], checked["encode"], f"{spec.name} v{version}")


def positional_encoder_for(spec: MessageSpec, version: int, struct_spec: StructSpec, names: tuple[str, ...]) -> Callable[..., bytes]:
    """The untranslated fast encoder of one struct taking its fields as arguments in `names`
    order (gen_encoder.positional_encoder_source). It raises whatever the fast encoder raises:
    a caller that meets a failure makes the object and runs encoder_for's encoder on it, which
    raises the translated error."""
    what = f"{struct_spec.name} of {spec.name}"
    text = positional_encoder_source(spec, version, struct_spec, names)
    return _exec(text, f"<ctrlbatch encode {what} v{version} from arguments>")["encode"]  # type: ignore[no-any-return]


def sizer_for(spec: MessageSpec, version: int, struct_spec: StructSpec | None = None) -> Sizer:
    """The sizer of spec at version (gen_sizer.py): len(encode(o)) without encoding. When it
    fails, the encoder runs on the same object, so the caller sees the encoder's own error."""
    what = spec.name if struct_spec is None or struct_spec.name == spec.name else f"{struct_spec.name} of {spec.name}"
    fast = _exec(sizer_source(spec, version, struct_spec), f"<ctrlbatch size {what} v{version}>")["size"]

    def size(obj: Any) -> int:
        try:
            return fast(obj)  # type: ignore[no-any-return]
        except UnsupportedVersionError:
            raise
        except Exception as e:
            first = e.with_traceback(None)
        encoder_for(spec, version, struct_spec)(obj)  # raises the encoder's translated error
        raise EncodeError(f"{spec.name} v{version}: the sizer failed where the encoder did not: {first!r}") from first

    return size


def _exec(generated: tuple[str, dict[str, Any]], filename: str) -> dict[str, Any]:
    text, namespace = generated
    return compile_source(text, filename, dict(namespace))


# ---------------------------------------------------------------- decoding


@attrs.frozen
class _Failure:
    """What a failed decode left to explain it: plain values only, no frame or exception."""

    kind: str  # "decode" | "truncated" | "utf8" | "other" | "internal"
    reason: str
    offset: int | None  # the error's own offset (DecodeError), else None
    note: FieldNote | RunNote | None
    pos: int  # the frame's pos at the failing line
    indices: Mapping[str, int]  # the frame's int locals (loop indices for the path)


Note = FieldNote | RunNote | None


def translating_decoder(fast: Callable[[bytes, int], tuple[Any, int]], notes: Sequence[Note], message: str, version: int) -> Decoder:
    """A decoder that runs `fast` and turns any failure into a DecodeError naming message,
    version, field path and byte offset (see the module rules); notes[i] is the note of line
    i + 1 of fast's source (emit.Source.notes)."""
    code = fast.__code__

    def decode(data: Any, pos: int = 0) -> tuple[Any, int]:
        if type(data) is not bytes:
            check_buffer(data, "data", message=message, version=version)
            data = bytes(data)
        try:
            return fast(data, pos)
        except Exception as e:
            failure = _failure(e, code, notes)
            if failure.kind == "internal":
                raise DecodeError(failure.reason, message=message, version=version) from e
        raise _decode_error(failure, len(data), message, version)

    return decode


_TRUNCATION = (struct.error, IndexError)


def _failure(e: Exception, code: CodeType, notes: Sequence[Note]) -> _Failure:
    tb: TracebackType | None = e.__traceback__
    while tb is not None and tb.tb_frame.f_code is not code:
        tb = tb.tb_next
    note = notes[tb.tb_lineno - 1] if tb is not None and 0 < tb.tb_lineno <= len(notes) else None
    if tb is None or note is None:
        return _Failure("internal", f"internal decoder error: {e!r}", None, None, 0, {})
    local = tb.tb_frame.f_locals
    indices = {k: v for k, v in local.items() if type(v) is int}
    pos = indices.get("pos", 0)
    if isinstance(e, DecodeError):
        return _Failure("decode", e.reason, e.offset, note, pos, indices)
    if isinstance(e, _TRUNCATION):
        return _Failure("truncated", str(e), None, note, pos, indices)
    if isinstance(e, UnicodeDecodeError):
        return _Failure("utf8", f"invalid UTF-8 ({e.reason} at byte {e.start} of the string)", None, note, pos, indices)
    return _Failure("other", f"{type(e).__name__}: {e}", None, note, pos, indices)


class _Indices(dict[str, Any]):
    def __missing__(self, key: str) -> str:  # an index whose loop has not run: never expected
        return "?"


def _decode_error(failure: _Failure, size: int, message: str, version: int) -> DecodeError:
    note, pos, names = failure.note, failure.pos, _Indices(failure.indices)
    if isinstance(note, RunNote):
        # A fused read fails as a whole: the field is the first one that does not fit.
        offset = pos
        for path, width in note.items:  # noqa: B007 (the loop finds path and width)
            if offset + width > size:
                break
            offset += width
        if failure.kind == "truncated":
            remain = max(size - offset, 0)
            reason = f"the data ends inside this field (it takes {width} bytes, {remain} remain)"
            return DecodeError(reason, message=message, version=version, field=path.format_map(names), offset=offset)
        note = FieldNote(path)
    assert isinstance(note, FieldNote)
    offset = failure.offset if failure.offset is not None else pos
    return DecodeError(failure.reason, message=message, version=version, field=note.path.format_map(names), offset=offset)


# ---------------------------------------------------------------- one (message, version)


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


def check_version(spec: MessageSpec, version: object, *, encode: bool) -> None:
    """Refuse a version the codec cannot build: a non-int (TypeError naming the parameter, what it
    expects and what it got), or an int outside the valid range (Kafka's texts:
    UnsupportedVersionError "Can't write version N of X" / DecodeError "Can't read ...")."""
    valid = spec.valid_versions
    if not isinstance(version, int) or isinstance(version, bool):
        raise TypeError(
            f"version must be an int in {spec.name}'s valid range {valid.lowest}-{valid.highest}, "
            f"not {type(version).__name__} ({version!r})"
        )
    if version not in valid:
        if encode:
            raise UnsupportedVersionError(f"Can't write version {version} of {spec.name}")
        raise DecodeError(f"Can't read version {version} of {spec.name}", message=spec.name, version=version)


def build(cls: Any, version: int, *, encode: bool, size: bool = False) -> Any:
    """The encoder (obj -> bytes), sizer (obj -> int, with size=True) or decoder ((data, pos=0)
    -> (obj, end)) of cls at version; check_version first."""
    spec = cls.MESSAGE
    check_version(spec, version, encode=encode)
    if len(list(iter_structs(spec.fields))) != len(_walk(cls)):
        raise TypeError(f"{spec.name}: its classes do not match its spec's structs")
    if size:
        return sizer_for(spec, version)
    if encode:
        return encoder_for(spec, version)
    src = decoder_source(spec, version, _classes(cls))
    fast = src.compile(f"<ctrlbatch decode {spec.name} v{version}>")["decode"]
    return translating_decoder(fast, tuple(src.notes), spec.name, version)

