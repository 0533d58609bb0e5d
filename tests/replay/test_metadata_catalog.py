"""The project's description of the KRaft records (metadata_catalog.py) says what Kafka's JSON
specs say, field by field; the type-id constants and names agree with it; the generated classes
encode and decode every record and pickle by reference."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from ctrlbatch.replay import metadata_catalog, record_classes, records
from ctrlbatch.replay.metadata_specgen import CONTROL_SCHEMAS, render
from ctrlbatch.requests.json_spec import load_json_spec
from ctrlbatch.requests.spec import FieldSpec, snake_case

SHARED = Path(os.environ.get("CTRLBATCH_SHARED", Path(__file__).resolve().parents[3] / "shared"))
SPECS = SHARED / "kafka" / "metadata"
CATALOG = {s.name: s for s in (*metadata_catalog.RECORDS, *(s for _n, s in metadata_catalog.CONTROL_RECORDS.values()))}


def _diff(a: tuple[FieldSpec, ...], b: tuple[FieldSpec, ...], path: str) -> list[str]:
    if [f.name for f in a] != [f.name for f in b]:
        return [f"{path}: fields {[f.name for f in a]} != {[f.name for f in b]}"]
    out = []
    for x, y in zip(a, b, strict=True):
        for k in ("type", "versions", "nullable_versions", "tagged_versions", "tag", "default", "ignorable", "about"):
            if getattr(x, k) != getattr(y, k):
                out.append(f"{path}.{x.name}: {k} {getattr(x, k)!r} != {getattr(y, k)!r}")
        if (x.struct is None) != (y.struct is None):
            out.append(f"{path}.{x.name}: struct presence differs")
        elif x.struct is not None and y.struct is not None:
            out += _diff(x.struct.fields, y.struct.fields, f"{path}.{x.name}")
    return out


def _json_files() -> list[Path]:
    return sorted(SPECS.glob("*.json")) + sorted((SPECS / "control").glob("*.json"))


@pytest.mark.parametrize("path", _json_files(), ids=lambda p: p.stem)
def test_catalog_matches_kafka_json(path: Path) -> None:
    theirs = load_json_spec(path)
    ours = CATALOG[theirs.name]
    head = ("name", "type", "api_key", "valid_versions", "flexible_versions")
    assert [getattr(ours, k) for k in head] == [getattr(theirs, k) for k in head]
    assert _diff(ours.fields, theirs.fields, theirs.name) == []
    assert ours == theirs


def test_every_json_schema_is_described_and_nothing_else() -> None:
    assert sorted(load_json_spec(p).name for p in _json_files()) == sorted(CATALOG)


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
        "regenerate: python -m ctrlbatch.replay.metadata_specgen ../shared/kafka/metadata > "
        "replay/metadata_catalog.py && ruff format replay/metadata_catalog.py"
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
    with pytest.raises(ValueError, match="name: unknown metadata record type 'CLEAR_ELR_RECORD'"):
        records.record_type_id("CLEAR_ELR_RECORD")


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
