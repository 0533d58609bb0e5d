"""BrokerPool: simulated brokers in a child process register, receive and converge; nothing is left behind."""

from __future__ import annotations

import asyncio
from typing import Any

from ctrlbatch.sim.broker_pool import BrokerPool
from ctrlbatch.sim.controller_logic import SimController, expected_view
from ctrlbatch.sim.controller_server import ControllerEndpoint
from ctrlbatch.sim.controller_state import ControllerConfig
from ctrlbatch.sim.membership import apply_event
from ctrlbatch.sim.metadata_cache import view_digest
from ctrlbatch.transport import AsyncControllerChannel


def test_pool_brokers_converge_and_stop() -> None:
    async def main() -> tuple[dict[int, str], str, BrokerPool]:
        loop = asyncio.get_running_loop()
        channel = AsyncControllerChannel(controller_id=1, metrics_log_interval_ms=None)
        controller = SimController(channel, controller_id=1)
        endpoint: ControllerEndpoint

        def on_events(events: list[Any]) -> None:
            for e in events:
                apply_event(controller, endpoint.state.registrations[e.broker_id], e)

        endpoint = ControllerEndpoint(ControllerConfig(cluster_id="p", migration_enabled=True), on_events=on_events)
        await endpoint.start()
        channel.startup()
        pool = await loop.run_in_executor(None, lambda: BrokerPool.start(3, (endpoint.host, endpoint.port), "p"))
        try:
            while len(controller.ctx.live_broker_ids) < 3:
                await asyncio.sleep(0.01)
            empty = await pool.digests()
            controller.create_topics({"t": [[0, 1], [1, 2], [2, 0]]})
            controller.failover()
            assert await channel.wait_until_idle(10)
            got = await pool.digests()
            assert got != empty
            return got, view_digest(expected_view(controller.ctx)), pool
        finally:
            await loop.run_in_executor(None, pool.stop)
            await channel.shutdown()
            await endpoint.stop()

    got, want, pool = asyncio.run(asyncio.wait_for(main(), 60))
    assert set(got) == {0, 1, 2} and set(got.values()) == {want}
    assert not pool.process.is_alive() and pool.process.exitcode == 0
