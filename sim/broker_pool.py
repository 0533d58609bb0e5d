"""A pool of simulated brokers in a child process, for runs that want the brokers off the controller's CPU.

Rules:
- ``BrokerPool.start(n, controller, cluster_id)`` spawns a process (multiprocessing "spawn", so the
  caller's main module must be import-safe: ``if __name__ == "__main__":``) that
  runs n SimulatedBrokers (ids 0..n-1, one SharedDecoder) on 127.0.0.1, each registering with the
  controller endpoint by itself; it returns once every broker listens.
- The parent talks to the child over a multiprocessing Pipe, one command at a time: ``digests()``
  gives each broker's metadata-cache digest (``view_digest``), ``stop()`` ends the child (which
  stops its brokers and lifecycles first) and joins it; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from multiprocessing.connection import Connection
from typing import Any

from .broker_server import SimulatedBroker
from .lifecycle import BrokerLifecycle
from .metadata_cache import view_digest
from .shared_decode import SharedDecoder

__all__ = ["BrokerPool"]


async def _serve(conn: Connection, n: int, controller: tuple[str, int], cluster_id: str, heartbeat_interval: float) -> None:
    decoder = SharedDecoder()
    brokers = [SimulatedBroker(b, 1000 + b, migration_enabled=True, record=False, decoder=decoder) for b in range(n)]
    lifecycles = []
    for broker in brokers:
        await broker.start()
    for broker in brokers:
        lc = BrokerLifecycle(lambda broker=broker: broker.state, (broker.host, broker.port), controller, cluster_id,  # type: ignore[misc]
                             heartbeat_interval=heartbeat_interval)
        lc.start()
        lifecycles.append(lc)
    conn.send(("ports", {b.broker_id: b.port for b in brokers}))
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def on_command() -> None:
        command = conn.recv()
        if command == "digests":
            digests = {}
            for b in brokers:
                with b.state_lock:  # a big request may be being applied on a handler thread
                    digests[b.broker_id] = view_digest(b.state.cache.view())
            conn.send(("digests", digests))
        elif command == "stop" and not done.done():
            done.set_result(None)

    loop.add_reader(conn.fileno(), on_command)
    try:
        await done
    finally:
        loop.remove_reader(conn.fileno())
        for lc in lifecycles:
            await lc.stop()
        for broker in brokers:
            await broker.stop()
    conn.send(("stopped", None))


def _child(conn: Connection, n: int, controller: tuple[str, int], cluster_id: str, heartbeat_interval: float) -> None:
    asyncio.run(_serve(conn, n, controller, cluster_id, heartbeat_interval))


class BrokerPool:
    """The parent's handle on the child process (see the module rules)."""

    def __init__(self, process: Any, conn: Connection, ports: dict[int, int]) -> None:
        self.process = process
        self.conn = conn
        self.ports = ports

    def __repr__(self) -> str:
        return f"BrokerPool({len(self.ports)} brokers, pid {self.process.pid})"

    @classmethod
    def start(cls, n: int, controller: tuple[str, int], cluster_id: str, *, heartbeat_interval: float = 2.0,
              timeout: float = 60.0) -> BrokerPool:
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_child, args=(child, n, controller, cluster_id, heartbeat_interval), daemon=True)
        process.start()
        child.close()
        return cls(process, parent, cls._expect(parent, "ports", timeout))

    @staticmethod
    def _expect(conn: Connection, kind: str, timeout: float) -> Any:
        try:
            if not conn.poll(timeout):
                raise TimeoutError(f"the broker pool did not answer {kind!r} within {timeout} s")
            got, value = conn.recv()
        except (EOFError, OSError) as e:
            raise RuntimeError(f"the broker pool process ended before answering {kind!r} (is the main module "
                               "guarded by if __name__ == '__main__'? the pool is spawned)") from e
        if got != kind:
            raise RuntimeError(f"the broker pool answered {got!r}, expected {kind!r}")
        return value

    async def digests(self, timeout: float = 30.0) -> dict[int, str]:
        """Each broker's metadata-cache digest (asks the child without blocking the loop)."""
        self.conn.send("digests")
        loop = asyncio.get_running_loop()
        result: dict[int, str] = await loop.run_in_executor(None, self._expect, self.conn, "digests", timeout)
        return result

    def stop(self, timeout: float = 30.0) -> None:
        try:
            self.conn.send("stop")
            self._expect(self.conn, "stopped", timeout)
        finally:
            self.process.join(timeout)
            if self.process.is_alive():
                self.process.kill()
                self.process.join(timeout)
            self.conn.close()
