"""Heartbeats never starve while the simulation's loop is busy (registration_plane.py), fences are accounted."""

from __future__ import annotations

import asyncio
import time

import pytest

from ctrlbatch.sim.cluster import ClusterConfig, SimCluster

SESSION_MS = 1000
BUSY_S = 2.5  # more than two session time-outs


def _busy(seconds: float) -> None:
    """CPU-bound work on the caller's thread (holds the GIL but for the switch interval)."""
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += sum(range(1000))


@pytest.mark.parametrize("controller", ["zk", "kraft"])
def test_heartbeats_flow_while_the_loop_is_busy(controller: str) -> None:
    async def main() -> None:
        config = ClusterConfig(brokers=3, controller=controller, session_timeout_ms=SESSION_MS, heartbeat_interval=0.1)
        async with SimCluster(config) as c:
            c.driver.create_topics({"t": [[0, 1, 2], [1, 2, 0]]})
            assert await c.quiesce(10)
            regs = c.endpoint.state.registrations
            start_ms = c.endpoint.now_ms()
            _busy(BUSY_S)  # the loop of the brokers' listeners and of the controller is held
            # every broker was heard from during the busy period, in its last session time-out
            contacts = {b: regs[b].last_contact_ms for b in range(3)}
            assert all(ms >= start_ms + BUSY_S * 1000 - SESSION_MS for ms in contacts.values()), contacts
            await asyncio.sleep(0.3)
            assert c.unexpected_fences == []
            assert c.live_broker_ids() == [0, 1, 2]
            assert all(c.converged().values())

    asyncio.run(main())


def test_a_broker_whose_heartbeats_stop_is_an_unexpected_fence() -> None:
    async def main() -> None:
        config = ClusterConfig(brokers=3, session_timeout_ms=500, heartbeat_interval=0.05)
        async with SimCluster(config, controller="zk") as c:
            assert c.driver.name == "zk"
            await c._stop_lifecycle(2)  # silenced, but not by a step: nobody expects its fencing
            await c.wait_for(lambda: 2 not in c.live_broker_ids(), 10, "broker 2 fenced")
            assert c.unexpected_fences == [2]
            await c.crash(1)  # a step's crash is expected
            await c.wait_for(lambda: 1 not in c.live_broker_ids(), 10, "broker 1 fenced")
            assert c.unexpected_fences == [2]

    asyncio.run(main())


def test_an_endpoint_woken_late_by_its_own_loop_fences_nobody() -> None:
    """Endpoint and lifecycle on ONE loop (no plane), the loop held 3 session time-outs: the
    fencing round that wakes late reads the waiting heartbeats first (controller_server.py)."""
    from ctrlbatch.sim.broker_state import BrokerState
    from ctrlbatch.sim.controller_server import ControllerEndpoint
    from ctrlbatch.sim.controller_state import ControllerConfig, EventKind
    from ctrlbatch.sim.lifecycle import BrokerLifecycle

    async def main() -> None:
        ep = ControllerEndpoint(ControllerConfig(cluster_id="c1", migration_enabled=True, session_timeout_ms=300,
                                                 heartbeat_interval_ms=50))
        await ep.start()
        state = BrokerState(4, 100, migration_enabled=True)
        lc = BrokerLifecycle(lambda: state, ("127.0.0.1", 9999), (ep.host, ep.port), "c1", heartbeat_interval=0.05,
                             session_timeout=0.3, metadata_offset=lambda: ep.state.high_watermark)
        lc.start()
        try:
            await asyncio.wait_for(lc.running.wait(), 5)
            time.sleep(0.9)  # the loop is held: no heartbeat is read, the session looks expired
            await asyncio.sleep(0.8)
            assert ep.late_rounds >= 1
            assert EventKind.FENCED not in [e.kind for e in ep.events]
            await lc.stop()  # a broker that really stops is still fenced
            await asyncio.sleep(1.1)
            assert [e.kind for e in ep.events].count(EventKind.FENCED) == 1
        finally:
            await lc.stop()
            await ep.stop()

    asyncio.run(main())
