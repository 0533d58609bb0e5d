"""ControllerEndpoint: ControllerState behind an asyncio server on 127.0.0.1 (the controller listener).

Rules:
- Only BrokerRegistration (62) and BrokerHeartbeat (63) are enabled on this listener, and
  ApiVersions (api_versions.py: a real broker asks it first); anything else closes the
  connection, as in server.py. The connection a request came on is its source for the
  max_brokers rule (controller_state.py: fake ids cannot lock new brokers out). Replies go out at once: every record is
  "committed" when written (kafka-broker-registration.md §2 step 6, with an instant log).
- Never silence: every request decoded here gets its answer, and one that cannot be decoded
  closes the connection. A failure anywhere after the state changed (a callback that raises)
  is logged in one line and does not hold the answer back; a failure before (a bug in the
  state) answers UNKNOWN_SERVER_ERROR (-1) and the controller renounces (ControllerState.renounce),
  as QuorumController does; ``on_renounce(leader epoch)`` then tells the caller that a new
  controller term began. A decoder that raised anything but DecodeError would close the connection too.
- The clock is ``time.monotonic`` in milliseconds unless one is given. A background task fences
  brokers whose session expired, at the earliest expiry (checked at least every 100 ms). It
  survives any failure of a round (one log line each, rate-limited) and goes on fencing.
- A fencing round that wakes more than LATE_S after it asked to has found its own loop
  overloaded: the heartbeats that arrived meanwhile are still unread in the sockets, so it
  fences nobody for LATE_S and lets the loop read them first (Kafka's controller likewise
  refreshes a heartbeat that waited in its overloaded queue instead of fencing, QC:2241-2246).
- Fault: ``stall(s)`` blocks the event queue for s seconds; a heartbeat kept waiting past half the
  heartbeat interval is answered REQUEST_TIMED_OUT (7).
- Every BrokerEvent (joined, bounced, fenced...) goes to ``on_events`` with the registration it
  concerns, on the loop's thread: that is how registrations feed a controller (cluster.py).
  ``events`` keeps the latest EVENTS_KEPT of them (memory stays bounded under a registration flood).
- Log lines go through a RateLimiter (safe_log.py): repeats of a kind are summarised, and the
  text a broker sent (listener hosts, racks) is quoted.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable

from ctrlbatch.requests import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    DecodedRequest,
    DecodeError,
    decode_request,
)
from ctrlbatch.requests.model import Message

from .controller_state import BrokerEvent, ControllerConfig, ControllerState
from .errors import Errors
from .safe_log import RateLimiter, describe, kind_of
from .server import Connection, FrameServer, Served

__all__ = ["ControllerEndpoint"]

_log = logging.getLogger("ctrlbatch.sim.controller")
REGISTRATION_APIS = frozenset({62, 63})
EVENTS_KEPT = 10000
FENCE_RETRY_S = 0.1
LATE_S = 0.5


def _decode(frame: bytearray) -> DecodedRequest:
    """decode_request, with anything it might raise besides DecodeError made one (a codec bug
    must close the connection, not leave the request unanswered)."""
    try:
        return decode_request(frame)
    except DecodeError:
        raise
    except Exception as e:  # noqa: BLE001 - see the docstring
        raise DecodeError(f"the decoder failed: {describe(e)}", message="request") from None


class ControllerEndpoint(Served):
    """The KRaft controller's registration endpoint for simulated (or real) brokers."""

    def __init__(
        self,
        config: ControllerConfig,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        on_events: Callable[[list[BrokerEvent]], None] | None = None,
        on_renounce: Callable[[int], None] | None = None,
        leads_partitions: Callable[[int], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = ControllerState(config, leads_partitions=leads_partitions)
        self.on_events = on_events
        self.on_renounce = on_renounce
        self.clock = clock
        self.events: collections.deque[BrokerEvent] = collections.deque(maxlen=EVENTS_KEPT)
        self.failures = 0
        """Failures caught and logged: callbacks that raised, fencing rounds that failed."""
        self.limiter = RateLimiter(burst=20, interval_s=10.0)
        self.server = FrameServer("controller", REGISTRATION_APIS, self._handle, host=host, port=port, decode=_decode)
        self._expiry: asyncio.Task[None] | None = None
        self._stalled_until = 0.0
        self.late_rounds = 0
        """Fencing rounds skipped because the loop woke them late (see the module rules)."""

    def __repr__(self) -> str:
        return f"ControllerEndpoint({self.server.host}:{self.server.port}, {self.state!r})"

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    async def start(self) -> None:
        await self.server.start()
        if self._expiry is None:
            self._expiry = asyncio.get_running_loop().create_task(self._fence_loop(), name="controller-session-expiry")

    async def stop(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            await asyncio.gather(self._expiry, return_exceptions=True)
            self._expiry = None
        await self.server.close()

    @property
    def fencing(self) -> bool:
        """Is the session-expiry task running?"""
        return self._expiry is not None and not self._expiry.done()

    def _line(self, level: int, kind: str, message: str, *args: object) -> None:
        """One log line, unless lines of this kind are being rate-limited (then counted)."""
        admitted, suppressed = self.limiter.admit(kind)
        if admitted:
            more = f" [{suppressed} similar suppressed]" if suppressed else ""
            _log.log(level, message + more, *args)

    def _failed(self, what: str, e: BaseException) -> None:
        self.failures += 1
        self._line(logging.ERROR, kind_of(what), "controller endpoint: %s failed: %s", what, describe(e))

    def _emit(self, events: list[BrokerEvent]) -> None:
        if not events:
            return
        self.events.extend(events)
        for e in events:
            self._line(logging.INFO, f"event {e.kind.value}", "broker %d %s (epoch %d)", e.broker_id, e.kind.value, e.epoch)
        if self.on_events is not None:
            try:
                self.on_events(events)
            except Exception as e:  # noqa: BLE001 - the state has changed; the answer must still go out
                self._failed(f"applying {', '.join(f'broker {x.broker_id} {x.kind.value}' for x in events[:3])}", e)

    def _renounced(self) -> None:
        if self.on_renounce is not None:
            try:
                self.on_renounce(self.state.leader_epoch)
            except Exception as e:  # noqa: BLE001
                self._failed(f"starting controller term {self.state.leader_epoch}", e)

    def stall(self, seconds: float) -> None:
        """Fault: the event queue is blocked for ``seconds`` from now (an overloaded controller).
        Requests read meanwhile wait; a heartbeat that waits past its deadline is answered 7."""
        if not seconds >= 0:
            raise ValueError(f"seconds must be >= 0, got {seconds!r}")
        self._stalled_until = max(self._stalled_until, self.clock() + seconds)

    async def _handle(self, conn: Connection, decoded: DecodedRequest) -> Message | None:
        body = decoded.body
        received_ms = self.now_ms()
        while (wait := self._stalled_until - self.clock()) > 0:
            await asyncio.sleep(wait)
        response: Message
        leader_epoch = self.state.leader_epoch
        try:
            if isinstance(body, BrokerRegistrationRequest):
                response, events = self.state.register(body, self.now_ms(), source=conn.number)
            elif isinstance(body, BrokerHeartbeatRequest):
                response, events = self.state.heartbeat(body, self.now_ms(), received_ms=received_ms, source=conn.number)
            else:  # the server only lets 62 and 63 through
                return None
        except Exception as e:  # a bug: UNKNOWN_SERVER_ERROR and a failover, as QuorumController does (EHEI:67-101, QC:551-553)
            self._failed(f"handling {type(body).__name__}", e)
            self.state.renounce(self.now_ms())
            cls = BrokerRegistrationResponse if isinstance(body, BrokerRegistrationRequest) else BrokerHeartbeatResponse
            response, events = cls(error_code=Errors.UNKNOWN_SERVER_ERROR), []
        self._emit(events)
        if self.state.leader_epoch != leader_epoch:
            self._renounced()
        return response

    async def _fence_loop(self) -> None:
        grace_until = 0.0
        while True:
            try:
                nxt = self.state.next_expiry_ms()
                wait = 0.1 if nxt is None else min(0.1, max(0.0, (nxt - self.now_ms() + 1) / 1000))
                asked = time.monotonic() + wait  # real time, whatever the clock: the loop's own lateness
                await asyncio.sleep(wait)
                if time.monotonic() - asked > LATE_S:
                    self.late_rounds += 1
                    grace_until = time.monotonic() + LATE_S  # see the module rules: read the sockets first
                if time.monotonic() >= grace_until and self.clock() >= self._stalled_until:  # the fencing event waits in the same queue
                    self._emit(self.state.fence_stale_brokers(self.now_ms()))
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - fencing must go on for the other brokers
                self._failed("fencing expired sessions", e)
                await asyncio.sleep(FENCE_RETRY_S)
