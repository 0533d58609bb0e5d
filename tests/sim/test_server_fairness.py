"""Fair service on both frame servers (issue 24, attack 9), on real loopback sockets at small sizes:
a polite client's request goes ahead of most of what many flooders have pipelined, and each
flooder's requests keep their order. Counts and order only; benchmarks/server_attack_bench.py
(attack 9) measures the latencies."""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable

import pytest

from ctrlbatch.requests import BrokerHeartbeatRequest, encode_request
from ctrlbatch.requests.model import Message
from ctrlbatch.sim.broker_server import SimulatedBroker
from ctrlbatch.sim.client import FrameClient
from ctrlbatch.sim.controller_server import ControllerEndpoint
from ctrlbatch.sim.fair_queue import DISPATCH_BATCH
from ctrlbatch.sim.server import Connection, FrameServer

from .sockets import until
from .test_server_hostile import registration, run, run_controller, umr

FLOODERS = 100
ASKS = 10
_CID = struct.Struct(">i")
EACH = 12


def _record(server: FrameServer) -> list[int]:
    """The connection number of every request the server hands to its handler, in order."""
    order: list[int] = []
    inner = server.handler

    async def handler(conn, decoded):  # type: ignore[no-untyped-def]
        order.append(conn.number)
        return await inner(conn, decoded)

    server.handler = handler
    return order


async def _flood_then_ask(server: FrameServer, flood: Callable[[int], bytes], polite: FrameClient,
                          ask: Callable[[], Message], version: int) -> tuple[list[int], list[int], Message]:
    """FLOODERS clients each pipeline EACH requests at once; once the flood flows, the polite client
    asks ASKS times, each as soon as it has the previous answer. Returns, for each ask, how many
    requests the server handled between it and the polite one, the order the handler saw, and
    the last answer; every flooder's answers come back in order."""
    await until(lambda: len(server.connections) == 1)
    polite_number = next(iter(server.connections)).number  # the polite client connected first
    order = _record(server)
    flooders = [await FrameClient.connect(server.host, server.port) for _ in range(FLOODERS)]
    between: list[int] = []
    try:
        for f in flooders:
            await f.send_raw(b"".join(flood(i) for i in range(EACH)))
        await until(lambda: len(order) >= 2 * FLOODERS)  # every flooder has had a turn: all are queued
        for _ in range(ASKS):
            asked_at = len(order)
            _, answer = await polite.request(ask(), version)
            between.append(order.index(polite_number, asked_at) - asked_at)
        assert order.count(polite_number) == ASKS
        assert len(order) < FLOODERS * EACH  # the flood was still on at the last ask
        for f in flooders:
            ids = [_CID.unpack_from(await f.read_frame())[0] for _ in range(EACH)]  # correlation ids, in order
            assert ids == list(range(EACH))
    finally:
        for f in flooders:
            await f.close()
    return between, order, answer


def test_a_polite_request_goes_ahead_of_many_flooders() -> None:
    out: list[tuple[list[int], list[int]]] = []

    async def body(b: SimulatedBroker) -> None:
        async with await FrameClient.connect(b.host, b.port) as polite:
            between, order, answer = await _flood_then_ask(
                b.server, lambda i: encode_request(umr(5), 8, i, "flood"), polite, lambda: umr(5), 8)
            assert answer.error_code == 0  # type: ignore[attr-defined]
            out.append((between, order))

    b = run(body)
    between, order = out[0]
    # Before the run queue, every flooder with a request read was handled in the loop round that
    # read the polite one, so it waited behind about one request per flooder (100 here); with the
    # queue but without the urgency of requests that were not pipelined, about as many (round robin).
    assert max(between) <= 2 * DISPATCH_BATCH < FLOODERS // 2
    assert len(order) == FLOODERS * EACH + ASKS and b.server.run_queue.dispatches == len(order)
    assert not b.server.run_queue  # and the closed connections are forgotten


def test_a_brokers_heartbeat_goes_ahead_of_many_flooders_on_the_controller() -> None:
    out: list[int] = []

    def beat(broker_id: int, epoch: int) -> BrokerHeartbeatRequest:
        return BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=10**6)

    async def body(e: ControllerEndpoint) -> None:
        async with await FrameClient.connect(e.host, e.port) as broker:
            _, reg = await broker.request(registration(1), 4)
            epoch = reg.broker_epoch  # type: ignore[attr-defined]
            # the flooders heartbeat for a broker that never registered: each is handled (and refused)
            between, order, answer = await _flood_then_ask(
                e.server, lambda i: encode_request(beat(7, 1), 1, i, "flood"), broker, lambda: beat(1, epoch), 1)
            assert answer.error_code == 0 and not answer.is_fenced  # type: ignore[attr-defined]
            assert len(order) == FLOODERS * EACH + ASKS
            out.extend(between)

    e = run_controller(body)
    assert max(out) <= 2 * DISPATCH_BATCH < FLOODERS // 2
    assert not e.state.registrations[1].state.fenced and not e.server.run_queue


def test_requests_whose_clients_leave_while_queued_give_back_what_they_hold() -> None:
    dropped: list[int] = []

    async def body(b: SimulatedBroker) -> None:
        server = b.server
        server.dispatch_batch = 1  # a long queue: the leavers' requests wait in it
        forget = server.run_queue.forget

        def counting_forget(conn: Connection) -> list[tuple[bytearray, int, float]]:
            jobs = forget(conn)
            dropped.append(len(jobs))
            return jobs

        server.run_queue.forget = counting_forget  # type: ignore[method-assign]
        flooders = [await FrameClient.connect(b.host, b.port) for _ in range(FLOODERS)]
        for f in flooders:
            await f.send_raw(b"".join(encode_request(umr(5), 8, i, "flood") for i in range(EACH)))
        for _ in range(20):  # a request, then a reset at once
            s = socket.create_connection((b.host, b.port))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.sendall(encode_request(umr(5), 8, 0, "leaver"))
            s.close()
        for f in flooders:
            for _ in range(EACH):
                await f.read_frame()
            await f.close()
        await until(lambda: not server.connections)
        assert not server.run_queue and server.pool.held == 0 and server.handling.held == 0

    b = run(body)
    assert len(dropped) == FLOODERS + 20  # every closed connection is forgotten
    assert 1 <= sum(dropped) <= 20  # some leavers' requests were still queued (not started) when they left
    assert FLOODERS * EACH <= b.server.stats.requests[6] <= FLOODERS * EACH + 20 - sum(dropped)


@pytest.mark.parametrize(("budget_s", "most"), [(0.0, 1), (60.0, DISPATCH_BATCH)])
def test_each_loop_round_starts_at_most_a_batch_and_stops_at_the_time_budget(budget_s: float, most: int) -> None:
    per_round: list[int] = []

    async def body(b: SimulatedBroker) -> None:
        server = b.server
        server.dispatch_budget_s = budget_s  # 0: the first request of a round is started, no more
        dispatch = server._dispatch

        def counting_dispatch() -> None:
            before = server.run_queue.dispatches
            dispatch()
            per_round.append(server.run_queue.dispatches - before)

        server._dispatch = counting_dispatch  # type: ignore[method-assign]
        flooders = [await FrameClient.connect(b.host, b.port) for _ in range(20)]
        for f in flooders:
            await f.send_raw(b"".join(encode_request(umr(5), 8, i, "flood") for i in range(10)))
        for f in flooders:
            for _ in range(10):
                await f.read_frame()
            await f.close()

    run(body)
    assert sum(per_round) == 200 and max(per_round) == most and min(per_round) >= 1
