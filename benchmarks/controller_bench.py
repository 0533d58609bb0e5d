"""Kafka's ZooKeeper-mode controller at Kafka's scale, over sockets and in process (issue 21).

Every socket run is ``ctrlbatch simulate``'s machinery in a child process of its own (so its peak
RSS is its own): SimCluster with controller="zk" (KafkaController over the in-memory ZooKeeper,
ctrlbatch.transport's channel, simulated brokers on 127.0.0.1 whose heartbeats run on their own
thread), Kafka's default time-outs (session 9 s, heartbeat 2 s, request 30 s). A step is timed
from its start until the cluster is quiet (the controller's queue empty, every request answered);
a crash from the session expiry (the fencing) until quiet. Then every live broker's metadata
cache is compared with the controller's view, and any broker fenced that the step did not take
down is counted: a run that fails either is reported as such.

The in-process peer runs the same step in another child process: the same store content, the
same KafkaController decisions, every request built and encoded (``encode_parts``) into a
recording channel, no sockets and no brokers. Target: socket time within 3x of in-process.

Figures:
1. 100 brokers x 200,000 partitions, RF 3: failover, controlled shutdown of broker 0, crash of
   broker 0 (each converged, none wrongly fenced, peak RSS < 3 GB);
2. Kafka 1.1's set-ups ("Apache Kafka Supports 200K Partitions Per Cluster", 2018): controlled
   shutdown in a 5-broker cluster with 25,000 single-partition topics at RF 2 (6.5 min -> 3 s);
   failover with 100,000 partitions, 2,000 topics x 50, 5 brokers, RF 2 (28 s -> 14 s, unverified
   per kafka-zk-controller.md §9; KAFKA-5642 measured 58-61 s before its fix);
3. growth of the failover from 20,000 to 200,000 partitions (100 brokers): time and peak-RSS
   increment per partition, ratio within 1.2x.
The load average and processor are printed beside every figure. ``--quick`` runs small sizes.

Usage: python benchmarks/controller_bench.py [--quick] [--only NAME ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import time
from typing import Any

from figures import Figure, write_results

PEAK_RSS_TARGET_MIB = 3 * 1024
SOCKET_VS_IN_PROCESS = 3.0
GROWTH_TARGET = 1.2
KAFKA_CS_S = 3.0
KAFKA_CS_BEFORE_S = 6.5 * 60
KAFKA_FAILOVER_S = 14.0
KAFKA_FAILOVER_BEFORE_S = 28.0
KAFKA_5642_S = (58.0, 61.0)


def _rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def processor() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f} on {os.cpu_count()} CPUs ({processor()})"


# ---------------------------------------------------------------------------- socket runs (child)


async def socket_run(step: str, brokers: int, partitions: int, topics: int, rf: int) -> dict[str, Any]:
    from ctrlbatch.context import TopicPartition  # noqa: F401 - imported for the child's warm-up
    from ctrlbatch.sim.cluster import ClusterConfig, SimCluster
    from ctrlbatch.sim.controller_state import EventKind
    from ctrlbatch.sim.scenarios import ScenarioSpec, assignments

    spec = ScenarioSpec(brokers, partitions, topics=topics, replication_factor=rf, step_timeout=900)
    rss0 = _rss_mib()
    c = SimCluster(ClusterConfig(brokers=brokers, controller="zk", record=False))
    fenced_at: dict[int, float] = {}
    c.on_event = lambda e: fenced_at.setdefault(e.broker_id, time.perf_counter()) if e.kind is EventKind.FENCED else None
    out: dict[str, Any] = {}
    await c.start(900)
    try:
        t = time.perf_counter()
        c.driver.create_topics(assignments(spec))
        await c.wait_for(lambda: len(c.driver.ctx.partitions_leadership_info) >= partitions, 900, "the partitions")
        if not await c.quiesce(900):
            raise TimeoutError("no quiet after creating the topics")
        out["setup_s"] = time.perf_counter() - t
        gc.collect()
        t = time.perf_counter()
        if step == "failover":
            epoch = c.driver.epoch
            c.driver.failover()
            await c.wait_for(lambda: c.driver.epoch > epoch, 900, "the new controller")
        elif step == "controlled-shutdown":
            await c.controlled_shutdown(0, 900)
            await c.wait_for(lambda: 0 not in c.live_broker_ids(), 900, "broker 0 to leave")
        elif step == "crash":
            await c.crash(0)
            await c.wait_for(lambda: 0 not in c.live_broker_ids(), 900, "broker 0 to be fenced")
            t = fenced_at.get(0, t)
        else:
            raise ValueError(f"unknown step {step!r}")
        quiet = await c.quiesce(900)
        out["step_s"] = time.perf_counter() - t
        t = time.perf_counter()
        conv = c.converged()
        out["check_s"] = time.perf_counter() - t
        out.update(quiet=quiet, live=len(conv), converged=sum(conv.values()),
                   unexpected_fences=sorted(set(c.unexpected_fences)), late_fencing_rounds=c.endpoint.late_rounds)
    finally:
        await c.stop()
    out["peak_rss_mib"] = _peak_mib()
    out["rss_before_mib"] = rss0
    return out


# ---------------------------------------------------------------------------- in-process peer (child)


def in_process_run(step: str, brokers: int, partitions: int, topics: int, rf: int) -> dict[str, Any]:
    from ctrlbatch.context import Broker, EndPoint
    from ctrlbatch.controller import InMemoryKafkaZkClient
    from ctrlbatch.controller.channel import RecordingChannel
    from ctrlbatch.controller.config import ControllerConfig
    from ctrlbatch.controller.kafka_controller import KafkaController
    from ctrlbatch.sim.scenarios import ScenarioSpec, assignments

    spec = ScenarioSpec(brokers, partitions, topics=topics, replication_factor=rf)
    store = InMemoryKafkaZkClient(max_recorded_calls=1000)
    epochs = {b: store.register_broker(Broker(b, (EndPoint("127.0.0.1", 9000 + b, "PLAINTEXT", "PLAINTEXT"),)))
              for b in range(brokers)}
    for topic, parts in assignments(spec).items():
        store.create_topic(topic, parts)
    channel = RecordingChannel()
    client = store.new_client()
    kc = KafkaController(ControllerConfig(broker_id=3000), client, channel)
    kc.startup()
    kc.process_events()
    channel.history.clear()
    channel.pending.clear()
    channel.sent.clear()
    gc.collect()
    t = time.perf_counter()
    if step == "failover":
        kc.shutdown()
        client.close()
        kc = KafkaController(ControllerConfig(broker_id=3001), store.new_client(), channel)
        kc.startup()
    elif step == "controlled-shutdown":
        got: list[Any] = []
        kc.controlled_shutdown(0, epochs[0], got.append)
        kc.process_events()
        store.expire_broker(0)
    elif step == "crash":
        store.expire_broker(0)
    kc.process_events()
    decided = time.perf_counter() - t
    encoded = 0
    for n, (_broker, request) in enumerate(channel.history):
        encoded += sum(len(p) for p in request.encode_parts(n, "3000"))
    total = time.perf_counter() - t
    return {"step_s": total, "decide_s": decided, "requests": len(channel.history), "bytes": encoded,
            "peak_rss_mib": _peak_mib()}


# ---------------------------------------------------------------------------- parent


_runs: dict[tuple[Any, ...], dict[str, Any]] = {}


def child(kind: str, step: str, brokers: int, partitions: int, topics: int, rf: int, timeout: float) -> dict[str, Any]:
    """One run in a child process; a configuration runs once per benchmark (the growth figure
    reuses the scale group's 200,000-partition failover)."""
    key = (kind, step, brokers, partitions, topics, rf)
    if key not in _runs:
        _runs[key] = _child(kind, step, brokers, partitions, topics, rf, timeout)
    return _runs[key]


def _child(kind: str, step: str, brokers: int, partitions: int, topics: int, rf: int, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", kind, step, str(brokers), str(partitions), str(topics), str(rf)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]}
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _ok(r: dict[str, Any]) -> bool:
    return "error" not in r and r["quiet"] and r["live"] > 0 and r["converged"] == r["live"] and not r["unexpected_fences"]


def _describe(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"FAILED: {r['error']}"
    verdict = "converged" if _ok(r) else (f"NOT converged ({r['converged']}/{r['live']} live, quiet={r['quiet']}, "
                                          f"unexpected fences {r['unexpected_fences']})")
    return (f"{r['step_s']:.2f} s ({verdict}, {r['live']} live; set-up {r['setup_s']:.1f} s, check {r['check_s']:.1f} s, "
            f"peak RSS {r['peak_rss_mib']:.0f} MiB)")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, step = sys.argv[2], sys.argv[3]
        b, p, t, rf = (int(x) for x in sys.argv[4:8])
        if kind == "socket":
            print(json.dumps(asyncio.run(socket_run(step, b, p, t, rf))))
        else:
            print(json.dumps(in_process_run(step, b, p, t, rf)))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (development): 20 brokers x 20,000 partitions etc.")
    ap.add_argument("--only", nargs="*", choices=("scale", "kafka", "growth"), help="run only these groups")
    ap.add_argument("--steps", nargs="*", choices=("failover", "controlled-shutdown", "crash"),
                    default=["failover", "controlled-shutdown", "crash"], help="the scale group's steps")
    ap.add_argument("--timeout", type=float, default=1800.0, help="bound on each child run, in seconds")
    ap.add_argument("--json", metavar="PATH", help="also write the headline figures as JSON (benchmarks/figures.py)")
    args = ap.parse_args()
    groups = set(args.only or ("scale", "kafka", "growth"))
    q = args.quick
    figures: list[Figure] = []
    print(f"Kafka's ZooKeeper-mode controller over sockets vs in process ({load()})")

    def pair(what: str, step: str, b: int, p: int, t: int, rf: int, kafka: tuple[str, float] | None) -> dict[str, Any]:
        sock = child("socket", step, b, p, t, rf, args.timeout)
        inproc = child("inproc", step, b, p, t, rf, args.timeout)
        ratio = sock["step_s"] / inproc["step_s"] if "error" not in sock and "error" not in inproc else None
        line = f"  {what}: sockets {_describe(sock)}; in process "
        line += f"FAILED: {inproc['error']}" if "error" in inproc else (
            f"{inproc['step_s']:.2f} s ({inproc['requests']} requests, {inproc['bytes'] / 1e6:.1f} MB)")
        if ratio is not None:
            line += f"; ratio {ratio:.2f}x (<= {SOCKET_VS_IN_PROCESS}x: {'met' if ratio <= SOCKET_VS_IN_PROCESS else 'NOT met'})"
        if kafka is not None and "error" not in sock:
            line += f"; {kafka[0]} {kafka[1]:g} s ({sock['step_s'] / kafka[1]:.2f}x)"
        print(line + f" [{load()}]", flush=True)
        ok = _ok(sock) if "error" not in sock else False
        figures.append(Figure(
            what=f"{what} over sockets (zk controller, default time-outs), until quiet", value=sock.get("step_s", -1.0),
            unit="s", peer="in process, same decisions and encoding", peer_value=inproc.get("step_s"), ratio=ratio,
            ratio_of="sockets / in process", target=f"converged, none wrongly fenced, ratio <= {SOCKET_VS_IN_PROCESS}x",
            met=ok and ratio is not None and ratio <= SOCKET_VS_IN_PROCESS))
        if kafka is not None and "error" not in sock:
            figures.append(Figure(what=f"{what}: ours vs Kafka's published figure", value=sock["step_s"], unit="s",
                                  peer=f"{kafka[0]} (published, not this run)", peer_value=kafka[1],
                                  ratio=sock["step_s"] / kafka[1]))
        if "error" not in sock:
            figures.append(Figure(what=f"{what}: peak RSS of the socket simulation", value=sock["peak_rss_mib"], unit="MiB",
                                  target=f"<= {PEAK_RSS_TARGET_MIB} MiB", met=sock["peak_rss_mib"] <= PEAK_RSS_TARGET_MIB))
        return sock

    if "scale" in groups:
        b, p = (20, 20_000) if q else (100, 200_000)
        print(f"1. {b} brokers x {p:,} partitions, RF 3 ({p // 50:,} topics of 50):")
        for step in args.steps:
            pair(f"{step}, {b} brokers x {p:,} partitions RF 3", step, b, p, p // 50, 3, None)
    if "kafka" in groups:
        n = 2_500 if q else 25_000
        print(f"2. Kafka 1.1's set-ups (5 brokers; {load()}):")
        pair(f"controlled shutdown, 5 brokers, {n:,} single-partition topics RF 2", "controlled-shutdown", 5, n, n, 2,
             ("Kafka 1.1", KAFKA_CS_S))
        m = 10_000 if q else 100_000
        pair(f"failover, 5 brokers, {m:,} partitions ({m // 50:,} topics x 50) RF 2", "failover", 5, m, m // 50, 2,
             ("Kafka 1.1 (unverified)", KAFKA_FAILOVER_S))
        print(f"   Kafka before 1.1: controlled shutdown {KAFKA_CS_BEFORE_S:g} s, failover {KAFKA_FAILOVER_BEFORE_S:g} s "
              f"(unverified); KAFKA-5642 measured {KAFKA_5642_S[0]:g}-{KAFKA_5642_S[1]:g} s for failover at 100K")
    if "growth" in groups:
        small, big = (2_000, 20_000) if q else (20_000, 200_000)
        b = 20 if q else 100
        print(f"3. failover growth, {b} brokers, {small:,} -> {big:,} partitions ({load()}):")
        runs = {n: child("socket", "failover", b, n, n // 50, 3, args.timeout) for n in (small, big)}
        if all("error" not in r for r in runs.values()):
            per = {n: r["step_s"] / n for n, r in runs.items()}
            mem = {n: (r["peak_rss_mib"] - r["rss_before_mib"]) / n for n, r in runs.items()}
            t_ratio, m_ratio = per[big] / per[small], mem[big] / mem[small]
            for n, r in runs.items():
                print(f"  {n:,} partitions: {_describe(r)}; {per[n] * 1e6:.1f} us and {mem[n] * 1024:.2f} KiB per partition")
            print(f"  per-partition time {t_ratio:.2f}x, memory {m_ratio:.2f}x (<= {GROWTH_TARGET}x: "
                  f"{'met' if max(t_ratio, m_ratio) <= GROWTH_TARGET else 'NOT met'}) [{load()}]")
            figures.append(Figure(what=f"failover time per partition, {big:,} vs {small:,} partitions ({b} brokers)",
                                  value=per[big] * 1e6, unit="us", peer=f"{small:,} partitions", peer_value=per[small] * 1e6,
                                  ratio=t_ratio, target=f"ratio <= {GROWTH_TARGET}x", met=t_ratio <= GROWTH_TARGET))
            figures.append(Figure(what=f"peak memory per partition, {big:,} vs {small:,} partitions ({b} brokers)",
                                  value=mem[big] * 1024, unit="KiB", peer=f"{small:,} partitions",
                                  peer_value=mem[small] * 1024, ratio=m_ratio, target=f"ratio <= {GROWTH_TARGET}x",
                                  met=m_ratio <= GROWTH_TARGET))
        else:
            for n, r in runs.items():
                print(f"  {n:,} partitions: {_describe(r)}")
    if figures:
        write_results(args.json, "controller_bench", figures, vars(args))


if __name__ == "__main__":
    main()
