"""Run a scenario against simulated brokers and a controller endpoint on 127.0.0.1.

Starts the controller endpoint, N simulated ZooKeeper-mode brokers (which register and heartbeat
by themselves) and the network controller channel, creates the topics, runs the scenario with a
progress display on standard error, and prints per-broker request counts, bytes, latencies and
whether every live broker's metadata cache equals the controller's view. Exit status 1 if one
does not (which an error fault can cause on purpose).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from typing import Any

from ctrlbatch.common import CommandError, Progress

from .cluster import ClusterConfig, SimCluster
from .scenarios import SCENARIOS, ScenarioSpec, parse_faults

_API = {4: "LeaderAndIsr", 5: "StopReplica", 6: "UpdateMetadata"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--brokers", type=int, default=5, help="number of simulated brokers")
    parser.add_argument("--partitions", type=int, default=200, help="partitions (50 per topic, replication min(3, brokers))")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="failover", help="what the run does")
    parser.add_argument("--faults", default="", help="comma-separated: close:B@N, hangup:B@N, error:B=CODE@N, delay:B=SECONDS, "
                                                     "refuse:B=SECONDS (B a broker id, N its N-th request)")
    parser.add_argument("--session-timeout-ms", type=int, default=1500,
                        help="broker session time-out (short, so a crash is noticed quickly)")
    parser.add_argument("--request-timeout-ms", type=int, default=3000, help="the channel's request.timeout.ms")
    parser.add_argument("--timeout", type=float, default=120.0, help="bound on the whole run, in seconds")


def run(args: argparse.Namespace) -> int:
    for name in ("brokers", "partitions", "session_timeout_ms", "request_timeout_ms"):
        if getattr(args, name) < 1:
            raise CommandError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.brokers > 500:
        raise CommandError(f"--brokers must be at most 500, got {args.brokers}")
    if args.timeout <= 0:
        raise CommandError(f"--timeout must be > 0, got {args.timeout}")
    try:
        plan = parse_faults(args.faults, args.brokers)
    except ValueError as e:
        raise CommandError(f"--faults: {e}") from None
    config = ClusterConfig(brokers=args.brokers, session_timeout_ms=args.session_timeout_ms,
                           heartbeat_interval=min(0.5, args.session_timeout_ms / 4000),
                           request_timeout_ms=args.request_timeout_ms, record=False)
    spec = ScenarioSpec(args.brokers, args.partitions, step_timeout=args.timeout)
    try:
        rows, elapsed, converged = asyncio.run(asyncio.wait_for(_simulate(config, plan, spec, args.scenario), args.timeout))
    except TimeoutError as e:
        why = str(e) or (f"timed out after {args.timeout} s before the cluster was quiet "
                          "(a broker that never answers keeps its requests queued; see --faults and --timeout)")
        raise CommandError(f"scenario {args.scenario}: {why}") from None
    _print(args, rows, elapsed)
    return 0 if converged else 1


async def _simulate(config: ClusterConfig, plan: Any, spec: ScenarioSpec, scenario: str) -> tuple[list[dict[str, Any]], float, bool]:
    cluster = SimCluster(config, faults=plan.per_broker)
    with Progress(f"simulate {scenario}", total=None, unit="responses") as progress:

        async def follow() -> None:
            while True:
                progress.update(sum(len(v) for v in cluster.round_trips.values()))
                await asyncio.sleep(0.1)

        follower = asyncio.get_running_loop().create_task(follow())
        try:
            await cluster.start()
            for broker, seconds in plan.refuse.items():
                await cluster.brokers[broker].refuse(seconds, drop=True)
            t0 = time.perf_counter()

            def step(name: str) -> None:
                progress.update(sum(len(v) for v in cluster.round_trips.values()))
                logging.getLogger("ctrlbatch.sim").info("step done: %s", name)

            await SCENARIOS[scenario](cluster, spec, step)
            elapsed = time.perf_counter() - t0
            rows = cluster.summary()
            converged = all(r["converged"] for r in rows if r["live"])
        finally:
            follower.cancel()
            await asyncio.gather(follower, return_exceptions=True)
            await cluster.stop()
        progress.update(sum(len(v) for v in cluster.round_trips.values()))
    return rows, elapsed, converged


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.2f}"


def _print(args: argparse.Namespace, rows: list[dict[str, Any]], elapsed: float) -> None:
    print(f"scenario {args.scenario}: {args.brokers} brokers, {args.partitions} partitions, "
          f"faults {args.faults or 'none'}; scenario time {elapsed:.3f} s")
    print(f"{'broker':>6} {'LeaderAndIsr':>12} {'StopReplica':>11} {'UpdateMetadata':>14} {'bytes in':>10} "
          f"{'bytes out':>9} {'median ms':>9} {'max ms':>8} {'svc ms':>7} {'conns':>5}  converged")
    for r in rows:
        req = r["requests"]
        state = "yes" if r["converged"] else ("no" if r["live"] else "(not live)")
        print(f"{r['broker']:>6} {req.get(4, 0):>12} {req.get(5, 0):>11} {req.get(6, 0):>14} {r['bytes_in']:>10} "
              f"{r['bytes_out']:>9} {_ms(r['latency_median']):>9} {_ms(r['latency_max']):>8} "
              f"{_ms(r['service_median']):>7} {r['connections']:>5}  {state}")
    print("(median/max ms: the controller's latency from hand-off to the channel to the response; svc ms: the "
          "broker's median time from reading a request to writing its response)")
    live = [r for r in rows if r["live"]]
    ok = sum(1 for r in live if r["converged"])
    print(f"converged: {ok}/{len(live)} live brokers" + (" (all)" if ok == len(live) else ""))
