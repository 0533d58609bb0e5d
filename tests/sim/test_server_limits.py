"""The frame server under hostile clients, on real loopback sockets: the memory budget, idle and
surplus connections, big requests handled off the loop. Every wait is bounded; nothing is timed
for speed (benchmarks/server_attack_bench.py measures that)."""

from __future__ import annotations

import asyncio
import struct
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.requests import (
    DecodedRequest,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataRequest,
    decode_request,
    encode_request,
)
from ctrlbatch.sim.broker_server import SimulatedBroker
from ctrlbatch.sim.client import FrameClient
from ctrlbatch.sim.server import ServerLimits

from .sockets import closed_by_server, until

EPOCH = 10
TIMEOUT = 20


def run(fn: Callable[[SimulatedBroker], Awaitable[Any]], **kw: Any) -> SimulatedBroker:
    async def main() -> SimulatedBroker:
        b = SimulatedBroker(1, EPOCH, **kw)
        await b.start()
        try:
            await asyncio.wait_for(fn(b), TIMEOUT)
        finally:
            await b.stop()
        return b

    return asyncio.run(main())


def umr(epoch: int = 5, brokers: int = 1) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(controller_id=0, controller_epoch=epoch, broker_epoch=EPOCH, live_brokers=[
        UpdateMetadataBroker(id=i, endpoints=[UpdateMetadataEndpoint(port=1, host="h", listener="PLAINTEXT")])
        for i in range(brokers)])




def test_a_connection_waits_for_the_budget_and_loses_nothing() -> None:
    big = encode_request(umr(5, brokers=2000), 8, 1, "a")  # about 40 KB
    size = len(big) - 4

    async def body(b: SimulatedBroker) -> None:
        pool = b.server.pool
        a = await FrameClient.connect(b.host, b.port)
        o = await FrameClient.connect(b.host, b.port)
        w = await FrameClient.connect(b.host, b.port)
        await a.send_raw(big[:-10])  # holds a partial frame: its whole size is reserved
        await until(lambda: pool.held == size)
        await o.send_raw(big[:-10])  # does not fit, but takes the overdraft (memory_pool.py): one frame over
        await until(lambda: pool.overdraft is not None)
        await w.send_raw(encode_request(umr(6, brokers=2000), 8, 7, "w"))  # does not fit: w is not read
        await until(lambda: pool.waiting == 1)
        async with await FrameClient.connect(b.host, b.port) as small:  # a small request still fits
            _, resp = await small.request(umr(6), 8)
            assert resp.error_code == 0
        assert pool.waiting == 1 and b.state.controller_epoch == 6
        await a.send_raw(big[-10:])
        assert struct.unpack_from(">i", await a.read_frame())[0] == 1
        await o.close()  # gives back its partial frame and the overdraft
        assert struct.unpack_from(">i", await w.read_frame())[0] == 7  # granted once a's frame was decoded
        await a.close()
        await w.close()
        await until(lambda: pool.held == 0)

    b = run(body, limits=ServerLimits(queued_max_request_bytes=size + size // 2))
    assert [r.correlation_id for r in b.received] == [1, 1, 7]
    assert b.server.pool.waits == 1 and b.server.pool.peak <= 2 * size + size // 2


def test_a_closed_connection_gives_back_what_it_held_or_waited_for() -> None:
    async def body(b: SimulatedBroker) -> None:
        pool = b.server.pool
        a = await FrameClient.connect(b.host, b.port)
        o = await FrameClient.connect(b.host, b.port)
        w = await FrameClient.connect(b.host, b.port)
        await a.send_raw(struct.pack(">i", 40_000) + bytes(100))  # big frames (> SMALL_FRAME_BYTES) wait
        await until(lambda: pool.held == 40_000)
        await o.send_raw(struct.pack(">i", 40_000) + bytes(100))  # the overdraft: one frame over the budget
        await until(lambda: pool.held == 80_000 and pool.overdraft is not None)
        await w.send_raw(struct.pack(">i", 40_000))
        await until(lambda: pool.waiting == 1)
        await w.close()  # unnoticed while w is not read (as in Kafka, whose muted channels are not polled)
        await o.close()  # the overdraft passes to w, which then notices its close
        await a.close()
        await until(lambda: pool.held == 0 and pool.waiting == 0 and not b.server.connections)

    run(body, limits=ServerLimits(queued_max_request_bytes=50_000))


def test_idle_connections_are_closed_and_busy_ones_are_not() -> None:
    async def body(b: SimulatedBroker) -> None:
        idle = await FrameClient.connect(b.host, b.port)
        active = await FrameClient.connect(b.host, b.port)
        for _ in range(12):  # 1.2 s of requests, 0.1 s apart: never idle for 300 ms
            _, resp = await active.request(umr(5), 8)
            assert resp.error_code == 0
            await asyncio.sleep(0.1)
        assert await closed_by_server(idle, 0.1)  # closed by then
        assert b.server.stats.idle_closed == 1
        await idle.close()
        await active.close()

    run(body, limits=ServerLimits(connections_max_idle_ms=300))


def test_connections_beyond_max_connections_are_closed_at_once() -> None:
    async def body(b: SimulatedBroker) -> None:
        kept = [await FrameClient.connect(b.host, b.port) for _ in range(2)]
        await until(lambda: len(b.server.connections) == 2)
        assert not await closed_by_server(kept[0], 0.1)
        extra = await FrameClient.connect(b.host, b.port)
        assert await closed_by_server(extra, 5)
        await extra.close()
        for c in kept:
            _, resp = await c.request(umr(5), 8)
            assert resp.error_code == 0
            await c.close()

    b = run(body, limits=ServerLimits(max_connections=2))
    assert b.server.stats.refused_connections == 1


class _BlockingDecoder:
    """Decodes as usual, but a big frame waits for ``release`` on the handler thread."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.waiting = threading.Event()

    def decode(self, frame: bytes | bytearray) -> DecodedRequest:
        if len(frame) >= 1000:
            self.waiting.set()
            self.release.wait(TIMEOUT)
        return decode_request(frame)


def test_a_big_request_on_a_handler_thread_does_not_hold_up_another_connection() -> None:
    decoder = _BlockingDecoder()
    big = umr(5, brokers=200)

    async def body(b: SimulatedBroker) -> None:
        async with await FrameClient.connect(b.host, b.port) as slow, await FrameClient.connect(b.host, b.port) as quick:
            slow.correlation_id = 0
            await slow.send_raw(encode_request(big, 8, 1, "slow") + encode_request(umr(7), 8, 2, "slow"))
            await until(decoder.waiting.is_set)
            _, resp = await quick.request(umr(6), 8)  # answered while the big one is being decoded
            assert resp.error_code == 0 and b.state.controller_epoch == 6
            decoder.release.set()
            ids = [struct.unpack_from(">i", await slow.read_frame())[0] for _ in range(2)]
            assert ids == [1, 2]  # in order on their connection

    try:
        b = run(body, decoder=decoder, limits=ServerLimits(offload_request_bytes=1000))
    finally:
        decoder.release.set()
    # applied in the order the state lock saw them: 6 (quick), then 5 is stale (11), then 7
    assert [(r.connection, r.correlation_id, r.error_code) for r in b.received] == [(2, 1, 0), (1, 1, 11), (1, 2, 0)]
    assert b.state.controller_epoch == 7 and b.state_lock.offloaded == 1 and b.server.stats.offloaded == 1


@pytest.mark.parametrize("offload", [0, 10**9])
def test_offloaded_and_inline_answers_are_the_same_bytes(offload: int) -> None:
    frames = [encode_request(umr(5, brokers=300), 8, 1, "c"), encode_request(umr(4), 8, 2, "c")]
    answers: list[bytes] = []

    async def body(b: SimulatedBroker) -> None:
        async with await FrameClient.connect(b.host, b.port) as c:
            await c.send_raw(b"".join(frames))
            answers.extend([await c.read_frame(), await c.read_frame()])

    b = run(body, limits=ServerLimits(offload_request_bytes=offload))
    assert answers == [b"\x00\x00\x00\x01\x00\x00\x00\x00", b"\x00\x00\x00\x02\x00\x00\x0b\x00"]
    assert len(b.state.cache.alive_brokers) == 300
    assert b.server.stats.offloaded == (2 if offload == 0 else 0)


def test_server_limits_name_the_bad_field() -> None:
    with pytest.raises(ValueError, match="queued_max_request_bytes must be an int >= 1 \\(or -1\\), got 0"):
        ServerLimits(queued_max_request_bytes=0)
    with pytest.raises(ValueError, match="max_connections must be an int >= 0, got -5"):
        ServerLimits(max_connections=-5)


@settings(max_examples=15, deadline=None)
@given(sizes=st.lists(st.sampled_from([0, 1, 3, 40, 400]), min_size=1, max_size=6),
       cuts=st.lists(st.integers(0, 200_000), max_size=6), budget=st.sampled_from([-1, 30_000, 60_000]))
def test_frames_cut_anywhere_are_all_answered_in_order(sizes: list[int], cuts: list[int], budget: int) -> None:
    """However the bytes are cut into sends, small frames (parsed out of the scratch buffer) and big
    ones (read straight into their buffer, offloaded, waiting for the budget) come out whole, in order."""
    frames = [encode_request(umr(5 + i, brokers=n), 8, i, "c") for i, n in enumerate(sizes)]
    stream = b"".join(frames)
    points = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})

    async def body(b: SimulatedBroker) -> None:
        async with await FrameClient.connect(b.host, b.port) as c:
            for x, y in zip(points, points[1:], strict=False):
                await c.send_raw(stream[x:y])
                await asyncio.sleep(0)
            ids = [struct.unpack_from(">i", await c.read_frame())[0] for _ in frames]
            assert ids == list(range(len(frames)))

    b = run(body, record=True, limits=ServerLimits(queued_max_request_bytes=budget, offload_request_bytes=5000))
    assert [r.correlation_id for r in b.received] == list(range(len(frames)))
    assert b.state.controller_epoch == 4 + len(frames) and b.server.pool.held == 0


def test_configure_refuses_while_connections_are_open() -> None:
    async def body(b: SimulatedBroker) -> None:
        c = await FrameClient.connect(b.host, b.port)
        await until(lambda: bool(b.server.connections))
        with pytest.raises(RuntimeError, match="configure\\(\\) with 1 connections open"):
            b.server.configure(ServerLimits())
        await c.close()

    run(body)
