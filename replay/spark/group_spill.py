"""A Spark unit's send groups kept in a file of its own between the replay and the write stage.

(The one pass, whose task replays a unit and writes its rows itself, keeps them in the task:
spark/kept_groups.py. This file carries them for the serial and two-stage plans, and for a
one-pass task that is not asked to write rows.)

Rules of this module:
- Why a file the Python task writes, not Spark's storage: the groups (every full-image
  UpdateMetadata body once, 4.1 GB at 10M generated records) went from the unit task to the
  JVM over the worker's socket as pickled ``SendGroup`` objects, were persisted DISK_ONLY and
  streamed back to the write task, where attrs' per-object ``__setstate__`` rebuilt them, all
  on the same cores as the replay. Written and read by the tasks themselves, as pickled plain
  tuples: on that log (local[2], load about 2) the run went from 399 to 336 s, the workers'
  CPU from 694 to 619 s and the JVM's from 43 to 16 s, rows identical.
- Where: ``spill_dir`` makes a scratch directory beside the requests directory. Every executor
  can reach it, since the write tasks already write their Parquet parts into the requests
  directory (spark/unit.py's rules); the directory is removed when the run ends, however it ends
  (spark/engine.py), and it lies inside the output's temporary directory, which the output removes
  on any failure anyway (output.py).
- Format: pickle (protocol 5) frames, one per chunk of at most ``GROUPS_PER_CHUNK`` groups, each
  a tuple of plain tuples in ``SendGroup``'s field order; a header frame first names those fields
  (``FIELDS``), so a reader of another version of ctrlbatch fails with that said, not with shifted
  fields. Only this job's tasks write and read these files (pickle trusts its input: the file is
  never read from anywhere else).
- A unit's file appears under its final name only when complete: it is written under a name of
  its own attempt and renamed at the end, so a retried or speculative attempt of the same unit
  (which writes the same groups) never leaves a half file where the write stage reads.
"""

from __future__ import annotations

import contextlib
import operator
import os
import pickle
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import attrs

from ..rows.rows import SendGroup

__all__ = ["FIELDS", "GROUPS_PER_CHUNK", "read_groups", "spill_dir", "spill_path", "write_groups"]

GROUPS_PER_CHUNK = 1024  # groups per pickle frame: few, large frames; a bounded reader
FIELDS = tuple(f.name for f in attrs.fields(SendGroup))


def spill_dir(requests_dir: str | os.PathLike[str]) -> str:
    """A new scratch directory beside ``requests_dir`` (module rules)."""
    parent = os.path.dirname(os.path.abspath(os.fspath(requests_dir)))
    os.makedirs(parent, exist_ok=True)  # as the requests directory itself is made, parents included
    return tempfile.mkdtemp(prefix=".groups-", dir=parent)


def spill_path(directory: str, index: int) -> str:
    """Where unit ``index`` keeps its groups."""
    return os.path.join(directory, f"unit-{index:05d}.groups")


_values = operator.attrgetter(*FIELDS)  # a group as a tuple in field order; SendGroup(*values) rebuilds it


def write_groups(path: str, groups: Iterable[SendGroup]) -> int:
    """Write the groups, in order, to ``path`` (complete or absent: module rules); returns how many."""
    partial = f"{path}.{uuid.uuid4().hex}.partial"
    count = 0
    try:
        with open(partial, "wb") as f:
            pickle.dump(FIELDS, f, protocol=5)
            chunk: list[tuple[object, ...]] = []
            for group in groups:
                chunk.append(_values(group))
                if len(chunk) == GROUPS_PER_CHUNK:
                    pickle.dump(tuple(chunk), f, protocol=5)
                    count += len(chunk)
                    chunk = []
            if chunk:
                pickle.dump(tuple(chunk), f, protocol=5)
                count += len(chunk)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return count


def read_groups(path: str | os.PathLike[str]) -> Iterator[SendGroup]:
    """The groups of a file ``write_groups`` wrote, in order, a chunk in memory at a time."""
    with open(path, "rb") as f:
        fields = pickle.load(f)
        if tuple(fields) != FIELDS:
            raise RuntimeError(f"{Path(path).name}: written by another version of ctrlbatch (SendGroup fields {fields})")
        make = SendGroup
        while True:
            try:
                chunk = pickle.load(f)
            except EOFError:
                return
            for values in chunk:
                yield make(*values)

