"""Write a synthetic, seeded __cluster_metadata-0 directory (and optionally JSON lines).

The log is what a KRaft controller would write (real segments, CRC-32C, LeaderChange control
batches, NoOps, a bootstrap transaction) for N brokers and a mix of leader elections, ISR changes,
reassignments, topic creation and deletion, broker failures, controlled shutdowns and restarts,
and one metadata.version upgrade. The same arguments always give the same bytes.
--metadata-version and --upgrade-to take Kafka 3.x names as 3.9 parses them ("3.6" = 3.6-IV2) and
Kafka 4.x names of levels 22-33 ("4.2-IV1", or a release: its newest level, "4.2" = 4.2-IV1).
"""

from __future__ import annotations

import argparse
import time

from ctrlbatch.common import CommandError, Progress
from ctrlbatch.context import MetadataVersion
from ctrlbatch.context.metadata_version import KAFKA_4X_LEVELS, LAST_ZK_LEVEL

from .generator import MV_NEWEST, generate_log

# Kafka 4.x names (levels 22-33), and each 4.x release meaning its newest level in the table.
_4X_NAMES: dict[str, int] = {
    **{lv.version.split("-")[0]: n for n, lv in KAFKA_4X_LEVELS.items() if n > LAST_ZK_LEVEL},
    **{lv.version: n for n, lv in KAFKA_4X_LEVELS.items() if n > LAST_ZK_LEVEL},
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out_dir", metavar="OUT_DIR", help="data directory to write __cluster_metadata-0 into "
                        "(or the __cluster_metadata-0 directory itself)")  # fmt: skip
    parser.add_argument("--brokers", type=int, default=5, help="number of brokers")
    parser.add_argument("--topics", type=int, default=10, help="number of topics created at the start")
    parser.add_argument("--partitions", type=int, default=100, help="partitions over those topics")
    parser.add_argument(
        "--records", type=int, default=10_000, help="records to write (NoOps and control included)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument(
        "--replication-factor", type=int, help="replicas per partition (default: 3, at most --brokers)"
    )
    parser.add_argument("--segment-bytes", type=int, default=1 << 30, help="roll segments at this size")
    parser.add_argument(
        "--metadata-version", default="3.6-IV2",
        help="metadata.version at bootstrap (3.4-IV0 up to 4.4-IV2, e.g. 3.9-IV0 or 4.2-IV1)"
    )
    parser.add_argument("--upgrade-to", default=str(MetadataVersion.IBP_3_9_IV0),
                        help="metadata.version the cluster is upgraded to part-way")  # fmt: skip
    parser.add_argument("--no-upgrade", action="store_true", help="no metadata.version upgrade")
    parser.add_argument("--noop-ratio", type=float, default=0.5, help="share of the records that are NoOps")
    parser.add_argument(
        "--snapshots", type=int, default=0, help="<end>-<epoch>.checkpoint snapshots to write along the way"
    )
    parser.add_argument("--jsonl", metavar="FILE", help="also write the history as JSON lines")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _level(text: str, option: str) -> int:
    level_4x = _4X_NAMES.get(text.strip())
    if level_4x is not None:
        return level_4x
    try:
        level = MetadataVersion.from_version_string(text).feature_level
    except (ValueError, KeyError):
        raise CommandError(f"{option}: unknown metadata.version {text!r} (e.g. 3.6-IV2, 3.9-IV0, 4.2-IV1)") from None
    if level < 0:
        raise CommandError(f"{option}: {text} predates KRaft (the first KRaft level is 3.0-IV1)")
    return int(level)


def run(args: argparse.Namespace) -> int:
    mv = _level(args.metadata_version, "--metadata-version")
    upgrade = None if args.no_upgrade else _level(args.upgrade_to, "--upgrade-to")
    if upgrade is not None and upgrade <= mv:
        upgrade = None  # already there: nothing to upgrade
    if upgrade is not None and upgrade > MV_NEWEST:
        raise CommandError(f"--upgrade-to: at most {KAFKA_4X_LEVELS[MV_NEWEST]} (level {MV_NEWEST})")
    rf = args.replication_factor if args.replication_factor is not None else min(3, max(args.brokers, 1))
    start = time.monotonic()
    with Progress("generating", total=args.records, unit="records", enabled=not args.quiet) as progress:
        try:
            result = generate_log(
                args.out_dir, brokers=args.brokers, topics=args.topics, partitions=args.partitions,
                records=args.records, seed=args.seed, jsonl=args.jsonl, progress=progress,
                replication_factor=rf, segment_bytes=args.segment_bytes,
                metadata_version=mv, upgrade_to=upgrade, noop_ratio=args.noop_ratio, snapshots=args.snapshots,
            )  # fmt: skip
        except ValueError as e:  # "name: rule": say it with the option's name
            name, _, rest = str(e).partition(":")
            raise CommandError(
                f"--{name.replace('_', '-')}:{rest}" if hasattr(args, name) else str(e)
            ) from None
        except OSError as e:
            raise CommandError(f"{args.out_dir}: {e.strerror or e}") from None
    elapsed = time.monotonic() - start
    print(f"wrote {result.directory}: {result.records:,} records in {result.batches:,} batches, "
          f"offsets 0-{result.last_offset}, {len(result.segments)} segment(s), {len(result.snapshots)} snapshot(s), "
          f"{elapsed:.1f} s ({result.records / max(elapsed, 1e-9):,.0f} records/s)")  # fmt: skip
    for name, count in result.by_type.items():
        print(f"  {name:<36} {count:>12,}")
    if args.jsonl:
        print(f"wrote {args.jsonl}")
    return 0
