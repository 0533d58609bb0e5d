"""The records table's ``data`` straight from a record's bytes: decode and JSON in one generated function.

Rules of this module:
- ``json_decoder(type_id, version)`` is ``(buf, pos) -> (text, end)`` where text is exactly
  ``json_fast.to_json_text(decoded, version)`` of the record body the fast decoder
  (record_classes.fast_decoder) reads at pos, and end is where that decoder stops: the same
  JSON (json_convert's rules: camelCase keys in schema order, absent fields left out, tagged
  fields only when they differ from their default, uuid as URL-safe base64, bytes as base64,
  the C JSON encoder's escaping of strings and its spelling of floats) without building the
  decoded objects, the dict of each, or the encoder's walk over them.
- Why: making a row's ``data`` cost about twice the decoding itself (decode to objects, then
  objects to a dict, then the dict to text; benchmarks/tables_bench.py), and the table never
  needs the objects. The function is requests/gen_decoder.py's decoder of the (type, version)
  with only the end of each struct changed (``FusedGen.struct_body``): every read, length check,
  null refusal and tag rule is the decoder's own statements, so it accepts and refuses exactly
  the bytes the decoder does (it raises where the decoder raises; the reader then decodes the
  record again through decode_value, which says what is wrong), and
  tests/replay/test_tables_json_fused.py checks the text against to_json_text for every record
  type and version on generated records.
- A struct's values stay the decoder's (ints, strs, tuples) until the struct ends, so a tagged
  field is compared with its default as json_fast does; then each written field becomes its
  JSON piece and the struct one f-string (or, with tagged fields, its written pieces joined).
  A uuid becomes its quoted text as it is read (a topic id recurs: the text of the last 16,384
  ids is kept, looked up inline), and so does an int32 array (a replica set, an ISR recur: it
  is read as its bytes, after the decoder's length checks, and the text of the last 65,536 is
  kept, keyed by those bytes). A tag and its size are read with their one-byte case inline. A tagged uuid or single struct (none
  in the catalog) would be compared with an object default: such a spec gets no fused decoder
  (``_fusable``), its records take the reference path.
- Memoised per (type, version); ``JSON_FORM`` is the reader's record form that gives a data
  record's ``data`` as this text (segments.RecordForm).
"""

from __future__ import annotations

import base64
import functools
import json
import struct
import uuid
from typing import Any

from ctrlbatch.requests.emit import Source
from ctrlbatch.requests.gen_decoder import DecoderGen
from ctrlbatch.requests.spec import ZERO_UUID, FieldSpec, StructSpec, camel_case, fields_at

from ..log.segments import RecordForm
from ..schema.json_convert import uuid_to_json
from ..schema.metadata_classes import RECORD_CLASSES
from ..schema.record_classes import FastDecoder, ruv_short_first, struct_classes
from .json_fast import to_json_text

__all__ = ["JSON_FORM", "json_decoder", "json_decoder_source"]

_esc = json.encoder.encode_basestring_ascii  # the C encoder's string escaping
_float = json.JSONEncoder(separators=(",", ":")).encode  # the C encoder's float spelling (NaN, Infinity)

_UUIDS: dict[bytes, str] = {}
UUID_CACHE = 1 << 14


def _uuid_text(bytes: bytes) -> str:  # noqa: A002 (the keyword the generated code passes)
    """The quoted JSON text of the uuid of 16 bytes (kept for the recent ids, module rules)."""
    t = _UUIDS.get(bytes)
    if t is None:
        if len(_UUIDS) >= UUID_CACHE:
            _UUIDS.clear()
        t = _UUIDS[bytes] = f'"{uuid_to_json(uuid.UUID(bytes=bytes))}"'
    return t


_INTS: dict[bytes, str] = {}
INTS_CACHE = 1 << 16


def _ints_text(raw: bytes) -> str:
    """The JSON text of an int32 array from its bytes (kept for the recent arrays, module rules)."""
    if len(_INTS) >= INTS_CACHE:
        _INTS.clear()
    t = _INTS[raw] = "[" + ",".join(map(str, struct.unpack(f">{len(raw) >> 2}i", raw))) + "]"
    return t


def _raw_ints(f: FieldSpec) -> bool:
    """An int32 array: read as its bytes, which key the cache of its text (module rules)."""
    return f.is_array and f.struct is None and f.element_type == "int32"


def _bytes_text(v: bytes) -> str:
    return f'"{base64.b64encode(v).decode("ascii")}"'


def _bool_text(v: bool) -> str:
    return "true" if v else "false"


# element type -> the function making its JSON text (None: str, the integer types; "": the value
# is its text already, a uuid)
_SCALAR_TEXT: dict[str, str | None] = {
    "bool": "_jbool", "int8": None, "int16": None, "uint16": None, "int32": None, "uint32": None, "int64": None,
    "float64": "_jfloat", "string": "_jstr", "bytes": "_jbytes", "records": "_jbytes", "uuid": "",
}


class FusedGen(DecoderGen):
    """gen_decoder's DecoderGen whose structs end in their JSON text instead of an object."""

    def __init__(self, spec: Any, version: int, classes: dict[str, type]) -> None:
        super().__init__(spec, version, classes)
        self.src.namespace.update(
            _UUID=_uuid_text, _UC=_UUIDS, _Z=_uuid_text(ZERO_UUID.bytes), _ruv=ruv_short_first, _jbool=_bool_text,
            _IC=_INTS,
            _jints=_ints_text,
            _jfloat=_float, _jstr=_esc, _jbytes=_bytes_text,
        )

    def struct_body(self, st: StructSpec, where: str, cls_name: str) -> str:
        """Emit reads for one struct (the decoder's); return the variable holding its JSON text."""
        s = self.src
        at = fields_at(st, self.v)
        values: dict[str, str] = {}
        for f in st.fields:
            if f in at.tagged:
                values[f.attr] = s.fresh("t")
            elif f in at.positional:
                values[f.attr] = self.value(f, where)
        if self.flexible:
            self.flush()
            for f in at.tagged:
                s(f"{values[f.attr]} = {self.default_expr(f)}")  # an int32 array's: its bytes (or None)
            self.tag_section(st, at.tagged, values, where)
        self.flush()
        res = s.fresh("r")
        pieces: list[tuple[str | None, str, str]] = []  # (condition or None, statement or "", f-string body)
        for f in st.fields:
            if f not in at.tagged and f not in at.positional:
                continue
            v = values[f.attr]
            key = _esc(camel_case(f.name))
            tagged = f in at.tagged
            text = self.text_of(f, v, nullable=self.v in f.nullable_versions)
            cond = None
            if tagged:
                if f.is_array or f.struct is not None:
                    empty = "b''" if _raw_ints(f) else "()"
                    cond = f"{v} is not None and {v} != {empty}" if f.default != "null" else f"{v} is not None"
                else:
                    cond = f"{v} != {self.default_expr(f)}"
            if text == v:
                pieces.append((cond, "", f"{key}:{{{v}}}"))
            else:
                j = s.fresh("j")
                pieces.append((cond, f"{j} = {text}", f"{key}:{{{j}}}"))
        if all(cond is None for cond, _, _ in pieces):
            for _, stmt, _ in pieces:
                if stmt:
                    s(stmt)
            s(f"{res} = f'{{{{{','.join(p for _, _, p in pieces)}}}}}'")
            return res
        parts = s.fresh("p")
        s(f"{parts} = []")
        group: list[str] = []  # consecutive unconditional pieces share an f-string
        for cond, stmt, piece in pieces:
            if cond is None:
                if stmt:
                    s(stmt)
                group.append(piece)
                continue
            if group:
                s(f"{parts}.append(f'{','.join(group)}')")
                group = []
            with s.block(f"if {cond}:"):
                if stmt:
                    s(stmt)
                s(f"{parts}.append(f'{piece}')")
        if group:
            s(f"{parts}.append(f'{','.join(group)}')")
        s(f"{res} = '{{' + ','.join({parts}) + '}}'")
        return res

    def default_expr(self, f: FieldSpec) -> str:
        if _raw_ints(f):
            return "None" if f.default == "null" else "b''"
        return super().default_expr(f)

    def uvarint(self, target: str) -> None:
        """A tag or its size: the one-byte case inline (ruv_short_first's, without the call)."""
        s = self.src
        s(f"{target} = buf[pos]")
        with s.block(f"if {target} < 0x80:"):
            s("pos += 1")
        with s.block("else:"):
            s(f"{target}, pos = _ruv(buf, pos)")

    def value(self, f: FieldSpec, where: str) -> str:
        """The decoder's read of a field, but an int32 array is kept as its bytes (the same checks)."""
        if not _raw_ints(f):
            return super().value(f, where)
        s = self.src
        target = s.fresh("x")
        n = self.length(f.name, self.flexible, "i", where)
        with self.if_null(f, n, target, self.v in f.nullable_versions):
            with s.block(f"if {n} * 4 > end - pos:"):
                with s.block(f"if {n} > end - pos:"):
                    self.too_many(n)
                s(f"raise DecodeError(f'Error reading an array of {{{n}}} int32 values: only {{end - pos}} bytes remain', offset=pos)")
            s(f"{target} = buf[pos:pos + {n} * 4]")
            s(f"pos += {n} * 4")
        return target

    def scalar(self, f: FieldSpec, e: str, where: str, element: bool) -> str:
        """The decoder's read of a primitive, but a uuid's text is looked up in its cache inline."""
        if e != "uuid":
            return super().scalar(f, e, where, element)
        target = self.src.fresh("x")
        self.push("16s", target, 16, where, "" if element else f.name)
        self.flush()
        self.src(f"{target} = _UC.get({target}) or _UUID(bytes={target})")
        return target

    def text_of(self, f: FieldSpec, v: str, *, nullable: bool) -> str:
        """The expression of field f's JSON text from its decoded value v (a struct's: its text)."""
        if f.struct is not None:
            text = f"'[' + ','.join({v}) + ']'" if f.is_array else v
        elif f.is_array:
            conv = _SCALAR_TEXT[f.element_type]
            if _raw_ints(f):  # a replica set or an ISR recurs: its bytes key the cache
                text = f"(_IC.get({v}) or _jints({v}))"
            elif conv is None:
                text = f"'[' + ','.join(map(str, {v})) + ']'"
            else:
                elements = v if conv == "" else f"map({conv}, {v})"
                text = f"'[' + ','.join({elements}) + ']'"
        else:
            conv = _SCALAR_TEXT[f.type]
            text = v if not conv else f"{conv}({v})"
        return f"'null' if {v} is None else {text}" if nullable else text


def _fusable(st: StructSpec) -> bool:
    """No tagged uuid and no tagged single struct (whose defaults would be compared as objects);
    no metadata record has one. A spec that has one gets no fused decoder: its records take the
    reference path (decode_value, then to_json_text)."""
    for f in st.fields:
        if str(f.tagged_versions) != "none" and (f.type == "uuid" or (f.struct is not None and not f.is_array)):
            return False
        if f.struct is not None and not _fusable(f.struct):
            return False
    return True


def _classes(type_id: int) -> dict[str, type] | None:
    cls = RECORD_CLASSES.get(type_id)
    return None if cls is None else struct_classes(cls)


def _generated(type_id: int, version: int) -> Source | None:
    """FusedGen's source for a known (type, version) of a fusable spec, else None."""
    classes = _classes(type_id)
    cls = RECORD_CLASSES.get(type_id)
    if classes is None or cls is None or not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
        return None
    if not _fusable(cls.MESSAGE.struct):
        return None
    return FusedGen(cls.MESSAGE, version, classes).build()


def json_decoder_source(type_id: int, version: int) -> str | None:
    """The generated source of json_decoder(type_id, version) (for reading and tests)."""
    src = _generated(type_id, version)
    return None if src is None else src.text()


@functools.cache
def json_decoder(type_id: int, version: int) -> FastDecoder | None:
    """(buf, pos) -> (JSON text, end) of metadata record type_id at version, or None for an
    unknown type or version (module rules)."""
    src = _generated(type_id, version)
    if src is None:
        return None
    fn: FastDecoder = src.compile(f"<ctrlbatch json decode {RECORD_CLASSES[type_id].MESSAGE.name} v{version}>")["decode"]
    return fn


JSON_FORM = RecordForm(fast={}, make=json_decoder, convert=to_json_text)
"""The record form whose data records' ``data`` is their JSON text (module rules)."""
