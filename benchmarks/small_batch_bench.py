"""Small-batch speed: the shape the Spark replay and the simulations run millions of times (issue 8).

10 partitions, replication factor 3, 3 brokers, IBP 3.9-IV0. One batch: new_batch, a LeaderAndIsr
add per partition to its replicas (each piggy-backs UpdateMetadata to every broker), send through
a transport that keeps the requests, then every frame encoded (size, header, body: 3 LeaderAndIsr
and 3 UpdateMetadata frames). The context is built once; only the batch is timed.

Peer measured in the same run: the same batches with each frame built the reference way
(`builder.build(epoch)` then `encode_request`, the codec's generic path) instead of the engine's
shared bodies, so the ratio shows what the engine's fast path is worth at this size.

Prints batches per second as min / median / max over --runs runs of --batches batches each, by
wall time and by CPU time (the process's own, which other work on a shared machine disturbs
less). Target: median >= 10,000 batches/s.

Usage: python benchmarks/small_batch_bench.py [--runs R] [--batches N] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from figures import Figure, write_results

from ctrlbatch.batch import ControllerBrokerRequestBatch, OutboundRequest, RecordingTransport
from ctrlbatch.batch.scenarios import Cluster, build_context
from ctrlbatch.context import MetadataVersion
from ctrlbatch.requests import encode_request

TARGET_PER_S = 10_000
CLUSTER = Cluster(partitions=10, brokers=3, replication_factor=3, partitions_per_topic=5)


def _engine_frames(transport: RecordingTransport) -> int:
    n = 0
    for items in transport.sent.values():
        for request, _ in items:
            n += len(request.encode(0, "1"))
    return n


def _reference_frames(transport: RecordingTransport) -> int:
    n = 0
    for items in transport.sent.values():
        for request, _ in items:
            r: OutboundRequest = request
            n += len(encode_request(r.builder.build(r.broker_epoch), r.version, 0, "1"))
    return n


def run(batches: int, encode_frames: Callable[[RecordingTransport], int]) -> tuple[float, float, int]:
    """Batches per wall second and per CPU second over `batches` batches, and the bytes of the
    last batch's frames."""
    ctx, entries = build_context(CLUSTER)
    transport = RecordingTransport()
    batch = ControllerBrokerRequestBatch(CLUSTER.controller_id, ctx, MetadataVersion.IBP_3_9_IV0, transport)
    epoch = CLUSTER.controller_epoch
    size = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(batches):
        transport.clear()
        batch.new_batch()
        add = batch.add_leader_and_isr_request_for_brokers
        for tp, leadership, assignment in entries:
            add(assignment.replicas, tp, leadership, assignment, False)
        batch.send_requests_to_brokers(epoch)
        size = encode_frames(transport)
    return batches / (time.perf_counter() - t0), batches / (time.process_time() - c0), size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="timed runs (default: %(default)s)")
    ap.add_argument("--batches", type=int, default=5_000, help="batches per run (default: %(default)s)")
    ap.add_argument("--json", metavar="PATH", help="also write the headline figures as JSON (benchmarks/figures.py)")
    args = ap.parse_args()
    run(200, _engine_frames)  # warm the codec caches
    run(200, _reference_frames)
    rates: dict[str, list[float]] = {"engine": [], "engine cpu": [], "reference": [], "reference cpu": []}
    sizes = set()
    for _ in range(args.runs):  # interleaved, so machine load hits both alike
        for name, frames in (("engine", _engine_frames), ("reference", _reference_frames)):
            wall, cpu, size = run(args.batches, frames)
            rates[name].append(wall)
            rates[name + " cpu"].append(cpu)
            sizes.add(size)
    assert len(sizes) == 1, sizes  # both ways give the same frames
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"small batch: {CLUSTER.partitions} partitions, RF {CLUSTER.replication_factor}, {CLUSTER.brokers} brokers, "
          f"IBP 3.9-IV0, LeaderAndIsr + piggy-backed UpdateMetadata, {sizes.pop():,} frame bytes per batch")
    labels = {"engine": "engine (shared bodies)", "reference": "reference (build+encode)"}
    for key, label in labels.items():
        for suffix, clock in (("", "wall"), (" cpu", "CPU")):
            r = rates[key + suffix]
            print(f"  {label:24s} {clock:4s}: min {min(r):,.0f} / median {med[key + suffix]:,.0f} / max {max(r):,.0f} "
                  f"batches/s ({1e6 / med[key + suffix]:.0f} us per batch)")
    vs = {"engine": med['engine'] / med['reference'], "engine cpu": med['engine cpu'] / med['reference cpu']}
    print(f"  engine vs reference: {vs['engine']:.2f}x the batches per wall second, "
          f"{vs['engine cpu']:.2f}x per CPU second")
    figures = []
    for clock, key in (("wall", "engine"), ("CPU", "engine cpu")):
        verdict = "met" if med[key] >= TARGET_PER_S else "NOT met"
        print(f"target: median >= {TARGET_PER_S:,} batches per {clock} second: {med[key]:,.0f}, {verdict}")
        figures.append(Figure(
            what=f"small batch ({CLUSTER.partitions} partitions, RF {CLUSTER.replication_factor}, {CLUSTER.brokers} "
                 f"brokers, every frame encoded), batches per {clock} second, median of {args.runs}",
            value=med[key], unit="batches/s", min=min(rates[key]), median=med[key], max=max(rates[key]),
            peer="reference build + encode_request", peer_value=med[key.replace("engine", "reference")],
            ratio=vs[key], ratio_of="medians", target=f"median >= {TARGET_PER_S:,}/s", met=med[key] >= TARGET_PER_S,
        ))
    write_results(args.json, "small_batch_bench", figures, vars(args))


if __name__ == "__main__":
    main()
