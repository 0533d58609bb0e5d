"""``ctrlbatch simulate`` as a subprocess: every scenario converges, faults parse, bad input is a person's error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ctrlbatch.sim.scenarios import SCENARIOS, ScenarioSpec, assignments, parse_faults

CTRLBATCH = str(Path(sys.executable).parent / "ctrlbatch")


def simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CTRLBATCH, "simulate", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_scenario_converges(scenario: str) -> None:
    r = simulate("--brokers", "4", "--partitions", "60", "--scenario", scenario)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"scenario {scenario}: 4 brokers, 60 partitions")
    rows = [line.split() for line in lines[2:6]]
    assert [int(row[0]) for row in rows] == [0, 1, 2, 3]
    assert all(int(row[3]) > 0 for row in rows if row[-1] == "yes")  # UpdateMetadata reached every live broker
    live = [row for row in rows if row[-1] != "live)"]
    assert lines[-1] == f"converged: {len(live)}/{len(live)} live brokers (all)"
    assert f"simulate {scenario}" in r.stderr  # the progress display


def test_faults_are_survived() -> None:
    r = simulate("--brokers", "3", "--partitions", "30", "--scenario", "failover", "--faults", "close:1@2,delay:2=0.02,refuse:0=0.3")
    assert r.returncode == 0, r.stderr
    rows = {int(line.split()[0]): line.split() for line in r.stdout.splitlines()[2:5]}
    assert int(rows[1][-2]) >= 2 and int(rows[0][-2]) >= 2  # reconnected after the close and the refusal
    assert r.stdout.splitlines()[-1] == "converged: 3/3 live brokers (all)"


@pytest.mark.parametrize(("args", "message"), [
    (["--faults", "close:9@1"], "broker 9 does not exist"),
    (["--faults", "explode:1"], "is not close:B@N"),
    (["--brokers", "0"], "--brokers must be >= 1"),
])
def test_bad_input(args: list[str], message: str) -> None:
    r = simulate("--brokers", "3", *args) if "--brokers" not in args else simulate(*args)
    assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr


def test_a_run_that_never_quiets_is_bounded() -> None:
    r = simulate("--brokers", "3", "--partitions", "30", "--faults", "delay:1=5", "--request-timeout-ms", "500",
                 "--timeout", "3")
    assert r.returncode == 1 and "timed out after 3.0 s before the cluster was quiet" in r.stderr


def test_parse_faults() -> None:
    plan = parse_faults("close:1@3, close:1@5,error:2=56@4,delay:0=0.5,refuse:2=1.5,hangup:0@2", 3)
    assert plan.per_broker[1].close_at == {3, 5} and plan.per_broker[0].hang_up_at == {2}
    assert plan.per_broker[2].error_at == {4: 56}
    assert plan.per_broker[0].delay == 0.5 and plan.refuse == {2: 1.5}


def test_assignments_round_robin() -> None:
    a = assignments(ScenarioSpec(brokers=4, partitions=120))
    assert list(a) == ["topic-0000", "topic-0001", "topic-0002"] and len(a["topic-0002"]) == 20
    assert a["topic-0000"][1] == [1, 2, 3]
