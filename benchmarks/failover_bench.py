"""Batch speed and memory: the controller-failover scenario (issue 3).

200,000 partitions, replication factor 3, 100 brokers, IBP 3.9-IV0: one batch adds LeaderAndIsr
for every partition to its replicas (each add piggy-backs UpdateMetadata to every broker), then
send_requests_to_brokers through a transport that holds every OutboundRequest, as a per-broker
queue does, and then encodes each frame once (as buffers, written nowhere).

Prints wall and CPU time for accumulate, build (send_requests_to_brokers: request bodies
encoded, shared bodies once) and encode (frames) as min / median / max over --repeat runs, the
peak memory the batch adds on top of the context (peak RSS minus RSS once the context is built,
each broker count in its own process), and the ratio of that memory at 100 brokers to 10
brokers for the same partitions. Targets: whole scenario <= 2.0 s (median) on one core with the
default garbage collection; memory(100 brokers) <= 1.1x memory(10 brokers).
The 100-broker run is timed twice: with CPython's default garbage collection, and inside
ctrlbatch.batch.gc_paused() (the collector held off for the batch; see common/tuning.py),
which is the peer measured in the same run. A gc_paused() run is charged the collection it held
off: gc.collect(1) right after the pause (the young generations, where everything the run made
and still holds sits), timed into it; so the ratio between the two says what holding the
collector off saves while the batch's requests are still held (issue 26: nothing, 0.69x at load 3).

The peer of the whole scenario (issue 26): kio 0.5.0 encoding ONE UpdateMetadata v8 of the same
partitions (the very message the batch sends, its states and live brokers converted to kio's
entities, checked to give the same bytes), timed in a process of its own with the default garbage
collection, median of --repeat runs, measured before and after ours (its runs pooled). Target:
the whole scenario (accumulate + build + encode, 100 brokers, default gc) within 1.2x of it, in
CPU time of the medians (both are one thread, so on a quiet machine CPU time is wall time; on a
loaded one wall time also counts waiting for a core, and kio's and our runs wait differently);
the wall-time ratio is printed beside it.
The accumulation uses the bulk add (add_leader_and_isr_requests_for_partitions), as the demo
does; --single-adds times the same scenario with one add_leader_and_isr_request_for_brokers
call per partition instead.

Usage: python benchmarks/failover_bench.py [--partitions N] [--repeat R] [--single-adds] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import attrs
from figures import Figure, write_results

TARGET_S = 2.0
TARGET_MEMORY_RATIO = 1.1
TARGET_KIO_RATIO = 1.2


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class _Counter:
    """Counts the bytes of each frame's buffers, as a writev would send them."""

    def __init__(self) -> None:
        self.bytes = 0

    def on_frame(self, _broker: int, _request: object, parts: list[bytes]) -> None:
        self.bytes += sum(len(p) for p in parts)


def run_once(partitions: int, brokers: int, repeat: int, pause_gc: bool, single_adds: bool = False) -> dict[str, list[float]]:
    """In this process: build the context, then run the scenario `repeat` times (with the
    cyclic garbage collector held off around each run when pause_gc)."""
    import contextlib

    from ctrlbatch.batch import gc_paused
    from ctrlbatch.batch.scenarios import Cluster, HoldingTransport, build_context, failover

    c = Cluster(partitions=partitions, brokers=brokers)
    ctx, entries = build_context(c)
    gc.collect()
    runs: dict[str, list[float]] = {}
    base = peak = 0
    for i in range(repeat):
        gc.collect()
        base = _rss_kib("VmRSS")
        _reset_peak()
        transport = HoldingTransport()
        pause = gc_paused() if pause_gc else contextlib.nullcontext()
        pause.__enter__()
        w0, c0 = time.perf_counter(), time.process_time()
        batch = failover(ctx, entries, c, transport, single_adds=single_adds)
        w1 = time.perf_counter()
        batch.send_requests_to_brokers(c.controller_epoch)
        w2 = time.perf_counter()
        total = _Counter()
        transport.drain(str(c.controller_id), total.on_frame)
        w3, c3 = time.perf_counter(), time.process_time()
        pause.__exit__(None, None, None)
        deferred = deferred_cpu = 0.0
        if pause_gc:  # the collections held off, charged to the run: the young generations, as next due
            d0, dc0 = time.perf_counter(), time.process_time()
            gc.collect(1)
            deferred, deferred_cpu = time.perf_counter() - d0, time.process_time() - dc0
        peak = max(peak, _rss_kib("VmHWM") - base) if i == 0 else peak
        run = {
            "accumulate": w1 - w0, "build": w2 - w1, "encode": w3 - w2, "total": w3 - w0 + deferred,
            "cpu_total": c3 - c0 + deferred_cpu, "deferred_gc": deferred, "bytes": float(total.bytes),
            "requests": float(sum(len(q) for q in transport.queues.values())),
        }
        for k, v in run.items():
            runs.setdefault(k, []).append(v)
        del transport, batch
    runs["batch_peak_mib"] = [peak / 1024]
    runs["context_rss_mib"] = [base / 1024]
    return runs


def kio_once(partitions: int, repeat: int) -> dict[str, list[float]]:
    """In this process: the UpdateMetadata the failover batch sends (100 brokers), converted to
    kio's entities; then kio encodes it `repeat` times (default gc, a collection before each run,
    as run_once does)."""
    import io

    from codec_bench import to_kio
    from kio.schema.update_metadata.v8.request import UpdateMetadataRequest as KioUMR
    from kio.serial import entity_writer

    from ctrlbatch.batch.scenarios import Cluster, HoldingTransport, build_context, failover

    c = Cluster(partitions=partitions, brokers=100)
    ctx, entries = build_context(c)
    transport = HoldingTransport()
    failover(ctx, entries, c, transport).send_requests_to_brokers(c.controller_epoch)
    request = next(r for items in transport.queues.values() for r, _ in items if r.api_key == 6)
    ours = request.encode_body()
    kmsg = to_kio(request.body)
    del ctx, entries, transport, request
    writer = entity_writer(KioUMR)
    runs: dict[str, list[float]] = {"total": [], "cpu_total": []}
    for _ in range(repeat):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        buf = io.BytesIO()
        writer(buf, kmsg)
        raw = buf.getvalue()
        runs["total"].append(time.perf_counter() - w0)
        runs["cpu_total"].append(time.process_time() - c0)
        if raw != ours:
            raise AssertionError("kio's UpdateMetadata bytes differ from the batch's")
    runs["bytes"] = [float(len(raw))]
    return runs


def in_subprocess(
    partitions: int, brokers: int, repeat: int, pause_gc: bool = False, kio: bool = False, single_adds: bool = False
) -> dict[str, list[float]]:
    mode = "--kio-child" if kio else "--child"
    out = subprocess.run(
        [sys.executable, __file__, mode, str(partitions), str(brokers), str(repeat), str(int(pause_gc)), str(int(single_adds))],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(run_once(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6] == "1")))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--kio-child":
        print(json.dumps(kio_once(int(sys.argv[2]), int(sys.argv[4]))))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=200_000, help="partitions (default: %(default)s)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per configuration (default: %(default)s)")
    ap.add_argument("--single-adds", action="store_true", help="one single add per partition instead of the bulk add")
    ap.add_argument("--json", metavar="PATH", help="also write the headline figures as JSON (benchmarks/figures.py)")
    args = ap.parse_args()
    load_start = os.getloadavg()
    # kio's runs before and after ours, pooled, so that a change in the machine's load hits both.
    k1 = in_subprocess(args.partitions, 100, -(-args.repeat // 2), kio=True)
    r100 = in_subprocess(args.partitions, 100, args.repeat, single_adds=args.single_adds)
    k2 = in_subprocess(args.partitions, 100, args.repeat // 2 or 1, kio=True)
    rk = {k: k1[k] + k2[k] for k in ("total", "cpu_total")}
    r100p = in_subprocess(args.partitions, 100, args.repeat, pause_gc=True, single_adds=args.single_adds)
    r10 = in_subprocess(args.partitions, 10, 1, single_adds=args.single_adds)
    load_end = os.getloadavg()
    med = statistics.median
    adds = "single adds" if args.single_adds else "bulk add"
    print(f"failover: {args.partitions:,} partitions, RF 3, IBP 3.9-IV0, {adds} (median of {args.repeat} runs, min-max); "
          f"{_processor()}, {os.cpu_count()} CPUs, load average {load_start[0]:.2f} -> {load_end[0]:.2f}")
    for name, r in (("100 brokers", r100), ("100, gc off", r100p), ("10 brokers", r10)):
        print(
            f"  {name:11s}: accumulate {med(r['accumulate']):.3f} s, build {med(r['build']):.3f} s, "
            f"encode {med(r['encode']):.3f} s, total {med(r['total']):.3f} s ({min(r['total']):.3f}-{max(r['total']):.3f}) "
            f"wall / {med(r['cpu_total']):.3f} s CPU; {int(r['requests'][0])} requests, {int(r['bytes'][0]):,} bytes; "
            f"context RSS {r['context_rss_mib'][0]:.0f} MiB, batch adds {r['batch_peak_mib'][0]:.1f} MiB"
        )
    ratio = r100["batch_peak_mib"][0] / r10["batch_peak_mib"][0]
    gc_ratio = med(r100['total']) / med(r100p['total'])
    print(f"  default gc vs gc_paused(): {gc_ratio:.2f}x the time")
    print(
        f"  kio 0.5.0, one UpdateMetadata v8 encode of the same partitions ({int(k1['bytes'][0]):,} bytes, identical): "
        f"{med(rk['total']):.3f} s ({min(rk['total']):.3f}-{max(rk['total']):.3f}) wall / {med(rk['cpu_total']):.3f} s CPU"
    )
    kio_ratio = med(r100["total"]) / med(rk["total"])
    kio_cpu_ratio = med(r100["cpu_total"]) / med(rk["cpu_total"])
    paused_cpu_ratio = med(r100p["cpu_total"]) / med(rk["cpu_total"])
    print("targets:")
    verdict = "met" if kio_cpu_ratio <= TARGET_KIO_RATIO else "NOT met"
    print(
        f"  whole scenario, 100 brokers, default gc / kio's one-message encode: {kio_cpu_ratio:.2f}x CPU, "
        f"{kio_ratio:.2f}x wall (medians; CPU <= {TARGET_KIO_RATIO}x: {verdict}); in gc_paused(), the held-off "
        f"collection included: {paused_cpu_ratio:.2f}x CPU"
    )
    kio_peer = "kio 0.5.0, one UpdateMetadata v8"
    figures = [Figure(
        what=f"failover batch ({adds}), {args.partitions:,} partitions, 100 brokers, all frames, default gc, CPU time, "
             f"vs one UpdateMetadata encode by kio, median of {args.repeat}",
        value=med(r100["cpu_total"]), unit="s", min=min(r100["cpu_total"]), median=med(r100["cpu_total"]),
        max=max(r100["cpu_total"]), peer=kio_peer, peer_value=med(rk["cpu_total"]), ratio=kio_cpu_ratio,
        ratio_of="medians", target=f"ratio <= {TARGET_KIO_RATIO}x", met=kio_cpu_ratio <= TARGET_KIO_RATIO,
    ), Figure(
        what=f"the same, wall time (loaded machine: includes waiting for a core), median of {args.repeat}",
        value=med(r100["total"]), unit="s", min=min(r100["total"]), median=med(r100["total"]), max=max(r100["total"]),
        peer=kio_peer, peer_value=med(rk["total"]), ratio=kio_ratio, ratio_of="medians",
    ), Figure(
        what=f"the same in gc_paused(), CPU time, the held-off collection included, median of {args.repeat}",
        value=med(r100p["cpu_total"]), unit="s", min=min(r100p["cpu_total"]), median=med(r100p["cpu_total"]),
        max=max(r100p["cpu_total"]), peer=kio_peer, peer_value=med(rk["cpu_total"]), ratio=paused_cpu_ratio,
        ratio_of="medians",
    )]
    for label, r in (("default gc", r100), ("gc_paused()", r100p)):
        total = r["total"]
        verdict = "met" if med(total) <= TARGET_S else "NOT met"
        print(
            f"  whole scenario, 100 brokers, {label}: median {med(total):.3f} s, min {min(total):.3f} s, "
            f"max {max(total):.3f} s (median <= {TARGET_S} s: {verdict})"
        )
        figures.append(Figure(
            what=f"failover batch, {args.partitions:,} partitions, 100 brokers (accumulate + build + encode), "
                 f"{label}, median of {args.repeat}",
            value=med(total), unit="s", min=min(total), median=med(total), max=max(total),
            target=f"median <= {TARGET_S} s", met=med(total) <= TARGET_S,
        ))
    figures[3] = attrs.evolve(figures[3], peer="in gc_paused()", peer_value=med(r100p["total"]), ratio=gc_ratio,
                              ratio_of="medians")
    verdict = "met" if ratio <= TARGET_MEMORY_RATIO else "NOT met"
    print(f"  batch memory 100 vs 10 brokers: {ratio:.3f}x (<= {TARGET_MEMORY_RATIO}x: {verdict})")
    figures.append(Figure(
        what=f"peak memory the failover batch adds, {args.partitions:,} partitions, 100 brokers",
        value=r100["batch_peak_mib"][0], unit="MiB", peer="10 brokers", peer_value=r10["batch_peak_mib"][0],
        ratio=ratio, target=f"ratio <= {TARGET_MEMORY_RATIO}x", met=ratio <= TARGET_MEMORY_RATIO,
    ))
    if max(load_start[0], load_end[0]) > 1.5:
        print("note: the machine was loaded by other work during this run; the figures are noisy, rerun to confirm")
    write_results(args.json, "failover_bench", figures, vars(args))


def _processor() -> str:
    """The processor's model name (Linux), else platform.processor()."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown processor"


if __name__ == "__main__":
    main()
