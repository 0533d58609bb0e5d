"""The Spark engine's plan, serial against parallel, on one generated log (issue 13, point 3).

Runs ``replay_spark`` (local[2], no rows written: the plan and the replay phases only) twice on
the same log in one process: once with the serial plan (one task reads the whole log: what
spark/plan.py did before spark/ranges.py) and once with the parallel plan. Prints, with the load
average beside each figure: the plan's wall and its phases, the run's wall, the plan's share of
the run's wall, and the serial work (the planning task, if any, plus the driver's own CPU: cuts,
combining the net effects, pickling the units) against the CPU of the whole run (this process's
tree). The target of issue 13: serial work at most 5% of the run's CPU.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python benchmarks/spark_plan_bench.py /tmp/plan1m

Measured 2026-11-25 on the 1M-record log (generate-log --brokers 100 --topics 2000 --partitions
50000 --records 1000000 --seed 1), 16 units, a shared 2-core machine at load 3.7-11.3:
serial plan 65.0 s in one task, serial work 65.2 s of 384.8 s CPU (16.9%); parallel plan: cuts
1.6 s, range tasks 86.9 s wall, combine 35.3 s wall (driver), serial work 11.9 s of 418.5 s CPU
(2.8%). The plan's wall was longer at that load (2 cores for 16 range tasks and 10 other
processes); the share of serial work is what caps a cluster.

The driver's memory and its combine (issue 13), measured 2026-11-25 at load 8-12 on a shared
2-core machine, the parallel plan alone in a driver (plan_ranges: cuts, range tasks, combine,
broadcasts) on the 1M log (16 units) and a 3M one (same options, --records 3000000; 21 units):
- batch_cuts used to map the segments: every page it hopped counted in the driver's RSS, +57
  MiB at 1M, +162 MiB at 3M (about +530 MiB at 10M: most of the 255 -> 664 MiB growth the
  replay bench measured). Read a window at a time: +2 MiB at both.
- The driver's peak over the plan, with the windowed cuts, reports streamed and packed images:
  187 MiB at 1M, 202 MiB at 3M (147 MiB before the plan at both); a whole 3M replay's driver
  RSS stayed at 202 MiB from the combine to the end of the write.
- The combine on the same range reports, offline (one process, load 10): 1M 12.6 s -> 2.9 s
  CPU, 3M 19.2 s -> 4.4 s CPU (101.9 s -> 10.0 s wall) (NetEffect objects and attrs pickles ->
  packed values); the reports pickle 2.3 MiB -> 0.8 MiB each at 3M. In the engine (wall, load
  8-12, fetching the reports included): 1M 35.3 s -> 12.5 s, 200k records 32.2 s -> 13.1 s
  (main's and this engine one after the other), 3M 17.4 s and 28.3 s in two runs.
- Whole replays (``ctrlbatch replay --engine spark --master local[2] --out``, the driver's
  VmHWM polled as replay_bench does), load 2.4-3.1: 1M 182 s, peak 267 MiB, plan_combine 7.1 s;
  3M 367 s, peak 282 MiB (1.06x), plan_combine 6.4 s. The driver held 186 / 201 MiB from the
  combine to the end of the write; both peaks are report.png's Parquet scan at the very end
  (one row group per unit file: 24k rows per file at 1M, 60k at 3M).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from typing import Any


def _tree_cpu() -> float:
    """CPU seconds of this process and its children so far (the JVM and Python workers are
    children of the driver; their CPU is read from /proc while they run)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    total = own.ru_utime + own.ru_stime
    for pid in _descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _hwm_mib() -> float:
    """This process's peak RSS (VmHWM) in MiB: the driver's, which replay_bench compares 1M to 10M."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_hwm() -> None:
    """Start the peak RSS afresh (Linux: writing 5 to clear_refs resets VmHWM to the current RSS)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _driver_cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def run(spark: Any, path: str, serial: bool) -> dict[str, Any]:
    from ctrlbatch.replay.propagate.propagator import ReplayOptions
    from ctrlbatch.replay.spark import ranges as spark_ranges
    from ctrlbatch.replay.spark.engine import HistorySource, replay_spark

    real = spark_ranges.serial_reason
    if serial:
        spark_ranges.serial_reason = lambda history, coalesce: "forced by the benchmark"
    try:
        load = os.getloadavg()[0]
        _reset_hwm()
        cpu0, driver0, start = _tree_cpu(), _driver_cpu(), time.monotonic()
        result = replay_spark(spark, HistorySource(path), ReplayOptions())
        wall = time.monotonic() - start
        cpu, driver = _tree_cpu() - cpu0, _driver_cpu() - driver0
    finally:
        spark_ranges.serial_reason = real
    plan = sum(v for k, v in result.seconds.items() if k.startswith("plan"))
    serial_work = driver + result.seconds.get("plan", 0.0)
    return {"planned": result.planned, "seconds": result.seconds, "wall": wall, "plan": plan, "cpu": cpu,
            "serial": serial_work, "load": (load, os.getloadavg()[0]), "units": result.units, "hwm": _hwm_mib()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("log", help="a generated log directory (ctrlbatch generate-log)")
    parser.add_argument("--only", choices=["serial", "parallel"], help="run one plan only")
    args = parser.parse_args()
    from ctrlbatch.replay.spark.session import spark_session

    spark = spark_session("local[2]", quiet=True)
    for serial in (True, False):
        if args.only is not None and args.only != ("serial" if serial else "parallel"):
            continue
        r = run(spark, args.log, serial)
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in r["seconds"].items())
        print(f"{'serial' if serial else 'parallel'} plan ({r['planned']}; {r['units']} units), "
              f"load {r['load'][0]:.2f} -> {r['load'][1]:.2f}:")
        print(f"  plan {r['plan']:.1f} s of {r['wall']:.1f} s wall ({r['plan'] / r['wall']:.1%}); {phases}")
        print(f"  driver peak RSS {r['hwm']:.0f} MiB (this process: the plan, the replay; no rows written)")
        print(f"  serial work {r['serial']:.1f} s of {r['cpu']:.1f} s CPU ({r['serial'] / r['cpu']:.1%}; target <= 5%)")
        sys.stdout.flush()
    spark.stop()


if __name__ == "__main__":
    main()
