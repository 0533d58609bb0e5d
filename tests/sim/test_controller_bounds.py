"""The controller endpoint's bounds (issue 24): fake broker ids kept alive by heartbeats cannot lock
new brokers out (a source keeping several ids gives one up to a newcomer), and a registration's
size is bounded as Kafka bounds it (its record must fit a raft batch: RECORD_LIST_TOO_LARGE, 18)."""

from __future__ import annotations

import asyncio
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.context import MetadataVersion
from ctrlbatch.requests import BrokerHeartbeatRequest, BrokerRegistrationRequest, Feature, Listener
from ctrlbatch.sim.client import FrameClient
from ctrlbatch.sim.controller_server import ControllerEndpoint
from ctrlbatch.sim.controller_state import (
    MAX_BATCH_SIZE_BYTES,
    ControllerConfig,
    ControllerState,
    EventKind,
    registration_record_bytes,
)


def reg(broker_id: int, dirs: int = 1) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id="c1", incarnation_id=uuid.UUID(int=broker_id + 1),
        listeners=[Listener(name="PLAINTEXT", host="127.0.0.1", port=9092, security_protocol=0)],
        features=[Feature(name="metadata.version", min_supported_version=1,
                          max_supported_version=MetadataVersion.IBP_3_9_IV0.feature_level)],
        log_dirs=[uuid.UUID(int=((broker_id + 1) << 64) | (1000 + i)) for i in range(dirs)])


def beat(broker_id: int, epoch: int) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=10**9)


def unfenced(c: ControllerState, broker_id: int, source: object, now: int = 0) -> int:
    r, _ = c.register(reg(broker_id), now, source=source)
    assert r.error_code == 0
    hb, _ = c.heartbeat(beat(broker_id, r.broker_epoch), now, source=source)
    assert hb.error_code == 0 and not hb.is_fenced
    return r.broker_epoch


def test_ids_kept_alive_by_one_source_give_way_to_a_newcomer() -> None:
    c = ControllerState(ControllerConfig("c1", max_brokers=3, session_timeout_ms=60_000))
    for b in (1, 2, 3):
        unfenced(c, b, source="attacker")
    r, events = c.register(reg(4), 10, source="broker-4")  # a newcomer on a connection of its own
    assert r.error_code == 0 and (events[0].kind, events[0].broker_id) == (EventKind.FORGOTTEN, 1)
    assert sorted(c.registrations) == [2, 3, 4]
    r, _ = c.register(reg(5), 20, source="attacker")  # the crowded source itself gets nothing more
    assert r.error_code == 44
    r, events = c.register(reg(6), 30, source="broker-6")  # the attacker still keeps 2: one more gives way
    assert r.error_code == 0 and events[0].broker_id == 2
    r, _ = c.register(reg(7), 40, source="broker-7")  # one id per source everywhere: nobody gives way
    assert r.error_code == 44 and sorted(c.registrations) == [3, 4, 6]


def test_registrations_without_a_source_are_never_taken() -> None:
    c = ControllerState(ControllerConfig("c1", max_brokers=2, session_timeout_ms=60_000))
    unfenced(c, 1, None)
    unfenced(c, 2, None)
    assert c.register(reg(3), 5, source="x")[0].error_code == 44


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["reg", "beat"]), st.integers(0, 12), st.integers(0, 4)), max_size=60))
def test_bounds_and_source_counts_hold_whatever_the_order(ops: list[tuple[str, int, int]]) -> None:
    c = ControllerState(ControllerConfig("c1", max_brokers=5, session_timeout_ms=60_000))
    for now, (op, broker_id, source) in enumerate(ops):
        r = c.registrations.get(broker_id)
        if op == "reg":
            most = max((len(ids) for ids in c._ids_of.values()), default=0)
            gives_way = most >= 2 and any(len(ids) == most and s != source for s, ids in c._ids_of.items())
            full = len(c.registrations) >= 5
            resp, _ = c.register(reg(broker_id), now, source=source)
            if r is None and full:  # a new id at the bound (nothing fenced is a session out of contact)
                assert resp.error_code == (0 if gives_way else 44)
            else:
                assert resp.error_code == 0
        elif r is not None:
            c.heartbeat(beat(broker_id, r.epoch), now, source=source)
        assert len(c.registrations) <= 5
        counts = {s: len(ids) for s, ids in c._ids_of.items()}
        assert sum(counts.values()) == len(c._source_of) and set(c._source_of) <= set(c.registrations)
        assert all(c._source_of[b] == s for s, ids in c._ids_of.items() for b in ids)
        assert c._most == max(counts.values(), default=0)
        assert {n: set(v) for n, v in c._sources_by_count.items()} == {
            n: {s for s, k in counts.items() if k == n} for n in set(counts.values())}


def test_a_registration_too_large_for_a_raft_batch_is_answered_18_and_not_stored() -> None:
    big = reg(1, dirs=MAX_BATCH_SIZE_BYTES // 16 + 1)
    assert registration_record_bytes(big) > MAX_BATCH_SIZE_BYTES
    c = ControllerState(ControllerConfig("c1"))
    r, events = c.register(big, 0)
    assert (r.error_code, r.broker_epoch, events, c.registrations) == (18, -1, [], {})
    assert c.register(reg(1, dirs=1000), 0)[0].error_code == 0  # 16 KB of dirs: fine


def test_over_the_endpoint_fake_ids_do_not_lock_out_and_big_registrations_get_18() -> None:
    async def main() -> None:
        e = ControllerEndpoint(ControllerConfig("c1", max_brokers=4, session_timeout_ms=60_000,
                                                max_registration_bytes=4000))
        await e.start()
        try:
            async with await FrameClient.connect(e.host, e.port) as fake:
                for b in range(4):
                    _, r = await fake.request(reg(b), 4)
                    _, hb = await fake.request(beat(b, r.broker_epoch), 1)  # type: ignore[attr-defined]
                    assert hb.error_code == 0  # type: ignore[attr-defined]
                async with await FrameClient.connect(e.host, e.port) as real:
                    _, r = await real.request(reg(100), 4)
                    assert r.error_code == 0  # type: ignore[attr-defined]
                    _, r = await real.request(reg(101, dirs=300), 4)  # 4.8 KB of log dirs
                    assert (r.error_code, r.broker_epoch) == (18, -1)  # type: ignore[attr-defined]
            assert sorted(e.state.registrations) == [1, 2, 3, 100]
        finally:
            await e.stop()

    asyncio.run(asyncio.wait_for(main(), 20))
