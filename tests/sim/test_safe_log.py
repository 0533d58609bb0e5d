"""safe_log: escaped user text, rate limits with summaries, the filter and the loop exception handler."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.sim.safe_log import RateLimiter, SafeFilter, describe, loop_exception_handler, quote, sanitize


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@settings(max_examples=300)
@given(st.text())
def test_escaped_text_is_one_printable_line(text: str) -> None:
    for out in (quote(text), sanitize(text)):
        assert "\n" not in out and "\r" not in out
        assert all(ch.isprintable() or ch == " " for ch in quote(text))
    assert len(quote(text)) <= 200 * 10 + 40  # 200 characters kept, an escape is at most 10 (\U0001f600)


def test_quote_shows_the_length_of_what_it_cuts() -> None:
    assert quote("a\nb") == "'a\\nb'"
    assert quote("x" * 1000, limit=5) == "'xxxxx'... (1000 characters)"


@settings(max_examples=200)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.floats(0, 3)), max_size=200), st.integers(1, 4))
def test_rate_limiter_lets_at_most_burst_per_window_and_counts_the_rest(events: list[tuple[str, float]], burst: int) -> None:
    clock = Clock()
    lim = RateLimiter(burst=burst, interval_s=10, clock=clock)
    admitted: dict[str, list[float]] = {}
    reported = 0
    for key, dt in events:
        clock.t += dt
        ok, suppressed = lim.admit(key)
        reported += suppressed
        if ok:
            admitted.setdefault(key, []).append(clock.t)
    for times in admitted.values():  # fixed windows: 2 * burst + 1 lines span more than one interval
        assert all(times[i] - times[i - 2 * burst] >= 10 for i in range(2 * burst, len(times)))
    pending = sum(n for _, n in lim.flush())
    assert reported + pending == lim.suppressed_total == len(events) - sum(map(len, admitted.values()))
    assert lim.flush() == []


def test_rate_limiter_window_and_summary() -> None:
    clock = Clock()
    lim = RateLimiter(burst=2, interval_s=10, clock=clock)
    assert [lim.admit("k") for _ in range(5)] == [(True, 0), (True, 0), (False, 0), (False, 0), (False, 0)]
    clock.t = 10
    assert lim.admit("k") == (True, 3)
    assert lim.admit("other") == (True, 0)


def test_rate_limiter_keys_are_bounded() -> None:
    lim = RateLimiter(burst=1, max_keys=3, clock=Clock())
    for i in range(100):
        lim.admit(f"key {i}")
    assert len(lim._windows) == 4  # three keys and the overflow key


def test_safe_filter_escapes_and_summarises(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    flt = SafeFilter(RateLimiter(burst=2, interval_s=10, clock=clock))
    log = logging.getLogger("ctrlbatch.test.safe")
    log.addFilter(flt)
    try:
        with caplog.at_level(logging.INFO, logger="ctrlbatch.test.safe"):
            for i in range(50):
                log.warning("broker %d host %s", i, "evil\nFORGED")
            clock.t = 11
            log.warning("broker %d host %s", 99, "evil\nFORGED")
            flt.flush(log)
    finally:
        log.removeFilter(flt)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[:2] == ["broker 0 host evil\\nFORGED", "broker 1 host evil\\nFORGED"]
    assert lines[2].startswith("broker 99 host evil\\nFORGED [48 similar messages suppressed")
    assert len(lines) == 3 and all("\n" not in x for x in lines)


def test_describe_is_one_line_with_the_place() -> None:
    try:
        raise KeyError("a\nb")
    except KeyError as e:
        text = describe(e)
    assert text.startswith("KeyError: 'a\\nb' at test_safe_log.py:") and "\n" not in text


def test_loop_exception_handler_reports_the_first_and_summarises_repeats(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(loop_exception_handler(RateLimiter(burst=1, interval_s=0.2)))
        for _ in range(1000):
            loop.call_exception_handler({"message": "socket.accept() out of system resource",
                                         "exception": OSError(24, "Too many open files")})
        await asyncio.sleep(0.25)
        loop.call_exception_handler({"message": "socket.accept() out of system resource",
                                     "exception": OSError(24, "Too many open files")})

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(main())
    lines: list[Any] = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    assert len(lines) == 2 and "999 similar messages suppressed" in lines[1]
