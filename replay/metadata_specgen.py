"""Writes metadata_catalog.py, the project's description of the KRaft metadata and control records.

Usage: python -m ctrlbatch.replay.metadata_specgen ../shared/kafka/metadata > replay/metadata_catalog.py

Rules: Kafka's JSON files are the truth (../shared/kafka/metadata/*.json for the metadata records,
control/*.json for the KRaft control records); nothing is added beyond them. The rendering is
ctrlbatch.requests.specgen's, so both catalogs read alike; tests/replay/test_metadata_catalog.py
compares the result with the JSON field by field.
"""

from __future__ import annotations

import os
import sys

from ctrlbatch.requests.json_spec import load_json_spec
from ctrlbatch.requests.spec import MessageSpec, iter_structs
from ctrlbatch.requests.specgen import _Renderer, common_structs, const_name

# The KRaft control record types (ControlRecordType.java) and their schema files in control/.
CONTROL_SCHEMAS: tuple[tuple[int, str, str], ...] = (
    (2, "LEADER_CHANGE", "LeaderChangeMessage"),
    (3, "SNAPSHOT_HEADER", "SnapshotHeaderRecord"),
    (4, "SNAPSHOT_FOOTER", "SnapshotFooterRecord"),
    (5, "KRAFT_VERSION", "KRaftVersionRecord"),
    (6, "KRAFT_VOTERS", "VotersRecord"),
)


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
        "control record type id to (name, schema).\n"
        '"""\n\n'
        "# ruff: noqa: E501, I001\n"
        "from ctrlbatch.requests.spec import field, message, struct\n"
    )
    names = [_render_one(r, load_json_spec(p), p) for p in metadata_files(folder)]
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
    sys.stdout.write(render(sys.argv[1] if len(sys.argv) > 1 else "../shared/kafka/metadata"))
