"""Both frame servers (the simulated broker, the controller endpoint) under hostile or careless
clients on real loopback sockets, at small sizes (issue 24): the pin attack, requests that fail at
every stage, fair service, the decoded-size and answer budgets, ApiVersions. Every wait is bounded;
nothing is timed for speed (benchmarks/server_attack_bench.py measures that)."""

from __future__ import annotations

import asyncio
import io
import logging
import struct
import uuid
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import kio.serial
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v0.response import ApiVersionsResponse as KioV0
from kio.schema.api_versions.v1.response import ApiVersionsResponse as KioV1
from kio.schema.api_versions.v2.response import ApiVersionsResponse as KioV2
from kio.schema.api_versions.v3.request import ApiVersionsRequest as KioRequestV3
from kio.schema.api_versions.v3.response import ApiVersionsResponse as KioV3
from kio.schema.api_versions.v4.request import ApiVersionsRequest as KioRequestV4
from kio.schema.api_versions.v4.response import ApiVersionsResponse as KioV4
from kio.schema.request_header.v2.header import RequestHeader as KioHeaderV2

from ctrlbatch.context import MetadataVersion
from ctrlbatch.requests import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    Feature,
    Listener,
    StopReplicaRequest,
    StopReplicaTopicV1,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataRequest,
    encode_request,
    encode_response,
)
from ctrlbatch.requests.model import Message
from ctrlbatch.sim.api_versions import decode_api_versions_response, encode_api_versions_request
from ctrlbatch.sim.broker_server import SimulatedBroker
from ctrlbatch.sim.client import FrameClient
from ctrlbatch.sim.controller_server import ControllerEndpoint
from ctrlbatch.sim.controller_state import ControllerConfig
from ctrlbatch.sim.handler_threads import run_in_handler_thread
from ctrlbatch.sim.server import (
    FIRST_CHUNK_BYTES,
    SMALL_FRAME_BYTES,
    Connection,
    FrameServer,
    ServerLimits,
    decoded_estimate,
)

from .sockets import closed_by_server, until

EPOCH = 10
TIMEOUT = 20
KIO_RESPONSES = {0: KioV0, 1: KioV1, 2: KioV2, 3: KioV3, 4: KioV4}


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


def run_controller(fn: Callable[[ControllerEndpoint], Awaitable[Any]], limits: ServerLimits | None = None,
                   **config: Any) -> ControllerEndpoint:
    async def main() -> ControllerEndpoint:
        e = ControllerEndpoint(ControllerConfig("cluster", **config))
        if limits is not None:
            e.server.configure(limits)
        await e.start()
        try:
            await asyncio.wait_for(fn(e), TIMEOUT)
        finally:
            await e.stop()
        return e

    return asyncio.run(main())


def umr(epoch: int = 5, brokers: int = 1) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(controller_id=0, controller_epoch=epoch, broker_epoch=EPOCH, live_brokers=[
        UpdateMetadataBroker(id=i, endpoints=[UpdateMetadataEndpoint(port=1, host="h", listener="PLAINTEXT")])
        for i in range(brokers)])


def registration(broker_id: int) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id="cluster", incarnation_id=uuid.UUID(int=broker_id + 1000),
        listeners=[Listener(name="PLAINTEXT", host="127.0.0.1", port=9092, security_protocol=0)],
        features=[Feature(name="metadata.version", min_supported_version=1,
                          max_supported_version=MetadataVersion.IBP_3_9_IV0.feature_level)],
        log_dirs=[uuid.UUID(int=(broker_id + 1) << 64)])




# ---------------------------------------------------------------------------- the pin attack


def test_size_prefixes_alone_do_not_pin_the_budget_and_slow_frames_are_closed() -> None:
    budget = 300_000
    prefix = struct.pack(">i", budget // 3 + 1)  # three prefixes add up to more than the budget

    async def body(b: SimulatedBroker) -> None:
        pins = [await FrameClient.connect(b.host, b.port) for _ in range(3)]
        for p in pins:
            await p.send_raw(prefix + b"x")  # one byte of the frame: a frame has begun
        await until(lambda: b.server.pool.held > 0)
        await asyncio.sleep(0.05)
        assert b.server.pool.held == 3 * FIRST_CHUNK_BYTES  # the first step of each, not the prefixes' sum
        for i in range(6):  # every other client is answered, small and big (40 KB) requests alike
            async with await FrameClient.connect(b.host, b.port) as c:
                _, resp = await c.request(umr(6 + i, brokers=2000 if i % 2 else 1), 8, timeout=1.0)
                assert resp.error_code == 0  # type: ignore[attr-defined]
        for p in pins:  # the frame timeout (300 ms) closes them and gives back what they held
            assert await closed_by_server(p, 5)
            await p.close()
        await until(lambda: b.server.pool.held == 0)

    b = run(body, limits=ServerLimits(queued_max_request_bytes=budget, frame_timeout_ms=300))
    assert b.server.stats.slow_frames == 3 and b.state.controller_epoch == 11


def test_a_heartbeating_broker_stays_unfenced_while_others_pin_the_controller() -> None:
    async def body(e: ControllerEndpoint) -> None:
        async with await FrameClient.connect(e.host, e.port) as c:
            _, reg = await c.request(registration(1), 4)
            epoch = reg.broker_epoch  # type: ignore[attr-defined]
            _, hb = await c.request(BrokerHeartbeatRequest(broker_id=1, broker_epoch=epoch, current_metadata_offset=10**6), 1)
            assert not hb.is_fenced  # type: ignore[attr-defined]
            pins = [await FrameClient.connect(e.host, e.port) for _ in range(3)]
            for p in pins:
                await p.send_raw(struct.pack(">i", 200_000) + b"x")
            for _ in range(8):  # 1.6 s of heartbeats, more than the 1 s session
                _, hb = await c.request(BrokerHeartbeatRequest(broker_id=1, broker_epoch=epoch,
                                                               current_metadata_offset=10**6), 1, timeout=0.5)
                assert hb.error_code == 0 and not hb.is_fenced  # type: ignore[attr-defined]
                await asyncio.sleep(0.2)
            for p in pins:
                await p.close()

    e = run_controller(body, ServerLimits(queued_max_request_bytes=500_000), session_timeout_ms=1000)
    assert not e.state.registrations[1].state.fenced


# ---------------------------------------------------------------------------- failures at every stage


class Boom(Exception):
    pass


def _raise(exc: BaseException) -> Callable[..., Any]:
    def fail(*_: object) -> Any:
        raise exc

    return fail


async def _closed_unanswered(host: str, port: int, frame: bytes) -> None:
    async with await FrameClient.connect(host, port) as c:
        await c.send_raw(frame)
        assert await closed_by_server(c, 5)  # a close, not a wait for the idle limit


def _inject(server: FrameServer, stage: str, exc: BaseException) -> None:
    if stage == "decode":
        server.decode = _raise(exc)
    elif stage == "handle":
        async def failing(_conn: Connection, _decoded: object) -> Message | None:
            raise exc

        server.handler = failing
    else:
        server.encode = _raise(exc)


@pytest.mark.parametrize("stage", ["decode", "handle", "encode"])
@pytest.mark.parametrize("big", [False, True])
def test_a_failure_at_any_stage_on_the_broker_closes_with_one_line(stage: str, big: bool,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    frame = encode_request(umr(5, brokers=300 if big else 1), 8, 1, "c")  # 300 brokers: offloaded

    async def body(b: SimulatedBroker) -> None:
        _inject(b.server, stage, Boom(f"injected at {stage}"))
        await _closed_unanswered(b.host, b.port, frame)

    with caplog.at_level(logging.WARNING, logger="ctrlbatch.sim.server"):
        b = run(body, limits=ServerLimits(offload_request_bytes=5000))
    lines = [r.getMessage() for r in caplog.records if r.name == "ctrlbatch.sim.server"]
    assert len(lines) == 1 and f"injected at {stage}" in lines[0] and "closing the connection" in lines[0]
    assert b.server.stats.failed == 1 and b.server.pool.held == 0 and b.server.handling.held == 0


@pytest.mark.parametrize("stage", ["decode", "handle", "encode"])
def test_a_failure_at_any_stage_on_the_controller_closes_with_one_line(stage: str,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    frame = encode_request(registration(1), 4, 1, "c")

    async def body(e: ControllerEndpoint) -> None:
        _inject(e.server, stage, Boom(f"injected at {stage}"))
        await _closed_unanswered(e.host, e.port, frame)

    with caplog.at_level(logging.WARNING, logger="ctrlbatch.sim.server"):
        e = run_controller(body)
    lines = [r.getMessage() for r in caplog.records if r.name == "ctrlbatch.sim.server"]
    assert len(lines) == 1 and f"injected at {stage}" in lines[0]
    assert e.server.stats.failed == 1


def test_a_memory_error_on_a_large_answer_closes_the_connection(caplog: pytest.LogCaptureFixture) -> None:
    """A StopReplica v1 naming one long topic for many partitions: its answer repeats the name per
    partition. The encoder fails as it would under a memory cap; the client sees a close."""
    request = StopReplicaRequest(controller_id=0, controller_epoch=5, broker_epoch=EPOCH,
                                 topics=[StopReplicaTopicV1(name="t" * 1000, partition_indexes=list(range(2000)))])

    def encode(response: Message, *args: int) -> bytes:
        if len(getattr(response, "partition_errors", ())) > 1000:
            raise MemoryError("no room for a 2 MB answer")
        return encode_response(response, *args)

    async def body(b: SimulatedBroker) -> None:
        b.server.encode = encode
        await _closed_unanswered(b.host, b.port, encode_request(request, 1, 1, "c"))
        async with await FrameClient.connect(b.host, b.port) as c:  # the server goes on
            _, resp = await c.request(umr(6), 8)
            assert resp.error_code == 0  # type: ignore[attr-defined]

    with caplog.at_level(logging.WARNING, logger="ctrlbatch.sim.server"):
        b = run(body)
    assert any("MemoryError" in r.getMessage() for r in caplog.records)
    assert b.server.stats.failed == 1 and b.server.handling.held == 0


def test_repeated_failures_are_summarised_not_logged_per_request(caplog: pytest.LogCaptureFixture) -> None:
    async def body(b: SimulatedBroker) -> None:
        for _ in range(40):  # 40 clients that send a frame size over the limit and go
            async with await FrameClient.connect(b.host, b.port) as c:
                await c.send_raw(struct.pack(">i", 10**9))
                assert await closed_by_server(c, 5)

    with caplog.at_level(logging.INFO, logger="ctrlbatch.sim.server"):
        b = run(body)
    assert b.server.stats.rejected_frames == 40
    assert len([r for r in caplog.records if r.name == "ctrlbatch.sim.server"]) == 5  # the burst; the rest counted
    assert b.server.limiter.suppressed_total == 35


def test_a_client_that_pipelines_and_leaves_costs_no_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    frames = b"".join(encode_request(umr(5 + i), 8, i, "c") for i in range(500))

    async def body(b: SimulatedBroker) -> None:
        c = await FrameClient.connect(b.host, b.port)
        await c.send_raw(frames)
        c.writer.transport.abort()
        await until(lambda: not b.server.connections)

    with caplog.at_level(logging.INFO, logger="ctrlbatch"):
        b = run(body)
    assert len(caplog.records) <= 1 and len(b.received) < 500


# ---------------------------------------------------------------------------- fair service


def test_a_polite_request_is_served_between_a_flooders_requests() -> None:
    flood = b"".join(encode_request(umr(5), 8, i, "flood") for i in range(400))
    sent_at: list[int] = []

    async def body(b: SimulatedBroker) -> None:
        async with await FrameClient.connect(b.host, b.port) as flooder, \
                await FrameClient.connect(b.host, b.port) as polite:
            await flooder.send_raw(flood)  # all in the socket at once
            await until(lambda: len(b.received) >= 2)
            sent_at.append(len(b.received))
            _, resp = await polite.request(umr(5), 8)
            assert resp.error_code == 0  # type: ignore[attr-defined]
            for _ in range(400):
                await flooder.read_frame()

    b = run(body)
    polite_at = next(r.ordinal for r in b.received if r.connection == 2)
    # One request in flight per connection, and a fair run queue (fair_queue.py): the polite request
    # is not queued behind the flooder's 400 (before: every frame of a 64 KiB read was handled first).
    assert polite_at - sent_at[0] <= 5
    assert b.server.stats.pipelined == 399


# ---------------------------------------------------------------------------- budgets


def test_big_requests_are_handled_one_at_a_time_within_the_decoded_budget() -> None:
    frames = [encode_request(umr(5 + i, brokers=2000), 8, 1, "c") for i in range(6)]  # 40 KB, 800 KB decoded
    estimate = decoded_estimate(frames[0][4:])
    budget = 1_000_000

    async def body(b: SimulatedBroker) -> None:
        clients = [await FrameClient.connect(b.host, b.port) for _ in frames]
        for c, f in zip(clients, frames, strict=True):
            await c.send_raw(f)
        for c in clients:
            assert struct.unpack_from(">i", await c.read_frame())[0] == 1
            await c.close()
        await until(lambda: b.server.handling.held == 0 and b.server.pool.held == 0)

    b = run(body, limits=ServerLimits(queued_max_request_bytes=budget, offload_request_bytes=5000))
    assert estimate > budget // 2 and b.server.handling.peak <= max(budget, estimate)
    assert b.server.pool.peak <= budget and b.server.handling.waits >= 1


def test_stop_replica_answers_are_budgeted_across_connections() -> None:
    request = StopReplicaRequest(controller_id=0, controller_epoch=5, broker_epoch=EPOCH,
                                 topics=[StopReplicaTopicV1(name="t" * 4000, partition_indexes=list(range(4000)))])
    frame = encode_request(request, 1, 1, "c")  # 20 KB asking for a 16 MB answer (more than socket buffers hold)
    budget = 20_000_000

    async def body(b: SimulatedBroker) -> None:
        clients = [await FrameClient.connect(b.host, b.port) for _ in range(4)]
        for c in clients:
            await c.send_raw(frame)
        sizes = [len(await c.read_frame()) for c in clients]
        assert all(s > 16_000_000 for s in sizes)
        for c in clients:
            await c.close()

    b = run(body, limits=ServerLimits(queued_max_request_bytes=budget))
    # each holds twice its answer (pieces, then joined): 32 MB, more than the budget, so one at a time
    assert b.server.handling.peak <= 2 * 16_200_000 and b.server.handling.waits >= 3


def test_a_handler_thread_drops_its_job_when_done() -> None:
    class Job:
        pass

    async def main() -> weakref.ref[Job]:
        job = Job()
        ref = weakref.ref(job)
        assert await run_in_handler_thread(lambda j: j is not None, job)
        del job
        return ref

    ref = asyncio.run(main())
    assert ref() is None  # not kept by the idle thread until its next job


# ---------------------------------------------------------------------------- ApiVersions


async def _api_versions(host: str, port: int, version: int, **kw: Any) -> tuple[bytes, bool]:
    async with await FrameClient.connect(host, port) as c:
        await c.send_raw(encode_api_versions_request(version, 7, **kw))
        frame = await c.read_frame()
        return frame, not await closed_by_server(c, 0.05)


@pytest.mark.parametrize("version", range(5))
def test_api_versions_is_answered_on_both_servers_as_kio_reads_it(version: int) -> None:
    answers: dict[str, bytes] = {}

    async def broker(b: SimulatedBroker) -> None:
        answers["broker"], still_open = await _api_versions(b.host, b.port, version)
        assert still_open

    async def controller(e: ControllerEndpoint) -> None:
        answers["controller"], still_open = await _api_versions(e.host, e.port, version)
        assert still_open

    run(broker)
    run_controller(controller)
    expected = {"broker": [(4, 0, 7), (5, 0, 4), (6, 0, 8), (18, 0, 4)],
                "controller": [(18, 0, 4), (62, 0, 5), (63, 0, 2)]}
    for side, frame in answers.items():
        cid, error, apis, throttle = decode_api_versions_response(frame, version)
        assert (cid, error, apis, throttle) == (7, 0, expected[side], 0)
        theirs, used = kio.serial.entity_reader(KIO_RESPONSES[version])(frame[4:], 0)  # after the v0 header
        assert used == len(frame) - 4 and theirs.error_code == 0
        assert [(k.api_key, k.min_version, k.max_version) for k in theirs.api_keys] == expected[side]


@pytest.mark.parametrize("version", [5, 99, -1])
def test_an_unsupported_api_versions_version_gets_kafkas_v0_answer(version: int) -> None:
    async def body(b: SimulatedBroker) -> None:
        frame, still_open = await _api_versions(b.host, b.port, version)
        assert still_open
        assert decode_api_versions_response(frame, 0) == (7, 35, [(18, 0, 4)], 0)
        theirs, _ = kio.serial.entity_reader(KioV0)(frame[4:], 0)
        assert theirs.error_code == 35

    run(body)


def test_an_api_versions_request_from_kio_is_answered_and_a_bad_software_name_is_invalid() -> None:
    buf = io.BytesIO()
    kio.serial.entity_writer(KioHeaderV2)(buf, KioHeaderV2(request_api_key=18, request_api_version=4,  # type: ignore[arg-type]
                                                            correlation_id=3, client_id="kio"))  # type: ignore[arg-type]
    kio.serial.entity_writer(KioRequestV4)(buf, KioRequestV4(client_software_name="kio", client_software_version="0.5.0"))
    raw = buf.getvalue()

    async def body(e: ControllerEndpoint) -> None:
        async with await FrameClient.connect(e.host, e.port) as c:
            await c.send_raw(struct.pack(">i", len(raw)) + raw)
            assert decode_api_versions_response(await c.read_frame(), 4)[:2] == (3, 0)
        frame, still_open = await _api_versions(e.host, e.port, 3, software=("bad name!", "1"))
        assert still_open and decode_api_versions_response(frame, 3) == (7, 42, [], 0)

    run_controller(body)
    assert KioRequestV3 is not None


@settings(max_examples=30, deadline=None)
@given(version=st.integers(0, 4), cut=st.integers(1, 40))
def test_a_truncated_api_versions_request_closes_the_connection(version: int, cut: int) -> None:
    whole = encode_api_versions_request(version, 1)
    body_bytes = whole[4:]
    cut = min(cut, len(body_bytes) - 1)
    frame = struct.pack(">i", cut) + body_bytes[:cut]

    async def body(b: SimulatedBroker) -> None:
        async with await FrameClient.connect(b.host, b.port) as c:
            await c.send_raw(frame)
            try:
                answer = await asyncio.wait_for(c.read_frame(), 5)
            except ConnectionError:
                return  # closed: a malformed request
            # answered only when the cut left a whole v0-v2 header (their bodies are empty) and
            # the header's client id is whole
            assert version < 3 and decode_api_versions_response(answer, version)[1] == 0

    run(body)


def test_small_frame_bytes_covers_heartbeats_and_registrations() -> None:
    assert len(encode_request(registration(1), 4, 1, "c")) < SMALL_FRAME_BYTES
    assert len(encode_request(BrokerHeartbeatRequest(broker_id=1, broker_epoch=1), 1, 1, "c")) < 100


def test_big_frames_that_share_out_the_budget_all_complete(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four 300 KB frames arriving at once in 64 KiB chunks with a 400 KB budget: without the pool's
    overdraft each would hold part of the budget and wait for the others for ever."""
    import ctrlbatch.sim.server as server_module

    monkeypatch.setattr(server_module, "CHUNK_BYTES", 65536)
    frames = [encode_request(umr(5 + i, brokers=15000), 8, 1, "c") for i in range(4)]
    budget = 400_000

    async def body(b: SimulatedBroker) -> None:
        clients = [await FrameClient.connect(b.host, b.port) for _ in frames]
        for c, f in zip(clients, frames, strict=True):
            c.writer.write(f)
        for c in clients:
            assert struct.unpack_from(">i", await c.read_frame())[0] == 1
            await c.close()

    b = run(body, limits=ServerLimits(queued_max_request_bytes=budget, offload_request_bytes=5000))
    assert len(frames[0]) > budget // 2 and b.server.pool.waits >= 1
    assert b.server.pool.peak <= budget + len(frames[0])  # over the budget by one frame at most


def test_what_a_failed_answer_held_is_freed_at_once() -> None:
    """An encoder that fails with a half-built answer in its locals, on a handler thread (where the
    collector is paused, then frozen): once the connection is closed, the half-built answer is gone."""
    class HalfBuilt:
        pass

    refs: list[weakref.ref[HalfBuilt]] = []

    def encode(response: Message, *args: int) -> bytes:
        pieces = HalfBuilt()
        refs.append(weakref.ref(pieces))
        try:
            raise MemoryError("no room")
        except MemoryError as e:  # as a codec does: the error it raises has the first as its context
            raise ValueError("encoding failed") from e

    async def body(b: SimulatedBroker) -> None:
        b.server.encode = encode
        await _closed_unanswered(b.host, b.port, encode_request(umr(5, brokers=300), 8, 1, "c"))
        await until(lambda: b.server.stats.failed == 1)

    run(body, limits=ServerLimits(offload_request_bytes=5000))
    assert len(refs) == 1 and refs[0]() is None
