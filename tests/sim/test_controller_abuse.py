"""The controller endpoint under abuse, on real loopback sockets (issue 15, points 5 and 6).

The endpoint is wired as ``ctrlbatch sim-controller`` wires it: ControllerEndpoint, Membership,
SimController and the real AsyncControllerChannel. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import logging
import random
import struct
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from ctrlbatch.requests import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    Feature,
    Listener,
    encode_request,
)
from ctrlbatch.sim.client import FrameClient
from ctrlbatch.sim.controller_logic import SimController
from ctrlbatch.sim.controller_server import ControllerEndpoint
from ctrlbatch.sim.controller_state import BrokerEvent, ControllerConfig, EventKind
from ctrlbatch.sim.membership import Membership
from ctrlbatch.transport import AsyncControllerChannel

MV_LEVEL = 21  # 3.9-IV0


def run(coro: Callable[[], Awaitable[Any]], timeout: float = 60) -> Any:
    return asyncio.run(asyncio.wait_for(coro(), timeout))


def registration(broker_id: int, *, name: str = "PLAINTEXT", host: str = "127.0.0.1", port: int = 9092,
                 protocol: int = 0, incarnation: uuid.UUID | None = None) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id="c1", incarnation_id=incarnation or uuid.UUID(int=(broker_id + 1) << 70),
        listeners=[Listener(name=name, host=host, port=port, security_protocol=protocol)],
        features=[Feature(name="metadata.version", min_supported_version=1, max_supported_version=MV_LEVEL)],
        log_dirs=[uuid.UUID(int=((broker_id % 2**32 + 1) << 64) | 500)])


def beat(broker_id: int, epoch: int) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=10**9)


class Wired:
    """The CLI's wiring, in process."""

    def __init__(self, config: ControllerConfig, *, allow_remote: bool = False,
                 fail_for: frozenset[int] = frozenset()) -> None:
        self.channel = AsyncControllerChannel(controller_id=3000, metrics_log_interval_ms=None)
        self.controller = SimController(self.channel, controller_id=3000)
        self.membership = Membership(self.controller, allow_remote=allow_remote)
        self.fenced_at: dict[int, float] = {}
        self.fail_for = fail_for
        self.endpoint = ControllerEndpoint(config, on_events=self._on_events)

    def _on_events(self, events: list[BrokerEvent]) -> None:
        for e in events:
            if e.kind == EventKind.FENCED:
                self.fenced_at[e.broker_id] = time.monotonic()
        # A fail_for broker's handling crashes; the others in the same batch are handled first
        # (brokers that expire in one tick come in one batch: the crash must not keep them live).
        self.membership.apply(self.endpoint.state.registrations, [e for e in events if e.broker_id not in self.fail_for])
        if any(e.broker_id in self.fail_for for e in events):
            raise RuntimeError("this broker's handling crashed")

    async def __aenter__(self) -> Wired:
        await self.endpoint.start()
        self.channel.startup()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.endpoint.stop()
        await self.channel.shutdown()


async def register_and_unfence(c: FrameClient, req: BrokerRegistrationRequest) -> int:
    _, r = await c.request(req, 4)
    assert r.error_code == 0, r
    _, h = await c.request(beat(req.broker_id, r.broker_epoch), 1)
    assert (h.error_code, h.is_fenced) == (0, False), h
    return int(r.broker_epoch)


# ---------------------------------------------------------------- the case: an SSL-only listener


def test_an_ssl_only_registration_then_a_heartbeat_leaves_fencing_alive(caplog: pytest.LogCaptureFixture) -> None:
    """It used to raise KeyError inside the session-expiry task and leave the registration unanswered."""

    async def main() -> None:
        async with Wired(ControllerConfig(cluster_id="c1", session_timeout_ms=300)) as w:
            async with await FrameClient.connect(w.endpoint.host, w.endpoint.port) as c:
                await register_and_unfence(c, registration(5, name="SSL", protocol=1))
                await register_and_unfence(c, registration(6, protocol=1))  # named PLAINTEXT, speaks SSL
                await register_and_unfence(c, registration(1))
            assert 5 not in w.channel.broker_ids and 6 not in w.channel.broker_ids and 1 in w.channel.broker_ids
            start = time.monotonic()
            while len(w.fenced_at) < 3 and time.monotonic() - start < 5:
                await asyncio.sleep(0.01)
            assert set(w.fenced_at) == {1, 5, 6}
            assert w.endpoint.fencing and w.endpoint.failures == 0
            assert w.channel.broker_ids == frozenset()

    with caplog.at_level(logging.WARNING, logger="ctrlbatch.sim"):
        run(main)
    lines = [r.getMessage() for r in caplog.records if "will not connect" in r.getMessage()]
    assert len(lines) == 2 and "no PLAINTEXT listener" in lines[0] and "security protocol 1" in lines[1]


# ---------------------------------------------------------------- background tasks survive, fencing stays on time


def test_a_crashing_broker_handling_does_not_stop_the_others_being_fenced_on_time(caplog: pytest.LogCaptureFixture) -> None:
    """Broker 13's events make the controller's handling raise every time. Its registration and
    heartbeat are still answered, each failure is one log line, and brokers 1-3, silent from a
    known moment, are fenced one session time-out later (plus the expiry task's 100 ms tick and
    a margin for a loaded machine), as is broker 13."""
    timeout_ms = 400

    async def main() -> None:
        async with Wired(ControllerConfig(cluster_id="c1", session_timeout_ms=timeout_ms), fail_for=frozenset({13})) as w:
            async with await FrameClient.connect(w.endpoint.host, w.endpoint.port) as c:
                for b in (1, 2, 3, 13):
                    await register_and_unfence(c, registration(b))
                last_contact = time.monotonic()
            assert w.endpoint.failures == 2  # broker 13 joined, unfenced: both raised
            deadline = last_contact + timeout_ms / 1000 + 2.0
            while len(w.fenced_at) < 4 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert set(w.fenced_at) == {1, 2, 3, 13}
            for b in (1, 2, 3):
                assert timeout_ms / 1000 <= w.fenced_at[b] - last_contact + 0.05 < timeout_ms / 1000 + 2.0
            assert w.endpoint.fencing and w.endpoint.failures == 3  # and its fence
            assert sorted(w.controller.ctx.live_or_shutting_down_broker_ids) == []

    with caplog.at_level(logging.ERROR, logger="ctrlbatch.sim"):
        run(main)
    failures = [r for r in caplog.records if "failed" in r.getMessage()]
    assert len(failures) == 3 and all(r.exc_info is None and "\n" not in r.getMessage() for r in failures)
    assert "RuntimeError: this broker's handling crashed at test_controller_abuse.py:" in failures[0].getMessage()


def test_a_failing_fencing_round_is_logged_once_and_fencing_goes_on(monkeypatch: pytest.MonkeyPatch,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        async with Wired(ControllerConfig(cluster_id="c1", session_timeout_ms=200)) as w:
            real = w.endpoint.state.fence_stale_brokers
            calls = {"n": 0}

            def flaky(now_ms: int) -> list[BrokerEvent]:
                calls["n"] += 1
                if calls["n"] <= 2:
                    raise KeyError("a bug")
                return real(now_ms)

            monkeypatch.setattr(w.endpoint.state, "fence_stale_brokers", flaky)
            async with await FrameClient.connect(w.endpoint.host, w.endpoint.port) as c:
                await register_and_unfence(c, registration(1))
            start = time.monotonic()
            while 1 not in w.fenced_at and time.monotonic() - start < 5:
                await asyncio.sleep(0.01)
            assert 1 in w.fenced_at and w.endpoint.fencing and w.endpoint.failures == 2

    with caplog.at_level(logging.ERROR, logger="ctrlbatch.sim"):
        run(main)
    assert sum("fencing expired sessions failed: KeyError" in r.getMessage() for r in caplog.records) == 2


# ---------------------------------------------------------------- outbound: loopback only


@pytest.mark.parametrize(("host", "shown"), [
    ("10.0.0.1", "'10.0.0.1' is not a loopback address"),
    ("example.com", "'example.com' is not a loopback IP address"),
    ("localhost", "'localhost' is not a loopback IP address"),
    ("evil\nINFO forged line", "'evil\\nINFO forged line' is not a loopback IP address"),
    ("x" * 5000, "... (5000 characters) is not a loopback IP address"),
])
def test_a_registration_naming_another_host_is_answered_and_never_connected_to(
        host: str, shown: str, caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        async with Wired(ControllerConfig(cluster_id="c1")) as w:
            async with await FrameClient.connect(w.endpoint.host, w.endpoint.port) as c:
                epoch = await register_and_unfence(c, registration(8, host=host))
                assert w.endpoint.state.registrations[8].epoch == epoch
            assert 8 not in w.channel.broker_ids and 8 not in w.controller.ctx.live_broker_ids

    with caplog.at_level(logging.WARNING, logger="ctrlbatch.sim"):
        run(main)
    lines = [r.getMessage() for r in caplog.records if "will not connect" in r.getMessage()]
    assert len(lines) == 1 and shown in lines[0] and "\n" not in lines[0] and len(lines[0]) < 400


def test_a_loopback_broker_that_registers_and_is_unfenced_joins_the_view() -> None:
    async def main() -> None:
        async with Wired(ControllerConfig(cluster_id="c1")) as w:
            async with await FrameClient.connect(w.endpoint.host, w.endpoint.port) as c:
                _, r = await c.request(registration(3, host="127.0.0.9"), 4)
                assert 3 not in w.channel.broker_ids  # registered, not yet unfenced: not in the view
                _, h = await c.request(beat(3, r.broker_epoch), 1)
                assert h.is_fenced is False
            assert 3 in w.channel.broker_ids and 3 in w.controller.ctx.live_broker_ids

    run(main)


# ---------------------------------------------------------------- --max-brokers


def test_max_brokers_refuses_a_new_broker_id_with_policy_violation() -> None:
    async def main() -> None:
        async with Wired(ControllerConfig(cluster_id="c1", max_brokers=3, session_timeout_ms=60000)) as w:
            async with await FrameClient.connect(w.endpoint.host, w.endpoint.port) as c:
                for b in (1, 2, 3):
                    _, r = await c.request(registration(b), 4)
                    assert r.error_code == 0
                _, r = await c.request(registration(4), 4)
                assert (r.error_code, r.broker_epoch) == (44, -1)
                _, r = await c.request(registration(2), 4)  # a known id may register again
                assert r.error_code == 0
            assert sorted(w.endpoint.state.registrations) == [1, 2, 3]

    run(main)


# ---------------------------------------------------------------- fuzz: never silence


def _base_requests(rnd: random.Random, i: int) -> bytes:
    b = rnd.choice([rnd.randrange(64), rnd.randrange(-2**31, 2**31)])
    if rnd.random() < 0.6:
        req = registration(
            b, name=rnd.choice(["PLAINTEXT", "SSL", "X", ""]),
            host=rnd.choice(["127.0.0.1", "::1", "10.0.0.1", "example.com", "a\nb", "", "\x00"]),
            port=rnd.randrange(65536), protocol=rnd.choice([0, 0, 1, 2, 3, 9, -1]),
            incarnation=uuid.UUID(int=rnd.getrandbits(128)),
        )
        return encode_request(req, rnd.randrange(2, 5), i, "fuzz")
    hb = BrokerHeartbeatRequest(broker_id=b, broker_epoch=rnd.randrange(-1, 200), current_metadata_offset=rnd.randrange(-1, 400),
                                want_fence=rnd.random() < 0.3, want_shut_down=rnd.random() < 0.1)
    return encode_request(hb, rnd.randrange(2), i, "fuzz")


def _mutate(rnd: random.Random, frame: bytes) -> bytes:
    """Flip, cut or insert bytes after the api key and version; the size prefix stays right (a
    frame that claims more bytes than it has is legitimately waited for)."""
    body = bytearray(frame[4:])
    k = rnd.random()
    if k < 0.35:
        for _ in range(rnd.randrange(1, 4)):
            body[rnd.randrange(4, len(body))] = rnd.randrange(256)
    elif k < 0.5:
        del body[rnd.randrange(4, len(body)):]
    elif k < 0.6:
        p = rnd.randrange(4, len(body))
        body[p:p] = rnd.randbytes(rnd.randrange(1, 8))
    return struct.pack(">i", len(body)) + bytes(body)


def test_fuzzed_requests_all_get_an_answer_or_a_closed_connection() -> None:
    """3,000 valid and mutated registrations and heartbeats over loopback: each gets a response
    frame or EOF within 5 s, never silence; the expiry task is still running at the end."""
    count = 3000

    async def main() -> dict[str, int]:
        rnd = random.Random(15)
        outcomes = {"answered": 0, "closed": 0, "silent": 0}
        async with Wired(ControllerConfig(cluster_id="c1", session_timeout_ms=300, migration_enabled=True,
                                          max_brokers=200)) as w:
            reader = writer = None
            for i in range(count):
                if writer is None:
                    reader, writer = await asyncio.open_connection(w.endpoint.host, w.endpoint.port)
                assert reader is not None
                writer.write(_mutate(rnd, _base_requests(rnd, i)))
                try:
                    head = await asyncio.wait_for(reader.readexactly(4), 5.0)
                except TimeoutError:
                    outcomes["silent"] += 1
                except (asyncio.IncompleteReadError, ConnectionError):
                    outcomes["closed"] += 1
                else:
                    await asyncio.wait_for(reader.readexactly(struct.unpack(">i", head)[0]), 5.0)
                    outcomes["answered"] += 1
                    continue
                writer.close()
                reader = writer = None
            if writer is not None:
                writer.close()
            assert w.endpoint.fencing and w.endpoint.failures == 0
            assert len(w.endpoint.state.registrations) <= 200
        print(outcomes)
        return outcomes

    outcomes = run(main, timeout=240)
    assert outcomes["silent"] == 0, outcomes
    assert outcomes["answered"] > count // 4 and outcomes["closed"] > count // 10, outcomes


# ---------------------------------------------------------------- the broker side: lifecycle and client


def test_a_lifecycle_survives_an_unexpected_failure_and_registers(monkeypatch: pytest.MonkeyPatch,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    from ctrlbatch.sim.broker_state import BrokerState
    from ctrlbatch.sim.lifecycle import BrokerLifecycle

    async def main() -> None:
        async with Wired(ControllerConfig(cluster_id="c1", migration_enabled=True)) as w:
            state = BrokerState(4, 100, migration_enabled=True)
            lc = BrokerLifecycle(lambda: state, ("127.0.0.1", 9999), (w.endpoint.host, w.endpoint.port), "c1")
            real = lc._registration
            calls = {"n": 0}

            def flaky() -> BrokerRegistrationRequest:
                calls["n"] += 1
                if calls["n"] == 1:
                    raise RuntimeError("a bug in building the request")
                return real()

            monkeypatch.setattr(lc, "_registration", flaky)
            lc.start()
            try:
                await asyncio.wait_for(lc.registered.wait(), 10)
                assert lc.failures == 1 and lc.epoch is not None
            finally:
                await lc.stop()

    with caplog.at_level(logging.ERROR, logger="ctrlbatch.sim"):
        run(main)
    lines = [r.getMessage() for r in caplog.records if "exchange failed" in r.getMessage()]
    assert len(lines) == 1 and "RuntimeError: a bug in building the request" in lines[0]


@pytest.mark.parametrize("size", [-1, 2**31 - 1])
def test_the_client_refuses_a_response_size_out_of_bounds(size: int) -> None:
    async def main() -> None:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readexactly(4)
            await reader.readexactly(int.from_bytes(head, "big"))
            writer.write(struct.pack(">i", size) + b"\x00" * 8)
            await writer.drain()
            await reader.read()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        try:
            async with await FrameClient.connect("127.0.0.1", server.sockets[0].getsockname()[1]) as c:
                with pytest.raises(ConnectionError, match=f"response size {size} is not in 0..104857600"):
                    await c.request(beat(1, 1), 1)
        finally:
            server.close()
            await server.wait_closed()

    run(main)
