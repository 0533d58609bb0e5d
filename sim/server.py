"""A small asyncio frame server shared by the simulated broker and the controller endpoint.

Rules (kafka-controller-channel.md §6; Kafka's names for the limits, in ServerLimits):
- One asyncio BufferedProtocol per connection. A size prefix < 0 or above ``max_request_bytes``
  (socket.request.max.bytes) closes the connection at once, before the frame is read or
  allocated; no response is sent.
- Memory: a frame's size is reserved in the server's MemoryPool (queued.max.request.bytes) when
  its prefix is read, and the frame is read straight into a buffer of exactly that size (no
  growth, no copy); the reservation is released once the frame is decoded. While a reservation
  waits, the connection is not read (memory_pool.py has the rules). Small frames are parsed out
  of one scratch buffer shared by the server's connections; a connection keeps at most the bytes
  of one such read while it waits.
- A frame whose api key is not enabled on this listener, whose version is out of range, or whose
  body does not decode closes the connection without a response.
- Requests of one connection are handled strictly one after another (Kafka mutes a connection
  until its response is written). A frame that arrives while an earlier one is unanswered is
  queued (at most READ_AHEAD frames, then the connection is not read) and counted in
  ``pipelined`` (a controller must never do that). A reply the client does not read stops the
  connection's handling until the transport's buffer drains.
- A frame of ``offload_request_bytes`` or more is decoded, handled and answered on a handler
  thread (handler_threads.py), so that the loop keeps serving other connections meanwhile.
- The server hands each decoded request to ``handler(conn, decoded) -> Awaitable[Message | None]``
  (``conn.offload`` says whether the frame was big); None means "close the connection without
  answering" (a fault); a handler that sets ``conn.hang_up_after_reply`` gets its reply written,
  then the connection closed.
- Connections: beyond ``max_connections`` (max.connections) a new connection is closed at once; a
  connection with nothing read, written or being handled for ``connections_max_idle_ms``
  (connections.max.idle.ms) is closed (checked a few times per period); one whose client does not
  read its replies counts as idle.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import struct
import time
from collections.abc import Awaitable, Callable

import attrs

from ctrlbatch.requests import DecodedRequest, DecodeError, decode_request, encode_response
from ctrlbatch.requests.errors import UnsupportedVersionError
from ctrlbatch.requests.model import Message

from .handler_threads import run_in_handler_thread
from .loopback import check_loopback
from .memory_pool import UNLIMITED, MemoryPool

__all__ = ["Connection", "FrameServer", "Served", "ServerLimits", "ServerStats"]

_log = logging.getLogger("ctrlbatch.sim.server")

Handler = Callable[["Connection", DecodedRequest], Awaitable[Message | None]]
_SIZE = struct.Struct(">i")
SCRATCH_BYTES = 65536
READ_AHEAD = 16
INT32_MAX = 2**31 - 1


def _at_least(low: int, *, or_minus_one: bool = False) -> Callable[[object, attrs.Attribute[int], int], None]:
    def check(_: object, attribute: attrs.Attribute[int], value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or (value < low and not (or_minus_one and value == -1)):
            extra = " (or -1)" if or_minus_one else ""
            raise ValueError(f"{attribute.name} must be an int >= {low}{extra}, got {value!r}")

    return check


@attrs.frozen
class ServerLimits:
    """A server's limits, under Kafka's names (SocketServerConfigs); -1 turns a limit off."""

    max_request_bytes: int = attrs.field(default=104857600, validator=_at_least(0))
    """socket.request.max.bytes: a larger frame closes the connection."""
    queued_max_request_bytes: int = attrs.field(default=268435456, validator=_at_least(1, or_minus_one=True))
    """queued.max.request.bytes: request bytes held by all connections at once (Kafka's default is -1)."""
    connections_max_idle_ms: int = attrs.field(default=600000, validator=_at_least(1, or_minus_one=True))
    """connections.max.idle.ms: an idle connection is closed after this long."""
    max_connections: int = attrs.field(default=INT32_MAX, validator=_at_least(0))
    """max.connections: a new connection beyond this many is closed."""
    offload_request_bytes: int = attrs.field(default=262144, validator=_at_least(0))
    """Frames this big or bigger are decoded and handled on a handler thread (ours, not Kafka's)."""


LATENCY_WINDOW = 65_536  # service latencies kept for the statistics: the latest requests


@attrs.define
class ServerStats:
    """Counters over the server's life: requests by api key, bytes, and the service latencies (s)
    of the latest ``LATENCY_WINDOW`` requests (a window, so a long-lived server's memory stays
    bounded whatever its clients send)."""

    requests: dict[int, int] = attrs.field(factory=dict)
    bytes_in: int = 0
    bytes_out: int = 0
    latencies: collections.deque[float] = attrs.field(factory=lambda: collections.deque(maxlen=LATENCY_WINDOW))
    connections: int = 0
    closed_by_server: int = 0
    rejected_frames: int = 0
    pipelined: int = 0
    refused_connections: int = 0  # beyond max_connections
    idle_closed: int = 0  # closed after connections_max_idle_ms
    offloaded: int = 0  # frames decoded and handled on a handler thread


class Connection(asyncio.BufferedProtocol):
    """One accepted connection: reads frames, answers them one at a time."""

    def __init__(self, server: FrameServer, number: int) -> None:
        self.server = server
        self.number = number
        self.transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._head = bytearray()  # the size prefix being read
        self._body: bytearray | None = None  # the frame being read, allocated at its full size
        self._got = 0
        self._wanted = 0  # a frame size waiting for the pool
        self._stash = b""  # bytes read past a frame whose reservation waits
        self._pending: collections.deque[tuple[bytearray, float]] = collections.deque()
        self._task: asyncio.Task[None] | None = None
        self._reading = True
        self._handling = False
        self._closing = False
        self._can_write = asyncio.Event()
        self._can_write.set()
        self.last_active = self._loop.time()
        self.closed = self._loop.create_future()
        self.offload = False
        """True while the request being handled came in a big frame (handle it off the loop too)."""
        self.hang_up_after_reply = False
        """Set by a handler: write this reply, then close the connection gracefully."""

    def __repr__(self) -> str:
        return f"Connection(#{self.number} to {self.server.name})"

    # ------------------------------------------------------------------ asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        server = self.server
        if len(server.connections) >= server.limits.max_connections:
            server.stats.refused_connections += 1
            _log.warning("%s: max.connections (%d) reached; closing the new connection", self,
                         server.limits.max_connections)
            transport.abort()
            return
        server.connections.add(self)
        server.stats.connections += 1

    def connection_lost(self, exc: Exception | None) -> None:
        server = self.server
        server.connections.discard(self)
        self.transport = None
        if self._wanted:
            server.pool.cancel(self)
            self._wanted = 0
        elif self._body is not None:
            server.pool.release(len(self._body))
        self._body = None
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._release_pending()  # a task cancelled before its first step runs no finally
        self._can_write.set()
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    def get_buffer(self, sizehint: int) -> memoryview:
        body = self._body
        if body is not None and self._got < len(body):
            return memoryview(body)[self._got:]  # straight into the frame: the read stops at its end
        return self.server.scratch

    def buffer_updated(self, nbytes: int) -> None:
        self.server.stats.bytes_in += nbytes
        self.last_active = self._loop.time()
        body = self._body
        if body is not None and self._got < len(body):
            self._got += nbytes
            if self._got == len(body):
                self._frame_done()
        else:
            self._feed(self.server.scratch[:nbytes])
        self._update_reading()

    def eof_received(self) -> bool | None:
        return None  # close; the requests read so far are dropped as on a reset

    # ------------------------------------------------------------------ framing

    def _feed(self, data: memoryview) -> None:
        """Parse bytes read into the scratch buffer: prefixes, whole small frames, the start of a big one."""
        pos, end = 0, len(data)
        while pos < end and not self._closing:
            if self._wanted:  # a reservation waits: keep the rest for later
                self._stash = bytes(data[pos:])
                return
            body = self._body
            if body is None:
                take = min(4 - len(self._head), end - pos)
                self._head += data[pos:pos + take]
                pos += take
                if len(self._head) == 4:
                    (size,) = _SIZE.unpack(self._head)
                    self._head.clear()
                    self._start_frame(size)
                continue
            take = min(len(body) - self._got, end - pos)
            body[self._got:self._got + take] = data[pos:pos + take]
            self._got += take
            pos += take
            if self._got == len(body):
                self._frame_done()

    def _start_frame(self, size: int) -> None:
        limit = self.server.limits.max_request_bytes
        if size < 0 or size > limit:
            _log.warning("%s: invalid frame size %d (the limit is %d); closing the connection", self, size, limit)
            self.server.stats.rejected_frames += 1
            self.close()
            return
        if self.server.pool.reserve(size, self, self._granted):
            self._begin(size)
        else:
            self._wanted = size

    def _begin(self, size: int) -> None:
        self._body = bytearray(size)
        self._got = 0
        if size == 0:
            self._frame_done()

    def _granted(self) -> None:
        size, self._wanted = self._wanted, 0
        if self.transport is None:  # closed meanwhile (cancel() normally prevents this)
            self.server.pool.release(size)
            return
        self._begin(size)
        stash, self._stash = self._stash, b""
        if stash:
            self._feed(memoryview(stash))
        self._update_reading()

    def _frame_done(self) -> None:
        frame, self._body = self._body, None
        assert frame is not None
        self.last_active = self._loop.time()
        if self._pending or (self._task is not None and not self._task.done()):
            self.server.stats.pipelined += 1
        self._pending.append((frame, time.perf_counter()))
        if self._task is None or self._task.done():
            self._task = self._loop.create_task(self._serve())

    def _update_reading(self) -> None:
        t = self.transport
        if t is None or self._closing:
            return
        want = not self._wanted and len(self._pending) < READ_AHEAD
        if want != self._reading:
            self._reading = want
            if want:
                t.resume_reading()
            else:
                t.pause_reading()

    def _release_pending(self) -> None:
        pool = self.server.pool
        while self._pending:
            frame, _ = self._pending.popleft()
            pool.release(len(frame))

    @property
    def busy(self) -> bool:
        """A request is being handled or waits for memory: not idle, whatever the clock says. (A reply
        the client does not read is not: such a connection idles out.)"""
        return bool(self._wanted) or self._handling

    def close(self) -> None:
        """Close without answering what is pending (the server's side of a disconnect)."""
        if self.transport is not None and not self._closing:
            self._closing = True
            self.server.stats.closed_by_server += 1
            self.transport.abort()

    # ------------------------------------------------------------------ handling

    async def _decode(self, frame: bytearray, offload: bool) -> DecodedRequest | None:
        server = self.server
        try:
            try:
                decoded = await run_in_handler_thread(server.decode, frame) if offload else server.decode(frame)
            finally:
                server.pool.release(len(frame))
        except (DecodeError, UnsupportedVersionError) as e:
            _log.warning("%s: undecodable request (%s); closing the connection", self, e)
            server.stats.rejected_frames += 1
            self.close()
            return None
        key = decoded.header.request_api_key
        if key not in server.api_keys:
            _log.warning("%s: api key %d is not enabled on this listener; closing the connection", self, key)
            server.stats.rejected_frames += 1
            self.close()
            return None
        return decoded

    async def _serve(self) -> None:
        stats = self.server.stats
        try:
            while self._pending and self.transport is not None:
                frame, t0 = self._pending.popleft()
                self._handling = True
                self._update_reading()
                self.offload = offload = len(frame) >= self.server.limits.offload_request_bytes
                stats.offloaded += offload
                decoded = await self._decode(frame, offload)
                if decoded is None:
                    return
                h = decoded.header
                stats.requests[h.request_api_key] = stats.requests.get(h.request_api_key, 0) + 1
                response = await self.server.handler(self, decoded)
                if response is None or self.transport is None:
                    self.close()
                    return
                args = (response, h.request_api_key, h.request_api_version, h.correlation_id)
                out = await run_in_handler_thread(encode_response, *args) if offload else encode_response(*args)
                if self.transport is None:
                    return
                self.transport.write(out)
                self.last_active = self._loop.time()
                stats.bytes_out += len(out)
                stats.latencies.append(time.perf_counter() - t0)
                if self.hang_up_after_reply:
                    stats.closed_by_server += 1
                    self._closing = True
                    self.transport.close()  # flushes the reply first, unlike abort()
                    return
                self._handling = False
                await self._can_write.wait()
        finally:
            self._release_pending()
            self._handling = self.offload = False


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
        max_request_bytes: int | None = None,
        limits: ServerLimits | None = None,
        decode: Callable[[bytearray], DecodedRequest] = decode_request,
    ) -> None:
        self.name = name
        self.decode = decode
        self.api_keys = api_keys
        self.handler = handler
        self.host = check_loopback(host)
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {port}")
        self.port = port
        self.stats = ServerStats()
        self.connections: set[Connection] = set()
        self.scratch = memoryview(bytearray(SCRATCH_BYTES))
        self.limits = ServerLimits()
        self.pool = MemoryPool()
        self.configure(limits or ServerLimits(), max_request_bytes=max_request_bytes)
        self._server: asyncio.Server | None = None
        self._closed_servers: list[asyncio.Server] = []
        self._idle_task: asyncio.Task[None] | None = None
        self._number = 0

    def __repr__(self) -> str:
        return f"FrameServer({self.name}, {self.host}:{self.port}, {'listening' if self.listening else 'closed'})"

    def configure(self, limits: ServerLimits, *, max_request_bytes: int | None = None) -> None:
        """Set the limits; only while nothing is connected (reservations belong to one pool)."""
        if getattr(self, "connections", None):
            raise RuntimeError(f"{self!r}: configure() with {len(self.connections)} connections open")
        if not isinstance(limits, ServerLimits):
            raise TypeError(f"limits must be a ServerLimits, got {limits!r}")
        if max_request_bytes is not None:
            limits = attrs.evolve(limits, max_request_bytes=max_request_bytes)
        self.limits = limits
        self.pool = MemoryPool(limits.queued_max_request_bytes if limits.queued_max_request_bytes > 0 else UNLIMITED)

    @property
    def max_request_bytes(self) -> int:
        return self.limits.max_request_bytes

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
        if self._idle_task is None and self.limits.connections_max_idle_ms > 0:
            self._idle_task = loop.create_task(self._close_idle(self.limits.connections_max_idle_ms / 1000.0))

    async def _close_idle(self, idle: float) -> None:
        """Close connections idle for ``idle`` seconds; looks a few times per period (at most every second)."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(1.0, idle / 4))
            expired = loop.time() - idle
            for c in [c for c in self.connections if c.last_active <= expired and not c.busy]:
                _log.info("%s: idle for %d ms (connections.max.idle.ms); closing it", c,
                          self.limits.connections_max_idle_ms)
                self.stats.idle_closed += 1
                c.close()

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
        if self._idle_task is not None:
            self._idle_task.cancel()
            await asyncio.gather(self._idle_task, return_exceptions=True)
            self._idle_task = None
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
