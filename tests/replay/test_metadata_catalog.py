"""The project's description of the KRaft records (metadata_catalog.py) says what Kafka's JSON
specs say, field by field: exactly the 4.x JSON (metadata-4x, its generator's input), and the 3.9
JSON up to "about" texts, with 3.9's versions a subset; the type-id constants and names agree with
it; the generated classes encode and decode every record and pickle by reference."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import attrs
import pytest

from ctrlbatch.replay.log import records
from ctrlbatch.replay.schema import metadata_catalog, record_classes
from ctrlbatch.replay.schema.metadata_specgen import (
    CONTROL_SCHEMAS,
    PAST_THE_JSON,
    VERSIONS_PAST_THE_JSON,
    render,
)
from ctrlbatch.requests.json_spec import load_json_spec
from ctrlbatch.requests.spec import FieldSpec, MessageSpec, snake_case
from ctrlbatch.requests.versions import Versions

SHARED = Path(os.environ.get("CTRLBATCH_SHARED", Path(__file__).resolve().parents[3] / "shared"))
SPECS_39 = SHARED / "kafka" / "metadata"
SPECS = SHARED / "kafka" / "metadata-4x"
CATALOG = {s.name: s for s in (*metadata_catalog.RECORDS, *(s for _n, s in metadata_catalog.CONTROL_RECORDS.values()))}


FIELD_KEYS = ("type", "versions", "nullable_versions", "tagged_versions", "tag", "default", "ignorable", "about")


def _diff(a: tuple[FieldSpec, ...], b: tuple[FieldSpec, ...], path: str, keys: tuple[str, ...] = FIELD_KEYS) -> list[str]:
    if [f.name for f in a] != [f.name for f in b]:
        return [f"{path}: fields {[f.name for f in a]} != {[f.name for f in b]}"]
    out = []
    for x, y in zip(a, b, strict=True):
        for k in keys:
            if getattr(x, k) != getattr(y, k):
                out.append(f"{path}.{x.name}: {k} {getattr(x, k)!r} != {getattr(y, k)!r}")
        if (x.struct is None) != (y.struct is None):
            out.append(f"{path}.{x.name}: struct presence differs")
        elif x.struct is not None and y.struct is not None:
            out += _diff(x.struct.fields, y.struct.fields, f"{path}.{x.name}", keys)
    return out


def _json_files(specs: Path = SPECS) -> list[Path]:
    return sorted(specs.glob("*.json")) + sorted((specs / "control").glob("*.json"))


def _as_in_json(ours: MessageSpec) -> MessageSpec:
    """Our spec with the validVersions and fields its JSON says (undoing PAST_THE_JSON)."""
    entry = PAST_THE_JSON.get(ours.name)
    if entry is None:
        return ours
    assert ours.valid_versions == Versions.parse(entry[0])
    added = {f["name"] for f in entry[2]}
    assert [f.name for f in ours.fields[-len(added):]] == [f["name"] for f in entry[2]]  # appended, in order
    kept = tuple(f for f in ours.fields if f.name not in added)
    return attrs.evolve(ours, valid_versions=Versions.parse(entry[1]), fields=kept)


@pytest.mark.parametrize("path", _json_files(), ids=lambda p: p.stem)
def test_catalog_matches_kafka_4x_json(path: Path) -> None:
    theirs = load_json_spec(path)
    ours = _as_in_json(CATALOG[theirs.name])
    head = ("name", "type", "api_key", "valid_versions", "flexible_versions")
    assert [getattr(ours, k) for k in head] == [getattr(theirs, k) for k in head]
    assert _diff(ours.fields, theirs.fields, theirs.name) == []
    assert ours == theirs


@pytest.mark.parametrize("path", _json_files(SPECS_39), ids=lambda p: p.stem)
def test_catalog_reads_every_kafka_39_schema(path: Path) -> None:
    """Every 3.9 schema is described with its fields, types, tags and defaults; its versions are
    among ours (only "about" texts differ between 3.9 and 4.x)."""
    theirs = load_json_spec(path)
    ours = _as_in_json(CATALOG[theirs.name])
    assert (ours.type, ours.api_key, ours.flexible_versions) == (theirs.type, theirs.api_key, theirs.flexible_versions)
    assert ours.valid_versions.lowest == theirs.valid_versions.lowest
    assert ours.valid_versions.highest >= theirs.valid_versions.highest
    assert _diff(ours.fields, theirs.fields, theirs.name, FIELD_KEYS[:-1]) == []


def test_every_json_schema_is_described_and_nothing_else() -> None:
    names_4x = {load_json_spec(p).name for p in _json_files()}
    assert sorted(names_4x) == sorted(CATALOG)
    names_39 = {load_json_spec(p).name for p in _json_files(SPECS_39)}
    assert names_4x - names_39 == {"ClearElrRecord", "UnregisterControllerRecord"}


def test_versions_past_the_json_add_one_version_each() -> None:
    """RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3 (4.3-IV0): one version past the
    JSON, adding only a tagged, nullable CordonedLogDirs ([]uuid, default null) on a free tag."""
    assert {n: (o, j, w) for n, (o, j, _f, w) in PAST_THE_JSON.items()} == VERSIONS_PAST_THE_JSON
    for name, (ours, json_says, added, _why) in PAST_THE_JSON.items():
        theirs = next(load_json_spec(p) for p in _json_files() if load_json_spec(p).name == name)
        assert theirs.valid_versions == Versions.parse(json_says)
        assert CATALOG[name].valid_versions == Versions.parse(ours)
        new = Versions.parse(ours).highest
        assert new == theirs.valid_versions.highest + 1
        assert [f["name"] for f in added] == ["CordonedLogDirs"]
        field = CATALOG[name].fields[-1]
        assert (field.name, field.type, field.default) == ("CordonedLogDirs", "[]uuid", "null")
        assert field.versions == field.nullable_versions == field.tagged_versions == Versions.parse(f"{new}+")
        assert field.tag not in {f.tag for f in theirs.fields if f.tag is not None}


def test_catalog_is_what_the_generator_writes_today() -> None:
    import subprocess
    import sys

    src = render(str(SPECS))
    catalog = Path(metadata_catalog.__file__)
    ruff = Path(sys.executable).parent / "ruff"
    formatted = subprocess.run(
        [str(ruff), "format", "--stdin-filename", str(catalog), "-"],
        input=src, capture_output=True, text=True, check=True, cwd=Path(__file__).parents[2],
    ).stdout
    assert formatted == catalog.read_text(encoding="utf-8"), (
        "regenerate: python -m ctrlbatch.replay.schema.metadata_specgen ../shared/kafka/metadata-4x > "
        "replay/schema/metadata_catalog.py && ruff format replay/schema/metadata_catalog.py"
    )


def test_type_constants_are_the_specs_api_keys() -> None:
    for spec in metadata_catalog.RECORDS:
        name = snake_case(spec.name).upper()
        assert getattr(records, name) == spec.api_key, name
        assert records.record_type_name(spec.api_key) == name  # type: ignore[arg-type]
        assert records.record_type_id(name) == spec.api_key
    assert records.RECORD_TYPE_NAMES[21] == "ZK_MIGRATION_STATE_RECORD"  # ZkMigrationRecord.json's schema name
    for type_id, name, _schema in CONTROL_SCHEMAS:
        assert getattr(records, name) == type_id
        assert records.control_type_name(type_id) == name


def test_unknown_names_and_ids_name_the_parameter() -> None:
    with pytest.raises(ValueError, match="type_id: unknown metadata record type 6"):
        records.record_type_name(6)
    with pytest.raises(ValueError, match="type_id: unknown metadata record type 30"):
        records.record_type_name(30)
    with pytest.raises(ValueError, match="name: unknown metadata record type 'CLEAR_ALL_RECORD'"):
        records.record_type_id("CLEAR_ALL_RECORD")
    assert records.record_type_id("CLEAR_ELR_RECORD") == 28  # a Kafka 4.x record (level 23 on)


@pytest.mark.parametrize("spec", metadata_catalog.RECORDS, ids=lambda s: s.name)
def test_every_record_version_round_trips_and_pickles(spec: object) -> None:
    api_key = spec.api_key  # type: ignore[attr-defined]
    cls = record_classes.record_class(api_key)
    assert cls is not None and cls.MESSAGE is spec
    for version in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):
        obj = cls()
        value = record_classes.encode_value(api_key, version, obj)
        assert value[:3] == bytes([1, api_key, version])
        type_id, got_version, data = record_classes.decode_value(value, 0, len(value))
        assert (type_id, got_version) == (api_key, version)
        assert data.encode(version) == obj.encode(version)
        again = pickle.loads(pickle.dumps(data))
        assert again == data and type(again) is cls


def test_struct_classes_pickle_by_qualified_name() -> None:
    cls = record_classes.record_class(records.REGISTER_BROKER_RECORD)
    assert cls is not None
    ep = cls.BrokerEndpoint(name="PLAINTEXT", host="h", port=9092, security_protocol=0)
    assert type(ep).__qualname__ == "RegisterBrokerRecord.BrokerEndpoint"
    assert pickle.loads(pickle.dumps(ep)) == ep
    voter = record_classes.control_class(records.LEADER_CHANGE).Voter(voter_id=3)
    assert pickle.loads(pickle.dumps(voter)) == voter
