"""Sizes only (``--digest none``): every row equals the ``--digest sha256`` row in every column but
sha256 (null), on both engines, on the real sample and on generated 3.x and 4.x logs, at the
log's versions and at older --ibp versions (other request versions, the batch's own path);
``--digest sha256`` rows are byte-identical to those of the code before sizes existed (pinned
digests of every sorted column); frames are refused in one line naming both options."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from ctrlbatch.cli import main
from ctrlbatch.context import MetadataVersion
from ctrlbatch.replay import ReplayOptions, open_history, replay_local
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.rows.rows import NO_FRAMES, REQUEST_SCHEMA, SIZES_SCHEMA, request_schema
from ctrlbatch.replay.spark.engine import HistorySource, replay_spark

# The rows' digest (rows_digest) computed by main at 50ca421, without sizes-only (its rows at
# 05fcbf8, the older schema, pinned the same way, were identical too before that schema changed).
PINNED = {
    "sample": ("5cfcbc96cf175d63d19d9a3a0f1b9cd8edeed490182dd458dd5cc3a80f94b815", 14),
    "g3": ("f16d523745f77c567aada96376658e9aba21766c8ecf7e07e9a0146071d9bf21", 3881),
    "g4": ("8014100fa5894c290360447423c3de5015dba4ef41da944065dd8b3abd4ed46e", 4037),
}
COLUMNS_BUT_SHA = [n for n in REQUEST_SCHEMA.names if n != "sha256"]


def rows_digest(rows: list[dict[str, Any]]) -> tuple[str, int]:
    """SHA-256 over the SHA-256 of each column, rows sorted by (delta_last_offset, broker, seq)."""
    ordered = sorted(rows, key=lambda r: (r["delta_last_offset"], r["broker"], r["seq"]))
    h = hashlib.sha256()
    for name in REQUEST_SCHEMA.names:
        h.update(hashlib.sha256(repr([r[name] for r in ordered]).encode()).digest())
    return h.hexdigest(), len(ordered)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory, sample_dir: Path) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("sizes")
    generate_log(d / "g3", brokers=5, topics=6, partitions=40, records=3_000, seed=26)
    generate_log(d / "g4", brokers=5, topics=6, partitions=60, records=3_000, seed=26, metadata_version=22, upgrade_to=33)
    return {"sample": sample_dir, "g3": d / "g3", "g4": d / "g4"}


def _local(path: Path, **options: Any) -> list[dict[str, Any]]:
    return replay_local(open_history(str(path)), ReplayOptions(**options)).drain()


def _same_but_sha(sized: list[dict[str, Any]], digested: list[dict[str, Any]]) -> None:
    assert len(sized) == len(digested) > 0
    for s, d in zip(sized, digested, strict=True):
        assert s["sha256"] is None and isinstance(d["sha256"], str)
        assert {c: s[c] for c in COLUMNS_BUT_SHA} == {c: d[c] for c in COLUMNS_BUT_SHA}


@pytest.mark.parametrize("name", list(PINNED))
def test_sha256_rows_are_those_of_before(logs: dict[str, Path], name: str) -> None:
    assert rows_digest(_local(logs[name])) == PINNED[name]
    assert rows_digest(_local(logs[name], digest="sha256")) == PINNED[name]


IBPS = [None, MetadataVersion.from_version_string("2.8-IV1"), MetadataVersion.from_version_string("2.2-IV1"),
        MetadataVersion.from_version_string("1.0-IV0")]


@pytest.mark.parametrize("name", list(PINNED))
@pytest.mark.parametrize("ibp", IBPS, ids=lambda v: "log" if v is None else str(v))
def test_sized_rows_equal_digested_rows_local(logs: dict[str, Path], name: str, ibp: Any) -> None:
    digested = _local(logs[name], ibp=ibp)
    sized = _local(logs[name], ibp=ibp, digest="none")
    _same_but_sha(sized, digested)
    if name != "sample":
        assert len({(r["api_key"], r["api_version"]) for r in sized}) == 3  # every API sized
        assert len({r["bytes"] for r in sized}) > 10


@pytest.mark.parametrize("name", list(PINNED))
def test_sized_rows_equal_digested_rows_spark(spark: Any, logs: dict[str, Path], name: str, tmp_path: Path) -> None:
    digested = _local(logs[name])
    source = HistorySource(str(logs[name]))
    result = replay_spark(spark, source, ReplayOptions(digest="none"), requests_dir=tmp_path / "r", unit_bytes=20_000)
    table = pq.read_table(tmp_path / "r")
    assert table.schema.equals(SIZES_SCHEMA) and request_schema("none") is SIZES_SCHEMA
    assert table.num_rows == result.rows
    _same_but_sha(table.to_pylist(), digested)


def test_frames_are_refused_with_digest_none(sample_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="--with-frames: there are no frames to keep with --digest none"):
        replay_local(open_history(str(sample_dir)), ReplayOptions(digest="none"), with_frames=True)
    assert main(["replay", str(sample_dir), "--engine", "local", "--digest", "none", "--with-frames", "--quiet"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--with-frames" in err and "--digest none" in err
    assert NO_FRAMES in err


def test_a_bad_digest_is_refused(capsys: pytest.CaptureFixture[str], sample_dir: Path) -> None:
    with pytest.raises(ValueError, match="digest: expected one of sha256, none, got 'md5'"):
        ReplayOptions(digest="md5")  # type: ignore[arg-type]
    with pytest.raises(SystemExit):
        main(["replay", str(sample_dir), "--digest", "md5"])
    assert "--digest" in capsys.readouterr().err


def test_cli_writes_the_sizes_schema(sample_dir: Path, tmp_path: Path) -> None:
    assert main(["replay", str(sample_dir), "--engine", "local", "--digest", "none", "--out", str(tmp_path / "o"), "--quiet"]) == 0
    table = pq.read_table(tmp_path / "o" / "requests")
    assert table.schema.equals(SIZES_SCHEMA)
    assert table.column("sha256").null_count == table.num_rows > 0
    assert table.to_pylist() == [dict(r, frame=None) for r in _local(sample_dir, digest="none")]


def test_replay_dataframe_takes_the_digest(spark: Any, logs: dict[str, Path], tmp_path: Path) -> None:
    from ctrlbatch.replay import REQUESTS_SCHEMA, replay_dataframe

    digested = _local(logs["g4"])
    frame = replay_dataframe(spark, logs["g4"], digest="none", work_dir=tmp_path / "w")
    assert frame.schema == REQUESTS_SCHEMA  # the DataFrame's schema whatever the digest
    got = [r.asDict() for r in frame.orderBy("delta_last_offset", "broker", "seq").collect()]
    for row in got:
        del row["delta_time"]
    _same_but_sha(got, sorted(digested, key=lambda r: (r["delta_last_offset"], r["broker"], r["seq"])))
    with pytest.raises(ValueError, match="--with-frames: there are no frames to keep with --digest none"):
        replay_dataframe(spark, logs["g4"], digest="none", with_frames=True, work_dir=tmp_path / "w2")
