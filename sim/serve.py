"""Serving until a signal: shared by the standalone ``sim-broker`` and ``sim-controller`` commands.

Rules: the first line of standard output is ``listening on HOST:PORT`` (flushed at once, for
scripts that start a server on port 0); SIGINT and SIGTERM end the serving cleanly (exit 0);
logging goes to standard error.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

__all__ = ["announce", "configure_logging", "until_signalled"]


def configure_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def announce(host: str, port: int) -> None:
    sys.stdout.write(f"listening on {host}:{port}\n")
    sys.stdout.flush()


async def until_signalled() -> int:
    """Wait for SIGINT or SIGTERM; returns the signal number."""
    loop = asyncio.get_running_loop()
    got: asyncio.Future[int] = loop.create_future()

    def on_signal(number: int) -> None:
        if not got.done():
            got.set_result(number)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, int(sig))
    try:
        return await got
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
