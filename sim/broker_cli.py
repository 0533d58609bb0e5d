"""Serve one simulated ZooKeeper-mode broker on 127.0.0.1 until SIGINT or SIGTERM.

It answers LeaderAndIsr, StopReplica and UpdateMetadata as a Kafka 3.9 broker does and closes the
connection on anything else. With --controller it also registers with a KRaft controller endpoint
and heartbeats (as a migrating ZooKeeper broker), like ``ctrlbatch sim-controller --migration``.
The first line of standard output is ``listening on HOST:PORT``.
"""

from __future__ import annotations

import argparse
import logging

from ctrlbatch.common import CommandError

from .broker_server import Received, SimulatedBroker
from .lifecycle import BrokerLifecycle
from .loopback import check_loopback
from .serve import (
    add_connection_options,
    check_address,
    configure_logging,
    connection_limits,
    raise_fd_limit,
    run_serving,
    start_and_announce,
    until_signalled,
)
from .server import ServerLimits

_log = logging.getLogger("ctrlbatch.sim.broker")
_API_NAMES = {4: "LeaderAndIsr", 5: "StopReplica", 6: "UpdateMetadata"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--id", type=int, required=True, help="broker id (>= 0)")
    parser.add_argument("--epoch", type=int, required=True, help="the broker's ZooKeeper broker epoch")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    add_connection_options(parser)
    parser.add_argument("--controller", metavar="HOST:PORT", help="register with this controller endpoint")
    parser.add_argument("--cluster-id", default="sim-cluster", help="cluster id sent in BrokerRegistration")
    parser.add_argument("--quiet", action="store_true", help="do not log each request on standard error")


def _controller_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) <= 65535:
        raise CommandError(f"--controller must be HOST:PORT with a port in 1..65535, got {text!r}")
    try:
        return check_loopback(host, "--controller host"), int(port)
    except ValueError as e:
        raise CommandError(str(e)) from None


def run(args: argparse.Namespace) -> int:
    if args.id < 0:
        raise CommandError(f"--id must be >= 0, got {args.id}")
    limits = connection_limits(args)
    check_address(args.host, args.port)
    controller = _controller_address(args.controller) if args.controller else None
    configure_logging(not args.quiet)
    raise_fd_limit()
    return run_serving(_serve(args, controller, limits))


def _log_request(broker: SimulatedBroker, rec: Received) -> None:
    _log.info("broker %d received %s v%d (correlation id %d, connection %d)", broker.broker_id,
              _API_NAMES.get(rec.api_key, rec.api_key), rec.version, rec.correlation_id, rec.connection)


async def _serve(args: argparse.Namespace, controller: tuple[str, int] | None, limits: ServerLimits) -> int:
    broker = SimulatedBroker(args.id, args.epoch, host=args.host, port=args.port, limits=limits,
                             migration_enabled=controller is not None, record=False, on_request=_log_request)
    await start_and_announce(broker, args.host, args.port)
    lifecycle = None
    if controller is not None:
        lifecycle = BrokerLifecycle(lambda: broker.state, (broker.host, broker.port), controller, args.cluster_id)
        lifecycle.start()
    try:
        await until_signalled()
    finally:
        if lifecycle is not None:
            await lifecycle.stop()
        await broker.stop()
    st = broker.server.stats
    _log.info("broker %d served %d requests on %d connections", args.id, sum(st.requests.values()), st.connections)
    return 0
