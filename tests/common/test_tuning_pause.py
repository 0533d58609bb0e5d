"""common.tuning's collector pauses: gc_paused restores the state it found; shared_gc_pause keeps
the collector off while any thread is inside one, and the last one out freezes what was built
and re-enables it (only if it was enabled). Each case runs in a fresh interpreter: freezing and
the collector's state are process-wide."""

from __future__ import annotations

import subprocess
import sys

_PROBE = r"""
import gc, threading
from ctrlbatch.common.tuning import gc_paused, shared_gc_pause, trim_heap

gc.enable()
with gc_paused():
    assert not gc.isenabled()
assert gc.isenabled()
gc.disable()
with gc_paused():
    pass
assert not gc.isenabled(), "gc_paused must not enable a collector it found disabled"
gc.enable()
try:
    with gc_paused():
        raise KeyError("x")
except KeyError:
    assert gc.isenabled()

inside, release = threading.Barrier(3), threading.Event()
seen = []
def job():
    inside.wait(timeout=30)
    release.wait(timeout=30)
    seen.append(gc.isenabled())
    return [object() for _ in range(1000)]
threads = [threading.Thread(target=shared_gc_pause, args=(job,)) for _ in range(2)]
for t in threads:
    t.start()
inside.wait(timeout=30)
assert not gc.isenabled(), "paused while any thread is inside"
frozen_before = gc.get_freeze_count()
release.set()
for t in threads:
    t.join(timeout=30)
assert seen == [False, False] and gc.isenabled() and gc.get_freeze_count() > frozen_before
gc.disable()
shared_gc_pause(int, "1")
assert not gc.isenabled(), "the last one out re-enables only a collector that was enabled"
assert isinstance(trim_heap(), bool)
print("ok")
"""


def test_the_pauses_restore_the_collector_and_freeze_what_was_built() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok"]
