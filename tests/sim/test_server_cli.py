"""The standalone servers' connection options, file-descriptor limit and signal handling, as subprocesses.

Every wait is bounded; a process still alive at the end of a test is killed by its pid.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctrlbatch.requests import UpdateMetadataRequest
from ctrlbatch.sim import serve
from ctrlbatch.sim.client import FrameClient

CTRLBATCH = str(Path(sys.executable).parent / "ctrlbatch")
BROKER = ["sim-broker", "--id", "1", "--epoch", "5"]
CONTROLLER = ["sim-controller", "--cluster-id", "c"]
OPTIONS = {
    "--queued-max-request-bytes": "queued.max.request.bytes",
    "--connections-max-idle-ms": "connections.max.idle.ms",
    "--max-connections": "max.connections",
    "--max-request-bytes": "socket.request.max.bytes",
}


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.communicate(timeout=20)


def start(procs: list[subprocess.Popen[str]], args: list[str], nofile: int | None = None) -> tuple[subprocess.Popen[str], int]:
    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    p = subprocess.Popen([CTRLBATCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    procs.append(p)
    assert p.stdout is not None
    line = p.stdout.readline().strip()
    assert line.startswith("listening on 127.0.0.1:"), line
    return p, int(line.rsplit(":", 1)[1])


@pytest.mark.parametrize("command", [BROKER, CONTROLLER])
def test_help_lists_the_connection_options_with_kafkas_names(command: list[str]) -> None:
    out = subprocess.run([CTRLBATCH, command[0], "--help"], capture_output=True, text=True, timeout=30).stdout
    for option, kafka in OPTIONS.items():
        assert option in out and kafka in out


@pytest.mark.parametrize(("command", "option", "value", "message"), [
    (BROKER, "--queued-max-request-bytes", "0", "--queued-max-request-bytes must be an int >= 1 (or -1), got 0"),
    (BROKER, "--connections-max-idle-ms", "-7", "--connections-max-idle-ms must be an int >= 1 (or -1), got -7"),
    (CONTROLLER, "--max-connections", "-1", "--max-connections must be an int >= 0, got -1"),
    (CONTROLLER, "--max-request-bytes", "-1", "--max-request-bytes must be an int >= 0, got -1"),
])
def test_a_bad_limit_is_named(command: list[str], option: str, value: str, message: str) -> None:
    r = subprocess.run([CTRLBATCH, *command, option, value], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("command", [BROKER, CONTROLLER])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_right_after_the_listening_line_exits_0(procs: list[subprocess.Popen[str]], command: list[str], sig: int) -> None:
    for _ in range(3):
        p, _port = start(procs, command)
        p.send_signal(sig)
        p.send_signal(sig)  # a second one while it stops changes nothing
        _out, err = p.communicate(timeout=20)
        assert p.returncode == 0, err


def test_a_thousand_idle_clients_do_not_lock_out_the_next(procs: list[subprocess.Popen[str]]) -> None:
    """The soft open-file limit, 64 here, is raised to the hard one at start-up."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 2400:
        pytest.fail(f"this test needs a hard open-file limit of at least 2400 (client and server), got {hard}")
    p, port = start(procs, [*BROKER, "--quiet"], nofile=64)

    async def main() -> None:
        idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(1100)]
        async with await FrameClient.connect("127.0.0.1", port) as c:
            _, resp = await c.request(UpdateMetadataRequest(controller_id=0, controller_epoch=1, broker_epoch=-1), 8)
            assert resp.error_code == 0  # type: ignore[attr-defined]
        for _, w in idle:
            w.close()

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2400), hard))  # this side holds 1,100 too
    try:
        asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    p.send_signal(signal.SIGTERM)
    _out, err = p.communicate(timeout=20)
    assert p.returncode == 0 and "open-file limit" not in err


def test_raise_fd_limit_says_so_when_it_cannot(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(serve.resource, "getrlimit", lambda _: (64, 4096))

    def refuse(*_: object) -> None:
        raise ValueError("not allowed")

    monkeypatch.setattr(serve.resource, "setrlimit", refuse)
    assert serve.raise_fd_limit() == (64, 4096)
    assert "cannot raise the open-file limit from 64 to 4096 (not allowed)" in capsys.readouterr().err


def test_idle_connections_of_a_standalone_server_are_closed(procs: list[subprocess.Popen[str]]) -> None:
    p, port = start(procs, [*CONTROLLER, "--connections-max-idle-ms", "2000"])

    async def main() -> float:
        loop = asyncio.get_running_loop()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        t0 = loop.time()
        assert await asyncio.wait_for(reader.read(1), 5) == b""  # closed within 5 s
        writer.close()
        return loop.time() - t0

    assert 1.9 <= asyncio.run(main()) <= 5
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=20)
    assert p.returncode == 0
