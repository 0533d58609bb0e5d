"""The main job: run the controller-failover scenario in-process and summarise what was sent.

Usage: python -m ctrlbatch.batch.demo [--partitions N] [--brokers B] [--ibp VERSION]

It builds the context, accumulates one batch (LeaderAndIsr for every partition to its
replicas, piggy-backing UpdateMetadata to every broker), sends it through a transport that
holds each request and then encodes every frame once, decodes a sample frame back as a check,
and prints requests, partitions and bytes per api and per broker, with the versions used.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from typing import Any

from ctrlbatch.context import MetadataVersion
from ctrlbatch.requests import decode_request

from .gc_pause import gc_paused
from .scenarios import Cluster, HoldingTransport, build_context, failover

_API_NAMES = {4: "LeaderAndIsr", 5: "StopReplica", 6: "UpdateMetadata"}


def partition_count(body: Any) -> int:
    n = len(body.ungrouped_partition_states) if hasattr(body, "ungrouped_partition_states") else 0
    for t in getattr(body, "topic_states", ()):
        n += len(t.partition_states)
    return n


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=200_000)
    ap.add_argument("--brokers", type=int, default=100)
    ap.add_argument("--replication-factor", type=int, default=3)
    ap.add_argument("--ibp", default="3.9-IV0", help="inter.broker.protocol.version (a MetadataVersion string)")
    args = ap.parse_args(argv)
    c = Cluster(partitions=args.partitions, brokers=args.brokers, replication_factor=args.replication_factor)
    mv = MetadataVersion.from_version_string(args.ibp)

    t0 = time.perf_counter()
    ctx, entries = build_context(c)
    t1 = time.perf_counter()
    transport = HoldingTransport()
    with gc_paused():  # a bulk batch of acyclic objects: see gc_pause.py
        batch = failover(ctx, entries, c, transport, mv)
        t2 = time.perf_counter()
        batch.send_requests_to_brokers(c.controller_epoch)
        t3 = time.perf_counter()
    per_api: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])  # requests, partitions, bytes
    per_broker: dict[int, list[int]] = defaultdict(lambda: [0, 0])  # requests, bytes
    versions: dict[int, int] = {}

    def on_frame(broker: int, request: Any, parts: list[Any]) -> None:
        size = sum(len(p) for p in parts)
        row = per_api[request.api_key]
        row[0] += 1
        row[2] += size
        per_broker[broker][0] += 1
        per_broker[broker][1] += size
        versions[request.api_key] = request.version

    transport.drain(str(c.controller_id), on_frame)
    t4 = time.perf_counter()
    # Partition counts come from the builders (the bodies are not materialised for this).
    for items in transport.queues.values():
        for request, _ in items:
            per_api[request.api_key][1] += len(request.builder.partition_states) if hasattr(request.builder, "partition_states") else 0
    # Check: one frame of each api decodes back to its body.
    checked = set()
    for items in transport.queues.values():
        for request, _ in items:
            if request.api_key not in checked:
                frame = request.encode(0, str(c.controller_id))
                decoded = decode_request(frame[4:])
                assert decoded.body.encode(request.version) == request.encode_body()
                checked.add(request.api_key)

    print(f"ctrlbatch failover: {c.partitions:,} partitions, RF {c.replication_factor}, {c.brokers} brokers, IBP {mv.version}")
    print(f"  context built in {t1 - t0:.2f} s; batch: accumulate {t2 - t1:.2f} s, build {t3 - t2:.2f} s, "
          f"encode frames {t4 - t3:.2f} s (total {t4 - t1:.2f} s)")
    bodies: dict[int, dict[int, int]] = defaultdict(dict)  # api -> id(shared body) -> its size
    for items in transport.queues.values():
        for request, _ in items:
            bodies[request.api_key][id(request.shared)] = request.body_size()
    print(f"  {'api':16s} {'version':>7s} {'requests':>9s} {'partition states':>17s} {'frame bytes':>14s} "
          f"{'bodies encoded':>15s} {'body bytes':>12s}")
    for key in sorted(per_api):
        r, p, b = per_api[key]
        n_bodies, body_bytes = len(bodies[key]), sum(bodies[key].values())
        print(f"  {_API_NAMES.get(key, key):16s} {versions[key]:>7d} {r:>9,d} {p:>17,d} {b:>14,d} "
              f"{n_bodies:>15,d} {body_bytes:>12,d}")
    total = sum(b for _, b in per_broker.values())
    print(f"  per broker: {len(per_broker)} brokers, {min(r for r, _ in per_broker.values())}-"
          f"{max(r for r, _ in per_broker.values())} requests each, "
          f"{min(b for _, b in per_broker.values()):,}-{max(b for _, b in per_broker.values()):,} bytes each, "
          f"{total:,} bytes in all")
    for broker in sorted(per_broker)[:3]:
        r, b = per_broker[broker]
        print(f"    broker {broker}: {r} requests, {b:,} bytes")
    print(f"  frames decoded back and checked: {', '.join(_API_NAMES[k] for k in sorted(checked))}")


if __name__ == "__main__":
    main()
