"""A small asyncio frame server shared by the simulated broker and the controller endpoint.

Rules (kafka-controller-channel.md §6):
- One asyncio Protocol per connection. Bytes go through a FrameReader bounded by
  ``max_request_bytes`` (socket.request.max.bytes): a size prefix < 0 or above it closes the
  connection at once, before the frame is read or allocated; no response is sent.
- A frame whose api key is not enabled on this listener, whose version is out of range, or whose
  body does not decode closes the connection without a response.
- Requests of one connection are handled strictly one after another (Kafka mutes a connection
  until its response is written). A frame that arrives while an earlier one is unanswered is
  queued and counted in ``pipelined`` (a controller must never do that).
- The server hands each decoded request to ``handler(conn, decoded) -> Awaitable[Message | None]``;
  None means "close the connection without answering" (a fault); a handler that sets
  ``conn.hang_up_after_reply`` gets its reply written, then the connection closed.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Awaitable, Callable

import attrs

from ctrlbatch.requests import DecodedRequest, DecodeError, FrameReader, decode_request, encode_response
from ctrlbatch.requests.errors import UnsupportedVersionError
from ctrlbatch.requests.model import Message

from .loopback import check_loopback

__all__ = ["Connection", "FrameServer", "Served", "ServerStats"]

_log = logging.getLogger("ctrlbatch.sim.server")

Handler = Callable[["Connection", DecodedRequest], Awaitable[Message | None]]


@attrs.define
class ServerStats:
    """Counters over the server's life: requests by api key, bytes, service latencies (s)."""

    requests: dict[int, int] = attrs.field(factory=dict)
    bytes_in: int = 0
    bytes_out: int = 0
    latencies: list[float] = attrs.field(factory=list)
    connections: int = 0
    closed_by_server: int = 0
    rejected_frames: int = 0
    pipelined: int = 0


class Connection(asyncio.Protocol):
    """One accepted connection: reads frames, answers them one at a time."""

    def __init__(self, server: FrameServer, number: int) -> None:
        self.server = server
        self.number = number
        self.transport: asyncio.Transport | None = None
        self._reader = FrameReader(server.max_request_bytes)
        self._pending: collections.deque[tuple[bytes, float]] = collections.deque()
        self._task: asyncio.Task[None] | None = None
        self.closed = asyncio.get_running_loop().create_future()
        self.hang_up_after_reply = False
        """Set by a handler: write this reply, then close the connection gracefully."""

    def __repr__(self) -> str:
        return f"Connection(#{self.number} to {self.server.name})"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.connections.add(self)
        self.server.stats.connections += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        self.transport = None
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if not self.closed.done():
            self.closed.set_result(None)

    def data_received(self, data: bytes) -> None:
        self.server.stats.bytes_in += len(data)
        try:
            frames = self._reader.feed(data)
        except DecodeError as e:
            _log.warning("%s: %s; closing the connection", self, e)
            self.server.stats.rejected_frames += 1
            self.close()
            return
        now = time.perf_counter()
        for frame in frames:
            if self._pending or (self._task is not None and not self._task.done()):
                self.server.stats.pipelined += 1
            self._pending.append((frame, now))
        if self._pending and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._serve())

    def close(self) -> None:
        """Close without answering what is pending (the server's side of a disconnect)."""
        if self.transport is not None:
            self.server.stats.closed_by_server += 1
            self.transport.abort()

    async def _serve(self) -> None:
        while self._pending and self.transport is not None:
            frame, t0 = self._pending.popleft()
            try:
                decoded = self.server.decode(frame)
            except (DecodeError, UnsupportedVersionError) as e:
                _log.warning("%s: undecodable request (%s); closing the connection", self, e)
                self.server.stats.rejected_frames += 1
                self.close()
                return
            h = decoded.header
            if h.request_api_key not in self.server.api_keys:
                _log.warning("%s: api key %d is not enabled on this listener; closing the connection",
                             self, h.request_api_key)
                self.server.stats.rejected_frames += 1
                self.close()
                return
            stats = self.server.stats
            stats.requests[h.request_api_key] = stats.requests.get(h.request_api_key, 0) + 1
            response = await self.server.handler(self, decoded)
            if response is None or self.transport is None:
                self.close()
                return
            out = encode_response(response, h.request_api_key, h.request_api_version, h.correlation_id)
            self.transport.write(out)
            stats.bytes_out += len(out)
            stats.latencies.append(time.perf_counter() - t0)
            if self.hang_up_after_reply:
                stats.closed_by_server += 1
                self.transport.close()  # flushes the reply first, unlike abort()
                return


class FrameServer:
    """Listens on a loopback host; ``start()`` binds (port 0 picks one), ``close()`` stops listening."""

    def __init__(
        self,
        name: str,
        api_keys: frozenset[int],
        handler: Handler,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_request_bytes: int = 104857600,
        decode: Callable[[bytes], DecodedRequest] = decode_request,
    ) -> None:
        self.name = name
        self.decode = decode
        self.api_keys = api_keys
        self.handler = handler
        self.host = check_loopback(host)
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {port}")
        if max_request_bytes < 0:
            raise ValueError(f"max_request_bytes must be >= 0, got {max_request_bytes}")
        self.port = port
        self.max_request_bytes = max_request_bytes
        self.stats = ServerStats()
        self.connections: set[Connection] = set()
        self._server: asyncio.Server | None = None
        self._closed_servers: list[asyncio.Server] = []
        self._number = 0

    def __repr__(self) -> str:
        return f"FrameServer({self.name}, {self.host}:{self.port}, {'listening' if self.listening else 'closed'})"

    @property
    def listening(self) -> bool:
        return self._server is not None

    def _protocol(self) -> Connection:
        self._number += 1
        return Connection(self, self._number)

    async def start(self) -> None:
        if self._server is not None:
            return
        loop = asyncio.get_running_loop()
        server = await loop.create_server(self._protocol, self.host, self.port, reuse_address=True)
        self._server = server
        self.port = server.sockets[0].getsockname()[1]

    async def close_listener(self) -> None:
        """Stop accepting (connects are refused); open connections stay. (Server.close() closes the
        listening sockets at once; wait_closed() is left to close(), since from Python 3.12 it
        also waits for the open connections.)"""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            self._closed_servers.append(server)

    async def drop_connections(self) -> None:
        """Abort every open connection and wait until each is gone."""
        conns = list(self.connections)
        for c in conns:
            c.close()
        if conns:
            await asyncio.gather(*(c.closed for c in conns))

    async def close(self) -> None:
        await self.close_listener()
        await self.drop_connections()
        servers, self._closed_servers = self._closed_servers, []
        for server in servers:
            await server.wait_closed()


class Served:
    """What serves through a FrameServer ``server`` (the simulated broker, the controller endpoint)
    shows its bound address as its own."""

    server: FrameServer

    @property
    def host(self) -> str:
        return self.server.host

    @property
    def port(self) -> int:
        return self.server.port
