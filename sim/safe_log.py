"""Log lines that cannot flood and cannot be forged: rate limits, summaries of repeats, escaped text.

Rules:
- ``quote(text)`` is how user-supplied text (a listener host, a cluster id, a rack) enters a log
  line: its repr, so a newline or any other non-printable character shows as an escape and cannot
  start a new line; more than ``limit`` characters are cut, and the line says how long it was.
- ``RateLimiter``: per key (what kind of line), at most ``burst`` lines per ``interval_s`` seconds;
  the rest are counted, and the next line let through for that key, or ``flush()``, says how many
  were suppressed. A key is the start of the line with its digits masked, so "broker 5" and
  "broker 7" count as one kind. Keys are bounded (``max_keys``): beyond them every line counts
  under one overflow key, so an attacker cannot grow the table.
- ``SafeFilter`` is a logging.Filter for a handler: it applies a RateLimiter to every record
  and replaces control characters in the formatted message by escapes (tracebacks, which are
  formatted separately, keep their lines). ``install(quiet)`` puts it on the root logger's
  handlers; ``quiet`` shows errors only. ``safe_logging_installed()`` tells whether it was (a server
  then leaves the rate limiting to it, so that no line is counted twice).
- ``loop_exception_handler`` is an asyncio loop exception handler with the same limits: the
  first failure of a kind goes to the loop's default handler with its traceback, repeats are
  counted and summarised in one line (accept() failing for lack of file descriptors repeats
  thousands of times a second).
- The clock is a parameter (``time.monotonic`` by default); nothing here keeps a reference to
  records or exceptions.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from typing import Any

__all__ = ["RateLimiter", "SafeFilter", "describe", "install", "loop_exception_handler", "quote", "safe_logging_installed",
           "sanitize"]

_log = logging.getLogger("ctrlbatch.sim.log")
_DIGITS = re.compile(r"\d+")
_OVERFLOW_KEY = "(other kinds of message)"
KIND_PREFIX = 60
"""A formatted line's kind is its first KIND_PREFIX characters, digits masked: long enough to tell
"broker 5 joined" from "broker 5 fenced", short enough that text a broker sent further on (a
host) does not make every line a kind of its own."""
# Control characters (C0, DEL, C1) and the Unicode line and paragraph separators.
_CONTROL = {c: repr(chr(c))[1:-1] for c in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029)}


def quote(text: object, limit: int = 200) -> str:
    """User-supplied text for a log line: escaped (repr) and at most ``limit`` characters of it."""
    s = text if isinstance(text, str) else str(text)
    if len(s) <= limit:
        return repr(s)
    return f"{s[:limit]!r}... ({len(s)} characters)"


def sanitize(message: str) -> str:
    """message with every control character (newline included) written as an escape."""
    return message.translate(_CONTROL)


def kind_of(template: object) -> str:
    """The rate limiter's key for a message template: digits masked, at most 120 characters."""
    return _DIGITS.sub("#", str(template))[:120]


class RateLimiter:
    """At most ``burst`` lines per ``interval_s`` per key; the rest are counted (see the module rules)."""

    def __init__(self, burst: int = 5, interval_s: float = 10.0, *, max_keys: int = 1000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst}")
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s!r}")
        if max_keys < 1:
            raise ValueError(f"max_keys must be >= 1, got {max_keys}")
        self.burst = burst
        self.interval_s = interval_s
        self.max_keys = max_keys
        self.clock = clock
        self._windows: dict[str, tuple[float, int, int]] = {}
        """key -> (window start, lines let through in it, lines suppressed since the last summary)"""
        self.suppressed_total = 0

    def __repr__(self) -> str:
        return f"RateLimiter({self.burst} per {self.interval_s} s, {len(self._windows)} kinds)"

    def admit(self, key: str) -> tuple[bool, int]:
        """(let this line through?, how many lines of this key were suppressed before it)."""
        if key not in self._windows and len(self._windows) >= self.max_keys:
            key = _OVERFLOW_KEY
        now = self.clock()
        start, passed, suppressed = self._windows.get(key, (now, 0, 0))
        if now - start >= self.interval_s:
            start, passed = now, 0
        if passed < self.burst:
            self._windows[key] = (start, passed + 1, 0)
            return True, suppressed
        self._windows[key] = (start, passed, suppressed + 1)
        self.suppressed_total += 1
        return False, 0

    def flush(self) -> list[tuple[str, int]]:
        """(key, suppressed count) of every key with lines suppressed since its last summary; resets them."""
        out = [(k, s) for k, (_, _, s) in self._windows.items() if s]
        for k, _ in out:
            start, passed, _ = self._windows[k]
            self._windows[k] = (start, passed, 0)
        return out


def _summary(count: int, interval_s: float) -> str:
    return f" [{count} similar message{'s' if count != 1 else ''} suppressed (at most a few per {interval_s:g} s)]"


class SafeFilter(logging.Filter):
    """Rate-limits records and escapes control characters in their messages (see the module rules)."""

    def __init__(self, limiter: RateLimiter | None = None) -> None:
        super().__init__()
        self.limiter = limiter if limiter is not None else RateLimiter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: the template and its args, as logging would fail to
            message = f"{record.msg!r} % {record.args!r}"
        admitted, suppressed = self.limiter.admit(f"{record.name}|{record.levelno}|{kind_of(message)[:KIND_PREFIX]}")
        if not admitted:
            return False
        record.msg = sanitize(message) + (_summary(suppressed, self.limiter.interval_s) if suppressed else "")
        record.args = None
        return True

    def flush(self, logger: logging.Logger = _log) -> None:
        """Log one line per kind whose repeats were suppressed since they were last summarised."""
        for key, count in self.limiter.flush():
            name, _level, kind = key.split("|", 2) if key.count("|") >= 2 else ("", "", key)
            logger.warning("%s", sanitize(f"{name}: {kind}...{_summary(count, self.limiter.interval_s)}"))


def install(quiet: bool = False, limiter: RateLimiter | None = None) -> SafeFilter:
    """Put one SafeFilter on every handler of the root logger; quiet: errors only."""
    root = logging.getLogger()
    if quiet:
        root.setLevel(logging.ERROR)
    flt = SafeFilter(limiter)
    for handler in root.handlers:
        if quiet:  # also for a logger given a level of its own
            handler.setLevel(logging.ERROR)
        for old in [f for f in handler.filters if isinstance(f, SafeFilter)]:
            handler.removeFilter(old)
        handler.addFilter(flt)
    return flt


def safe_logging_installed() -> bool:
    """Does a SafeFilter guard every handler of the root logger (``install`` was called)?"""
    handlers = logging.getLogger().handlers
    return bool(handlers) and all(any(isinstance(f, SafeFilter) for f in h.filters) for h in handlers)


def loop_exception_handler(limiter: RateLimiter | None = None) -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """An asyncio exception handler: the first of a kind in full, repeats counted and summarised."""
    lim = limiter if limiter is not None else RateLimiter(burst=1, interval_s=10.0)

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, ValueError) and "_start_serving" in repr(context.get("handle")):
            # asyncio retries accept() 1 s after running out of descriptors; if the server closed
            # meanwhile that retry fails on the closed socket (fd -1): nothing to report.
            return
        key = kind_of(f"{context.get('message', '')}|{type(exc).__name__ if exc is not None else ''}|"
                      f"{getattr(exc, 'errno', '')}")
        admitted, suppressed = lim.admit(key)
        if not admitted:
            return
        if suppressed:
            context = {**context, "message": f"{context.get('message', '')}{_summary(suppressed, lim.interval_s)}"}
        loop.default_exception_handler(context)

    return handle


def describe(e: BaseException) -> str:
    """An exception in one escaped line: its type, message and where it was raised (file:line)."""
    tb = e.__traceback__
    where = ""
    while tb is not None:
        where = f" at {tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno}"
        tb = tb.tb_next
    text = str(e)
    if len(text) > 300:
        text = f"{text[:300]}... ({len(text)} characters)"
    return sanitize(f"{type(e).__name__}: {text}{where}")
