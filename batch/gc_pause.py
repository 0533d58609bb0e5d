"""gc_paused(): automatic garbage collection held off for a bulk batch.

Rules: the batch allocates hundreds of thousands of small frozen objects that hold no cycles;
CPython's cyclic collector still walks the whole heap as it grows (a full pass over a
200,000-partition context costs tenths of a second). Callers that accumulate and send a large
batch may hold collection off around it; the previous state is restored on exit, and nothing
is collected that reference counting would not free anyway.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
