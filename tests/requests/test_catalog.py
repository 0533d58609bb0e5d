"""The project's description of the messages (catalog.py) says what Kafka's JSON specs say,
field by field, and the generated class modules are up to date with it."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from ctrlbatch.requests import catalog
from ctrlbatch.requests.gen_classes import SHIPPED_SPEC_MODULE, class_source, module_name
from ctrlbatch.requests.json_spec import load_json_spec
from ctrlbatch.requests.spec import FieldSpec, MessageSpec
from ctrlbatch.requests.versions import Versions

NAMES = [m.name for m in catalog.MESSAGES]
JSON_NAMES = [n for n in NAMES if n not in catalog.NOT_IN_SHARED]


def _without_extensions(spec: MessageSpec) -> MessageSpec:
    ext = catalog.BEYOND_JSON.get(spec.name)
    if ext is None:
        return spec
    valid, extra = ext
    assert str(spec.valid_versions) == valid
    fields = tuple(f for f in spec.fields if f.name not in extra)
    assert len(fields) == len(spec.fields) - len(extra)
    lowest = spec.valid_versions.lowest
    json_highest = spec.valid_versions.highest - 1
    return attrs.evolve(spec, fields=fields, valid_versions=Versions(lowest, json_highest))


def _diff(a: FieldSpec, b: FieldSpec, path: str) -> list[str]:
    out = []
    for name in ("name", "type", "versions", "nullable_versions", "tagged_versions", "tag", "default", "ignorable", "flexible_versions", "about"):
        if getattr(a, name) != getattr(b, name):
            out.append(f"{path}.{a.name}: {name} {getattr(a, name)!r} != {getattr(b, name)!r}")
    if (a.struct is None) != (b.struct is None):
        out.append(f"{path}.{a.name}: struct presence differs")
    elif a.struct is not None and b.struct is not None:
        if a.struct.versions != b.struct.versions or a.struct.name != b.struct.name:
            out.append(f"{path}.{a.name}: struct {a.struct} != {b.struct}")
        out += _diff_fields(a.struct.fields, b.struct.fields, f"{path}.{a.name}")
    return out


def _diff_fields(a: tuple[FieldSpec, ...], b: tuple[FieldSpec, ...], path: str) -> list[str]:
    if [f.name for f in a] != [f.name for f in b]:
        return [f"{path}: fields {[f.name for f in a]} != {[f.name for f in b]}"]
    return [d for x, y in zip(a, b, strict=True) for d in _diff(x, y, path)]


@pytest.mark.parametrize("name", JSON_NAMES)
def test_catalog_matches_kafka_json(shared: Path, name: str) -> None:
    ours = _without_extensions(getattr(catalog, "_".join(_split(name)).upper()))
    theirs = load_json_spec(shared / "kafka" / "message" / f"{name}.json")
    head = [(k, getattr(ours, k), getattr(theirs, k)) for k in ("name", "type", "api_key", "valid_versions", "flexible_versions")]
    assert [(k, a) for k, a, _ in head] == [(k, b) for k, _, b in head]
    assert _diff_fields(ours.fields, theirs.fields, name) == []
    assert ours == theirs


def test_every_json_message_is_described(shared: Path) -> None:
    files = sorted(p.stem for p in (shared / "kafka" / "message").glob("*.json"))
    assert sorted(JSON_NAMES) == files
    assert not set(catalog.NOT_IN_SHARED) & set(files)


def test_api_versions_is_kafka_39s_description() -> None:
    """ApiVersions is not in shared/ (specgen.PAST_SHARED): the facts that decide its bytes,
    as Kafka 3.9's ApiVersions{Request,Response}.json give them."""
    assert catalog.NOT_IN_SHARED == ("ApiVersionsRequest", "ApiVersionsResponse")
    req, resp = catalog.API_VERSIONS_REQUEST, catalog.API_VERSIONS_RESPONSE
    for m in (req, resp):
        assert (m.api_key, str(m.valid_versions), str(m.flexible_versions)) == (18, "0-4", "3+")
    assert [(f.name, f.type, str(f.versions), f.ignorable) for f in req.fields] == [
        ("ClientSoftwareName", "string", "3+", True), ("ClientSoftwareVersion", "string", "3+", True)]
    rows = [(f.name, f.type, str(f.versions), str(f.tagged_versions), f.tag, f.default) for f in resp.fields]
    assert rows == [
        ("ErrorCode", "int16", "0+", "none", None, None),
        ("ApiKeys", "[]ApiVersion", "0+", "none", None, None),
        ("ThrottleTimeMs", "int32", "1+", "none", None, None),
        ("SupportedFeatures", "[]SupportedFeatureKey", "3+", "3+", 0, None),
        ("FinalizedFeaturesEpoch", "int64", "3+", "3+", 1, "-1"),
        ("FinalizedFeatures", "[]FinalizedFeatureKey", "3+", "3+", 2, None),
        ("ZkMigrationReady", "bool", "3+", "3+", 3, "false"),
    ]
    fin = resp.field("FinalizedFeatures").struct
    assert fin is not None and [f.name for f in fin.fields] == ["Name", "MaxVersionLevel", "MinVersionLevel"]


def test_extensions_are_tagged_kip_1066_fields() -> None:
    br = catalog.BROKER_REGISTRATION_REQUEST.field("CordonedLogDirs")
    hb = catalog.BROKER_HEARTBEAT_REQUEST.field("CordonedLogDirs")
    assert (br.type, str(br.versions), str(br.tagged_versions), br.tag, br.nullable) == ("[]uuid", "5+", "5+", 0, False)
    assert (hb.type, str(hb.versions), str(hb.tagged_versions), hb.tag, hb.nullable) == ("[]uuid", "2+", "2+", 1, False)
    assert str(catalog.BROKER_REGISTRATION_RESPONSE.valid_versions) == "0-5"
    assert str(catalog.BROKER_HEARTBEAT_RESPONSE.valid_versions) == "0-2"


@pytest.mark.parametrize("spec", catalog.MESSAGES, ids=NAMES)
def test_generated_modules_are_up_to_date(spec: MessageSpec) -> None:
    import ctrlbatch.requests.messages as pkg

    path = Path(pkg.__file__).parent / f"{module_name(spec)}.py"
    assert path.read_text(encoding="utf-8") == class_source(spec, SHIPPED_SPEC_MODULE), (
        "regenerate with: .venv/bin/python -m ctrlbatch.requests.gen_classes"
    )


def _split(name: str) -> list[str]:
    from ctrlbatch.requests.spec import snake_case

    return snake_case(name).split("_")
