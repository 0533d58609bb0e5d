"""The ``ctrlbatch`` command's own surface: ``--version``, and every subcommand's ``--help``
showing each option's default (a default of 0 included: it is a value, not "no default")."""

from __future__ import annotations

import argparse
import importlib
from importlib.metadata import version

import pytest

from ctrlbatch.cli import SUBCOMMANDS, main
from ctrlbatch.common import HelpFormatter


def test_version_prints_the_installed_distributions_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"ctrlbatch {version('ctrlbatch')}"


def _options(name: str) -> list[argparse.Action]:
    parser = argparse.ArgumentParser(prog=f"ctrlbatch {name}", formatter_class=HelpFormatter)
    importlib.import_module(SUBCOMMANDS[name][0]).configure(parser)
    return [a for a in parser._actions if a.option_strings and a.help is not argparse.SUPPRESS]


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_option_with_a_value_shows_its_default(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([name, "--help"])
    text = "".join(capsys.readouterr().out.split())  # argparse wraps anywhere, even inside a value
    for action in _options(name):
        if action.default is None or isinstance(action.default, bool) or action.default in (argparse.SUPPRESS, ""):
            continue
        flag = action.option_strings[-1]
        shown = "".join(f"(default: {action.default})".split()) in text or "default" in (action.help or "")
        assert shown, f"ctrlbatch {name} --help does not show the default of {flag} ({action.default!r})"


def test_a_zero_default_is_shown() -> None:
    """0 == False in Python; the formatter must still show 'default: 0' (generate-log --seed)."""
    seed = next(a for a in _options("generate-log") if "--seed" in a.option_strings)
    assert seed.default == 0
    parser = argparse.ArgumentParser(prog="x", formatter_class=HelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    assert "(default: 0)" in parser.format_help()
