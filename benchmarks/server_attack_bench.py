"""The simulated broker under a hostile client on loopback (issue 14): RSS and latencies.

Each attack starts a fresh ``ctrlbatch sim-broker`` (a separate process, loopback only, as the
README starts it) and measures it from outside: its resident memory (VmRSS / VmHWM in /proc) and
the answers a well-behaved probe client gets meanwhile.

1. Big partial frames: --conns connections (10) each send a 100 MiB size prefix and 99 MiB of the
   frame, and hold it. RSS growth with the default budget (queued.max.request.bytes 256 MiB)
   against the same server with no budget (-1, the behaviour before the budget), measured in the
   same run. Target: <= 300 MiB. A probe request is answered meanwhile (its latency is printed).
2. A big request: an UpdateMetadata v8 of --big-mb MB (live brokers only), while a probe on
   another connection sends small UpdateMetadata requests one after another. The slowest probe
   answer while the big one is in flight (target <= 0.5 s), the big one's own time, and its
   answer (checked: the bytes Kafka's codec gives for error NONE and its correlation id).
   The GIL switch interval that lets the loop answer is printed.
3. 1,100 idle connections to a broker started with a soft open-file limit of 1,024: the next
   client's answer (the server raises its soft limit to the hard one at start-up).
4. --connections-max-idle-ms 2000: how long until 50 idle connections are all closed (target <= 5 s).

Every wait is bounded. Prints the 1-minute load average beside each figure; the machine's 2 cores
are shared with other work, so latencies are noisy: rerun to confirm.

Usage: python benchmarks/server_attack_bench.py [--conns 10] [--big-mb 50] [--idle 1100] [--attacks 1,2,3,4]
                                               [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

from figures import Figure, write_results

from ctrlbatch.requests import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
    decode_request,
    encode_request,
    encode_response,
)
from ctrlbatch.sim.client import FrameClient

CTRLBATCH = str(Path(sys.executable).parent / "ctrlbatch")
MiB = 1 << 20
_SIZE = struct.Struct(">i")


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for pid {pid}")


class Broker:
    """A sim-broker subprocess; ``with Broker(...) as b`` stops it with SIGTERM (exit 0 checked)."""

    def __init__(self, *args: str, nofile: int | None = None) -> None:
        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

        self.proc = subprocess.Popen([CTRLBATCH, "sim-broker", "--id", "1", "--epoch", "5", "--quiet", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limit)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening on 127.0.0.1:"):
            self.proc.kill()
            raise RuntimeError(f"sim-broker did not start: {line!r} {self.proc.communicate(timeout=10)[1]}")
        self.port = int(line.rsplit(":", 1)[1])
        self.stderr = ""

    def __enter__(self) -> Broker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.stderr = self.proc.communicate(timeout=60)[1]
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate(timeout=10)
            raise RuntimeError("sim-broker did not stop within 60 s of SIGTERM") from None
        if self.proc.returncode != 0:
            raise RuntimeError(f"sim-broker exited {self.proc.returncode}: {self.stderr[-2000:]}")


def small_umr(epoch: int = 1) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(controller_id=0, controller_epoch=epoch, broker_epoch=-1, live_brokers=[
        UpdateMetadataBroker(id=1, endpoints=[UpdateMetadataEndpoint(port=9092, host="localhost", listener="PLAINTEXT")])])


async def probe(port: int, timeout: float = 30.0) -> float:
    """One small request on a new connection: seconds to its answer (error NONE checked)."""
    t0 = time.perf_counter()
    async with await FrameClient.connect("127.0.0.1", port, timeout=timeout) as c:
        _, resp = await c.request(small_umr(), 8, timeout=timeout)
    if resp.error_code != 0:  # type: ignore[attr-defined]
        raise RuntimeError(f"probe answered {resp.error_code}")  # type: ignore[attr-defined]
    return time.perf_counter() - t0


# ---------------------------------------------------------------------------- 1. big partial frames


async def hold_partial_frames(port: int, conns: int, seconds: float) -> list[asyncio.StreamWriter]:
    """Each connection sends a 100 MiB size prefix and 99 MiB of the frame; those the server does not
    read stay in the socket buffers (the writes are left pending after ``seconds``)."""
    chunk = bytes(MiB)
    writers = []

    async def one() -> None:
        _, w = await asyncio.open_connection("127.0.0.1", port)
        writers.append(w)
        w.write(_SIZE.pack(100 * MiB))
        for _ in range(99):
            w.write(chunk)
            await w.drain()

    tasks = [asyncio.ensure_future(one()) for _ in range(conns)]
    await asyncio.wait(tasks, timeout=seconds)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return writers


def partial_frames(conns: int, budget: str) -> tuple[float, float, float]:
    """(RSS growth MiB, peak growth MiB, probe latency s) with --queued-max-request-bytes budget."""
    with Broker("--queued-max-request-bytes", budget) as b:
        time.sleep(0.5)
        before = rss_mib(b.proc.pid)

        async def main() -> tuple[float, float]:
            writers = await hold_partial_frames(b.port, conns, seconds=30)
            await asyncio.sleep(1.0)  # let the server read what it will
            grown = rss_mib(b.proc.pid) - before
            latency = await probe(b.port)
            for w in writers:
                w.transport.abort()
            return grown, latency

        grown, latency = asyncio.run(main())
        peak = rss_mib(b.proc.pid, "VmHWM") - before
    return grown, peak, latency


# ---------------------------------------------------------------------------- 2. a big request


def big_umr_frame(mb: float, correlation_id: int) -> tuple[bytes, int]:
    """An UpdateMetadata v8 request frame of about ``mb`` MB: live brokers 0..n-1, built from the
    codec's bytes for one broker (fast), checked against the codec on a small instance."""
    def encoded(ids: list[int]) -> bytes:
        brokers = [UpdateMetadataBroker(id=i, endpoints=[UpdateMetadataEndpoint(port=9092, host="broker.example",
                                                                                listener="PLAINTEXT")]) for i in ids]
        return encode_request(UpdateMetadataRequest(controller_id=0, controller_epoch=2, broker_epoch=-1,
                                                    live_brokers=brokers), 8, correlation_id, "attack")

    none, one = encoded([]), encoded([0x7EADBEEF])
    head = none[4:-2]  # size prefix off; then the live-broker count (1: empty) and the tagged fields (0)
    assert none[-2:] == b"\x01\x00" and one[4:4 + len(head)] == head
    entry = one[4 + len(head) + 1:-1]
    assert entry[:4] == _SIZE.pack(0x7EADBEEF)
    rest = entry[4:]

    def build(n: int) -> bytes:
        count, v = bytearray(), n + 1  # unsigned varint of n + 1 (a compact array's length)
        while v >= 0x80:
            count.append(v & 0x7F | 0x80)
            v >>= 7
        count.append(v)
        body = b"".join([head, bytes(count), *(_SIZE.pack(i) + rest for i in range(n)), b"\x00"])
        return _SIZE.pack(len(body)) + body

    assert build(3) == encoded([0, 1, 2])
    n = int(mb * 1e6) // len(entry)
    frame = build(n)
    assert len(decode_request(build(300)[4:]).body.live_brokers) == 300  # type: ignore[attr-defined]
    return frame, n


async def big_request(port: int, frame: bytes, correlation_id: int, timeout: float) -> tuple[float, float, int, bytes]:
    """(slowest probe answer while the big one is in flight, the big one's time, probes, its answer)."""
    big = await FrameClient.connect("127.0.0.1", port)
    probe_client = await FrameClient.connect("127.0.0.1", port)
    await probe_client.request(small_umr(), 8)  # connected and warm
    done = asyncio.Event()
    slowest, count = 0.0, 0

    async def probing() -> None:
        nonlocal slowest, count
        while not done.is_set():
            t0 = time.perf_counter()
            await probe_client.request(small_umr(), 8, timeout=timeout)
            slowest = max(slowest, time.perf_counter() - t0)
            count += 1
            await asyncio.sleep(0.01)

    task = asyncio.ensure_future(probing())
    t0 = time.perf_counter()
    await big.send_raw(frame)
    answer = await asyncio.wait_for(big.read_frame(), timeout)
    elapsed = time.perf_counter() - t0
    done.set()
    await asyncio.wait_for(task, timeout)
    await big.close()
    await probe_client.close()
    return slowest, elapsed, count, answer


# ---------------------------------------------------------------------------- 3, 4. connections


async def idle_then_probe(port: int, idle: int) -> float:
    conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(idle)]
    try:
        return await probe(port, timeout=10)
    finally:
        for _, w in conns:
            w.transport.abort()


async def idle_closed_after(port: int, conns: int) -> float:
    """Seconds until the server has closed every one of ``conns`` idle connections."""
    loop = asyncio.get_running_loop()
    opened = [await asyncio.open_connection("127.0.0.1", port) for _ in range(conns)]
    t0 = loop.time()

    async def eof(reader: asyncio.StreamReader) -> float:
        try:
            await asyncio.wait_for(reader.read(1), 30)
        except ConnectionError:
            pass
        return loop.time() - t0

    times = await asyncio.gather(*(eof(r) for r, _ in opened))
    for _, w in opened:
        w.transport.abort()
    return max(times)


# ---------------------------------------------------------------------------- report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conns", type=int, default=10, help="connections holding a 99 MiB partial frame")
    ap.add_argument("--big-mb", type=float, default=50.0, help="size of the big UpdateMetadata, MB")
    ap.add_argument("--idle", type=int, default=1100, help="idle connections before the next client")
    ap.add_argument("--timeout", type=float, default=600.0, help="bound on the big request's answer, s")
    ap.add_argument("--attacks", default="1,2,3,4", help="which attacks to run (comma-separated numbers)")
    ap.add_argument("--json", metavar="PATH", help="also write the headline figures as JSON (benchmarks/figures.py)")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this process holds the attacking sockets
    figures: list[Figure] = []
    print(f"sim-broker on 127.0.0.1, one fresh process per attack; {os.cpu_count()} CPUs; "
          f"open-file limit here {soft} -> {hard}")

    attacks = {int(a) for a in args.attacks.split(",")}
    met = met2 = met4 = True
    if 1 in attacks:
        met = attack_1(args, figures)
    if 2 in attacks:
        met2 = attack_2(args, figures)
    if 3 in attacks:
        attack_3(args, figures)
    if 4 in attacks:
        met4 = attack_4(figures)
    write_results(args.json, "server_attack_bench", figures, vars(args))
    return 0 if met and met2 and met4 else 1


def attack_1(args: argparse.Namespace, figures: list[Figure]) -> bool:
    grown, peak, lat = partial_frames(args.conns, "268435456")
    grown0, peak0, lat0 = partial_frames(args.conns, "-1")
    met = grown <= 300
    print(f"1. {args.conns} connections x 99 MiB partial frames: RSS +{grown:,.0f} MiB (peak +{peak:,.0f}) with the "
          f"256 MiB budget, +{grown0:,.0f} MiB (peak +{peak0:,.0f}) without; a probe answered in {lat * 1000:.0f} ms "
          f"(without: {lat0 * 1000:.0f} ms); target <= 300 MiB: {'met' if met else 'NOT met'} ({load()})")
    figures.append(Figure(what=f"sim-broker RSS growth, {args.conns} connections holding 99 MiB partial frames",
                          value=grown, unit="MiB", peer="no budget (queued.max.request.bytes -1)", peer_value=grown0,
                          ratio=grown / grown0 if grown0 > 0 else None, ratio_of="RSS growth",
                          target="<= 300 MiB", met=met))
    return met


def attack_2(args: argparse.Namespace, figures: list[Figure]) -> bool:
    cid = 424242
    t0 = time.perf_counter()
    frame, n = big_umr_frame(args.big_mb, cid)
    built = time.perf_counter() - t0
    expected = encode_response(UpdateMetadataResponse(error_code=0), 6, 8, cid)[4:]
    with Broker() as b:
        slowest, elapsed, count, answer = asyncio.run(big_request(b.port, frame, cid, args.timeout))
        peak_rss = rss_mib(b.proc.pid, "VmHWM")
    same = answer == expected
    met2 = slowest <= 0.5 and same
    print(f"2. UpdateMetadata v8 of {len(frame) / 1e6:.1f} MB ({n:,} live brokers, built in {built:.1f} s): answered in "
          f"{elapsed:.1f} s, {'the expected bytes' if same else 'UNEXPECTED bytes ' + answer.hex()}; meanwhile {count} "
          f"probe answers on another connection, the slowest in {slowest * 1000:.0f} ms (GIL switch interval "
          f"{sys.getswitchinterval() * 1000:.0f} ms); broker peak RSS {peak_rss:,.0f} MiB; target <= 0.5 s: "
          f"{'met' if met2 else 'NOT met'} ({load()})")
    figures.append(Figure(what=f"slowest answer to another client while a {len(frame) / 1e6:.0f} MB UpdateMetadata is "
                               "handled", value=slowest, unit="s", peer=f"the big request's own answer ({n:,} brokers)",
                          peer_value=elapsed, target="<= 0.5 s", met=met2))
    return met2


def attack_3(args: argparse.Namespace, figures: list[Figure]) -> None:
    with Broker(nofile=1024) as b:
        lat3 = asyncio.run(idle_then_probe(b.port, args.idle))
    print(f"3. {args.idle:,} idle connections to a broker started with a soft open-file limit of 1,024: the next client "
          f"answered in {lat3 * 1000:.0f} ms ({load()})")
    figures.append(Figure(what=f"a new client's answer with {args.idle:,} idle connections open (soft limit 1,024 at start)",
                          value=lat3, unit="s", target="answered", met=True))


def attack_4(figures: list[Figure]) -> bool:
    with Broker("--connections-max-idle-ms", "2000") as b:
        closed = asyncio.run(idle_closed_after(b.port, 50))
    met4 = closed <= 5
    print(f"4. --connections-max-idle-ms 2000: 50 idle connections all closed after {closed:.2f} s; target <= 5 s: "
          f"{'met' if met4 else 'NOT met'} ({load()})")
    figures.append(Figure(what="50 idle connections closed (connections.max.idle.ms 2000)", value=closed, unit="s",
                          target="<= 5 s", met=met4))
    return met4


if __name__ == "__main__":
    raise SystemExit(main())
