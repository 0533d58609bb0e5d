"""Writes metadata_catalog.py, the project's description of the KRaft metadata and control records.

Usage: python -m ctrlbatch.replay.metadata_specgen ../shared/kafka/metadata-4x > replay/metadata_catalog.py

Rules: Kafka's JSON files are the truth: the 4.x schemas (../shared/kafka/metadata-4x/*.json for
the metadata records, control/*.json for the KRaft control records), which describe every 3.9
record too (3.9's differ only in comments and "about" texts). One thing is added beyond them, and
it is the table ``VERSIONS_PAST_THE_JSON``: from level 30 (4.3-IV0) Kafka writes
RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3, whose only addition is a *tagged*
CordonedLogDirs whose final schema text could not be located (metadata-4x/SOURCE.txt). A tagged
field is skipped by a reader that does not know it, so the catalog widens their validVersions and
adds no field: v4/v3 read as v3/v2 and write as Kafka does when no log dir is cordoned.
The rendering is ctrlbatch.requests.specgen's, so both catalogs read alike;
tests/replay/test_metadata_catalog.py compares the result with both the 3.9 and the 4.x JSON.
"""

from __future__ import annotations

import os
import sys

import attrs

from ctrlbatch.requests.json_spec import load_json_spec
from ctrlbatch.requests.spec import MessageSpec, iter_structs
from ctrlbatch.requests.specgen import _Renderer, common_structs, const_name
from ctrlbatch.requests.versions import Versions

# The KRaft control record types (ControlRecordType.java) and their schema files in control/.
CONTROL_SCHEMAS: tuple[tuple[int, str, str], ...] = (
    (2, "LEADER_CHANGE", "LeaderChangeMessage"),
    (3, "SNAPSHOT_HEADER", "SnapshotHeaderRecord"),
    (4, "SNAPSHOT_FOOTER", "SnapshotFooterRecord"),
    (5, "KRAFT_VERSION", "KRaftVersionRecord"),
    (6, "KRAFT_VOTERS", "VotersRecord"),
)


# Schema name -> (the validVersions Kafka 4.3+ writes, the JSON's, why the JSON lags); see the rules.
VERSIONS_PAST_THE_JSON: dict[str, tuple[str, str, str]] = {
    "RegisterBrokerRecord": ("0-4", "0-3", "v4 (4.3-IV0) adds a tagged CordonedLogDirs"),
    "BrokerRegistrationChangeRecord": ("0-3", "0-2", "v3 (4.3-IV0) adds a tagged CordonedLogDirs"),
}


def widened(spec: MessageSpec) -> MessageSpec:
    """The spec with the validVersions of VERSIONS_PAST_THE_JSON (unchanged if not listed, or
    if the JSON already says something else: then the JSON has caught up and the table is stale)."""
    entry = VERSIONS_PAST_THE_JSON.get(spec.name)
    if entry is None or spec.valid_versions != Versions.parse(entry[1]):
        return spec
    return attrs.evolve(spec, valid_versions=Versions.parse(entry[0]))


def metadata_files(folder: str) -> list[str]:
    """Every metadata record schema, in apiKey order."""
    paths = [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.endswith(".json")]
    specs = [(load_json_spec(p), p) for p in paths]
    return [p for s, p in sorted(specs, key=lambda sp: sp[0].api_key if sp[0].api_key is not None else -1)]


def _render_one(r: _Renderer, spec: MessageSpec, path: str) -> str:
    wanted = common_structs(path)
    r.commons = {}
    r.message(spec, [s for s in iter_structs(spec.fields) if s.name in wanted])
    return const_name(spec.name)


def render(folder: str) -> str:
    r = _Renderer()
    r.out.append(
        '"""The project\'s own description of the KRaft metadata records and control records: fields,\n'
        "types, versions, nullable/tagged flags and defaults, one declaration per record schema.\n\n"
        "Generated from Kafka's JSON specs by `python -m ctrlbatch.replay.metadata_specgen`; the JSON\n"
        "files are the truth and tests/replay/test_metadata_catalog.py compares this module with them\n"
        "field by field. RECORDS holds the metadata records in apiKey order; CONTROL_RECORDS maps a\n"
        "control record type id to (name, schema). RegisterBrokerRecord 0-4 and\n"
        "BrokerRegistrationChangeRecord 0-3 go past their JSON (metadata_specgen.VERSIONS_PAST_THE_JSON).\n"
        '"""\n\n'
        "# ruff: noqa: E501, I001\n"
        "from ctrlbatch.requests.spec import field, message, struct\n"
    )
    names = [_render_one(r, widened(load_json_spec(p)), p) for p in metadata_files(folder)]
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
