"""SimCluster: a controller, N simulated brokers and the network channel, with heartbeats on a thread of their own.

Rules:
- Everything binds to 127.0.0.1. Brokers are ZooKeeper-mode brokers with migration enabled that
  register and heartbeat with the controller endpoint by themselves (lifecycle.py). The endpoint
  and every broker's heartbeats run on the RegistrationPlane's thread (registration_plane.py);
  the brokers' listeners, the channel and the controller run on the caller's loop, big requests
  on handler threads. So no controller step or broker's work holds a heartbeat back.
- ``controller="zk"``: Kafka's ZooKeeper-mode KafkaController (zk_driver.py), membership from
  the in-memory store's broker registrations, which expire when the endpoint fences a broker.
  ``controller="kraft"``: Kafka 3.9's KRaft controller in migration mode (kraft_driver.py): every
  event becomes the records a KRaft controller writes (kraft_decisions.py), applied as one delta
  to a KRaft image and handed to the replay's MigrationPropagator port, whose requests the brokers
  receive; a controller that renounces after an UNKNOWN_SERVER_ERROR starts a new term, which
  syncs every broker from the image.
- Memory: the brokers share one MemoryPool (``broker_memory_bytes``), as processes on one machine
  share its memory; a frame that does not fit waits in its socket (memory_pool.py).
- Fencing is accounted: a broker fenced that no scenario step crashed or shut down is listed in
  ``unexpected_fences``; a run with any, or with no live broker, has not converged.
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
from .controller_logic import expected_view
from .controller_server import ControllerEndpoint
from .controller_state import BrokerEvent, ControllerConfig, EventKind, Registration
from .kraft_driver import KraftDriver
from .lifecycle import BrokerLifecycle
from .memory_pool import MemoryPool
from .metadata_cache import MatchMemo
from .registration_plane import RegistrationPlane
from .shared_decode import SharedDecoder
from .zk_driver import ZkDriver, ZkOptions

__all__ = ["CONTROLLERS", "ClusterConfig", "Period", "SimCluster"]

CONTROLLERS = ("zk", "kraft")

_log = logging.getLogger("ctrlbatch.sim.cluster")


@attrs.frozen
class ClusterConfig:
    brokers: int = 3
    cluster_id: str = "sim-cluster"
    metadata_version: MetadataVersion = MetadataVersion.IBP_3_9_IV0
    session_timeout_ms: int = 9000
    """broker.session.timeout.ms (KRaft) / zookeeper.session.timeout.ms (18 s in Kafka 3.9's ZooKeeper
    mode; 9 s here for both)."""
    heartbeat_interval: float = 2.0
    """broker.heartbeat.interval.ms, in seconds."""
    request_timeout_ms: int = 30000
    backoff_ms: int = 100
    record: bool = True
    controller_id: int = 3000
    share_decoding: bool = True
    """Brokers decode each distinct body once (shared_decode.py): N brokers in one process."""
    broker_memory_bytes: int = 256 * 1024 * 1024
    """Request bytes all simulated brokers of the process hold at once (one MemoryPool, the server's
    queued.max.request.bytes, shared: they share one machine's memory). A broker whose frame does
    not fit leaves it in its socket until memory comes back."""
    controller: str = "kraft"
    """"zk" (Kafka's KafkaController over the in-memory store) or "kraft" (see the module rules)."""
    zk: ZkOptions = attrs.field(factory=ZkOptions)

    def __attrs_post_init__(self) -> None:
        if self.brokers < 1:
            raise ValueError(f"brokers must be >= 1, got {self.brokers}")
        if self.broker_memory_bytes < 1:
            raise ValueError(f"broker_memory_bytes must be >= 1, got {self.broker_memory_bytes}")
        if self.controller not in CONTROLLERS:
            raise ValueError(f"controller must be one of {', '.join(CONTROLLERS)}, got {self.controller!r}")


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
    """``async with SimCluster(ClusterConfig(brokers=5, controller="zk")) as c: c.driver.create_topics(...)``."""

    def __init__(self, config: ClusterConfig, *, faults: dict[int, BrokerFaults] | None = None,
                 controller: str | None = None) -> None:
        if controller is not None:  # SimCluster(config, controller="zk") is ClusterConfig(controller="zk")
            config = attrs.evolve(config, controller=controller)
        self.config = config
        self.faults = faults or {}
        self.channel = AsyncControllerChannel(
            controller_id=config.controller_id, request_timeout_ms=config.request_timeout_ms, backoff_ms=config.backoff_ms,
            metrics_log_interval_ms=None,
        )
        self.recording = _RecordingChannel(self.channel, self)
        self.driver: KraftDriver | ZkDriver
        if config.controller == "zk":
            self.driver = ZkDriver(self.recording, config.zk, on_broker_epoch=self._set_zk_epoch)
        else:
            self.driver = KraftDriver(self.recording, controller_id=config.controller_id,
                                      metadata_version=config.metadata_version)
        self.plane: RegistrationPlane | None = None
        self.endpoint = ControllerEndpoint(
            ControllerConfig(cluster_id=config.cluster_id, metadata_version=config.metadata_version, migration_enabled=True,
                             session_timeout_ms=config.session_timeout_ms,
                             heartbeat_interval_ms=max(1, int(config.heartbeat_interval * 1000))),
            leads_partitions=self._leads_partitions,
        )
        self.brokers: dict[int, SimulatedBroker] = {}
        self.lifecycles: dict[int, BrokerLifecycle] = {}
        self.periods: dict[int, list[Period]] = {}
        self.round_trips: dict[int, list[float]] = {}
        """Per broker: seconds from the hand-off to the channel to the response callback."""
        self.violations: list[str] = []
        self.event_log: list[BrokerEvent] = []
        self.on_event: Callable[[BrokerEvent], None] | None = None
        self.expected_gone: set[int] = set()
        """Brokers a step crashed or shut down: their fencing is expected."""
        self.unexpected_fences: list[int] = []
        """Brokers fenced (or forgotten) that no step took down, in order."""

    def __repr__(self) -> str:
        return f"SimCluster({len(self.brokers)} brokers, {self.driver!r})"

    @property
    def controller(self) -> Any:
        """The controller object: the KraftDriver itself (kraft) or the active KafkaController (zk)."""
        return self.driver.controller if isinstance(self.driver, KraftDriver) else self.driver.kc

    async def __aenter__(self) -> SimCluster:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ lifecycle

    async def start(self, timeout: float = 30.0) -> None:
        loop = asyncio.get_running_loop()
        self.plane = RegistrationPlane()
        self.endpoint.on_events = self._forward_events(loop)
        self.endpoint.on_renounce = RegistrationPlane.forward(loop, self._renounced)
        await self.plane.call(self.endpoint.start)
        self.channel.startup()
        self.driver.start()
        decoder = SharedDecoder() if self.config.share_decoding else None
        pool = MemoryPool(self.config.broker_memory_bytes)
        for b in range(self.config.brokers):
            broker = SimulatedBroker(b, 1000 + b, migration_enabled=True, faults=self.faults.get(b), record=self.config.record,
                                     on_request=self._on_request, decoder=decoder)
            broker.server.pool = pool  # see ClusterConfig.broker_memory_bytes
            self.brokers[b] = broker
            await broker.start()
        for b in self.brokers:
            await self._start_lifecycle(b)
        await self.wait_for(lambda: all(lc.running.is_set() for lc in self.lifecycles.values()), timeout, "every broker running")
        # A broker joins the controller's view when unfenced (membership.py, zk_driver.py): wait
        # until every one has, and its first UpdateMetadata was delivered.
        await self.wait_for(lambda: len(self.live_broker_ids()) == len(self.brokers), timeout, "every broker in the view")
        if not await self.quiesce(timeout):
            raise TimeoutError(f"timed out after {timeout} s waiting for the brokers' first UpdateMetadata")

    def _forward_events(self, loop: asyncio.AbstractEventLoop) -> Callable[[list[BrokerEvent]], None]:
        """The endpoint's callback, on the plane's thread: the registrations are read there."""
        deliver = RegistrationPlane.forward(loop, self._on_events)

        def on_events(events: list[BrokerEvent]) -> None:
            regs = self.endpoint.state.registrations
            deliver([(e, regs.get(e.broker_id)) for e in events])

        return on_events

    def _renounced(self, _epoch: int) -> None:
        if isinstance(self.driver, KraftDriver):
            self.driver.failover()  # re-elected after renouncing: the new term syncs the brokers

    async def _start_lifecycle(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        lc = BrokerLifecycle(
            lambda: broker.state, (broker.host, broker.port), (self.endpoint.host, self.endpoint.port), self.config.cluster_id,
            metadata_version=self.config.metadata_version, heartbeat_interval=self.config.heartbeat_interval,
            session_timeout=self.config.session_timeout_ms / 1000, metadata_offset=lambda: self.endpoint.state.high_watermark,
        )
        self.lifecycles[broker_id] = lc
        assert self.plane is not None
        await self.plane.run(lc.start)

    async def _stop_lifecycle(self, broker_id: int) -> None:
        lc = self.lifecycles[broker_id]
        assert self.plane is not None
        await self.plane.call(lc.stop)

    async def stop(self) -> None:
        if self.plane is not None:
            for b in list(self.lifecycles):
                await self._stop_lifecycle(b)
        await self.driver.stop()
        await self.channel.shutdown()
        for broker in self.brokers.values():
            await broker.stop()
        if self.plane is not None:
            await self.plane.call(self.endpoint.stop)
            self.plane.stop()
            self.plane = None

    async def wait_for(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
            await asyncio.sleep(0.005)

    async def quiesce(self, timeout: float = 30.0) -> bool:
        """Wait until the controller has nothing queued, the channel nothing queued or in flight,
        and no deletion is pending (twice in a row, a few ms apart)."""
        deadline = time.monotonic() + timeout
        quiet_once = False
        while True:
            idle = await self.channel.wait_until_idle(max(0.0, deadline - time.monotonic()))
            quiet = idle and not self.driver.busy and self.driver.deletions_pending == 0
            if quiet and quiet_once:
                return True
            quiet_once = quiet
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)

    # ------------------------------------------------------------------ faults and steps

    async def crash(self, broker_id: int) -> None:
        """The broker process dies: no more heartbeats, listener and connections gone."""
        self.expected_gone.add(broker_id)
        await self._stop_lifecycle(broker_id)
        await self.brokers[broker_id].kill()

    async def restart(self, broker_id: int) -> None:
        """The broker comes back (fresh state, same port) and registers a new incarnation."""
        await self.brokers[broker_id].restart()
        await self._start_lifecycle(broker_id)

    async def controlled_shutdown(self, broker_id: int, timeout: float = 30.0) -> None:
        """The broker shuts down cleanly: zk, it asks KafkaController (retrying while partitions
        remain) and closes its ZooKeeper session; kraft, it asks through its heartbeats and stops
        once told to."""
        self.expected_gone.add(broker_id)
        if isinstance(self.driver, ZkDriver):
            await self.driver.controlled_shutdown(broker_id, timeout)
            await self._stop_lifecycle(broker_id)
            self.driver.close_session(broker_id)
        else:
            lc = self.lifecycles[broker_id]
            lc.begin_controlled_shutdown()
            await self.wait_for(lc.shutdown_now.is_set, timeout, f"broker {broker_id} to be told to shut down")
            await self._stop_lifecycle(broker_id)
        await self.brokers[broker_id].kill()

    # ------------------------------------------------------------------ events

    def _leads_partitions(self, broker_id: int) -> bool:
        """For the endpoint's thread: kraft mode's controlled shutdown (a set swapped whole)."""
        return isinstance(self.driver, KraftDriver) and broker_id in self.driver.leaders

    def _set_zk_epoch(self, broker_id: int, epoch: int) -> None:
        self.brokers[broker_id].state.broker_epoch = epoch

    def _on_events(self, events: list[tuple[BrokerEvent, Registration | None]]) -> None:
        for e, reg in events:
            self.event_log.append(e)
            if e.kind in (EventKind.FENCED, EventKind.FORGOTTEN) and e.broker_id not in self.expected_gone:
                self.unexpected_fences.append(e.broker_id)
            self.driver.on_broker_event(e, reg)
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
        return self.driver.live_broker_ids()

    def converged(self) -> dict[int, bool]:
        """Per live broker: does its metadata cache equal the controller's view?"""
        want = expected_view(self.driver.ctx)
        memo = MatchMemo(want)  # decoded states and maps shared by brokers are compared once
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
