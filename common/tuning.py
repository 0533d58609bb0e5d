"""Process-wide tuning: the cyclic garbage collector and the C allocator, one policy for the process.

The replay, the batch and the simulated servers all allocate many small acyclic objects
(frozen values, dicts of them) that live long; CPython's cyclic collector walks them all at every
full collection and finds nothing, and glibc's allocator keeps freed memory in the heap. The
helpers below are the whole policy; callers only choose where to apply it. This module imports
no other ctrlbatch package (tests/test_import_graph.py), so every layer can share it.

Rules of this module:
- ``rare_collections()``: ``GC_THRESHOLDS`` for a block (the replay's engines, while deltas run),
  unless the process already collects this rarely; the old thresholds come back after it, unless
  somebody changed them meanwhile (theirs stay). Why: the replay's image (every partition's
  registration, hundreds of thousands of objects) lives across deltas and each delta allocates
  enough for hundreds of young collections. Measured on the 200k-record generated log (2 cores
  shared, load 4-5): 6.9 s of 26.8 s CPU in the collector with Python's defaults (7,400 / 672 / 51
  collections per generation), 0.9 s of 19.9 s with (50,000, 20, 100). A young collection still
  cost about 0.1 s there at 1M records (a new image's maps are young and hold every partition), so
  the first threshold is 500,000: the 1M-record generated log's local replay (sha256, two
  alternating runs each, load 4.4-5.0 on 2 cores) went from 258 / 22 / 3 collections and 1.8 s in
  the collector to 0 / 0 / 1 and 0.3 s, 43.5 -> 40.9 s of CPU; peak RSS 271 MiB both. What little
  cyclic garbage there is (exceptions, generators) waits longer; a young collection (when one comes)
  walks at most 500,000 new objects, tens of milliseconds.
- ``worker_task(fn, *args)``: a reused worker's task body (every Spark task of the replay). It
  sets the rare thresholds for the worker's life (restoring Python's defaults after each task
  made the next allocation run a full collection over the task's image, still alive: about
  600,000 tracked objects, 0.4 s for a 1M-record unit, 64 units at 10M records) and ends with
  every live object frozen (``gc.freeze``): PySpark's daemon runs ``gc.collect()`` after every
  task of a reused worker (pyspark/daemon.py), which walked the worker's whole heap, memos
  included: 0.35 s after each task, 98 s of the workers' CPU in a py-spy profile of a 10M-record
  run (64 units: 192 tasks). Frozen, there is nothing for it to walk. The next task unfreezes
  them into the oldest generation, so a cycle a task left is found by the next full collection.
  Reference counting frees frozen objects as any other.
- ``gc_paused()``: the collector held off for a block (the batch's bulk sends: a full pass over
  a 200,000-partition context costs tenths of a second); the previous state is restored on
  exit, and nothing is collected that reference counting would not free anyway. Not for
  threads: ``shared_gc_pause`` is.
- ``shared_gc_pause(fn, *args)``: fn run with the collector paused while any thread is inside
  one, counted under a lock; the last one out freezes what was built meanwhile (``gc.freeze``)
  and re-enables the collector if it was enabled. Why: a collection holds the GIL from start to
  end, and over the millions of objects of a 50 MB request it stalled an event loop for 2.0 s
  (0.74 s at 20 MB; 52 ms slowest answer with the collector off; server_attack_bench).
- ``fixed_mmap_threshold()``: glibc's mmap threshold fixed at its initial 128 KiB for the rest of
  the process (nothing where the C library is not glibc). Why: glibc raises the threshold to the
  size of every mmapped block freed (up to 32 MiB), so after the first full-image body
  (megabytes) is freed every later one is carved from the heap, which then fragments and grows:
  on the 1M-record generated log the heap grew to 84 MiB (35 MiB of it free) and the peak RSS
  with it; fixed, it stays at 32 MiB (4 MiB free).
- ``trim_heap()``: the C heap's free pages handed back to the system (glibc's malloc_trim);
  False where it is missing. Cheap enough for a server thread after a big request.
  ``release_free_memory()``: a full collection, then trim_heap, then pyarrow's pool (if
  pyarrow is loaded): for the end of a replay, so what follows (report.png) does not stack
  on the memory the replay freed.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

__all__ = [
    "GC_THRESHOLDS", "MMAP_THRESHOLD", "fixed_mmap_threshold", "gc_paused", "rare_collections",
    "release_free_memory", "shared_gc_pause", "trim_heap", "worker_task",
]

T = TypeVar("T")
GC_THRESHOLDS = (500_000, 20, 100)  # gc.set_threshold where collections are rare (module rules)
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number (malloc.h)
MMAP_THRESHOLD = 128 << 10  # glibc's initial threshold, kept fixed (module rules)


class _Libc:
    """glibc's mallopt and malloc_trim, typed."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.mallopt = lib.mallopt
        self.mallopt.argtypes, self.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        self.malloc_trim = lib.malloc_trim
        self.malloc_trim.argtypes, self.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int


@functools.cache
def _libc() -> _Libc | None:
    """The C library when it is glibc-like (mallopt and malloc_trim), else None."""
    try:
        return _Libc(ctypes.CDLL(None))
    except (OSError, AttributeError):
        return None


@contextlib.contextmanager
def rare_collections() -> Iterator[None]:
    """GC_THRESHOLDS for the block (module rules)."""
    old = gc.get_threshold()
    if old[0] >= GC_THRESHOLDS[0]:
        yield
        return
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        if gc.get_threshold() == GC_THRESHOLDS:
            gc.set_threshold(*old)


def worker_task(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` as a reused worker's task body (module rules): rare thresholds from now on,
    what the last task froze back in the oldest generation, everything alive frozen at the end."""
    if gc.get_threshold()[0] < GC_THRESHOLDS[0]:
        gc.set_threshold(*GC_THRESHOLDS)
    gc.unfreeze()
    try:
        return fn(*args)
    finally:
        gc.freeze()


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The collector held off for the block (module rules); its previous state comes back."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _SharedPause:
    __slots__ = ("lock", "pausers", "was_enabled")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pausers = 0
        self.was_enabled = False

    def enter(self) -> None:
        with self.lock:
            if self.pausers == 0:
                self.was_enabled = gc.isenabled()
                gc.disable()
            self.pausers += 1

    def leave(self) -> None:
        with self.lock:
            self.pausers -= 1
            if self.pausers == 0:
                gc.freeze()  # what was built meanwhile is never traversed (module rules)
                if self.was_enabled:
                    gc.enable()


_SHARED = _SharedPause()


def shared_gc_pause(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` with the collector paused while any thread is in one (module rules)."""
    _SHARED.enter()
    try:
        return fn(*args)
    finally:
        _SHARED.leave()


def fixed_mmap_threshold() -> bool:
    """Keep glibc's mmap threshold at MMAP_THRESHOLD for the rest of the process (module rules);
    False where the C library has no mallopt or refuses it."""
    libc = _libc()
    return libc is not None and libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1


def trim_heap() -> bool:
    """Give the C heap's free pages back to the system; False where malloc_trim is missing."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def release_free_memory() -> bool:
    """Collect cycles, trim the C heap and pyarrow's pool (module rules); trim_heap's result."""
    gc.collect()
    trimmed = trim_heap()
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()
    return trimmed
