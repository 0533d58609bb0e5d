"""Base classes of the generated message classes: encode/decode and the dict form.

Rules: every struct is a frozen, slotted attrs class whose attributes are the snake_case
Kafka field names in spec order, then unknown_tagged_fields (raw (tag, bytes) pairs kept from
decoding and written back). Arrays are tuples. Codecs are compiled per (message, version) on
first use by codec.py and cached on the class; nothing else is shared.

Trusted constructors build an instance without attrs' converters, for callers whose values
are already the right types. Why they exist: a frozen attrs class's __init__ stores each slot
through object.__setattr__ (frozen classes refuse plain assignment): about 1.1 us for the 13
fields of LeaderAndIsrPartitionState on the project machine. A trusted constructor fills a twin
class of the same slot layout with plain stores, then switches the object's class: about
0.16 us called positionally, 0.23 us by keyword (CPython 3.11, timeit, best of 5); a failover
batch makes 400,000 such states. Two forms, so that no hand-written call can shift values when
a field moves in a spec:
- `Cls.make(...)`: parameters named after the attributes, in spec order. Generated decoders,
  written from the same spec, call it positionally; any hand-written call uses keywords.
- `Cls.maker("name", ...)`: a constructor generated for one call site, taking the named
  attributes positionally in the order the call site lists them (unknown_tagged_fields may be
  left out: it is then ()). The request batch uses it on its hot path.
The twin must have exactly the class's slots, in order, and no __dict__ or __weakref__ (checked
where the twin is made, and by tests/batch/test_trusted_constructor.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from .errors import DecodeError
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
    """make(attribute=value, ...): the trusted constructor (no converters; see the module rules)."""

    @classmethod
    def maker(cls, *names: str) -> Callable[..., Any]:
        """A trusted constructor taking the named attributes positionally, in this order (see
        the module rules); every attribute but unknown_tagged_fields must be named."""
        key = (cls, names)
        made = _MAKERS.get(key)
        if made is None:
            made = _MAKERS[key] = _maker(cls, names)
        return made

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
    _sizers: ClassVar[dict[int, Any]]

    def encoded_size(self, version: int) -> int:
        """len(self.encode(version)), computed from the fields without encoding (gen_sizer.py).
        Values are not range-checked: encode checks them."""
        sizer = self._sizers.get(version) if type(version) is int else None
        if sizer is None:
            from . import codec

            sizer = self._sizers[version] = codec.build(type(self), version, encode=True, size=True)
        return sizer(self)  # type: ignore[no-any-return]

    def encode(self, version: int) -> bytes:
        """The body bytes at this version (no header, no size prefix)."""
        enc = self._encoders.get(version) if type(version) is int else None
        if enc is None:
            enc = _compile(type(self), version, encode=True)
        return enc(self)  # type: ignore[no-any-return]

    @classmethod
    def decode(cls: type[T], data: bytes | bytearray | memoryview, version: int) -> T:
        """Parse a whole body at this version; the buffer must be consumed exactly."""
        dec = cls._decoders.get(version) if type(version) is int else None
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
        dec = cls._decoders.get(version) if type(version) is int else None
        if dec is None:
            dec = _compile(cls, version, encode=False)
        return dec(data, offset)  # type: ignore[no-any-return]

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        return version in cls.MESSAGE.flexible_versions


def _compile(cls: type[Message], version: int, *, encode: bool) -> Any:
    """The codec of (cls, version), built once and cached on the class; codec.build checks the
    version first (a non-int or an unknown version gets its error there, in one place)."""
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
    message_cls._sizers = {}
    for c in [message_cls, *struct_classes]:
        c.STRUCT_TYPES = {f.attr: classes[f.struct.name] for f in c.SPEC.fields if f.struct is not None}
        c.make = staticmethod(_trusted_constructor(c))


def _trusted_constructor(cls: type[Struct]) -> Any:
    """make(attribute=value, ...) for every attribute, unknown_tagged_fields last: see the
    module rules. Its `twin` attribute is the same-layout class it fills."""
    names = [a.name for a in cls.__attrs_attrs__]  # type: ignore[attr-defined]
    twin = type(f"_{cls.__name__}Filling", cls.__bases__, {"__slots__": cls.__slots__})
    fits = tuple(cls.__slots__) == tuple(names) and twin.__basicsize__ == cls.__basicsize__
    if not fits or cls.__dictoffset__ or cls.__weakrefoffset__:
        raise TypeError(f"{cls.__name__}: its slots {cls.__slots__} do not fit the trusted constructor")
    return _filler(cls, twin, "make", names, names)


def _filler(cls: type[Struct], twin: type, name: str, params: list[str], stores: list[str]) -> Any:
    """def <name>(<params>): a twin object with each of `stores` set from the parameter of the
    same name (or to () for an unlisted unknown_tagged_fields), switched to cls."""
    from .emit import compile_source

    lines = [f"    _obj_.{n} = {n if n in params else '()'}\n" for n in stores]
    text = f"def {name}({', '.join(params)}):\n    _obj_ = _new(_Twin)\n{''.join(lines)}    _obj_.__class__ = _Cls\n    return _obj_\n"
    module = getattr(cls, "__module__", "ctrlbatch")
    ns = compile_source(
        text, f"<ctrlbatch {name} {module}.{cls.__qualname__}>", {"_new": object.__new__, "_Cls": cls, "_Twin": twin}
    )
    fn = ns[name]
    fn.twin = twin
    return fn


_MAKERS: dict[tuple[type, tuple[str, ...]], Callable[..., Any]] = {}  # generated once per (class, names)


def _maker(cls: type[Struct], names: tuple[str, ...]) -> Callable[..., Any]:
    """Struct.maker: checked against the class's attributes."""
    attrs_names = [a.name for a in cls.__attrs_attrs__]  # type: ignore[attr-defined]
    unknown = [n for n in names if n not in attrs_names]
    missing = [n for n in attrs_names if n not in names and n != "unknown_tagged_fields"]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if unknown or missing or repeated:
        raise TypeError(
            f"{cls.__name__}.maker: " + "; ".join(
                f"{what} {', '.join(ns)}" for what, ns in
                (("no such attribute", unknown), ("missing", missing), ("named twice", repeated)) if ns
            )
        )
    made: Callable[..., Any] = _filler(cls, cls.make.twin, "maker", list(names), attrs_names)
    return made


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
