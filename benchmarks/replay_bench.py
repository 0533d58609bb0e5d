"""Replay benchmark: the sequential engine against the Spark engine on local[2], and Spark's scaling.

    .venv/bin/python benchmarks/replay_bench.py                      # 10M and 1M records (hours on 2 cores)
    .venv/bin/python benchmarks/replay_bench.py --records 1000000 --small 100000
    .venv/bin/python benchmarks/replay_bench.py --records 10000000 --only spark   # one stage at a time
    .venv/bin/python benchmarks/replay_bench.py ... --json benchmarks/results/replay_bench.json   # also the figures as JSON

What it does, in one run: generate (or reuse, cached under --cache keyed by the parameters) a
log of --records records with the generator's default mix (100 brokers, 50,000 partitions by
default) and one of --small records; run ``ctrlbatch replay`` on each as a separate process:
the Spark engine (--master local[2]) on both, then the sequential engine on the big log. Each run
writes its full output (Parquet, summary.json, report.png) to a scratch directory. Measured:
wall time of the process, and the peak RSS of the driver Python process (VmHWM from /proc,
polled; the JVM and Python workers are other processes). Printed: the times, spark/sequential
on the big log, time(big)/time(small) for Spark, driver memory small vs big, and the load
average before and after (the machine may be shared: ratios from one run are the figures).
Results of each stage are also kept in --cache/results.json so stages can run separately.
Targets (issue 6): Spark on 2 cores >= 1.7x faster than sequential; time(10M)/time(1M) <= 11;
driver memory flat in the log size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from figures import Figure, write_results

ROOT = Path(__file__).resolve().parents[1]
PYTHON = Path(sys.executable)


def log_dir(cache: Path, records: int, args: argparse.Namespace) -> Path:
    """The cached log for these parameters (generated once)."""
    key = f"b{args.brokers}-t{args.topics}-p{args.partitions}-r{records}-s{args.seed}"
    path = cache / key
    if (path / "DONE").exists():
        return path
    shutil.rmtree(path, ignore_errors=True)
    from ctrlbatch.replay.generator import generate_log

    start = time.monotonic()
    print(f"generating {records:,} records into {path} ...", flush=True)
    result = generate_log(
        path, brokers=args.brokers, topics=args.topics, partitions=args.partitions, records=records, seed=args.seed
    )
    (path / "DONE").write_text(json.dumps({"records": result.records, "batches": result.batches}))
    print(f"  {result.records:,} records, {result.batches:,} batches in {time.monotonic() - start:.0f} s", flush=True)
    return path


def _hwm_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def run_replay(log: Path, engine: str, out: Path) -> dict[str, Any]:
    """One ``ctrlbatch replay`` process: wall seconds and the driver's peak RSS (MiB)."""
    cmd = [str(PYTHON), "-m", "ctrlbatch.cli", "replay", str(log), "--out", str(out), "--quiet", "--engine"]
    cmd += ["local"] if engine == "local" else ["spark", "--master", "local[2]"]
    env = dict(os.environ, PYSPARK_PYTHON=str(PYTHON), PYSPARK_DRIVER_PYTHON=str(PYTHON), SPARK_LOCAL_IP="127.0.0.1", TZ="UTC")
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _hwm_kib(proc.pid) or 0)
        time.sleep(0.2)
    seconds = time.monotonic() - start
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{stdout[-2000:]}\n{stderr[-4000:]}")
    summary = json.loads((out / "summary.json").read_text())
    return {"seconds": seconds, "driver_rss_mib": peak / 1024, "rows": summary["rows"], "summary": summary["summary"],
            "phases": summary.get("phases", {})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=10_000_000, help="the big log")
    ap.add_argument("--small", type=int, default=1_000_000, help="the small log (Spark scaling, driver memory)")
    ap.add_argument("--brokers", type=int, default=100)
    ap.add_argument("--topics", type=int, default=2_000)
    ap.add_argument("--partitions", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=["generate", "local", "spark", "spark-small"], action="append",
                    help="run only these stages (repeatable); results of earlier runs are reused")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ctrlbatch-replay-bench")
    ap.add_argument("--json", metavar="PATH", help="also write the headline figures as JSON (benchmarks/figures.py)")
    args = ap.parse_args()
    stages = set(args.only or ["generate", "local", "spark", "spark-small"])
    args.cache.mkdir(parents=True, exist_ok=True)
    results_file = args.cache / "results.json"
    results: dict[str, Any] = json.loads(results_file.read_text()) if results_file.exists() else {}
    load_before = os.getloadavg()
    big = log_dir(args.cache, args.records, args)
    small = log_dir(args.cache, args.small, args)
    # Spark first: a failure there (memory, a straggler) shows before the long sequential run.
    plan = [("spark", big, args.records), ("spark-small", small, args.small), ("local", big, args.records)]
    for stage, log, records in plan:
        if stage not in stages:
            continue
        with tempfile.TemporaryDirectory(dir=args.cache) as scratch:
            engine = "local" if stage == "local" else "spark"
            print(f"{stage}: {engine} engine on {records:,} records ...", flush=True)
            r = run_replay(log, engine, Path(scratch) / "out")
            phases = ", ".join(f"{k} {v:.1f} s" for k, v in r["phases"].items())
            print(f"  {r['seconds']:.1f} s, {r['rows']:,} rows, driver peak RSS {r['driver_rss_mib']:.0f} MiB"
                  f"{'; ' + phases if phases else ''}", flush=True)
            results[f"{engine}:{records}"] = {k: r[k] for k in ("seconds", "driver_rss_mib", "rows", "phases")} | {
                "summary": r["summary"], "loadavg": os.getloadavg()[0], "when": time.strftime("%Y-%m-%d %H:%M:%S")}
            results_file.write_text(json.dumps(results, indent=1))
    figures = report(results, args.records, args.small, load_before)
    measured = {k: {"when": v.get("when"), "loadavg": v.get("loadavg")} for k, v in sorted(results.items())}
    write_results(args.json, "replay_bench", figures, vars(args) | {"measured": measured})


def report(results: dict[str, Any], big: int, small: int, load_before: tuple[float, float, float]) -> list[Figure]:
    """Print the figures; return them for --json."""
    figures = []
    local, spark, spark_small = (results.get(k) for k in (f"local:{big}", f"spark:{big}", f"spark:{small}"))
    print(f"\nreplay benchmark: {big:,} vs {small:,} records (load average before {load_before[0]:.1f}, "
          f"now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for name, r in (("sequential", local), ("spark local[2]", spark)):
        if r:
            print(f"  {name:<16} {big:>12,} records: {r['seconds']:8.1f} s  driver {r['driver_rss_mib']:6.0f} MiB")
    if spark_small:
        print(f"  {'spark local[2]':<16} {small:>12,} records: {spark_small['seconds']:8.1f} s  "
              f"driver {spark_small['driver_rss_mib']:6.0f} MiB")
    if local and spark:
        same = local["summary"] == spark["summary"] and local["rows"] == spark["rows"]
        speed = local['seconds'] / spark['seconds']
        print(f"  spark is {speed:.2f}x the sequential speed (target >= 1.7); "
              f"same summary and row count: {same}")
        figures.append(Figure(
            what=f"replay of {big:,} records, Spark local[2] (same summary and rows as sequential: {same})",
            value=spark["seconds"], unit="s", peer="sequential engine", peer_value=local["seconds"], ratio=speed,
            ratio_of="speed-up", target="speed-up >= 1.7x", met=speed >= 1.7,
        ))
    if spark and spark_small:
        scaling = spark['seconds'] / spark_small['seconds']
        memory = spark['driver_rss_mib'] / spark_small['driver_rss_mib']
        tenfold = (big, small) == (10_000_000, 1_000_000)  # the target is for 10M vs 1M
        print(f"  spark time({big:,}) / time({small:,}) = {scaling:.2f} "
              f"(records x{big / small:.0f}; target <= 11 for 10M/1M)")
        print(f"  driver memory {spark_small['driver_rss_mib']:.0f} MiB -> {spark['driver_rss_mib']:.0f} MiB "
              f"(x{memory:.2f}; flat = about 1)")
        figures.append(Figure(
            what=f"Spark replay time, {big:,} records (x{big / small:.0f} the records)", value=spark["seconds"],
            unit="s", peer=f"{small:,} records", peer_value=spark_small["seconds"], ratio=scaling,
            target="ratio <= 11x" if tenfold else None, met=scaling <= 11 if tenfold else None,
        ))
        work = spark["summary"]["totals"]["partitions"] / spark_small["summary"]["totals"]["partitions"]
        per_work = scaling / work
        print(f"  the work grows x{work:.1f} (partition states in the requests; the small log spends more of itself "
              f"creating topics): time per partition state x{per_work:.2f} (linear = 1)")
        figures.append(Figure(
            what=f"Spark replay time per partition state sent, {big:,} vs {small:,} records (linear = 1x)",
            value=spark["seconds"] / spark["summary"]["totals"]["partitions"] * 1e9, unit="s per 1e9 states",
            peer=f"{small:,} records",
            peer_value=spark_small["seconds"] / spark_small["summary"]["totals"]["partitions"] * 1e9,
            ratio=per_work,
        ))
        figures.append(Figure(
            what=f"Spark driver peak RSS, {big:,} records (flat = about 1x)", value=spark["driver_rss_mib"],
            unit="MiB", peer=f"{small:,} records", peer_value=spark_small["driver_rss_mib"], ratio=memory,
            target="flat: ratio <= 1.1x", met=memory <= 1.1,
        ))
    return figures


if __name__ == "__main__":
    main()
