"""A one-pass unit's send groups kept in its own task between its replay and its rows' writing.

Rules of this module:
- Why not group_spill's pickled file: in the one pass (spark/onepass.py) the task that replays a
  unit also writes its rows, so the groups need not leave the process. Pickling every group (a
  tuple of its 15 fields), unpickling it and making the SendGroup again cost 3.4% of the CPU of
  the 10M-record generated log's Spark replay (py-spy, about 14 s of 404 s on local[2]); kept
  here, 1.4% on the 1M log (py-spy, against 3.4% spilled). The 10M log, A/B one run each with
  the halved last round (plan.TAPER_BYTES), load 1.9: 200.1 -> 193.5 s, workers' CPU 376 -> 366 s.
- What stays in memory: each group object as the replay made it, in send order. A body of at
  least ``LARGE_BODY`` bytes is written to the task's own file as it comes (one write of the
  bytes, no copy made here) and its group kept with ``data`` None and the body's place;
  ``__iter__`` reads it back (``os.pread``) when its group's turn comes. The file takes the
  full-image UpdateMetadata bodies (4.1 GB at 10M records, about 1.8 MB each, a few hundred per
  unit: their size follows the cluster, not the input) and the larger incremental ones; memory
  holds the small bodies and the fields, what the unit's input (at most plan.MAX_UNIT_BYTES)
  makes. Measured on the 1M-record log replayed as one unit (58 MB, a 10M run's unit size;
  209k groups, bodies under 4 KiB 107 MB of them): a task's peak 386 MiB spilled, 613 MiB kept
  with 64 KiB as the threshold, 468 MiB with 4 KiB and the batches dropped as the replay takes
  them (onepass._drained); 4 KiB sends 4,700 more bodies through the file, microseconds each.
  After an error the object is only closed (a partly written body leaves the offsets unknown).
- ``__iter__`` hands each group over once and drops it (the writer's chunk is the only copy
  left), so the groups' memory goes as the rows are written.
- The file's name carries a uuid of its own (a retried or speculative attempt of the same unit
  writes a file of its own) and ``close`` removes it; the exchange directory it lies in is
  removed when the run ends, however it ends (spark/engine.py).
- Errors: an OSError of the file (disk full, ...) propagates from ``keep`` or ``__iter__`` as the
  OSError it is (the caller turns it into one line: common.os_error_line); so does anything the
  replay raises while ``keep`` consumes it (a refused record: a CommandError).
"""

from __future__ import annotations

import contextlib
import errno
import os
import uuid
from collections.abc import Iterable, Iterator

import attrs

from ..rows.rows import SendGroup

__all__ = ["LARGE_BODY", "KeptGroups"]

LARGE_BODY = 4 << 10  # bytes: a body at least this large is kept in the file (module rules)


def _named(e: OSError, path: str) -> OSError:
    """``e`` naming ``path`` (an error of a file descriptor names no file)."""
    return e if e.filename is not None else OSError(e.errno, e.strerror, path)


class KeptGroups:
    """A unit's send groups in send order, their large bodies in a file (module rules)."""

    __slots__ = ("_fd", "_groups", "_large", "_placed", "bytes_in_file", "path")

    def __init__(self, directory: str, index: int, large: int = LARGE_BODY) -> None:
        self._large = large
        self.path = os.path.join(directory, f"unit-{index:05d}.{uuid.uuid4().hex}.bodies")
        self._fd: int | None = None
        self._groups: list[SendGroup | None] = []
        self._placed: dict[int, tuple[int, int]] = {}  # a group's position -> (offset, length) of its body
        self.bytes_in_file = 0

    def __repr__(self) -> str:
        return f"KeptGroups({len(self._groups)} groups, {len(self._placed)} bodies in the file)"

    def __len__(self) -> int:
        return len(self._groups)

    def keep(self, groups: Iterable[SendGroup]) -> int:
        """Keep ``groups`` (consumed here, in order); returns how many were kept so far."""
        kept, placed, large = self._groups, self._placed, self._large
        append = kept.append
        for group in groups:
            data = group.data
            if data is not None and len(data) >= large:
                at = self.bytes_in_file
                self._write(data)
                placed[len(kept)] = (at, len(data))
                group = attrs.evolve(group, data=None)
            append(group)
        return len(kept)

    def _write(self, data: bytes) -> None:
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            view, fd = memoryview(data), self._fd
            while view:  # os.write may write less than asked
                view = view[os.write(fd, view):]
        except OSError as e:
            raise _named(e, self.path) from None
        self.bytes_in_file += len(data)

    def __iter__(self) -> Iterator[SendGroup]:
        """Each group once, in send order, its body read back from the file where it went there."""
        kept, placed = self._groups, self._placed
        for i in range(len(kept)):
            group = kept[i]
            kept[i] = None
            assert group is not None, "KeptGroups: the groups are handed over once"
            where = placed.get(i)
            if where is not None:
                assert self._fd is not None
                offset, length = where
                try:
                    data = os.pread(self._fd, length, offset)
                except OSError as e:
                    raise _named(e, self.path) from None
                if len(data) != length:
                    raise OSError(errno.EIO, f"{len(data)} bytes read back of a {length}-byte body", self.path)
                group = attrs.evolve(group, data=data)
            yield group
        kept.clear()
        placed.clear()

    def close(self) -> None:
        """Drop the groups and remove the file (safe to call more than once)."""
        self._groups = []
        self._placed = {}
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(self.path)
