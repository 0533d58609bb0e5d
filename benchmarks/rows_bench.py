"""Row making: the one frame encoder (replay/rows/frames.py) against the per-send encoder it replaced.

    python benchmarks/rows_bench.py [--brokers 12] [--records 20000] [--runs 5] [--json PATH]

Both engines' rows come from ``rows.expand_rows`` / ``rows.expand_columns`` over send groups, each
frame hashed by ``FrameEncoder`` (the request head encoded once per group, the hash of the bytes
before the correlation id copied per row). The peer, measured in the same run on the same sends,
is the sequential engine's former path: per send ``OutboundRequest.encode_parts`` and a SHA-256
over the parts (what ``rows.request_row`` did before both engines shared an encoder). The target:
the shared encoder is at least as fast as that peer (it was the Spark engine's own, faster, path).
Also printed: the one reading loop's batches per second on the same log (reading.LogReader).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figure, cpu_timed, write_results  # noqa: E402

from ctrlbatch.replay.generate.generator import generate_log  # noqa: E402
from ctrlbatch.replay.image.deltas import group_deltas  # noqa: E402
from ctrlbatch.replay.image.image import EMPTY_IMAGE  # noqa: E402
from ctrlbatch.replay.log.sources import open_history  # noqa: E402
from ctrlbatch.replay.propagate.propagator import ReplayOptions, propagate_delta  # noqa: E402
from ctrlbatch.replay.rows.rows import (  # noqa: E402
    expand_columns,
    expand_rows,
    partition_count,
    send_groups,
    update_type_of,
)
from ctrlbatch.requests import request_head  # noqa: E402

_I32, _I64 = struct.Struct(">i"), struct.Struct(">q")


def peer_rows(work: list[tuple[Any, list[Any]]]) -> int:
    """The former sequential path: one encode_parts and one hash over the parts per send."""
    seq: dict[int, int] = {}
    n = 0
    for delta, sends in work:
        for send in sends:
            if send.dropped:
                continue
            s = seq.get(send.broker, 0)
            seq[send.broker] = s + 1
            builder = send.request.builder
            parts = send.request.encode_parts(correlation_id=s, client_id=str(builder.controller_id))
            digest = hashlib.sha256()
            size = 0
            for part in parts:
                digest.update(part)
                size += len(part)
            row = {
                "delta": delta.last_offset, "timestamp": delta.timestamp, "broker": send.broker, "seq": s,
                "api_key": send.request.api_key, "api_version": send.request.version,
                "controller_id": builder.controller_id, "controller_epoch": builder.controller_epoch,
                "update_type": update_type_of(send), "partitions": partition_count(send), "bytes": size,
                "sha256": digest.hexdigest(), "dropped": False, "frame": None,
            }
            n += row["bytes"] > 0
    return n


class _FormerSparkFrames:
    """The Spark engine's former encoder (byte surgery at a fixed offset 8, prefix hash copied)."""

    def __init__(self, group: Any) -> None:
        head = request_head(group.api_key, group.api_version, 0, str(group.controller_id), len(group.data))
        self.head = head
        self.prefix = hashlib.sha256(head[:8])
        self.tail = head[12:]
        data = memoryview(group.data)
        off = group.epoch_offset
        self.parts = (data,) if off is None else (data[:off], data[off + 8 :])

    def sha256(self, seq: int, broker_epoch: int) -> str:
        h = self.prefix.copy()
        h.update(_I32.pack(seq))
        h.update(self.tail)
        parts = self.parts
        h.update(parts[0])
        if len(parts) == 2:
            h.update(_I64.pack(broker_epoch))
            h.update(parts[1])
        return h.hexdigest()


def former_spark_rows(work: list[tuple[Any, list[Any]]]) -> int:
    """The Spark engine's former path: groups, then its own encoder per group and row."""
    seq: dict[int, int] = {}
    n = 0
    for delta, sends in work:
        for group in send_groups(delta, sends):
            frames = _FormerSparkFrames(group)
            for broker, epoch in zip(group.brokers, group.broker_epochs, strict=True):
                s = seq.get(broker, 0)
                seq[broker] = s + 1
                n += len(frames.sha256(s, epoch)) > 0
    return n


def shared_rows(work: list[tuple[Any, list[Any]]]) -> int:
    """The shared path, as the sequential engine runs it: groups, then rows one by one."""
    groups = (g for delta, sends in work for g in send_groups(delta, sends))
    return sum(1 for _ in expand_rows(groups, {}, False))


def shared_columns(work: list[tuple[Any, list[Any]]]) -> int:
    """The shared path, as a Spark write task runs it: groups, then column chunks."""
    groups = (g for delta, sends in work for g in send_groups(delta, sends))
    return sum(len(c["broker"]) for c in expand_columns(groups, {}, False))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--brokers", type=int, default=12)
    p.add_argument("--records", type=int, default=20_000)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        generate_log(Path(tmp) / "data", brokers=args.brokers, topics=20, partitions=200, records=args.records, seed=1)
        history = open_history(Path(tmp) / "data")
        t = time.process_time()
        batches = list(history.batches())
        read_s = time.process_time() - t
        image = EMPTY_IMAGE
        work = []
        for delta in group_deltas(batches):
            image, sends = propagate_delta(image, delta, ReplayOptions())
            if sends:
                work.append((delta, sends))
    rows = shared_rows(work)
    assert rows == peer_rows(work) == shared_columns(work) == former_spark_rows(work)
    load = os.getloadavg()
    peer, spark, mine, cols = cpu_timed([(f, work) for f in (peer_rows, former_spark_rows, shared_rows, shared_columns)], args.runs)
    pm, sm, mm, cm = (statistics.median(x) for x in (peer, spark, mine, cols))
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {rows:,} rows of {len(work):,} deltas, "
          f"{args.brokers} brokers; median of {args.runs}, rows per CPU second")
    print(f"  former per-send encoder : {rows / pm:12,.0f} rows/s")
    print(f"  former Spark encoder    : {rows / sm:12,.0f} rows/s  (hashes only, no row built)")
    print(f"  shared encoder, rows    : {rows / mm:12,.0f} rows/s  ({pm / mm:.2f}x the former)")
    print(f"  shared encoder, columns : {rows / cm:12,.0f} rows/s  ({pm / cm:.2f}x the former)")
    print(f"  reading loop            : {len(batches) / read_s:12,.0f} batches per CPU second ({len(batches):,} batches)")
    figures = [
        Figure(f"rows made by the shared frame encoder (sequential engine, {rows:,} rows), rows per CPU second, median of {args.runs}",
               rows / mm, "rows/s", rows / max(mine), rows / mm, rows / min(mine), "former per-send encoder",
               rows / pm, pm / mm, "medians", "ratio >= 1.0x", pm / mm >= 1.0),
        Figure(f"rows made by the shared frame encoder (Spark write task, {rows:,} rows), rows per CPU second, median of {args.runs}",
               rows / cm, "rows/s", rows / max(cols), rows / cm, rows / min(cols), "former per-send encoder",
               rows / pm, pm / cm, "medians", "ratio >= 1.0x", pm / cm >= 1.0),
        Figure(f"the one reading loop ({len(batches):,} batches, one run), batches per CPU second", len(batches) / read_s, "batches/s"),
    ]
    write_results(args.json, "rows_bench", figures, vars(args))


if __name__ == "__main__":
    main()
