"""Generates the decoder of one (message, version): Kafka's MessageDataGenerator, read side.

Rules: decode(buf, pos) reads one body from pos and returns (object, end position). Lengths follow Kafka: a
negative (classic) or zero (compact) prefix is null, which a non-nullable field refuses; a
string is at most 0x7fff bytes; no array count may exceed the bytes remaining, so nothing is
allocated beyond the frame. Tagged sections must be strictly ascending and each known tag must
consume exactly its size; unknown tags are kept raw. The fast flavour fuses consecutive
fixed-width reads (and the first byte of the next varint) into one unpack_from and lets
truncation surface as struct.error; the `checked` flavour reads field by field, recording the
field path and offset, and runs only to explain a failure of the fast one.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from . import wire
from .emit import Source
from .errors import DecodeError
from .spec import FIXED, ZERO_UUID, FieldSpec, MessageSpec, StructSpec, camel_case

_NUMERIC = {k: v for k, v in FIXED.items() if k != "uuid"}


class DecoderGen:
    def __init__(self, spec: MessageSpec, version: int, classes: dict[str, type], checked: bool) -> None:
        self.spec = spec
        self.v = version
        self.flexible = version in spec.flexible_versions
        self.checked = checked
        self.classes = classes
        self.src = Source()
        self.pending: list[tuple[str, str, int]] = []  # (format, target variable, width)
        self.src.namespace.update(
            _ruv=wire.read_uvarint, _astruct=wire.array_struct, DecodeError=DecodeError,
            _UUID=uuid.UUID, _Z=ZERO_UUID, _ZB=bytes(16), _str=str,
        )

    def build(self) -> str:
        s = self.src
        s("def decode(buf, pos):")
        with s.indent():
            if self.checked:
                s("global _at, _o")
            s("end = len(buf)")
            res = self.struct_body(self.spec.struct, self.spec.name, self.spec.name)
            s(f"return {res}, pos")
        if self.checked:
            s.namespace.update(_at="", _o=0)
        return s.text()

    # -- bookkeeping
    def mark(self, where: str) -> None:
        """Checked flavour: remember which field is being read and where."""
        if self.checked:
            self.src(f"_at = {where}")
            self.src("_o = pos")

    def where_expr(self, where: str, name: str) -> str:
        text = f"{where}.{name}" if name else where
        return f"f'{text}'" if "{" in text else repr(text)

    def push(self, fmt: str, target: str, width: int, where: str, name: str) -> None:
        if self.checked:
            self.mark(self.where_expr(where, name))
            self.pending.append((fmt, target, width))
            self.flush()
        else:
            self.pending.append((fmt, target, width))

    def flush(self) -> None:
        if not self.pending:
            return
        s = self.src
        items, self.pending = self.pending, []
        if len(items) == 1 and items[0][0] == "B":
            s(f"{items[0][1]} = buf[pos]")
            s("pos += 1")
            return
        fmt = ">" + "".join(i[0] for i in items)
        st = s.const(struct.Struct(fmt), "_S")
        targets = ", ".join(i[1] for i in items)
        s(f"{targets}{',' if len(items) == 1 else ''} = {st}.unpack_from(buf, pos)")
        s(f"pos += {sum(i[2] for i in items)}")

    def length(self, f: FieldSpec, compact: bool, classic_fmt: str, where: str) -> str:
        """Queue the read of a length prefix; returns the variable holding N (-1 = null)."""
        n = self.src.fresh("n")
        if compact:
            self.push("B", n, 1, where, f.name)
            self.flush()
            self.src(f"if {n} > 0x7f:")
            with self.src.indent():
                self.src(f"{n}, pos = _ruv(buf, pos - 1)")
            self.src(f"{n} -= 1")
        else:
            self.push(classic_fmt, n, 2 if classic_fmt == "h" else 4, where, f.name)
            self.flush()
        return n

    def null_check(self, f: FieldSpec, n: str, target: str) -> None:
        """After a length: null handling. Leaves the source inside an `else:` block."""
        s = self.src
        s(f"if {n} < 0:")
        with s.indent():
            if self.v in f.nullable_versions:
                s(f"{target} = None")
            else:
                msg = f"non-nullable field {camel_case(f.name)} was serialized as null"
                s(f"raise DecodeError({msg!r}, offset=pos)")
        s("else:")
        s.depth += 1

    # -- structs
    def struct_body(self, st: StructSpec, where: str, cls_name: str) -> str:
        """Emit reads for one struct; return the variable holding the built object."""
        s = self.src
        v = self.v
        values: dict[str, str] = {}
        tagged: list[FieldSpec] = []
        for f in st.fields:
            if v in f.tagged_versions:
                tagged.append(f)
                var = s.fresh("t")
                values[f.attr] = var
            elif v in f.versions:
                values[f.attr] = self.value(f, where)
            else:
                values[f.attr] = self.default_expr(f)
        ut = "()"
        if self.flexible:
            self.flush()
            for f in tagged:
                s(f"{values[f.attr]} = {self.default_expr(f)}")
            ut = self.tag_section(st, tagged, values, where)
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

    def tag_section(self, st: StructSpec, tagged: list[FieldSpec], values: dict[str, str], where: str) -> str:
        s = self.src
        other_tags = sorted(f.tag for f in st.fields if f.tag is not None and self.v not in f.tagged_versions)
        cnt = s.fresh("nt")
        ut = s.fresh("ut")
        self.push("B", cnt, 1, where, "<tagged fields>")
        self.flush()
        s(f"if {cnt} > 0x7f:")
        with s.indent():
            s(f"{cnt}, pos = _ruv(buf, pos - 1)")
        s(f"{ut} = ()")
        s(f"if {cnt} < 0:")
        with s.indent():
            s(f"raise DecodeError(f'negative tagged field count {{{cnt}}}', offset=pos)")
        s(f"if {cnt}:")
        with s.indent():
            last, tag, size, outer = s.fresh("last"), s.fresh("tag"), s.fresh("size"), s.fresh("eo")
            s(f"{ut} = []")
            s(f"{last} = -1")
            s(f"{outer} = end")
            s(f"for _ in range({cnt}):")
            with s.indent():
                self.mark(self.where_expr(where, "<tagged fields>"))
                s(f"{tag}, pos = _ruv(buf, pos)")
                s(f"{size}, pos = _ruv(buf, pos)")
                s(f"if {tag} <= {last}:")
                with s.indent():
                    s(f"raise DecodeError(f'tag {{{tag}}} follows tag {{{last}}}: tags must be strictly ascending', offset=pos)")
                s(f"if {size} < 0 or {size} > end - pos:")
                with s.indent():
                    s(f"raise DecodeError(f'tagged field {{{tag}}} has size {{{size}}} but only {{end - pos}} bytes remain', offset=pos)")
                s(f"{last} = {tag}")
                s(f"end = pos + {size}")
                first = True
                for f in sorted(tagged, key=lambda f: f.tag or 0):
                    s(f"{'if' if first else 'elif'} {tag} == {f.tag}:")
                    first = False
                    with s.indent():
                        val = self.value(f, where)
                        self.flush()
                        s(f"{values[f.attr]} = {val}")
                        s("if pos != end:")
                        with s.indent():
                            s(f"raise DecodeError(f'tagged field {f.tag} ({f.name}) has size {{{size}}} but its value takes {{pos - end + {size}}} bytes', offset=pos)")
                if other_tags:
                    s(f"{'if' if first else 'elif'} {tag} in {s.const(frozenset(other_tags), '_d')}:")
                    first = False
                    with s.indent():
                        s(f"raise DecodeError(f'Tag {{{tag}}} is not valid for version {self.v}', offset=pos)")
                if not first:
                    s("else:")
                    s.depth += 1
                s(f"{ut}.append(({tag}, bytes(buf[pos:end])))")
                s("pos = end")
                if not first:
                    s.depth -= 1
                s(f"end = {outer}")
            s(f"{ut} = tuple({ut})")
        return ut

    # -- values
    def value(self, f: FieldSpec, where: str) -> str:
        s = self.src
        e = f.element_type
        target = s.fresh("x")
        if f.is_array:
            n = self.length(f, self.flexible, "i", where)
            self.null_check(f, n, target)
            if e in _NUMERIC:
                fmt, width, _ = _NUMERIC[e]
                s(f"if {n} * {width} > end - pos:")
                with s.indent():
                    s(f"if {n} > end - pos:")
                    with s.indent():
                        self.too_many(n)
                    s(f"raise DecodeError(f'Error reading an array of {{{n}}} {e} values: only {{end - pos}} bytes remain', offset=pos)")
                s(f"{target} = _astruct({fmt!r}, {n}).unpack_from(buf, pos)")
                s(f"pos += {n} * {width}")
            else:
                s(f"if {n} > end - pos:")
                with s.indent():
                    self.too_many(n)
                lst = s.fresh("l")
                i = s.fresh("i")
                s(f"{lst} = []")
                s(f"for {i} in range({n}):")
                with s.indent():
                    sub_where = f"{where}.{f.name}[{{{i}}}]"
                    if f.struct is not None:
                        r = self.struct_body(f.struct, sub_where, f.struct.name)
                    else:
                        r = self.scalar(f, e, sub_where, element=True)
                    self.flush()
                    s(f"{lst}.append({r})")
                s(f"{target} = tuple({lst})")
            s.depth -= 1
            return target
        if f.struct is not None:
            if self.v in f.nullable_versions:
                flag = s.fresh("nf")
                self.push("b", flag, 1, where, f.name)
                self.flush()
                s(f"if {flag} < 0:")
                with s.indent():
                    s(f"{target} = None")
                s("else:")
                with s.indent():
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
        s = self.src
        target = s.fresh("x")
        if e in FIXED:
            fmt, width, _ = FIXED[e]
            self.push(fmt, target, width, where, f.name)
            if e == "uuid":
                self.flush()
                s(f"{target} = _Z if {target} == _ZB else _UUID(bytes={target})")
            return target
        if e == "string":
            compact = (self.v in f.flexible_versions) if f.flexible_versions is not None else self.flexible
        else:
            compact = self.flexible
        n = self.length(f, compact, "h" if e == "string" else "i", where)
        nullable = self.v in f.nullable_versions and not element
        s(f"if {n} < 0:")
        with s.indent():
            if nullable:
                s(f"{target} = None")
            else:
                msg = f"non-nullable field {camel_case(f.name)} was serialized as null"
                s(f"raise DecodeError({msg!r}, offset=pos)")
        s("else:")
        with s.indent():
            if e == "string":
                s(f"if {n} > 0x7fff:")
                with s.indent():
                    s(f"raise DecodeError(f'string field {camel_case(f.name)} had invalid length {{{n}}}', offset=pos)")
            s(f"if {n} > end - pos:")
            with s.indent():
                what = "string" if e == "string" else "byte array"
                s(f"raise DecodeError(f'Error reading {what} of length {{{n}}}, only {{end - pos}} bytes available', offset=pos)")
            if e == "string":
                s(f"{target} = _str(buf[pos:pos + {n}], 'utf-8')")
            else:
                s(f"{target} = bytes(buf[pos:pos + {n}])")
            s(f"pos += {n}")
        return target


def decoder_source(spec: MessageSpec, version: int, classes: dict[str, type], checked: bool = False) -> tuple[str, dict[str, Any]]:
    g = DecoderGen(spec, version, classes, checked)
    text = g.build()
    return text, g.src.namespace
