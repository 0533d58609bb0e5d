"""One replay run from options to output: open the history, run an engine, write DIR, format text.

Rules of this module: both engines are driven through ``execute`` so that everything around
them (the output directory, summary.json, report.png, the printed text) is the same code;
the engines differ only in how rows and the summary are produced. Output is committed only
after every part is written (``OutputDir``), so a failed run leaves no DIR behind. On a failure
(or SIGINT/SIGTERM) the Spark session is stopped before the temporary directory is removed, so
no executor writes into it afterwards. Before report.png is drawn, the memory the replay freed
is handed back to the system (common.tuning.release_free_memory), so the report does not raise the
run's peak RSS above the replay's. What the drawing needs (matplotlib) is imported only then:
imported in a thread while the JVM starts (tried), it added 17-20 MiB to the Spark driver's peak
RSS (1M / 10M generated records: 246 / 278 MiB, against 226 / 261 without) for no wall time
that a run could show (28.7-29.2 s at 1M either way, load 1.8-2.2). An executor's error the user can act on reaches the user as
the same one line the local engine gives: the Spark engine hands it back as a value (its tasks'
typed results, spark/engine.py), never as text to parse; only a bug keeps Spark's trace. The
history is opened once on the driver, here, and handed to the engine. A history
that yields no batch at all (and skipped nothing) is an error saying the input is empty.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs

from ctrlbatch.batch.versions import leader_and_isr_version, stop_replica_version, update_metadata_version
from ctrlbatch.common import CommandError, Progress
from ctrlbatch.context import MetadataVersion

from ..log.errors import ReadStats
from ..output.output import REPORT_BINS, OutputDir, ParquetRows, write_json
from ..output.report import broker_timeline, draw_report

if TYPE_CHECKING:
    from ..log.sources import History

__all__ = ["ReplayJob", "ReplayOutcome", "execute", "format_summary", "format_comparison"]

Engine = Literal["spark", "local"]


@attrs.frozen(slots=True)
class ReplayJob:
    """Everything one ``ctrlbatch replay`` run needs (checked by the CLI)."""

    path: str
    engine: Engine = "spark"
    master: str | None = None
    from_snapshot: str | None = None
    skip_corrupt: bool = False
    coalesce: int = 1
    targets: Literal["all", "migrating"] = "all"
    controller_id: int | None = None
    zk_controller_epoch: int | None = None
    ibp: MetadataVersion | None = None
    correct_offline: bool = False
    with_frames: bool = False
    digest: Literal["sha256", "none"] = "sha256"  # none: requests sized, not encoded (no sha256 column values)
    progress: bool = True
    unit_bytes: int | None = None  # Spark: input bytes per task (None: the engine's default)

    def with_ibp(self, ibp: MetadataVersion) -> ReplayJob:
        return attrs.evolve(self, ibp=ibp)

    def options(self) -> Any:
        from ..propagate.propagator import ReplayOptions

        return ReplayOptions(
            targets=self.targets,
            controller_id=1 if self.controller_id is None else self.controller_id,
            zk_controller_epoch=self.zk_controller_epoch,
            ibp=self.ibp,
            correct_offline=self.correct_offline,
            digest=self.digest,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "input": str(Path(self.path).absolute()),
            "engine": self.engine,
            "master": self.master,
            "from_snapshot": self.from_snapshot,
            "skip_corrupt": self.skip_corrupt,
            "coalesce": self.coalesce,
            "targets": self.targets,
            "controller_id": self.controller_id,
            "zk_controller_epoch": self.zk_controller_epoch,
            "ibp": None if self.ibp is None else str(self.ibp),
            "correct_offline": self.correct_offline,
            "with_frames": self.with_frames,
            "digest": self.digest,
        }


@attrs.frozen(slots=True, repr=False)
class ReplayOutcome:
    job: ReplayJob
    summary: Any  # summary.ReplaySummary
    stats: ReadStats
    rows: int
    seconds: float
    out: Path | None
    phases: dict[str, float] = attrs.field(factory=dict)  # Spark: wall seconds per phase
    controller: dict[str, Any] = attrs.field(factory=dict)  # the controller id used and where it came from
    plan: str | None = None  # Spark: "parallel", or "serial: why" (spark/ranges.py's rules; e.g. a ClearElrRecord)

    def __repr__(self) -> str:
        return f"ReplayOutcome({self.job.engine}, {self.rows:,} rows, {self.seconds:.1f} s)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job.describe(),
            "rows": self.rows,
            "seconds": round(self.seconds, 3),
            "phases": {k: round(v, 3) for k, v in self.phases.items()},
            "read": self.stats.to_dict(),
            "controller_id": self.controller,
            **({} if self.plan is None else {"plan": self.plan}),
            "summary": _summary_dict(self.summary),
        }


def _summary_dict(summary: Any) -> dict[str, Any]:
    data = summary.to_dict()
    if not isinstance(data, Mapping):
        raise TypeError(f"summary.to_dict() returned {type(data).__name__}")
    return dict(data)


def execute(job: ReplayJob, out_dir: Path | None) -> ReplayOutcome:
    """Run ``job``; with ``out_dir`` write requests/, summary.json and report.png atomically.
    The whole command collects rarely (common.tuning.rare_collections), the summary and the report
    too: with Python's thresholds back after the engine, the report's allocations ran three or four
    full collections over the replay's still-live memos, 0.7-0.9 s at 1M records."""
    from ctrlbatch.common.tuning import rare_collections

    with rare_collections():
        return _execute(job, out_dir)


def _execute(job: ReplayJob, out_dir: Path | None) -> ReplayOutcome:
    from ctrlbatch.common.tuning import release_free_memory

    from ..log.sources import open_history

    history = open_history(job.path, from_snapshot=job.from_snapshot, skip_corrupt=job.skip_corrupt)
    run_job, controller = controller_at_start(job, history)
    start = time.monotonic()
    out = OutputDir(out_dir) if out_dir is not None else None  # no call between this and the try: a signal lands inside
    try:
        phases: dict[str, float] = {}
        plan: str | None = None
        if job.engine == "local":
            summary, stats, rows = _run_local(run_job, history, out)
        else:
            summary, stats, rows, plan = _run_spark(run_job, history, out, phases)
        if stats.batches == 0 and not stats.corrupt_count:
            raise CommandError(f"{job.path}: the input is empty: it holds no record batch to replay")
        outcome = ReplayOutcome(job, summary, stats, rows, time.monotonic() - start, out_dir, phases, controller, plan)
        if out is not None:
            write_json(out.summary_path, outcome.to_dict())
            release_free_memory()  # the report's memory does not stack on the replay's freed heap
            with Progress("drawing report.png", enabled=job.progress):
                timeline = broker_timeline(out.requests_dir, REPORT_BINS)
                kraft = {b: (c["kraft_noop_bytes"], c["kraft_metadata_bytes"], c["zk_request_bytes"])
                         for b, c in summary.kraft_by_broker().items()}
                draw_report(timeline, out.report_path, title=f"ctrlbatch replay of {Path(job.path).name}", kraft=kraft)
            out.commit()
        return outcome
    finally:
        if out is not None and not out.committed:
            out.abort()


def controller_at_start(job: ReplayJob, history: History) -> tuple[ReplayJob, dict[str, Any]]:
    """The job to run, with the controller id in office where the replay starts, and where that
    id came from: from a snapshot, the KRaft leader of the last LeaderChange below its end offset
    in the retained segments; else (or when none is retained) --controller-id, else 1. After
    that, every LeaderChange record of the replayed log names the controller of later deltas."""
    from ..log.sources import snapshot_leader

    given = job.controller_id
    fallback = {"id": 1 if given is None else given, "source": "--controller-id" if given is not None else "default"}
    snap = history.snapshot
    if snap is None:
        return job, {**fallback, "until": "the first LeaderChange record of the log"}
    found = snapshot_leader(history)
    if found is None:
        why = (
            f"no LeaderChange record below the snapshot's end offset {snap.end_offset} is retained"
            if history.kind == "log" and snap.path != history.source
            else "only .log segments are searched for the LeaderChange before a snapshot"
        )
        return job, {**fallback, "until": "the first LeaderChange record after the snapshot", "why": why}
    leader, offset = found
    info = {"id": leader, "source": f"LeaderChange record at offset {offset} (below the snapshot's end offset "
            f"{snap.end_offset})", "until": "the first LeaderChange record after the snapshot"}
    if given is not None and given != leader:
        info["ignored"] = f"--controller-id {given}: the log names the leader"
    return attrs.evolve(job, controller_id=leader), info


def _run_local(job: ReplayJob, history: History, out: OutputDir | None) -> tuple[Any, ReadStats, int]:
    from ..engine.local import replay_local
    from ..rows.rows import request_schema

    with Progress("replaying (local)", unit="batches", enabled=job.progress) as progress:
        result = replay_local(history, job.options(), coalesce=job.coalesce, progress=progress, with_frames=job.with_frames)
        count = 0
        if out is not None:
            writer = ParquetRows(out.requests_dir, request_schema(job.digest))
            for columns in result.columns:
                writer.write_columns(columns)
            writer.close()
            count = writer.count
        else:
            for _ in result.rows:
                count += 1
    return result.summary, history.stats, count


def _run_spark(job: ReplayJob, history: History, out: OutputDir | None, phases: dict[str, float]) -> tuple[Any, ReadStats, int, str]:
    from ..spark.class_archive import CLASS_ARCHIVE
    from ..spark.engine import EarlyCuts, HistorySource, replay_spark
    from ..spark.master import MasterError, local_cores
    from ..spark.progress import StageProgress
    from ..spark.ranges import serial_reason
    from ..spark.session import REPLAY_JAVA_OPTIONS, spark_session

    cores = None if job.master is None else local_cores(job.master)
    early = None  # the one pass's cuts, made while the JVM starts (spark/engine.py's EarlyCuts)
    if cores is not None and out is not None and job.unit_bytes is None and serial_reason(history, job.coalesce) is None:
        early = EarlyCuts(history, cores)
    try:
        spark = spark_session(job.master, quiet=not job.progress, java_options=REPLAY_JAVA_OPTIONS, class_archive=CLASS_ARCHIVE)
    except MasterError as e:
        raise CommandError(f"--master: {e}") from None
    # Absolute paths: executors of a cluster do not run in the driver's working directory.
    snapshot = job.from_snapshot
    if snapshot is not None and snapshot != "newest":
        snapshot = os.path.abspath(snapshot)
    source = HistorySource(os.path.abspath(job.path), snapshot, job.skip_corrupt)
    try:
        with StageProgress(spark, enabled=job.progress):
            result = replay_spark(
                spark,
                source,
                job.options(),
                coalesce=job.coalesce,
                requests_dir=None if out is None else out.requests_dir,
                with_frames=job.with_frames,
                unit_bytes=job.unit_bytes,
                history=history,  # opened once on the driver (execute)
                early=early,
            )
    except CommandError:
        raise
    except Exception as e:
        interrupt = _interrupt_behind(e)
        if interrupt is not None:  # a clean-up call on the broken gateway failed while unwinding
            if out is not None:
                _stop_executors(spark)
            raise interrupt from None
        raise
    except BaseException:  # SIGINT, SIGTERM: stop the executors before DIR.tmp-* is removed
        if out is not None:
            _stop_executors(spark)
        raise
    phases.update(result.seconds)
    return result.summary, result.stats, result.rows, result.planned


def _interrupt_behind(e: BaseException) -> BaseException | None:
    """The SIGINT/SIGTERM exception an error was raised while handling (a Py4J call made by a
    ``finally`` on the way out fails on the interrupted gateway), or None."""
    seen: BaseException | None = e.__context__
    for _ in range(20):  # a chain is short; the bound only guards against a cycle
        if seen is None:
            return None
        if not isinstance(seen, Exception):
            return seen
        seen = seen.__context__
    return None


def _stop_executors(spark: Any) -> None:
    """Stop Spark so that no task writes into the output after this; an interrupted Py4J call
    can leave the gateway unusable, and then the JVM (with its local executors and their Python
    workers) is ended instead. A cluster's executors stop when the driver's JVM goes."""
    try:
        spark.stop()
        return
    except Exception:  # noqa: BLE001 - the gateway is broken: end the JVM below
        pass
    sc = spark.sparkContext
    accumulators = getattr(sc, "_accumulatorServer", None)
    if accumulators is not None:  # its handler thread reads from the JVM: end it quietly, no EOFError trace
        accumulators.server_shutdown = True
        accumulators.handle_error = lambda request, address: None
    proc = getattr(getattr(sc, "_gateway", None), "proc", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)


MAX_BROKER_LINES = 20


def format_summary(outcome: ReplayOutcome) -> str:
    """The printed summary: what was read, deltas, then requests, partition states and bytes per
    API (with dropped requests), per cause and per broker (the busiest 20 by bytes when there are more)."""
    data = _summary_dict(outcome.summary)
    stats = outcome.stats
    deltas = data["deltas"]
    lines = [
        f"ctrlbatch replay: {outcome.job.path} ({outcome.job.engine} engine, {outcome.seconds:.1f} s)",
        f"read: {stats.batches:,} batches, {sum(stats.records.values()):,} records, {stats.noops:,} NoOps "
        f"skipped, {stats.corrupt_count:,} corrupt skipped",
        *(f"  corrupt: {c}" for c in stats.corrupt[:MAX_BROKER_LINES]),
        f"deltas: {deltas['total']:,} ({deltas['with_requests']:,} with requests, "
        f"{deltas['without_requests']:,} without)",
        "",
        f"{'api':<16}{'requests':>12}{'partitions':>14}{'bytes':>16}{'dropped':>10}",
    ]
    for api, block in [*data["by_api"].items(), ("total", data["totals"])]:
        lines.append(
            f"{api:<16}{block['requests']:>12,}{block['partitions']:>14,}{block['bytes']:>16,}{block['dropped']:>10,}"
        )
    causes = data.get("by_cause", {})
    if causes:
        total = data["totals"]["bytes"]
        lines += ["", f"{'cause (the event of the delta)':<32}{'requests':>12}{'partitions':>14}{'bytes':>16}{'share':>8}"]
        for cause, c in causes.items():
            share = f"{100 * c['bytes'] / total:.1f}%" if total else "-"
            lines.append(f"{cause:<32}{c['requests']:>12,}{c['partitions']:>14,}{c['bytes']:>16,}{share:>8}")
    brokers = sorted(data["by_broker"].items(), key=lambda kv: (-kv[1]["bytes"], int(kv[0])))
    shown = brokers[:MAX_BROKER_LINES]
    more = f" (the {len(shown)} busiest of {len(brokers)})" if len(brokers) > len(shown) else ""
    lines += ["", f"{'broker' + more:<30}{'requests':>12}{'partitions':>14}{'bytes':>16}"]
    lines += [f"{b:<30}{c['requests']:>12,}{c['partitions']:>14,}{c['bytes']:>16,}" for b, c in shown]
    records = ", ".join(f"{name} {n:,}" for name, n in data["records_by_type"].items())
    lines += ["", f"records by type: {records or 'none'}"]
    lines += _more_lines(outcome, data)
    return "\n".join(lines) + "\n"


def _more_lines(outcome: ReplayOutcome, data: Mapping[str, Any]) -> list[str]:
    """metadata.version (the Kafka 4.x note), the controller id's origin, and KRaft beside ZooKeeper."""
    lines = []
    mv = data.get("metadata_version", {})
    if mv.get("levels"):
        levels = ", ".join(f"{lv} ({name})" for lv, name in mv["levels"].items())
        lines.append(f"metadata.version levels: {levels}")
    if mv.get("note"):
        forced = "" if outcome.job.ibp is None else f" (but --ibp {outcome.job.ibp} set the versions of this run)"
        lines.append(f"note: {mv['note']}{forced}")
    c = outcome.controller
    if c:
        why = f"; {c['why']}" if "why" in c else ""
        ignored = f"; {c['ignored']}" if "ignored" in c else ""
        lines.append(f"controller id: {c['id']} from {c['source']}, until {c['until']}{why}{ignored}")
    if outcome.plan is not None:
        lines.append(f"spark plan: {outcome.plan}")
    kraft = data.get("kraft_vs_zookeeper")
    if kraft and kraft["by_broker"]:
        unsized = f", {kraft['unsized_batches']:,} batches of unknown size" if kraft["unsized_batches"] else ""
        lines += [
            "",
            f"KRaft beside ZooKeeper mode: every KRaft broker fetches the whole metadata log, {kraft['log_bytes']:,} "
            f"bytes in {kraft['log_batches']:,} batches{unsized} (definition in summary.json):",
            f"  NoOp batches {kraft['noop_bytes']:>16,} bytes in {kraft['noop_batches']:,} batches: written whenever "
            "nothing else was for metadata.max.idle.interval.ms (500 ms by default), idle cluster or not",
            f"  metadata     {kraft['metadata_bytes']:>16,} bytes in {kraft['metadata_batches']:,} batches: the "
            "metadata and control records, what the cluster's changes cost",
            f"{'broker':<22}{'KRaft metadata':>16}{'KRaft NoOp':>14}{'ZK requests':>16}{'ZK / KRaft metadata':>21}"
            f"{'ZK / KRaft all':>16}",
        ]
        shown = list(kraft["by_broker"].items())[:MAX_BROKER_LINES]
        for b, c2 in shown:
            m, n, z = c2["kraft_metadata_bytes"], c2["kraft_noop_bytes"], c2["zk_request_bytes"]
            lines.append(f"{b:<22}{m:>16,}{n:>14,}{z:>16,}{_ratio(z, m):>21}{_ratio(z, m + n):>16}")
        if len(kraft["by_broker"]) > len(shown):
            lines.append(f"... {len(kraft['by_broker']) - len(shown)} more brokers in summary.json")
    return lines


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "-"


def request_versions_line(mv: MetadataVersion) -> str:
    """Which request version the controller sends at ``mv`` (ControllerChannelManager's tables):
    what explains most of a --compare-ibp difference."""
    return (f"  at {mv}: LeaderAndIsr v{leader_and_isr_version(mv)}, UpdateMetadata v{update_metadata_version(mv)},"
            f" StopReplica v{stop_replica_version(mv)}")


def format_comparison(versions: tuple[MetadataVersion, MetadataVersion], left: ReplayOutcome, right: ReplayOutcome) -> str:
    """Per API: requests and bytes at each version and the difference (right minus left)."""
    a, b = (_summary_dict(o.summary)["by_api"] for o in (left, right))
    v1, v2 = (str(v) for v in versions)
    zero = {"requests": 0, "bytes": 0}
    lines = [
        f"what-if: the same history at metadata.version {v1} and {v2} ({left.job.engine} engine)",
        *(request_versions_line(v) for v in versions),
        f"{'api':<16}{'requests ' + v1:>20}{'requests ' + v2:>20}{'diff':>10}"
        f"{'bytes ' + v1:>20}{'bytes ' + v2:>20}{'diff':>14}{'diff %':>9}",
    ]
    rows = [(api, a.get(api, zero), b.get(api, zero)) for api in sorted(set(a) | set(b))]
    total_a = {k: sum(x[1][k] for x in rows) for k in zero}
    total_b = {k: sum(x[2][k] for x in rows) for k in zero}
    for api, x, y in [*rows, ("total", total_a, total_b)]:
        r1, r2, b1, b2 = x["requests"], y["requests"], x["bytes"], y["bytes"]
        pct = f"{100 * (b2 - b1) / b1:+.1f}%" if b1 else "-"
        lines.append(f"{api:<16}{r1:>20,}{r2:>20,}{r2 - r1:>+10,}{b1:>20,}{b2:>20,}{b2 - b1:>+14,}{pct:>9}")
    return "\n".join(lines) + "\n"


