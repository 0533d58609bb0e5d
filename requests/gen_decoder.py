"""Generates the decoder of one (message, version): Kafka's MessageDataGenerator, read side.

Rules: decode(buf, pos) reads one body from pos and returns (object, end position). Lengths follow
Kafka: a negative (classic) or zero (compact) prefix is null, which a non-nullable field refuses;
a string is at most wire.MAX_STRING_LENGTH bytes; no array count may exceed the bytes remaining,
so nothing is allocated beyond the frame. Tagged sections must be strictly ascending and each
known tag must consume exactly its size; unknown tags are kept raw. Consecutive fixed-width reads
(and the first byte of the next varint) are fused into one unpack_from, and truncation surfaces
as struct.error or IndexError.

There is one flavour. Each line carries a note (emit.Source.noting): the field it reads, with the
loop variables that index its path, or for a fused read the fields in it and their widths. When
decode raises, codec.py finds the failing line in the traceback and explains the failure from
its note and the frame's `pos` and loop indices, without decoding again: a rejected input costs
what an accepted one does. A note is scoped to the block it is set in, so the note of a line is
the field last read on the way to it.
"""

from __future__ import annotations

import struct
import uuid
from contextlib import AbstractContextManager

import attrs

from . import wire
from .emit import Source
from .errors import DecodeError
from .spec import FIXED, ZERO_UUID, FieldSpec, MessageSpec, StructSpec, camel_case, fields_at
from .wire import MAX_STRING_LENGTH, VARINT_ONE_BYTE_MAX

_NUMERIC = {k: v for k, v in FIXED.items() if k != "uuid"}
_LENGTH_WIDTH = {"h": 2, "i": 4}  # classic length prefixes: int16 (strings), int32 (arrays, bytes)


@attrs.frozen
class FieldNote:
    """The field read by a line: path is a str.format template over the frame's loop indices."""

    path: str


@attrs.frozen
class RunNote:
    """A fused read: (path template, width) of each field in it, in order."""

    items: tuple[tuple[str, int], ...]


class DecoderGen:
    def __init__(self, spec: MessageSpec, version: int, classes: dict[str, type]) -> None:
        self.spec = spec
        self.v = version
        self.flexible = version in spec.flexible_versions
        self.classes = classes
        self.src = Source()
        self.pending: list[tuple[str, str, int, str]] = []  # (format, target variable, width, path)
        self.src.namespace.update(
            _ruv=wire.read_uvarint, _astruct=wire.array_struct, DecodeError=DecodeError,
            _UUID=uuid.UUID, _Z=ZERO_UUID, _ZB=ZERO_UUID.bytes, _str=str,
        )

    def build(self) -> Source:
        s = self.src
        with s.block("def decode(buf, pos):"):
            s("end = len(buf)")
            s.set_note(FieldNote(self.spec.name))  # what a fieldless version (ApiVersions v0-2) builds
            res = self.struct_body(self.spec.struct, self.spec.name, self.spec.name)
            s(f"return {res}, pos")
        return s

    # -- reads and their notes
    def path(self, where: str, name: str) -> str:
        return f"{where}.{name}" if name else where

    def push(self, fmt: str, target: str, width: int, where: str, name: str) -> None:
        """Queue a fixed-width read; flush() emits the queue as one unpack_from."""
        self.pending.append((fmt, target, width, self.path(where, name)))

    def flush(self) -> None:
        if not self.pending:
            return
        s = self.src
        items, self.pending = self.pending, []
        with s.noting(RunNote(tuple((path, width) for _, _, width, path in items))):
            if len(items) == 1 and items[0][0] == "B":
                s(f"{items[0][1]} = buf[pos]")
            else:
                st = s.const(struct.Struct(">" + "".join(i[0] for i in items)), "_S")
                targets = ", ".join(i[1] for i in items)
                s(f"{targets}{',' if len(items) == 1 else ''} = {st}.unpack_from(buf, pos)")
        s.set_note(FieldNote(items[-1][3]))
        s(f"pos += {sum(i[2] for i in items)}")

    def length(self, name: str, compact: bool, classic_fmt: str, where: str) -> str:
        """Read a length prefix; returns the variable holding N (negative = null)."""
        s = self.src
        n = s.fresh("n")
        if compact:
            self.push("B", n, 1, where, name)
            self.flush()
            with s.block(f"if {n} > {VARINT_ONE_BYTE_MAX:#x}:"):
                s(f"{n}, pos = _ruv(buf, pos - 1)")
            s(f"{n} -= 1")
        else:
            self.push(classic_fmt, n, _LENGTH_WIDTH[classic_fmt], where, name)
            self.flush()
        return n

    def if_null(self, f: FieldSpec, n: str, target: str, nullable: bool) -> AbstractContextManager[None]:
        """IsNullConditional over a length N: None when nullable here, else Kafka's refusal; the
        `with` body is the not-null branch."""
        if nullable:
            on_null = f"{target} = None"
        else:
            on_null = f"raise DecodeError({f'non-nullable field {camel_case(f.name)} was serialized as null'!r}, offset=pos)"
        return self.src.null_conditional(f"{n} < 0", on_null)

    # -- structs
    def struct_body(self, st: StructSpec, where: str, cls_name: str) -> str:
        """Emit reads for one struct; return the variable holding the built object."""
        s = self.src
        at = fields_at(st, self.v)
        values: dict[str, str] = {}
        for f in st.fields:
            if f in at.tagged:
                values[f.attr] = s.fresh("t")
            elif f in at.positional:
                values[f.attr] = self.value(f, where)
            else:
                values[f.attr] = self.default_expr(f)
        ut = "()"
        if self.flexible:
            self.flush()
            for f in at.tagged:
                s(f"{values[f.attr]} = {self.default_expr(f)}")
            ut = self.tag_section(st, at.tagged, values, where)
        self.flush()
        make = s.const(self.classes[cls_name].make, "_mk")  # type: ignore[attr-defined]
        res = s.fresh("r")
        args = ", ".join(values[f.attr] for f in st.fields)
        s(f"{res} = {make}({args}{', ' if args else ''}{ut})")
        return res

    def default_expr(self, f: FieldSpec) -> str:
        if f.struct is not None and not f.is_array:
            if f.default == "null":
                return "None"
            return f"{self.src.const(self.classes[f.element_type], '_c')}()"
        return self.src.const(f.default_value(), "_d")

    def tag_section(self, st: StructSpec, tagged: tuple[FieldSpec, ...], values: dict[str, str], where: str) -> str:
        s = self.src
        other_tags = sorted(f.tag for f in st.fields if f.tag is not None and f not in tagged)
        cnt, ut = s.fresh("nt"), s.fresh("ut")
        tags_path = self.path(where, "<tagged fields>")
        self.push("B", cnt, 1, where, "<tagged fields>")
        self.flush()
        with s.block(f"if {cnt} > {VARINT_ONE_BYTE_MAX:#x}:"):
            s(f"{cnt}, pos = _ruv(buf, pos - 1)")
        s(f"{ut} = ()")
        with s.block(f"if {cnt} < 0:"):
            s(f"raise DecodeError(f'negative tagged field count {{{cnt}}}', offset=pos)")
        with s.block(f"if {cnt}:"):
            last, tag, size, outer = s.fresh("last"), s.fresh("tag"), s.fresh("size"), s.fresh("eo")
            s(f"{ut} = []")
            s(f"{last} = -1")
            s(f"{outer} = end")
            with s.block(f"for _ in range({cnt}):"):
                s.set_note(FieldNote(tags_path))
                self.uvarint(tag)
                self.uvarint(size)
                with s.block(f"if {tag} <= {last}:"):
                    s(f"raise DecodeError(f'tag {{{tag}}} follows tag {{{last}}}: tags must be strictly ascending', offset=pos)")
                with s.block(f"if {size} < 0 or {size} > end - pos:"):
                    s(f"raise DecodeError(f'tagged field {{{tag}}} has size {{{size}}} but only {{end - pos}} bytes remain', offset=pos)")
                s(f"{last} = {tag}")
                s(f"end = pos + {size}")
                keyword = "if"
                for f in sorted(tagged, key=lambda f: f.tag or 0):
                    with s.block(f"{keyword} {tag} == {f.tag}:"):
                        val = self.value(f, where)
                        self.flush()
                        s(f"{values[f.attr]} = {val}")
                        with s.block("if pos != end:"):
                            s(f"raise DecodeError(f'tagged field {f.tag} ({f.name}) has size {{{size}}} but its value takes {{pos - end + {size}}} bytes', offset=pos)")
                    keyword = "elif"
                if other_tags:
                    with s.block(f"{keyword} {tag} in {s.const(frozenset(other_tags), '_d')}:"):
                        s(f"raise DecodeError(f'Tag {{{tag}}} is not valid for version {self.v}', offset=pos)")
                    keyword = "elif"
                if keyword == "elif":
                    with s.block("else:"):
                        self.keep_unknown_tag(ut, tag)
                else:
                    self.keep_unknown_tag(ut, tag)
                s(f"end = {outer}")
            s(f"{ut} = tuple({ut})")
        return ut

    def uvarint(self, target: str) -> None:
        """Read an unsigned varint at pos into target (a tag or its size; a subclass may inline it)."""
        self.src(f"{target}, pos = _ruv(buf, pos)")

    def keep_unknown_tag(self, ut: str, tag: str) -> None:
        self.src(f"{ut}.append(({tag}, bytes(buf[pos:end])))")
        self.src("pos = end")

    # -- values
    def value(self, f: FieldSpec, where: str) -> str:
        s = self.src
        e = f.element_type
        target = s.fresh("x")
        if f.is_array:
            n = self.length(f.name, self.flexible, "i", where)
            with self.if_null(f, n, target, self.v in f.nullable_versions):
                if e in _NUMERIC:
                    fmt, width, _ = _NUMERIC[e]
                    with s.block(f"if {n} * {width} > end - pos:"):
                        with s.block(f"if {n} > end - pos:"):
                            self.too_many(n)
                        s(f"raise DecodeError(f'Error reading an array of {{{n}}} {e} values: only {{end - pos}} bytes remain', offset=pos)")
                    s(f"{target} = _astruct({fmt!r}, {n}).unpack_from(buf, pos)")
                    s(f"pos += {n} * {width}")
                else:
                    with s.block(f"if {n} > end - pos:"):
                        self.too_many(n)
                    lst, i = s.fresh("l"), s.fresh("i")
                    s(f"{lst} = []")
                    with s.block(f"for {i} in range({n}):"):
                        sub_where = f"{where}.{f.name}[{{{i}}}]"
                        if f.struct is not None:
                            r = self.struct_body(f.struct, sub_where, f.struct.name)
                        else:
                            r = self.scalar(f, e, sub_where, element=True)
                        self.flush()
                        s(f"{lst}.append({r})")
                    s(f"{target} = tuple({lst})")
            return target
        if f.struct is not None:
            if self.v in f.nullable_versions:
                flag = s.fresh("nf")
                self.push("b", flag, 1, where, f.name)
                self.flush()
                with s.null_conditional(f"{flag} < 0", f"{target} = None"):
                    r = self.struct_body(f.struct, f"{where}.{f.name}", f.struct.name)
                    s(f"{target} = {r}")
                return target
            self.flush()
            return self.struct_body(f.struct, f"{where}.{f.name}", f.struct.name)
        return self.scalar(f, e, where, element=False)

    def too_many(self, n: str) -> None:
        self.src(
            f"raise DecodeError(f'Tried to allocate a collection of size {{{n}}}, but there are only "
            f"{{end - pos}} bytes remaining.', offset=pos)"
        )

    def scalar(self, f: FieldSpec, e: str, where: str, element: bool) -> str:
        """A primitive value; an array element's path is its indexed array (where) itself."""
        s = self.src
        target = s.fresh("x")
        if e in FIXED:
            fmt, width, _ = FIXED[e]
            self.push(fmt, target, width, where, "" if element else f.name)
            if e == "uuid":
                self.flush()
                s(f"{target} = _Z if {target} == _ZB else _UUID(bytes={target})")
            return target
        if e == "string":
            compact = (self.v in f.flexible_versions) if f.flexible_versions is not None else self.flexible
        else:
            compact = self.flexible
        n = self.length("" if element else f.name, compact, "h" if e == "string" else "i", where)
        with self.if_null(f, n, target, self.v in f.nullable_versions and not element):
            if e == "string":
                with s.block(f"if {n} > {MAX_STRING_LENGTH:#x}:"):
                    s(f"raise DecodeError(f'string field {camel_case(f.name)} had invalid length {{{n}}}', offset=pos)")
            with s.block(f"if {n} > end - pos:"):
                what = "string" if e == "string" else "byte array"
                s(f"raise DecodeError(f'Error reading {what} of length {{{n}}}, only {{end - pos}} bytes available', offset=pos)")
            if e == "string":
                s(f"{target} = _str(buf[pos:pos + {n}], 'utf-8')")
            else:
                s(f"{target} = bytes(buf[pos:pos + {n}])")
            s(f"pos += {n}")
        return target


def decoder_source(spec: MessageSpec, version: int, classes: dict[str, type]) -> Source:
    """The decoder's source, namespace and line notes (see the module rules)."""
    return DecoderGen(spec, version, classes).build()
