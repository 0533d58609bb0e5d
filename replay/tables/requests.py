"""``replay_dataframe``: the replay's requests as a Spark DataFrame, computed by Spark tasks.

Rules of this module:
- The rows are the Spark engine's (spark/engine.py's replay_spark, its plan and units as the CLI runs
  them): each unit task replays its byte range and each write task writes its Parquet part into
  ``work_dir``; the DataFrame reads those parts. Nothing of the log or of the rows reaches the
  driver, which only composes the plan and merges the per-unit counts (spark/engine.py's rules).
- So the rows are the Parquet output's (rows.REQUEST_SCHEMA: the same values, the delta's first
  and last offsets included) plus ``delta_time``, the delta's timestamp (the ``timestamp`` column,
  ms) as a TIMESTAMP; columns in schema.REQUESTS_ARROW's order.
  ``digest="none"``: the requests are sized, not encoded (rows.py's sizes-only rule): the same
  rows and columns, sha256 null; with_frames is then refused.
- The controller id where the replay starts follows the CLI's rule (job.controller_at_start: from
  a snapshot, the KRaft leader of the last LeaderChange below it).
- ``work_dir``: where the parts are written. Every executor must reach it (a shared filesystem
  on a cluster), as ``ctrlbatch replay --out`` needs. Without it, a new directory under the
  system's temporary directory, removed when this Python process exits; a given one is kept
  (and must not exist yet or be empty).
- Bad input fails on the driver with the replay's one-line error (a ReplayInputError or
  MetadataReplayError naming the file and byte offset), raised before the DataFrame exists.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any, Literal

from ctrlbatch.common import CommandError

from .schema import REQUESTS_ARROW

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ctrlbatch.context import MetadataVersion

__all__ = ["replay_dataframe"]


def _work_dir(work_dir: str | os.PathLike[str] | None) -> str:
    if work_dir is None:
        made = tempfile.mkdtemp(prefix="ctrlbatch-requests-")
        atexit.register(shutil.rmtree, made, True)
        return made
    path = os.path.abspath(os.fspath(work_dir))
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise CommandError(f"{path}: work_dir must not exist yet or be an empty directory")
    os.makedirs(path, exist_ok=True)
    return path


def replay_dataframe(
    spark: SparkSession,
    path: str | os.PathLike[str],
    *,
    from_snapshot: str | None = None,
    skip_corrupt: bool = False,
    coalesce: int = 1,
    targets: Literal["all", "migrating"] = "all",
    controller_id: int | None = None,
    zk_controller_epoch: int | None = None,
    ibp: MetadataVersion | None = None,
    correct_offline: bool = False,
    with_frames: bool = False,
    digest: Literal["sha256", "none"] = "sha256",
    unit_bytes: int | None = None,
    work_dir: str | os.PathLike[str] | None = None,
) -> DataFrame:
    """The requests the replay of ``path`` delivers, one row per request (module rules). The
    options are ``ctrlbatch replay``'s, by the same names."""
    from pyspark.sql import functions as F

    from ..log.sources import open_history
    from ..run.job import ReplayJob, controller_at_start
    from ..spark.engine import HistorySource, replay_spark

    source_path = os.path.abspath(os.fspath(path))
    snapshot = from_snapshot if from_snapshot in (None, "newest") else os.path.abspath(os.fspath(from_snapshot))
    job = ReplayJob(source_path, from_snapshot=snapshot, skip_corrupt=skip_corrupt, coalesce=coalesce,
                    targets=targets, controller_id=controller_id, zk_controller_epoch=zk_controller_epoch, ibp=ibp,
                    correct_offline=correct_offline, with_frames=with_frames, digest=digest, unit_bytes=unit_bytes)
    history = open_history(source_path, from_snapshot=snapshot, skip_corrupt=skip_corrupt)
    job, _controller = controller_at_start(job, history)
    requests_dir = os.path.join(_work_dir(work_dir), "requests")
    replay_spark(spark, HistorySource(source_path, snapshot, skip_corrupt), job.options(), coalesce=coalesce,
                 requests_dir=requests_dir, with_frames=with_frames, unit_bytes=unit_bytes,
                 history=history)  # opened once on the driver
    frame: Any = spark.read.parquet(requests_dir)
    frame = frame.withColumn("delta_time", F.timestamp_millis(F.col("timestamp")))
    result: DataFrame = frame.select(*REQUESTS_ARROW.names)
    return result
