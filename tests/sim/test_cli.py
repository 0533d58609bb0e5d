"""The standalone servers as subprocesses: ``ctrlbatch sim-broker`` and ``ctrlbatch sim-controller``.

Each is started from the venv's ``ctrlbatch`` script, its first line of standard output gives the
port, a real client talks to it, and SIGTERM or SIGINT ends it with exit status 0. Every wait is
bounded; a process still alive at the end of a test is killed by its pid.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctrlbatch.requests import (
    BrokerRegistrationRequest,
    Feature,
    Listener,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataRequest,
    encode_request,
)
from ctrlbatch.sim.client import FrameClient

CTRLBATCH = str(Path(sys.executable).parent / "ctrlbatch")


class Server:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([CTRLBATCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.first_line = self.proc.stdout.readline().strip()

    @property
    def port(self) -> int:
        assert self.first_line.startswith("listening on 127.0.0.1:"), self.first_line
        return int(self.first_line.rsplit(":", 1)[1])

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        self.proc.send_signal(sig)
        _out, err = self.proc.communicate(timeout=20)
        return self.proc.returncode, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.communicate(timeout=20)


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for s in started:
        s.kill()


def umr() -> UpdateMetadataRequest:
    return UpdateMetadataRequest(controller_id=0, controller_epoch=1, broker_epoch=-1, live_brokers=[
        UpdateMetadataBroker(id=1, endpoints=[UpdateMetadataEndpoint(port=1, host="h", listener="PLAINTEXT")])])


async def _ask(port: int, body: object, version: int) -> object:
    async with await FrameClient.connect("127.0.0.1", port) as c:
        _, resp = await c.request(body, version)  # type: ignore[arg-type]
        return resp


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sim_broker_serves_until_a_signal(servers: list[Server], sig: int) -> None:
    s = Server("sim-broker", "--id", "1", "--epoch", "5")
    servers.append(s)
    resp = asyncio.run(_ask(s.port, umr(), 8))
    assert resp.error_code == 0  # type: ignore[attr-defined]
    code, err = s.stop(sig)
    assert code == 0 and "received UpdateMetadata v8" in err


def test_sim_broker_request_size_limit(servers: list[Server]) -> None:
    s = Server("sim-broker", "--id", "1", "--epoch", "5", "--max-request-bytes", "40")
    servers.append(s)
    frame = encode_request(umr(), 8, 1, "client")
    assert len(frame) - 4 > 40

    async def main() -> None:
        async with await FrameClient.connect("127.0.0.1", s.port) as c:
            await c.send_raw(frame)
            with pytest.raises(ConnectionError):
                await c.read_frame()

    asyncio.run(asyncio.wait_for(main(), 10))
    assert s.stop()[0] == 0


@pytest.mark.parametrize(("args", "message"), [
    (["sim-broker", "--id", "1", "--epoch", "5", "--host", "0.0.0.0"], "--host must be a loopback address"),
    (["sim-broker", "--id", "-1", "--epoch", "5"], "--id must be >= 0"),
    (["sim-broker", "--id", "1", "--epoch", "5", "--controller", "nowhere"], "--controller must be HOST:PORT"),
    (["sim-controller", "--cluster-id", "c", "--metadata-version", "9.9-IV9"], "--metadata-version"),
    (["sim-controller", "--cluster-id", "c", "--session-timeout-ms", "0"], "--session-timeout-ms must be > 0"),
])
def test_a_persons_error_exits_1_with_a_message(args: list[str], message: str) -> None:
    r = subprocess.run([CTRLBATCH, *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr and r.stdout == ""


def test_sim_controller_registers_and_feeds_a_broker(servers: list[Server]) -> None:
    ctl = Server("sim-controller", "--cluster-id", "c1", "--migration", "--session-timeout-ms", "5000")
    servers.append(ctl)
    reg = BrokerRegistrationRequest(
        broker_id=7, cluster_id="c1", incarnation_id=uuid.uuid4(), listeners=[Listener(name="PLAINTEXT", host="127.0.0.1", port=1)],
        features=[Feature(name="metadata.version", min_supported_version=21, max_supported_version=21)],
        is_migrating_zk_broker=True, log_dirs=[uuid.UUID(int=(7 << 64) | 500)])
    resp = asyncio.run(_ask(ctl.port, reg, 4))
    assert resp.error_code == 0 and resp.broker_epoch == 1  # type: ignore[attr-defined]
    # a simulated broker that registers by itself gets its UpdateMetadata from the controller
    b = Server("sim-broker", "--id", "2", "--epoch", "5", "--controller", f"127.0.0.1:{ctl.port}", "--cluster-id", "c1")
    servers.append(b)

    async def wait_for_metadata() -> None:
        while True:
            await asyncio.sleep(0.05)
            async with await FrameClient.connect("127.0.0.1", b.port) as c:
                # an UpdateMetadata from an older controller epoch (0 < 1) is rejected once the
                # controller's (epoch 1) has arrived
                _, r = await c.request(UpdateMetadataRequest(controller_id=0, controller_epoch=0, broker_epoch=-1), 8)
                if r.error_code == 11:  # type: ignore[attr-defined]
                    return

    asyncio.run(asyncio.wait_for(wait_for_metadata(), 15))
    code, err = b.stop()
    assert code == 0
    code, err = ctl.stop(signal.SIGINT)
    assert code == 0 and "broker 7 joined (epoch 1)" in err and "broker 2 joined (epoch 2)" in err
