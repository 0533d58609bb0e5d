"""KraftDriver: the KRaft controller in migration mode, driven by registration events, with a recording
channel (as MigrationPropagatorTest / ControllerChannelManagerTest capture the batch's requests), and
over real loopback sockets (SimCluster) for the crash the issue names."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.context import Broker, TopicPartition
from ctrlbatch.replay.image.image import MetadataImage
from ctrlbatch.sim import kraft_decisions as kd
from ctrlbatch.sim.cluster import ClusterConfig, SimCluster
from ctrlbatch.sim.controller_state import BrokerEvent, ControlState, EventKind, Registration
from ctrlbatch.sim.kraft_driver import KraftDriver

LEADER_AND_ISR, UPDATE_METADATA, STOP_REPLICA = 4, 6, 5


class RecordingChannel:
    def __init__(self) -> None:
        self.brokers: dict[int, Broker] = {}
        self.sent: list[tuple[int, int, int]] = []
        """(broker, api key, broker epoch)"""
        self.removed: list[int] = []

    def send(self, broker_id: int, request: Any, callback: Any) -> None:
        assert broker_id in self.brokers, f"a request for broker {broker_id}, which is not in the channel"
        self.sent.append((broker_id, request.api_key, request.broker_epoch))

    def add_broker(self, broker: Broker) -> None:
        assert broker.id not in self.brokers
        self.brokers[broker.id] = broker

    def remove_broker(self, broker_id: int) -> None:
        del self.brokers[broker_id]
        self.removed.append(broker_id)

    def take(self) -> list[tuple[int, int, int]]:
        out, self.sent = self.sent, []
        return out


def reg(b: int, epoch: int, state: ControlState = ControlState.FENCED, host: str = "127.0.0.1") -> Registration:
    return Registration(broker_id=b, epoch=epoch, incarnation_id=uuid.UUID(int=epoch), listeners=(("PLAINTEXT", host, 9000 + b, 0),),
                        rack=None, features={"metadata.version": (1, 21)}, is_migrating_zk_broker=True, log_dirs=(),
                        record_offset=epoch, state=state)


def event(driver: KraftDriver, kind: EventKind, b: int, epoch: int, state: ControlState = ControlState.FENCED) -> None:
    driver.on_broker_event(BrokerEvent(kind, b, epoch), reg(b, epoch, state))


def started(n: int = 3) -> tuple[KraftDriver, RecordingChannel]:
    ch = RecordingChannel()
    d = KraftDriver(ch)
    for b in range(n):
        event(d, EventKind.JOINED, b, 10 + b)
        event(d, EventKind.UNFENCED, b, 10 + b, ControlState.UNFENCED)
    return d, ch


def part(image: MetadataImage, topic: str, p: int) -> Any:
    t = image.topic_by_name(topic)
    assert t is not None
    return t.partitions[p]


def test_a_registration_opens_no_channel_until_unfenced_and_the_broker_epoch_is_the_registrations() -> None:
    ch = RecordingChannel()
    d = KraftDriver(ch)
    event(d, EventKind.JOINED, 0, 42)
    assert ch.brokers == {} and d.live_broker_ids() == [] and d.image.brokers[0].fenced
    event(d, EventKind.UNFENCED, 0, 42, ControlState.UNFENCED)
    assert list(ch.brokers) == [0] and d.live_broker_ids() == [0]
    assert {(b, api, e) for b, api, e in ch.take()} == {(0, UPDATE_METADATA, 42)}  # a changed broker: everything


def test_unreachable_brokers_are_never_registered() -> None:
    ch = RecordingChannel()
    d = KraftDriver(ch)
    d.on_broker_event(BrokerEvent(EventKind.JOINED, 0, 5), reg(0, 5, host="10.0.0.1"))
    assert 0 not in d.image.brokers and ch.brokers == {}


def test_create_topics_sends_leader_and_isr_to_replicas_and_update_metadata_to_all() -> None:
    d, ch = started()
    ch.take()
    d.create_topics({"t": [[0, 1], [1, 2]]})
    sent = ch.take()
    assert {b for b, api, _ in sent if api == LEADER_AND_ISR} == {0, 1, 2}
    assert {b for b, api, _ in sent if api == UPDATE_METADATA} == {0, 1, 2}
    assert (part(d.image, "t", 0).leader, part(d.image, "t", 0).isr) == (0, (0, 1))
    assert d.leaders == frozenset({0, 1})


def test_a_fenced_broker_leaves_the_channel_and_every_isr_it_was_in() -> None:
    """The issue's difference: a crashed broker no longer stays in its followers' ISRs."""
    d, ch = started()
    d.create_topics({"t": [[0, 1, 2], [1, 0, 2], [0]]})
    ch.take()
    event(d, EventKind.FENCED, 0, 10)
    assert ch.removed == [0] and 0 not in ch.brokers
    assert (part(d.image, "t", 0).leader, part(d.image, "t", 0).isr, part(d.image, "t", 0).leader_epoch) == (1, (1, 2), 1)
    assert (part(d.image, "t", 1).leader, part(d.image, "t", 1).isr, part(d.image, "t", 1).leader_epoch) == (1, (1, 2), 1)
    assert (part(d.image, "t", 2).leader, part(d.image, "t", 2).isr) == (-1, (0,))
    sent = ch.take()
    assert all(b != 0 for b, _, _ in sent)
    assert {b for b, api, _ in sent if api == LEADER_AND_ISR} == {1, 2}
    # the fenced broker is still registered: MigrationPropagator lists it among the live brokers
    assert 0 in d.ctx.live_or_shutting_down_broker_ids and 0 not in d.ctx.live_broker_ids


def test_controlled_shutdown_then_shutdown_now() -> None:
    d, ch = started()
    d.create_topics({"t": [[0, 1], [1, 0]]})
    event(d, EventKind.CONTROLLED_SHUTDOWN, 0, 10, ControlState.CONTROLLED_SHUTDOWN)
    assert 0 not in d.leaders and d.image.brokers[0].in_controlled_shutdown
    assert part(d.image, "t", 0).isr == (1,) and part(d.image, "t", 1).isr == (1,)
    assert 0 in ch.brokers  # still unfenced: MigrationPropagator keeps sending to it
    event(d, EventKind.SHUTDOWN_NOW, 0, 10, ControlState.SHUTDOWN_NOW)
    assert 0 not in ch.brokers and d.image.brokers[0].fenced


def test_failover_syncs_every_broker_with_a_higher_epoch() -> None:
    d, ch = started()
    d.create_topics({"t": [[0, 1], [2, 0]]})
    ch.take()
    d.failover()
    sent = ch.take()
    assert d.epoch == 2 and d.ctx.epoch == 2
    assert [api for b, api, _ in sent if b == 0][:1] == [UPDATE_METADATA]
    assert {b for b, api, _ in sent if api == LEADER_AND_ISR} == {0, 1, 2}
    assert STOP_REPLICA not in {api for _, api, _ in sent}


def test_reassignment_waits_for_the_isr_then_completes() -> None:
    d, _ = started(4)
    d.create_topics({"t": [[0, 1]]})
    tp = TopicPartition("t", 0)
    result: list[Any] = []
    d.reassign({tp: [2, 3]}, result.append)
    assert result == [{}]
    p = part(d.image, "t", 0)
    assert (p.replicas, p.adding_replicas, p.removing_replicas, p.isr) == ((2, 3, 0, 1), (2, 3), (0, 1), (0, 1))
    assert d.ctx.partitions_being_reassigned == {tp}
    d._commit([kd.alter_partition(d.image, "t", 0, [0, 1, 2, 3])])
    p = part(d.image, "t", 0)
    assert (p.replicas, p.isr, p.leader, p.adding_replicas) == ((2, 3), (2, 3), 2, ())
    assert d.ctx.partitions_being_reassigned == set()


def test_preferred_election_answers_per_partition() -> None:
    d, _ = started()
    d.create_topics({"t": [[0, 1]]})
    out: list[Any] = []
    d.elect_leaders([TopicPartition("t", 0), TopicPartition("t", 9)], False, out.append)
    assert out == [{TopicPartition("t", 0): "ELECTION_NOT_NEEDED", TopicPartition("t", 9): "UNKNOWN_TOPIC_OR_PARTITION"}]


_EVENTS = st.lists(st.tuples(st.sampled_from(["fence", "unfence", "shutdown", "bounce", "create", "delete", "failover",
                                              "elect", "expand"]), st.integers(0, 3)), max_size=25)


@settings(max_examples=60, deadline=None)
@given(_EVENTS)
def test_random_histories_keep_kafkas_invariants(events: list[tuple[str, int]]) -> None:
    d, ch = started(4)
    epochs = {0: 20, 1: 21, 2: 22, 3: 23}
    n = 0
    seen: dict[tuple[str, int], tuple[int, int]] = {}
    for kind, b in events:
        known = d.image.brokers.get(b)
        if kind == "fence":
            event(d, EventKind.FENCED, b, epochs[b])
        elif kind == "unfence" and known is not None:
            event(d, EventKind.UNFENCED, b, known.epoch, ControlState.UNFENCED)
        elif kind == "shutdown" and known is not None:
            event(d, EventKind.CONTROLLED_SHUTDOWN, b, known.epoch, ControlState.CONTROLLED_SHUTDOWN)
        elif kind == "bounce":
            epochs[b] += 10
            event(d, EventKind.BOUNCED, b, epochs[b])
        elif kind == "create" and d.live_broker_ids():
            live = d.live_broker_ids()
            try:
                d.create_topics({f"t{n}": [[live[(b + k) % len(live)] for k in range(min(2, len(live)))]]})
            except Exception as e:  # noqa: BLE001 - only Kafka's refusal is acceptable
                assert "fenced or in controlled shutdown" in str(e)
            n += 1
        elif kind == "delete" and d.image.topic_ids_by_name:
            d.delete_topics([min(d.image.topic_ids_by_name)])
        elif kind == "failover":
            d.failover()
        elif kind == "elect":
            d.elect_leaders([TopicPartition(t, 0) for t in d.image.topic_ids_by_name], False, lambda r: None)
        for t in d.image.topics.values():
            for p, r in t.partitions.items():
                assert set(r.isr) <= set(r.replicas) and r.isr
                if r.leader >= 0:
                    assert r.leader in r.isr
                old = seen.get((t.name, p))
                if old is not None:
                    assert (r.leader_epoch, r.partition_epoch) >= old
                seen[(t.name, p)] = (r.leader_epoch, r.partition_epoch)
        assert set(ch.brokers) == {x for x, r in d.image.brokers.items() if not r.fenced}
        ch.take()  # every send was checked against the channel when made (RecordingChannel.send)
    # a leader always has an unfenced broker unless none of its ISR is (Kafka keeps a fenced last member)
    for t in d.image.topics.values():
        for r in t.partitions.values():
            active = [x for x in r.isr if not d.image.brokers[x].fenced and not d.image.brokers[x].in_controlled_shutdown]
            if r.leader < 0:
                assert not active


def test_a_crash_over_loopback_shrinks_the_isrs_and_the_restart_rejoins() -> None:
    async def run() -> None:
        config = ClusterConfig(brokers=3, controller="kraft", session_timeout_ms=1500, heartbeat_interval=0.3, record=False)
        async with SimCluster(config) as c:
            d = c.driver
            assert isinstance(d, KraftDriver)
            d.create_topics({"t": [[0, 1, 2], [1, 2, 0], [2, 0, 1]]})
            assert await c.quiesce(20)
            await c.crash(0)
            await c.wait_for(lambda: 0 not in c.live_broker_ids(), 20, "broker 0 fenced")
            assert await c.quiesce(20)
            for p in range(3):
                assert 0 not in part(d.image, "t", p).isr and part(d.image, "t", p).leader != 0
            assert all(c.converged().values()) and set(c.converged()) == {1, 2}
            await c.restart(0)
            await c.wait_for(lambda: 0 in c.live_broker_ids(), 20, "broker 0 back")
            assert await c.quiesce(20)
            assert d.catch_up(c.brokers) == 3
            assert await c.quiesce(20)
            for p in range(3):
                assert 0 in part(d.image, "t", p).isr
            assert c.converged() == {0: True, 1: True, 2: True} and c.unexpected_fences == []

    asyncio.run(run())


def test_the_unclean_check_runs_after_its_interval_and_only_for_enabled_topics() -> None:
    async def run() -> None:
        ch = RecordingChannel()
        d = KraftDriver(ch, unclean_leader_election_check_interval_ms=50)
        for b in range(2):
            event(d, EventKind.JOINED, b, 10 + b)
            event(d, EventKind.UNFENCED, b, 10 + b, ControlState.UNFENCED)
        d.create_topics({"t": [[1, 0]]})
        event(d, EventKind.FENCED, 0, 10)
        event(d, EventKind.FENCED, 1, 11)
        event(d, EventKind.UNFENCED, 0, 10, ControlState.UNFENCED)
        assert part(d.image, "t", 0).leader == -1
        await asyncio.sleep(0.2)
        assert part(d.image, "t", 0).leader == -1  # checked, but the topic does not allow it
        d.enable_unclean_election("t")
        assert part(d.image, "t", 0).leader == -1  # no immediate trigger at 3.9
        for _ in range(100):
            await asyncio.sleep(0.02)
            if part(d.image, "t", 0).leader == 0:
                break
        assert (part(d.image, "t", 0).leader, part(d.image, "t", 0).isr) == (0, (0,))
        await d.stop()

    asyncio.run(run())
