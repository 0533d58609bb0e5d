"""Base classes of the generated message classes: encode/decode and the dict form.

Rules: every struct is a frozen, slotted attrs class whose attributes are the snake_case
Kafka field names in spec order, then unknown_tagged_fields (raw (tag, bytes) pairs kept from
decoding and written back). Arrays are tuples. Codecs are compiled per (message, version) on
first use by codec.py and cached on the class; nothing else is shared.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar, TypeVar

from .errors import DecodeError, UnsupportedVersionError
from .spec import FieldSpec, MessageSpec, StructSpec, iter_structs

T = TypeVar("T", bound="Message")


def to_tuple(value: Any) -> Any:
    """attrs converter for arrays: any iterable becomes a tuple; None stays None."""
    if value is None or type(value) is tuple:
        return value
    return tuple(value)


class Struct:
    __slots__ = ()
    SPEC: ClassVar[StructSpec]
    STRUCT_TYPES: ClassVar[dict[str, type[Struct]]]
    make: ClassVar[Any]
    """make(every attribute positionally, unknown_tagged_fields last): a trusted constructor."""

    def to_dict(self, version: int | None = None) -> dict[str, Any]:
        """Plain data: snake_case keys, lists for arrays, dicts for structs. With a version,
        only the fields that exist in that version."""
        out: dict[str, Any] = {}
        for f in self.SPEC.fields:
            if version is not None and version not in f.versions:
                continue
            out[f.attr] = _plain(getattr(self, f.attr), version)
        unknown = getattr(self, "unknown_tagged_fields", ())
        if unknown:
            out["unknown_tagged_fields"] = [(t, bytes(v)) for t, v in unknown]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """The inverse of to_dict; absent keys take the field's default, unknown keys fail."""
        kwargs: dict[str, Any] = {}
        names = {f.attr: f for f in cls.SPEC.fields}
        for key, value in data.items():
            if key == "unknown_tagged_fields":
                kwargs[key] = tuple((int(t), bytes(v)) for t, v in value)
                continue
            f = names.get(key)
            if f is None:
                raise ValueError(f"{cls.SPEC.name} has no field {key!r}")
            kwargs[key] = _from_plain(cls, f, value)
        return cls(**kwargs)


class Message(Struct):
    __slots__ = ()
    MESSAGE: ClassVar[MessageSpec]
    API_KEY: ClassVar[int | None]
    MIN_VERSION: ClassVar[int]
    MAX_VERSION: ClassVar[int]
    _encoders: ClassVar[dict[int, Any]]
    _decoders: ClassVar[dict[int, Any]]

    def encode(self, version: int) -> bytes:
        """The body bytes at this version (no header, no size prefix)."""
        enc = self._encoders.get(version)
        if enc is None:
            enc = _compile(type(self), version, encode=True)
        return enc(self)  # type: ignore[no-any-return]

    @classmethod
    def decode(cls: type[T], data: bytes | bytearray | memoryview, version: int) -> T:
        """Parse a whole body at this version; the buffer must be consumed exactly."""
        dec = cls._decoders.get(version)
        if dec is None:
            dec = _compile(cls, version, encode=False)
        obj, end = dec(data)
        if end != len(data):  # len() is safe: the decoder accepted data as a buffer
            raise DecodeError(
                f"{len(data) - end} unexpected trailing bytes after the message",
                message=cls.MESSAGE.name, version=version, offset=end,
            )
        return obj  # type: ignore[no-any-return]

    @classmethod
    def decode_prefix(cls: type[T], data: bytes, version: int, offset: int = 0) -> tuple[T, int]:
        """Parse one body starting at offset (e.g. a header before its body): (object, end offset)."""
        dec = cls._decoders.get(version)
        if dec is None:
            dec = _compile(cls, version, encode=False)
        return dec(data, offset)  # type: ignore[no-any-return]

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        return version in cls.MESSAGE.flexible_versions


def _compile(cls: type[Message], version: int, *, encode: bool) -> Any:
    spec = cls.MESSAGE
    if version not in spec.valid_versions:
        if encode:
            raise UnsupportedVersionError(f"Can't write version {version} of {spec.name}")
        raise DecodeError(f"Can't read version {version} of {spec.name}", message=spec.name, version=version)
    from . import codec

    fn = codec.build(cls, version, encode=encode)
    (cls._encoders if encode else cls._decoders)[version] = fn
    return fn


def bind(spec: MessageSpec, message_cls: type[Message], struct_classes: list[type[Struct]]) -> None:
    """Attach the spec facts and empty codec caches to freshly generated classes."""
    by_name = {s.name: s for s in iter_structs(spec.fields)}
    classes: dict[str, type[Struct]] = {c.__name__: c for c in struct_classes}
    for c in struct_classes:
        c.SPEC = by_name[c.__name__]
    message_cls.SPEC = spec.struct
    message_cls.MESSAGE = spec
    message_cls.API_KEY = spec.api_key
    message_cls.MIN_VERSION = spec.valid_versions.lowest
    message_cls.MAX_VERSION = spec.valid_versions.highest
    message_cls._encoders = {}
    message_cls._decoders = {}
    for c in [message_cls, *struct_classes]:
        c.STRUCT_TYPES = {f.attr: classes[f.struct.name] for f in c.SPEC.fields if f.struct is not None}
        c.make = staticmethod(_trusted_constructor(c))  # type: ignore[attr-defined]


def _trusted_constructor(cls: type[Struct]) -> Any:
    """make(all attributes, positionally, unknown_tagged_fields last): builds an instance
    without converters, for callers whose values are already right (decoders, the batch).

    A frozen class's __setattr__ refuses assignment, so its __init__ sets each slot through a
    slow generic call. make fills a twin class of the same layout with plain (specialised)
    slot stores, then switches the object's class: a third of the cost of __init__."""
    names = [a.name for a in cls.__attrs_attrs__]  # type: ignore[attr-defined]
    twin = type(f"_{cls.__name__}Filling", cls.__bases__, {"__slots__": cls.__slots__})
    params = ", ".join(f"a{i}" for i in range(len(names)))
    body = "".join(f"    o.{n} = a{i}\n" for i, n in enumerate(names))
    ns: dict[str, Any] = {"_new": object.__new__, "_C": cls, "_T": twin}
    exec(f"def make({params}):\n    o = _new(_T)\n{body}    o.__class__ = _C\n    return o\n", ns)
    return ns["make"]


def _plain(value: Any, version: int | None) -> Any:
    if isinstance(value, Struct):
        return value.to_dict(version)
    if isinstance(value, tuple):
        return [_plain(v, version) for v in value]
    return value


def _from_plain(cls: type[Struct], f: FieldSpec, value: Any) -> Any:
    if value is None:
        return None
    if f.struct is not None:
        sub = cls.STRUCT_TYPES[f.attr]

        def conv(v: Any) -> Any:
            return v if isinstance(v, sub) else sub.from_dict(v)

        return tuple(conv(v) for v in value) if f.is_array else conv(value)
    if f.element_type == "uuid":

        def conv_uuid(v: Any) -> uuid.UUID:
            return v if isinstance(v, uuid.UUID) else uuid.UUID(str(v))

        return tuple(conv_uuid(v) for v in value) if f.is_array else conv_uuid(value)
    return tuple(value) if f.is_array else value
