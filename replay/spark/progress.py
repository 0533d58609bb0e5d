"""Spark job progress on standard error: a daemon thread polls the status tracker.

Rules: read-only (it only asks ``statusTracker()``), at most two polls a second, silent when
disabled, and it always stops with the ``with`` block (the thread is joined, bounded).
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

from ctrlbatch.common import Progress

__all__ = ["StageProgress"]

POLL_SECONDS = 0.5


class StageProgress:
    """``with StageProgress(spark): ...`` shows tasks done / total of the running Spark stages."""

    def __init__(self, spark: Any, *, enabled: bool = True) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._enabled = enabled
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._progress = Progress("spark", unit="tasks", enabled=enabled)

    def __repr__(self) -> str:
        return f"StageProgress({self._progress!r})"

    def __enter__(self) -> StageProgress:
        if self._enabled:
            self._thread = threading.Thread(target=self._poll, name="ctrlbatch-spark-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._progress.close()

    def _poll(self) -> None:
        finished = 0  # tasks of the stages that ended since we started
        totals: dict[int, int] = {}  # active stage id -> its number of tasks
        while not self._stop.wait(POLL_SECONDS):
            try:
                active: dict[int, tuple[int, int]] = {}
                for stage_id in self._tracker.getActiveStageIds():
                    info = self._tracker.getStageInfo(stage_id)
                    if info is not None:
                        active[stage_id] = (info.numCompletedTasks, info.numTasks)
            except Exception:  # the context is stopping: nothing more to show
                return
            for stage_id in [s for s in totals if s not in active]:
                finished += totals.pop(stage_id)
            totals.update((s, t) for s, (_d, t) in active.items())
            done = finished + sum(d for d, _t in active.values())
            if totals or finished:
                self._progress.update(done, finished + sum(totals.values()))
