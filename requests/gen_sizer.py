"""Generates the sizer of one (message, version): the length encode would write, without writing.

Rules: Kafka sizes a message before serialising it (clients/.../protocol/MessageSizeAccumulator.java:22-55,
the addSize method MessageDataGenerator.java:1057-1103 writes into every generated message, 3.9):
fixed widths, then per field its length prefix -- a varint of length + 1 when compact
(ByteUtils.sizeOfUnsignedVarint, ByteUtils.java:493), int16 for a classic string, int32 for a
classic array or bytes (MessageDataGenerator.java:1180-1240) --, a nullable struct's one byte,
and in flexible versions the tagged section: the count as a varint, then per tag varint(tag) +
varint(size) + size (MessageDataGenerator.java:1084-1101, 1148-1171). This generator walks the spec the way
gen_encoder.py does (same `fields_at`, same absent-field check, same compact-string choice,
same null and string-length refusals), so `size(o) == len(encode(o))` for every object the
encoder accepts: tests/requests/test_sizes.py checks it for every message and version. It
checks no integer's range (struct.pack does that when encoding): the sizer is for values that
encode, such as the batch's request bodies; codec.sizer_for runs the encoder to explain any
failure. Fixed-width fields of a struct are summed when the code is generated, so the code
only touches variable-width fields.
"""

from __future__ import annotations

from typing import Any

from . import wire
from .emit import Source
from .errors import EncodeError, UnsupportedVersionError
from .gen_encoder import EncoderGen
from .spec import FIXED, FieldSpec, MessageSpec, StructSpec, fields_at
from .wire import MAX_STRING_LENGTH, uvarint_size

_NULLABLE_STRUCT_MARKER = 1  # a nullable struct is preceded by an int8: -1 for null, 1 otherwise
_CLASSIC_STRING_LENGTH = 2  # int16
_CLASSIC_LENGTH = 4  # int32: classic arrays, bytes and records
_ONE_BYTE_COMPACT = 127  # a compact length m is the varint of m + 1: one byte while m + 1 <= 127


class SizerGen(EncoderGen):
    """EncoderGen's walk with sizes instead of bytes: every emitted statement adds to the local
    named by `self.acc` (absent-field checks and refusals are the encoder's own)."""

    def __init__(self, spec: MessageSpec, version: int) -> None:
        super().__init__(spec, version, checked=False)
        self.src = Source()
        self.src.namespace.update(
            _uvs=uvarint_size, _tsize=wire.tags_size, EncodeError=EncodeError, UnsupportedVersionError=UnsupportedVersionError,
        )
        self.acc = "n"

    def build(self, struct_spec: StructSpec | None = None) -> str:
        s = self.src
        st = struct_spec or self.spec.struct
        with s.block("def size(o):"):
            s("n = 0")
            self.struct_body(st, "o", st.name)
            s("return n")
        return s.text()

    def add(self, expr: str) -> None:
        self.src(f"{self.acc} += {expr}")

    def struct_body(self, st: StructSpec, o: str, where: str) -> None:
        s = self.src
        at = fields_at(st, self.v)
        for f in at.absent:
            if not f.ignorable:
                self.absent_check(f, o)
        fixed = sum(FIXED[f.type][1] for f in at.positional if not f.is_array and f.type in FIXED)
        if fixed:
            self.add(str(fixed))
        for f in at.positional:
            if f.is_array or f.type not in FIXED:
                self.value(f, f"{o}.{f.attr}", where)
        if self.flexible:
            self.tag_section(at.tagged, o, where)
        else:
            with s.block(f"if {o}.unknown_tagged_fields:"):
                msg = f"Tagged fields were set, but version {self.v} of this message does not support them."
                s(f"raise UnsupportedVersionError({msg!r})")

    def tag_section(self, tagged: tuple[FieldSpec, ...], o: str, where: str) -> None:
        s = self.src
        if not tagged:
            with s.block(f"if {o}.unknown_tagged_fields:"):
                self.add(f"_tsize([], {o}.unknown_tagged_fields)")
            with s.block("else:"):
                self.add("1")  # the empty section: its count, 0
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
                sub, saved = s.fresh("t"), self.acc
                s(f"{sub} = 0")
                self.acc = sub
                self.value(f, val, where)
                self.acc = saved
                s(f"{kt}.append(({f.tag}, {sub}))")
        with s.block(f"if {kt} or {o}.unknown_tagged_fields:"):
            self.add(f"_tsize({kt}, {o}.unknown_tagged_fields)")
        with s.block("else:"):
            self.add("1")

    def refusal(self, f: FieldSpec, nullable: bool, null_size: int) -> str:
        """The statement for a None value: its null length's size when nullable, else the
        encoder's refusal."""
        if nullable:
            return f"{self.acc} += {null_size}"
        return self.null_value(f, False, False, b"")

    def value(self, f: FieldSpec, val: str, where: str) -> None:
        s = self.src
        e = f.element_type
        if f.is_array:
            a = s.fresh("a")
            s(f"{a} = {val}")
            null_size = 1 if self.flexible else _CLASSIC_LENGTH
            with s.null_conditional(f"{a} is None", self.refusal(f, self.v in f.nullable_versions, null_size)):
                m = s.fresh("m")
                s(f"{m} = len({a})")
                self.add(self.compact_length(m) if self.flexible else str(_CLASSIC_LENGTH))
                if e in FIXED:
                    self.add(f"{FIXED[e][1]} * {m}")
                    return
                el = s.fresh("e")
                with s.block(f"for {el} in {a}:"):
                    if f.struct is not None:
                        self.struct_body(f.struct, el, where)
                    else:
                        self.scalar(f, e, el, nullable=False)
            return
        if f.struct is not None:
            if self.v not in f.nullable_versions:
                self.struct_body(f.struct, val, where)
                return
            with s.null_conditional(f"{val} is None", f"{self.acc} += {_NULLABLE_STRUCT_MARKER}"):
                self.add(str(_NULLABLE_STRUCT_MARKER))
                self.struct_body(f.struct, val, where)
            return
        self.scalar(f, e, val, self.v in f.nullable_versions)

    def scalar(self, f: FieldSpec, e: str, val: str, nullable: bool) -> None:
        s = self.src
        if e in FIXED:
            self.add(str(FIXED[e][1]))
            return
        compact = self.str_flexible(f) if e == "string" else self.flexible
        classic = _CLASSIC_STRING_LENGTH if e == "string" else _CLASSIC_LENGTH
        x, m = s.fresh("x"), s.fresh("m")
        s(f"{x} = {val}")
        with s.null_conditional(f"{x} is None", self.refusal(f, nullable, 1 if compact else classic)):
            if e == "string":
                s(f"{m} = len({x}) if {x}.isascii() else len({x}.encode('utf-8'))")
                with s.block(f"if {m} > {MAX_STRING_LENGTH:#x}:"):
                    self.too_long(f)
            else:
                s(f"{m} = len({x}) if type({x}) is bytes else len(bytes({x}))")
            self.add(f"{self.compact_length(m)} + {m}" if compact else f"{classic} + {m}")

    @staticmethod
    def compact_length(m: str) -> str:
        """The size of a compact length prefix (varint of m + 1), one byte without a call below 127."""
        return f"(1 if {m} < {_ONE_BYTE_COMPACT} else _uvs({m} + 1))"


def sizer_source(spec: MessageSpec, version: int, struct_spec: StructSpec | None = None) -> tuple[str, dict[str, Any]]:
    g = SizerGen(spec, version)
    text = g.build(struct_spec)
    return text, g.src.namespace
