"""ServerStats stays bounded however long a server runs: latencies are a window of the latest."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.sim.server import LATENCY_WINDOW, ServerStats


@given(st.integers(min_value=0, max_value=3 * LATENCY_WINDOW))
def test_latencies_keep_the_latest_window(n: int) -> None:
    stats = ServerStats()
    stats.latencies.extend(float(i) for i in range(n))
    assert len(stats.latencies) == min(n, LATENCY_WINDOW)
    if n:
        assert stats.latencies[-1] == float(n - 1)  # the newest is kept
        assert stats.latencies[0] == float(max(0, n - LATENCY_WINDOW))  # the oldest kept is the window's start


def test_each_server_has_its_own_window() -> None:
    a, b = ServerStats(), ServerStats()
    a.latencies.append(1.0)
    assert list(b.latencies) == []
