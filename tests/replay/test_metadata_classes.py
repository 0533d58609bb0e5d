"""The generated record classes (metadata_classes.py) are current with metadata_catalog, one per
schema, with their structs nested so that every class pickles by reference in a fresh process."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from ctrlbatch.replay.schema import metadata_catalog, metadata_classes, metadata_classgen
from ctrlbatch.requests.spec import iter_structs


def test_the_generated_module_is_current() -> None:
    with open(metadata_classgen.TARGET, encoding="utf-8") as fh:
        text = fh.read()
    assert text == metadata_classgen.render(), f"stale: regenerate with .venv/bin/{metadata_classgen.COMMAND}"


def test_check_says_stale_and_regenerating_writes_the_rendering(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = str(tmp_path / "metadata_classes.py")
    with open(target, "w", encoding="utf-8") as fh:
        fh.write("# an old rendering\n")
    monkeypatch.setattr(metadata_classgen, "TARGET", target)
    assert metadata_classgen.main(["--check"]) == 1
    assert metadata_classgen.main([]) == 0
    with open(target, encoding="utf-8") as fh:
        assert fh.read() == metadata_classgen.render()
    assert metadata_classgen.main(["--check"]) == 0


def test_rendering_is_deterministic() -> None:
    assert metadata_classgen.render() == metadata_classgen.render()


def test_one_class_per_schema_by_type_id() -> None:
    records = {s.api_key: s for s in metadata_catalog.RECORDS}
    assert {i: c.MESSAGE for i, c in metadata_classes.RECORD_CLASSES.items()} == records
    control = {i: s for i, (_n, s) in metadata_catalog.CONTROL_RECORDS.items()}
    assert {i: c.MESSAGE for i, c in metadata_classes.CONTROL_CLASSES.items()} == control
    for cls in (*metadata_classes.RECORD_CLASSES.values(), *metadata_classes.CONTROL_CLASSES.values()):
        assert getattr(metadata_classes, cls.__name__) is cls
        names = [a.name for a in attrs.fields(cls)]  # type: ignore[misc]
        assert names == [f.attr for f in cls.MESSAGE.fields] + ["unknown_tagged_fields"]
        for s in iter_structs(cls.MESSAGE.fields):
            nested = getattr(cls, s.name)
            assert nested.SPEC is s and nested.__qualname__ == f"{cls.__name__}.{s.name}"


def test_nested_structs_pickle_by_reference_in_a_fresh_process() -> None:
    voters = metadata_classes.VotersRecord(
        voters=[metadata_classes.VotersRecord.Voter(voter_id=3, endpoints=[metadata_classes.VotersRecord.Endpoint(port=9093)])]
    )
    blob = pickle.dumps(voters)
    assert b"VotersRecord.Voter" in blob and b"ctrlbatch.replay.schema.metadata_classes" in blob
    code = "import pickle, sys; v = pickle.loads(sys.stdin.buffer.read()); print(v.voters[0].endpoints[0].port, type(v.voters[0].k_raft_version_feature).__qualname__)"
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, check=True)
    assert out.stdout.decode().split() == ["9093", "VotersRecord.KRaftVersionFeature"]
