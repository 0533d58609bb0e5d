"""transport.Connection's reading over a real socket pair: however the bytes are cut into reads
(a whole frame per read takes the fast path, the rest goes through FrameReader), the frames come
out whole and in order, and a bad prefix ends the connection once."""

from __future__ import annotations

import asyncio
import socket
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.transport.connection import Connection


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


async def read_through(chunks: list[bytes], expected: int) -> tuple[list[bytes], list[str]]:
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    got: list[bytes] = []
    lost: list[str] = []
    done = loop.create_future()

    def on_frame(_: Connection, f: bytes) -> None:
        got.append(bytes(f))
        if len(got) == expected and not done.done():
            done.set_result(None)

    def on_lost(_: Connection, reason: str) -> None:
        lost.append(reason)
        if not done.done():
            done.set_result(None)

    conn = Connection(loop, ours, on_frame, on_lost)
    try:
        for c in chunks:
            theirs.sendall(c)
            await asyncio.sleep(0)  # let the loop read: reads follow the cuts more or less
        await asyncio.wait_for(done, 10)
    finally:
        conn.close()
        theirs.close()
    return got, lost


@settings(max_examples=60, deadline=None)
@given(bodies=st.lists(st.binary(max_size=40), min_size=1, max_size=8), cuts=st.lists(st.integers(0, 400), max_size=8))
def test_frames_come_out_whole_and_in_order_however_they_are_cut(bodies: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(frame(b) for b in bodies)
    points = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})
    chunks = [stream[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]
    got, lost = asyncio.run(read_through(chunks, len(bodies)))
    assert got == bodies and lost == []


def test_a_negative_prefix_ends_the_connection_once() -> None:
    got, lost = asyncio.run(read_through([frame(b"ok") + struct.pack(">i", -1)], 2))
    assert got == [b"ok"] and len(lost) == 1 and "invalid frame size -1" in lost[0]
