"""RegistrationPlane: the controller endpoint and the brokers' heartbeats on a thread of their own.

Rules:
- Kafka keeps a broker's heartbeats (BrokerLifecycleManager's event queue, a ZooKeeper client's
  ping thread) and the controller's session handling (QuorumController's queue, ZooKeeper's
  session tracker) off the threads that apply metadata or build requests. Here the
  ControllerEndpoint (registration, heartbeats, session expiry) and every BrokerLifecycle run on
  one asyncio loop in a daemon thread: a controller step or a broker's big request applied on
  the simulation's loop (or a handler thread) only takes the GIL from them for a switch interval
  at a time (5 ms), it never holds their loop. tests/sim/test_registration_plane.py checks that
  heartbeats keep flowing, and nobody is fenced, while the main loop is busy for longer than a
  session time-out.
- The endpoint's events reach the simulation's loop through ``call_soon_threadsafe``, with the
  registration each event concerns (read on the plane's thread, where registrations change).
- ``run(fn)`` runs a plain function on the plane's loop and ``call(coro_fn)`` a coroutine
  function; both are awaited from the caller's loop and bounded by ``timeout``.
- ``stop()`` stops the lifecycles, the endpoint and the thread; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["RegistrationPlane"]

T = TypeVar("T")
STOP_TIMEOUT_S = 10.0


class RegistrationPlane:
    """A daemon thread running its own asyncio loop (see the module rules)."""

    def __init__(self, name: str = "sim-registration-plane") -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.thread.start()
        if not self._ready.wait(STOP_TIMEOUT_S):
            raise RuntimeError("the registration plane's thread did not start")

    def __repr__(self) -> str:
        return f"RegistrationPlane({self.thread.name}, {'running' if self.thread.is_alive() else 'stopped'})"

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
        finally:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    async def call(self, coro_fn: Callable[[], Awaitable[T]], timeout: float = 30.0) -> T:
        """``await coro_fn()`` on the plane's loop, from the caller's loop."""
        async def run() -> T:
            return await coro_fn()

        future = asyncio.run_coroutine_threadsafe(run(), self.loop)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except TimeoutError:
            future.cancel()
            raise

    async def run(self, fn: Callable[[], T], timeout: float = 30.0) -> T:
        """``fn()`` on the plane's loop (for what needs its running loop, like a task's start)."""
        async def wrapper() -> T:
            return fn()

        return await self.call(wrapper, timeout)

    def call_blocking(self, coro_fn: Callable[[], Awaitable[Any]], timeout: float = STOP_TIMEOUT_S) -> Any:
        """The same, from a thread with no loop of its own (tests, shutdown paths)."""
        async def run() -> Any:
            return await coro_fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def stop(self) -> None:
        if not self.thread.is_alive():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(STOP_TIMEOUT_S)

    @staticmethod
    def forward(loop: asyncio.AbstractEventLoop, fn: Callable[..., None]) -> Callable[..., None]:
        """A function that, called on any thread, runs ``fn`` with its arguments on ``loop``."""
        def forwarded(*args: Any) -> None:
            try:
                loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:  # the caller's loop is closed: the simulation is over
                pass

        return forwarded

