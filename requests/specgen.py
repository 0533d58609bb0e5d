"""Writes catalog.py, the project's description of the messages it ships, from Kafka's JSON.

Usage: python -m ctrlbatch.requests.specgen [../shared/kafka/message] > requests/catalog.py
(--help for the options).

Rules: the JSON files are the truth; what the catalog holds beyond them (newer versions seen
only upstream, see ../shared/kafka/message/SOURCE.txt) is listed in EXTENSIONS, applied here
and recorded in the catalog's BEYOND_JSON so the comparison test can take it back out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import attrs

from .json_spec import SpecError, load_json_spec, strip_comments
from .spec import FieldSpec, MessageSpec, StructSpec, iter_structs, snake_case
from .versions import Versions

SHIPPED = (
    "RequestHeader",
    "ResponseHeader",
    "LeaderAndIsrRequest",
    "LeaderAndIsrResponse",
    "StopReplicaRequest",
    "StopReplicaResponse",
    "UpdateMetadataRequest",
    "UpdateMetadataResponse",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResponse",
    "BrokerHeartbeatRequest",
    "BrokerHeartbeatResponse",
)

# KIP-1066 (Kafka 4.3 development line): message -> (new validVersions, fields appended).
EXTENSIONS: dict[str, tuple[str, tuple[FieldSpec, ...]]] = {
    "BrokerRegistrationRequest": (
        "0-5",
        (
            FieldSpec(
                "CordonedLogDirs", "[]uuid", Versions.parse("5+"),
                about="Log directories that are cordoned.",
                tagged_versions=Versions.parse("5+"), tag=0,
            ),
        ),
    ),
    "BrokerRegistrationResponse": ("0-5", ()),
    "BrokerHeartbeatRequest": (
        "0-2",
        (
            FieldSpec(
                "CordonedLogDirs", "[]uuid", Versions.parse("2+"),
                about="Log directories that are cordoned.",
                tagged_versions=Versions.parse("2+"), tag=1,
            ),
        ),
    ),
    "BrokerHeartbeatResponse": ("0-2", ()),
}


def extend(spec: MessageSpec) -> MessageSpec:
    ext = EXTENSIONS.get(spec.name)
    if ext is None:
        return spec
    valid, extra = ext
    return attrs.evolve(spec, valid_versions=Versions.parse(valid), fields=spec.fields + extra)


def const_name(name: str) -> str:
    return snake_case(name).upper()


class Renderer:
    def __init__(self) -> None:
        self.commons: dict[str, str] = {}
        self.out: list[str] = []

    def field(self, f: FieldSpec, indent: str) -> str:
        args = [repr(f.name), repr(f.type), repr(str(f.versions))]
        kw = []
        if not f.nullable_versions.empty:
            kw.append(f"nullable={str(f.nullable_versions)!r}")
        if not f.tagged_versions.empty:
            kw.append(f"tagged={str(f.tagged_versions)!r}, tag={f.tag}")
        if f.default is not None:
            kw.append(f"default={f.default!r}")
        if f.ignorable:
            kw.append("ignorable=True")
        if f.flexible_versions is not None:
            kw.append(f"flexible={str(f.flexible_versions)!r}")
        if f.about:
            kw.append(f"about={f.about!r}")
        head = f"{indent}field({', '.join(args + kw)}"
        if f.struct is None:
            return head + ")"
        if f.struct.name in self.commons:
            return head + f", struct={self.commons[f.struct.name]})"
        body = self.struct(f.struct, indent + "    ")
        return head + f",\n{indent}    struct={body})"

    def struct(self, s: StructSpec, indent: str) -> str:
        lines = [f"struct({s.name!r}, {str(s.versions)!r},"]
        for f in s.fields:
            lines.append(self.field(f, indent + "    ") + ",")
        lines.append(f"{indent})")
        return "\n".join(lines)

    def message(self, m: MessageSpec, commons: list[StructSpec]) -> None:
        for s in commons:
            cname = "_" + const_name(s.name)
            self.out.append(f"{cname} = {self.struct(s, '')}\n")
            self.commons[s.name] = cname
        lines = [
            f"{const_name(m.name)} = message(",
            f"    {m.name!r}, {m.type!r}, {m.api_key!r}, {str(m.valid_versions)!r}, {str(m.flexible_versions)!r},",
        ]
        for f in m.fields:
            lines.append(self.field(f, "    ") + ",")
        lines.append(")\n")
        self.out.append("\n".join(lines))


def common_structs(path: str) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        doc = json.loads(strip_comments(fh.read()))
    return [s["name"] for s in doc.get("commonStructs", ())]


def render(folder: str) -> str:
    r = Renderer()
    r.out.append(
        '"""The project\'s own description of the messages it ships: fields, types, versions,\n'
        "nullable/tagged/ignorable flags and defaults, one declaration per message.\n\n"
        "Generated from Kafka's JSON specs by `python -m ctrlbatch.requests.specgen`; the JSON files\n"
        "are the truth and tests/requests/test_catalog.py compares this module with them field by\n"
        "field. BEYOND_JSON lists what is here and not in those files (KIP-1066, SOURCE.txt).\n"
        '"""\n\n'
        "# ruff: noqa: E501\n"
        "from .spec import field, message, struct\n"
    )
    names = []
    for name in SHIPPED:
        path = os.path.join(folder, name + ".json")
        spec = extend(load_json_spec(path))
        wanted = common_structs(path)
        commons = [s for s in iter_structs(spec.fields) if s.name in wanted]
        r.commons = {}
        r.message(spec, commons)
        names.append(const_name(name))
    r.out.append("MESSAGES = (\n" + "".join(f"    {n},\n" for n in names) + ")\n")
    ext = {k: (v[0], tuple(f.name for f in v[1])) for k, v in EXTENSIONS.items()}
    r.out.append(f"BEYOND_JSON = {ext!r}\n")
    return "\n\n".join(r.out)


DEFAULT_FOLDER = "../shared/kafka/message"


def main(argv: list[str] | None = None) -> int:
    """The command line: writes the catalog to stdout; a missing spec is an error for a person."""
    parser = argparse.ArgumentParser(
        prog="python -m ctrlbatch.requests.specgen",
        description="Write catalog.py (the messages ctrlbatch ships) from Kafka's JSON message specs, to stdout.",
    )
    parser.add_argument(
        "folder", nargs="?", default=DEFAULT_FOLDER,
        help=f"the folder of Kafka's JSON message specs (default: {DEFAULT_FOLDER})",
    )
    args = parser.parse_args(argv)
    if not os.path.isdir(args.folder):
        parser.error(f"{args.folder!r} is not a folder of Kafka JSON message specs")
    missing = [n for n in SHIPPED if not os.path.isfile(os.path.join(args.folder, n + ".json"))]
    if missing:
        parser.error(f"{args.folder!r} lacks {', '.join(n + '.json' for n in missing)}")
    try:
        text = render(args.folder)
    except SpecError as e:
        parser.error(str(e))
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
