"""FrameClient: a minimal asyncio client that sends one request at a time and reads its response.

Rules: loopback only; one request in flight (``request`` writes a frame and waits for the
answer with the same correlation id, decoded with the request's api key and version); a closed
connection raises ConnectionError, and so does a response size prefix below 0 or above
``max_response_bytes`` (100 MiB by default, like socket.request.max.bytes): a hostile server
cannot make it allocate without bound. It is the lifecycle manager's client and the tests' probe.
"""

from __future__ import annotations

import asyncio
import struct

from ctrlbatch.requests import ResponseHeader, decode_response, encode_request
from ctrlbatch.requests.model import Message

from .loopback import check_loopback

__all__ = ["FrameClient"]

_SIZE = struct.Struct(">i")
MAX_RESPONSE_BYTES = 104857600


class FrameClient:
    """``async with await FrameClient.connect(host, port) as c: header, body = await c.request(msg, v)``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str | None,
                 max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self.max_response_bytes = max_response_bytes
        self.reader = reader
        self.writer = writer
        self.client_id = client_id
        self.correlation_id = 0

    def __repr__(self) -> str:
        return f"FrameClient({self.writer.get_extra_info('peername')})"

    @classmethod
    async def connect(cls, host: str, port: int, *, client_id: str | None = "sim", timeout: float = 5.0) -> FrameClient:
        check_loopback(host)
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        return cls(reader, writer, client_id)

    async def __aenter__(self) -> FrameClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_frame(self) -> bytes:
        """One size-prefixed frame (without its prefix); ConnectionError on EOF."""
        try:
            head = await self.reader.readexactly(4)
            (size,) = _SIZE.unpack(head)
            if not 0 <= size <= self.max_response_bytes:
                raise ConnectionError(f"response size {size} is not in 0..{self.max_response_bytes}")
            return await self.reader.readexactly(size)
        except asyncio.IncompleteReadError as e:
            raise ConnectionError("the server closed the connection") from e

    async def request(self, body: Message, version: int, *, timeout: float = 10.0) -> tuple[ResponseHeader, Message]:
        assert body.API_KEY is not None
        self.correlation_id += 1
        cid = self.correlation_id
        await self.send_raw(encode_request(body, version, cid, self.client_id))
        frame = await asyncio.wait_for(self.read_frame(), timeout)
        header, response = decode_response(frame, body.API_KEY, version)
        if header.correlation_id != cid:
            raise ConnectionError(f"correlation id {header.correlation_id} in the response, expected {cid}")
        return header, response

    async def at_eof(self, timeout: float = 5.0) -> bool:
        """True once the server has closed the connection (reads and discards anything sent)."""
        try:
            while await asyncio.wait_for(self.reader.read(65536), timeout):
                pass
        except (ConnectionError, OSError):
            return True
        return True
