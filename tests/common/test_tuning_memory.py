"""common.tuning.fixed_mmap_threshold: after it, a large buffer still goes to mmap after a bigger one was
freed (glibc would otherwise raise its threshold and carve it from the heap, which fragments).
Each case runs in a fresh interpreter: in a long-lived one the heap may hold a free chunk big
enough to serve the buffer either way."""

from __future__ import annotations

import platform
import subprocess
import sys

from ctrlbatch.common.tuning import fixed_mmap_threshold

_PROBE = """
import ctypes, sys
from ctrlbatch.common.tuning import fixed_mmap_threshold, release_free_memory

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
if sys.argv[1] == "fixed":
    assert fixed_mmap_threshold()
big = bytearray(16 << 20)
del big  # glibc's dynamic threshold is now 16 MiB, unless fixed (its ceiling: 32 MiB)
before = libc.mallinfo2().hblkhd
kept = bytearray(4 << 20)
print(libc.mallinfo2().hblkhd - before)
release_free_memory()  # collects and trims at any time
"""


def _mmapped_growth(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True, timeout=120)
    return int(out.stdout.split()[-1])


def test_large_buffers_stay_in_mmap_after_a_bigger_one_is_freed() -> None:
    if platform.libc_ver()[0] != "glibc":  # the rules: another C library is left as it is, and says so
        assert fixed_mmap_threshold() is False
        return
    assert _mmapped_growth("fixed") >= 4 << 20
    assert _mmapped_growth("dynamic") < 4 << 20  # glibc's default: carved from the heap
