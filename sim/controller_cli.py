"""Serve the KRaft controller's BrokerRegistration/BrokerHeartbeat endpoint on 127.0.0.1 until a signal.

Registrations feed a controller context: a broker that joins is added to the controller channel
and gets a full UpdateMetadata while the others get one with no partitions (KAFKA-7537); fenced
brokers are removed. The first line of standard output is ``listening on HOST:PORT``.
"""

from __future__ import annotations

import argparse
import logging

from ctrlbatch.common import CommandError
from ctrlbatch.context import MetadataVersion
from ctrlbatch.transport import AsyncControllerChannel

from .controller_logic import SimController
from .controller_server import ControllerEndpoint
from .controller_state import BrokerEvent, ControllerConfig
from .membership import apply_event
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

_log = logging.getLogger("ctrlbatch.sim.controller")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster-id", required=True, help="the cluster id brokers must present")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    parser.add_argument("--metadata-version", default="3.9-IV0", help="the finalized metadata.version")
    parser.add_argument("--session-timeout-ms", type=int, default=9000, help="broker.session.timeout.ms")
    parser.add_argument("--migration", action="store_true",
                        help="zookeeper.metadata.migration.enable: accept migrating ZooKeeper brokers")
    parser.add_argument("--controller-id", type=int, default=3000, help="the controller id in control requests")
    parser.add_argument("--quiet", action="store_true", help="log only warnings on standard error")
    add_connection_options(parser)


def _config(args: argparse.Namespace) -> ControllerConfig:
    try:
        mv = MetadataVersion.from_version_string(args.metadata_version)
    except ValueError as e:
        raise CommandError(f"--metadata-version: {e}") from None
    if mv.feature_level < 1:
        raise CommandError(f"--metadata-version {args.metadata_version} predates KRaft (3.0-IV1 is the first)")
    if args.session_timeout_ms <= 0:
        raise CommandError(f"--session-timeout-ms must be > 0, got {args.session_timeout_ms}")
    if not args.cluster_id:
        raise CommandError("--cluster-id must not be empty")
    return ControllerConfig(cluster_id=args.cluster_id, metadata_version=mv, migration_enabled=args.migration,
                            session_timeout_ms=args.session_timeout_ms)


def run(args: argparse.Namespace) -> int:
    config = _config(args)
    if args.controller_id < 0:
        raise CommandError(f"--controller-id must be >= 0, got {args.controller_id}")
    connection_limits(args)
    check_address(args.host, args.port)
    configure_logging(not args.quiet)
    raise_fd_limit()
    return run_serving(_serve(args, config))


async def _serve(args: argparse.Namespace, config: ControllerConfig) -> int:
    channel = AsyncControllerChannel(controller_id=args.controller_id, metrics_log_interval_ms=None)
    controller = SimController(channel, controller_id=args.controller_id, metadata_version=config.metadata_version)
    endpoint: ControllerEndpoint

    def on_events(events: list[BrokerEvent]) -> None:
        for e in events:
            apply_event(controller, endpoint.state.registrations[e.broker_id], e)

    endpoint = ControllerEndpoint(config, host=args.host, port=args.port, on_events=on_events)
    endpoint.server.configure(connection_limits(args))
    channel.startup()
    try:
        await start_and_announce(endpoint, args.host, args.port)
        await until_signalled()
    finally:
        await endpoint.stop()
        await channel.shutdown()
    _log.info("controller: %d registrations, %d brokers live", len(endpoint.state.registrations),
              len(controller.ctx.live_broker_id_and_epochs))
    return 0
