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

Usage: python benchmarks/sim_bench.py [--brokers 50] [--partitions 10000] [--runs 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from figures import Figure, write_results

from ctrlbatch.sim.broker_pool import BrokerPool
from ctrlbatch.sim.cluster import ClusterConfig, SimCluster
from ctrlbatch.sim.controller_logic import SimController, expected_view
from ctrlbatch.sim.controller_server import ControllerEndpoint
from ctrlbatch.sim.controller_state import ControllerConfig
from ctrlbatch.sim.membership import apply_event
from ctrlbatch.sim.metadata_cache import view_digest
from ctrlbatch.transport import AsyncControllerChannel

KAFKA_1_1_SECONDS = 3.0
TARGET_S = 1.0


def topics(brokers: int, partitions: int, per_topic: int = 50) -> dict[str, list[list[int]]]:
    out: dict[str, list[list[int]]] = {}
    others = brokers - 1
    for p in range(partitions):
        out.setdefault(f"topic-{p // per_topic:04d}", []).append([0, 1 + p % others, 1 + (p + 1) % others])
    return out


async def in_process(brokers: int, partitions: int, freeze: bool) -> tuple[float, float, dict[str, int]]:
    """Controller, channel and all brokers on this process's one loop."""
    config = ClusterConfig(brokers=brokers, session_timeout_ms=60000, heartbeat_interval=5.0, record=False)
    async with SimCluster(config) as c:
        c.controller.create_topics(topics(brokers, partitions))
        if not await c.quiesce(120):
            raise RuntimeError("the cluster did not quiet down after creating the topics")
        before = {b: dict(x.server.stats.requests) for b, x in c.brokers.items()}
        bytes_before = sum(x.server.stats.bytes_in for x in c.brokers.values())
        elapsed, cpu = await _timed(lambda: c.controller.controlled_shutdown(0), c.quiesce, partitions, freeze)
        if not all(c.converged().values()):
            raise RuntimeError("a broker's metadata cache differs from the controller's view")
        sent = {"LeaderAndIsr": 0, "UpdateMetadata": 0, "StopReplica": 0}
        for b, x in c.brokers.items():
            for key, name in ((4, "LeaderAndIsr"), (6, "UpdateMetadata"), (5, "StopReplica")):
                sent[name] += x.server.stats.requests.get(key, 0) - before[b].get(key, 0)
        sent["bytes"] = sum(x.server.stats.bytes_in for x in c.brokers.values()) - bytes_before
        return elapsed, cpu, sent


async def _timed(shutdown: Callable[[], int], quiesce: Callable[[float], Awaitable[bool]], partitions: int,
                 freeze: bool) -> tuple[float, float]:
    gc.collect()
    if freeze:
        gc.freeze()  # the set-up state becomes permanent, as a long-running server would do
    try:
        t0, cpu0 = time.perf_counter(), time.process_time()
        moved = shutdown()
        idle = await quiesce(120)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    finally:
        gc.unfreeze()
    if not idle or moved != partitions:
        raise RuntimeError(f"controlled shutdown incomplete (idle={idle}, moved {moved} of {partitions})")
    return elapsed, cpu


async def with_broker_process(brokers: int, partitions: int, freeze: bool) -> tuple[float, float]:
    """Controller and channel here; the brokers in a child process (the second CPU)."""
    loop = asyncio.get_running_loop()
    channel = AsyncControllerChannel(controller_id=3000, metrics_log_interval_ms=None)
    controller = SimController(channel)
    endpoint: ControllerEndpoint

    def on_events(events: list[Any]) -> None:
        for e in events:
            apply_event(controller, endpoint.state.registrations[e.broker_id], e)

    endpoint = ControllerEndpoint(ControllerConfig(cluster_id="bench", migration_enabled=True, session_timeout_ms=60000),
                                  on_events=on_events)
    await endpoint.start()
    channel.startup()
    pool = await loop.run_in_executor(None, lambda: BrokerPool.start(brokers, (endpoint.host, endpoint.port), "bench"))
    try:
        deadline = time.monotonic() + 60
        while len(controller.ctx.live_broker_ids) < brokers:
            if time.monotonic() > deadline:
                raise RuntimeError("the brokers did not all register")
            await asyncio.sleep(0.01)
        controller.create_topics(topics(brokers, partitions))
        if not await channel.wait_until_idle(120):
            raise RuntimeError("the cluster did not quiet down after creating the topics")
        elapsed, cpu = await _timed(lambda: controller.controlled_shutdown(0), channel.wait_until_idle, partitions, freeze)
        want = view_digest(expected_view(controller.ctx))
        got = await pool.digests()
        if any(got[b] != want for b in controller.ctx.live_or_shutting_down_broker_ids):
            raise RuntimeError("a broker's metadata cache differs from the controller's view")
        return elapsed, cpu
    finally:
        await loop.run_in_executor(None, pool.stop)
        await channel.shutdown()
        await endpoint.stop()


def _fig(xs: list[float]) -> str:
    return f"min {min(xs):.3f} s, median {statistics.median(xs):.3f} s, max {max(xs):.3f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--brokers", type=int, default=50)
    ap.add_argument("--partitions", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", metavar="PATH", help="also write the headline figures as JSON (benchmarks/figures.py)")
    args = ap.parse_args()
    if args.brokers < 4 or args.partitions < 1 or args.runs < 1:
        ap.error("--brokers must be >= 4, --partitions and --runs >= 1")
    print(f"controlled shutdown of a broker leading {args.partitions:,} partitions, {args.brokers} simulated brokers "
          f"on 127.0.0.1 ({args.runs} runs each)")
    medians = {}
    walls: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for label, mode, freeze in (
        ("one process, default GC", "in", False),
        ("one process, set-up state frozen (gc.freeze)", "in", True),
        ("brokers in a second process, gc.freeze", "pool", True),
    ):
        times, cpus = [], []
        for _ in range(args.runs):
            if mode == "in":
                elapsed, cpu, counts = asyncio.run(in_process(args.brokers, args.partitions, freeze))
            else:
                elapsed, cpu = asyncio.run(with_broker_process(args.brokers, args.partitions, freeze))
            times.append(elapsed)
            cpus.append(cpu)
        medians[label] = statistics.median(times)
        walls[label] = times
        print(f"  {label}: wall {_fig(times)}; CPU of this process {_fig(cpus)}")
    print(f"  requests: {counts['LeaderAndIsr']} LeaderAndIsr, {counts['UpdateMetadata']} UpdateMetadata, "
          f"{counts['StopReplica']} StopReplica; {counts['bytes'] / 1e6:.1f} MB on the wire to the brokers")
    print(f"  load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall above CPU is time spent waiting "
          "for a CPU, or for the other process)")
    figures = []
    for label, med in medians.items():
        verdict = "met" if med <= TARGET_S else "NOT met"
        print(f"  {label}: median {med:.3f} s = {med / KAFKA_1_1_SECONDS:.2f}x Kafka 1.1's {KAFKA_1_1_SECONDS:.0f} s "
              f"({KAFKA_1_1_SECONDS / med:.1f} times faster); target <= {TARGET_S:.1f} s {verdict}")
        figures.append(Figure(
            what=f"controlled shutdown over the wire, broker leading {args.partitions:,} partitions, "
                 f"{args.brokers} simulated brokers, {label}, median of {args.runs}",
            value=med, unit="s", min=min(walls[label]), median=med, max=max(walls[label]),
            peer="Kafka 1.1 (published 2018, not this run)", peer_value=KAFKA_1_1_SECONDS,
            ratio=med / KAFKA_1_1_SECONDS, target=f"median <= {TARGET_S:.1f} s", met=med <= TARGET_S,
        ))
    write_results(args.json, "sim_bench", figures, vars(args))


if __name__ == "__main__":
    main()
