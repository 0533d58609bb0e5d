"""Controller failover in-process: one batch, every frame encoded, a summary of what was sent.

Usage: ctrlbatch demo [--partitions N] [--brokers B] [--replication-factor R] [--ibp VERSION]
(or python -m ctrlbatch.batch.demo ...)

It builds the context, accumulates one batch (LeaderAndIsr for every partition to its
replicas, piggy-backing UpdateMetadata to every broker), sends it through a transport that
holds each request and then encodes every frame once, decodes a sample frame back as a check,
and prints requests, partitions and bytes per api and per broker, with the versions used.

Rules: `configure(parser)` and `run(args) -> int` are the `ctrlbatch demo` subcommand (see
ctrlbatch.cli); a person's mistake (a bad version, more replicas than brokers) is a CommandError
with one line of explanation, never a traceback; `main(argv)` runs it standalone.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from ctrlbatch.common.errors import CommandError
from ctrlbatch.common.tuning import gc_paused
from ctrlbatch.context import MetadataVersion
from ctrlbatch.requests import APIS, decode_request

from .scenarios import Cluster, HoldingTransport, build_context, failover
from .transport import OutboundRequest

_DEFAULTS = Cluster()


def _at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, not {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _metadata_version(text: str) -> MetadataVersion:
    try:
        return MetadataVersion.from_version_string(text)
    except ValueError:
        known = ", ".join(mv.version for mv in MetadataVersion.VERSIONS[-6:])
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a metadata version (e.g. 3.9-IV0 or 3.9; the latest are {known})"
        ) from None


def configure(parser: argparse.ArgumentParser) -> None:
    """The demo's options (for `ctrlbatch demo` and main())."""
    parser.add_argument("--partitions", type=_at_least(1), default=_DEFAULTS.partitions, metavar="N",
                        help=f"partitions in the cluster, in topics of {_DEFAULTS.partitions_per_topic}")
    parser.add_argument("--brokers", type=_at_least(1), default=_DEFAULTS.brokers, metavar="B",
                        help="live brokers")
    parser.add_argument("--replication-factor", type=_at_least(1), default=_DEFAULTS.replication_factor,
                        metavar="R", help="replicas per partition (at most --brokers)")
    parser.add_argument("--ibp", type=_metadata_version, default=MetadataVersion.IBP_3_9_IV0, metavar="VERSION",
                        help="inter.broker.protocol.version, which picks the request versions")


def run(args: argparse.Namespace) -> int:
    """Run the scenario and print the summary; CommandError for an impossible cluster."""
    if args.replication_factor > args.brokers:
        raise CommandError(
            f"--replication-factor {args.replication_factor} needs at least as many brokers, "
            f"but --brokers is {args.brokers}"
        )
    c = Cluster(partitions=args.partitions, brokers=args.brokers, replication_factor=args.replication_factor)
    mv: MetadataVersion = args.ibp
    t0 = time.perf_counter()
    ctx, entries = build_context(c)
    t1 = time.perf_counter()
    transport = HoldingTransport()
    with gc_paused():  # a bulk batch of acyclic objects: see common/tuning.py
        batch = failover(ctx, entries, c, transport, mv)
        t2 = time.perf_counter()
        batch.send_requests_to_brokers(c.controller_epoch)
        t3 = time.perf_counter()
    per_api: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])  # requests, partitions, bytes
    per_broker: dict[int, list[int]] = defaultdict(lambda: [0, 0])  # requests, bytes
    versions: dict[int, int] = {}

    def on_frame(broker: int, request: OutboundRequest, parts: list[Any]) -> None:
        size = sum(len(p) for p in parts)
        row = per_api[request.api_key]
        row[0] += 1
        row[1] += _partition_count(request)
        row[2] += size
        per_broker[broker][0] += 1
        per_broker[broker][1] += size
        versions[request.api_key] = request.version

    transport.drain(str(c.controller_id), on_frame)
    t4 = time.perf_counter()
    checked = _check_one_frame_per_api(transport, str(c.controller_id))

    print(f"ctrlbatch failover: {c.partitions:,} partitions, RF {c.replication_factor}, {c.brokers} brokers, IBP {mv.version}")
    print(f"  context built in {t1 - t0:.2f} s; batch: accumulate {t2 - t1:.2f} s, build {t3 - t2:.2f} s, "
          f"encode frames {t4 - t3:.2f} s (total {t4 - t1:.2f} s)")
    bodies: dict[int, dict[int, int]] = defaultdict(dict)  # api -> id(shared body) -> its size
    for items in transport.queues.values():
        for request, _ in items:
            bodies[request.api_key][id(request.shared)] = request.body_size()
    print(f"  {'api':16s} {'version':>7s} {'requests':>9s} {'partition states':>17s} {'frame bytes':>14s} "
          f"{'bodies encoded':>15s} {'body bytes':>12s}")
    for key in sorted(per_api):
        r, p, b = per_api[key]
        n_bodies, body_bytes = len(bodies[key]), sum(bodies[key].values())
        print(f"  {APIS[key].name:16s} {versions[key]:>7d} {r:>9,d} {p:>17,d} {b:>14,d} "
              f"{n_bodies:>15,d} {body_bytes:>12,d}")
    if per_broker:
        total = sum(b for _, b in per_broker.values())
        print(f"  per broker: {len(per_broker)} brokers, {min(r for r, _ in per_broker.values())}-"
              f"{max(r for r, _ in per_broker.values())} requests each, "
              f"{min(b for _, b in per_broker.values()):,}-{max(b for _, b in per_broker.values()):,} bytes each, "
              f"{total:,} bytes in all")
        for broker in sorted(per_broker)[:3]:
            r, b = per_broker[broker]
            print(f"    broker {broker}: {r} requests, {b:,} bytes")
    print(f"  frames decoded back and checked: {', '.join(APIS[k].name for k in sorted(checked))}")
    return 0


def _partition_count(request: OutboundRequest) -> int:
    """Partition states in a request, from its builder (the body is not materialised for this)."""
    builder = request.builder
    if hasattr(builder, "partition_states"):
        return len(builder.partition_states)
    return sum(len(states) for _, states in builder.topic_states)


def _check_one_frame_per_api(transport: HoldingTransport, client_id: str) -> set[int]:
    """One frame of each api decodes back to the body the engine shared."""
    checked: set[int] = set()
    for items in transport.queues.values():
        for request, _ in items:
            if request.api_key not in checked:
                decoded = decode_request(request.encode(0, client_id)[4:])
                if decoded.body.encode(request.version) != request.encode_body():
                    raise AssertionError(f"{APIS[request.api_key].name}: the decoded frame re-encodes differently")
                checked.add(request.api_key)
    return checked


def main(argv: Sequence[str] | None = None) -> int:
    """python -m ctrlbatch.batch.demo: the same as `ctrlbatch demo`."""
    parser = argparse.ArgumentParser(
        prog="python -m ctrlbatch.batch.demo",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    configure(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except CommandError as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
