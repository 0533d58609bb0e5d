"""AsyncControllerChannel: Kafka's ControllerChannelManager for code that runs its own asyncio loop.

Rules (kafka-controller-channel.md §1-§5, §7):
- Every method is called on the loop's thread. send(), add_broker() and remove_broker() are plain
  functions (they never block or await); shutdown() and wait_until_idle() are coroutines.
- One sender task per broker, named like Kafka's send thread, owns that broker's connection and
  runs its BrokerChannelState: take the queue head, connect if needed (connect_timeout_ms), write
  the frame, wait for its response (request_timeout_ms); each failed try is logged, the connection
  closed, and the same request resent with a new correlation id after backoff_ms, forever.
- Callbacks run in the sender task, on the loop's thread (Kafka runs them on the send thread). A
  callback that raises is logged at ERROR, the connection is closed and the request is not
  retried. A callback may call send() and remove_broker().
- send() to an unknown broker logs Kafka's warning and drops the request. add_broker() of a
  known id does nothing; remove_broker() of an unknown id raises KeyError. Removal cancels the
  task, closes the connection and drops the queue and the request in flight: no callback runs.
- Nothing outlives shutdown(): it removes every broker and awaits the tasks it cancelled.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from ctrlbatch.context import Broker, Node

from . import log_messages as msg
from .channel_state import ACTIONS, BrokerChannelState, Ending, QueueItem, Sendable, TryResult
from .connection import Connection
from .metrics import BrokerMetrics, ChannelMetrics
from .options import ChannelOptions

__all__ = ["AsyncControllerChannel"]

logger = logging.getLogger("ctrlbatch.transport")
metrics_logger = logging.getLogger("ctrlbatch.transport.metrics")

Callback = Callable[[Any], None]


@attrs.define(eq=False)
class _Sender:
    """One broker: its state machine, address, connection and task."""

    state: BrokerChannelState
    node: Node
    wakeup: asyncio.Event
    added_at: float
    task: asyncio.Task[None] | None = None
    conn: Connection | None = None
    waiter: asyncio.Future[bytes] | None = None
    removed: bool = False
    logged_count: int = 0


def _expire(fut: asyncio.Future[bytes]) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError())


class AsyncControllerChannel:
    """The controller channel inside a running asyncio loop (see the module rules)."""

    def __init__(self, **options: Any) -> None:
        self.options = ChannelOptions(**options)
        self._client_id = self.options.effective_client_id
        self._senders: dict[int, _Sender] = {}
        self._retired: set[asyncio.Task[None]] = set()
        self._pending = 0
        self._idle: asyncio.Event | None = None
        self._metrics_task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"<AsyncControllerChannel controller={self.options.controller_id} brokers={sorted(self._senders)}>"

    # ------------------------------------------------------------------ lifecycle

    def startup(self, brokers: Iterable[Broker] = ()) -> None:
        """Add the initial brokers and start the metrics log (needs the running loop)."""
        asyncio.get_running_loop()
        for broker in brokers:
            self.add_broker(broker)
        interval = self.options.metrics_log_interval_ms
        if interval is not None and self._metrics_task is None:
            self._metrics_task = asyncio.get_running_loop().create_task(
                self._log_metrics(interval / 1000.0), name="controller-channel-metrics"
            )

    async def shutdown(self) -> None:
        """Remove every broker (dropping what is queued, without callbacks) and await the tasks."""
        for broker_id in list(self._senders):
            self.remove_broker(broker_id)
        if self._metrics_task is not None:
            self._metrics_task.cancel()
            self._retired.add(self._metrics_task)
            self._metrics_task = None
        while self._retired:
            tasks = list(self._retired)
            await asyncio.gather(*tasks, return_exceptions=True)
            self._retired.difference_update(tasks)

    def add_broker(self, broker: Broker) -> None:
        """Start a queue and a sender for broker, on its inter-broker listener; no-op if known."""
        if not isinstance(broker, Broker):
            raise TypeError(f"broker must be a ctrlbatch.context.Broker, got {broker!r}")
        if broker.id in self._senders:
            return
        loop = asyncio.get_running_loop()
        node = broker.node(self.options.listener_name)
        endpoint = broker.end_point(self.options.listener_name)
        if endpoint.security_protocol is not self.options.security_protocol:
            raise ValueError(
                f"broker {broker.id}: listener {endpoint.listener_name} uses {endpoint.security_protocol.name}; "
                "ctrlbatch.transport speaks PLAINTEXT only"
            )
        s = _Sender(BrokerChannelState(broker.id), node, asyncio.Event(), time.monotonic())
        self._senders[broker.id] = s
        s.task = loop.create_task(self._run(s), name=self.options.send_thread_name(broker.id))
        logger.debug("Controller %d trying to connect to broker %d", self.options.controller_id, broker.id)

    def remove_broker(self, broker_id: int) -> None:
        """Stop the broker's sender; its queued and in-flight requests are dropped without callbacks."""
        try:
            s = self._senders.pop(broker_id)
        except KeyError:
            raise KeyError(f"key not found: {broker_id}") from None
        s.removed = True
        self._settle(s.state.abandon())
        self._close(s)
        if s.task is not None:
            s.task.cancel()
            self._retired.add(s.task)
            s.task.add_done_callback(self._retired.discard)

    @property
    def broker_ids(self) -> frozenset[int]:
        return frozenset(self._senders)

    # ------------------------------------------------------------------ sending

    def send(
        self, broker_id: int, request: Sendable, callback: Callback | None = None, *, now: float | None = None
    ) -> None:
        """Queue request for broker_id (never blocks). now: when it was handed over (time.monotonic())."""
        s = self._senders.get(broker_id)
        if s is None:
            logger.warning(msg.not_sending(request, broker_id))
            return
        s.state.enqueue(request, callback, time.monotonic() if now is None else now)
        self._pending += 1
        if self._idle is not None:
            self._idle.clear()
        s.wakeup.set()

    async def wait_until_idle(self, timeout: float) -> bool:
        """True once every queue is empty and nothing is in flight; False after timeout seconds."""
        if self._pending == 0:
            return True
        if self._idle is None:
            self._idle = asyncio.Event()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return self._pending == 0
        return True

    def _settle(self, count: int) -> None:
        self._pending -= count
        if self._pending == 0 and self._idle is not None:
            self._idle.set()

    async def _run(self, s: _Sender) -> None:
        state = s.state
        while True:
            item = state.take(time.monotonic())
            if item is None:
                s.wakeup.clear()
                await s.wakeup.wait()
                continue
            await self._deliver(s, item)
            self._settle(1)

    async def _deliver(self, s: _Sender, item: QueueItem) -> None:
        """Try item until a try settles it, then run its callback (RequestSendThread.doWork)."""
        state, opts = s.state, self.options
        while True:
            conn = s.conn if s.conn is not None else await self._connect(s)
            if conn is None:
                continue
            cid = state.start_try()
            result = await self._exchange(s, conn, item.request.encode_parts(cid, self._client_id))
            action = state.end_try(result.ending)
            if action.close:
                self._close(s)
            if action.deliver:
                break
            if action.retry:
                logger.log(action.log_level, msg.send_failed(opts.controller_id, item.request, s.node, result.detail))
            else:
                logger.log(action.log_level, "%s: %s", msg.callback_failed(opts.controller_id, s.node), result.detail)
            if action.backoff:
                await asyncio.sleep(opts.backoff_ms / 1000.0)
            if not action.retry:
                return
        if item.callback is None or s.removed:
            return
        try:
            item.callback(result.response)
        except Exception:
            logger.exception(msg.callback_failed(opts.controller_id, s.node))
            if ACTIONS[Ending.CALLBACK_FAILED].close:
                self._close(s)
            state.end_try(Ending.CALLBACK_FAILED)

    async def _connect(self, s: _Sender) -> Connection | None:
        opts = self.options
        try:
            conn = await asyncio.wait_for(
                Connection.open(s.node.host, s.node.port, self._frame_handler(s), self._lost_handler(s)),
                opts.connect_timeout_ms / 1000.0,
            )
        except (OSError, TimeoutError) as e:
            reason = f"Failed to connect within {opts.connect_timeout_ms} ms" if isinstance(e, TimeoutError) else str(e)
            logger.warning(msg.connect_failed(opts.controller_id, s.node, reason))
            s.state.end_try(Ending.CONNECT_FAILED)
            await asyncio.sleep(opts.backoff_ms / 1000.0)
            return None
        logger.info(msg.connected(opts.controller_id, s.node))
        s.conn = conn
        return conn

    async def _exchange(self, s: _Sender, conn: Connection, parts: list[bytes | memoryview]) -> TryResult:
        """Write one frame and wait for the frame that answers it."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bytes] = loop.create_future()
        s.waiter = fut
        timeout_ms = self.options.request_timeout_ms
        handle = loop.call_later(timeout_ms / 1000.0, _expire, fut)
        try:
            s.state.counters.bytes_sent += sum(len(p) for p in parts)
            conn.send_parts(parts)
            frame = await fut
        except ConnectionError as e:
            return TryResult(Ending.CONNECTION_LOST, detail=str(e))
        except TimeoutError:
            return TryResult(Ending.REQUEST_TIMED_OUT, detail=f"no response within {timeout_ms} ms")
        finally:
            handle.cancel()
            s.waiter = None
        return s.state.on_frame(frame)

    def _frame_handler(self, s: _Sender) -> Callable[[Connection, bytes], None]:
        def on_frame(conn: Connection, frame: bytes) -> None:
            fut = s.waiter
            if fut is not None and not fut.done() and s.conn is conn:
                fut.set_result(frame)
                return
            s.state.counters.bytes_received += len(frame) + 4
            logger.log(
                ACTIONS[Ending.UNSOLICITED_RESPONSE].log_level,
                "Controller %d: %s from broker %s; closing the connection",
                self.options.controller_id, Ending.UNSOLICITED_RESPONSE.value, msg.node_text(s.node),
            )
            if s.conn is conn:
                self._close(s)
            else:
                conn.close()

        return on_frame

    def _lost_handler(self, s: _Sender) -> Callable[[Connection, str], None]:
        def on_lost(conn: Connection, reason: str) -> None:
            if s.conn is not conn:
                return
            s.conn = None
            fut = s.waiter
            if fut is not None and not fut.done():
                fut.set_exception(ConnectionError(reason))

        return on_lost

    def _close(self, s: _Sender) -> None:
        conn, s.conn = s.conn, None
        if conn is not None:
            conn.close()

    # ------------------------------------------------------------------ metrics

    def metrics(self) -> ChannelMetrics:
        now = time.monotonic()
        return ChannelMetrics(
            tuple(
                BrokerMetrics.of(bid, s.state.queue_size, s.state.counters, now - s.added_at)
                for bid, s in sorted(self._senders.items())
            )
        )

    async def _log_metrics(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            if not metrics_logger.isEnabledFor(logging.INFO):
                continue
            snapshot = self.metrics()
            metrics_logger.info("TotalQueueSize=%d", snapshot.total_queue_size)
            for b in snapshot.brokers:
                s = self._senders.get(b.broker_id)
                last = 0 if s is None else s.logged_count
                if s is not None:
                    s.logged_count = b.request_count
                metrics_logger.info(b.log_text((b.request_count - last) / interval))
