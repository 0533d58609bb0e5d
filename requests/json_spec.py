"""Reading Kafka's JSON message specs into MessageSpec values.

Rules: any Kafka JSON spec is accepted (messages, headers, KRaft metadata records). Lines
starting with "//" are licence comments and are blanked, keeping line numbers. Every problem
raises SpecError naming the file, line and field, following the generator's FieldSpec checks.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from .spec import PRIMITIVES, FieldSpec, MessageSpec, StructSpec
from .versions import HIGHEST, NONE, Versions


class SpecError(ValueError):
    """A JSON spec that Kafka's generator would reject."""


def strip_comments(text: str) -> str:
    return "\n".join("" if line.lstrip().startswith("//") else line for line in text.splitlines())


def load_json_spec(path: str | os.PathLike[str]) -> MessageSpec:
    with open(path, encoding="utf-8") as fh:
        return parse_json_spec(fh.read(), source=os.fspath(path))


def parse_json_spec(text: str, source: str = "<spec>") -> MessageSpec:
    try:
        doc = json.loads(strip_comments(text))
    except json.JSONDecodeError as e:
        raise SpecError(f"{source}:{e.lineno}: invalid JSON: {e.msg}") from None
    if not isinstance(doc, dict):
        raise SpecError(f"{source}:1: a spec is a JSON object, not {type(doc).__name__}")
    return _Reader(text, source, doc).message(doc)


_NAME = re.compile(r'"name"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _name_lines(text: str, doc: Any) -> dict[int, int]:
    """id(object with a "name") -> its line: the text's "name" keys, in order, matched with a
    pre-order walk of the parsed document (JSON objects keep their key order)."""
    hits: list[tuple[int, str]] = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.lstrip().startswith("//"):
            hits.extend((i, m.group(1)) for m in _NAME.finditer(line))
    found: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("name"), str):
                found.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    return {id(obj): line for obj, (line, name) in zip(found, hits, strict=False) if obj["name"] == name}


class _Reader:
    def __init__(self, text: str, source: str, doc: Any) -> None:
        self.lines = text.splitlines()
        self.line_of = _name_lines(text, doc)
        self.current: Any = None
        self.source = source
        self.common: dict[str, dict[str, Any]] = {}
        self.built: dict[str, StructSpec] = {}

    def where(self, name: str) -> str:
        line = self.line_of.get(id(self.current))
        return f"{self.source}:{line}" if line else self.source

    def fail(self, name: str, why: str) -> SpecError:
        return SpecError(f"{self.where(name)}: field {name}: {why}")

    def message(self, doc: dict[str, Any]) -> MessageSpec:
        self.current = doc
        name = doc.get("name")
        if not isinstance(name, str):
            raise SpecError(f"{self.source}: the spec has no name")
        valid = self._versions(name, doc.get("validVersions"), "validVersions")
        flexible = self._versions(name, doc.get("flexibleVersions", "none"), "flexibleVersions")
        for s in self._list(doc, "commonStructs", name):
            if not isinstance(s, dict) or not isinstance(s.get("name"), str):
                raise SpecError(f"{self.source}: {name}: every common struct needs a name")
            self.common[s["name"]] = s
        api_key = doc.get("apiKey")
        fields = self.fields(self._list(doc, "fields", name), valid, flexible)
        self.current = doc
        try:
            key = int(api_key) if api_key is not None else None
        except (TypeError, ValueError):
            raise self.fail(name, f"apiKey {api_key!r} is not a number") from None
        return MessageSpec(
            name=name,
            type=doc.get("type", ""),
            api_key=key,
            valid_versions=valid,
            flexible_versions=flexible,
            fields=fields,
        )

    def _list(self, d: dict[str, Any], key: str, name: str) -> list[Any]:
        value = d.get(key, [])
        if not isinstance(value, list):
            raise self.fail(name, f"{key} must be a list")
        return value

    def _versions(self, name: str, text: Any, what: str) -> Versions:
        if text is None:
            raise self.fail(name, f"missing {what}")
        try:
            return Versions.parse(str(text))
        except ValueError as e:
            raise self.fail(name, f"{what}: {e}") from None

    def fields(self, docs: Any, parent: Versions, flexible: Versions) -> tuple[FieldSpec, ...]:
        out = []
        tags: dict[int, str] = {}
        for d in docs:
            if not isinstance(d, dict):
                raise SpecError(f"{self.where('')}: a field must be a JSON object, not {type(d).__name__}")
            f = self.field(d, parent, flexible)
            if f.tag is not None:
                if f.tag in tags:
                    raise self.fail(f.name, f"tag {f.tag} is used by {tags[f.tag]} too")
                tags[f.tag] = f.name
            out.append(f)
        return tuple(out)

    def field(self, d: dict[str, Any], parent: Versions, flexible: Versions) -> FieldSpec:
        self.current = d
        name = d.get("name")
        if not isinstance(name, str):
            raise SpecError(f"{self.source}: a field has no name")
        ftype = d.get("type")
        if not isinstance(ftype, str):
            raise self.fail(name, "missing type")
        versions = self._versions(name, d.get("versions"), "versions")
        nullable = self._versions(name, d["nullableVersions"], "nullableVersions") if "nullableVersions" in d else NONE
        tagged = self._versions(name, d["taggedVersions"], "taggedVersions") if "taggedVersions" in d else NONE
        try:
            tag = int(d["tag"]) if "tag" in d else None
        except (TypeError, ValueError):
            raise self.fail(name, f"tag {d['tag']!r} is not a number") from None
        fflex = self._versions(name, d["flexibleVersions"], "flexibleVersions") if "flexibleVersions" in d else None
        default = d.get("default")
        if default is not None and not isinstance(default, str):
            default = json.dumps(default) if isinstance(default, bool) else str(default)
        # FieldSpec.java's validation, in its order.
        if (tag is None) != tagged.empty:
            raise self.fail(name, "a tag requires taggedVersions and taggedVersions require a tag")
        if tag is not None and tag < 0:
            raise self.fail(name, f"tag {tag} is negative")
        if not tagged.empty:
            if tagged.highest != HIGHEST:
                raise self.fail(name, f"taggedVersions {tagged} must be open-ended")
            if not tagged.is_subset_of(versions) or not tagged.is_subset_of(flexible):
                raise self.fail(name, f"taggedVersions {tagged} must be a subset of versions and flexibleVersions")
        elem = ftype[2:] if ftype.startswith("[]") else ftype
        if fflex is not None and elem not in ("string", "bytes") or (fflex is not None and ftype.startswith("[]")):
            raise self.fail(name, "only string and bytes fields may override flexibleVersions")
        struct = None
        if elem not in PRIMITIVES:
            if not elem[:1].isupper():
                raise self.fail(name, f"unknown type {ftype}")
            struct = self.struct(elem, d, versions, flexible)
        elif "fields" in d:
            raise self.fail(name, f"a {ftype} field cannot have nested fields")
        return FieldSpec(
            name=name,
            type=ftype,
            versions=versions,
            about=d.get("about", ""),
            nullable_versions=nullable,
            tagged_versions=tagged,
            tag=tag,
            default=default,
            ignorable=bool(d.get("ignorable", False)),
            flexible_versions=fflex,
            struct=struct,
        )

    def struct(self, name: str, d: dict[str, Any], versions: Versions, flexible: Versions) -> StructSpec:
        if "fields" in d:
            spec = StructSpec(name, versions, self.fields(self._list(d, "fields", name), versions, flexible))
            self.current = d
            return spec
        if name in self.built:
            return self.built[name]
        common = self.common.get(name)
        if common is None:
            raise self.fail(d["name"], f"unknown struct type {name}")
        outer = self.current
        self.current = common
        cv = self._versions(name, common.get("versions", "0+"), "versions")
        s = StructSpec(name, cv, self.fields(self._list(common, "fields", name), cv, flexible))
        self.current = outer
        self.built[name] = s
        return s
