"""Replay a KRaft metadata log into the controller requests every broker would have received.

Rules of this module: it parses and checks the options once (every bad value is a
CommandError naming the option), opens the history, runs one engine (Spark by default, or
the sequential one), writes the output directory atomically when --out is given, and prints
the summary on standard output. Progress goes to standard error. --compare-ibp runs the same
history at two inter-broker protocol versions and prints the per-API difference.
Every failure the user can act on is one line and exit status 1: an OS error (permission, not a
directory, a symlink loop, ...) names the path and the reason. SIGTERM is turned into an
exception like SIGINT's, so both run the same clean-up (no DIR.tmp-* is left) and end with one
line: exit status 130 for SIGINT (the command's rule), 143 (128 + 15) for SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ctrlbatch.common import CommandError, os_error_line
from ctrlbatch.context import MetadataVersion
from ctrlbatch.context.metadata_version import KAFKA_4X_LEVELS, LAST_ZK_LEVEL

__all__ = ["configure", "run", "parse_ibp"]

ENGINES = ("spark", "local")
# The names of the Kafka 4.x levels (22-33) and their releases: refused by --ibp with the reason.
_KAFKA_4X_NAMES = frozenset(
    name for n, lv in KAFKA_4X_LEVELS.items() if n > LAST_ZK_LEVEL for name in (lv.version, lv.version.split("-")[0])
)
TARGETS = ("all", "migrating")
DIGESTS = ("sha256", "none")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        help="a __cluster_metadata-0 directory (or the data directory holding it), a .log segment, "
        "a .checkpoint snapshot, JSON lines of records, or kafka-dump-log output",
    )
    parser.add_argument("--out", metavar="DIR", help="write DIR/requests/ (Parquet), DIR/summary.json, DIR/report.png "
                        "(default: nothing is written; the summary is printed)")
    parser.add_argument("--engine", choices=ENGINES, default="spark", help="Spark (parallel) or one local process")
    parser.add_argument(
        "--master", metavar="URL", help="Spark master (default: spark-submit's, else local[*]), e.g. spark://host:7077"
    )
    parser.add_argument(
        "--from-snapshot", nargs="?", const="newest", metavar="FILE",
        help="start from a .checkpoint snapshot (without FILE: the directory's newest)",
    )
    parser.add_argument("--skip-corrupt", action="store_true", help="count and report corrupt batches instead of stopping")
    parser.add_argument("--coalesce", type=int, default=1, metavar="N", help="merge N consecutive deltas into one")
    parser.add_argument(
        "--targets", choices=TARGETS, default="all",
        help="all: every registered broker is treated as a migrating ZooKeeper broker; migrating: Kafka's filter",
    )
    parser.add_argument(
        "--controller-id", type=int, metavar="N",
        help="controller id when the log has no LeaderChange record (default 1)",
    )
    parser.add_argument(
        "--zk-controller-epoch", type=int, metavar="N",
        help="request header controller epoch (default: the KRaft leader epoch of each delta)",
    )
    parser.add_argument(
        "--ibp", metavar="V",
        help="force request versions for this metadata version, e.g. 2.8-IV1 "
        "(default: the log's own metadata.version at each point of the history)",
    )
    parser.add_argument(
        "--correct-offline", action="store_true",
        help="list really offline replicas for deleted topics (Kafka 3.9 inverts that list)",
    )
    parser.add_argument("--with-frames", action="store_true", help="add the frame bytes to requests/")
    parser.add_argument(
        "--digest", choices=DIGESTS, default="sha256",
        help="sha256: each row carries the SHA-256 of its frame; none: requests are sized from their fields, "
        "never encoded or hashed (bytes as with sha256, sha256 null; faster)",
    )
    parser.add_argument(
        "--compare-ibp", metavar="V1,V2", help="replay at two versions and print the per-API difference"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on standard error")


def parse_ibp(text: str, option: str = "--ibp") -> MetadataVersion:
    """A metadata version from its Kafka spelling (``3.9-IV0``, ``2.8``); CommandError names the option.

    A Kafka 4.x name (release 4 or later) is refused in one line: Kafka 4.0 removed ZooKeeper mode."""
    if text.strip() in _KAFKA_4X_NAMES:
        raise CommandError(
            f"{option}: {text.strip()} is a Kafka 4.x metadata.version, and Kafka 4.0 removed ZooKeeper mode: "
            "no LeaderAndIsr, UpdateMetadata or StopReplica version exists past 3.9-IV0's (levels above 21 "
            "already use them); name a ZooKeeper-era version such as 3.9-IV0"
        )
    try:
        return MetadataVersion.from_version_string(text.strip())
    except (ValueError, KeyError) as e:
        raise CommandError(f"{option}: {text!r} is not a metadata version such as 3.9-IV0 or 2.8-IV1 ({e})") from None


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like KeyboardInterrupt (a BaseException), so every ``finally`` runs."""


def _on_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: the clean-up must not be cut short
    raise Terminated


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: leave signals to whoever owns them
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _check_args(args: argparse.Namespace) -> None:
    try:
        os.stat(args.path)
    except FileNotFoundError:
        broken = os.path.islink(args.path)
        raise CommandError(f"{args.path}: {'a symbolic link to nothing' if broken else 'no such file or directory'}") from None
    except OSError as e:
        raise CommandError(os_error_line(e)) from None
    if args.out is not None:
        _check_out(Path(args.out))
    if args.coalesce < 1:
        raise CommandError(f"--coalesce: must be at least 1, got {args.coalesce}")
    if args.controller_id is not None and args.controller_id < 0:
        raise CommandError(f"--controller-id: must be >= 0, got {args.controller_id}")
    if args.zk_controller_epoch is not None and args.zk_controller_epoch < 0:
        raise CommandError(f"--zk-controller-epoch: must be >= 0, got {args.zk_controller_epoch}")
    if args.master is not None and args.engine != "spark":
        raise CommandError("--master: only with --engine spark")
    if args.with_frames and args.digest == "none":
        raise CommandError("--with-frames: there are no frames to keep with --digest none (requests are sized, not encoded)")
    if args.compare_ibp is not None and args.ibp is not None:
        raise CommandError("--compare-ibp: already sets the versions; drop --ibp")


def _compare_versions(text: str) -> tuple[MetadataVersion, MetadataVersion]:
    parts = [p for p in text.split(",") if p.strip()]
    if len(parts) != 2:
        raise CommandError(f"--compare-ibp: expected two versions V1,V2 (e.g. 2.8-IV1,3.9-IV0), got {text!r}")
    return parse_ibp(parts[0], "--compare-ibp"), parse_ibp(parts[1], "--compare-ibp")


def _check_out(out: Path) -> None:
    """Refuse an --out that cannot work before any replay starts (OutputDir checks it again)."""
    from ..output.output import foreign_reason

    if not str(out).strip():
        raise CommandError("--out: expected a directory path, got an empty string")
    refusal = foreign_reason(out.absolute())
    if refusal is not None:
        raise CommandError(f"--out {out}: {refusal}; choose another --out or remove it yourself")
    parent = out.absolute().parent
    try:
        mode = os.stat(parent).st_mode
    except OSError as e:
        raise CommandError(f"--out {out}: cannot write the output here: {os_error_line(e)}") from None
    if not stat.S_ISDIR(mode):
        raise CommandError(f"--out {out}: cannot write the output here: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CommandError(f"--out {out}: cannot write the output here: {parent}: Permission denied")


def run(args: argparse.Namespace) -> int:
    try:
        with _sigterm_unwinds():
            return _run(args)
    except Terminated:
        print("ctrlbatch replay: terminated (SIGTERM)", file=sys.stderr)
        return 128 + signal.SIGTERM
    except OSError as e:
        if isinstance(e, BrokenPipeError):
            raise
        raise CommandError(os_error_line(e)) from None


def _run(args: argparse.Namespace) -> int:
    from . import job as replay_run

    _check_args(args)
    ibp = parse_ibp(args.ibp) if args.ibp is not None else None
    compare = _compare_versions(args.compare_ibp) if args.compare_ibp is not None else None
    job = replay_run.ReplayJob(
        path=args.path,
        engine=args.engine,
        master=args.master,
        from_snapshot=args.from_snapshot,
        skip_corrupt=args.skip_corrupt,
        coalesce=args.coalesce,
        targets=args.targets,
        controller_id=args.controller_id,
        zk_controller_epoch=args.zk_controller_epoch,
        ibp=ibp,
        correct_offline=args.correct_offline,
        with_frames=args.with_frames,
        digest=args.digest,
        progress=not args.quiet,
    )
    out: Any = sys.stdout
    if compare is not None:
        left, right = (replay_run.execute(job.with_ibp(v), None) for v in compare)
        out.write(replay_run.format_comparison(compare, left, right))
        return 0
    result = replay_run.execute(job, Path(args.out) if args.out else None)
    out.write(replay_run.format_summary(result))
    if args.out:
        out.write(f"\nwrote {Path(args.out).absolute()}: requests/ (Parquet), summary.json, report.png\n")
    return 0
