"""Generates the encoder of one (message, version): Kafka's MessageDataGenerator, write side.

Rules (kafka-wire-format.md §2-3): fields in spec order; a field outside its versions is not
written, and a non-default value there raises UnsupportedVersionError unless it is ignorable;
flexible versions use compact lengths and end every struct with a tagged section (known tags
written only when not default, merged with unknown tags, ascending). Consecutive fixed-width
fields, int arrays and strings are fused into one struct.pack whose format is cached by the
run's lengths: that is where the speed comes from. The `checked` flavour writes field by field,
keeping the path of the field being written in a local, and raises FieldFailure(path, error) on
any error; it runs only to explain a failure of the fast one (codec.translating).
"""

from __future__ import annotations

import re
import struct
from typing import Any

from . import wire
from .emit import Source
from .errors import EncodeError, UnsupportedVersionError
from .spec import FIXED, FieldSpec, MessageSpec, StructSpec, camel_case, fields_at
from .wire import (
    EMPTY_TAGGED_FIELDS,
    MAX_STRING_LENGTH,
    NULL_COMPACT_LENGTH,
    NULL_INT16_LENGTH,
    NULL_INT32_LENGTH,
)

_NUMERIC_ELEMS = {k: v[0] for k, v in FIXED.items() if k != "uuid"}
_ONE_BYTE_LENGTH_MAX = 126  # a compact length N is written as N + 1; below 127 that is one varint byte
_INT32 = struct.Struct(">i")  # classic array and bytes lengths
_INT16 = struct.Struct(">h")  # classic string lengths


class FieldFailure(Exception):
    """Raised by a checked encoder: the path of the field it was writing and the error there."""

    def __init__(self, path: str, error: BaseException) -> None:
        super().__init__(path, error)
        self.path = path
        self.error = error


class EncoderGen:
    def __init__(self, spec: MessageSpec, version: int, checked: bool) -> None:
        self.spec = spec
        self.v = version
        self.flexible = version in spec.flexible_versions
        self.checked = checked
        self.src = Source()
        ns = self.src.namespace
        ns.update(
            _uv=wire.uvarint, _wtags=wire.write_tags, _astruct=wire.array_struct,
            EncodeError=EncodeError, UnsupportedVersionError=UnsupportedVersionError, _Failed=FieldFailure,
        )

    # -- entry
    def build(self, struct_spec: StructSpec | None = None) -> str:
        """The encoder of the whole message, or of one of its structs on its own."""
        s = self.src
        st = struct_spec or self.spec.struct
        with s.block("def encode(o):"):
            if struct_spec is not None and self.single_run(st):
                self.single_run_struct(st, "o", st.name, direct=True)
            elif self.checked:
                s(f"_at = {st.name!r}")
                with s.block("try:"):
                    self.whole(st)
                with s.block("except Exception as _e:"):
                    s("raise _Failed(_at, _e) from _e")
            else:
                self.whole(st)
        return s.text()

    def whole(self, st: StructSpec) -> None:
        s = self.src
        s("out = []")
        s("ap = out.append")
        self.struct_body(st, "o", st.name)
        s("return b''.join(out)")

    def at(self, where: str, name: str = "") -> None:
        """Checked flavour: remember the path of the field about to be written (where.name, or
        where itself for an array element). where is the text of an f-string body (loop
        indices in braces)."""
        if self.checked:
            path = f"{where}.{name}" if name else where
            self.src(f"_at = {'f' if '{' in path else ''}{path!r}")

    # -- structs
    def struct_body(self, st: StructSpec, o: str, where: str) -> None:
        """where: a Python expression text (f-string body) naming the struct for errors."""
        s = self.src
        at = fields_at(st, self.v)
        for f in at.absent:
            if not f.ignorable:
                self.absent_check(f, o)
        if self.single_run(st):
            self.single_run_struct(st, o, where, direct=False)
            return
        if not self.checked:
            self.fused(list(at.positional), o, where)
        else:
            for f in at.positional:
                self.at(where, f.name)
                self.value(f, f"{o}.{f.attr}", where)
        if self.flexible:
            self.tag_section(at.tagged, o, where)
        else:
            with s.block(f"if {o}.unknown_tagged_fields:"):
                msg = f"Tagged fields were set, but version {self.v} of this message does not support them."
                s(f"raise UnsupportedVersionError({msg!r})")

    def absent_check(self, f: FieldSpec, o: str) -> None:
        s = self.src
        if f.struct is not None and not f.is_array:
            test = f"{o}.{f.attr} != type({o}.{f.attr})()" if f.default != "null" else f"{o}.{f.attr} is not None"
        else:
            d = s.const(f.default_value(), "_d")
            test = f"{o}.{f.attr} != {d}"
        with s.block(f"if {test}:"):
            msg = f"Attempted to write a non-default {camel_case(f.name)} at version {self.v}"
            s(f"raise UnsupportedVersionError({msg!r})")

    def tag_section(self, tagged: tuple[FieldSpec, ...], o: str, where: str) -> None:
        s = self.src
        if not tagged:
            with s.block(f"if {o}.unknown_tagged_fields:"):
                s(f"_wtags(ap, [], {o}.unknown_tagged_fields)")
            with s.block("else:"):
                s(f"ap({EMPTY_TAGGED_FIELDS!r})")
            return
        kt = s.fresh("kt")
        s(f"{kt} = []")
        for f in sorted(tagged, key=lambda f: f.tag or 0):
            val = f"{o}.{f.attr}"
            if f.struct is not None and not f.is_array and f.default != "null":
                test = f"{val} != type({val})()"
            else:
                test = f"{val} != {s.const(f.default_value(), '_d')}"
            with s.block(f"if {test}:"):
                self.at(where, f.name)
                sub, saved = s.fresh("tb"), s.fresh("apo")
                s(f"{sub} = []")
                s(f"{saved} = ap; ap = {sub}.append")
                self.value(f, val, where)
                s(f"ap = {saved}")
                s(f"{kt}.append(({f.tag}, b''.join({sub})))")
        with s.block(f"if {kt} or {o}.unknown_tagged_fields:"):
            s(f"_wtags(ap, {kt}, {o}.unknown_tagged_fields)")
        with s.block("else:"):
            s(f"ap({EMPTY_TAGGED_FIELDS!r})")

    def single_run(self, st: StructSpec) -> bool:
        """A flexible struct whose fields at this version all fuse into one pack, its empty
        tagged section included (a trailing pad byte): the hot partition-state structs."""
        if self.checked or not self.flexible:
            return False
        fields = [f for f in st.fields if self.v in f.versions]
        return bool(fields) and all(self.v not in f.tagged_versions and self.fusable(f) for f in fields)

    def single_run_struct(self, st: StructSpec, o: str, where: str, direct: bool) -> None:
        s = self.src
        for f in st.fields:
            if self.v not in f.versions and not f.ignorable:
                self.absent_check(f, o)
        run = [f for f in st.fields if self.v in f.versions]
        with s.block(f"if not {o}.unknown_tagged_fields:"):
            self.flush(run, o, where, pad=True, direct=direct)
        with s.block("else:"):
            self.plain(run, o, where, direct, f"_wtags(ap, [], {o}.unknown_tagged_fields)")

    def plain(self, run: list[FieldSpec], o: str, where: str, direct: bool, tail: str | None) -> None:
        """Field by field (the slow path of a fused run), then the tail statement if any; when
        direct, into a list of its own whose bytes are returned."""
        s = self.src
        if direct:
            s("out = []")
            s("ap = out.append")
        for f in run:
            self.value(f, f"{o}.{f.attr}", where)
        if tail:
            s(tail)
        if direct:
            s("return b''.join(out)")

    # -- fused runs (fast flavour)
    def fusable(self, f: FieldSpec) -> bool:
        v = self.v
        if v in f.nullable_versions:
            return False
        e = f.element_type
        if f.is_array:
            return e in _NUMERIC_ELEMS
        return e in FIXED or (e == "string")

    def fused(self, fields: list[FieldSpec], o: str, where: str) -> None:
        run: list[FieldSpec] = []
        for f in fields:
            if self.fusable(f):
                run.append(f)
                continue
            self.flush(run, o, where)
            run = []
            self.value(f, f"{o}.{f.attr}", where)
        self.flush(run, o, where)

    def str_flexible(self, f: FieldSpec) -> bool:
        if f.flexible_versions is not None:
            return self.v in f.flexible_versions
        return self.flexible

    def flush(self, run: list[FieldSpec], o: str, where: str, pad: bool = False, direct: bool = False) -> None:
        """One struct.pack for the run; pad adds the empty tagged section's zero byte; direct
        returns the bytes instead of appending them (falling back to a list when lengths
        are too long for one-byte prefixes)."""
        if not run:
            return
        s = self.src
        emit = "return " if direct else "ap("
        close = "" if direct else ")"
        template: list[Any] = []
        args: list[str] = []
        dyn: list[tuple[str, bool]] = []  # (length var, compact)
        for f in run:
            val = f"{o}.{f.attr}"
            e = f.element_type
            if f.is_array:
                a, n = s.fresh("a"), s.fresh("n")
                s(f"{a} = {val}")
                s(f"{n} = len({a})")
                compact = self.flexible
                template.append(("a", _NUMERIC_ELEMS[e], "B" if compact else "i"))
                args.append(f"{n} + 1" if compact else n)
                args.append(f"*{a}")
                dyn.append((n, compact))
            elif e == "string":
                b, n = s.fresh("b"), s.fresh("n")
                s(f"{b} = {val}.encode('utf-8')")
                s(f"{n} = len({b})")
                with s.block(f"if {n} > {MAX_STRING_LENGTH:#x}:"):
                    self.too_long(f)
                compact = self.str_flexible(f)
                template.append(("s", "s", "B" if compact else "h"))
                args.append(f"{n} + 1" if compact else n)
                args.append(b)
                dyn.append((n, compact))
            elif e == "uuid":
                template.append("16s")
                args.append(f"{val}.bytes")
            else:
                template.append(FIXED[e][0])
                args.append(val)
        if pad:
            template.append("x")
        if not dyn:
            st = s.const(struct.Struct(">" + "".join(template)), "_S")
            s(f"{emit}{st}.pack({', '.join(args)}){close}")
            return
        cache = s.const({}, "_C")
        make = s.const(wire.run_struct_maker(tuple(template)), "_M")
        key = dyn[0][0] if len(dyn) == 1 else "(" + ", ".join(n for n, _ in dyn) + ")"
        guards = [f"{n} < {_ONE_BYTE_LENGTH_MAX + 1}" for n, compact in dyn if compact]
        if not guards:
            self.cached_pack(cache, make, key, emit, args, close)
            return
        with s.block(f"if {' and '.join(guards)}:"):
            self.cached_pack(cache, make, key, emit, args, close)
        with s.block("else:"):
            self.plain(run, o, where, direct, f"ap({EMPTY_TAGGED_FIELDS!r})" if pad else None)

    def cached_pack(self, cache: str, make: str, key: str, emit: str, args: list[str], close: str) -> None:
        """Pack with the Struct of this run's lengths, made on first use."""
        s = self.src
        k, st = s.fresh("k"), s.fresh("st")
        s(f"{k} = {key}")
        s(f"{st} = {cache}.get({k})")
        with s.block(f"if {st} is None:"):
            s(f"{st} = {make}({cache}, {k})")
        s(f"{emit}{st}.pack({', '.join(args)}){close}")

    # -- single values (plain, used by both flavours)
    def null_value(self, f: FieldSpec, nullable: bool, compact: bool, classic: bytes) -> str:
        """The statement for a None value: its null length when nullable, else Kafka's refusal."""
        if nullable:
            return f"ap({NULL_COMPACT_LENGTH if compact else classic!r})"
        return f"raise EncodeError({('non-nullable field ' + camel_case(f.name) + ' was null')!r})"

    def too_long(self, f: FieldSpec) -> None:
        self.src(f"raise EncodeError({repr(chr(39) + camel_case(f.name) + chr(39) + ' field is too long to be serialized')})")

    def value(self, f: FieldSpec, val: str, where: str) -> None:
        s = self.src
        e = f.element_type
        if f.is_array:
            a = s.fresh("a")
            s(f"{a} = {val}")
            with s.null_conditional(f"{a} is None", self.null_value(f, self.v in f.nullable_versions, self.flexible, NULL_INT32_LENGTH)):
                s(f"ap(_uv(len({a}) + 1))" if self.flexible else f"ap({s.const(_INT32, '_S')}.pack(len({a})))")
                if e in _NUMERIC_ELEMS:
                    s(f"ap(_astruct({_NUMERIC_ELEMS[e]!r}, len({a})).pack(*{a}))")
                    return
                el, i = s.fresh("e"), s.fresh("i")
                with s.block(f"for {i}, {el} in enumerate({a}):" if self.checked else f"for {el} in {a}:"):
                    sub_where = f"{where}.{f.name}[{{{i}}}]"
                    if f.struct is not None:
                        self.struct_body(f.struct, el, sub_where)
                    else:
                        self.at(sub_where)
                        self.scalar(f, e, el, nullable=False)
            return
        if f.struct is not None:
            if self.v not in f.nullable_versions:
                self.struct_body(f.struct, val, f"{where}.{f.name}")
                return
            # A nullable struct: int8 -1 for null, 1 then the struct otherwise (Kafka's generator).
            with s.null_conditional(f"{val} is None", "ap(b'\\xff')"):
                s("ap(b'\\x01')")
                self.struct_body(f.struct, val, f"{where}.{f.name}")
            return
        self.scalar(f, e, val, self.v in f.nullable_versions)

    def scalar(self, f: FieldSpec, e: str, val: str, nullable: bool) -> None:
        s = self.src
        if e in FIXED:
            if e == "uuid":
                s(f"ap({val}.bytes)")
            else:
                st = s.const(struct.Struct(">" + FIXED[e][0]), "_S")
                s(f"ap({st}.pack({val}))")
            return
        compact = self.str_flexible(f) if e == "string" else self.flexible
        b = s.fresh("b")
        on_null = self.null_value(f, nullable, compact, NULL_INT16_LENGTH if e == "string" else NULL_INT32_LENGTH)
        with s.null_conditional(f"{val} is None", on_null):
            if e == "string":
                s(f"{b} = {val}.encode('utf-8')")
                with s.block(f"if len({b}) > {MAX_STRING_LENGTH:#x}:"):
                    self.too_long(f)
                length = _INT16
            else:
                s(f"{b} = bytes({val})")
                length = _INT32
            if compact:
                s(f"ap(_uv(len({b}) + 1))")
            else:
                s(f"ap({s.const(length, '_S')}.pack(len({b})))")
            s(f"ap({b})")


_FIELD_OF_O = re.compile(r"\bo\.([A-Za-z_]\w*)")
_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*) =", re.MULTILINE)


def positional_encoder_source(
    spec: MessageSpec, version: int, struct_spec: StructSpec, names: tuple[str, ...]
) -> tuple[str, dict[str, Any]]:
    """The fast encoder of one struct taking its fields as arguments, in `names` order (then
    unknown_tagged_fields=()), instead of an object: the same generated text, each `o.<field>`
    read as the argument of that name. For callers that would make an object only to encode it
    (batch/builders.py). Every field the encoder reads must be named; no argument may share a
    name with a local of the generated text."""
    text, namespace = encoder_source(spec, version, struct_spec=struct_spec)
    head = "def encode(o):"
    if not text.startswith(head):
        raise AssertionError(f"{struct_spec.name} v{version}: the encoder does not start with {head!r}")
    read = set(_FIELD_OF_O.findall(text)) - {"unknown_tagged_fields"}
    if not read <= set(names):
        raise ValueError(f"{struct_spec.name} v{version}: names lack {sorted(read - set(names))}")
    body = _FIELD_OF_O.sub(r"\1", text[len(head):])
    clash = (set(_ASSIGNED.findall(body)) | set(namespace)) & {*names, "unknown_tagged_fields"}
    if clash or re.search(r"\bo\b", body):
        raise AssertionError(f"{struct_spec.name} v{version}: arguments {sorted(clash)} clash with the encoder's names")
    return f"def encode({', '.join(names)}, unknown_tagged_fields=()):" + body, namespace


def encoder_source(
    spec: MessageSpec, version: int, checked: bool = False, struct_spec: StructSpec | None = None
) -> tuple[str, dict[str, Any]]:
    g = EncoderGen(spec, version, checked)
    text = g.build(struct_spec)
    return text, g.src.namespace
