"""``ctrlbatch simulate`` as a subprocess: every scenario converges, faults parse, bad input is a person's error,
``--timeout`` ends a CPU-bound run, and the verdict is honest."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctrlbatch.sim.scenarios import SCENARIOS, ScenarioSpec, assignments, parse_faults
from ctrlbatch.sim.simulate_cli import WATCHDOG_GRACE_S, _print

CTRLBATCH = str(Path(sys.executable).parent / "ctrlbatch")
FAST = ("--session-timeout-ms", "1500", "--heartbeat-interval-ms", "300")


def simulate(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CTRLBATCH, "simulate", *args], capture_output=True, text=True, timeout=timeout)


def _check_converged(r: subprocess.CompletedProcess[str], scenario: str, controller: str) -> None:
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"scenario {scenario} ({controller} controller): 4 brokers, 60 partitions in 2 topics, "
                               "replication factor 3")
    rows = [line.split() for line in lines[2:6]]
    assert [int(row[0]) for row in rows] == [0, 1, 2, 3]
    assert all(int(row[3]) > 0 for row in rows if row[-1] == "yes")  # UpdateMetadata reached every live broker
    live = [row for row in rows if row[-1] != "live)"]
    assert live and lines[-1] == f"converged: {len(live)}/{len(live)} live brokers (all)"
    assert "FENCED" not in r.stdout
    assert f"simulate {scenario}" in r.stderr  # the progress display


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_scenario_converges_in_zk_mode(scenario: str) -> None:
    r = simulate("--brokers", "4", "--partitions", "60", "--scenario", scenario, *FAST)
    _check_converged(r, scenario, "zk")


def test_no_scenario_is_zk_only() -> None:
    """KRaft has preferred election, the automatic balance, partition expansion and unclean
    election (kraft_decisions.py), so every scenario runs in kraft mode too."""
    assert [n for n, s in SCENARIOS.items() if s.zk_only] == []


@pytest.mark.parametrize("scenario", [n for n, s in SCENARIOS.items() if not s.zk_only])
def test_kraft_scenarios_converge(scenario: str) -> None:
    r = simulate("--controller", "kraft", "--brokers", "4", "--partitions", "60", "--scenario", scenario, *FAST)
    _check_converged(r, scenario, "kraft")


@pytest.mark.parametrize("controller", ["zk", "kraft"])
def test_faults_are_survived(controller: str) -> None:
    r = simulate("--controller", controller, "--brokers", "3", "--partitions", "30", "--scenario", "failover",
                 "--faults", "close:1@2,delay:2=0.02,refuse:0=0.3", *FAST)
    assert r.returncode == 0, r.stderr
    rows = {int(line.split()[0]): line.split() for line in r.stdout.splitlines()[2:5]}
    assert int(rows[1][-2]) >= 2 and int(rows[0][-2]) >= 2  # reconnected after the close and the refusal
    assert r.stdout.splitlines()[-1] == "converged: 3/3 live brokers (all)"


@pytest.mark.parametrize("controller", ["zk", "kraft"])
def test_topics_and_replication_factor_name_kafkas_setups(controller: str) -> None:
    r = simulate("--controller", controller, "--brokers", "4", "--topics", "40", "--partitions", "40",
                 "--replication-factor", "2", "--scenario", "controlled-shutdown", *FAST)
    assert r.returncode == 0, r.stderr
    assert "4 brokers, 40 partitions in 40 topics, replication factor 2" in r.stdout.splitlines()[0]
    assert r.stdout.splitlines()[-1] == "converged: 3/3 live brokers (all)"


def test_help_shows_every_default_and_scenario() -> None:
    r = simulate("--help")
    text = " ".join(r.stdout.split())
    for default in ("(default: zk)", "(default: failover)", "(default: 5)", "(default: 200)", "(default: 9000)",
                    "(default: 2000)", "(default: 30000)", "(default: 600.0)", "default: one per 50 partitions",
                    "default: min(3, brokers)"):
        assert default in text, default
    for name, s in SCENARIOS.items():
        assert f"{name}: {' '.join(s.description.split())}" in text


@pytest.mark.parametrize(("args", "message"), [
    (["--faults", "close:9@1"], "broker 9 does not exist"),
    (["--faults", "explode:1"], "is not close:B@N"),
    (["--brokers", "0"], "--brokers must be >= 1"),
    (["--brokers", "3", "--topics", "0"], "--topics must be between 1 and --partitions (200), got 0"),
    (["--brokers", "3", "--partitions", "10", "--topics", "11"], "--topics must be between 1 and --partitions (10), got 11"),
    (["--brokers", "3", "--replication-factor", "4"], "--replication-factor must be between 1 and --brokers (3), got 4"),
    (["--brokers", "3", "--replication-factor", "0"], "--replication-factor must be between 1 and --brokers (3), got 0"),
    (["--brokers", "3", "--heartbeat-interval-ms", "9000"], "--heartbeat-interval-ms (9000) must be below --session-timeout-ms"),
    (["--brokers", "3", "--timeout", "0"], "--timeout must be > 0"),
])
def test_bad_input(args: list[str], message: str) -> None:
    r = simulate(*args)
    assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr


def test_a_run_that_never_quiets_is_bounded() -> None:
    r = simulate("--brokers", "3", "--partitions", "30", "--faults", "delay:1=5", "--request-timeout-ms", "500",
                 "--timeout", "3", *FAST)
    assert r.returncode == 1 and "timed out after 3.0 s" in r.stderr


def test_timeout_ends_a_cpu_bound_step() -> None:
    """Creating 300,000 partitions is one controller event that holds the loop for far longer than
    the time-out: the watchdog still ends the run soon after the deadline."""
    t0 = time.monotonic()
    r = simulate("--brokers", "3", "--partitions", "300000", "--timeout", "2", *FAST, timeout=90)
    elapsed = time.monotonic() - t0
    assert r.returncode == 1 and "timed out after 2.0 s" in r.stderr, r.stderr
    assert elapsed < 2 + WATCHDOG_GRACE_S + 15


def _row(broker: int, live: bool, converged: bool | None) -> dict[str, object]:
    return {"broker": broker, "requests": {}, "bytes_in": 0, "bytes_out": 0, "service_median": None,
            "latency_median": None, "latency_max": None, "connections": 0, "live": live, "converged": converged}


def _args() -> argparse.Namespace:
    return argparse.Namespace(scenario="failover", controller="zk", brokers=2, partitions=10, faults="")


def test_no_live_broker_is_never_converged(capsys: pytest.CaptureFixture[str]) -> None:
    status = _print(_args(), ScenarioSpec(2, 10), [_row(0, False, None), _row(1, False, None)], 1.0, [])
    out = capsys.readouterr().out
    assert status == 1 and out.splitlines()[-1] == "NOT converged: no live broker" and "converged: 0/0" not in out


def test_unexpected_fences_fail_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    status = _print(_args(), ScenarioSpec(2, 10), [_row(0, True, True), _row(1, True, True)], 1.0, [1])
    out = capsys.readouterr().out
    assert status == 1 and "FENCED: broker(s) 1 lost their session although no step took them down" in out
    assert _print(_args(), ScenarioSpec(2, 10), [_row(0, True, True), _row(1, True, True)], 1.0, []) == 0


def test_parse_faults() -> None:
    plan = parse_faults("close:1@3, close:1@5,error:2=56@4,delay:0=0.5,refuse:2=1.5,hangup:0@2", 3)
    assert plan.per_broker[1].close_at == {3, 5} and plan.per_broker[0].hang_up_at == {2}
    assert plan.per_broker[2].error_at == {4: 56}
    assert plan.per_broker[0].delay == 0.5 and plan.refuse == {2: 1.5}


def test_assignments_round_robin() -> None:
    a = assignments(ScenarioSpec(brokers=4, partitions=120))
    assert list(a) == ["topic-0000", "topic-0001", "topic-0002"] and [len(v) for v in a.values()] == [40, 40, 40]
    assert a["topic-0000"][1] == [1, 2, 3]
    single = assignments(ScenarioSpec(brokers=5, partitions=7, topics=7, replication_factor=2))
    assert len(single) == 7 and all(len(v) == 1 for v in single.values())
    assert single["topic-0006"] == [[1, 2]]
    uneven = assignments(ScenarioSpec(brokers=3, partitions=10, topics=3, replication_factor=1))
    assert [len(v) for v in uneven.values()] == [4, 3, 3] and sum(len(v) for v in uneven.values()) == 10
