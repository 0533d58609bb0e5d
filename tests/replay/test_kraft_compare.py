"""KRaft beside ZooKeeper mode on the same history: the metadata log bytes every KRaft broker fetched
(summary.KRAFT_DEFINITION), split into NoOp batches and metadata batches, beside the ZooKeeper-mode
request bytes, additive like the rest of the summary, in summary.json, the printed summary and
report.png."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.cli import main
from ctrlbatch.replay.engine.local import replay_local
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.log.segments import scan_batches
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.propagate.propagator import ReplayOptions
from ctrlbatch.replay.rows.summary import KRAFT_DEFINITION, ReplaySummary


def test_the_sample_log_bytes_are_its_segment_bytes(sample_dir: Path) -> None:
    history = open_history(sample_dir)
    result = replay_local(history, ReplayOptions())
    result.drain()
    data = result.summary.to_dict()
    kraft = data["kraft_vs_zookeeper"]
    segment_bytes = sum(p.stat().st_size for p in (sample_dir / "__cluster_metadata-0").glob("*.log"))
    assert kraft["log_bytes"] == segment_bytes and kraft["unsized_batches"] == 0
    assert kraft["log_batches"] == history.stats.batches
    assert kraft["definition"] == KRAFT_DEFINITION
    by_broker = kraft["by_broker"]
    assert by_broker and set(data["by_broker"]) <= set(by_broker)
    for b, c in by_broker.items():
        assert c["kraft_fetch_bytes"] == segment_bytes == c["kraft_noop_bytes"] + c["kraft_metadata_bytes"]
        assert c["zk_request_bytes"] == data["by_broker"].get(b, {"bytes": 0})["bytes"]
    # an idle single-node cluster: 4,800 of its 4,814 batches hold one NoOp each, 72 bytes a batch
    # (pyspark-notes.md section 1.1); the 4,801st NoOp shares the batch at offsets 470-472 with a
    # topic's records, which makes it a metadata batch, like the 13 others
    assert (kraft["noop_batches"], kraft["metadata_batches"]) == (4_800, 14)
    assert kraft["noop_bytes"] == 4_800 * 72 == segment_bytes - kraft["metadata_bytes"]
    assert by_broker["1"]["kraft_metadata_bytes"] == kraft["metadata_bytes"] < by_broker["1"]["zk_request_bytes"]


def test_from_a_snapshot_the_span_is_the_snapshot_and_the_batches_from_its_end(tmp_path: Path) -> None:
    result = generate_log(tmp_path, brokers=4, topics=4, partitions=40, records=6_000, seed=3, snapshots=1)
    snap = Path(result.snapshots[0])
    end = int(snap.name[:20])
    expected = snap.stat().st_size + sum(
        p.length for seg in result.segments for p in scan_batches(seg) if p.last_offset >= end
    )
    replayed = replay_local(open_history(tmp_path, from_snapshot="newest"), ReplayOptions())
    replayed.drain()
    kraft = replayed.summary.to_dict()["kraft_vs_zookeeper"]
    assert kraft["log_bytes"] == expected
    assert sorted(kraft["by_broker"]) == ["1", "2", "3", "4"]


def test_text_inputs_count_their_batches_as_unsized(tmp_path: Path) -> None:
    generate_log(tmp_path / "d", brokers=3, topics=2, partitions=10, records=800, seed=1, jsonl=tmp_path / "h.jsonl")
    result = replay_local(open_history(tmp_path / "h.jsonl"), ReplayOptions())
    result.drain()
    kraft = result.summary.to_dict()["kraft_vs_zookeeper"]
    assert kraft["log_bytes"] == 0 and kraft["unsized_batches"] == kraft["log_batches"] > 0
    assert kraft["noop_bytes"] == kraft["metadata_bytes"] == 0 and kraft["noop_batches"] > 0


@given(st.integers(0, 10_000))
@settings(max_examples=25, deadline=None)
def test_the_comparison_adds_up_over_any_split(cut: int) -> None:
    batches = list(open_history(Path(__file__).resolve().parents[3] / "shared/samples/kraft-single-node").batches())
    cut %= len(batches) + 1
    whole, left, right = ReplaySummary(), ReplaySummary(), ReplaySummary()
    for b in batches:
        whole.count_batch(b)
    for b in batches[:cut]:
        left.count_batch(b)
    for b in batches[cut:]:
        right.count_batch(b)
    left.merge(right)
    assert left.to_dict() == whole.to_dict()
    assert ReplaySummary.from_dict(json.loads(json.dumps(whole.to_dict()))).to_dict() == whole.to_dict()


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_printed_summary_summary_json_and_report_png(sample_dir: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", str(sample_dir), "--engine", "local", "--quiet", "--out", str(tmp_path / "o")])
    printed, err = capsys.readouterr()
    assert code == 0, err
    saved = json.loads((tmp_path / "o" / "summary.json").read_text())["summary"]["kraft_vs_zookeeper"]
    log = saved["log_bytes"]
    assert (f"every KRaft broker fetches the whole metadata log, {log:,} bytes in {saved['log_batches']:,} batches"
            in printed)
    assert f"NoOp batches {saved['noop_bytes']:>16,} bytes in {saved['noop_batches']:,} batches" in printed
    assert f"metadata     {saved['metadata_bytes']:>16,} bytes in {saved['metadata_batches']:,} batches" in printed
    for b, c in saved["by_broker"].items():
        m, n, z = c["kraft_metadata_bytes"], c["kraft_noop_bytes"], c["zk_request_bytes"]
        assert f"{b:<22}{m:>16,}{n:>14,}{z:>16,}{z / m:>21.2f}{z / (m + n):>16.2f}" in printed
    width, height = _png_size(tmp_path / "o" / "report.png")
    assert width == 1300 and height > 800


def test_report_adapts_to_one_broker_and_adds_the_comparison_below(tmp_path: Path) -> None:
    import numpy as np

    from ctrlbatch.replay.output.report import BrokerTimeline, draw_report

    one = BrokerTimeline((1,), np.array([0, 1000, 2000]), np.array([[1, 2]]), np.array([[10, 20]]))
    two = BrokerTimeline((1, 2), np.array([0, 1000, 2000]), np.array([[1, 2], [0, 1]]), np.array([[10, 20], [0, 5]]))
    draw_report(one, tmp_path / "one.png", title="t")
    draw_report(two, tmp_path / "two.png", title="t")
    draw_report(one, tmp_path / "one-kraft.png", title="t", kraft={1: (300, 30, 100), 2: (300, 30, 0)})
    (w1, h1), (w2, h2), (w3, h3) = (_png_size(tmp_path / f"{n}.png") for n in ("one", "two", "one-kraft"))
    assert w1 == w2 == w3 == 1300
    assert h1 < h2  # one broker: no heat maps that would repeat the top panel
    assert h3 > h1  # the KRaft panel below
