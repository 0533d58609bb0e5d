"""Writes catalog.py, the project's description of the messages it ships, from Kafka's JSON.

Usage: python -m ctrlbatch.requests.specgen [../shared/kafka/message] > requests/catalog.py
(--help for the options).

Rules: the JSON files are the truth; what the catalog holds beyond them (newer versions seen
only upstream, see ../shared/kafka/message/SOURCE.txt) is listed in EXTENSIONS, applied here
and recorded in the catalog's BEYOND_JSON so the comparison test can take it back out.
Messages that ../shared/kafka/message does not hold at all (ApiVersions, which both simulated
servers answer) are declared here in PAST_SHARED, field for field as Kafka 3.9's JSON says
(cited per message), rendered into the catalog like the others and listed in its
NOT_IN_SHARED; they are checked against kio 0.5.0 (tests/requests/test_kio_crosscheck.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import attrs

from .json_spec import SpecError, load_json_spec, strip_comments
from .spec import FieldSpec, MessageSpec, StructSpec, field, iter_structs, message, snake_case, struct
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


# Messages beyond ../shared/kafka/message, as Kafka 3.9 declares them (field names, types,
# versions, tags, defaults, ignorable flags and about texts as in the JSON; mapKey has no
# effect on the wire and the catalog does not record it).
_API_VERSIONS_REQUEST = message(  # clients/src/main/resources/common/message/ApiVersionsRequest.json:16-34 (3.9)
    "ApiVersionsRequest", "request", 18, "0-4", "3+",
    field("ClientSoftwareName", "string", "3+", ignorable=True, about="The name of the client."),
    field("ClientSoftwareVersion", "string", "3+", ignorable=True, about="The version of the client."),
)
_API_VERSIONS_RESPONSE = message(  # clients/src/main/resources/common/message/ApiVersionsResponse.json:16-79 (3.9)
    "ApiVersionsResponse", "response", 18, "0-4", "3+",
    field("ErrorCode", "int16", "0+", about="The top-level error code."),
    field(
        "ApiKeys", "[]ApiVersion", "0+", about="The APIs supported by the broker.",
        struct=struct(
            "ApiVersion", "0+",
            field("ApiKey", "int16", "0+", about="The API index."),
            field("MinVersion", "int16", "0+", about="The minimum supported version, inclusive."),
            field("MaxVersion", "int16", "0+", about="The maximum supported version, inclusive."),
        ),
    ),
    field(
        "ThrottleTimeMs", "int32", "1+", ignorable=True,
        about="The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.",
    ),
    field(
        "SupportedFeatures", "[]SupportedFeatureKey", "3+", tagged="3+", tag=0, ignorable=True,
        about="Features supported by the broker. Note: in v0-v3, features with MinSupportedVersion = 0 are omitted.",
        struct=struct(
            "SupportedFeatureKey", "3+",
            field("Name", "string", "3+", about="The name of the feature."),
            field("MinVersion", "int16", "3+", about="The minimum supported version for the feature."),
            field("MaxVersion", "int16", "3+", about="The maximum supported version for the feature."),
        ),
    ),
    field(
        "FinalizedFeaturesEpoch", "int64", "3+", tagged="3+", tag=1, default="-1", ignorable=True,
        about="The monotonically increasing epoch for the finalized features information. Valid values are >= 0. A value of -1 is special and represents unknown epoch.",
    ),
    field(
        "FinalizedFeatures", "[]FinalizedFeatureKey", "3+", tagged="3+", tag=2, ignorable=True,
        about="List of cluster-wide finalized features. The information is valid only if FinalizedFeaturesEpoch >= 0.",
        struct=struct(
            "FinalizedFeatureKey", "3+",
            field("Name", "string", "3+", about="The name of the feature."),
            field("MaxVersionLevel", "int16", "3+", about="The cluster-wide finalized max version level for the feature."),
            field("MinVersionLevel", "int16", "3+", about="The cluster-wide finalized min version level for the feature."),
        ),
    ),
    field(
        "ZkMigrationReady", "bool", "3+", tagged="3+", tag=3, default="false", ignorable=True,
        about="Set by a KRaft controller if the required configurations for ZK migration are present",
    ),
)
PAST_SHARED: dict[str, MessageSpec] = {m.name: m for m in (_API_VERSIONS_REQUEST, _API_VERSIONS_RESPONSE)}


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
        "field. BEYOND_JSON lists what is here and not in those files (KIP-1066, SOURCE.txt);\n"
        "NOT_IN_SHARED names the messages those files lack (specgen.PAST_SHARED, Kafka 3.9).\n"
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
    for spec in PAST_SHARED.values():
        r.commons = {}
        r.message(spec, [])
        names.append(const_name(spec.name))
    r.out.append("MESSAGES = (\n" + "".join(f"    {n},\n" for n in names) + ")\n")
    ext = {k: (v[0], tuple(f.name for f in v[1])) for k, v in EXTENSIONS.items()}
    r.out.append(f"BEYOND_JSON = {ext!r}\n")
    r.out.append(f"NOT_IN_SHARED = {tuple(PAST_SHARED)!r}\n")
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
