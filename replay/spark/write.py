"""The Spark engine's write task: one unit's rows written (the Data Source API's DataWriter).

Rules of this module:
- The write task of unit i reads the unit's send groups back from the run's scratch directory
  (group_spill; the one pass hands its task's own to ``write_rows``: spark/kept_groups.py),
  numbers the rows from the per-broker starting points the driver computed (prefix sums of
  the earlier units' counts), hashes each frame (rows.expand_columns) and writes
  ``part-<i>.parquet`` with pyarrow, so the files read back in send order.
- A group of at least rows.SHARED_HASH_BYTES of frames (a full image's UpdateMetadata to
  every broker, 1.8 MB a frame at 50,000 partitions) is hashed half by a helper thread of the
  task (frames.FrameEncoder.sha256s_shared). Why: while other tasks run, each core already has
  one, and the two halves only take turns; when the last tasks of a stage run alone (the tail
  of a run: 1.8 s of local[2]'s 23 s on the 1M-record log, 3.7 s at 10M) their hashing takes
  the idle core. The task waits for the helper before its next group, so it never runs on more
  than two threads, and never on two for more than one group. Measured on the 10M-record log,
  local[2], one run each, the same tree with and without the helper: 199.6 -> 194.4 s, workers'
  CPU 377.8 -> 370.8 s (in the busy part the halves only take turns: no CPU is added).
- It returns a ``WriteEnd`` (its unit, the rows written, its error), never raises on what the
  user can act on: an OS error of the spill file or of the Parquet file (pyarrow's file errors
  are OSErrors) becomes the error value, one line naming the path and the reason
  (``common.os_error_line``, as the local engine's output gives it). The driver raises the
  first one; nothing reads an error out of Spark's text. A bug still fails the task, as Spark
  reports it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs

from ctrlbatch.common import CommandError, os_error_line

from ..rows.rows import REQUEST_SCHEMA, SendGroup, expand_columns, request_schema
from .group_spill import read_groups, spill_path

__all__ = ["WriteEnd", "write_rows", "write_unit"]


@attrs.frozen(slots=True)
class WriteEnd:
    """How a write task ended: its unit, the rows it wrote, and its error (None: all written)."""

    index: int
    rows: int
    error: CommandError | None = None


def write_unit(
    index: int, spill: str, first_seq: dict[int, int], directory: str, with_frames: bool, digest: str = "sha256",
) -> WriteEnd:
    """Write unit ``index``'s rows (its groups from ``spill``) to ``directory/part-<index>.parquet``."""
    return write_rows(index, read_groups(spill_path(spill, index)), first_seq, directory, with_frames, digest)


def write_rows(
    index: int, groups: Iterable[SendGroup], first_seq: dict[int, int], directory: str, with_frames: bool,
    digest: str = "sha256",
) -> WriteEnd:
    """Write unit ``index``'s rows (``groups``, in send order; an OSError while they are read is
    the WriteEnd's error too) to ``directory/part-<index>.parquet``."""
    from ..output.output import ParquetRows

    writer = None
    try:
        with ThreadPoolExecutor(1, "ctrlbatch-hash") as helper:
            writer = ParquetRows(Path(directory), request_schema(digest), name=f"part-{index:05d}.parquet")
            for columns in expand_columns(groups, dict(first_seq), with_frames, REQUEST_SCHEMA.names, helper):
                writer.write_columns(columns)
            writer.close()
    except OSError as e:
        if writer is not None:
            with contextlib.suppress(OSError):
                writer.close()
        return WriteEnd(index, 0, CommandError(os_error_line(e)))
    return WriteEnd(index, writer.count)
