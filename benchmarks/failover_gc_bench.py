"""Where the collector's time goes in the failover batch, and what a collector policy would move.

The failover scenario of failover_bench.py (200,000 partitions, RF 3, 100 brokers: accumulate
with the bulk add, send, encode every frame), run under three collector policies, each in a
process of its own: CPython's default, common/tuning.py's rare_collections() around the batch
(GC_THRESHOLDS), and gc_paused() around it. For each it prints the run's CPU time, the collections
inside it per generation (count and CPU seconds, from gc.callbacks), and what the policy left for
later: the tracked objects still in the young generations at the end (the batch's partition
states, while its requests are held) and the CPU time of collecting them (gc.collect(1), timed).
Collected afterwards, they also enter the oldest generation's pending count, so the full
collection the default policy ran inside the batch comes later instead (CPython 3.11: a full
collection once the objects promoted since the last one exceed a quarter of the long-lived ones).
Issue 26 item 3: a policy inside the batch only moves collections out of the measured run; this
prints by how much.

Usage: python benchmarks/failover_gc_bench.py [--partitions N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

POLICIES = ("default", "rare_collections", "gc_paused")


def child(partitions: int, repeat: int, policy: str) -> dict[str, list[float]]:
    import contextlib
    import gc
    import time

    from ctrlbatch.batch.scenarios import Cluster, HoldingTransport, build_context, failover
    from ctrlbatch.common.tuning import gc_paused, rare_collections

    c = Cluster(partitions=partitions)
    ctx, entries = build_context(c)
    spent: dict[int, list[float]] = {}
    started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.process_time()
        else:
            s = spent.setdefault(info["generation"], [0, 0.0])
            s[0] += 1
            s[1] += time.process_time() - started[0]

    gc.callbacks.append(on_gc)
    make = {"default": contextlib.nullcontext, "rare_collections": rare_collections, "gc_paused": gc_paused}[policy]
    out: dict[str, list[float]] = {}
    for _ in range(repeat):
        gc.collect()
        spent.clear()
        transport = HoldingTransport()
        c0 = time.process_time()
        with make():
            batch = failover(ctx, entries, c, transport)
            batch.send_requests_to_brokers(c.controller_epoch)
            transport.drain(str(c.controller_id), lambda *_: None)
        c1 = time.process_time()
        young = len(gc.get_objects(0)) + len(gc.get_objects(1))
        in_run = {g: list(v) for g, v in spent.items()}
        o0 = time.process_time()
        gc.collect(1)
        owed = time.process_time() - o0
        row = {"cpu": c1 - c0, "young_left": float(young), "owed_cpu": owed}
        for g in range(3):
            n, s = in_run.get(g, (0, 0.0))
            row[f"gen{g}_n"], row[f"gen{g}_cpu"] = float(n), s
        for k, v in row.items():
            out.setdefault(k, []).append(v)
        del transport, batch
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=200_000, help="partitions (default: %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per policy (default: %(default)s)")
    args = ap.parse_args()
    med = statistics.median
    print(f"failover batch, {args.partitions:,} partitions, 100 brokers; CPU seconds, medians of {args.repeat} runs")
    for policy in POLICIES:
        load = os.getloadavg()[0]
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(args.partitions), str(args.repeat), policy],
            check=True, capture_output=True, text=True, timeout=1800,
        )
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        gens = ", ".join(f"gen{g} {med(r[f'gen{g}_n']):.0f} x = {med(r[f'gen{g}_cpu']):.3f} s" for g in range(3))
        print(
            f"  {policy:16s} (load {load:.2f}): run {med(r['cpu']):.3f} s, collections in it: {gens}; "
            f"left young: {med(r['young_left']):,.0f} objects, collecting them {med(r['owed_cpu']):.3f} s; "
            f"run + that {med(r['cpu']) + med(r['owed_cpu']):.3f} s"
        )


if __name__ == "__main__":
    main()
