"""A wrong or unreachable ``--master`` is one line within seconds, before any JVM starts
(replay/spark/master.py). Loopback only: an unused port stands for a master that is down."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.replay.spark.master import MASTER_CONNECT_TIMEOUT_S, MasterError, check_master, local_cores


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("url", ["local", "local[2]", "local[*]", "local[4,3]", "local-cluster[2,1,1024]",
                                 "yarn", "k8s://https://127.0.0.1:6443", "mesos://127.0.0.1:5050"])
def test_spark_forms_that_need_no_probe_are_accepted(url: str) -> None:
    check_master(url)


@pytest.mark.parametrize("url", ["bogus", "local[2", "spark://127.0.0.1", "spark://:7077x", "spark:/127.0.0.1:7077", ""])
def test_malformed_masters_name_the_accepted_forms(url: str) -> None:
    with pytest.raises(MasterError, match=r"is not a Spark master URL \(one of: local, .*spark://HOST:PORT"):
        check_master(url)


def test_a_master_that_is_down_is_one_line_naming_each_address() -> None:
    a, b = _unused_port(), _unused_port()
    start = time.monotonic()
    with pytest.raises(MasterError) as e:
        check_master(f"spark://127.0.0.1:{a},127.0.0.1:{b}")
    assert time.monotonic() - start < MASTER_CONNECT_TIMEOUT_S
    text = str(e.value)
    assert "\n" not in text
    assert f"127.0.0.1:{a}: Connection refused" in text and f"127.0.0.1:{b}: Connection refused" in text


def test_one_listening_address_of_several_is_enough() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        check_master(f"spark://127.0.0.1:{_unused_port()},127.0.0.1:{port}")


@given(st.integers(min_value=65536, max_value=10**6))
def test_an_out_of_range_port_is_refused_without_a_connection(port: int) -> None:
    with pytest.raises(MasterError, match=f"port {port} is out of range"):
        check_master(f"spark://127.0.0.1:{port}")


def test_the_command_prints_one_line_and_exits_1(sample_dir: Path) -> None:
    url = f"spark://127.0.0.1:{_unused_port()}"
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ctrlbatch.cli", "replay", str(sample_dir), "--master", url, "--quiet"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"ctrlbatch replay: error: --master: cannot reach the Spark master {url} within 5 s "
        f"({url[len('spark://'):]}: Connection refused); is it running, and reachable from this machine?"
    ]
    assert time.monotonic() - start < 30  # no JVM was started: the interpreter's start-up only


def test_a_listener_that_is_not_a_master_ends_in_one_line(sample_dir: Path) -> None:
    """The port accepts but never speaks Spark: Spark gives up after its fixed 3 x 20 s, and the
    command says so in one line, with no Java trace or log line (the slowest case: about 80 s)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        url = f"spark://127.0.0.1:{server.getsockname()[1]}"
        proc = subprocess.run([sys.executable, "-m", "ctrlbatch.cli", "replay", str(sample_dir), "--master", url, "--quiet"],
                              capture_output=True, text=True, timeout=150)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"ctrlbatch replay: error: --master: the Spark application was stopped before it started: the master {url} "
        "did not register it (for spark://, Spark gives up after 3 x 20 s: is that address a Spark master?)"
    ]


@pytest.mark.parametrize(("url", "cores"), [
    ("local", 1), ("local[2]", 2), ("local[*]", os.cpu_count()), ("local[4,3]", 4), ("local[*, 2]", os.cpu_count()),
    ("local[0]", None), ("local-cluster[2,1,1024]", None), ("spark://127.0.0.1:7077", None), ("yarn", None),
])
def test_local_cores_before_any_jvm(url: str, cores: int | None) -> None:
    """master.local_cores: a local master's default parallelism read from its URL (what the
    replay's early cuts are made for); None where only the cluster knows."""
    assert local_cores(url) == cores
