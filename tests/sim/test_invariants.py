"""The issue's invariants, by hypothesis, over random clusters, scenarios and fault schedules on real sockets.

Each example starts a SimCluster (controller endpoint, brokers that register by themselves, the
network channel), runs random steps under random connection faults, waits for quiet after each
step, then checks sim/invariants.py: delivery without loss, duplication or reordering per broker
(retries are the same bytes, new correlation id, new connection), one request at a time per
connection, convergence of every live broker's metadata cache, nothing delivered to a removed
broker; after stopping, no task and no file descriptor (socket) is left. Stale epochs: a
model-based property over BrokerState, and Kafka's BrokerEpochIntegrationTest on sockets.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.batch import ControllerBrokerRequestBatch
from ctrlbatch.context import (
    Broker,
    ControllerContext,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    MetadataVersion,
    ReplicaAssignment,
    SecurityProtocol,
    TopicPartition,
)
from ctrlbatch.requests import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaTopicState,
    UpdateMetadataRequest,
)
from ctrlbatch.sim.broker_server import BrokerFaults, SimulatedBroker
from ctrlbatch.sim.broker_state import BrokerState
from ctrlbatch.sim.cluster import ClusterConfig, SimCluster
from ctrlbatch.sim.invariants import check_all, leaked_tasks
from ctrlbatch.sim.kraft_decisions import KraftError
from ctrlbatch.sim.kraft_driver import KraftDriver
from ctrlbatch.transport import AsyncControllerChannel


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# ---------------------------------------------------------------- random scenarios


@st.composite
def plans(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(2, 4))
    topics = {
        f"t{t}": [draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=min(3, n), unique=True))
                  for _ in range(draw(st.integers(1, 4)))]
        for t in range(draw(st.integers(1, 3)))
    }
    steps = draw(st.lists(st.sampled_from(["failover", "shutdown", "crash", "restart", "delete", "reassign", "create"]),
                          min_size=1, max_size=4))
    errors = draw(st.booleans())
    if errors:  # a StopReplica answered with an error would leave a deletion pending for ever
        steps = [s for s in steps if s != "delete"]
    faults = {b: BrokerFaults(close_at=set(draw(st.lists(st.integers(1, 12), max_size=2))),
                              hang_up_at=set(draw(st.lists(st.integers(1, 12), max_size=2))),
                              delay=draw(st.sampled_from([0.0, 0.0, 0.01])),
                              error_at=draw(st.dictionaries(st.integers(1, 12), st.sampled_from([-1, 56]), max_size=2))
                              if errors else {})
              for b in range(n)}
    return {"n": n, "topics": topics, "steps": steps, "faults": faults, "seed": draw(st.integers(0, 10**6))}


def _errored_metadata(c: SimCluster) -> set[int]:
    """Brokers that answered an UpdateMetadata with an injected error: Kafka's controller only logs
    that and does not resend, so their cache may lag for good."""
    return {b for b, x in c.brokers.items() for r in x.received if r.api_key == 6 and r.ordinal in x.faults.error_at}


def _problems(c: SimCluster) -> list[str]:
    skip = _errored_metadata(c)
    return [p for p in check_all(c) if not any(p.startswith(f"broker {b}: metadata cache") for b in skip)]


async def _catch_up(c: SimCluster) -> None:
    """kraft: the new replicas join the ISR by AlterPartition, which completes the reassignment."""
    assert isinstance(c.driver, KraftDriver)
    for _ in range(10):
        assert await c.quiesce(20)
        if c.driver.catch_up(c.brokers) == 0:
            return


async def _step(c: SimCluster, step: str, rnd: Any, down: set[int], created: list[int]) -> None:
    ctl = c.controller
    live = c.live_broker_ids()
    topics = sorted(ctl.ctx.all_topics)
    if step == "failover":
        ctl.failover()
    elif step in ("shutdown", "crash") and len(live) >= 2:
        b = rnd.choice(live)
        down.add(b)
        if step == "shutdown":
            await c.controlled_shutdown(b, 10)
        else:
            await c.crash(b)
            await c.wait_for(lambda: b not in c.live_broker_ids(), 10, f"broker {b} fenced")
    elif step == "restart" and down:
        b = min(down)
        down.discard(b)
        await c.restart(b)
        await c.wait_for(lambda: b in c.live_broker_ids(), 10, f"broker {b} back")
    elif step == "delete" and topics:
        ctl.delete_topics([rnd.choice(topics)])
    elif step == "reassign" and topics:
        tp = rnd.choice(sorted(ctl.ctx.partitions_for_topic(rnd.choice(topics))))
        target = rnd.sample(range(c.config.brokers), rnd.randint(1, min(3, c.config.brokers)))
        if isinstance(ctl, KraftDriver):
            ctl.reassign({tp: target}, lambda _result: None)
            await _catch_up(c)
        else:
            ctl.reassign(tp, target)
    elif step == "create":
        created.append(len(created))
        replicas = rnd.sample(range(c.config.brokers), 1)
        try:
            ctl.create_topics({f"new{len(created)}": [replicas]})
        except KraftError as e:  # KRaft refuses a topic whose every replica is fenced (RCM:700-704)
            assert replicas[0] not in live and "are fenced or in controlled shutdown" in str(e)
    assert await c.quiesce(20), f"not quiet after {step}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans())
def test_invariants_over_random_scenarios_and_faults(plan: dict[str, Any]) -> None:
    import random

    before = open_fds()

    async def main() -> None:
        rnd = random.Random(plan["seed"])
        c = SimCluster(ClusterConfig(brokers=plan["n"], session_timeout_ms=300, heartbeat_interval=0.03,
                                     request_timeout_ms=2000, backoff_ms=20), faults=plan["faults"])
        await c.start(10)
        try:
            c.controller.create_topics(plan["topics"])
            assert await c.quiesce(20)
            down: set[int] = set()
            created: list[int] = []
            assert _problems(c) == []
            for step in plan["steps"]:
                await _step(c, step, rnd, down, created)
                problems = _problems(c)
                assert problems == [], (step, problems)
        finally:
            await c.stop()

    async def bounded() -> None:
        await asyncio.wait_for(main(), 90)
        assert leaked_tasks() == []

    asyncio.run(bounded())
    assert open_fds() == before, "a socket or file descriptor was left open"


# ---------------------------------------------------------------- stale epochs (§1.4, §1.5)


@st.composite
def control_requests(draw: Any) -> tuple[int, Any, int, int]:
    key = draw(st.sampled_from([4, 5, 6]))
    broker_epoch = draw(st.sampled_from([-1, 99, 100, 101]))
    controller_epoch = draw(st.integers(0, 4))
    if key == 4:
        req: Any = LeaderAndIsrRequest(controller_id=0, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
                                       topic_states=[LeaderAndIsrTopicState(topic_name="t", partition_states=[
                                           LeaderAndIsrPartitionState(partition_index=0, leader=1,
                                                                      leader_epoch=draw(st.integers(0, 3)), replicas=(1,))])])
    elif key == 5:
        req = StopReplicaRequest(controller_id=0, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
                                 topic_states=[StopReplicaTopicState(topic_name="t", partition_states=[
                                     StopReplicaPartitionState(partition_index=0, leader_epoch=draw(st.integers(-2, 3)))])])
    else:
        req = UpdateMetadataRequest(controller_id=0, controller_epoch=controller_epoch, broker_epoch=broker_epoch)
    return key, req, broker_epoch, controller_epoch


@settings(max_examples=200, deadline=None)
@given(st.lists(control_requests(), min_size=1, max_size=12))
def test_stale_epochs_are_rejected_as_the_reference_says(requests: list[tuple[int, Any, int, int]]) -> None:
    state = BrokerState(1, 100)
    expected_controller_epoch = 0
    for key, req, broker_epoch, controller_epoch in requests:
        resp = state.handle(key, {4: 7, 5: 4, 6: 8}[key], req)
        if broker_epoch != -1 and broker_epoch < 100:
            assert resp.error_code == 77
            if key == 5:
                assert resp.partition_errors == ()
        elif controller_epoch < expected_controller_epoch:
            assert resp.error_code == 11
            if key == 4:
                assert [e.error_code for t in resp.topics for e in t.partition_errors] == [11]
            if key == 5:
                assert resp.partition_errors == ()
        else:
            assert resp.error_code == 0
            expected_controller_epoch = controller_epoch
        assert state.controller_epoch == expected_controller_epoch


def test_broker_epoch_integration_over_the_channel() -> None:
    """BrokerEpochIntegrationTest: the real channel sends the three requests with the broker's epoch
    - 1, + 0 and + 1; only - 1 is answered STALE_BROKER_EPOCH."""

    async def main() -> dict[int, list[tuple[str, int]]]:
        brokers = {off: SimulatedBroker(off + 2, 100) for off in (-1, 0, 1)}
        for b in brokers.values():
            await b.start()
        channel = AsyncControllerChannel(controller_id=0, metrics_log_interval_ms=None)
        channel.startup()
        ctx = ControllerContext()
        ctx.epoch = 1
        nodes = {off: Broker(b.broker_id, (EndPoint("127.0.0.1", b.port, "PLAINTEXT", SecurityProtocol.PLAINTEXT),))
                 for off, b in brokers.items()}
        ctx.set_live_brokers({nodes[off]: 100 + off for off in brokers})
        for node in nodes.values():
            channel.add_broker(node)
        tp = TopicPartition("t", 0)
        ctx.set_all_topics(["t"])
        ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment((1, 2, 3)))
        ctx.put_partition_leadership_info(tp, LeaderIsrAndControllerEpoch(LeaderAndIsr(2, (1, 2, 3), 1, 1), 1))
        events: list[Any] = []
        batch = ControllerBrokerRequestBatch(0, ctx, MetadataVersion.IBP_3_9_IV0, channel, on_event=events.append)
        batch.new_batch()
        batch.add_leader_and_isr_request_for_brokers([1, 2, 3], tp, ctx.partition_leadership_info(tp),
                                                     ctx.partition_full_replica_assignment(tp), False)
        batch.add_stop_replica_request_for_brokers([1, 2, 3], tp, False)
        batch.send_requests_to_brokers(1)
        await channel.wait_until_idle(10)
        await channel.shutdown()
        out: dict[int, list[tuple[str, int]]] = {}
        for off, b in brokers.items():
            out[off] = [(type(r.body).__name__, int(r.error_code or 0)) for r in b.received]
            await b.stop()
        assert len(events) == 6
        return out

    got = asyncio.run(asyncio.wait_for(main(), 30))
    names = ["LeaderAndIsrRequest", "UpdateMetadataRequest", "StopReplicaRequest"]
    assert got[-1] == [(n, 77) for n in names]
    assert got[0] == got[1] == [(n, 0) for n in names]
