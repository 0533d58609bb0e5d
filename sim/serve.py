"""Serving until a signal: shared by the standalone ``sim-broker`` and ``sim-controller`` commands.

Rules: --host must be a loopback address and --port in 0..65535 (a CommandError names the
option); a server that cannot bind is a CommandError, not a traceback. The first line of standard
output is ``listening on HOST:PORT`` (flushed at once, for scripts that start a server on port 0);
SIGINT and SIGTERM end the serving cleanly (exit 0); logging goes to standard error.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from typing import Protocol

from ctrlbatch.common import CommandError

from .loopback import check_loopback

__all__ = ["announce", "check_address", "configure_logging", "start_and_announce", "until_signalled"]


class _Server(Protocol):
    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...

    async def start(self) -> None: ...


def check_address(host: str, port: int) -> None:
    """The --host and --port options of a standalone server."""
    if not 0 <= port <= 65535:
        raise CommandError(f"--port must be in 0..65535, got {port}")
    try:
        check_loopback(host, "--host")
    except ValueError as e:
        raise CommandError(str(e)) from None


async def start_and_announce(server: _Server, host: str, port: int) -> None:
    """Start listening (host and port as asked) and print the first line with the bound port."""
    try:
        await server.start()
    except OSError as e:
        raise CommandError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    announce(server.host, server.port)


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
