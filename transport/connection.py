"""One TCP connection from the controller to a broker, driven by the running asyncio loop.

Rules:
- Only the loop's thread touches a Connection. It owns a non-blocking socket and registers it
  with the loop itself (add_reader / add_writer), without an asyncio Transport: Python 3.11's
  transports join writelines() input into one new bytes object, and the point here is that a body
  shared by many brokers is never copied.
- send_parts() hands the frame's buffers to socket.sendmsg as they are (header bytes, views of
  the shared body). What the kernel does not take at once is kept as memoryviews and written
  when the socket becomes writable: still no copy.
- Reading: whatever arrives is split into frames by FrameReader with no size limit (the
  controller's max receive size is unlimited, kafka-controller-channel.md §2) and each frame goes
  to on_frame(connection, frame), in order. A read that is exactly one whole frame with nothing
  buffered before it (the usual case: one request in flight, a small answer) skips the
  FrameReader: its prefix is checked here and the frame sliced out directly. Reads go into one
  64 KiB buffer per connection (recv_into): a fresh 256 KiB bytes object per recv cost an
  mmap, an mremap and a munmap each time on the channel's thread (strace, issue 14), about
  half of the channel's system time per round trip.
- The end of a connection (EOF, a socket error, a bad size prefix) is reported once through
  on_lost(connection, reason), never from inside send_parts(); close() is idempotent and
  reports nothing.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable, Sequence

from ctrlbatch.requests import DecodeError, FrameReader

__all__ = ["Connection", "is_ip_literal"]

_READ_SIZE = 65536
_SIZE = struct.Struct(">i")
_UNLIMITED = 2**31 - 1  # the largest int32 size prefix

Buffer = bytes | memoryview


def is_ip_literal(host: str) -> bool:
    """True for '127.0.0.1' or '::1' (connectable without a resolver thread)."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        return True
    return False


def _unsent(parts: Sequence[Buffer], sent: int) -> list[memoryview]:
    """The buffers left after `sent` bytes were written, as views (no copy)."""
    rest: list[memoryview] = []
    for part in parts:
        size = len(part)
        if sent >= size:
            sent -= size
            continue
        rest.append(memoryview(part)[sent:])
        sent = 0
    return rest


class Connection:
    """A connected socket, its frame splitter and its pending output."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        on_frame: Callable[[Connection, bytes], None],
        on_lost: Callable[[Connection, str], None],
    ) -> None:
        self._loop = loop
        self._sock = sock
        self._fd = sock.fileno()
        self._reader = FrameReader(max_frame_size=_UNLIMITED)
        self._read_buffer = memoryview(bytearray(_READ_SIZE))
        self._unsent: list[memoryview] = []
        self._on_frame = on_frame
        self._on_lost = on_lost
        self.closed = False
        self.bytes_sent = 0
        loop.add_reader(self._fd, self._on_readable)

    def __repr__(self) -> str:
        return f"<Connection fd={self._fd}{' closed' if self.closed else ''}>"

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        on_frame: Callable[[Connection, bytes], None],
        on_lost: Callable[[Connection, str], None],
    ) -> Connection:
        """Connect to host:port; a cancelled or failed connect leaves no socket behind."""
        loop = asyncio.get_running_loop()
        if is_ip_literal(host):
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            address: tuple[str, int] = (host, port)
        else:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            family, sockaddr = infos[0][0], infos[0][4]
            address = (str(sockaddr[0]), int(sockaddr[1]))
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await loop.sock_connect(sock, address)
        except BaseException:
            sock.close()
            raise
        return cls(loop, sock, on_frame, on_lost)

    def send_parts(self, parts: Sequence[Buffer], size: int | None = None) -> None:
        """Write one frame given as buffers (size: their total length, if known), without joining them."""
        if self.closed:
            raise ConnectionError("the connection is closed")
        if self._unsent:
            self._unsent.extend(memoryview(p) for p in parts)
            return
        total = sum(len(p) for p in parts) if size is None else size
        try:
            sent = self._sock.sendmsg(parts)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as e:
            # Reported from the loop, not from inside the caller's send.
            self._loop.call_soon(self._lose, f"send failed: {e}")
            return
        self.bytes_sent += sent
        if sent < total:
            self._unsent = _unsent(parts, sent)
            self._loop.add_writer(self._fd, self._on_writable)

    def _on_writable(self) -> None:
        try:
            sent = self._sock.sendmsg(self._unsent[:1024])
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._lose(f"send failed: {e}")
            return
        self.bytes_sent += sent
        self._unsent = _unsent(self._unsent, sent)
        if not self._unsent:
            self._loop.remove_writer(self._fd)

    def _on_readable(self) -> None:
        try:
            n = self._sock.recv_into(self._read_buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._lose(f"receive failed: {e}")
            return
        if not n:
            self._lose("the broker closed the connection")
            return
        buf = self._read_buffer
        if n >= 4 and _SIZE.unpack_from(buf)[0] == n - 4 and not self._reader.buffered:
            self._on_frame(self, bytes(buf[4:n]))
            return
        data = buf[:n]
        try:
            frames = self._reader.feed(data)
        except DecodeError as e:
            self._lose(str(e))
            return
        for frame in frames:
            if self.closed:
                return
            self._on_frame(self, frame)
        try:
            self._reader.feed(b"")  # a bad prefix after the good frames of this read ends it now
        except DecodeError as e:
            self._lose(str(e))

    def _lose(self, reason: str) -> None:
        if self.closed:
            return
        self.close()
        self._on_lost(self, reason)

    def close(self) -> None:
        """Stop watching the socket and close it; pending output is discarded."""
        if self.closed:
            return
        self.closed = True
        self._unsent = []
        self._loop.remove_reader(self._fd)
        self._loop.remove_writer(self._fd)
        self._sock.close()
