"""``ctrlbatch replay``: the printed summary, the output directory, the what-if comparison, and
readable errors (exit 1, no traceback) for a missing path, a bad option and corrupt input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from ctrlbatch.cli import main
from ctrlbatch.replay.engine.local import replay_local
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.propagate.propagator import ReplayOptions

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["replay", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_local_replay_prints_and_writes(sample_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, str(sample_dir), "--engine", "local", "--out", str(out_dir), "--quiet")
    assert code == 0, err
    expected = replay_local(open_history(sample_dir), ReplayOptions())
    rows = expected.drain()
    totals = expected.summary.to_dict()["totals"]
    assert f"{'total':<16}{totals['requests']:>12,}{totals['partitions']:>14,}{totals['bytes']:>16,}" in out
    assert "LeaderAndIsr" in out and "UpdateMetadata" in out and "records by type:" in out
    assert f"wrote {out_dir}" in out
    assert pq.read_table(out_dir / "requests").to_pylist() == rows
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["summary"] == expected.summary.to_dict()
    assert summary["rows"] == len(rows) and summary["job"]["engine"] == "local"
    assert (out_dir / "report.png").read_bytes()[:8] == PNG_MAGIC
    assert err == ""  # --quiet: no progress


def test_spark_replay_matches_local(spark: Any, sample_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(sample_dir), "--engine", "local", "--out", str(tmp_path / "local"), "--quiet")
    assert code == 0, err
    code, out, err = run(capsys, str(sample_dir), "--out", str(tmp_path / "spark"), "--quiet")
    assert code == 0, err
    assert "(spark engine," in out
    assert pq.read_table(tmp_path / "spark" / "requests").equals(pq.read_table(tmp_path / "local" / "requests"))
    a, b = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("local", "spark"))
    assert a["summary"] == b["summary"] and a["read"] == b["read"] and a["rows"] == b["rows"]


def test_compare_ibp_prints_the_difference(sample_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ctrlbatch.context import MetadataVersion

    code, out, err = run(capsys, str(sample_dir), "--engine", "local", "--compare-ibp", "2.8-IV1,3.9-IV0", "--quiet")
    assert code == 0, err
    assert "what-if: the same history at metadata.version 2.8-IV1 and 3.9-IV0" in out
    # the request versions of each level (ControllerChannelManager's tables), which explain the difference
    assert "  at 2.8-IV1: LeaderAndIsr v5, UpdateMetadata v7, StopReplica v3" in out.splitlines()
    assert "  at 3.9-IV0: LeaderAndIsr v7, UpdateMetadata v8, StopReplica v4" in out.splitlines()
    per_version = []
    for v in ("2.8-IV1", "3.9-IV0"):
        options = ReplayOptions(ibp=MetadataVersion.from_version_string(v))
        result = replay_local(open_history(sample_dir), options)
        result.drain()
        per_version.append(result.summary.to_dict()["by_api"])
    for api in ("LeaderAndIsr", "UpdateMetadata"):
        r1, r2 = (p[api]["requests"] for p in per_version)
        b1, b2 = (p[api]["bytes"] for p in per_version)
        line = next(x for x in out.splitlines() if x.startswith(api))
        assert line.split() [1:7] == [f"{r1:,}", f"{r2:,}", f"{r2 - r1:+,}", f"{b1:,}", f"{b2:,}", f"{b2 - b1:+,}"]
    assert per_version[0] != per_version[1], "older versions encode differently"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/no/such/metadata"], "/no/such/metadata: no such file or directory"),
        (["{sample}", "--ibp", "9.9-IV9"], "--ibp: '9.9-IV9' is not a metadata version"),
        (["{sample}", "--compare-ibp", "3.9-IV0"], "--compare-ibp: expected two versions"),
        (["{sample}", "--coalesce", "0"], "--coalesce: must be at least 1"),
        (["{sample}", "--engine", "local", "--master", "local[2]"], "--master: only with --engine spark"),
    ],
)
def test_bad_options_exit_1_with_a_reason(
    sample_dir: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = run(capsys, *[a.format(sample=sample_dir) for a in args])
    assert code == 1
    assert err.startswith("ctrlbatch replay: error: ") and message in err
    assert "Traceback" not in err and out == ""


def test_corrupt_input_exits_1_naming_file_and_offset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ctrlbatch.replay.log.segments import scan_batches

    generate_log(tmp_path / "data", brokers=3, topics=2, partitions=6, records=300, seed=2)
    segment = sorted((tmp_path / "data" / "__cluster_metadata-0").glob("*.log"))[0]
    victim = list(scan_batches(segment))[5]
    raw = bytearray(segment.read_bytes())
    raw[victim.position + victim.length - 1] ^= 0x55
    segment.write_bytes(bytes(raw))
    code, _, err = run(capsys, str(tmp_path / "data"), "--engine", "local", "--out", str(tmp_path / "out"), "--quiet")
    assert code == 1
    assert f"{segment}, byte offset {victim.position}: CRC-32C mismatch" in err
    assert not (tmp_path / "out").exists(), "a failed run leaves no output"
    assert [p.name for p in tmp_path.iterdir()] == ["data"]
    code, out, err = run(capsys, str(tmp_path / "data"), "--engine", "local", "--skip-corrupt", "--quiet")
    assert code == 0, err
    assert "1 corrupt skipped" in out and f"corrupt: {segment}, byte offset {victim.position}" in out
