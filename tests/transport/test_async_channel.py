"""AsyncControllerChannel inside a running loop, and the Connection's write path.

Each test is one asyncio.run of a coroutine bounded by asyncio.wait_for; responders run in the
same loop (tests/transport/conftest.py).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading

import pytest

from ctrlbatch.requests import UpdateMetadataResponse
from ctrlbatch.transport import AsyncControllerChannel, ChannelOptions, Ending
from ctrlbatch.transport.connection import Connection

FAST = {"backoff_ms": 10, "request_timeout_ms": 2000, "connect_timeout_ms": 2000, "metrics_log_interval_ms": None}


def run(tt, coro):
    return asyncio.run(asyncio.wait_for(coro, tt.TEST_TIMEOUT))


def test_callbacks_run_on_the_loop_thread_in_order_and_shutdown_leaves_no_task(tt):
    async def main():
        baseline = asyncio.all_tasks()
        r = tt.Responder()
        await r.start()
        b = tt.broker(1, r.port)
        requests = tt.make_requests([b], 10)[1]
        seen: list[tuple[int, bool]] = []
        channel = AsyncControllerChannel(**FAST)
        channel.startup([b])
        for req in requests:
            channel.send(1, req, lambda resp, e=req.builder.controller_epoch: seen.append(
                (e, isinstance(resp, UpdateMetadataResponse) and threading.current_thread() is threading.main_thread())
            ))
        assert await channel.wait_until_idle(5)
        await channel.shutdown()
        assert asyncio.all_tasks() == baseline
        await r.stop()
        return seen, r

    seen, r = run(tt, main())
    assert seen == [(e, True) for e in range(1, 11)]
    assert r.epochs() == list(range(1, 11))


def test_a_callback_may_send_and_remove_its_own_broker(tt):
    async def main():
        baseline = asyncio.all_tasks()
        r = tt.Responder()
        await r.start()
        b = tt.broker(1, r.port)
        requests = tt.make_requests([b], 4)[1]
        channel = AsyncControllerChannel(**FAST)
        channel.startup([b])
        seen: list[int] = []

        def first(resp):
            seen.append(1)
            channel.send(1, requests[2], second)  # behind requests[1]

        def second(resp):
            seen.append(3)
            channel.send(1, requests[3], seen.append)
            channel.remove_broker(1)  # drops requests[3]

        channel.send(1, requests[0], first)
        channel.send(1, requests[1], lambda resp: seen.append(2))
        assert await channel.wait_until_idle(5)
        assert channel.broker_ids == frozenset()
        await channel.shutdown()
        assert asyncio.all_tasks() == baseline
        await r.stop()
        return seen, r

    seen, r = run(tt, main())
    assert seen == [1, 2, 3]
    assert r.epochs() == [1, 2, 3]


def test_wait_until_idle_reports_false_while_a_broker_does_not_answer(tt):
    async def main():
        r = tt.Responder({0: "hang"})
        await r.start()
        b = tt.broker(1, r.port)
        channel = AsyncControllerChannel(**{**FAST, "request_timeout_ms": 60000})
        channel.startup([b])
        channel.send(1, tt.make_requests([b], 1)[1][0])
        idle = await channel.wait_until_idle(0.2)
        m = channel.metrics().broker(1)
        await channel.shutdown()
        await r.stop()
        return idle, m

    idle, m = run(tt, main())
    assert idle is False
    assert (m.request_count, m.tries, m.answered, m.queue_size) == (1, 1, 0, 0)


def test_a_broker_that_refuses_connections_gets_the_request_once_it_listens(tt, caplog):
    async def main():
        reserved = socket.socket()
        reserved.bind(("127.0.0.1", 0))  # bound, not listening: connects are refused
        port = reserved.getsockname()[1]
        b = tt.broker(1, port)
        channel = AsyncControllerChannel(**FAST)
        channel.startup([b])
        channel.send(1, tt.make_requests([b], 1)[1][0])
        while channel.metrics().broker(1).retries < 3:
            await asyncio.sleep(0.01)
        r = tt.Responder()
        r.server = await asyncio.get_running_loop().create_server(r._protocol, sock=reserved)
        assert await channel.wait_until_idle(5)
        m = channel.metrics().broker(1)
        await channel.shutdown()
        await r.stop()
        return r, m, port

    with caplog.at_level(logging.INFO, logger="ctrlbatch.transport"):
        r, m, port = run(tt, main())
    assert r.epochs() == [1]
    assert r.received[0].correlation_id == 0  # connect failures use no correlation id
    assert m.retries >= 3 and m.answered == 1
    node = f"127.0.0.1:{port} (id: 1 rack: null)"
    assert any(msg.startswith(f"Controller 0's connection to broker {node} was unsuccessful") for msg in caplog.messages)
    assert f"Controller 0 connected to {node} for sending state change requests" in caplog.messages


def test_a_connect_that_hangs_times_out_and_is_retried(tt, caplog, monkeypatch):
    calls = []
    real_open = Connection.open

    async def slow_open(host, port, on_frame, on_lost):
        calls.append(port)
        if len(calls) == 1:
            await asyncio.sleep(3600)
        return await real_open(host, port, on_frame, on_lost)

    monkeypatch.setattr(Connection, "open", staticmethod(slow_open))

    async def main():
        r = tt.Responder()
        await r.start()
        b = tt.broker(1, r.port)
        channel = AsyncControllerChannel(**{**FAST, "connect_timeout_ms": 100})
        channel.startup([b])
        channel.send(1, tt.make_requests([b], 1)[1][0])
        assert await channel.wait_until_idle(5)
        await channel.shutdown()
        await r.stop()
        return r

    with caplog.at_level(logging.WARNING, logger="ctrlbatch.transport"):
        r = run(tt, main())
    assert len(calls) == 2 and r.epochs() == [1]
    assert any(m.endswith("was unsuccessful (Failed to connect within 100 ms)") for m in caplog.messages)


def test_options_are_checked_and_named():
    with pytest.raises(ValueError, match="backoff_ms must be at least 0"):
        ChannelOptions(backoff_ms=-1)
    with pytest.raises(TypeError, match="request_timeout_ms must be an int"):
        ChannelOptions(request_timeout_ms="30s")
    with pytest.raises(ValueError, match="security_protocol: only PLAINTEXT"):
        ChannelOptions(security_protocol="SSL")
    with pytest.raises(ValueError, match="max_in_flight must be 1, got 2"):
        ChannelOptions(max_in_flight=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        AsyncControllerChannel(colour=1)
    assert ChannelOptions(controller_id=3).effective_client_id == "3"
    assert ChannelOptions(controller_id=3, thread_name_prefix="x").send_thread_name(4) == (
        "x:Controller-3-to-broker-4-send-thread"
    )


def test_a_broker_without_the_listener_is_refused_with_kafkas_error(tt):
    from ctrlbatch.context import BrokerEndPointNotAvailableError

    async def main():
        channel = AsyncControllerChannel(listener_name="INTERNAL", **FAST)
        with pytest.raises(BrokerEndPointNotAvailableError, match="End point with listener name INTERNAL not found for broker 1"):
            channel.add_broker(tt.broker(1, 9))
        await channel.shutdown()

    run(tt, main())


def test_partial_writes_keep_views_of_the_shared_body():
    """A frame larger than the socket buffer: the rest waits as memoryviews of the same bytes."""

    async def main():
        left, right = socket.socketpair()
        left.setblocking(False)
        right.setblocking(False)
        left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        body = bytes(range(256)) * 40000  # 10 MB
        head, tail = b"HEAD", b"TAIL"
        lost: list[str] = []
        conn = Connection(asyncio.get_running_loop(), left, lambda c, f: None, lambda c, r: lost.append(r))
        conn.send_parts([head, memoryview(body), tail])
        pending = conn._unsent
        assert pending and all(isinstance(v, memoryview) for v in pending)
        assert any(v.obj is body for v in pending)
        received = bytearray()
        loop = asyncio.get_running_loop()
        while len(received) < len(body) + 8:
            received += await loop.sock_recv(right, 1 << 20)
        conn.close()
        right.close()
        return bytes(received), head + body + tail, lost, conn.bytes_sent

    received, expected, lost, sent = asyncio.run(asyncio.wait_for(main(), 20))
    assert received == expected and lost == [] and sent == len(expected)


def test_an_ending_log_uses_kafkas_retry_text(tt, caplog):
    async def main():
        r = tt.Responder({0: "close"})
        await r.start()
        b = tt.broker(1, r.port)
        channel = AsyncControllerChannel(**FAST)
        channel.startup([b])
        channel.send(1, tt.make_requests([b], 1, first_epoch=9)[1][0])
        assert await channel.wait_until_idle(5)
        await channel.shutdown()
        await r.stop()
        return r

    with caplog.at_level(logging.WARNING, logger="ctrlbatch.transport"):
        r = run(tt, main())
    assert r.epochs() == [9, 9]
    node = f"127.0.0.1:{r.port} (id: 1 rack: null)"
    assert any(
        m.startswith(
            "Controller 0 epoch 9 fails to send request (type=UpdateMetadataRequest, version=8, controllerId=0, "
            f"controllerEpoch=9, brokerEpoch=101) to broker {node}. Reconnecting to broker."
        )
        and Ending.CONNECTION_LOST.value not in m
        for m in caplog.messages
    )


def test_send_and_wait_check_their_arguments_and_name_them(tt):
    async def main():
        channel = AsyncControllerChannel(**FAST)
        channel.startup()
        request = tt.make_requests([tt.broker(1, 1)], 1)[1][0]
        with pytest.raises(TypeError, match="broker_id must be an int, got True"):
            channel.send(True, request)
        with pytest.raises(TypeError, match="request must have encode_parts"):
            channel.send(1, b"\x00\x06")
        with pytest.raises(TypeError, match="callback must be callable or None, got 3"):
            channel.send(1, request, 3)
        with pytest.raises(ValueError, match="timeout must be a number of seconds >= 0, got -1"):
            await channel.wait_until_idle(-1)
        with pytest.raises(ValueError, match="timeout must be a number of seconds >= 0, got nan"):
            await channel.wait_until_idle(float("nan"))
        await channel.shutdown()

    run(tt, main())


def test_a_channel_shut_down_with_senders_waiting_to_write_starts_again_on_a_new_loop(tt):
    """shutdown() between an answer and the write it frees (its sender in the ready list) leaves
    nothing behind that stops the next loop's sends; every broker's requests go out in order."""
    channel = AsyncControllerChannel(**FAST)
    answered: list[tuple[int, int]] = []

    async def session(first_epoch: int, stop_at_first_answer: bool) -> list[object]:
        servers = [tt.Responder() for _ in range(3)]
        for r in servers:
            await r.start()
        brokers = [tt.broker(i, r.port) for i, r in enumerate(servers)]
        requests = tt.make_requests(brokers, 5, first_epoch)
        stopping: list[asyncio.Task[None]] = []

        def callback(resp: object, b: int, e: int) -> None:
            answered.append((b, e))
            if stop_at_first_answer and not stopping:
                # runs before the sender's pump: the task's first step is queued ahead of it
                stopping.append(asyncio.ensure_future(channel.shutdown()))

        channel.startup(brokers)
        for b in brokers:
            for req in requests[b.id]:
                channel.send(b.id, req, lambda resp, b=b.id, e=req.builder.controller_epoch: callback(resp, b, e))
        if stop_at_first_answer:
            while not stopping:
                await asyncio.sleep(0.001)
            await stopping[0]
            assert channel.broker_ids == frozenset()
        else:
            assert await channel.wait_until_idle(5)
            await channel.shutdown()
        for r in servers:
            await r.stop()
        return servers

    asyncio.run(asyncio.wait_for(session(1, stop_at_first_answer=True), tt.TEST_TIMEOUT))
    assert answered and all(e == 1 for _, e in answered)  # the answers read in that round, no more
    answered.clear()
    servers = asyncio.run(asyncio.wait_for(session(10, stop_at_first_answer=False), tt.TEST_TIMEOUT))
    for i, r in enumerate(servers):
        assert [e for b, e in answered if b == i] == list(range(10, 15))
        assert r.epochs() == list(range(10, 15))
        assert not r.violations


class _Unencodable:
    """A request whose frame cannot be built (encode_parts raises)."""

    api_key = 6
    version = 8

    def encode_parts(self, correlation_id: int, client_id: str | None) -> list[bytes | memoryview]:
        raise ValueError("cannot encode this request")


def test_a_sender_that_fails_to_write_does_not_hold_up_the_others_freed_in_the_same_round(tt):
    """The senders freed in one loop round are written by one callback: an exception in one of them
    is reported to the loop's exception handler, as a callback of its own would be, and the rest go."""
    async def main():
        reported: list[BaseException] = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: reported.append(ctx["exception"]))
        servers = [tt.Responder(), tt.Responder()]
        for r in servers:
            await r.start()
        brokers = [tt.broker(i, r.port) for i, r in enumerate(servers)]
        requests = tt.make_requests(brokers, 2)
        channel = AsyncControllerChannel(**FAST)
        channel.startup(brokers)
        for b in brokers:
            channel.send(b.id, requests[b.id][0])
        assert await channel.wait_until_idle(5)  # both connected and idle
        answered = asyncio.Event()
        channel.send(0, _Unencodable())  # first in the ready list
        channel.send(1, requests[1][1], lambda resp: answered.set())
        await asyncio.wait_for(answered.wait(), 5)
        await channel.shutdown()
        for r in servers:
            await r.stop()
        return reported, servers

    reported, servers = run(tt, main())
    assert [str(e) for e in reported] == ["cannot encode this request"]
    assert servers[1].epochs() == [1, 2]
