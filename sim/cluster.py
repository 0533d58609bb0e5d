"""SimCluster: a controller endpoint, N simulated brokers and the network channel on one asyncio loop.

Rules:
- Everything binds to 127.0.0.1. Brokers are ZooKeeper-mode brokers with migration enabled that
  register with the endpoint by themselves (lifecycle.py); the controller is a KRaft controller
  driving them (kraft_controller requests, the registration epoch as broker epoch).
- Registration events drive the SimController through membership.apply_event; a controller
  that renounces (after an UNKNOWN_SERVER_ERROR) starts a new term with SimController.failover().
- The harness records, per broker, what the controller handed to the channel (the body bytes, in
  order) and when the broker was removed, so invariants.py can check delivery, ordering and that
  nothing reached a removed broker. ``converged()`` compares every live broker's metadata cache
  with the controller's view.
- Every wait is bounded; ``stop()`` leaves no task, connection or listener behind.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import attrs

from ctrlbatch.batch import OutboundRequest
from ctrlbatch.batch.transport import ResponseCallback
from ctrlbatch.context import Broker, MetadataVersion
from ctrlbatch.transport import AsyncControllerChannel

from .broker_server import BrokerFaults, Received, SimulatedBroker
from .controller_logic import SimController, expected_view
from .controller_server import ControllerEndpoint
from .controller_state import BrokerEvent, ControllerConfig
from .lifecycle import BrokerLifecycle
from .membership import apply_event
from .shared_decode import SharedDecoder

__all__ = ["ClusterConfig", "Period", "SimCluster"]

_log = logging.getLogger("ctrlbatch.sim.cluster")


@attrs.frozen
class ClusterConfig:
    brokers: int = 3
    cluster_id: str = "sim-cluster"
    metadata_version: MetadataVersion = MetadataVersion.IBP_3_9_IV0
    session_timeout_ms: int = 9000
    heartbeat_interval: float = 0.5
    request_timeout_ms: int = 30000
    backoff_ms: int = 100
    record: bool = True
    controller_id: int = 3000
    share_decoding: bool = True
    """Brokers decode each distinct body once (shared_decode.py): N brokers in one process."""

    def __attrs_post_init__(self) -> None:
        if self.brokers < 1:
            raise ValueError(f"brokers must be >= 1, got {self.brokers}")


@attrs.define
class Period:
    """One stay of a broker in the channel: what was sent to it, and its removal boundary."""

    sent: list[tuple[int, bytes]] = attrs.field(factory=list)
    """(api key, body bytes) in send order."""
    removed_at_connection: int | None = None
    """The broker's connection count when it was removed (None while still in the channel)."""


class _RecordingChannel:
    """The real channel, with every send recorded per broker (the invariants' ground truth)."""

    def __init__(self, inner: AsyncControllerChannel, cluster: SimCluster) -> None:
        self.inner = inner
        self.cluster = cluster

    def send(self, broker_id: int, request: OutboundRequest, callback: ResponseCallback | None) -> None:
        if self.cluster.config.record and broker_id in self.inner.broker_ids:
            self.cluster.periods[broker_id][-1].sent.append((request.api_key, request.encode_body()))
        if callback is not None:
            callback = self._timed(broker_id, callback)
        self.inner.send(broker_id, request, callback)

    def _timed(self, broker_id: int, callback: ResponseCallback) -> ResponseCallback:
        """The callback, recording the time from hand-off to response (the controller's latency)."""
        start = time.perf_counter()
        latencies = self.cluster.round_trips.setdefault(broker_id, [])

        def timed(response: Any) -> None:
            latencies.append(time.perf_counter() - start)
            callback(response)

        return timed

    def add_broker(self, broker: Broker) -> None:
        if broker.id not in self.inner.broker_ids:
            self.cluster.periods.setdefault(broker.id, []).append(Period())
        self.inner.add_broker(broker)

    def remove_broker(self, broker_id: int) -> None:
        self.inner.remove_broker(broker_id)
        b = self.cluster.brokers.get(broker_id)
        self.cluster.periods[broker_id][-1].removed_at_connection = b.server.stats.connections if b is not None else 0


class SimCluster:
    """``async with SimCluster(ClusterConfig(brokers=5)) as c: c.controller.create_topics(...)``."""

    def __init__(self, config: ClusterConfig, *, faults: dict[int, BrokerFaults] | None = None) -> None:
        self.config = config
        self.faults = faults or {}
        self.endpoint = ControllerEndpoint(
            ControllerConfig(cluster_id=config.cluster_id, metadata_version=config.metadata_version, migration_enabled=True,
                             session_timeout_ms=config.session_timeout_ms),
            on_events=self._on_events, leads_partitions=self._leads_partitions,
            # re-elected after renouncing: the new term syncs the brokers, as after a failover
            on_renounce=lambda _epoch: self.controller.failover(),
        )
        self.channel = AsyncControllerChannel(
            controller_id=config.controller_id, request_timeout_ms=config.request_timeout_ms, backoff_ms=config.backoff_ms,
            metrics_log_interval_ms=None,
        )
        self.recording = _RecordingChannel(self.channel, self)
        self.controller = SimController(self.recording, controller_id=config.controller_id,
                                        metadata_version=config.metadata_version)
        self.brokers: dict[int, SimulatedBroker] = {}
        self.lifecycles: dict[int, BrokerLifecycle] = {}
        self.periods: dict[int, list[Period]] = {}
        self.round_trips: dict[int, list[float]] = {}
        """Per broker: seconds from the hand-off to the channel to the response callback."""
        self.violations: list[str] = []
        self.event_log: list[BrokerEvent] = []
        self.on_event: Callable[[BrokerEvent], None] | None = None

    def __repr__(self) -> str:
        return f"SimCluster({len(self.brokers)} brokers, {self.controller!r})"

    async def __aenter__(self) -> SimCluster:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ lifecycle

    async def start(self, timeout: float = 30.0) -> None:
        await self.endpoint.start()
        self.channel.startup()
        decoder = SharedDecoder() if self.config.share_decoding else None
        for b in range(self.config.brokers):
            broker = SimulatedBroker(b, 1000 + b, migration_enabled=True, faults=self.faults.get(b), record=self.config.record,
                                     on_request=self._on_request, decoder=decoder)
            self.brokers[b] = broker
            await broker.start()
        for b in self.brokers:
            self._start_lifecycle(b)
        await self.wait_for(lambda: all(lc.running.is_set() for lc in self.lifecycles.values()), timeout, "every broker running")

    def _start_lifecycle(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        lc = BrokerLifecycle(
            lambda: broker.state, (broker.host, broker.port), (self.endpoint.host, self.endpoint.port), self.config.cluster_id,
            metadata_version=self.config.metadata_version, heartbeat_interval=self.config.heartbeat_interval,
            session_timeout=self.config.session_timeout_ms / 1000, metadata_offset=lambda: self.endpoint.state.high_watermark,
        )
        self.lifecycles[broker_id] = lc
        lc.start()

    async def stop(self) -> None:
        for lc in self.lifecycles.values():
            await lc.stop()
        await self.channel.shutdown()
        for b in self.brokers.values():
            await b.stop()
        await self.endpoint.stop()

    async def wait_for(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
            await asyncio.sleep(0.005)

    async def quiesce(self, timeout: float = 30.0) -> bool:
        """Wait until the channel has nothing queued or in flight and no deletion is pending."""
        deadline = time.monotonic() + timeout
        while True:
            idle = await self.channel.wait_until_idle(max(0.0, deadline - time.monotonic()))
            if idle and self.controller.deletions_pending == 0:
                return True
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)

    # ------------------------------------------------------------------ faults and steps

    async def crash(self, broker_id: int) -> None:
        """The broker process dies: no more heartbeats, listener and connections gone."""
        await self.lifecycles[broker_id].stop()
        await self.brokers[broker_id].kill()

    async def restart(self, broker_id: int) -> None:
        """The broker comes back (fresh state, same port) and registers a new incarnation."""
        await self.brokers[broker_id].restart()
        self._start_lifecycle(broker_id)

    async def controlled_shutdown(self, broker_id: int, timeout: float = 30.0) -> None:
        """The broker asks to shut down through its heartbeats and stops once told to."""
        lc = self.lifecycles[broker_id]
        lc.begin_controlled_shutdown()
        await asyncio.wait_for(lc.shutdown_now.wait(), timeout)
        await lc.stop()
        await self.brokers[broker_id].kill()

    # ------------------------------------------------------------------ events

    def _leads_partitions(self, broker_id: int) -> bool:
        ctx = self.controller.ctx
        return any(info.leader_and_isr.leader == broker_id for info in ctx.partitions_leadership_info.values())

    def _on_events(self, events: list[BrokerEvent]) -> None:
        for e in events:
            self.event_log.append(e)
            apply_event(self.controller, self.endpoint.state.registrations[e.broker_id], e)
            if self.on_event is not None:
                self.on_event(e)

    def _on_request(self, broker: SimulatedBroker, rec: Received) -> None:
        periods = self.periods.get(broker.broker_id)
        if not periods or periods[-1].removed_at_connection is None:
            return
        if rec.connection > periods[-1].removed_at_connection:
            self.violations.append(f"broker {broker.broker_id} got request #{rec.ordinal} on a new connection after its removal")

    # ------------------------------------------------------------------ results

    def live_broker_ids(self) -> list[int]:
        return sorted(self.controller.ctx.live_or_shutting_down_broker_ids)

    def converged(self) -> dict[int, bool]:
        """Per live broker: does its metadata cache equal the controller's view?"""
        want = expected_view(self.controller.ctx)
        memo: dict[int, Any] = {}  # decoded states shared by brokers are converted once
        return {b: self.brokers[b].state.cache.matches(want, memo) for b in self.live_broker_ids()}

    def summary(self) -> list[dict[str, Any]]:
        """Per broker: requests by api key, bytes in and out, latencies (s: the controller's, from
        hand-off to response, median and max; the broker's service time, median), converged."""
        conv = self.converged()
        out = []
        for b, broker in sorted(self.brokers.items()):
            st = broker.server.stats
            service = sorted(st.latencies)
            rtt = sorted(self.round_trips.get(b, ()))
            out.append({
                "broker": b, "requests": dict(sorted(st.requests.items())), "bytes_in": st.bytes_in, "bytes_out": st.bytes_out,
                "service_median": service[len(service) // 2] if service else None,
                "latency_median": rtt[len(rtt) // 2] if rtt else None, "latency_max": rtt[-1] if rtt else None,
                "connections": st.connections, "live": b in conv, "converged": conv.get(b),
            })
        return out
