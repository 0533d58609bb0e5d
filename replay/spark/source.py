"""The Spark engine's source: the history as a picklable recipe (the Data Source API's DataSource).

Rules of this module:
- A ``HistorySource`` is what crosses to every task: the path and the two reading options,
  plain and picklable, never the data. A task opens the history itself (``open``); the driver
  opens it once, for planning, and hands that ``History`` to the plan (spark/engine.py).
- Paths are taken as given: the caller makes them absolute (executors of a cluster do not run
  in the driver's working directory; run/job.py does it).
"""

from __future__ import annotations

from typing import Literal

import attrs

from ..log.sources import History, open_history

__all__ = ["HistorySource"]


@attrs.frozen(slots=True)
class HistorySource:
    """How an executor reopens the history (a picklable recipe, not the data)."""

    path: str
    from_snapshot: str | None = None  # None, "newest" or a .checkpoint path
    skip_corrupt: bool = False

    def open(self) -> History:
        snap: str | Literal["newest"] | None = self.from_snapshot
        return open_history(self.path, from_snapshot=snap, skip_corrupt=self.skip_corrupt)
