"""The demo (`ctrlbatch demo`, `python -m ctrlbatch.batch.demo`): a person's mistakes get one line
of explanation and an exit status, never a traceback; --help describes every option with its
default; a small run prints the summary."""

from __future__ import annotations

import pytest

from ctrlbatch.batch import demo
from ctrlbatch.cli import main as cli_main


def _usage_error(capsys, argv):
    with pytest.raises(SystemExit) as info:
        demo.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_bad_ibp(capsys):
    err = _usage_error(capsys, ["--ibp", "foo"])
    assert "error: argument --ibp: 'foo' is not a metadata version (e.g. 3.9-IV0 or 3.9; the latest are" in err


@pytest.mark.parametrize("option", ["--brokers", "--partitions", "--replication-factor"])
def test_zero_counts(capsys, option):
    err = _usage_error(capsys, [option, "0"])
    assert f"error: argument {option}: must be at least 1, not 0" in err


def test_not_a_number(capsys):
    assert "error: argument --brokers: 'ten' is not a whole number" in _usage_error(capsys, ["--brokers", "ten"])


def test_more_replicas_than_brokers(capsys):
    assert demo.main(["--replication-factor", "5", "--brokers", "3", "--partitions", "4"]) == 1
    err = capsys.readouterr().err
    assert err.strip().endswith("error: --replication-factor 5 needs at least as many brokers, but --brokers is 3")
    assert "Traceback" not in err
    assert cli_main(["demo", "--replication-factor", "5", "--brokers", "3"]) == 1
    assert "ctrlbatch demo: error: --replication-factor 5 needs" in capsys.readouterr().err


def test_help_shows_descriptions_and_defaults(capsys):
    with pytest.raises(SystemExit) as info:
        demo.main(["--help"])
    assert info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Controller failover in-process" in out
    assert "--partitions N partitions in the cluster, in topics of 50 (default: 200000)" in out
    assert "--brokers B live brokers (default: 100)" in out
    assert "(default: 3)" in out and "(default: 3.9-IV0)" in out


def test_small_run(capsys):
    assert cli_main(["demo", "--partitions", "7", "--brokers", "3", "--ibp", "2.0"]) == 0
    out = capsys.readouterr().out
    assert "ctrlbatch failover: 7 partitions, RF 3, 3 brokers, IBP 2.0-IV1" in out
    assert "LeaderAndIsr           1         3                21" in out
    assert "frames decoded back and checked: LeaderAndIsr, UpdateMetadata" in out
