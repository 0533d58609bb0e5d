"""The ``ctrlbatch`` command: one entry point, one subcommand per capability.

Rules of this module:
- It knows only the table ``SUBCOMMANDS`` (name -> module, one-line help). Each module named there
  has ``configure(parser: argparse.ArgumentParser) -> None`` and ``run(args) -> int``.
- Modules are imported lazily, only the one asked for, so ``ctrlbatch --help`` and a subcommand
  that does not need Spark never pay for importing it.
- This is the one place that turns errors into exit codes: ``CommandError`` (bad input, a file
  that cannot be read, a failed job) prints ``ctrlbatch NAME: error: ...`` and exits 1 with no
  traceback; argparse's own usage errors exit 2; Ctrl-C exits 130; a closed pipe on standard
  output (``ctrlbatch ... | head``) ends quietly with 141, as a shell tool does. Anything else is a
  bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from ctrlbatch.common import CommandError, HelpFormatter, Progress

__all__ = ["SUBCOMMANDS", "CommandError", "Progress", "main"]

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "replay": (
        "ctrlbatch.replay.run.cli",
        "replay a KRaft metadata log into the requests every broker would have received",
    ),
    "generate-log": (
        "ctrlbatch.replay.generate.cli",
        "write a synthetic, seeded __cluster_metadata-0 directory (and optionally JSON lines)",
    ),
    "demo": (
        "ctrlbatch.batch.demo",
        "controller failover in-process: one batch, every frame encoded, a summary",
    ),
    "simulate": (
        "ctrlbatch.sim.simulate_cli",
        "run a scenario against simulated brokers and a controller endpoint on 127.0.0.1",
    ),
    "sim-broker": (
        "ctrlbatch.sim.broker_cli",
        "serve one simulated ZooKeeper-mode broker until SIGINT/SIGTERM",
    ),
    "sim-controller": (
        "ctrlbatch.sim.controller_cli",
        "serve the BrokerRegistration/BrokerHeartbeat controller endpoint until SIGINT/SIGTERM",
    ),
}


def _top_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="ctrlbatch",
        description="Kafka 3.9's controller-to-broker request batching, and the tools around it.",
        epilog="Run 'ctrlbatch COMMAND --help' for a command's options.",
    )
    ap.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_module, help_text) in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return ap


def _version() -> str:
    """The installed distribution's version (pyproject.toml's), without importing any subcommand."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ctrlbatch")
    except PackageNotFoundError:  # running from a checkout that was never installed
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ctrlbatch`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in SUBCOMMANDS:  # help, --version, or a usage error
        _top_parser().parse_args(args)  # prints help or a usage error naming the valid commands
        return 2
    name, rest = args[0], args[1:]
    module_name, help_text = SUBCOMMANDS[name]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(
        prog=f"ctrlbatch {name}",
        description=(module.__doc__ or help_text).strip().split("\n\n")[0],
        formatter_class=HelpFormatter,
    )
    module.configure(parser)
    parsed = parser.parse_args(rest)
    try:
        return int(module.run(parsed) or 0)
    except CommandError as e:
        print(f"ctrlbatch {name}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"ctrlbatch {name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away: point stdout at devnull so the interpreter's final flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _entry() -> None:
    sys.exit(main())
