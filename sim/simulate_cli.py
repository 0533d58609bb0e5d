"""Run a scenario against simulated brokers and a controller on 127.0.0.1.

Starts the controller (Kafka's ZooKeeper-mode KafkaController over an in-memory ZooKeeper, or the
KRaft controller in migration mode), N simulated ZooKeeper-mode brokers that register and
heartbeat by themselves, and the network controller channel; creates the topics, runs the
scenario with a progress display on standard error, and prints per-broker request counts, bytes,
latencies and whether every live broker's metadata cache equals the controller's view.

Rules:
- Defaults are Kafka's: session time-out 9 s (broker.session.timeout.ms), heartbeat every 2 s
  (broker.heartbeat.interval.ms), request time-out 30 s (request.timeout.ms); a scenario that
  needs another controller setting says so in its description.
- Exit status 0 only if every live broker converged, at least one broker is live, and no broker
  was fenced that no step took down; otherwise the output says which and the status is 1.
- ``--timeout`` always ends the run: the scenario is cancelled at the deadline (the controller
  yields between events), and a watchdog thread ends the process WATCHDOG_GRACE_S later if a step
  still holds the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import threading
import time
from typing import Any

from ctrlbatch.common import CommandError, HelpFormatter, Progress

from .cluster import CONTROLLERS, ClusterConfig, SimCluster
from .scenarios import PARTITIONS_PER_TOPIC, SCENARIOS, ScenarioError, ScenarioSpec, parse_faults
from .zk_driver import ZkOptions

WATCHDOG_GRACE_S = 5.0
MAX_BROKERS = 500


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "scenarios:\n" + "\n".join(
        f"  {name}: {s.description}" + (" [zk only]" if s.zk_only else "") for name, s in SCENARIOS.items())
    parser.formatter_class = HelpFormatter
    parser.add_argument("--controller", choices=CONTROLLERS, default="zk",
                        help="zk: Kafka's ZooKeeper-mode KafkaController (ctrlbatch.controller) over an in-memory "
                             "ZooKeeper; kraft: Kafka 3.9's KRaft controller in migration mode (KRaft's decisions as "
                             "metadata records, MigrationPropagator's requests; see the README)")
    parser.add_argument("--scenario", choices=list(SCENARIOS), default="failover", help="what happens (see below)")
    parser.add_argument("--brokers", type=int, default=5, help=f"simulated brokers (at most {MAX_BROKERS})")
    parser.add_argument("--partitions", type=int, default=200, help="partitions in total, over all topics")
    parser.add_argument("--topics", type=int, default=None,
                        help=f"topics the partitions are spread over evenly (default: one per {PARTITIONS_PER_TOPIC} "
                             "partitions, rounded up); --topics 25000 --partitions 25000 is 25,000 single-partition topics")
    parser.add_argument("--replication-factor", type=int, default=None,
                        help="replicas per partition, placed round-robin (default: min(3, brokers))")
    parser.add_argument("--faults", default="", help="comma-separated: close:B@N, hangup:B@N, error:B=CODE@N, delay:B=SECONDS, "
                                                     "refuse:B=SECONDS (B a broker id, N its N-th request; default: none)")
    parser.add_argument("--session-timeout-ms", type=int, default=9000,
                        help="broker session time-out: a broker not heartbeating for this long is fenced (its "
                             "ZooKeeper session expires in zk mode)")
    parser.add_argument("--heartbeat-interval-ms", type=int, default=2000, help="broker heartbeat interval")
    parser.add_argument("--request-timeout-ms", type=int, default=30000, help="the controller channel's request.timeout.ms")
    parser.add_argument("--timeout", type=float, default=600.0, help="bound on the whole run, in seconds")


def _spec(args: argparse.Namespace) -> ScenarioSpec:
    for name in ("brokers", "partitions", "session_timeout_ms", "heartbeat_interval_ms", "request_timeout_ms"):
        if getattr(args, name) < 1:
            raise CommandError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.brokers > MAX_BROKERS:
        raise CommandError(f"--brokers must be at most {MAX_BROKERS}, got {args.brokers}")
    if args.topics is not None and not 1 <= args.topics <= args.partitions:
        raise CommandError(f"--topics must be between 1 and --partitions ({args.partitions}), got {args.topics}")
    if args.replication_factor is not None and not 1 <= args.replication_factor <= args.brokers:
        raise CommandError(f"--replication-factor must be between 1 and --brokers ({args.brokers}), got "
                           f"{args.replication_factor}")
    if args.heartbeat_interval_ms >= args.session_timeout_ms:
        raise CommandError(f"--heartbeat-interval-ms ({args.heartbeat_interval_ms}) must be below --session-timeout-ms "
                           f"({args.session_timeout_ms})")
    if not args.timeout > 0:
        raise CommandError(f"--timeout must be > 0, got {args.timeout}")
    if SCENARIOS[args.scenario].zk_only and args.controller != "zk":
        raise CommandError(f"scenario {args.scenario} needs --controller zk (the kraft controller has no such decision)")
    return ScenarioSpec(args.brokers, args.partitions, step_timeout=args.timeout, topics=args.topics,
                        replication_factor=args.replication_factor)


def _watchdog(timeout: float, scenario: str) -> threading.Timer:
    def expire() -> None:
        print(f"ctrlbatch simulate: error: scenario {scenario}: timed out after {timeout} s (a step held the event "
              f"loop {WATCHDOG_GRACE_S} s past the deadline; ended by the watchdog)", file=sys.stderr, flush=True)
        os._exit(1)

    timer = threading.Timer(timeout + WATCHDOG_GRACE_S, expire)
    timer.daemon = True
    timer.start()
    return timer


def run(args: argparse.Namespace) -> int:
    spec = _spec(args)
    try:
        plan = parse_faults(args.faults, args.brokers)
    except ValueError as e:
        raise CommandError(f"--faults: {e}") from None
    scenario = SCENARIOS[args.scenario]
    config = ClusterConfig(brokers=args.brokers, session_timeout_ms=args.session_timeout_ms,
                           heartbeat_interval=args.heartbeat_interval_ms / 1000, request_timeout_ms=args.request_timeout_ms,
                           record=False, controller=args.controller, zk=ZkOptions(**scenario.zk_options))
    watchdog = _watchdog(args.timeout, args.scenario)
    try:
        result = asyncio.run(asyncio.wait_for(_simulate(config, plan, spec, args.scenario), args.timeout))
    except TimeoutError as e:
        why = str(e) or (f"timed out after {args.timeout} s before the cluster was quiet "
                          "(a broker that never answers keeps its requests queued; see --faults and --timeout)")
        raise CommandError(f"scenario {args.scenario}: {why}") from None
    except ScenarioError as e:
        raise CommandError(f"scenario {args.scenario}: {e}") from None
    finally:
        watchdog.cancel()
    rows, elapsed, fenced = result
    return _print(args, spec, rows, elapsed, fenced)


async def _simulate(config: ClusterConfig, plan: Any, spec: ScenarioSpec, scenario: str) -> tuple[list[dict[str, Any]], float, list[int]]:
    cluster = SimCluster(config, faults=plan.per_broker)
    with Progress(f"simulate {scenario}", total=None, unit="responses") as progress:

        async def follow() -> None:
            while True:
                progress.update(sum(len(v) for v in cluster.round_trips.values()))
                await asyncio.sleep(0.1)

        follower = asyncio.get_running_loop().create_task(follow())
        try:
            await cluster.start(spec.step_timeout)
            for broker, seconds in plan.refuse.items():
                await cluster.brokers[broker].refuse(seconds, drop=True)
            t0 = time.perf_counter()

            def step(name: str) -> None:
                progress.update(sum(len(v) for v in cluster.round_trips.values()))
                logging.getLogger("ctrlbatch.sim").info("step done: %s", name)

            await SCENARIOS[scenario].run(cluster, spec, step)
            elapsed = time.perf_counter() - t0
            rows = cluster.summary()
        finally:
            follower.cancel()
            await asyncio.gather(follower, return_exceptions=True)
            await cluster.stop()
        progress.update(sum(len(v) for v in cluster.round_trips.values()))
    return rows, elapsed, sorted(set(cluster.unexpected_fences))


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.2f}"


def _print(args: argparse.Namespace, spec: ScenarioSpec, rows: list[dict[str, Any]], elapsed: float, fenced: list[int]) -> int:
    print(f"scenario {args.scenario} ({args.controller} controller): {args.brokers} brokers, {args.partitions} partitions "
          f"in {spec.topic_count} topics, replication factor {spec.rf}, faults {args.faults or 'none'}; "
          f"scenario time {elapsed:.3f} s")
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
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    live = [r for r in rows if r["live"]]
    ok = sum(1 for r in live if r["converged"])
    status = 0
    if fenced:
        print(f"FENCED: broker(s) {', '.join(map(str, fenced))} lost their session although no step took them down "
              "(heartbeats starved or the session time-out is too short for this size)")
        status = 1
    if not live:
        print("NOT converged: no live broker")
        return 1
    if ok == len(live):
        print(f"converged: {ok}/{len(live)} live brokers (all)")
    else:
        print(f"NOT converged: {ok}/{len(live)} live brokers")
        status = 1
    return status
