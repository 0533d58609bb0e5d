"""ControllerChannelManager: the controller channel for synchronous code, on a thread of its own.

Rules:
- It wraps an AsyncControllerChannel running on a private event loop in one daemon thread,
  named "controller-channel-<controller id>", started by startup() and joined by shutdown().
- send() never blocks and may be called from any thread: it appends to an inbox under a lock and
  wakes the loop at most once per batch of sends, so a batch of N requests costs one wake-up.
  Everything else (add_broker, remove_broker, metrics, wait_until_idle, shutdown) runs on the
  loop and waits for it; calls made from any one thread take effect in call order, so a send()
  after add_broker() reaches that broker and a send() after remove_broker() is dropped.
- Callbacks run on the channel's thread (Kafka runs them on the broker's send thread). They may
  call send() and remove_broker(); they must not call shutdown() or block on the channel.
- A send() before startup() or after shutdown() is dropped with Kafka's offline warning.
- startup() after shutdown() starts a new thread and loop: Kafka's controller reuses its channel
  manager each time it becomes active (startup) and resigns (shutdown).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections import deque
from collections.abc import Callable, Coroutine, Iterable
from types import TracebackType
from typing import Any, TypeVar

from ctrlbatch.context import Broker

from . import log_messages as msg
from .async_channel import AsyncControllerChannel, Callback, check_send, check_timeout
from .channel_state import Sendable
from .metrics import ChannelMetrics

__all__ = ["ControllerChannelManager"]

logger = logging.getLogger("ctrlbatch.transport")
T = TypeVar("T")

# How long a call that hands work to the loop waits for it, beyond its own timeout.
_CALL_TIMEOUT_S = 60.0


class ControllerChannelManager:
    """Kafka's ControllerChannelManager; implements ctrlbatch.batch.Transport (see the module rules).

    Options (keywords): controller_id=0, client_id=None (the controller id), listener_name="PLAINTEXT",
    security_protocol=PLAINTEXT, connect_timeout_ms=30000, request_timeout_ms=30000, backoff_ms=100,
    max_in_flight=1 (the only value), metrics_log_interval_ms=60000 (None: off), thread_name_prefix=None.
    """

    def __init__(self, **options: Any) -> None:
        self._channel = AsyncControllerChannel(**options)
        self.options = self._channel.options
        self._lock = threading.Lock()
        self._inbox: deque[tuple[int, Sendable, Callback | None, float]] = deque()
        self._drain_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        state = "running" if self._loop is not None else "stopped"
        return f"<ControllerChannelManager controller={self.options.controller_id} {state}>"

    def __enter__(self) -> ControllerChannelManager:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()

    # ------------------------------------------------------------------ lifecycle

    def startup(self, brokers: Iterable[Broker] = ()) -> None:
        """Start the channel's thread and loop, then add the initial brokers."""
        brokers = list(brokers)
        for b in brokers:
            if not isinstance(b, Broker):
                raise TypeError(f"brokers must hold ctrlbatch.context.Broker values, got {b!r}")
        with self._lock:
            if self._loop is not None:
                raise RuntimeError("the controller channel manager is already started")
            loop = asyncio.new_event_loop()
            ready = threading.Event()
            thread = threading.Thread(
                target=self._serve, args=(loop, ready), name=f"controller-channel-{self.options.controller_id}",
                daemon=True,
            )
            thread.start()
            ready.wait()
            self._loop, self._thread = loop, thread
        try:
            self._call(self._channel.startup, brokers)
        except BaseException:
            self.shutdown()
            raise

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
            asyncio.set_event_loop(None)
            loop.close()

    def shutdown(self) -> None:
        """Remove every broker (queued and in-flight requests dropped, no callbacks), stop the thread."""
        if self._on_loop_thread():
            raise RuntimeError("shutdown() cannot run on the channel's own thread (from a callback)")
        with self._lock:
            loop, thread = self._loop, self._thread
            if loop is None or thread is None:
                return
        try:
            self._await(self._channel.shutdown(), _CALL_TIMEOUT_S)
        finally:
            with self._lock:
                self._loop = self._thread = None
                self._inbox.clear()
                self._drain_scheduled = False
            loop.call_soon_threadsafe(loop.stop)
            thread.join()

    @property
    def running(self) -> bool:
        return self._loop is not None

    # ------------------------------------------------------------------ brokers

    def add_broker(self, broker: Broker) -> None:
        """Connect to broker on the inter-broker listener; does nothing for a known broker id."""
        self._call(self._channel.add_broker, broker)

    def remove_broker(self, broker_id: int) -> None:
        """Drop the broker's queue and in-flight request (no callbacks); KeyError for an unknown id."""
        self._call(self._channel.remove_broker, broker_id)

    @property
    def broker_ids(self) -> frozenset[int]:
        return self._call(lambda: self._channel.broker_ids) if self._loop is not None else frozenset()

    # ------------------------------------------------------------------ sending

    def send(self, broker_id: int, request: Sendable, callback: Callback | None = None) -> None:
        """Queue request for broker_id and return at once; callback(response) runs on the channel's thread."""
        check_send(broker_id, request, callback)
        if self._on_loop_thread():
            self._channel.send(broker_id, request, callback)
            return
        with self._lock:
            loop = self._loop
            if loop is not None:
                # the channel's clock (loop.time() reads the monotonic clock; safe from any thread)
                self._inbox.append((broker_id, request, callback, loop.time()))
                if not self._drain_scheduled:
                    self._drain_scheduled = True
                    loop.call_soon_threadsafe(self._drain)
                return
        logger.warning(msg.not_sending(request, broker_id))

    def _drain(self) -> None:
        with self._lock:
            items = list(self._inbox)
            self._inbox.clear()
            self._drain_scheduled = False
        send = self._channel.send_checked  # send() checked them
        for broker_id, request, callback, now in items:
            send(broker_id, request, callback, now)

    def wait_until_idle(self, timeout: float) -> bool:
        """True once every request sent so far is settled; False after timeout seconds."""
        timeout = check_timeout(timeout)
        if self._loop is None:
            return True
        return self._await(self._channel.wait_until_idle(timeout), timeout + _CALL_TIMEOUT_S)

    def metrics(self) -> ChannelMetrics:
        """A snapshot of the per-broker queue sizes, request rates, queue times and counters."""
        if self._loop is None:
            return ChannelMetrics(())
        return self._call(self._channel.metrics)

    # ------------------------------------------------------------------ hand-over to the loop

    def _on_loop_thread(self) -> bool:
        thread = self._thread
        return thread is not None and threading.current_thread() is thread

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is None:
            raise RuntimeError("the controller channel manager is not started (call startup() first)")
        return loop

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run fn(*args) on the loop's thread and return its result (directly when already there)."""
        if self._on_loop_thread():
            return fn(*args)
        loop = self._running_loop()
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                done.set_result(fn(*args))
            except BaseException as e:
                done.set_exception(e)

        loop.call_soon_threadsafe(run)
        return done.result(_CALL_TIMEOUT_S)

    def _await(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        if self._on_loop_thread():
            coro.close()
            raise RuntimeError("this call waits for the channel's thread and cannot run on it (from a callback)")
        loop = self._running_loop()
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)
