"""Progress on long work, on standard error.

Rules: never on standard output (that is for results and machine-readable lines); on a
terminal one line rewritten in place, at most 10 times a second; elsewhere (CI, a pipe) a plain
line at most every ``interval`` seconds, so logs stay short; silent when ``enabled`` is False.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``with Progress("decoding", total=n, unit="batches") as p: p.advance(k)``."""

    def __init__(
        self,
        label: str,
        total: int | None = None,
        unit: str = "",
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        interval: float = 5.0,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0
        self.enabled = enabled
        self._stream = stream if stream is not None else sys.stderr
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._interval = 0.1 if self._tty else interval
        self._start = time.monotonic()
        self._last = 0.0

    def __repr__(self) -> str:
        return f"Progress({self.label!r}, {self.done}/{self.total if self.total is not None else '?'})"

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and now - self._last >= self._interval:
            self._last = now
            self._write(final=False)

    def update(self, done: int, total: int | None = None) -> None:
        """Set the absolute position (for work that reports its own counts, e.g. Spark stages)."""
        if total is not None:
            self.total = total
        self.advance(done - self.done)

    def message(self) -> str:
        elapsed = time.monotonic() - self._start
        of = f"/{self.total:,}" if self.total is not None else ""
        pct = f" {100 * self.done / self.total:3.0f}%" if self.total else ""
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.label}: {self.done:,}{of}{unit}{pct} ({elapsed:.1f} s)"

    def _write(self, final: bool) -> None:
        if self._tty:
            self._stream.write("\r\x1b[K" + self.message() + ("\n" if final else ""))
        else:
            self._stream.write(self.message() + "\n")
        self._stream.flush()

    def close(self) -> None:
        if self.enabled and (self._tty or self.done):
            self._write(final=True)
        self.enabled = False
