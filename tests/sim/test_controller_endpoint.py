"""ControllerEndpoint and BrokerLifecycle on real loopback sockets, and registrations feeding a cluster.

The cluster tests run the whole chain: simulated brokers register by themselves, the endpoint's
events drive the SimController, the batch engine sends through ctrlbatch.transport's channel.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from ctrlbatch.context import MetadataVersion
from ctrlbatch.requests import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    Feature,
    Listener,
    UpdateMetadataRequest,
    encode_request,
)
from ctrlbatch.sim.broker_state import BrokerState
from ctrlbatch.sim.client import FrameClient
from ctrlbatch.sim.cluster import ClusterConfig, SimCluster
from ctrlbatch.sim.controller_server import ControllerEndpoint
from ctrlbatch.sim.controller_state import ControllerConfig, EventKind
from ctrlbatch.sim.lifecycle import BrokerLifecycle, LifecycleState


def run(coro: Callable[[], Awaitable[Any]], timeout: float = 30) -> Any:
    return asyncio.run(asyncio.wait_for(coro(), timeout))


def registration(broker_id: int = 1, incarnation: uuid.UUID | None = None, cluster: str = "c1") -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=cluster, incarnation_id=incarnation or uuid.UUID(int=broker_id << 70),
        listeners=[Listener(name="PLAINTEXT", host="127.0.0.1", port=9092)],
        features=[Feature(name="metadata.version", min_supported_version=1, max_supported_version=21)],
        rack=None, log_dirs=[uuid.UUID(int=(broker_id << 64) | 500)])


@pytest.mark.parametrize(("reg_version", "hb_version"), [(0, 0), (1, 1), (2, 1), (3, 2), (4, 2), (5, 2)])
def test_register_and_heartbeat_every_version(reg_version: int, hb_version: int) -> None:
    # v0-1 carry no log dirs: at metadata.version >= 3.7-IV2 that is INVALID_REGISTRATION (119)
    mv = MetadataVersion.IBP_3_6_IV2 if reg_version < 2 else MetadataVersion.IBP_3_9_IV0

    async def main() -> None:
        ep = ControllerEndpoint(ControllerConfig(cluster_id="c1", metadata_version=mv))
        strict = ControllerEndpoint(ControllerConfig(cluster_id="c1"))
        await ep.start()
        await strict.start()
        try:
            async with await FrameClient.connect(strict.host, strict.port) as c:
                _, r = await c.request(registration(), reg_version)
                assert r.error_code == (119 if reg_version < 2 else 0)
            async with await FrameClient.connect(ep.host, ep.port) as c:
                _, r = await c.request(registration(cluster="other"), reg_version)
                assert (r.error_code, r.broker_epoch) == (104, -1)
                _, r = await c.request(registration(), reg_version)
                assert r.error_code == 0
                epoch = r.broker_epoch
                _, h = await c.request(BrokerHeartbeatRequest(broker_id=1, broker_epoch=epoch + 1), hb_version)
                assert h.error_code == 77
                _, h = await c.request(BrokerHeartbeatRequest(broker_id=1, broker_epoch=epoch, current_metadata_offset=epoch),
                                       hb_version)
                assert (h.error_code, h.is_caught_up, h.is_fenced) == (0, True, False)
            assert [e.kind for e in ep.events] == [EventKind.JOINED, EventKind.UNFENCED]
        finally:
            await ep.stop()
            await strict.stop()

    run(main)


def test_control_request_on_the_controller_listener_closes_the_connection() -> None:
    async def main() -> None:
        ep = ControllerEndpoint(ControllerConfig(cluster_id="c1"))
        await ep.start()
        try:
            async with await FrameClient.connect(ep.host, ep.port) as c:
                await c.send_raw(encode_request(UpdateMetadataRequest(controller_id=0), 8, 1, "x"))
                with pytest.raises(ConnectionError):
                    await c.read_frame()
            assert ep.server.stats.rejected_frames == 1
        finally:
            await ep.stop()

    run(main)


def test_session_expiry_fences_and_a_new_incarnation_may_then_register() -> None:
    async def main() -> None:
        ep = ControllerEndpoint(ControllerConfig(cluster_id="c1", session_timeout_ms=200))
        await ep.start()
        try:
            async with await FrameClient.connect(ep.host, ep.port) as c:
                _, r = await c.request(registration(), 4)
                await c.request(BrokerHeartbeatRequest(broker_id=1, broker_epoch=r.broker_epoch,
                                                       current_metadata_offset=r.broker_epoch), 1)
                _, dup = await c.request(registration(incarnation=uuid.UUID(int=99)), 4)
                assert dup.error_code == 101
                await asyncio.sleep(0.5)
                assert ep.events[-1].kind == EventKind.FENCED
                _, r2 = await c.request(registration(incarnation=uuid.UUID(int=99)), 4)
                assert r2.error_code == 0 and r2.broker_epoch > r.broker_epoch
                assert ep.events[-1].kind == EventKind.BOUNCED
        finally:
            await ep.stop()

    run(main)


def test_lifecycle_registers_unfences_and_shuts_down() -> None:
    async def main() -> None:
        ep = ControllerEndpoint(ControllerConfig(cluster_id="c1", migration_enabled=True))
        await ep.start()
        state = BrokerState(4, 100, migration_enabled=True)
        lc = BrokerLifecycle(lambda: state, ("127.0.0.1", 9999), (ep.host, ep.port), "c1", heartbeat_interval=0.02,
                             metadata_offset=lambda: ep.state.high_watermark)
        lc.start()
        try:
            await asyncio.wait_for(lc.running.wait(), 5)
            assert state.kraft_broker_epoch == lc.epoch == ep.state.registrations[4].epoch
            assert ep.state.registrations[4].is_migrating_zk_broker
            lc.begin_controlled_shutdown()
            await asyncio.wait_for(lc.shutdown_now.wait(), 5)  # leads nothing: SHUTDOWN_NOW at once
            assert lc.lifecycle == LifecycleState.SHUTTING_DOWN
        finally:
            await lc.stop()
            await ep.stop()

    run(main)


def test_lifecycle_retries_until_the_controller_accepts() -> None:
    async def main() -> None:
        ep = ControllerEndpoint(ControllerConfig(cluster_id="c1", migration_enabled=False))
        await ep.start()
        state = BrokerState(4, 100, migration_enabled=True)
        lc = BrokerLifecycle(lambda: state, ("127.0.0.1", 9999), (ep.host, ep.port), "c1")
        loop = asyncio.get_running_loop()
        started = loop.time()
        lc.start()
        try:
            while len(lc.errors) < 3:
                await asyncio.sleep(0.01)
            # two back-offs (100 ms, then 200 ms, jitter 2 %) before the third answer: a lower bound,
            # which a loaded machine can only lengthen
            assert loop.time() - started >= 0.98 * (0.1 + 0.2)
            assert lc.epoch is None and set(lc.errors) == {102}
        finally:
            await lc.stop()
            await ep.stop()

    run(main)


def test_a_joining_broker_gets_full_metadata_and_the_others_none_kafka_7537() -> None:
    async def main() -> None:
        async with SimCluster(ClusterConfig(brokers=3, heartbeat_interval=0.05, session_timeout_ms=500)) as c:
            c.controller.create_topics({"foo": [[0, 1], [1, 2], [2, 0]]})
            assert await c.quiesce(10)
            await c.crash(2)
            await c.wait_for(lambda: 2 not in c.live_broker_ids(), 5, "broker 2 fenced")
            assert await c.quiesce(10)
            marks = {b: len(c.brokers[b].received) for b in (0, 1, 2)}
            await c.restart(2)
            await c.wait_for(lambda: 2 in c.live_broker_ids(), 5, "broker 2 back")
            assert await c.quiesce(10)
            first = c.brokers[2].received[marks[2]]
            assert first.api_key == 6 and sum(len(t.partition_states) for t in first.body.topic_states) == 3
            for b in (0, 1):
                um = c.brokers[b].received[marks[b]]
                assert um.api_key == 6 and um.body.topic_states == ()
                assert sorted(x.id for x in um.body.live_brokers) == [0, 1, 2]
            assert all(c.converged().values()) and c.violations == []
            kinds = [e.kind for e in c.event_log if e.broker_id == 2]
            assert kinds.index(EventKind.FENCED) < kinds.index(EventKind.BOUNCED)

    run(main)


def test_failover_sends_full_requests_that_drop_strays_and_deleted_topics() -> None:
    import uuid as _uuid

    from ctrlbatch.context import TopicPartition
    from ctrlbatch.requests import UpdateMetadataPartitionState
    from ctrlbatch.sim.broker_state import HostedPartition

    async def main() -> None:
        async with SimCluster(ClusterConfig(brokers=3, heartbeat_interval=0.05)) as c:
            c.controller.create_topics({"foo": [[0, 1], [1, 2], [2, 0]]})
            assert await c.quiesce(10)
            b1 = c.brokers[1].state
            stray = TopicPartition("gone", 0)
            # a log of a deleted topic; in a migrating cluster every log has a topic id
            b1.partitions[stray] = HostedPartition("gone", 0, log_exists=True, log_topic_id=_uuid.UUID(int=77))
            b1.cache.partition_states["gone"] = {0: UpdateMetadataPartitionState(partition_index=0, leader=1)}
            b1.cache.topic_ids["gone"] = _uuid.UUID(int=77)
            assert not c.converged()[1]
            c.controller.failover()
            assert await c.quiesce(10)
            last = {r.api_key: r.body for r in c.brokers[1].received}
            assert last[4].type == 2 and last[6].type == 2 and last[6].is_k_raft_controller
            assert stray not in b1.partitions  # a stray log (KAFKA-15605)
            assert "gone" not in b1.cache.partition_states  # a topic the FULL request lacks (KAFKA-15799)
            assert all(c.converged().values())

    run(main)


def test_a_stalled_controller_answers_a_late_heartbeat_request_timed_out_and_fences_nobody() -> None:
    """The event queue blocked longer than the heartbeat deadline (interval / 2 = 100 ms): error 7,
    the broker stays registered and unfenced (its contact refreshed), then heartbeats work again."""

    async def main() -> None:
        ep = ControllerEndpoint(ControllerConfig(cluster_id="c1", heartbeat_interval_ms=200, session_timeout_ms=60000))
        await ep.start()
        try:
            async with await FrameClient.connect(ep.host, ep.port) as c:
                _, r = await c.request(registration(), 4)
                beat = BrokerHeartbeatRequest(broker_id=1, broker_epoch=r.broker_epoch, current_metadata_offset=r.broker_epoch)
                _, ok = await c.request(beat, 1)
                assert (ok.error_code, ok.is_fenced) == (0, False)
                ep.stall(0.3)  # a lower bound on the wait: the answer is 7 however loaded the machine is
                _, late = await c.request(beat, 1)
                assert (late.error_code, late.is_fenced, late.should_shut_down) == (7, True, False)
                assert ep.state.registrations[1].state.value == "UNFENCED"
                _, again = await c.request(beat, 1)
                assert (again.error_code, again.is_fenced) == (0, False)
        finally:
            await ep.stop()

    run(main)


def test_a_handler_bug_answers_unknown_server_error_and_the_controller_renounces(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        ep = ControllerEndpoint(ControllerConfig(cluster_id="c1"))
        await ep.start()

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("a bug")

        try:
            async with await FrameClient.connect(ep.host, ep.port) as c:
                monkeypatch.setattr(ep.state, "_check_registration", broken)
                _, r = await c.request(registration(), 4)
                assert (r.error_code, r.broker_epoch) == (-1, -1)
                assert ep.state.leader_epoch == 2
        finally:
            await ep.stop()

    run(main)


def test_unknown_server_error_starts_a_new_controller_term_that_resyncs_the_brokers() -> None:
    """A registration with an unknown security protocol: -1, the controller renounces and is elected
    again (kafka-broker-registration.md §2 step 7, QC:551-553); the new term (controller epoch + 1)
    syncs every broker with FULL requests, and the brokers converge with the new epoch."""

    async def main() -> None:
        async with SimCluster(ClusterConfig(brokers=2, heartbeat_interval=0.05)) as c:
            c.controller.create_topics({"foo": [[0, 1], [1, 0]]})
            assert await c.quiesce(10)
            epoch = c.controller.epoch
            bad = BrokerRegistrationRequest(
                broker_id=7, cluster_id=c.config.cluster_id, incarnation_id=uuid.UUID(int=7),
                listeners=[Listener(name="PLAINTEXT", host="127.0.0.1", port=9, security_protocol=9)],
                features=[Feature(name="metadata.version", min_supported_version=1, max_supported_version=21)],
                rack=None, is_migrating_zk_broker=True, log_dirs=[uuid.UUID(int=(7 << 64) | 1000)])
            async with await FrameClient.connect(c.endpoint.host, c.endpoint.port) as client:
                _, r = await client.request(bad, 4)
            assert (r.error_code, r.broker_epoch) == (-1, -1)
            assert c.endpoint.state.leader_epoch == 2 and c.controller.epoch == epoch + 1
            assert await c.quiesce(10)
            for b in c.brokers.values():
                last = {x.api_key: x.body for x in b.received}
                assert last[4].type == 2 and last[4].controller_epoch == epoch + 1
                assert b.state.controller_epoch == epoch + 1
            assert all(c.converged().values()) and c.violations == []

    run(main)


def test_lifecycle_retries_after_an_undecodable_answer() -> None:
    """A controller that answers garbage: the broker's lifecycle logs it, reconnects and tries again
    (never a dead task)."""

    async def main() -> None:
        connections: list[int] = []

        async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            connections.append(1)
            head = await reader.readexactly(4)
            await reader.readexactly(int.from_bytes(head, "big"))
            writer.write(b"\x00\x00\x00\x02\xff\xff")  # two bytes: not even a correlation id
            await writer.drain()
            await reader.read()  # until the broker hangs up
            writer.close()

        server = await asyncio.start_server(garbage, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        state = BrokerState(4, 100, migration_enabled=True)
        lc = BrokerLifecycle(lambda: state, ("127.0.0.1", 9999), ("127.0.0.1", port), "c1")
        lc.start()
        try:
            while len(connections) < 2:
                await asyncio.sleep(0.01)
            assert lc._task is not None and not lc._task.done() and lc.epoch is None
        finally:
            await lc.stop()
            server.close()
            await server.wait_closed()

    run(main)
