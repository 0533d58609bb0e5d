"""What a rejected body costs next to the same body accepted: time and peak memory.

The body: LeaderAndIsrRequest v4 of --mib MiB (4 by default), about 1.4M empty topic states of
3 bytes each. Accepted, it ends with its empty top-level tagged section (00); rejected, that
last byte is 01, a tagged-field count whose tag is missing, so decoding fails at the very end,
after building every topic state. Both are decoded in this run, alternately, --runs times: time
with perf_counter (GC as configured by default), memory as tracemalloc's peak above the start
(separate runs, since tracing slows decoding down). Prints min / median / max of each, of the
ratios rejected / accepted run by run, and the ratio of the best runs (the least disturbed by
other load on the machine); the issue's target is <= 1.3x for both.

Usage: python benchmarks/rejected_frame_bench.py [--mib N] [--runs R] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable

from figures import Figure, write_results

from ctrlbatch.requests import DecodeError, LeaderAndIsrRequest, LeaderAndIsrTopicState

VERSION = 4
TARGET = 1.3
EMPTY_TOPIC_STATE = 3  # compact empty name (01), compact empty partition array (01), no tags (00)


def bodies(mib: float) -> tuple[bytes, bytes, int]:
    """(accepted, rejected, topic states): the same bytes but the last."""
    base = len(LeaderAndIsrRequest().encode(VERSION))
    topics = int(mib * (1 << 20) - base - 4) // EMPTY_TOPIC_STATE
    accepted = LeaderAndIsrRequest(topic_states=[LeaderAndIsrTopicState()] * topics).encode(VERSION)
    assert accepted[-1:] == b"\x00"
    return accepted, accepted[:-1] + b"\x01", topics


def decode(data: bytes) -> bool:
    """True when accepted, False when rejected (with the DecodeError expected at the last byte)."""
    try:
        LeaderAndIsrRequest.decode(data, VERSION)
    except DecodeError as e:
        assert e.offset == len(data) and e.field == "LeaderAndIsrRequest.<tagged fields>", str(e)
        return False
    return True


def timed(data: bytes) -> float:
    gc.collect()
    t0 = time.perf_counter()
    decode(data)
    return time.perf_counter() - t0


def peak(data: bytes) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        decode(data)
        return float(tracemalloc.get_traced_memory()[1] - start)
    finally:
        tracemalloc.stop()


def spread(values: list[float], fmt: Callable[[float], str]) -> str:
    return f"min {fmt(min(values))}  median {fmt(statistics.median(values))}  max {fmt(max(values))}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=float, default=4.0, help="body size in MiB (default 4)")
    ap.add_argument("--runs", type=int, default=5, help="runs of each measurement (default 5)")
    ap.add_argument("--json", metavar="PATH", help="also write the headline figures as JSON (benchmarks/figures.py)")
    args = ap.parse_args()
    if args.mib <= 0 or args.runs < 1:
        ap.error("--mib must be positive and --runs at least 1")

    accepted, rejected, topics = bodies(args.mib)
    assert decode(accepted) and not decode(rejected)
    print(f"LeaderAndIsrRequest v{VERSION}: body {len(accepted):,} bytes, {topics:,} empty topic states, "
          f"rejected at byte {len(rejected)}")
    t_ok, t_bad, m_ok, m_bad = [], [], [], []
    for _ in range(args.runs):
        t_ok.append(timed(accepted))
        t_bad.append(timed(rejected))
    for _ in range(args.runs):
        m_ok.append(peak(accepted))
        m_bad.append(peak(rejected))

    def secs(v: float) -> str:
        return f"{v:6.3f} s"

    def mib(v: float) -> str:
        return f"{v / (1 << 20):7.1f} MiB"

    def ratio(v: float) -> str:
        return f"{v:5.2f}x"

    print(f"time     accepted  {spread(t_ok, secs)}")
    print(f"time     rejected  {spread(t_bad, secs)}")
    print(f"memory   accepted  {spread(m_ok, mib)}  (tracemalloc peak)")
    print(f"memory   rejected  {spread(m_bad, mib)}")
    time_ratios = [b / a for a, b in zip(t_ok, t_bad, strict=True)]
    mem_ratios = [b / a for a, b in zip(m_ok, m_bad, strict=True)]
    print("ratios rejected / accepted, run by run (target <= 1.3x):")
    figures = []
    what = f"LeaderAndIsr v{VERSION} body of {args.mib:g} MiB rejected at its last byte"
    for name, values, ok, bad, unit, scale in (("time", time_ratios, t_ok, t_bad, "s", 1),
                                                ("memory", mem_ratios, m_ok, m_bad, "MiB", 1 << 20)):
        verdict = "met" if statistics.median(values) <= TARGET else "NOT met"
        print(f"  {name:7s} {spread(values, ratio)}  best/best {ratio(min(bad) / min(ok))}  (median {verdict})")
        figures.append(Figure(
            what=f"{what}: decode {name}{' (tracemalloc peak)' if name == 'memory' else ''}, median of {args.runs}",
            value=statistics.median(bad) / scale, unit=unit, min=min(bad) / scale,
            median=statistics.median(bad) / scale, max=max(bad) / scale,
            peer="the same body accepted", peer_value=statistics.median(ok) / scale,
            ratio=statistics.median(values), ratio_of="median, run by run",
            target=f"ratio <= {TARGET}x", met=statistics.median(values) <= TARGET,
        ))
    write_results(args.json, "rejected_frame_bench", figures, vars(args))


if __name__ == "__main__":
    main()
