"""A small asyncio frame server shared by the simulated broker and the controller endpoint.

Rules (kafka-controller-channel.md §6; Kafka's names for the limits, in ServerLimits):
- One asyncio BufferedProtocol per connection. A size prefix < 0 or above ``max_request_bytes``
  (socket.request.max.bytes) closes the connection at once, before the frame is read or
  allocated; no response is sent.
- A request read whole goes into the server's run queue (fair_queue.py: least recently served
  connection first, a request that was not pipelined counted one round earlier, so ahead of
  every connection that keeps requests waiting); each loop round starts queued requests for at
  most ``dispatch_budget_s`` (0.5 ms) and at most ``dispatch_batch`` (8) of them, then yields to
  the loop, so sockets that became readable meanwhile are read, and their requests queued,
  before the next turn. A small request is then handled on the spot (it becomes a task only if
  it has to wait), a bigger one as a task. So a polite client waits about one batch, not one
  request per flooding connection (benchmarks/server_attack_bench.py, attack 9: 20x its p99
  alone under 50 flooders when every ready connection was handled in the round that read it);
  a broker's heartbeats, one at a time and seconds apart, go ahead of any flood.
- One request in flight per connection, as Kafka does (it mutes a channel from a request's read to
  its response's send, SS:1163-1165, SS:1197-1198). At a frame boundary one read takes at most
  SCRATCH_BYTES (a prefix and a small frame) into a buffer shared by the server's connections and
  is parsed at once; a big frame's bytes go straight into its own buffer. While a request is in
  flight, at most one read more is kept (stashed: a pipelining client, counted in ``pipelined``
  with any byte already there when the answer is written, FIONREAD), then the connection is not
  read until the answer is written and the client has read it down to the transport's low-water
  mark. So a connection has at most one request in the run queue, and its requests keep their order.
- Memory, two pools of ``queued_max_request_bytes`` (queued.max.request.bytes) each, memory_pool.py:
  ``pool`` counts bytes actually received: a frame of more than SMALL_FRAME_BYTES (16 KiB; every
  heartbeat and any registration within the controller's bounds is smaller) grows in steps of
  64 KiB doubling up to 1 MiB, each reserved before it is read, so a size prefix alone holds
  64 KiB; smaller frames are always admitted (``take``), so heartbeats never wait behind big
  requests. One frame at a time may overshoot the budget (the pool's overdraft), so frames that
  share out the budget between them cannot wait for each other for ever. ``handling`` holds, from
  a frame's last byte until its answer is written, the decoded request's estimated size (frame
  bytes x DECODED_RATIO of its api), or, once it is handled, twice its answer's bytes
  (``answer_bytes``, for answers that repeat a topic name per partition: the encoder's pieces,
  then the joined answer); a big request waits for each with its connection muted. The frame's
  own bytes go back to ``pool`` once it is decoded. So a server holds about 2 x the budget plus
  one frame plus its largest request (one bigger than the budget is handled alone), plus
  SMALL_FRAME_BYTES x (1 + ratio) per connection.
- DECODED_RATIO: the decoded request's peak traced memory over its frame bytes, measured for the
  worst shapes found (tracemalloc, CPython 3.11; server_attack_bench's attack 11 prints them):
  UpdateMetadata 19.7 (brokers without endpoints), StopReplica 18.6 (v0 partitions), BrokerRegistration
  13.8 (empty listeners), BrokerHeartbeat 8.3 (offline dirs), LeaderAndIsr 7.9 (bare partitions);
  the table keeps about 10% above them.
- A frame must be complete within ``frame_timeout_ms`` of its first byte (ours; Kafka has no such
  limit, and its idle limit alone lets one byte per period hold a reservation for ever): else the
  connection is closed and what it held is released.
- A frame whose api key is not enabled on this listener, whose version is out of range, or whose
  body does not decode closes the connection without a response. ApiVersions (18) is answered by
  the server itself on every listener (api_versions.py has Kafka's rules).
- Every request ends in an answer or a close: any exception while decoding, handling or encoding
  it (a MemoryError too) closes the connection with one log line (the exception's frames are then
  cleared, so what they held is freed at once), rate-limited per kind of line
  (safe_log.RateLimiter: repeats are counted and summarised in the next line), so a client that
  pipelines and leaves costs a few lines, not one per request.
- A frame of ``offload_request_bytes`` or more is decoded, handled and encoded on a handler
  thread (handler_threads.py), and so is an answer whose ``answer_bytes`` are that many or more, so that the loop keeps serving other connections meanwhile; once the
  last such request is answered, the C heap is trimmed so its memory goes back to the system.
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

import array
import asyncio
import collections
import fcntl
import logging
import struct
import termios
import time
import traceback
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import attrs

from ctrlbatch.requests import DecodedRequest, DecodeError, decode_request, encode_response
from ctrlbatch.requests.errors import UnsupportedVersionError
from ctrlbatch.requests.model import Message

from .api_versions import API_VERSIONS_KEY, api_versions_answer
from .fair_queue import DISPATCH_BATCH, DISPATCH_BUDGET_S, FairQueue
from .handler_threads import release_free_memory, run_in_handler_thread
from .loopback import check_loopback
from .memory_pool import UNLIMITED, MemoryPool
from .safe_log import RateLimiter, describe, kind_of, safe_logging_installed

__all__ = ["Connection", "FrameServer", "Served", "ServerLimits", "ServerStats"]

_log = logging.getLogger("ctrlbatch.sim.server")

Handler = Callable[["Connection", DecodedRequest], Awaitable[Message | None]]
_Job = tuple[bytearray, int, float]  # a request waiting in the run queue: its frame, the pool bytes it holds, when read
_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")
INT32_MAX = 2**31 - 1
SMALL_FRAME_BYTES = 16384
"""Frames up to this size are always admitted (module rules)."""
SCRATCH_BYTES = 4 + SMALL_FRAME_BYTES
"""A read at a frame boundary takes at most a prefix and a small frame."""
CHUNK_BYTES = 1 << 20
"""A big frame's buffer grows by at most this much at a time, each step reserved before it is read."""
FIRST_CHUNK_BYTES = 1 << 16
"""Its first step: all a size prefix alone holds (the steps then double up to CHUNK_BYTES)."""
DECODED_RATIO: dict[int, int] = {4: 9, 5: 21, 6: 22, 18: 4, 62: 15, 63: 9}
"""api key -> decoded request bytes per frame byte, at most (module rules); 22 for other keys."""
DEFAULT_RATIO = 22


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
    """queued.max.request.bytes: request bytes received, and (separately) requests being handled, at
    once over all connections (Kafka's default is -1)."""
    connections_max_idle_ms: int = attrs.field(default=600000, validator=_at_least(1, or_minus_one=True))
    """connections.max.idle.ms: an idle connection is closed after this long."""
    max_connections: int = attrs.field(default=INT32_MAX, validator=_at_least(0))
    """max.connections: a new connection beyond this many is closed."""
    offload_request_bytes: int = attrs.field(default=262144, validator=_at_least(0))
    """Frames this big or bigger are decoded and handled on a handler thread (ours, not Kafka's)."""
    frame_timeout_ms: int = attrs.field(default=30000, validator=_at_least(1, or_minus_one=True))
    """A frame not complete this long after its first byte closes the connection (ours, not Kafka's)."""


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
    failed: int = 0  # requests whose decoding, handling or encoding raised: closed
    slow_frames: int = 0  # closed after frame_timeout_ms


def _unread(fd: int) -> int:
    """Bytes received on a socket and not yet read (FIONREAD); 0 if it cannot say."""
    out = array.array("i", [0])
    try:
        fcntl.ioctl(fd, termios.FIONREAD, out, True)
    except OSError:
        return 0
    return out[0]


def _forget_frames(e: BaseException) -> None:
    """Clear the frames of an exception chain: their locals (a half-built 3 GB answer) are freed now,
    whether or not the collector will ever see the cycles (handler_threads freezes it)."""
    seen: set[int] = set()
    x: BaseException | None = e
    while x is not None and id(x) not in seen:
        seen.add(id(x))
        traceback.clear_frames(x.__traceback__)
        x.__traceback__ = None
        x = x.__cause__ or x.__context__


def decoded_estimate(frame: bytes | bytearray | memoryview) -> int:
    """What a frame's decoded request may take (bytes): its size times its api's DECODED_RATIO."""
    key = _KEY_VERSION.unpack_from(frame, 0)[0] if len(frame) >= 4 else -1
    return len(frame) * DECODED_RATIO.get(key, DEFAULT_RATIO)


class Connection(asyncio.BufferedProtocol):
    """One accepted connection: reads one frame, answers it, then reads the next (module rules)."""

    def __init__(self, server: FrameServer, number: int) -> None:
        self.server = server
        self.number = number
        self.transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._head = bytearray(4)  # the size prefix being read
        self._head_got = 0
        self._body: bytearray | None = None  # the frame being read
        self._size = 0  # its size
        self._got = 0  # bytes of it read
        self._granted = 0  # bytes of it reserved in the pool (its buffer grows to this in get_buffer)
        self._wanted = 0  # a chunk waiting for the pool
        self._started = 0.0  # when the frame's first byte (its prefix) was read, plus pool waits
        self._wait_began = 0.0
        self._stash = b""  # bytes read past a frame while it is handled (a pipelining client): at most one read
        self._into_scratch = False  # the last get_buffer was the server's scratch buffer
        self._task: asyncio.Task[None] | None = None  # the request's task, when it had to wait
        self._inflight = False  # a request is being handled (from its last byte to its answer)
        self._more_after = False  # bytes of a next request came in the same read as this one's last
        self._pipelining = False  # bytes of the next request had come when this one's answer was written
        self._frames = 0  # frames read whole
        self._handled = 0  # bytes this connection holds in the server's handling pool
        self._fd = -1
        self._reading = True
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
            server.line(logging.WARNING, "%s: max.connections (%d) reached; closing the new connection", self,
                        server.limits.max_connections)
            transport.abort()
            return
        server.connections.add(self)
        server.stats.connections += 1
        sock = transport.get_extra_info("socket")
        self._fd = sock.fileno() if sock is not None else -1

    def connection_lost(self, exc: Exception | None) -> None:
        server = self.server
        server.connections.discard(self)
        self.transport = None
        self._drop_frame()
        for _, held, _ in server.run_queue.forget(self):  # a request not started yet
            server.pool.release(held)
            server.pool.finish(self)
        if self._task is not None and not self._task.done():
            self._task.cancel()  # its finally gives back what it holds
        self._can_write.set()
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    def get_buffer(self, sizehint: int) -> memoryview:
        body = self._body
        if body is None:
            if self._head_got == 0 and not self._stash:
                self._into_scratch = True  # a frame boundary: a prefix and a small frame in one read
                return self.server.scratch
            return memoryview(self._head)[self._head_got:]
        if len(body) < self._granted:  # grow here: asyncio has dropped its view of the last buffer
            body.extend(bytes(self._granted - len(body)))
        return memoryview(body)[self._got:self._granted]

    def buffer_updated(self, nbytes: int) -> None:
        self.server.stats.bytes_in += nbytes
        self.last_active = self._loop.time()
        if self._into_scratch:
            self._into_scratch = False
            self._feed(self.server.scratch[:nbytes])
        elif self._body is not None:
            self._got += nbytes
            if self._got == self._size:
                self._frame_done()
            elif self._got == self._granted:
                self._more()
        else:
            self._head_got += nbytes
            if self._head_got == 4 and not self._in_flight:
                self._next_frame()
        self._update_reading()

    def eof_received(self) -> bool | None:
        return None  # close; a request being handled is dropped as on a reset

    # ------------------------------------------------------------------ framing

    @property
    def _in_flight(self) -> bool:
        return self._inflight

    def _update_reading(self) -> None:
        """Read while nothing waits: not with bytes stashed, a chunk waiting for the pool, or the
        next prefix complete while a request is in flight (module rules)."""
        t = self.transport
        if t is None or self._closing:
            return
        want = not self._stash and not self._wanted and self._head_got < 4
        if want != self._reading:
            self._reading = want
            if want:
                t.resume_reading()
            else:
                t.pause_reading()

    def _feed(self, data: memoryview) -> None:
        """Bytes read at a frame boundary: a prefix, a small frame, the start of a big one; what
        comes after a complete frame (a pipelining client) is stashed until it is answered."""
        pos, end = 0, len(data)
        while pos < end and not self._closing:
            if self._in_flight or self._wanted or self._head_got == 4:
                break
            body = self._body
            if body is None:
                if self._head_got == 0:
                    self._started = self.last_active
                take = min(4 - self._head_got, end - pos)
                self._head[self._head_got:self._head_got + take] = data[pos:pos + take]
                self._head_got += take
                pos += take
                if self._head_got == 4:
                    self._more_after = pos < end
                    frames = self._frames
                    self._next_frame()
                    if self._frames != frames:  # an empty frame, done at once: the rest waits for the next round
                        break
                continue
            if len(body) < self._granted:
                body.extend(bytes(self._granted - len(body)))
            take = min(self._granted - self._got, end - pos)
            body[self._got:self._got + take] = data[pos:pos + take]
            self._got += take
            pos += take
            if self._got == self._size:
                self._more_after = pos < end
                self._frame_done()  # may be answered at once: the rest waits for the next round
                break
            if self._got == self._granted:
                self._more()
        if pos < end and not self._closing:
            self._stash = bytes(data[pos:])  # at most one read: SCRATCH_BYTES

    def _next_frame(self) -> None:
        """The prefix in _head is complete: start reading its frame."""
        (size,) = _SIZE.unpack(self._head)
        self._head_got = 0
        limit = self.server.limits.max_request_bytes
        if size < 0 or size > limit:
            self.server.line(logging.WARNING, "%s: invalid frame size %d (the limit is %d); closing the connection",
                             self, size, limit)
            self.server.stats.rejected_frames += 1
            self.close()
            return
        self._body, self._size, self._got = bytearray(), size, 0
        if size <= SMALL_FRAME_BYTES:
            self.server.pool.take(size)
            self._granted = size
            if size == 0:
                self._frame_done()
                return
        else:
            self._granted = 0
            self._more()

    def _more(self) -> None:
        """Reserve the next chunk of a big frame; the connection is not read until it is granted."""
        chunk = min(max(FIRST_CHUNK_BYTES, self._granted), CHUNK_BYTES, self._size - self._granted)
        if self.server.pool.reserve(chunk, self, self._chunk_granted, progress=True):
            self._granted += chunk
        else:
            self._wanted = chunk
            self._wait_began = self._loop.time()

    def _chunk_granted(self) -> None:
        chunk, self._wanted = self._wanted, 0
        if self.transport is None or self._body is None:  # closed meanwhile (cancel() normally prevents this)
            self.server.pool.release(chunk)
            return
        self._granted += chunk
        self._started += self._loop.time() - self._wait_began  # the wait was ours, not the client's
        self._continue()

    def _drop_frame(self) -> None:
        """Give back what the frame being read holds (a close)."""
        pool = self.server.pool
        if self._body is not None:
            pool.release(self._granted)
            self._body, self._granted = None, 0
        pool.cancel(self)  # a waiting chunk, and the overdraft (memory_pool.py)
        self._wanted = 0

    def _frame_done(self) -> None:
        frame, self._body = self._body, None
        assert frame is not None
        held, self._granted = self._granted, 0
        # One request in flight: from here at most one read more is taken (stashed), then nothing.
        self._inflight = True
        self._frames += 1
        urgent, self._pipelining = not self._pipelining, False  # fair_queue.py: a request not pipelined is urgent
        self.server.queue_request(self, (frame, held, time.perf_counter()), urgent)

    def start_request(self, job: _Job) -> None:
        """The run queue's turn for this connection's request (FrameServer.queue_request)."""
        frame, held, t0 = job
        del job
        if self.transport is None or self._closing or self.transport.is_closing():  # closed while it waited
            self.server.pool.release(held)
            self.server.pool.finish(self)
            return
        coro = self._serve(frame, held, t0)
        if len(frame) > SMALL_FRAME_BYTES:
            self._task = self._loop.create_task(coro)
            return
        try:  # a small request is handled at once, in this loop round, unless it has to wait
            waited_for = coro.send(None)
        except StopIteration:
            return
        self._task = self._loop.create_task(self._drive(coro, waited_for))

    @staticmethod
    async def _drive(coro: Coroutine[Any, Any, None], waited_for: Any) -> None:
        """Go on with a coroutine that was started on the spot and then had to wait for
        ``waited_for`` (what it yielded: a future, or None for a bare yield), as a task would."""
        while True:
            try:
                if waited_for is None:
                    await asyncio.sleep(0)
                else:
                    waited_for._asyncio_future_blocking = False  # as Task.__step does: it is ours to await now
                    await waited_for
            except BaseException as e:  # a cancellation (the connection closed) goes into it
                try:
                    waited_for = coro.throw(e)
                except StopIteration:
                    return
                continue
            try:
                waited_for = coro.send(None)
            except StopIteration:
                return

    @property
    def busy(self) -> bool:
        """A request is being handled or waits for memory: not idle, whatever the clock says. (A reply
        the client does not read is not: such a connection idles out.)"""
        return bool(self._wanted) or (self._inflight and self._can_write.is_set())

    @property
    def frame_started(self) -> float | None:
        """When the frame being read began (loop time), or None between frames."""
        if self._wanted:
            return None  # waiting for the pool: not the client's time
        return self._started if self._body is not None or 0 < self._head_got < 4 else None

    def close(self) -> None:
        """Close without answering what is pending (the server's side of a disconnect)."""
        if self.transport is not None and not self._closing:
            self._closing = True
            self.server.stats.closed_by_server += 1
            self.transport.abort()

    # ------------------------------------------------------------------ handling

    async def _hold(self, size: int, small: bool) -> None:
        """Hold size bytes of the handling pool for this request (a small one is always admitted)."""
        pool = self.server.handling
        if small:
            pool.take(size)
        else:
            granted: asyncio.Future[None] = self._loop.create_future()

            def on_granted() -> None:
                if granted.done():  # cancelled meanwhile (pool.cancel normally prevents this)
                    pool.release(size)
                else:
                    granted.set_result(None)

            if not pool.reserve(size, self, on_granted):
                try:
                    await granted
                except BaseException:
                    if granted.done() and not granted.cancelled():
                        pool.release(size)  # granted just as the connection closed
                    else:
                        pool.cancel(self)
                    raise
        self._handled += size

    async def _serve(self, frame: bytearray, held: int, t0: float) -> None:
        server, stats = self.server, self.server.stats
        stage = "decoding"
        size = len(frame)
        try:
            offload = self.offload = size >= server.limits.offload_request_bytes
            server.offloads += offload
            await self._hold(decoded_estimate(frame), size <= SMALL_FRAME_BYTES)
            if size >= 4 and _KEY_VERSION.unpack_from(frame, 0)[0] == API_VERSIONS_KEY:
                out = api_versions_answer(frame, server.api_keys)
                del frame
                server.pool.release(held)
                server.pool.finish(self)
                held = 0
                if out is None:
                    self._reject("a malformed ApiVersions request")
                    return
                stats.requests[API_VERSIONS_KEY] = stats.requests.get(API_VERSIONS_KEY, 0) + 1
            else:
                stats.offloaded += offload
                try:
                    decoded = await run_in_handler_thread(server.decode, frame) if offload else server.decode(frame)
                except (DecodeError, UnsupportedVersionError) as e:
                    self._reject(f"an undecodable request ({e})")
                    return
                finally:
                    del frame
                    server.pool.release(held)
                    server.pool.finish(self)
                    held = 0
                h = decoded.header
                if h.request_api_key not in server.api_keys:
                    self._reject(f"api key {h.request_api_key}, which is not enabled on this listener")
                    return
                stats.requests[h.request_api_key] = stats.requests.get(h.request_api_key, 0) + 1
                stage = "handling"
                response = await server.handler(self, decoded)
                del decoded
                if response is None or self.transport is None:
                    self.close()
                    return
                stage = "encoding"
                answer = server.answer_bytes(response) if server.answer_bytes is not None else 0
                if answer:  # the request is gone: its hold becomes the answer's (never both: no self-deadlock)
                    server.handling.release(self._handled)
                    self._handled = 0
                    await self._hold(2 * answer, answer <= SMALL_FRAME_BYTES)  # its pieces, then joined
                big_answer = answer >= server.limits.offload_request_bytes  # a small request's big answer too
                if big_answer and not offload:
                    server.offloads += 1
                    self.offload = offload = True
                args = (response, h.request_api_key, h.request_api_version, h.correlation_id)
                del response
                out = await run_in_handler_thread(server.encode, *args) if offload else server.encode(*args)
                del args
            if self.transport is None:
                return
            self._pipelining = bool(self._more_after or self._stash or self._head_got
                                    or (self._fd >= 0 and _unread(self._fd)))
            stats.pipelined += self._pipelining  # the next request came before this answer
            self._more_after = False
            self.transport.write(out)
            self.last_active = self._loop.time()
            stats.bytes_out += len(out)
            stats.latencies.append(time.perf_counter() - t0)
            del out
            if self.hang_up_after_reply:
                stats.closed_by_server += 1
                self._closing = True
                self.transport.close()  # flushes the reply first, unlike abort()
                return
            await self._can_write.wait()  # the answer is (nearly all) sent: what it held goes back
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - every request ends in an answer or a close (module rules)
            stats.failed += 1
            server.line(logging.ERROR, "%s: %s a request failed (%s); closing the connection", self, stage, describe(e))
            _forget_frames(e)
            self.close()
        finally:
            if held:
                server.pool.release(held)
                server.pool.finish(self)
            if self._handled:
                server.handling.release(self._handled)
                self._handled = 0
            was_offload, self.offload = self.offload, False
            if was_offload:
                server.offload_done()
        self._after_answer()

    def _reject(self, what: str) -> None:
        self.server.line(logging.WARNING, "%s: %s; closing the connection", self, what)
        self.server.stats.rejected_frames += 1
        self.close()

    def _after_answer(self) -> None:
        """The answer is written: go on with what was stashed or read meanwhile, then read on."""
        if self.transport is None or self._closing:
            return
        self._task, self._inflight = None, False  # this request is done: the next one may start
        self._loop.call_soon(self._continue)  # in the next round: its next request joins the run queue

    def _continue(self) -> None:
        if self.transport is None or self._closing:
            return
        if self._head_got == 4 and self._body is None and not self._in_flight:
            self._next_frame()
        stash, self._stash = self._stash, b""
        if stash:
            self._feed(memoryview(stash))
        self._update_reading()


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
        answer_bytes: Callable[[Message], int] | None = None,
    ) -> None:
        self.name = name
        self.decode = decode
        self.encode: Callable[[Message, int, int, int], bytes] = encode_response
        """How answers are encoded (tests inject failures here)."""
        self.answer_bytes = answer_bytes
        """The bytes an answer will take, when that can be far more than its request (module rules)."""
        self.api_keys = api_keys
        self.handler = handler
        self.host = check_loopback(host)
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {port}")
        self.port = port
        self.stats = ServerStats()
        self.limiter = RateLimiter(burst=5, interval_s=10.0)
        self.connections: set[Connection] = set()
        self.scratch = memoryview(bytearray(SCRATCH_BYTES))
        """Shared by the connections: a read at a frame boundary lands here and is parsed at once."""
        self.limits = ServerLimits()
        self.pool = MemoryPool()
        self.handling = MemoryPool()
        self.configure(limits or ServerLimits(), max_request_bytes=max_request_bytes)
        self._server: asyncio.Server | None = None
        self._closed_servers: list[asyncio.Server] = []
        self._idle_task: asyncio.Task[None] | None = None
        self._number = 0
        self.offloads = 0
        """Requests being handled on handler threads."""
        self._trim: asyncio.Task[bool] | None = None
        self.run_queue: FairQueue[Connection, _Job] = FairQueue()
        """Requests read and not yet started, least recently served connection first (fair_queue.py)."""
        self.dispatch_batch = DISPATCH_BATCH
        """Requests started per loop round, at most, before the loop reads again (fair_queue.py)."""
        self.dispatch_budget_s = DISPATCH_BUDGET_S
        """And the time spent starting them, at most (the first is always started; fair_queue.py)."""
        self._dispatching = False

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
        capacity = limits.queued_max_request_bytes if limits.queued_max_request_bytes > 0 else UNLIMITED
        self.pool = MemoryPool(capacity)
        self.handling = MemoryPool(capacity)

    def line(self, level: int, message: str, *args: object) -> None:
        """One log line, unless lines of its kind are being rate-limited (then counted, and the next
        one let through says how many were suppressed). Where the logging handlers rate-limit
        already (safe_log.SafeFilter, installed by the standalone servers, which also summarise
        at exit), they alone do, so that every line is accounted for once."""
        if not _log.isEnabledFor(level):
            return
        if not safe_logging_installed():
            admitted, suppressed = self.limiter.admit(kind_of(message))
            if not admitted:
                return
            if suppressed:
                message += f" [{suppressed} similar messages suppressed]"
        _log.log(level, message, *args)

    def queue_request(self, conn: Connection, job: _Job, urgent: bool) -> None:
        """A request is read whole: it is started at its turn in the run queue (module rules)."""
        self.run_queue.push(conn, job, urgent)
        if not self._dispatching:
            self._dispatching = True
            self._next_dispatch()

    def _next_dispatch(self) -> None:
        # A timer due now rather than call_soon: timers run after the I/O callbacks of the loop's
        # next round, so what the next select finds readable is queued before the turn is given.
        asyncio.get_running_loop().call_later(0, self._dispatch)

    def _dispatch(self) -> None:
        """Start queued requests, at most ``dispatch_batch`` of them and for at most
        ``dispatch_budget_s``, then let the loop read before the rest (module rules)."""
        queue = self.run_queue
        until = time.perf_counter() + self.dispatch_budget_s
        try:
            for _ in range(self.dispatch_batch):
                if not queue:
                    break
                conn, job = queue.pop()
                conn.start_request(job)
                del job
                if time.perf_counter() >= until:
                    break
        finally:  # whatever happened, the rest keeps its turn
            if queue:
                self._next_dispatch()
            else:
                self._dispatching = False

    def offload_done(self) -> None:
        """A request handled on a handler thread is answered: when it was the last, trim the heap."""
        self.offloads -= 1
        if self.offloads <= 0 and (self._trim is None or self._trim.done()):
            self._trim = asyncio.get_running_loop().create_task(run_in_handler_thread(release_free_memory))

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
        if self._idle_task is None:
            self._idle_task = loop.create_task(self._watch())

    async def _watch(self) -> None:
        """Close idle connections (connections_max_idle_ms) and slow frames (frame_timeout_ms); looks
        a few times per period (at most every second)."""
        loop = asyncio.get_running_loop()
        limits = self.limits
        idle = limits.connections_max_idle_ms / 1000.0 if limits.connections_max_idle_ms > 0 else None
        slow = limits.frame_timeout_ms / 1000.0 if limits.frame_timeout_ms > 0 else None
        periods = [p for p in (idle, slow) if p is not None]
        if not periods:
            return
        while True:
            await asyncio.sleep(min(1.0, min(periods) / 4))
            now = loop.time()
            for c in list(self.connections):
                started = c.frame_started
                if slow is not None and started is not None and now - started >= slow:
                    self.line(logging.WARNING, "%s: a frame not complete after %d ms (frame timeout); closing it",
                              c, limits.frame_timeout_ms)
                    self.stats.slow_frames += 1
                    c.close()
                elif idle is not None and c.last_active <= now - idle and not c.busy:
                    self.line(logging.INFO, "%s: idle for %d ms (connections.max.idle.ms); closing it", c,
                              limits.connections_max_idle_ms)
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
        if self._trim is not None:
            await asyncio.gather(self._trim, return_exceptions=True)
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
