"""The controller id where a replay starts from a snapshot: the KRaft leader of the last LeaderChange
record below the snapshot's end offset in the retained segments; --controller-id only when none is
retained; the summary says which. On the real sample (a snapshot cut from its own log) and on
generated logs (snapshots written by the generator, older segments deleted as retention would)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

from ctrlbatch.cli import main
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.generate.writer import encode_batch_raw, encode_records
from ctrlbatch.replay.log import records as rec
from ctrlbatch.replay.log.segments import read_segment, scan_batches
from ctrlbatch.replay.log.sources import open_history, snapshot_leader
from ctrlbatch.replay.schema.record_classes import control_class, encode_control

METADATA = "__cluster_metadata-0"


def _control(type_id: int, data: Any, offset: int, epoch: int) -> bytes:
    key = struct.pack(">hh", 0, type_id)
    return encode_batch_raw(offset, epoch, 0, 1, encode_records([encode_control(data)], [key]), control=True)


def cut_sample(sample: Path, out: Path, *, keep_old_segment: bool) -> tuple[Path, int]:
    """A data directory holding the sample's log and a snapshot <end>-<epoch>.checkpoint cut from it:
    the header, the log's data batches below end (raw, CRCs intact), the footer. Without
    keep_old_segment the log is only its batches from end on, in a segment named end (retention
    deleted the older ones, the LeaderChange at offset 0 with them)."""
    segment = sample / METADATA / "00000000000000000000.log"
    pointers = list(scan_batches(segment))
    cut = pointers[len(pointers) // 2]
    end, data = cut.base_offset, segment.read_bytes()
    directory = out / METADATA
    directory.mkdir(parents=True)
    header, footer = control_class(rec.SNAPSHOT_HEADER), control_class(rec.SNAPSHOT_FOOTER)
    assert header is not None and footer is not None
    body = [data[p.position : p.position + p.length] for p in pointers[: len(pointers) // 2]]
    kept = [b for b, batch in zip(body, read_segment(segment), strict=False) if not batch.control]
    snapshot = directory / f"{end:020d}-{1:010d}.checkpoint"
    snapshot.write_bytes(
        _control(rec.SNAPSHOT_HEADER, header(version=0, last_contained_log_timestamp=0), 0, 1)
        + b"".join(kept)
        + _control(rec.SNAPSHOT_FOOTER, footer(version=0), end, 1)
    )
    if keep_old_segment:
        shutil.copy(segment, directory / segment.name)
    else:
        (directory / f"{end:020d}.log").write_bytes(data[cut.position :])
    return out, end


def replay(capsys: pytest.CaptureFixture[str], path: Path, out: Path, *extra: str) -> tuple[str, dict[str, Any], list[int]]:
    import pyarrow.parquet as pq

    code = main(["replay", str(path), "--engine", "local", "--quiet", "--from-snapshot", "--out", str(out), *extra])
    printed, err = capsys.readouterr()
    assert code == 0, err
    saved = json.loads((out / "summary.json").read_text())
    ids = pq.read_table(out / "requests", columns=["controller_id"]).column(0).to_pylist()
    return printed, saved, ids


def test_the_real_sample_takes_the_leader_of_its_retained_leader_change(
    sample_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, end = cut_sample(sample_dir, tmp_path / "kept", keep_old_segment=True)
    assert snapshot_leader(open_history(data_dir, from_snapshot="newest")) == (1, 0)
    printed, saved, ids = replay(capsys, data_dir, tmp_path / "o1", "--controller-id", "7")
    assert ids and set(ids) == {1}  # node 1, the sample's only KRaft leader: not the 7 given
    assert saved["controller_id"]["id"] == 1
    assert saved["controller_id"]["source"] == f"LeaderChange record at offset 0 (below the snapshot's end offset {end})"
    assert f"controller id: 1 from LeaderChange record at offset 0 (below the snapshot's end offset {end})" in printed
    assert "--controller-id 7: the log names the leader" in printed


def test_without_a_retained_leader_change_the_controller_id_option_applies(
    sample_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, end = cut_sample(sample_dir, tmp_path / "cut", keep_old_segment=False)
    assert snapshot_leader(open_history(data_dir, from_snapshot="newest")) is None
    printed, saved, ids = replay(capsys, data_dir, tmp_path / "o2", "--controller-id", "7")
    assert ids and set(ids) == {7}
    assert saved["controller_id"] == {
        "id": 7, "source": "--controller-id", "until": "the first LeaderChange record after the snapshot",
        "why": f"no LeaderChange record below the snapshot's end offset {end} is retained",
    }
    assert "controller id: 7 from --controller-id" in printed
    _printed, default, ids = replay(capsys, data_dir, tmp_path / "o3")
    assert set(ids) == {1} and default["controller_id"]["source"] == "default"


def test_without_a_snapshot_the_summary_names_the_fallback(sample_dir: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", str(sample_dir), "--engine", "local", "--quiet", "--controller-id", "4"])
    printed, err = capsys.readouterr()
    assert code == 0, err
    assert "controller id: 4 from --controller-id, until the first LeaderChange record of the log" in printed


def _expected_leader(directory: Path, end: int) -> tuple[int, int] | None:
    """By brute force: every batch of every retained segment, the last LeaderChange below end."""
    found = None
    for seg in sorted(directory.glob("*.log")):
        for batch in read_segment(seg):
            for c in batch.control_records:
                if c.type == rec.LEADER_CHANGE and c.offset < end:
                    found = (c.data.leader_id, c.offset)
    return found


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_logs_with_deleted_segments_agree_with_a_full_read(tmp_path: Path, seed: int) -> None:
    result = generate_log(tmp_path, brokers=4, topics=4, partitions=40, records=12_000, seed=seed, snapshots=2,
                          segment_bytes=40_000)
    directory = Path(result.directory)
    segments = sorted(directory.glob("*.log"))
    assert len(segments) > 4
    for snap in result.snapshots:
        end = int(Path(snap).name.split("-")[0])
        got = snapshot_leader(open_history(directory, from_snapshot=snap))
        assert got == _expected_leader(directory, end) and got is not None
    # Retention: delete the segments wholly below the newest snapshot, but the one holding its end.
    end = int(Path(result.snapshots[-1]).name.split("-")[0])
    bases = [int(s.name[:20]) for s in segments]
    for i, seg in enumerate(segments[:-1]):
        if bases[i + 1] <= end:
            seg.unlink()
    history = open_history(directory, from_snapshot="newest")
    assert snapshot_leader(history) == _expected_leader(directory, end)


def test_the_spark_engine_starts_from_the_same_controller_id(
    spark: Any, sample_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow.parquet as pq

    data_dir, _end = cut_sample(sample_dir, tmp_path / "kept", keep_old_segment=True)
    _printed, local, _ids = replay(capsys, data_dir, tmp_path / "local", "--controller-id", "7")
    code = main(["replay", str(data_dir), "--quiet", "--from-snapshot", "--controller-id", "7", "--out",
                 str(tmp_path / "spark")])
    _out, err = capsys.readouterr()
    assert code == 0, err
    remote = json.loads((tmp_path / "spark" / "summary.json").read_text())
    assert remote["controller_id"] == local["controller_id"] and remote["summary"] == local["summary"]
    assert pq.read_table(tmp_path / "spark" / "requests").equals(pq.read_table(tmp_path / "local" / "requests"))
