"""What fake registrations cost ``ctrlbatch sim-controller``: latency, memory and CPU (issue 15).

A real ``ctrlbatch sim-controller --quiet`` subprocess on 127.0.0.1; this process registers
--brokers distinct broker ids over one connection (each naming 127.0.0.1:1, where nobody
listens), one request at a time, and times each answer. Then:
- the floor, measured in the same run: after each registration, a heartbeat of one registered
  broker (an O(1) request over the same connection);
- growth: the controller's own CPU time (utime + stime, which other load on the machine does not
  inflate) per registration in the last fifth against the first (amortised O(1) means about 1x;
  the issue saw 4 s per registration at 1,250, quadratic); wall-clock medians are printed too;
- memory: the controller's RSS (VmRSS of its /proc entry) before and after, per registration;
- CPU: --unfence of the fake brokers heartbeat until unfenced, so the controller adds them and
  tries to connect to them; once their session (--session-timeout-ms) has expired they are fenced
  and removed, and the controller's CPU over the next 2 s (utime + stime) must be near idle (the
  issue saw 85-89% for good with 500 of them).
- fuzz: --fuzz valid and mutated registrations and heartbeats (bytes flipped, cut or inserted after
  the api key, the size prefix kept right), one at a time: each must get a response frame or a
  closed connection within 2 s, never silence (the issue saw 311 of 30,000 unanswered);
- a registration beyond --max-brokers (set to --brokers + the warm-up one) is answered
  POLICY_VIOLATION (44), every registration being still within its session (10 minutes there).
Each part has a controller of its own, under a memory cap of 1 GiB (address space).
The first registration (broker 1000000) is timed apart: it compiles the codecs.
The load average is printed beside every figure.

Usage: python benchmarks/registration_bench.py [--brokers N] [--unfence M] [--session-timeout-ms T] [--fuzz F]
       [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import resource
import signal
import statistics
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from figures import Figure, write_results

from ctrlbatch.requests import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    Feature,
    Listener,
    encode_request,
)
from ctrlbatch.sim.client import FrameClient

CTRLBATCH = str(Path(sys.executable).parent / "ctrlbatch")
TARGET_S = 0.1
TARGET_GROWTH = 1.5
TARGET_IDLE_CPU = 0.05
WARM_UP_ID = 10**6


def load() -> str:
    return f"load average {os.getloadavg()[0]:.2f}"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def registration(broker_id: int) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id="bench", incarnation_id=uuid.UUID(int=(broker_id + 1) << 64 | 7),
        listeners=[Listener(name="PLAINTEXT", host="127.0.0.1", port=1)],
        features=[Feature(name="metadata.version", min_supported_version=1, max_supported_version=21)],
        log_dirs=[uuid.UUID(int=((broker_id + 1) << 64) | 500)])


async def timed(c: FrameClient, body: BrokerRegistrationRequest | BrokerHeartbeatRequest, version: int) -> tuple[float, object]:
    t0 = time.perf_counter()
    _, r = await c.request(body, version, timeout=30)
    return time.perf_counter() - t0, r


async def measure(port: int, pid: int, args: argparse.Namespace) -> list[Figure]:
    figures: list[Figure] = []
    n = args.brokers
    rss0 = rss_mib(pid)
    async with await FrameClient.connect("127.0.0.1", port) as c:
        cold, r = await timed(c, registration(WARM_UP_ID), 4)  # compiles the codecs: reported apart
        assert r.error_code == 0, r  # type: ignore[attr-defined]
        r0 = r.broker_epoch  # type: ignore[attr-defined]
        times, epochs, floor = [], [], []
        cpu0 = cpu_seconds(pid)
        fifth = max(1, n // 5)
        marks: dict[int, float] = {}  # the controller's CPU seconds at the fifths' boundaries
        for b in range(n):
            if b in (fifth, n - fifth):
                marks[b] = cpu_seconds(pid)
            dt, r = await timed(c, registration(b), 4)
            assert r.error_code == 0, r  # type: ignore[attr-defined]
            times.append(dt)
            epochs.append(r.broker_epoch)  # type: ignore[attr-defined]
            # the floor, at the same moment: a heartbeat of the warm-up broker that keeps it fenced
            dt, h = await timed(c, BrokerHeartbeatRequest(broker_id=WARM_UP_ID, broker_epoch=r0, want_fence=True), 1)
            assert h.error_code == 0, h  # type: ignore[attr-defined]
            floor.append(dt)
        cpu_end = cpu_seconds(pid)
        cpu_pair = (cpu_end - cpu0) / n  # the controller's own CPU: what other load cannot inflate
        cpu_first, cpu_last = (marks[fifth] - cpu0) / fifth, (cpu_end - marks[n - fifth]) / fifth
        rss1 = rss_mib(pid)
        _, refused = await timed(c, registration(n), 4)
    tenth = max(1, n // 10)
    early, late = statistics.median(times[:tenth]), statistics.median(times[-tenth:])
    f_early, f_late = statistics.median(floor[:tenth]), statistics.median(floor[-tenth:])
    # growth in the controller's own CPU time, which the machine's other load does not inflate
    # (wall-clock latencies also move with that load; they are printed for information)
    growth = cpu_last / cpu_first if cpu_first > 0 else float("inf")
    med, p99, worst = statistics.median(times), sorted(times)[int(0.99 * (n - 1))], max(times)
    fmed = statistics.median(floor)
    slowest = sorted(range(n), key=times.__getitem__)[-5:]
    print("  slowest:", ", ".join(f"#{i} {times[i] * 1e3:.1f} ms" for i in slowest))
    print(f"first registration (cold: the codecs are compiled on first use): {cold * 1e3:.1f} ms  [{load()}]")
    print(f"{n:,} registrations: median {med * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms, max {worst * 1e3:.1f} ms "
          f"(target < {TARGET_S * 1e3:.0f} ms each)  [{load()}]")
    print(f"  controller CPU per registration and heartbeat: {cpu_pair * 1e3:.2f} ms (utime + stime; the "
          f"wall-clock times above include waiting for a CPU)  [{load()}]")
    print(f"  floor: heartbeat median {fmed * 1e3:.2f} ms; registration / heartbeat {med / fmed:.2f}x  [{load()}]")
    print(f"  growth: the controller's CPU per registration (with its heartbeat) in the last fifth over the first "
          f"{growth:.2f}x ({cpu_first * 1e3:.2f} then {cpu_last * 1e3:.2f} ms; target <= {TARGET_GROWTH}x); wall "
          f"medians: registrations {early * 1e3:.2f} then {late * 1e3:.2f} ms, heartbeats {f_early * 1e3:.2f} then "
          f"{f_late * 1e3:.2f} ms (first and last tenth)  [{load()}]")
    per = (rss1 - rss0) * (1 << 20) / n
    print(f"  controller RSS {rss0:.1f} MiB before, {rss1:.1f} MiB after: {per / 1024:.2f} KiB per registration  [{load()}]")
    code = refused.error_code  # type: ignore[attr-defined]
    print(f"  registration {n + 2} beyond --max-brokers {n + 1}: error {code} (POLICY_VIOLATION is 44)  [{load()}]")
    figures += [
        Figure(what=f"sim-controller: {n:,} fake registrations, latency each (median, min-max)", value=med, unit="s",
               min=min(times), median=med, max=worst, peer="heartbeat in the same run", peer_value=fmed,
               ratio=med / fmed, ratio_of="medians", target=f"max < {TARGET_S} s", met=worst < TARGET_S),
        Figure(what=f"sim-controller: its CPU time per registration (with a heartbeat), last fifth of {n:,} "
                    "against the first", value=cpu_last, unit="s", peer="the first fifth", peer_value=cpu_first,
               ratio=growth, ratio_of="CPU seconds per registration", target=f"ratio <= {TARGET_GROWTH}x",
               met=growth <= TARGET_GROWTH),
        Figure(what=f"sim-controller: its CPU time per registration (with one heartbeat) over {n:,}",
               value=cpu_pair, unit="s", target=None, met=None),
        Figure(what=f"sim-controller: RSS growth per registration over {n:,}", value=per / 1024, unit="KiB",
               peer="RSS before", peer_value=rss0 * 1024, target=None, met=None),
    ]
    return figures


async def still_serving(port: int) -> bool:
    async with await FrameClient.connect("127.0.0.1", port) as c:
        _, r = await c.request(BrokerHeartbeatRequest(broker_id=-5, broker_epoch=1), 1, timeout=10)
        return bool(r.error_code == 77)  # type: ignore[attr-defined]


async def unfence_and_expire(port: int, pid: int, args: argparse.Namespace) -> Figure:
    m = args.unfence
    async with await FrameClient.connect("127.0.0.1", port) as c:
        epochs = []
        for b in range(m):
            _, r = await timed(c, registration(b), 4)
            epochs.append(r.broker_epoch)  # type: ignore[attr-defined]
        t0 = time.perf_counter()
        for b in range(m):
            _, h = await timed(c, BrokerHeartbeatRequest(broker_id=b, broker_epoch=epochs[b], current_metadata_offset=10**9), 1)
            assert h.error_code == 0 and not h.is_fenced, (b, h)  # type: ignore[attr-defined]
        took = time.perf_counter() - t0
    busy0, w0 = cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(1.0)
    busy_live = (cpu_seconds(pid) - busy0) / (time.monotonic() - w0)
    print(f"{m} fake brokers unfenced in {took:.2f} s; controller CPU while it retries them: {busy_live:.0%}  [{load()}]")
    await asyncio.sleep(args.session_timeout_ms / 1000 + 0.5)  # their sessions expire: fenced and removed
    busy0, w0 = cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(2.0)
    idle = (cpu_seconds(pid) - busy0) / (time.monotonic() - w0)
    print(f"  after their sessions expired: controller CPU {idle:.1%} over 2 s (target <= {TARGET_IDLE_CPU:.0%})  [{load()}]")
    return Figure(what=f"sim-controller: CPU after {m} unfenced fake brokers' sessions expired", value=idle * 100, unit="%",
                  peer="while they were live", peer_value=busy_live * 100, target=f"<= {TARGET_IDLE_CPU:.0%}",
                  met=idle <= TARGET_IDLE_CPU)


def fuzz_frame(rnd: random.Random, i: int) -> bytes:
    b = rnd.choice([rnd.randrange(64), rnd.randrange(-2**31, 2**31)])
    if rnd.random() < 0.6:
        body: BrokerRegistrationRequest | BrokerHeartbeatRequest = BrokerRegistrationRequest(
            broker_id=b, cluster_id="bench", incarnation_id=uuid.UUID(int=rnd.getrandbits(128)),
            listeners=[Listener(name=rnd.choice(["PLAINTEXT", "SSL", "X", ""]),
                                host=rnd.choice(["127.0.0.1", "::1", "10.0.0.1", "example.com", "a\nb", ""]),
                                port=rnd.randrange(65536), security_protocol=rnd.choice([0, 0, 1, 2, 3, 9, -1]))],
            features=[Feature(name="metadata.version", min_supported_version=1, max_supported_version=21)],
            log_dirs=[uuid.UUID(int=((b % 2**32 + 1) << 64) | 500)])
        frame = encode_request(body, rnd.randrange(2, 5), i, "fuzz")
    else:
        body = BrokerHeartbeatRequest(broker_id=b, broker_epoch=rnd.randrange(-1, 200),
                                      current_metadata_offset=rnd.randrange(-1, 400), want_fence=rnd.random() < 0.3,
                                      want_shut_down=rnd.random() < 0.1)
        frame = encode_request(body, rnd.randrange(2), i, "fuzz")
    data = bytearray(frame[4:])
    k = rnd.random()
    if k < 0.35:
        for _ in range(rnd.randrange(1, 4)):
            data[rnd.randrange(4, len(data))] = rnd.randrange(256)
    elif k < 0.5:
        del data[rnd.randrange(4, len(data)):]
    elif k < 0.6:
        p = rnd.randrange(4, len(data))
        data[p:p] = rnd.randbytes(rnd.randrange(1, 8))
    return struct.pack(">i", len(data)) + bytes(data)


async def fuzz(port: int, count: int) -> Figure:
    rnd = random.Random(15)
    outcomes = {"answered": 0, "closed": 0, "silent": 0}
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    t0 = time.perf_counter()
    for i in range(count):
        if reader is None or writer is None:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(fuzz_frame(rnd, i))
        try:
            head = await asyncio.wait_for(reader.readexactly(4), 2.0)
            await asyncio.wait_for(reader.readexactly(struct.unpack(">i", head)[0]), 2.0)
            outcomes["answered"] += 1
            continue
        except TimeoutError:
            outcomes["silent"] += 1
        except (asyncio.IncompleteReadError, ConnectionError):
            outcomes["closed"] += 1
        writer.close()
        reader = writer = None
    if writer is not None:
        writer.close()
    took = time.perf_counter() - t0
    print(f"fuzz: {count:,} requests in {took:.0f} s: {outcomes['answered']:,} answered, {outcomes['closed']:,} closed, "
          f"{outcomes['silent']} unanswered on an open connection (target 0)  [{load()}]")
    return Figure(what=f"sim-controller: fuzzed registrations and heartbeats left unanswered, of {count:,}",
                  value=outcomes["silent"], unit="requests", target="0", met=outcomes["silent"] == 0)


MEMORY_CAP_MIB = 1024


@contextlib.contextmanager
def controller(*options: str) -> Iterator[tuple[int, int]]:
    """A ``ctrlbatch sim-controller --quiet`` subprocess under a memory cap (RLIMIT_AS of
    MEMORY_CAP_MIB: a flood that grew memory without bound kills it, and the benchmark fails):
    (port, pid); stopped by SIGTERM."""

    def cap() -> None:  # in the child only
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_MIB << 20, MEMORY_CAP_MIB << 20))

    proc = subprocess.Popen([CTRLBATCH, "sim-controller", "--cluster-id", "bench", "--quiet", *options],
                            stdout=subprocess.PIPE, text=True, preexec_fn=cap)
    try:
        assert proc.stdout is not None
        yield int(proc.stdout.readline().strip().rsplit(":", 1)[1]), proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", type=int, default=2000, help="fake registrations (default 2000)")
    ap.add_argument("--unfence", type=int, default=500, help="how many of them heartbeat until unfenced (default 500)")
    ap.add_argument("--session-timeout-ms", type=int, default=3000,
                    help="the session time-out of the controllers for --unfence and --fuzz (default 3000)")
    ap.add_argument("--fuzz", type=int, default=30000, help="fuzzed requests (default 30000; 0: none)")
    ap.add_argument("--json", metavar="PATH", help="also write the headline figures as JSON (benchmarks/figures.py)")
    args = ap.parse_args()
    if args.brokers < 10 or args.unfence < 0 or args.session_timeout_ms < 1 or args.fuzz < 0:
        ap.error("--brokers must be at least 10, --unfence and --fuzz >= 0 and --session-timeout-ms >= 1")
    figures: list[Figure] = []
    with controller("--max-brokers", str(args.brokers + 1), "--session-timeout-ms", "600000") as (port, pid):
        figures += asyncio.run(measure(port, pid, args))
    if args.unfence:
        with controller("--session-timeout-ms", str(args.session_timeout_ms)) as (port, pid):
            figures.append(asyncio.run(unfence_and_expire(port, pid, args)))
    if args.fuzz:
        with controller("--session-timeout-ms", str(args.session_timeout_ms), "--migration") as (port, pid):
            figures.append(asyncio.run(fuzz(port, args.fuzz)))
            print(f"  controller RSS after the fuzz: {rss_mib(pid):.1f} MiB, still serving: "
                  f"{asyncio.run(still_serving(port))}  [{load()}]")
    write_results(args.json, "registration_bench", figures, vars(args))


if __name__ == "__main__":
    main()
