"""Harness for the transport tests: real loopback servers that answer like a broker's socket layer.

- ``Responder`` is an asyncio server on 127.0.0.1 (port 0) that decodes each request frame with
  ctrlbatch.requests, records it, and answers with a real response body at the request's
  version (error NONE), unless its fault plan says otherwise for that request (by its index
  among all requests this server received): close without answering, delay, hang, answer with a
  wrong correlation id, answer with an undecodable body, answer twice. It also records a
  violation when a second request arrives on a connection before the first was answered.
- ``ServerThread`` runs responders on an event loop of their own in a thread, for the tests of
  the threaded ControllerChannelManager.
- ``make_requests`` produces genuine OutboundRequests with the batch engine (RecordingTransport):
  request i to each broker is an UpdateMetadata with controller epoch i, so order is visible.

Tests reach all of this through the ``tt`` fixture (pytest runs with --import-mode=importlib).
"""

from __future__ import annotations

import asyncio
import os
import threading
import types
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, TypeVar

import attrs
import pytest

from ctrlbatch.batch import ControllerBrokerRequestBatch, OutboundRequest, RecordingTransport
from ctrlbatch.context import Broker, ControllerContext, EndPoint, SecurityProtocol
from ctrlbatch.requests import (
    FrameReader,
    LeaderAndIsrResponse,
    StopReplicaResponse,
    UpdateMetadataResponse,
    decode_request,
    encode_response,
)

T = TypeVar("T")
RESPONSES = {4: LeaderAndIsrResponse, 5: StopReplicaResponse, 6: UpdateMetadataResponse}
CONTROLLER_ID = 0
TEST_TIMEOUT = 20.0  # seconds: the bound of every wait in these tests


@attrs.define
class Received:
    conn: int
    correlation_id: int
    api_key: int
    version: int
    client_id: str | None
    controller_epoch: int
    broker_epoch: int
    at: float  # the server loop's time when the frame was handled


FaultPlan = Callable[[int], str] | Mapping[int, str] | None


class _ServerConn(asyncio.Protocol):
    def __init__(self, server: Responder, index: int) -> None:
        self.server = server
        self.index = index
        self.reader = FrameReader()
        self.pending: list[bytes] = []
        self.busy = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.open.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.open.discard(self)

    def data_received(self, data: bytes) -> None:
        for frame in self.reader.feed(data):
            if self.busy or self.pending:
                self.server.violations.append(f"connection {self.index}: a request arrived before the reply")
            self.pending.append(frame)
        self._next()

    def _next(self) -> None:
        while not self.busy and self.pending and self.transport is not None and not self.transport.is_closing():
            self._handle(self.pending.pop(0))

    def _handle(self, frame: bytes) -> None:
        server = self.server
        req = decode_request(frame)
        h, body = req.header, req.body
        n = len(server.received)
        server.received.append(
            Received(self.index, h.correlation_id, h.request_api_key, h.request_api_version, h.client_id,
                     body.controller_epoch, body.broker_epoch, asyncio.get_running_loop().time())
        )
        action = server.action_for(n)
        assert self.transport is not None
        if action == "close":
            self.transport.close()
            return
        self.busy = True
        key, version, cid = h.request_api_key, h.request_api_version, h.correlation_id
        if action == "hang":
            return
        if action.startswith("delay:"):
            asyncio.get_running_loop().call_later(float(action[6:]), self._reply, key, version, cid, 1)
            return
        if action == "bad_cid":
            self._reply(key, version, cid + 1000, 1)
        elif action == "garbage":
            self._write(cid.to_bytes(4, "big") + b"\x00")
        elif action == "extra":
            self._reply(key, version, cid, 2)
        else:
            assert action == "answer", action
            self._reply(key, version, cid, 1)

    def _write(self, frame_body: bytes) -> None:
        assert self.transport is not None
        self.transport.write(len(frame_body).to_bytes(4, "big") + frame_body)
        self.busy = False

    def _reply(self, key: int, version: int, cid: int, times: int) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        frame = encode_response(RESPONSES[key](error_code=0), key, version, cid)
        for _ in range(times):
            self.transport.write(frame)
        self.busy = False
        self._next()


class Responder:
    """A minimal broker socket layer on 127.0.0.1 that answers control requests (see module doc)."""

    def __init__(self, faults: FaultPlan = None) -> None:
        self.faults = faults
        self.received: list[Received] = []
        self.violations: list[str] = []
        self.connections = 0
        self.open: set[_ServerConn] = set()
        self.server: asyncio.Server | None = None
        self.port = 0

    def action_for(self, n: int) -> str:
        f = self.faults
        if f is None:
            return "answer"
        if callable(f):
            return f(n)
        return f.get(n, "answer")

    def _protocol(self) -> _ServerConn:
        self.connections += 1
        return _ServerConn(self, self.connections - 1)

    async def start(self) -> int:
        self.server = await asyncio.get_running_loop().create_server(self._protocol, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            for c in list(self.open):
                if c.transport is not None:
                    c.transport.abort()
            await self.server.wait_closed()
            self.server = None

    def epochs(self) -> list[int]:
        """Controller epochs of the requests received, in arrival order."""
        return [r.controller_epoch for r in self.received]


class ServerThread:
    """An event loop in a thread hosting responders (for tests of the threaded manager)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="test-responders", daemon=True)
        self.thread.start()
        self.responders: list[Responder] = []

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(TEST_TIMEOUT)

    def responder(self, faults: FaultPlan = None) -> Responder:
        r = Responder(faults)
        self.run(r.start())
        self.responders.append(r)
        return r

    def close(self) -> None:
        for r in self.responders:
            self.run(r.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TEST_TIMEOUT)
        self.loop.close()


def broker(broker_id: int, port: int, host: str = "127.0.0.1") -> Broker:
    return Broker(broker_id, [EndPoint(host, port, "PLAINTEXT", SecurityProtocol.PLAINTEXT)])


def make_requests(brokers: Iterable[Broker], count: int, first_epoch: int = 1) -> dict[int, list[OutboundRequest]]:
    """count UpdateMetadata requests per broker from the batch engine; request i has controller epoch first_epoch + i."""
    brokers = list(brokers)
    context = ControllerContext()
    context.set_live_brokers({b: 100 + b.id for b in brokers})
    recorder = RecordingTransport()
    batch = ControllerBrokerRequestBatch(CONTROLLER_ID, context, "3.9-IV0", recorder)
    for i in range(count):
        batch.new_batch()
        batch.add_update_metadata_request_for_brokers([b.id for b in brokers])
        batch.send_requests_to_brokers(first_epoch + i)
    return {bid: [r for r, _ in sent] for bid, sent in recorder.sent.items()}


def open_fds() -> set[str]:
    """This process's open file descriptors (sockets show as socket:[inode])."""
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.add(f"{fd}:{os.readlink(f'/proc/self/fd/{fd}')}")
        except OSError:
            continue
    return out


def sockets_of(fds: set[str]) -> set[str]:
    return {f for f in fds if "socket:" in f}


def wait_for(predicate: Callable[[], bool], timeout: float = TEST_TIMEOUT) -> None:
    """Poll predicate (every 5 ms) until true; AssertionError after timeout seconds."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.005)


@pytest.fixture
def servers() -> Any:
    st = ServerThread()
    yield st
    st.close()


@pytest.fixture
def tt() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        Responder=Responder, ServerThread=ServerThread, broker=broker, make_requests=make_requests,
        open_fds=open_fds, sockets_of=sockets_of, wait_for=wait_for, TEST_TIMEOUT=TEST_TIMEOUT,
        CONTROLLER_ID=CONTROLLER_ID, RESPONSES=RESPONSES,
    )
