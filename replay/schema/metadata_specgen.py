"""Writes metadata_catalog.py, the project's description of the KRaft metadata and control records.

Usage: python -m ctrlbatch.replay.schema.metadata_specgen ../shared/kafka/metadata-4x > replay/schema/metadata_catalog.py

Rules: Kafka's JSON files are the truth: the 4.x schemas (../shared/kafka/metadata-4x/*.json for
the metadata records, control/*.json for the KRaft control records), which describe every 3.9
record too (3.9's differ only in comments and "about" texts). One thing is added beyond them, and
it is the table ``PAST_THE_JSON``: from level 30 (4.3-IV0) Kafka writes RegisterBrokerRecord v4
and BrokerRegistrationChangeRecord v3, whose only addition is a tagged, nullable CordonedLogDirs
([]uuid, default null) whose final JSON text could not be located (metadata-4x/SOURCE.txt). The
field is written here as Kafka's JSON would carry it and parsed by the same reader, from what
could be located: KIP-1066 ("BrokerRegistrationChangeRecord v3 adds the CordonedLogDirs field";
RegisterBrokerRecord v4 the same at 4.3.1), the tags 1 (RegisterBrokerRecord: LogDirs holds 0)
and 3 (BrokerRegistrationChangeRecord: 0-2 are taken) of the KIP-1066 change, and its nullability
from KAFKA-20441 (apache/kafka PR #22070, ClusterControlManager.replay(BrokerRegistrationChange
Record): ``Optional.ofNullable(record.cordonedLogDirs())`` without the old empty-list filter, so
null is "no change" and an empty list uncordons every directory). Null is not written (a tagged
field at its default), so a record with no cordoned directory is v3's/v2's body.
The rendering is ctrlbatch.requests.specgen's, so both catalogs read alike;
tests/replay/test_metadata_catalog.py compares the result with both the 3.9 and the 4.x JSON.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from ctrlbatch.requests.json_spec import load_json_spec, parse_json_spec, strip_comments
from ctrlbatch.requests.spec import MessageSpec, iter_structs
from ctrlbatch.requests.specgen import Renderer, common_structs, const_name

# The KRaft control record types (ControlRecordType.java) and their schema files in control/.
CONTROL_SCHEMAS: tuple[tuple[int, str, str], ...] = (
    (2, "LEADER_CHANGE", "LeaderChangeMessage"),
    (3, "SNAPSHOT_HEADER", "SnapshotHeaderRecord"),
    (4, "SNAPSHOT_FOOTER", "SnapshotFooterRecord"),
    (5, "KRAFT_VERSION", "KRaftVersionRecord"),
    (6, "KRAFT_VOTERS", "VotersRecord"),
)


# Schema name -> (the validVersions Kafka 4.3+ writes, the JSON's, the fields it adds as Kafka's
# JSON would carry them, why the JSON lags); see the rules.
PAST_THE_JSON: dict[str, tuple[str, str, tuple[dict[str, Any], ...], str]] = {
    "RegisterBrokerRecord": ("0-4", "0-3", (
        {"name": "CordonedLogDirs", "type": "[]uuid", "versions": "4+", "nullableVersions": "4+",
         "taggedVersions": "4+", "tag": 1, "default": "null",
         "about": "Log directories that are cordoned (KIP-1066; null when not known)."},
    ), "v4 (4.3-IV0) adds a tagged CordonedLogDirs"),
    "BrokerRegistrationChangeRecord": ("0-3", "0-2", (
        {"name": "CordonedLogDirs", "type": "[]uuid", "versions": "3+", "nullableVersions": "3+",
         "taggedVersions": "3+", "tag": 3, "default": "null",
         "about": "null if the cordoned log directories did not change; the cordoned log directories otherwise."},
    ), "v3 (4.3-IV0) adds a tagged CordonedLogDirs"),
}
VERSIONS_PAST_THE_JSON: dict[str, tuple[str, str, str]] = {n: (o, j, w) for n, (o, j, _f, w) in PAST_THE_JSON.items()}


def load_spec(path: str) -> MessageSpec:
    """The schema of ``path``, with PAST_THE_JSON's versions and fields when it lists the schema
    (unchanged if the JSON already says other versions: then it has caught up, the table is stale)."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    doc = json.loads(strip_comments(text))
    entry = PAST_THE_JSON.get(doc.get("name", ""))
    if entry is None or doc.get("validVersions") != entry[1]:
        return parse_json_spec(text, source=path)
    doc = {**doc, "validVersions": entry[0], "fields": [*doc["fields"], *entry[2]]}
    return parse_json_spec(json.dumps(doc), source=path)


def metadata_files(folder: str) -> list[str]:
    """Every metadata record schema, in apiKey order."""
    paths = [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith(".json")]
    specs = [(load_spec(p), p) for p in paths]
    return [p for s, p in sorted(specs, key=lambda sp: sp[0].api_key if sp[0].api_key is not None else -1)]


def _render_one(r: Renderer, spec: MessageSpec, path: str) -> str:
    wanted = common_structs(path)
    r.commons = {}
    r.message(spec, [s for s in iter_structs(spec.fields) if s.name in wanted])
    return const_name(spec.name)


def render(folder: str) -> str:
    r = Renderer()
    r.out.append(
        '"""The project\'s own description of the KRaft metadata records and control records: fields,\n'
        "types, versions, nullable/tagged flags and defaults, one declaration per record schema.\n\n"
        "Generated from Kafka's JSON specs by `python -m ctrlbatch.replay.schema.metadata_specgen`; the JSON\n"
        "files are the truth and tests/replay/test_metadata_catalog.py compares this module with them\n"
        "field by field. RECORDS holds the metadata records in apiKey order; CONTROL_RECORDS maps a\n"
        "control record type id to (name, schema). RegisterBrokerRecord 0-4 and\n"
        "BrokerRegistrationChangeRecord 0-3 go past their JSON with a tagged CordonedLogDirs\n"
        "(metadata_specgen.PAST_THE_JSON).\n"
        '"""\n\n'
        "# ruff: noqa: E501, I001\n"
        "from ctrlbatch.requests.spec import field, message, struct\n"
    )
    names = [_render_one(r, load_spec(p), p) for p in metadata_files(folder)]
    control = []
    for type_id, type_name, schema in CONTROL_SCHEMAS:
        path = os.path.join(folder, "control", schema + ".json")
        control.append((type_id, type_name, _render_one(r, load_json_spec(path), path)))
    r.out.append("RECORDS = (\n" + "".join(f"    {n},\n" for n in names) + ")\n")
    r.out.append(
        "CONTROL_RECORDS = {\n" + "".join(f"    {i}: ({t!r}, {n}),\n" for i, t, n in control) + "}\n"
    )
    return "\n\n".join(r.out)


if __name__ == "__main__":
    sys.stdout.write(render(sys.argv[1] if len(sys.argv) > 1 else "../shared/kafka/metadata-4x"))
