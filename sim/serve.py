"""Serving until a signal: shared by the standalone ``sim-broker`` and ``sim-controller`` commands.

Rules: --host must be a loopback address and --port in 0..65535 (a CommandError names the
option); a server that cannot bind is a CommandError, not a traceback. The first line of standard
output is ``listening on HOST:PORT`` (flushed at once, for scripts that start a server on port 0);
logging goes to standard error. The loop's exception handler is rate-limited
(safe_log.loop_exception_handler): accept() failing for lack of file descriptors logs once, then
a summary of its repeats, instead of a traceback per try.
- Signals: SIGINT and SIGTERM end the serving cleanly (exit 0) at any moment from the
  ``listening on`` line on: the handlers are installed before that line is printed, stay installed
  while the server stops, and ``run_serving`` ignores both once the loop is gone.
- Connections (both servers, Kafka's names): --max-request-bytes, --queued-max-request-bytes,
  --connections-max-idle-ms, --max-connections, and --frame-timeout-ms (ours) become a ServerLimits
  (``add_connection_options``, ``connection_limits``).
- File descriptors: ``raise_fd_limit`` lifts the soft RLIMIT_NOFILE to the hard one at start-up, so
  that a thousand idle clients do not leave none for the next; it says so on stderr when it cannot.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import resource
import signal
import sys
import weakref
from collections.abc import Coroutine
from typing import Any, Protocol

from ctrlbatch.common import CommandError

from .loopback import check_loopback
from .safe_log import install as install_safe_logging
from .safe_log import loop_exception_handler
from .server import ServerLimits

__all__ = [
    "add_connection_options",
    "announce",
    "check_address",
    "configure_logging",
    "connection_limits",
    "install_signal_handlers",
    "raise_fd_limit",
    "run_serving",
    "start_and_announce",
    "until_signalled",
]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_signalled: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Future[int]] = weakref.WeakKeyDictionary()


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


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """The connection limits of a standalone server, under Kafka's config names."""
    d = ServerLimits()
    parser.add_argument("--max-request-bytes", type=int, default=d.max_request_bytes,
                        help="socket.request.max.bytes: a larger frame closes the connection (default %(default)s)")
    parser.add_argument("--queued-max-request-bytes", type=int, default=d.queued_max_request_bytes,
                        help="queued.max.request.bytes: request bytes held by all connections at once; a connection "
                             "is not read while they are spent; -1: no budget (default %(default)s, 256 MiB)")
    parser.add_argument("--connections-max-idle-ms", type=int, default=d.connections_max_idle_ms,
                        help="connections.max.idle.ms: close a connection idle this long; -1: never (default %(default)s)")
    parser.add_argument("--max-connections", type=int, default=d.max_connections,
                        help="max.connections: close a new connection beyond this many (default %(default)s: unlimited)")
    parser.add_argument("--frame-timeout-ms", type=int, default=d.frame_timeout_ms,
                        help="close a connection whose request frame is not complete this long after its first byte "
                             "(ours: Kafka has no such limit); -1: never (default %(default)s)")


_LIMIT_OPTIONS = {
    "max_request_bytes": "--max-request-bytes",
    "queued_max_request_bytes": "--queued-max-request-bytes",
    "connections_max_idle_ms": "--connections-max-idle-ms",
    "max_connections": "--max-connections",
    "frame_timeout_ms": "--frame-timeout-ms",
}


def connection_limits(args: argparse.Namespace) -> ServerLimits:
    """The ServerLimits the options ask for; a CommandError names a bad option."""
    values = {field: getattr(args, field) for field in _LIMIT_OPTIONS}
    try:
        return ServerLimits(**values)
    except ValueError as e:
        for field, option in _LIMIT_OPTIONS.items():
            if str(e).startswith(field + " "):
                raise CommandError(option + str(e)[len(field):]) from None
        raise CommandError(str(e)) from None


def raise_fd_limit() -> tuple[int, int]:
    """Lift the soft RLIMIT_NOFILE to the hard one (Kafka's start scripts leave this to the operator);
    returns (soft, hard) afterwards. When it cannot, a line on stderr says so and serving goes on."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return soft, hard
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as e:
        sys.stderr.write(f"warning: cannot raise the open-file limit from {soft} to {hard} ({e}); "
                         f"at most about {soft} connections can be served\n")
        return soft, hard
    return hard, hard


def install_signal_handlers() -> asyncio.Future[int]:
    """SIGINT and SIGTERM resolve the returned future (the first signal's number); later ones are
    ignored. Idempotent per loop; the handlers go with the loop (asyncio.run closes it)."""
    loop = asyncio.get_running_loop()
    got = _signalled.get(loop)
    if got is not None:
        return got
    got = _signalled[loop] = loop.create_future()

    def on_signal(number: int) -> None:
        if not got.done():
            got.set_result(number)

    for sig in _SIGNALS:
        loop.add_signal_handler(sig, on_signal, int(sig))
    return got


def run_serving(main: Coroutine[Any, Any, int]) -> int:
    """asyncio.run(main) for a standalone server: signals that arrive after the loop closed its
    handlers (while the process exits) are ignored, so the exit status stays main's."""
    try:
        return asyncio.run(main)
    finally:
        for sig in _SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        _signalled.clear()


async def start_and_announce(server: _Server, host: str, port: int) -> None:
    """Install the signal handlers and the rate-limited exception handler, start listening (host and
    port as asked) and print the first line with the bound port."""
    install_signal_handlers()
    asyncio.get_running_loop().set_exception_handler(loop_exception_handler())
    try:
        await server.start()
    except OSError as e:
        raise CommandError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    announce(server.host, server.port)


def configure_logging(verbose: bool) -> None:
    """Log lines to stderr, each rate-limited and escaped (safe_log.install): a client that sends
    bad frames and leaves, thousands of times, costs a few lines, not one per frame."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    install_safe_logging()


def announce(host: str, port: int) -> None:
    sys.stdout.write(f"listening on {host}:{port}\n")
    sys.stdout.flush()


async def until_signalled() -> int:
    """Wait for SIGINT or SIGTERM (handlers installed now, if start_and_announce has not); returns
    the signal number. The handlers stay, so a second signal while the server stops is ignored."""
    return await asyncio.shield(install_signal_handlers())
