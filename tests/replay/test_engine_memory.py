"""engine.fixed_mmap_threshold: after it, large buffers still go to mmap after a bigger one was
freed (glibc would otherwise raise its threshold and carve them from the heap, which fragments)."""

from __future__ import annotations

import ctypes
import platform

import pytest

from ctrlbatch.replay.engine import fixed_mmap_threshold, release_free_memory


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mmapped_bytes() -> int:
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _MallInfo2
    return int(libc.mallinfo2().hblkhd)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's mmap threshold is glibc's")
def test_large_buffers_stay_in_mmap_after_a_bigger_one_is_freed() -> None:
    assert fixed_mmap_threshold()
    big = bytearray(8 << 20)
    del big  # glibc's dynamic threshold would now be 8 MiB
    before = _mmapped_bytes()
    kept = bytearray(1 << 20)
    assert _mmapped_bytes() - before >= 1 << 20
    del kept
    release_free_memory()  # collects, trims; callable at any time
    assert _mmapped_bytes() < before + (1 << 20)
