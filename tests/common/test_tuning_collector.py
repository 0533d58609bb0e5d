"""The collector settings of a Spark task (common.tuning.worker_task): the rare thresholds stay for the
worker's life; a task ends with everything alive frozen, so that the full collection PySpark's
daemon runs after each task has nothing to walk, while reference counting still frees what the
task left; the next task unfreezes, so a cycle left behind is still collected. Each case runs in
a fresh interpreter: freezing is process-wide."""

from __future__ import annotations

import subprocess
import sys

_PROBE = r"""
import gc, weakref
from ctrlbatch.common.tuning import GC_THRESHOLDS, rare_collections, worker_task

class Node:  # tracked by the collector, weakly referenceable
    __slots__ = ("value", "peer", "__weakref__")
    def __init__(self, value): self.value, self.peer = value, None

def task(n):  # what a task leaves alive (memos, the unit's image), and a cycle of garbage
    a, b = Node(0), Node(1)
    a.peer, b.peer = b, a
    cycle.append(weakref.ref(a))
    return [Node((i, [i])) for i in range(n)]

gc.set_threshold(700, 10, 10)
cycle = []
kept = worker_task(task, 200_000)
assert gc.get_threshold() == GC_THRESHOLDS, gc.get_threshold()
with rare_collections():
    pass
assert gc.get_threshold() == GC_THRESHOLDS, "rare_collections must not restore the defaults over a worker's setting"
frozen, walked = gc.get_freeze_count(), len(gc.get_objects())  # what the daemon's gc.collect() walks now
gone = weakref.ref(kept[7])
kept[7] = None
assert gone() is None, "a frozen object whose last reference went must be freed by reference counting"
gc.collect()
assert cycle[0]() is not None  # frozen: out of the collector's reach while no task runs
worker_task(gc.collect)  # a full collection inside the next task (after its unfreeze) finds it
assert cycle[0]() is None, "a cycle a task left must still be collected by a later task's collection"
try:
    worker_task(int, "x")
except ValueError:
    assert gc.get_freeze_count() > 0  # frozen when the task raises too
print(frozen, walked)
"""


def test_a_worker_task_freezes_what_it_leaves_and_reference_counting_still_frees() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    frozen, walked = map(int, out.stdout.split())
    assert frozen >= 400_000 and walked < 10_000  # the generations hold almost nothing after a task
