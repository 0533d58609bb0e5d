"""Records-table benchmark: the kraft_metadata data source on local[2] against the one-process reader.

    .venv/bin/python benchmarks/tables_bench.py                  # 1M records, and driver memory 1M -> 10M
    .venv/bin/python benchmarks/tables_bench.py --quick          # 100k records, memory 100k -> 1M (development)
    .venv/bin/python benchmarks/tables_bench.py --no-big         # skip the 10M log (no memory figure)
    .venv/bin/python benchmarks/tables_bench.py --reuse-big      # the 10M run kept from an earlier run
    .venv/bin/python benchmarks/tables_bench.py ... --json benchmarks/results/tables_bench.json

What it does, in one run: generate (or reuse, cached under --cache keyed by the parameters) a log
of --records records with the generator's default mix (100 brokers, 50,000 partitions, half NoOps,
as benchmarks/replay_bench.py), then, each in a process of its own (so none inherits another's
heap or page cache state beyond the file cache):
- the peer: the one-process reader decoding every batch of the log (``History.batches()``, the
  reading loop both engines use: CRC, decode, checks), nothing else;
- the table's rows of the whole log made in one process by the data source's own code
  (plan.read_part of one partition holding the whole log: the reader in the JSON form, then
  record_rows' Arrow batches), the work the data source does;
- the data source on ``local[2]`` materialising every record (``df.write.format("noop")``): the
  wall time of the second of two such jobs in one session (the session's start and the first
  job, which also starts the Python workers and imports ctrlbatch in them, are printed, not
  counted: fixed costs of a session, not of the table), and the driver Python process's peak RSS
  (VmHWM);
- the data source on the --big log, for the driver's peak RSS from --records to --big.
The CPU time of each process tree (driver, JVM, Python workers: /proc polled, as replay_bench.py
does, start-up included) is printed beside its wall time: on a shared machine the wall time
follows the load, the CPU time much less.
Printed with the load average beside every figure and the processor: the data source's time
over the peer's (target <= 0.75x), over the one-process rows (informative), and the driver's
peak RSS big over small (target <= 1.1x).
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

from figures import Figure, processor, write_results
from replay_bench import _cpu_seconds, _descendants, _hwm_kib

PYTHON = Path(sys.executable)


def log_dir(cache: Path, records: int, args: argparse.Namespace) -> Path:
    """The cached log for these parameters (generated once)."""
    path = cache / f"b{args.brokers}-t{args.topics}-p{args.partitions}-r{records}-s{args.seed}"
    if (path / "DONE").exists():
        return path
    shutil.rmtree(path, ignore_errors=True)
    from ctrlbatch.replay.generate.generator import generate_log

    start = time.monotonic()
    print(f"generating {records:,} records into {path} ...", flush=True)
    generate_log(path, brokers=args.brokers, topics=args.topics, partitions=args.partitions, records=records,
                 seed=args.seed)
    (path / "DONE").write_text("")
    print(f"  {time.monotonic() - start:.1f} s", flush=True)
    return path


def child(kind: str, log: str) -> dict[str, Any]:
    """One measurement, in this (child) process: its wall time and what it counted."""
    from ctrlbatch.replay import open_history

    if kind == "read":
        start = time.monotonic()
        records = 0
        for batch in open_history(log).batches():
            records += len(batch.records) + len(batch.control_records)
        return {"seconds": time.monotonic() - start, "rows": records}
    if kind == "rows":
        from ctrlbatch.replay.tables.options import TableOptions
        from ctrlbatch.replay.tables.plan import Part, read_part

        start = time.monotonic()
        rows = sum(b.num_rows for b in read_part(TableOptions(path=log), Part(0, "log")))  # the whole log, one part
        return {"seconds": time.monotonic() - start, "rows": rows}
    from ctrlbatch.replay import register
    from ctrlbatch.replay.spark.session import spark_session

    start = time.monotonic()
    spark = spark_session("local[2]", quiet=True)
    register(spark)
    started = time.monotonic() - start
    frame = spark.read.format("kraft_metadata").load(log)
    times, cpu, jvm = [], 0.0, 0.0
    for _ in range(2 if kind == "spark-count" else 1):  # the first job starts the Python workers
        before = tree_cpu()
        start = time.monotonic()
        frame.write.format("noop").mode("overwrite").save()
        times.append(time.monotonic() - start)
        after = tree_cpu()
        cpu = sum(after.values()) - sum(before.values())
        jvm = sum(c - before.get(pid, 0.0) for pid, c in after.items() if _is_jvm(pid))
    count = frame.count() if kind == "spark-count" else None  # the rows, counted outside the timing
    spark.stop()
    return {"seconds": times[-1], "job_cpu_seconds": cpu, "job_jvm_cpu_seconds": jvm, "first_job": times[0],
            "session_start": started, "rows": count}


def tree_cpu() -> dict[int, float]:
    """CPU seconds used so far by this process and each of its descendants (the JVM, Python
    workers; one that starts and ends between two calls is not seen: none does in a second job)."""
    return {pid: _cpu_seconds(pid) or 0.0 for pid in (os.getpid(), *_descendants(os.getpid()))}


def _is_jvm(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0].endswith(b"java")
    except OSError:
        return False


def run(kind: str, log: Path) -> dict[str, Any]:
    """Run ``child(kind, log)`` in a new process; add its peak RSS and the load average."""
    env = dict(os.environ, PYSPARK_PYTHON=str(PYTHON), PYSPARK_DRIVER_PYTHON=str(PYTHON), SPARK_LOCAL_IP="127.0.0.1",
               TZ="UTC")
    cmd = [str(PYTHON), __file__, "--child", kind, str(log)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, cpu = 0, dict[int, float]()
    while proc.poll() is None:
        peak = max(peak, _hwm_kib(proc.pid) or 0)
        for pid in (proc.pid, *_descendants(proc.pid)):
            used = _cpu_seconds(pid)
            if used is not None:
                cpu[pid] = max(cpu.get(pid, 0.0), used)
        time.sleep(0.1)
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{stdout[-2000:]}\n{stderr[-4000:]}")
    result: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return result | {"driver_rss_mib": peak / 1024, "loadavg": os.getloadavg()[0], "cpu_seconds": sum(cpu.values())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000, help="the log timed against the peer")
    ap.add_argument("--big", type=int, default=10_000_000, help="the log of the driver-memory figure")
    ap.add_argument("--quick", action="store_true", help="100,000 and 1,000,000 records (development)")
    ap.add_argument("--no-big", action="store_true", help="skip the --big log (no driver-memory figure)")
    ap.add_argument("--reuse-big", action="store_true",
                    help="take the --big run from the last one kept in --cache (its time and load are printed)")
    ap.add_argument("--brokers", type=int, default=100)
    ap.add_argument("--topics", type=int, default=2_000)
    ap.add_argument("--partitions", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ctrlbatch-tables-bench")
    ap.add_argument("--json", metavar="PATH", help="also write the headline figures as JSON (benchmarks/figures.py)")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "LOG"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    if args.quick:
        args.records, args.big = 100_000, 1_000_000
    args.cache.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    log = log_dir(args.cache, args.records, args)
    runs: dict[str, dict[str, Any]] = {}
    for kind, what in (("read", "one-process reader (decode only)"), ("rows", "one-process rows"),
                       ("spark-count", "data source, local[2], noop write")):
        print(f"{what} on {args.records:,} records ...", flush=True)
        runs[kind] = r = run(kind, log)
        start = (f", session start {r['session_start']:.1f} s and the first job {r['first_job']:.1f} s (its Python "
                 "workers start) not counted" if "session_start" in r else "")
        print(f"  {r['seconds']:.1f} s, {r['rows']:,} rows, peak RSS {r['driver_rss_mib']:.0f} MiB, "
              f"CPU {r['cpu_seconds']:.1f} s (the process tree, start-up included), load {r['loadavg']:.2f}{start}",
              flush=True)
    big = None
    kept = args.cache / f"big-run-{args.big}.json"
    if args.reuse_big and kept.exists():
        big = json.loads(kept.read_text())
        print(f"data source on {args.big:,} records: the run of {big['when']} (kept in {kept})", flush=True)
    elif not args.no_big:
        big_log = log_dir(args.cache, args.big, args)
        print(f"data source, local[2], noop write on {args.big:,} records ...", flush=True)
        big = run("spark", big_log) | {"when": time.strftime("%Y-%m-%d %H:%M:%S")}
        kept.write_text(json.dumps(big))
    if big is not None:
        print(f"  {big['seconds']:.1f} s, driver peak RSS {big['driver_rss_mib']:.0f} MiB, load {big['loadavg']:.2f}",
              flush=True)
    figures = report(runs, big, args, load_before)
    write_results(args.json, "tables_bench", figures, vars(args) | {"cpu": processor(), "runs": runs, "big_run": big})


def report(runs: dict[str, dict[str, Any]], big: dict[str, Any] | None, args: argparse.Namespace,
           load_before: tuple[float, float, float]) -> list[Figure]:
    """Print the figures; return them for --json."""
    n = args.records
    read, rows, spark = runs["read"], runs["rows"], runs["spark-count"]
    assert spark["rows"] == rows["rows"] == read["rows"], (spark, rows, read)  # the same records, counted thrice
    print(f"\nrecords-table benchmark: {n:,} records ({processor()}, {os.cpu_count()} cores; load average before "
          f"{load_before[0]:.2f}, now {os.getloadavg()[0]:.2f})")
    ratio = spark["seconds"] / read["seconds"]
    print(f"  data source local[2]: {spark['seconds']:.1f} s (load {spark['loadavg']:.2f}) vs the one-process reader "
          f"decoding the same records {read['seconds']:.1f} s (load {read['loadavg']:.2f}): x{ratio:.2f} (target <= 0.75)")
    same_work = spark["seconds"] / rows["seconds"]
    print(f"  vs the one-process reader making the same rows (decode, JSON, Arrow) {rows['seconds']:.1f} s "
          f"(load {rows['loadavg']:.2f}): x{same_work:.2f}")
    python = spark["job_cpu_seconds"] - spark["job_jvm_cpu_seconds"]
    print(f"  CPU: the timed job {spark['job_cpu_seconds']:.1f} s (JVM {spark['job_jvm_cpu_seconds']:.1f} s, driver and "
          f"Python workers {python:.1f} s) vs {rows['cpu_seconds']:.1f} s "
          f"for the one-process rows and {read['cpu_seconds']:.1f} s for the decoding alone (whole processes): the "
          f"table's work is x{rows['cpu_seconds'] / read['cpu_seconds']:.2f} the decoding's, so 2 cores bound the "
          f"data source at x{rows['cpu_seconds'] / read['cpu_seconds'] / 2:.2f} of the reader even without overhead")
    figures = [
        Figure(what=f"kraft_metadata data source on local[2], every record of a {n:,}-record log (noop write)",
               value=spark["seconds"], unit="s", peer="one-process reader decoding the same records, same run",
               peer_value=read["seconds"], ratio=ratio, ratio_of="data source / reader", target="ratio <= 0.75x",
               met=ratio <= 0.75),
        Figure(what=f"kraft_metadata data source on local[2] vs one process making the same {spark['rows']:,} rows",
               value=spark["seconds"], unit="s", peer="one process: decode, JSON, Arrow, same run",
               peer_value=rows["seconds"], ratio=same_work, ratio_of="data source / one process"),
        Figure(what=f"CPU of the data source's job on {n:,} records (driver, JVM, Python workers)",
               value=spark["job_cpu_seconds"], unit="s CPU", peer="one process making the same rows, whole process",
               peer_value=rows["cpu_seconds"], ratio=spark["job_cpu_seconds"] / rows["cpu_seconds"],
               ratio_of="data source / one process (CPU)"),
    ]
    if big is not None:
        memory = big["driver_rss_mib"] / spark["driver_rss_mib"]
        print(f"  driver peak RSS {spark['driver_rss_mib']:.0f} MiB ({n:,} records) -> {big['driver_rss_mib']:.0f} MiB "
              f"({args.big:,}; load {big['loadavg']:.2f}): x{memory:.2f} (target <= 1.1)")
        figures.append(Figure(
            what=f"kraft_metadata driver peak RSS, {args.big:,} vs {n:,} records (flat = 1x)",
            value=big["driver_rss_mib"], unit="MiB", peer=f"{n:,} records", peer_value=spark["driver_rss_mib"],
            ratio=memory, target="ratio <= 1.1x", met=memory <= 1.1))
    else:
        print("  driver peak RSS from --records to --big: not measured (--no-big)")
    return figures


if __name__ == "__main__":
    main()
