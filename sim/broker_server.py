"""SimulatedBroker: a BrokerState behind an asyncio server on 127.0.0.1, with fault injection.

Rules:
- Only LeaderAndIsr, StopReplica and UpdateMetadata are enabled on this (ZooKeeper broker)
  listener, and ApiVersions (api_versions.py); anything else closes the connection (server.py has
  the framing rules). Answers that repeat topic names are budgeted before they are encoded
  (broker_state.answer_bytes).
- Faults (``BrokerFaults``, changeable at any time): ``close_at`` request ordinals (1-based, over
  the broker's life) are dropped unanswered and unapplied with the connection closed;
  ``hang_up_at`` ordinals are applied and answered, then the connection is closed;
  ``delay`` seconds pass before each reply (the request is applied first); ``error_code``
  answers every request with Kafka's error response for that code, unapplied. ``refuse(s)``
  stops listening for s seconds; ``kill()`` drops the listener and every connection and loses
  the in-memory state; ``restart()`` listens again on the same port with a fresh state.
- ``decoder``: a SharedDecoder shared with other simulated brokers of this process (optional).
- State changes go through ``state_lock`` (Kafka's replicaStateChangeLock, handler_threads.py): a
  request that came in a big frame is applied on a handler thread, the others on the loop when the
  lock is free. The request-only part of an UpdateMetadata (its live brokers) is prepared before
  the lock is taken. Readers of ``state`` off the loop's fast path hold the lock too.
- ``received`` records every request read (when ``record``), in order, with its connection and
  correlation id and whether it was answered: what the invariant tests compare.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import attrs

from ctrlbatch.requests import DecodedRequest
from ctrlbatch.requests.model import Message

from .broker_state import CONTROL_APIS, BrokerState, Prepared, answer_bytes, error_response
from .errors import Errors
from .handler_threads import StateChangeLock
from .server import Connection, FrameServer, Served, ServerLimits
from .shared_decode import SharedDecoder

__all__ = ["BrokerFaults", "Received", "SimulatedBroker"]

_log = logging.getLogger("ctrlbatch.sim.broker")


@attrs.define
class BrokerFaults:
    close_at: set[int] = attrs.field(factory=set)
    hang_up_at: set[int] = attrs.field(factory=set)
    """Request ordinals answered (and applied), then the connection closed."""
    delay: float = 0.0
    error_code: int | None = None
    error_at: dict[int, int] = attrs.field(factory=dict)
    """Request ordinal -> the error code answered to that request only."""


@attrs.define
class Received:
    """One request as read by the broker."""

    ordinal: int
    connection: int
    correlation_id: int
    api_key: int
    version: int
    body: Message = attrs.field(repr=False)
    answered: bool = False
    error_code: int | None = None


def _preparer(state: BrokerState, decoded: DecodedRequest) -> Callable[[], Prepared]:
    def prepare() -> Prepared:
        h = decoded.header
        try:
            return state.prepare(h.request_api_key, h.request_api_version, decoded.body)
        except Exception:  # handle() meets the same error and answers it
            return None

    return prepare


class SimulatedBroker(Served):
    """A ZooKeeper-mode broker's control-plane side on a loopback port."""

    def __init__(
        self,
        broker_id: int,
        broker_epoch: int,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_request_bytes: int | None = None,
        limits: ServerLimits | None = None,
        migration_enabled: bool = False,
        faults: BrokerFaults | None = None,
        record: bool = True,
        on_request: Callable[[SimulatedBroker, Received], None] | None = None,
        decoder: SharedDecoder | None = None,
    ) -> None:
        self.state = BrokerState(broker_id, broker_epoch, migration_enabled=migration_enabled)
        self.faults = faults if faults is not None else BrokerFaults()
        self.record = record
        self.on_request = on_request
        self.received: list[Received] = []
        self.ordinal = 0
        self.state_lock = StateChangeLock()
        self.server = FrameServer(f"broker {broker_id}", CONTROL_APIS, self._handle, host=host, port=port,
                                  max_request_bytes=max_request_bytes, limits=limits, answer_bytes=answer_bytes,
                                  **({} if decoder is None else {"decode": decoder.decode}))
        self._refuse_task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"SimulatedBroker(id={self.broker_id}, {self.server.host}:{self.server.port})"

    @property
    def broker_id(self) -> int:
        return self.state.broker_id

    async def start(self) -> None:
        await self.server.start()

    async def stop(self) -> None:
        if self._refuse_task is not None:
            self._refuse_task.cancel()
            await asyncio.gather(self._refuse_task, return_exceptions=True)
            self._refuse_task = None
        await self.server.close()

    async def kill(self) -> None:
        """Crash: no more listening, every connection aborted; the in-memory state is gone."""
        await self.stop()

    async def restart(self, broker_epoch: int | None = None) -> None:
        """Come back on the same port with a fresh state (a new ZooKeeper epoch if given)."""
        old = self.state
        self.state = BrokerState(old.broker_id, old.broker_epoch if broker_epoch is None else broker_epoch,
                                 migration_enabled=old.migration_enabled)
        await self.server.start()

    async def refuse(self, seconds: float, *, drop: bool = False) -> None:
        """Refuse connections for ``seconds`` (open connections stay unless ``drop``), then listen again."""
        if self._refuse_task is not None:  # a new refusal replaces a pending one
            self._refuse_task.cancel()
            await asyncio.gather(self._refuse_task, return_exceptions=True)
        await self.server.close_listener()
        if drop:
            await self.server.drop_connections()

        async def reopen() -> None:
            await asyncio.sleep(seconds)
            await self.server.start()

        self._refuse_task = asyncio.get_running_loop().create_task(reopen())

    async def _handle(self, conn: Connection, decoded: DecodedRequest) -> Message | None:
        h = decoded.header
        self.ordinal += 1
        rec = Received(self.ordinal, conn.number, h.correlation_id, h.request_api_key, h.request_api_version, decoded.body)
        if self.record:
            self.received.append(rec)
        if self.on_request is not None:
            self.on_request(self, rec)
        faults = self.faults
        if self.ordinal in faults.close_at:
            _log.info("%s: fault: closing the connection on request #%d", self, self.ordinal)
            return None
        code = faults.error_at.get(self.ordinal, faults.error_code)
        if code is not None:
            response = error_response(h.request_api_key, h.request_api_version, decoded.body, code)
        else:
            state = self.state
            response = await self.state_lock.run(_preparer(state, decoded), self._apply(state, decoded, self.ordinal),
                                                 offload=conn.offload)
        if faults.delay > 0:
            await asyncio.sleep(faults.delay)
        if conn.transport is None:
            return None
        rec.answered = True
        rec.error_code = getattr(response, "error_code", None)
        if self.ordinal in faults.hang_up_at:
            conn.hang_up_after_reply = True
        return response

    def _apply(self, state: BrokerState, decoded: DecodedRequest, ordinal: int) -> Callable[[Prepared], Message]:
        """The state change of one request, to run under the state lock (on any thread)."""
        h = decoded.header
        key, version, body = h.request_api_key, h.request_api_version, decoded.body

        def apply(prepared: Prepared) -> Message:
            try:
                return state.handle(key, version, body, prepared)
            except Exception:  # KafkaApis.handle: any handler exception is an error response (-1)
                _log.exception("%s: error handling request #%d", self, ordinal)
                return error_response(key, version, body, Errors.UNKNOWN_SERVER_ERROR)

        return apply
