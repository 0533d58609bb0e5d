"""report.png's bursts: per time bucket the biggest delta with its cause and API (summed as its rows
pass, across record batches, never across files), the buckets numbered as bursts, and the lines
that name them; on the sample, the two bursts a reader sees are named by their real events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.replay.output.report import (
    API_ORDER,
    BiggestDeltas,
    Burst,
    broker_timeline,
    burst_buckets,
    burst_lines,
)
from ctrlbatch.replay.rows.rows import REQUEST_SCHEMA
from ctrlbatch.replay.run.job import ReplayJob, execute

SAMPLE = Path(__file__).resolve().parents[3] / "shared/samples/kraft-single-node"
NAMES = {4: "LeaderAndIsr", 5: "StopReplica", 6: "UpdateMetadata"}


def _row(delta: int, ts: int, broker: int, api: int, size: int, cause: str) -> dict[str, Any]:
    return {
        "timestamp": ts, "broker": broker, "seq": 0, "api_key": api, "api": NAMES[api], "api_version": 1,
        "controller_id": 1, "controller_epoch": 1, "update_type": None, "partitions": 1, "bytes": size,
        "sha256": "", "frame": None, "delta_first_offset": delta, "delta_last_offset": delta, "cause": cause,
    }


def _write(directory: Path, name: str, rows: list[dict[str, Any]]) -> None:
    directory.mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=REQUEST_SCHEMA), directory / name)


def test_each_bucket_keeps_its_biggest_delta_with_cause_and_api(tmp_path: Path) -> None:
    requests = tmp_path / "requests"
    _write(requests, "part-00000.parquet", [
        _row(10, 0, 1, 6, 100, "topic creation"), _row(10, 0, 2, 6, 100, "topic creation"),
        _row(10, 0, 1, 4, 50, "topic creation"),
        _row(20, 5, 1, 6, 500, "broker registration"),
    ])
    _write(requests, "part-00001.parquet", [
        _row(30, 10_000, 1, 5, 30, "topic deletion"), _row(30, 10_000, 2, 5, 30, "topic deletion"),
    ])
    tl = broker_timeline(requests, 4)
    first, last = tl.biggest[0], tl.biggest[-1]
    assert first == Burst(20, 5, "broker registration", (0, 500, 0), 1)
    assert last == Burst(30, 10_000, "topic deletion", (0, 0, 60), 2)
    assert tl.biggest[1] is None and tl.biggest[2] is None
    assert tl.api_requests.sum(axis=1).tolist() == [1, 3, 2]  # in API_ORDER: LeaderAndIsr, UpdateMetadata, StopReplica
    assert tl.api_bytes.sum() == tl.bytes.sum() == 810
    assert (tl.api_requests.sum(axis=0) == tl.requests.sum(axis=0)).all()
    lines = burst_lines(tl, burst_buckets(tl.bytes.sum(axis=0)))
    assert len(lines) == 1  # bucket 3 holds 60 of the busiest bucket's 750 bytes: under BURST_SHARE
    assert "delta 20 at 1970-01-01 00:00:00: broker registration; UpdateMetadata 500 bytes" in lines[0]


def test_a_delta_is_summed_across_record_batches() -> None:
    deltas = BiggestDeltas(2)
    api = np.array([1, 1])  # UpdateMetadata's index in API_ORDER
    causes = pa.array(["reassignment", "reassignment"])
    deltas.feed(np.array([7, 7]), np.array([0, 0]), np.array([0, 0]), api, np.array([10, 20]), causes)
    deltas.feed(np.array([7, 7]), np.array([0, 0]), np.array([0, 0]), api, np.array([30, 40]), causes)
    deltas.close()
    assert deltas.biggest == [Burst(7, 0, "reassignment", (0, 100, 0), 4), None]
    assert API_ORDER[1] == 6


@given(st.lists(st.integers(0, 1_000), max_size=60), st.integers(1, 8))
def test_bursts_are_the_biggest_buckets_never_adjacent(values: list[int], limit: int) -> None:
    chosen = burst_buckets(np.array(values, dtype=np.int64), limit=limit, share=0.1)
    assert chosen == sorted(chosen) and len(chosen) <= limit
    assert all(b - a > 1 for a, b in zip(chosen, chosen[1:], strict=False))
    if not values or max(values) == 0:
        assert chosen == []
        return
    top = max(values)
    assert values.index(top) in chosen  # the busiest bucket always is one
    assert all(values[c] >= 0.1 * top and values[c] > 0 for c in chosen)
    if len(chosen) < limit:  # every big bucket left out sits next to a chosen one at least as big
        for b, v in enumerate(values):
            if b not in chosen and v >= 0.1 * top and v > 0:
                assert any(abs(b - c) == 1 and values[c] >= v for c in chosen)


def test_the_samples_bursts_are_named_by_their_events(tmp_path: Path) -> None:
    execute(ReplayJob(str(SAMPLE), engine="local", progress=False), tmp_path / "o")
    tl = broker_timeline(tmp_path / "o" / "requests", 120)
    lines = burst_lines(tl, burst_buckets(tl.bytes.sum(axis=0)))
    assert len(lines) == 2
    assert "delta 469 at 2026-01-30 16:47:18: topic creation; LeaderAndIsr" in lines[0]
    assert "delta 4,925 at 2026-01-30 17:23:55: controlled shutdown; UpdateMetadata" in lines[1]
