"""A real Spark standalone cluster on 127.0.0.1 (one master and two workers, started with the
``spark-class`` launcher shipped in pyspark) runs ``ctrlbatch replay`` submitted with
``spark-submit``, with one executor on each worker, and writes the same rows as the sequential
engine.

Harness rules: every JVM runs in its own process group (start_new_session) so teardown reaches
the executors the worker forks; every wait is bounded; teardown is SIGTERM, a bounded wait, then
SIGKILL, in a finally; the JVM logs are attached to any failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import attrs
import pyarrow.parquet as pq
import pytest

from ctrlbatch.replay.spark.session import quiet_log4j_file

START_TIMEOUT = 90.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_bin(name: str) -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / name


def cluster_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_HOSTNAME="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        TZ="UTC",
    )
    env.pop("SPARK_HOME", None)
    return env


@attrs.frozen
class Cluster:
    master_url: str
    ui_port: int
    logs: Path

    def log_text(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}" for p in sorted(self.logs.glob("*.log")))


def _wait(what: str, check: object, procs: list[subprocess.Popen[bytes]], logs: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: a JVM exited with {p.returncode}\n" + Cluster("", 0, logs).log_text())
        if check():  # type: ignore[operator]
            return
        time.sleep(0.5)
    raise TimeoutError(f"{what}: not ready after {START_TIMEOUT:.0f} s\n" + Cluster("", 0, logs).log_text())


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
            import json

            return sum(1 for w in json.load(r).get("workers", []) if w.get("state") == "ALIVE")
    except OSError:
        return 0


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in reversed(procs):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):  # executors left in the group
            os.killpg(p.pid, signal.SIGKILL)


@contextlib.contextmanager
def standalone_cluster(workdir: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g") -> Iterator[Cluster]:
    """Start a master and ``workers`` workers on 127.0.0.1 (worker i works in ``work-<i>``);
    yield the cluster; stop them all (and their executors)."""
    logs = workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = cluster_env()
    env["SPARK_LOG_DIR"] = str(logs)
    port, ui = free_port(), free_port()
    klass = str(spark_bin("spark-class"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(logs / "master.log", "wb") as out:
            procs.append(subprocess.Popen(
                [klass, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                 "--webui-port", str(ui)],
                env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            ))
        _wait("spark master", lambda: _listening(port) and _listening(ui), procs, logs)
        url = f"spark://127.0.0.1:{port}"
        for i in range(workers):
            work = workdir / f"work-{i}"
            wenv = dict(env, SPARK_WORKER_DIR=str(work))
            with open(logs / f"worker-{i}.log", "wb") as out:
                procs.append(subprocess.Popen(
                    [klass, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                     "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", str(cores),
                     "--memory", memory, "--work-dir", str(work)],
                    env=wenv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                ))
        _wait(f"{workers} spark workers", lambda: _alive_workers(ui) >= workers, procs, logs)
        yield Cluster(url, ui, logs)
    finally:
        _stop(procs)


def spark_submit(
    cluster: Cluster, app: Path, args: list[str], *, executors: int = 2, timeout: float = 300.0
) -> subprocess.CompletedProcess[str]:
    """Run ``app`` on the cluster with spark-submit (client mode; the driver uses this venv),
    on ``executors`` one-core executors, and schedule nothing before all of them registered."""
    cmd = [
        str(spark_bin("spark-submit")), "--master", cluster.master_url,
        "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", "spark.ui.enabled=false", "--conf", "spark.executor.memory=512m",
        "--conf", "spark.executor.cores=1", "--conf", f"spark.cores.max={executors}",
        "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0", "--conf", f"spark.pyspark.python={sys.executable}",
        "--conf", f"spark.pyspark.driver.python={sys.executable}",
        "--driver-java-options", f"-Dlog4j2.configurationFile=file:{quiet_log4j_file()}",
        str(app), *args,
    ]
    return subprocess.run(
        cmd, env=cluster_env(), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def test_spark_submit_to_a_standalone_cluster_matches_local(sample_dir: Path, tmp_path: Path) -> None:
    from ctrlbatch.cli import main

    assert main(["replay", str(sample_dir), "--engine", "local", "--out", str(tmp_path / "local"), "--quiet"]) == 0
    import ctrlbatch.cli.spark_submit as entry

    with standalone_cluster(tmp_path / "cluster", workers=2) as cluster:
        done = spark_submit(
            cluster, Path(entry.__file__), ["replay", str(sample_dir), "--out", str(tmp_path / "cluster-out"), "--quiet"]
        )
        if done.returncode != 0:
            pytest.fail(f"spark-submit exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}\n{cluster.log_text()}")
        executors = {i: list((tmp_path / "cluster" / f"work-{i}").glob("app-*/*/stderr")) for i in range(2)}
        ran = {i: sum(p.read_text(errors="replace").count("Running task") for p in paths) for i, paths in executors.items()}
    assert all(executors.values()), f"an executor on each of the two workers: {executors}"
    assert all(ran.values()), f"both executors ran tasks (tasks per worker: {ran})"
    assert "(spark engine," in done.stdout
    local, remote = tmp_path / "local", tmp_path / "cluster-out"
    assert pq.read_table(remote / "requests").to_pylist() == pq.read_table(local / "requests").to_pylist()  # row by row
    assert pq.read_table(remote / "requests").equals(pq.read_table(local / "requests"))
    a, b = (json.loads((d / "summary.json").read_text()) for d in (local, remote))
    assert (a["summary"], a["read"], a["rows"]) == (b["summary"], b["read"], b["rows"])
    assert b["job"]["master"] is None  # spark-submit's master was used, not overridden
    assert (remote / "report.png").is_file()
