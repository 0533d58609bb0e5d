"""SimulatedBroker on real loopback sockets: framing limits, rejections, ordering and faults.

Each test runs its own event loop (asyncio.run, bounded by wait_for) and a small frame client
(ctrlbatch.sim.client.FrameClient) that speaks ctrlbatch.requests framing.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from ctrlbatch.requests import (
    BrokerRegistrationRequest,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
    encode_request,
)
from ctrlbatch.sim.broker_server import BrokerFaults, SimulatedBroker
from ctrlbatch.sim.client import FrameClient

EPOCH = 10


def run(fn: Callable[[SimulatedBroker], Awaitable[Any]], **kw: Any) -> SimulatedBroker:
    async def main() -> SimulatedBroker:
        b = SimulatedBroker(1, EPOCH, **kw)
        await b.start()
        try:
            await asyncio.wait_for(fn(b), 20)
        finally:
            await b.stop()
        return b

    return asyncio.run(main())


def umr(epoch: int = 5, topic: str = "foo", partitions: int = 1) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(
        controller_id=0, controller_epoch=epoch, broker_epoch=EPOCH,
        live_brokers=[UpdateMetadataBroker(id=1, endpoints=[UpdateMetadataEndpoint(port=1, host="h", listener="PLAINTEXT")])],
        topic_states=[UpdateMetadataTopicState(topic_name=topic, partition_states=[
            UpdateMetadataPartitionState(partition_index=p, leader=1, replicas=(1,), isr=(1,)) for p in range(partitions)])])


def test_answers_with_the_correlation_id_and_applies() -> None:
    async def body(b: SimulatedBroker) -> None:
        async with await FrameClient.connect(b.host, b.port) as c:
            header, resp = await c.request(umr(), 8)
            assert header.correlation_id == 1 and resp.error_code == 0
            header, resp = await c.request(umr(epoch=4), 8)
            assert header.correlation_id == 2 and resp.error_code == 11

    b = run(body)
    assert b.state.controller_epoch == 5 and len(b.state.cache.view().partitions) == 1
    assert [(r.correlation_id, r.answered, r.error_code) for r in b.received] == [(1, True, 0), (2, True, 11)]
    assert b.server.stats.requests == {6: 2} and b.server.stats.pipelined == 0


async def _closed_without_answer(b: SimulatedBroker, data: bytes) -> None:
    c = await FrameClient.connect(b.host, b.port)
    try:
        await c.send_raw(data)
        with pytest.raises(ConnectionError):
            await c.read_frame()
    finally:
        await c.close()


def test_frame_over_the_limit_closes_before_reading_it() -> None:
    async def body(b: SimulatedBroker) -> None:
        # only the size prefix is sent: the server must not wait for 100 MiB + 1 bytes
        await _closed_without_answer(b, struct.pack(">i", 104857601))
        await _closed_without_answer(b, struct.pack(">i", -1))

    b = run(body)
    assert b.server.stats.rejected_frames == 2 and b.received == []


def test_frame_of_exactly_the_limit_is_accepted() -> None:
    frame = encode_request(umr(), 8, 1, "c")
    size = len(frame) - 4

    async def accepted(b: SimulatedBroker) -> None:
        async with await FrameClient.connect(b.host, b.port) as c:
            await c.send_raw(frame)
            assert len(await c.read_frame()) > 0

    run(accepted, max_request_bytes=size)

    async def refused(b: SimulatedBroker) -> None:
        await _closed_without_answer(b, frame)

    assert run(refused, max_request_bytes=size - 1).server.stats.rejected_frames == 1


@pytest.mark.parametrize("case", ["unknown key", "version 9", "registration", "bad body", "trailing bytes"])
def test_rejections_close_the_connection(case: str) -> None:
    good = encode_request(umr(), 8, 1, "c")
    if case == "unknown key":
        data = good[:4] + struct.pack(">h", 1000) + good[6:]
    elif case == "version 9":
        data = good[:6] + struct.pack(">h", 9) + good[8:]
    elif case == "registration":
        data = encode_request(BrokerRegistrationRequest(broker_id=1, cluster_id="c"), 4, 1, "c")
    elif case == "bad body":
        data = struct.pack(">i", len(good) - 4 - 5) + good[4:-5]
    else:
        data = struct.pack(">i", len(good) - 4 + 3) + good[4:] + b"\x00\x00\x00"

    async def body(b: SimulatedBroker) -> None:
        await _closed_without_answer(b, data)

    b = run(body)
    assert b.server.stats.rejected_frames == 1 and b.state.controller_epoch == 0


def test_pipelined_requests_are_answered_in_order_and_counted() -> None:
    async def body(b: SimulatedBroker) -> None:
        async with await FrameClient.connect(b.host, b.port) as c:
            await c.send_raw(encode_request(umr(5), 8, 7, "c") + encode_request(umr(6), 8, 8, "c"))
            ids = []
            for _ in range(2):
                frame = await c.read_frame()
                ids.append(struct.unpack_from(">i", frame)[0])
            assert ids == [7, 8]

    b = run(body)
    assert b.server.stats.pipelined == 1 and b.state.controller_epoch == 6


def test_fault_close_at_drops_the_request_unapplied() -> None:
    async def body(b: SimulatedBroker) -> None:
        await _closed_without_answer(b, encode_request(umr(5), 8, 1, "c"))
        async with await FrameClient.connect(b.host, b.port) as c:  # the retry, on a new connection
            _, resp = await c.request(umr(5), 8)
            assert resp.error_code == 0

    b = run(body, faults=BrokerFaults(close_at={1}))
    assert [(r.ordinal, r.connection, r.answered) for r in b.received] == [(1, 1, False), (2, 2, True)]


def test_fault_hang_up_answers_then_closes() -> None:
    async def body(b: SimulatedBroker) -> None:
        async with await FrameClient.connect(b.host, b.port) as c:
            _, resp = await c.request(umr(5), 8)
            assert resp.error_code == 0
            assert await c.at_eof()

    b = run(body, faults=BrokerFaults(hang_up_at={1}))
    assert b.state.controller_epoch == 5 and b.received[0].answered and b.server.stats.closed_by_server == 1


def test_fault_error_code_answers_kafkas_error_shape_unapplied() -> None:
    async def body(b: SimulatedBroker) -> None:
        async with await FrameClient.connect(b.host, b.port) as c:
            _, resp = await c.request(umr(5), 8)
            assert resp.error_code == 56

    b = run(body, faults=BrokerFaults(error_code=56))
    assert b.state.controller_epoch == 0


def test_fault_delay_holds_the_reply() -> None:
    async def body(b: SimulatedBroker) -> None:
        async with await FrameClient.connect(b.host, b.port) as c:
            c.correlation_id = 0
            await c.send_raw(encode_request(umr(5), 8, 1, "c"))
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(c.read_frame()), 0.05)
            b.faults.delay = 0
        assert b.state.controller_epoch == 5  # applied before the delayed reply

    run(body, faults=BrokerFaults(delay=0.5))


def test_refuse_then_listen_again_and_kill_restart() -> None:
    async def body(b: SimulatedBroker) -> None:
        port = b.port
        await b.refuse(0.3)
        with pytest.raises(OSError):
            await FrameClient.connect(b.host, port)
        while not b.server.listening:  # bounded by the test's time-out
            await asyncio.sleep(0.01)
        async with await FrameClient.connect(b.host, port) as c:
            _, resp = await c.request(umr(5), 8)
            assert resp.error_code == 0
        c = await FrameClient.connect(b.host, port)
        await b.kill()
        assert await c.at_eof()
        await c.close()
        with pytest.raises(OSError):
            await FrameClient.connect(b.host, port)
        await b.restart(broker_epoch=EPOCH)
        assert b.port == port and b.state.controller_epoch == 0  # a fresh state after the crash
        async with await FrameClient.connect(b.host, port) as c:
            _, resp = await c.request(umr(3), 8)
            assert resp.error_code == 0

    run(body)


def test_only_loopback_hosts() -> None:
    with pytest.raises(ValueError, match="host must be a loopback"):
        SimulatedBroker(1, 1, host="0.0.0.0")
