"""The replay under the abuse that needs gigabytes to show: each attack runs as its own
``ctrlbatch replay`` process under a memory cap (RLIMIT_AS, set in the child before exec), and
prints its exit status, first stderr line, stderr size, wall time and peak RSS (wait4's
ru_maxrss), next to two floors measured in the same run: the interpreter with the replay's
imports, and the floor: the valid input the attacks are cut from (the real sample as JSON
lines), replayed with --out.

Attacks (issue 15 point 4, issue 14 point 6):
- a 60 MB topic name in one valid JSON line (below the 64 MiB line limit): drove RSS to 20 GB
  and 420 MB of stderr per MiB of name before; now refused at its line;
- a 60 MB string in another record field (Kafka's int16 bound on any record string);
- an epoch beyond int32 (printed a huge "Haven't been able to send..." line before);
- an offset and a timestamp beyond int64 (OverflowError before);
- report.png's timeline for broker ids -2^31 and 2^31-1 (a table indexed by broker id would
  take 32 GiB): run in a child under the same cap;
- and, as the yardstick, a valid generated log replayed with --out: peak RSS per input byte.

Target: every attack ends with exit status 1 and one stderr line (or 0 for the timeline), and
its peak RSS stays below floor + 4 x its input (the 60 MB line is read, parsed and refused).

Usage: python benchmarks/replay_abuse_bench.py [--cap-mib N] [--name-mib N] [--records N] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import Figure, write_results

SHARED = Path(__file__).resolve().parents[2] / "shared"
SAMPLE = SHARED / "samples" / "kraft-single-node"
TARGET_FACTOR = 4  # peak RSS <= floor + TARGET_FACTOR x input bytes
ENV = {**os.environ, "TZ": "UTC", "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}


def load() -> str:
    return "load %.2f %.2f %.2f" % os.getloadavg()  # noqa: UP031 - three figures, one format


def run_capped(argv: list[str], cap_bytes: int, stderr_path: Path) -> tuple[int, float, int]:
    """(exit status, wall seconds, peak RSS bytes) of argv under RLIMIT_AS = cap_bytes."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    start = time.monotonic()
    with stderr_path.open("wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
                                env=ENV, preexec_fn=cap)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, time.monotonic() - start, usage.ru_maxrss * 1024


def replay(*args: str) -> list[str]:
    return [sys.executable, "-m", "ctrlbatch.cli", "replay", "--engine", "local", "--quiet", *args]


def sample_lines() -> list[str]:
    from ctrlbatch.replay.log.jsonl import batch_lines
    from ctrlbatch.replay.log.sources import open_history

    return [line for b in open_history(SAMPLE).batches() for line in batch_lines(b)]


def with_line(lines: list[str], index: int, change: dict[str, object], data: dict[str, object] | None = None) -> str:
    doc = json.loads(lines[index])
    doc.update(change)
    if data is not None:
        doc["data"].update(data)
    return "\n".join([*lines[:index], json.dumps(doc), *lines[index + 1:]]) + "\n"


def first_index(lines: list[str], record_type: str) -> int:
    return next(i for i, line in enumerate(lines) if f'"type":"{record_type}"' in line)


TIMELINE_CHILD = """
import sys, pyarrow as pa, pyarrow.parquet as pq
from pathlib import Path
from ctrlbatch.replay.output.report import broker_timeline, draw_report
d = Path(sys.argv[1]); d.mkdir()
ids = [-(1 << 31), (1 << 31) - 1]
pq.write_table(pa.table({"timestamp": pa.array([-(1 << 63), (1 << 63) - 1], pa.int64()),
    "broker": pa.array(ids, pa.int32()), "bytes": pa.array([1, 2], pa.int64())}), d / "part-0.parquet")
tl = broker_timeline(d, 120)
assert tl.brokers == tuple(ids), tl
draw_report(tl, d / "report.png", title="edges")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cap-mib", type=int, default=4096, help="RLIMIT_AS of each child (MiB)")
    ap.add_argument("--name-mib", type=int, default=60, help="size of the long name (MiB; the line limit is 64)")
    ap.add_argument("--records", type=int, default=50_000, help="records of the generated yardstick log")
    ap.add_argument("--json", metavar="PATH", help="also write the figures as JSON (figures.py)")
    args = ap.parse_args()
    cap = args.cap_mib << 20
    print(f"replay abuse, each child under RLIMIT_AS {args.cap_mib:,} MiB; {load()}; {os.cpu_count()} CPUs")
    work = Path(tempfile.mkdtemp(prefix="ctrlbatch-abuse-bench-"))
    figures: list[Figure] = []
    try:
        err = work / "stderr"
        rc, secs, imports = run_capped(
            [sys.executable, "-c", "import ctrlbatch.replay.run.job, ctrlbatch.replay.engine.local, pyarrow.parquet, matplotlib.pyplot"],
            cap, err)
        print(f"interpreter + the replay's imports: peak RSS {imports / 2**20:,.0f} MiB, {secs:.1f} s; {load()}")
        lines = sample_lines()
        valid = work / "sample.jsonl"
        valid.write_text("\n".join(lines) + "\n")
        rc, secs, floor = run_capped(replay(str(valid), "--out", str(work / "sample-out")), cap, err)
        assert rc == 0, err.read_text()[-2000:]
        print(f"floor: the real sample as JSON lines ({valid.stat().st_size / 2**20:,.1f} MiB) replayed with --out: "
              f"peak RSS {floor / 2**20:,.0f} MiB, {secs:.1f} s; {load()}")
        name = "n" * (args.name_mib << 20)
        topic, feature = first_index(lines, "TOPIC_RECORD"), first_index(lines, "FEATURE_LEVEL_RECORD")
        attacks = {
            f"{args.name_mib} MB topic name": with_line(lines, topic, {}, {"name": name}),
            f"{args.name_mib} MB feature name": with_line(lines, feature, {}, {"name": name}),
            "epoch 2^31": with_line(lines, topic, {"epoch": 1 << 31}),
            "offset 2^63": with_line(lines, len(lines) - 1, {"offset": 1 << 63}),
            "timestamp 2^63": with_line(lines, topic, {"timestamp": 1 << 63}),
        }
        del name
        met_all = True
        for what, text in attacks.items():
            path = work / "attack.jsonl"
            path.write_text(text)
            size = path.stat().st_size
            rc, secs, rss = run_capped(replay(str(path), "--out", str(work / "out")), cap, err)
            raw = err.read_bytes()
            first = raw[:300].decode("utf-8", "replace").splitlines()[0] if raw else ""
            one_line = rc == 1 and raw.count(b"\n") == 1
            bound = floor + TARGET_FACTOR * size
            met = one_line and rss <= bound
            met_all &= met
            print(f"{what:<24} exit {rc}, {len(raw):,} bytes of stderr, {secs:5.1f} s, peak RSS {rss / 2**20:7,.0f} MiB "
                  f"(input {size / 2**20:,.1f} MiB; bound floor + {TARGET_FACTOR}x input = {bound / 2**20:,.0f} MiB) "
                  f"{'ok' if met else 'NOT MET'}; {load()}")
            print(f"    {first[:160]}")
            figures.append(Figure(f"{what}: peak RSS", round(rss / 2**20, 1), "MiB", peer="floor + 4x input",
                                  peer_value=round(bound / 2**20, 1), ratio=round(rss / bound, 3),
                                  target=f"exit 1, one line, RSS <= floor + {TARGET_FACTOR}x input", met=met))
            path.unlink()
        rc, secs, rss = run_capped([sys.executable, "-c", TIMELINE_CHILD, str(work / "timeline")], cap, err)
        met = rc == 0 and rss <= imports + (256 << 20)
        met_all &= met
        print(f"{'timeline ids +-2^31':<24} exit {rc}, {secs:5.1f} s, peak RSS {rss / 2**20:7,.0f} MiB "
              f"(bound imports + 256 MiB) {'ok' if met else 'NOT MET: ' + err.read_text()[-300:]}; {load()}")
        figures.append(Figure("report timeline, broker ids -2^31 and 2^31-1: peak RSS", round(rss / 2**20, 1), "MiB",
                              peer="imports", peer_value=round(imports / 2**20, 1), ratio=round(rss / imports, 3),
                              target="RSS <= imports + 256 MiB", met=met))
        from ctrlbatch.replay.generate.generator import generate_log

        generate_log(work / "gen", records=args.records, seed=7)
        segments = list((work / "gen" / "__cluster_metadata-0").glob("*.log"))
        size = sum(p.stat().st_size for p in segments)
        rc, secs, rss = run_capped(replay(str(work / "gen"), "--out", str(work / "gen-out")), cap, err)
        print(f"{'valid log (yardstick)':<24} exit {rc}, {secs:5.1f} s, peak RSS {rss / 2**20:7,.0f} MiB for "
              f"{size / 2**20:,.1f} MiB of segments ({args.records:,} records): "
              f"(RSS - floor) / input = {(rss - floor) / size:,.1f}; {load()}")
        figures.append(Figure(f"valid {args.records:,}-record log with --out: peak RSS", round(rss / 2**20, 1), "MiB",
                              peer="floor", peer_value=round(floor / 2**20, 1), ratio=round(rss / floor, 3)))
        print(f"all targets met: {met_all}; {load()}")
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    write_results(args.json, "replay_abuse_bench", figures, vars(args))


if __name__ == "__main__":
    main()
