"""AsyncControllerChannel: Kafka's ControllerChannelManager for code that runs its own asyncio loop.

Rules (kafka-controller-channel.md §1-§5, §7):
- Every method is called on the loop's thread. send(), add_broker() and remove_broker() are plain
  functions (they never block or await); shutdown() and wait_until_idle() are coroutines.
- Each broker has a sender: its BrokerChannelState, its connection and at most one pending
  step (a connect task, a back-off timer, or a try in flight). The sender is driven by events,
  not by a task per request: a response, a lost connection, a time-out or the end of a back-off
  settles the try through the state machine's ACTIONS and starts the next try, so a busy broker
  costs one socket read and one write per request and no task switch.
- After an answer the next try is written from the loop's next round (call_soon), so that the
  answers read in one round are all settled before the requests they free go out, as the minimal
  asyncio client of benchmarks/channel_bench.py does: with 50 brokers on a loaded machine this
  took the channel from 0.45x to 0.61x that client's round trips (load average 9). A frame that
  arrives while that next try waits is read after writing it, as without the deferral: a second
  answer to one request fails the next try (a correlation id mismatch), as in Kafka. The senders
  freed in one round wait in one ready list that a single call_soon callback pumps, with one
  loop.time() for their queue times and deadlines: a handle per sender (call_soon, Handle._run)
  was 9% of the channel thread's py-spy samples with 50 brokers, the list about 1% (issue 14).
  A step that raises is reported to the loop's exception handler, as its own handle's would be,
  and the other senders of the list still go.
- Kafka's send loop, step by step: take the queue head, connect if needed (connect_timeout_ms),
  write the frame, wait for its response (request_timeout_ms); each failed try is logged, the
  connection closed, and the same request resent with a new correlation id after backoff_ms,
  forever.
- Callbacks run on the loop's thread, as the response is read (Kafka runs them on the send
  thread), before the try is settled: each try ends with exactly one end_try. A callback that
  raises is logged at ERROR, the connection is closed and the request is not retried. A callback
  may call send(), add_broker() and remove_broker().
- One clock: the loop's (loop.time()), for queue times, deadlines and rates; send(now=...) takes
  that clock too.
- send() to an unknown broker logs Kafka's warning and drops the request. add_broker() of a
  known id does nothing; remove_broker() of an unknown id raises KeyError. Removal closes the
  connection, stops the sender's timers and connect task, and drops the queue and the request in
  flight: no callback runs for them.
- Nothing outlives shutdown(): it removes every broker and awaits the tasks it cancelled. A
  shut-down channel may be started again (a controller that resigned and is elected again).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from ctrlbatch.context import Broker, Node

from . import log_messages as msg
from .channel_state import ACTIONS, BrokerChannelState, Ending, Sendable, TryResult
from .connection import Connection
from .metrics import BrokerMetrics, ChannelMetrics
from .options import ChannelOptions

__all__ = ["AsyncControllerChannel", "check_send", "check_timeout"]

logger = logging.getLogger("ctrlbatch.transport")
metrics_logger = logging.getLogger("ctrlbatch.transport.metrics")

Callback = Callable[[Any], None]


def check_send(broker_id: object, request: object, callback: object) -> None:
    """send()'s arguments, checked where send() is called (both forms of the channel)."""
    if not isinstance(broker_id, int) or isinstance(broker_id, bool):
        raise TypeError(f"broker_id must be an int, got {broker_id!r}")
    if not callable(getattr(request, "encode_parts", None)):
        raise TypeError(f"request must have encode_parts (a ctrlbatch.batch.OutboundRequest), got {request!r}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {callback!r}")


def check_timeout(timeout: object) -> float:
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout >= 0:
        raise ValueError(f"timeout must be a number of seconds >= 0, got {timeout!r}")
    return float(timeout)


@attrs.define(eq=False)
class _Sender:
    """One broker: its state machine, address, connection and pending step."""

    state: BrokerChannelState
    node: Node
    added_at: float
    conn: Connection | None = None
    connecting: asyncio.Task[None] | None = None
    backing_off: asyncio.TimerHandle | None = None
    scheduled: bool = False  # in the ready list: its _pump runs in the loop's next round
    removed: bool = False
    deadline: float = 0.0  # loop time by which the try in flight must be answered
    timer: asyncio.TimerHandle | None = None
    logged_count: int = 0

    @property
    def busy(self) -> bool:
        """A step is pending: a try in flight, a connect, or a back-off."""
        return self.state.in_flight is not None or self.connecting is not None or self.backing_off is not None


class AsyncControllerChannel:
    """The controller channel inside a running asyncio loop (see the module rules)."""

    def __init__(self, **options: Any) -> None:
        self.options = ChannelOptions(**options)
        self._client_id = self.options.effective_client_id
        self._request_timeout = self.options.request_timeout_ms / 1000.0
        self._senders: dict[int, _Sender] = {}
        self._retired: set[asyncio.Task[None]] = set()
        self._pending = 0
        self._idle: asyncio.Event | None = None
        self._metrics_task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: list[_Sender] = []  # senders whose next step runs in the loop's next round

    def __repr__(self) -> str:
        return f"<AsyncControllerChannel controller={self.options.controller_id} brokers={sorted(self._senders)}>"

    # ------------------------------------------------------------------ lifecycle

    def startup(self, brokers: Iterable[Broker] = ()) -> None:
        """Add the initial brokers and start the metrics log (needs the running loop)."""
        loop = self._running_loop()
        for broker in brokers:
            self.add_broker(broker)
        interval = self.options.metrics_log_interval_ms
        if interval is not None and self._metrics_task is None:
            self._metrics_task = loop.create_task(self._log_metrics(interval / 1000.0), name="controller-channel-metrics")

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
        # Kafka's controller calls startup() again on the same channel when it becomes active once
        # more (KafkaController.scala:980, :535); that may be on another loop (the manager's next thread).
        self._loop = self._idle = None
        self._ready = []

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("an AsyncControllerChannel is bound to the loop it was first used in")
        return loop

    def add_broker(self, broker: Broker) -> None:
        """Start a queue and a sender for broker, on its inter-broker listener; no-op if known."""
        if not isinstance(broker, Broker):
            raise TypeError(f"broker must be a ctrlbatch.context.Broker, got {broker!r}")
        self._running_loop()
        if broker.id in self._senders:
            return
        endpoint = broker.end_point(self.options.listener_name)
        if endpoint.security_protocol is not self.options.security_protocol:
            raise ValueError(
                f"broker {broker.id}: listener {endpoint.listener_name} uses {endpoint.security_protocol.name}; "
                "ctrlbatch.transport speaks PLAINTEXT only"
            )
        node = broker.node(self.options.listener_name)
        self._senders[broker.id] = _Sender(BrokerChannelState(broker.id), node, self._running_loop().time())
        logger.debug("Controller %d trying to connect to broker %d", self.options.controller_id, broker.id)

    def remove_broker(self, broker_id: int) -> None:
        """Stop the broker's sender; its queued and in-flight requests are dropped without callbacks."""
        try:
            s = self._senders.pop(broker_id)
        except KeyError:
            raise KeyError(f"key not found: {broker_id}") from None
        s.removed = True
        for handle in (s.timer, s.backing_off):
            if handle is not None:
                handle.cancel()
        s.timer = s.backing_off = None
        self._settle(s.state.abandon())
        self._close(s)
        task, s.connecting = s.connecting, None
        if task is not None:
            task.cancel()
            self._retired.add(task)
            task.add_done_callback(self._retired.discard)

    @property
    def broker_ids(self) -> frozenset[int]:
        return frozenset(self._senders)

    # ------------------------------------------------------------------ sending

    def send(
        self, broker_id: int, request: Sendable, callback: Callback | None = None, *, now: float | None = None
    ) -> None:
        """Queue request for broker_id (never blocks). now: when it was handed over (the loop's clock)."""
        check_send(broker_id, request, callback)
        self._running_loop()
        self.send_checked(broker_id, request, callback, now)

    def send_checked(self, broker_id: int, request: Sendable, callback: Callback | None, now: float | None) -> None:
        """send() for arguments already checked, on the channel's loop (ControllerChannelManager
        checks them on the sender's thread and calls this from its loop)."""
        s = self._senders.get(broker_id)
        if s is None:
            logger.warning(msg.not_sending(request, broker_id))
            return
        loop = self._loop  # bound: add_broker() ran on it
        assert loop is not None
        s.state.enqueue(request, callback, loop.time() if now is None else now)
        self._pending += 1
        if self._idle is not None:
            self._idle.clear()
        if not s.scheduled and not s.busy:
            self._schedule(s)

    async def wait_until_idle(self, timeout: float) -> bool:
        """True once every queue is empty and nothing is in flight; False after timeout seconds."""
        timeout = check_timeout(timeout)
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

    def _schedule(self, s: _Sender) -> None:
        """Run s's next step in the loop's next round: one call_soon for all the senders freed
        in a round (see the module rules)."""
        s.scheduled = True
        ready = self._ready
        if not ready:
            loop = self._loop
            assert loop is not None
            loop.call_soon(self._pump_ready)
        ready.append(s)

    def _pump_ready(self) -> None:
        ready, self._ready = self._ready, []
        loop = self._loop
        if loop is None:  # shut down since
            return
        now = loop.time()
        for s in ready:
            if s.scheduled:
                try:
                    self._pump(s, now)
                except Exception as e:  # reported as a handle of its own would be; the others still go
                    loop.call_exception_handler(
                        {"message": f"Exception in the sender of broker {s.state.broker_id}", "exception": e}
                    )

    def _pump(self, s: _Sender, now: float | None = None) -> None:
        """Start the next step: take the head if nothing is current, connect, or write a try."""
        s.scheduled = False
        if s.removed or s.state.in_flight is not None or s.connecting is not None or s.backing_off is not None:
            return
        state = s.state
        loop = self._loop
        assert loop is not None
        if now is None:
            now = loop.time()
        if state.current is None and state.take(now) is None:
            return
        conn = s.conn
        if conn is None:
            s.connecting = loop.create_task(
                self._connect(s), name=self.options.send_thread_name(state.broker_id)
            )
            return
        item = state.current
        assert item is not None
        parts = item.request.encode_parts(state.start_try(), self._client_id)
        size = 0
        for p in parts:
            size += len(p)
        state.counters.bytes_sent += size
        # The try's deadline. One timer per sender, re-armed lazily when it fires before the
        # current deadline, so a try answered in time costs no timer operation.
        s.deadline = now + self._request_timeout
        if s.timer is None:
            s.timer = loop.call_at(s.deadline, self._check_deadline, s)
        conn.send_parts(parts, size)

    def _check_deadline(self, s: _Sender) -> None:
        s.timer = None
        if s.removed or s.state.in_flight is None:
            return
        loop = self._running_loop()
        if loop.time() >= s.deadline:
            detail = f"no response within {self.options.request_timeout_ms} ms"
            self._finish_try(s, TryResult(Ending.REQUEST_TIMED_OUT, detail=detail))
        else:
            s.timer = loop.call_at(s.deadline, self._check_deadline, s)

    def _finish_try(self, s: _Sender, result: TryResult) -> None:
        """Settle a try through ACTIONS (one end_try per try), then start the next step. An answer
        goes to the callback first: a callback that raises turns the try's ending into
        CALLBACK_FAILED (logged, connection closed, not retried); one that removes this broker
        leaves nothing to settle (the removal dropped the item)."""
        state = s.state
        item = state.current
        assert item is not None
        ending = result.ending
        callback = item.callback
        if callback is not None and ACTIONS[ending].deliver:
            try:
                callback(result.response)
            except Exception:
                logger.exception(msg.callback_failed(self.options.controller_id, s.node))
                ending = Ending.CALLBACK_FAILED
            if s.removed:
                return
        action = state.end_try(ending)
        if action.close:
            self._close(s)
        if action.retry:
            logger.log(
                action.log_level, msg.send_failed(self.options.controller_id, item.request, s.node, result.detail)
            )
        else:
            if not action.deliver and ending is not Ending.CALLBACK_FAILED:
                logger.log(
                    action.log_level, "%s: %s", msg.callback_failed(self.options.controller_id, s.node), result.detail
                )
            self._settle(1)
        if action.backoff:
            self._back_off(s)
        elif not s.scheduled:
            self._schedule(s)

    def _back_off(self, s: _Sender) -> None:
        if not s.removed:
            s.backing_off = self._running_loop().call_later(self.options.backoff_ms / 1000.0, self._backed_off, s)

    def _backed_off(self, s: _Sender) -> None:
        s.backing_off = None
        self._pump(s)

    async def _connect(self, s: _Sender) -> None:
        opts = self.options
        try:
            conn = await asyncio.wait_for(
                Connection.open(s.node.host, s.node.port, self._on_frame(s), self._on_lost(s)),
                opts.connect_timeout_ms / 1000.0,
            )
        except (OSError, TimeoutError) as e:
            s.connecting = None
            reason = f"Failed to connect within {opts.connect_timeout_ms} ms" if isinstance(e, TimeoutError) else str(e)
            logger.warning(msg.connect_failed(opts.controller_id, s.node, reason))
            s.state.end_try(Ending.CONNECT_FAILED)
            self._back_off(s)
            return
        s.connecting = None
        if s.removed:
            conn.close()
            return
        logger.info(msg.connected(opts.controller_id, s.node))
        s.conn = conn
        self._pump(s)

    def _on_frame(self, s: _Sender) -> Callable[[Connection, bytes], None]:
        def on_frame(conn: Connection, frame: bytes) -> None:
            if s.conn is not conn:
                conn.close()
                return
            if s.scheduled and s.state.in_flight is None:
                self._pump(s)  # a frame after an answer meets the next try, as if it had gone out at once
            result = s.state.on_frame(frame)
            if result.ending is Ending.UNSOLICITED_RESPONSE:
                logger.log(
                    ACTIONS[Ending.UNSOLICITED_RESPONSE].log_level,
                    "Controller %d: %s (%s) from broker %s; closing the connection",
                    self.options.controller_id, result.ending.value, result.detail, msg.node_text(s.node),
                )
                self._close(s)
                return
            self._finish_try(s, result)

        return on_frame

    def _on_lost(self, s: _Sender) -> Callable[[Connection, str], None]:
        def on_lost(conn: Connection, reason: str) -> None:
            if s.conn is not conn:
                return
            s.conn = None
            if s.state.in_flight is not None:
                self._finish_try(s, TryResult(Ending.CONNECTION_LOST, detail=reason))

        return on_lost

    def _close(self, s: _Sender) -> None:
        conn, s.conn = s.conn, None
        if conn is not None:
            conn.close()

    # ------------------------------------------------------------------ metrics

    def metrics(self) -> ChannelMetrics:
        now = self._loop.time() if self._loop is not None else 0.0
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
