"""``ctrlbatch sim-controller`` as a subprocess under abuse: its log stays short, its fencing alive.

Each server is started from the venv's ``ctrlbatch`` script; every wait is bounded and a process
still alive at the end of a test is killed by its pid.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctrlbatch.requests import BrokerHeartbeatRequest, BrokerRegistrationRequest, Feature, Listener
from ctrlbatch.sim.client import FrameClient

CTRLBATCH = str(Path(sys.executable).parent / "ctrlbatch")


class Controller:
    def __init__(self, *args: str, nofile: int | None = None) -> None:
        def limit() -> None:  # runs in the child only
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen([CTRLBATCH, "sim-controller", "--cluster-id", "c1", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, preexec_fn=limit)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        assert line.startswith("listening on 127.0.0.1:"), line
        self.port = int(line.rsplit(":", 1)[1])

    def stop(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGTERM)
        _out, err = self.proc.communicate(timeout=20)
        return self.proc.returncode, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.communicate(timeout=20)


@pytest.fixture
def controllers() -> Iterator[list[Controller]]:
    started: list[Controller] = []
    yield started
    for c in started:
        c.kill()


def registration(broker_id: int, name: str = "PLAINTEXT", protocol: int = 0, host: str = "127.0.0.1") -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id="c1", incarnation_id=uuid.uuid4(),
        listeners=[Listener(name=name, host=host, port=1, security_protocol=protocol)],
        features=[Feature(name="metadata.version", min_supported_version=1, max_supported_version=21)],
        log_dirs=[uuid.UUID(int=((broker_id + 1) << 64) | 500)])


async def _register_and_beat(port: int, regs: list[BrokerRegistrationRequest]) -> list[int]:
    codes = []
    async with await FrameClient.connect("127.0.0.1", port) as c:
        for req in regs:
            _, r = await c.request(req, 4, timeout=5)
            codes.append(r.error_code)  # type: ignore[attr-defined]
            if r.error_code == 0:  # type: ignore[attr-defined]
                _, h = await c.request(BrokerHeartbeatRequest(broker_id=req.broker_id, broker_epoch=r.broker_epoch,  # type: ignore[attr-defined]
                                                              current_metadata_offset=10**6), 1, timeout=5)
                assert h.error_code == 0 and h.is_fenced is False  # type: ignore[attr-defined]
    return codes


def test_the_ssl_only_registration_is_answered_and_every_broker_is_still_fenced(controllers: list[Controller]) -> None:
    ctl = Controller("--session-timeout-ms", "300")
    controllers.append(ctl)
    regs = [registration(5, name="SSL", protocol=1), registration(1), registration(2, host="10.1.2.3")]
    assert asyncio.run(asyncio.wait_for(_register_and_beat(ctl.port, regs), 20)) == [0, 0, 0]
    time.sleep(1.5)  # five session time-outs
    code, err = ctl.stop()
    assert code == 0 and "Traceback" not in err, err
    for b in (1, 2, 5):
        assert f"broker {b} fenced" in err
    assert err.count("will not connect") == 2 and "'10.1.2.3' is not a loopback address" in err


def test_max_brokers_answers_policy_violation(controllers: list[Controller]) -> None:
    ctl = Controller("--max-brokers", "2")
    controllers.append(ctl)
    regs = [registration(1), registration(2), registration(3)]
    assert asyncio.run(asyncio.wait_for(_register_and_beat(ctl.port, regs), 20)) == [0, 0, 44]
    assert ctl.stop()[0] == 0


def test_max_brokers_must_be_positive() -> None:
    r = subprocess.run([CTRLBATCH, "sim-controller", "--cluster-id", "c", "--max-brokers", "0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "--max-brokers must be >= 1, got 0" in r.stderr and "Traceback" not in r.stderr


def _bad_frames(port: int, count: int) -> None:
    """count connections, each sending a frame that cannot be decoded (closed, logged)."""
    frame = struct.pack(">ihhi", 10, 4, 7, 1) + struct.pack(">h", 0)
    for _ in range(count):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(frame)
            s.settimeout(5)
            assert s.recv(10) == b""  # closed, no answer


@pytest.mark.parametrize("quiet", [False, True])
def test_repeated_warnings_are_rate_limited_and_quiet_silences_them(controllers: list[Controller], quiet: bool) -> None:
    ctl = Controller(*(["--quiet"] if quiet else []))
    controllers.append(ctl)
    _bad_frames(ctl.port, 300)
    code, err = ctl.stop()
    assert code == 0
    warnings = [line for line in err.splitlines() if " WARNING " in line]
    if quiet:
        assert warnings == [] and err == ""
    else:
        lines = [w for w in warnings if "undecodable request" in w]
        assert 2 <= len(lines) <= 20 and "closing the connection" in lines[0]
        assert lines[-1].endswith("(at most a few per 10 s)]")  # at exit: the rest, summarised
        shown = sum(1 for w in lines[:-1])
        suppressed = sum(int(w.rsplit("[", 1)[1].split()[0]) for w in lines if "similar messages suppressed" in w)
        assert shown + suppressed == 300  # every line accounted for


def test_running_out_of_file_descriptors_does_not_flood_standard_error(controllers: list[Controller]) -> None:
    """accept() fails with EMFILE thousands of times a second once the child's 40 descriptors are
    used up; the loop's exception handler reports it once (it used to print ~160 KB in 6 s)."""
    ctl = Controller("--quiet", nofile=40)
    controllers.append(ctl)
    socks: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and len(socks) < 150:
            try:
                socks.append(socket.create_connection(("127.0.0.1", ctl.port), timeout=1))
            except OSError:
                time.sleep(0.01)
        time.sleep(2)
    finally:
        for s in socks:
            s.close()
    code, err = ctl.stop()
    assert code == 0 and len(socks) > 40
    assert err.count("out of system resource") == 1 and len(err) < 4000, err[:4000]
