"""Serve the KRaft controller's BrokerRegistration/BrokerHeartbeat endpoint on 127.0.0.1 until a signal.

Registrations feed a controller context: a broker that joins is added to the controller channel
and gets a full UpdateMetadata while the others get one with no partitions (KAFKA-7537); fenced
brokers are removed. The first line of standard output is ``listening on HOST:PORT``.
--max-brokers bounds the registrations (a new broker id beyond it gets POLICY_VIOLATION, 44);
the controller connects to loopback brokers only unless --allow-remote-brokers is given
(membership.py); --quiet logs errors only, and every log line is rate-limited (safe_log.py).
"""

from __future__ import annotations

import argparse
import logging

from ctrlbatch.common import CommandError
from ctrlbatch.context import MetadataVersion
from ctrlbatch.transport import AsyncControllerChannel

from .controller_logic import SimController
from .controller_server import ControllerEndpoint
from .controller_state import DEFAULT_MAX_BROKERS, BrokerEvent, ControllerConfig
from .membership import Membership
from .safe_log import install as install_safe_logging
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
    parser.add_argument("--max-brokers", type=int, default=DEFAULT_MAX_BROKERS,
                        help="keep at most this many registrations; a new broker id beyond them gets POLICY_VIOLATION (44)")
    parser.add_argument("--allow-remote-brokers", action="store_true",
                        help="also connect to brokers whose PLAINTEXT listener is not a loopback IP address")
    parser.add_argument("--quiet", action="store_true", help="log only errors on standard error")
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
    if args.max_brokers < 1:
        raise CommandError(f"--max-brokers must be >= 1, got {args.max_brokers}")
    return ControllerConfig(cluster_id=args.cluster_id, metadata_version=mv, migration_enabled=args.migration,
                            session_timeout_ms=args.session_timeout_ms, max_brokers=args.max_brokers)


def run(args: argparse.Namespace) -> int:
    config = _config(args)
    if args.controller_id < 0:
        raise CommandError(f"--controller-id must be >= 0, got {args.controller_id}")
    connection_limits(args)
    check_address(args.host, args.port)
    configure_logging(not args.quiet)
    safe = install_safe_logging(quiet=args.quiet)
    raise_fd_limit()
    try:
        return run_serving(_serve(args, config))
    finally:
        safe.flush()  # how many lines of each kind were suppressed and not yet summarised


async def _serve(args: argparse.Namespace, config: ControllerConfig) -> int:
    channel = AsyncControllerChannel(controller_id=args.controller_id, metrics_log_interval_ms=None)
    controller = SimController(channel, controller_id=args.controller_id, metadata_version=config.metadata_version)
    membership = Membership(controller, allow_remote=args.allow_remote_brokers)
    endpoint: ControllerEndpoint

    def on_events(events: list[BrokerEvent]) -> None:
        membership.apply(endpoint.state.registrations, events)

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
