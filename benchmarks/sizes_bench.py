"""Sizes-only replay (``--digest none``) against its floor: reading the log and folding the image.

    .venv/bin/python benchmarks/sizes_bench.py                       # 1M records, both engines
    .venv/bin/python benchmarks/sizes_bench.py --records 10000000    # the issue's target size (hours)
    .venv/bin/python benchmarks/sizes_bench.py ... --json benchmarks/results/sizes_bench.json

What it does, in one run, on a generated log (replay_bench's generator parameters and cache key:
100 brokers, 2,000 topics, 50,000 partitions, seed 1; generated once under --cache):
- the floor: one process reads the log, groups it into deltas and folds every delta into the
  image (``open_history``, ``group_deltas``, ``apply_delta``), with no request built: what any
  replay of this log must do. Timed as a process of its own, start-up included, like the runs;
- ``ctrlbatch replay --digest none --out DIR`` on the sequential engine and on Spark
  ``--master local[2]``: every request sized, none encoded or hashed, Parquet, summary.json and
  report.png written.
The floor is one core's work; Spark's floor is that time over the 2 cores it uses (the same
convention as replay_bench's SHA-256 floor). Printed: each run's time, its ratio to its floor,
the load average at the run's end and the processor; and beside it the CPU time of the run's
process tree against the floor process's CPU time (on a loaded machine the wall ratio moves
with the load; the CPU ratio much less). Target (issue 26): within 3x the floor at
10M records on both engines. The machine is shared: compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figure, processor, write_results  # noqa: E402
from replay_bench import PYTHON, log_dir, run_replay  # noqa: E402

_FOLD = """
import sys, time
from ctrlbatch.replay import EMPTY_IMAGE, apply_delta, group_deltas, open_history
image = EMPTY_IMAGE
deltas = 0
for delta in group_deltas(open_history(sys.argv[1]).batches(), 1):
    image = apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)[0]
    deltas += 1
print(deltas, sum(len(t.partitions) for t in image.topics.values()))
"""


def fold_floor(log: Path) -> dict[str, Any]:
    """The floor: a process that reads and folds the log and builds no request (wall seconds, and
    the CPU seconds of the process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run([str(PYTHON), "-c", _FOLD, str(log)], capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"the fold failed ({done.returncode}):\n{done.stderr[-4000:]}")
    deltas, partitions = (int(x) for x in done.stdout.split())
    return {"seconds": seconds, "cpu_seconds": cpu, "deltas": deltas, "partitions": partitions,
            "loadavg": os.getloadavg()[0]}


ENGINES = {"local": 1, "spark": 2}  # engine -> the cores it uses (sequential; local[2])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--brokers", type=int, default=100)
    ap.add_argument("--topics", type=int, default=2_000)
    ap.add_argument("--partitions", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=list(ENGINES), action="append", help="run only these engines (repeatable)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ctrlbatch-replay-bench")
    ap.add_argument("--json", metavar="PATH", help="also write the figures as JSON (benchmarks/figures.py)")
    args = ap.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    log = log_dir(args.cache, args.records, args)
    cpu = processor()
    print(f"sizes-only replay benchmark: {args.records:,} records ({cpu}, {os.cpu_count()} cores)", flush=True)
    floor = fold_floor(log)
    print(f"  floor (read and fold, no requests): {floor['seconds']:.1f} s on one core ({floor['cpu_seconds']:.1f} s CPU), "
          f"{floor['deltas']:,} deltas (load {floor['loadavg']:.2f})", flush=True)
    figures: list[Figure] = []
    measured: dict[str, Any] = {"floor": floor}
    for engine, cores in ENGINES.items():
        if args.only and engine not in args.only:
            continue
        with tempfile.TemporaryDirectory(dir=args.cache) as scratch:
            r = run_replay(log, engine, Path(scratch) / "out", extra=["--digest", "none"])
        floor_s = floor["seconds"] / cores
        ratio = r["seconds"] / floor_s
        name = "Spark local[2]" if engine == "spark" else "sequential"
        target = args.records >= 10_000_000
        cpu_ratio = r["cpu_seconds"] / floor["cpu_seconds"]
        print(f"  {name:<15} --digest none: {r['seconds']:8.1f} s, {r['rows']:,} rows, "
              f"{r['summary']['totals']['bytes'] / 1e9:.1f} GB of frames sized; floor {floor_s:.1f} s on {cores} "
              f"core(s): x{ratio:.2f} (load {r['loadavg']:.2f}; target <= 3x at 10M); CPU {r['cpu_seconds']:.1f} s "
              f"against the floor's {floor['cpu_seconds']:.1f} s: x{cpu_ratio:.2f}", flush=True)
        measured[engine] = {k: r[k] for k in ("seconds", "rows", "loadavg", "cpu_seconds", "phases")} | {"cpu_ratio": cpu_ratio}
        figures.append(Figure(
            what=f"{name} sizes-only replay (--digest none) of {args.records:,} records against its floor "
                 f"(read and fold, no requests, on {cores} core(s))",
            value=r["seconds"], unit="s", peer="read-and-fold floor, same run", peer_value=floor_s, ratio=ratio,
            ratio_of="time / floor", target="ratio <= 3x (at 10M records)" if target else None,
            met=ratio <= 3.0 if target else None,
        ))
    write_results(args.json, "sizes_bench", figures, vars(args) | {"cache": str(args.cache), "measured": measured, "cpu": cpu})


if __name__ == "__main__":
    main()
