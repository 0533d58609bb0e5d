"""Request handler threads and the state-change lock: big requests are decoded and handled off the loop.

Rules (Kafka's KafkaRequestHandler threads and ReplicaManager's replicaStateChangeLock):
- ``run_in_handler_thread(fn, *args)`` runs fn on one of a few daemon threads shared by the process
  and awaits its result on the loop. Daemon threads, so that a signal ends the process at once even
  while a 50 MB request is being decoded (a thread cannot be interrupted; its result is dropped).
- ``StateChangeLock.run(prepare, apply, offload=...)`` runs ``apply(prepare())`` with apply under
  one threading.Lock per broker: on the loop's thread when the change is small and the lock is free
  (the fast path: no thread switch), else on a handler thread, which waits for the lock there,
  never on the loop. ``prepare`` (what depends on the request alone) runs before taking the lock.
  So changes never interleave, and each connection's changes keep its request order (a connection
  hands over its next request only after the previous one is answered).
- The loop keeps answering other connections while a handler thread works: the GIL is handed to
  the loop's thread at the latest after ``sys.getswitchinterval()`` (5 ms by default) each time it
  wakes up; benchmarks/server_attack_bench.py measures the resulting latency.
- The cyclic garbage collector is paused while handler threads work (``run_in_handler_thread``
  with ``pause_gc``), and what they built is then frozen (gc.freeze): a collection holds the GIL
  from start to end, and over the millions of objects of a 50 MB request it stalled the loop for
  2.0 s (0.74 s at 20 MB; 52 ms slowest answer with the collector off; server_attack_bench). Those
  objects are still freed by reference counting when dropped (decoded requests hold no cycles);
  only cycles that are already garbage when frozen are never reclaimed.
- A handler thread drops each job (its function, arguments and result) as soon as it is handed
  over, so a finished 100 MB request is not kept alive until the next job comes.
- ``release_free_memory()`` gives the C heap's free pages back to the system (glibc's
  malloc_trim; nothing where it is missing): freed request objects otherwise stay in the
  process's resident memory. The server calls it on a handler thread after big requests.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import ctypes.util
import gc
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["HANDLER_THREADS", "StateChangeLock", "release_free_memory", "run_in_handler_thread"]

T = TypeVar("T")
P = TypeVar("P")
HANDLER_THREADS = 4

_work: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[..., Any], tuple[Any, ...]]] = queue.SimpleQueue()
_threads: list[threading.Thread] = []
_start_lock = threading.Lock()
_gc_lock = threading.Lock()
_gc_pausers = 0
_gc_was_enabled = False


def _pause_gc() -> None:
    global _gc_pausers, _gc_was_enabled
    with _gc_lock:
        if _gc_pausers == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pausers += 1


def _resume_gc() -> None:
    global _gc_pausers
    with _gc_lock:
        _gc_pausers -= 1
        if _gc_pausers == 0:
            gc.freeze()  # what was built meanwhile is never traversed (see the module rules)
            if _gc_was_enabled:
                gc.enable()


def _gc_paused(fn: Callable[..., T], *args: Any) -> T:
    _pause_gc()
    try:
        return fn(*args)
    finally:
        _resume_gc()


def _worker() -> None:
    while True:
        future, fn, args = _work.get()
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(fn(*args))
            except BaseException as e:  # handed to the awaiting coroutine
                future.set_exception(e)
                del e
        del future, fn, args  # the job is dropped now, not when the next one comes (module rules)


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def release_free_memory() -> bool:
    """Give the C heap's free memory back to the system; False where malloc_trim is missing."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


def _ensure_threads() -> None:
    if len(_threads) >= HANDLER_THREADS:
        return
    with _start_lock:
        while len(_threads) < HANDLER_THREADS:
            t = threading.Thread(target=_worker, name=f"sim-request-handler-{len(_threads)}", daemon=True)
            t.start()
            _threads.append(t)


async def run_in_handler_thread(fn: Callable[..., T], *args: Any, pause_gc: bool = True) -> T:
    """fn(*args) on a handler thread (with the collector paused, by default); its exception is raised here."""
    _ensure_threads()
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    _work.put((future, _gc_paused, (fn, *args)) if pause_gc else (future, fn, args))
    return await asyncio.wrap_future(future)


class StateChangeLock:
    """One broker's replicaStateChangeLock (see the module rules)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.offloaded = 0  # changes applied on a handler thread

    def __repr__(self) -> str:
        return f"StateChangeLock({'held' if self._lock.locked() else 'free'}, {self.offloaded} offloaded)"

    def _prepared_and_locked(self, prepare: Callable[[], P], apply: Callable[[P], T]) -> T:
        prepared = prepare()
        with self._lock:
            return apply(prepared)

    def __enter__(self) -> StateChangeLock:
        """Blocking acquisition, for readers off the hot path (a digest of the state, say)."""
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    async def run(self, prepare: Callable[[], P], apply: Callable[[P], T], *, offload: bool) -> T:
        if not offload and self._lock.acquire(blocking=False):
            try:
                return apply(prepare())
            finally:
                self._lock.release()
        self.offloaded += 1
        return await run_in_handler_thread(self._prepared_and_locked, prepare, apply)
