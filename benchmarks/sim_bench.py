"""Controlled shutdown over the wire: a broker leading 10,000 partitions in a 50-broker simulated cluster.

Each run starts a fresh SimCluster on 127.0.0.1 (controller endpoint, 50 simulated ZooKeeper-mode
brokers that registered by themselves, ctrlbatch.transport's channel, all on one asyncio loop in
this process), creates 10,000 partitions of replication factor 3 all led by broker 0 (the other
two replicas round-robin over brokers 1-49) and waits for quiet. The timed part is the controlled
shutdown of broker 0: the controller moves every leadership (one batch: LeaderAndIsr to the 49
other brokers, UpdateMetadata with the 10,000 partition states to all 50) and the clock stops when
the channel is idle, i.e. every LeaderAndIsr and UpdateMetadata was delivered, decoded and applied
by its broker and its response decoded by the controller. Every broker's metadata cache is then
checked against the controller's view (a run that does not converge is an error).

Prints min / median / max over --runs runs (wall time, and this process's CPU time, which the
machine's other load does not inflate), the requests and bytes of one run, and the ratio to
Kafka 1.1's 3 s for the same operation (Jun Rao, "Apache Kafka Supports 200K Partitions Per
Cluster", 2018, which included the ZooKeeper writes; see kafka-controller-performance.md). Target:
median <= 1 s.

Usage: python benchmarks/sim_bench.py [--brokers 50] [--partitions 10000] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import time

from ctrlbatch.sim.cluster import ClusterConfig, SimCluster

KAFKA_1_1_SECONDS = 3.0
TARGET_S = 1.0


def topics(brokers: int, partitions: int, per_topic: int = 50) -> dict[str, list[list[int]]]:
    out: dict[str, list[list[int]]] = {}
    others = brokers - 1
    for p in range(partitions):
        out.setdefault(f"topic-{p // per_topic:04d}", []).append([0, 1 + p % others, 1 + (p + 1) % others])
    return out


async def one_run(brokers: int, partitions: int) -> tuple[float, float, dict[str, int]]:
    config = ClusterConfig(brokers=brokers, session_timeout_ms=60000, heartbeat_interval=5.0, record=False)
    async with SimCluster(config) as c:
        c.controller.create_topics(topics(brokers, partitions))
        if not await c.quiesce(120):
            raise RuntimeError("the cluster did not quiet down after creating the topics")
        before = {b: dict(x.server.stats.requests) for b, x in c.brokers.items()}
        bytes_before = sum(x.server.stats.bytes_in for x in c.brokers.values())
        gc.collect()
        t0, cpu0 = time.perf_counter(), time.process_time()
        moved = c.controller.controlled_shutdown(0)
        idle = await c.quiesce(120)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        if not idle or moved != partitions:
            raise RuntimeError(f"controlled shutdown incomplete (idle={idle}, moved {moved} of {partitions})")
        if not all(c.converged().values()):
            raise RuntimeError("a broker's metadata cache differs from the controller's view")
        sent = {"LeaderAndIsr": 0, "UpdateMetadata": 0, "StopReplica": 0}
        for b, x in c.brokers.items():
            for key, name in ((4, "LeaderAndIsr"), (6, "UpdateMetadata"), (5, "StopReplica")):
                sent[name] += x.server.stats.requests.get(key, 0) - before[b].get(key, 0)
        sent["bytes"] = sum(x.server.stats.bytes_in for x in c.brokers.values()) - bytes_before
        return elapsed, cpu, sent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--brokers", type=int, default=50)
    ap.add_argument("--partitions", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if args.brokers < 4 or args.partitions < 1 or args.runs < 1:
        ap.error("--brokers must be >= 4, --partitions and --runs >= 1")
    times, cpus = [], []
    counts: dict[str, int] = {}
    for _ in range(args.runs):
        elapsed, cpu, counts = asyncio.run(one_run(args.brokers, args.partitions))
        times.append(elapsed)
        cpus.append(cpu)
    med = statistics.median(times)
    print(f"controlled shutdown of a broker leading {args.partitions:,} partitions, {args.brokers} simulated brokers "
          f"on 127.0.0.1 ({args.runs} runs)")
    print(f"  requests: {counts['LeaderAndIsr']} LeaderAndIsr, {counts['UpdateMetadata']} UpdateMetadata, "
          f"{counts['StopReplica']} StopReplica; {counts['bytes'] / 1e6:.1f} MB on the wire to the brokers")
    print(f"  time until every request was answered: min {min(times):.3f} s, median {med:.3f} s, max {max(times):.3f} s")
    print(f"  CPU time of this process (controller, channel and all brokers, one thread): min {min(cpus):.3f} s, "
          f"median {statistics.median(cpus):.3f} s, max {max(cpus):.3f} s")
    print(f"  load average during the runs: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs "
          "(wall time above CPU time is time spent waiting for a CPU)")
    print(f"  ratio to Kafka 1.1's {KAFKA_1_1_SECONDS:.0f} s (which included ZooKeeper writes): "
          f"{med / KAFKA_1_1_SECONDS:.2f}x ({KAFKA_1_1_SECONDS / med:.1f} times faster)")
    print(f"  target <= {TARGET_S:.1f} s: {'met' if med <= TARGET_S else 'NOT met'}")


if __name__ == "__main__":
    main()
