"""ControllerState, sans I/O: kafka-broker-registration.md's checks, epochs and fencing.

Golden cases after ClusterControlManagerTest (cluster id, features, incarnations, migrating
broker listener) and BrokerHeartbeatManagerTest (session validity, the state table).
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.context import MetadataVersion
from ctrlbatch.requests import BrokerHeartbeatRequest, BrokerRegistrationRequest, Feature, Listener
from ctrlbatch.sim.controller_state import ControllerConfig, ControllerState, ControlState, EventKind

INC_A, INC_B = uuid.UUID(int=0xA << 70), uuid.UUID(int=0xB << 70)
DIR_1, DIR_2 = uuid.UUID(int=(1 << 64) | 500), uuid.UUID(int=(2 << 64) | 500)
MV = MetadataVersion.IBP_3_9_IV0


def reg(
    broker_id: int = 1,
    incarnation: uuid.UUID = INC_A,
    *,
    cluster: str = "c1",
    migrating: bool = False,
    listener: str = "PLAINTEXT",
    protocol: int = 0,
    dirs: tuple[uuid.UUID, ...] | None = None,
    mv_range: tuple[int, int] | None = (MV.feature_level, MV.feature_level),
    extra: tuple[Feature, ...] = (),
) -> BrokerRegistrationRequest:
    features = (() if mv_range is None else (Feature(name="metadata.version", min_supported_version=mv_range[0],
                                                      max_supported_version=mv_range[1]),)) + extra
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=cluster, incarnation_id=incarnation,
        listeners=[Listener(name=listener, host="127.0.0.1", port=9092 + broker_id, security_protocol=protocol)],
        features=features, rack=None, is_migrating_zk_broker=migrating,
        log_dirs=(uuid.UUID(int=(broker_id << 64) | 777),) if dirs is None else dirs,
    )


def hb(broker_id: int, epoch: int, offset: int = 1000, *, fence: bool = False, shut: bool = False) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=offset,
                                  want_fence=fence, want_shut_down=shut)


def ctl(**kw) -> ControllerState:  # type: ignore[no-untyped-def]
    kw.setdefault("cluster_id", "c1")
    leads = kw.pop("leads", None)
    return ControllerState(ControllerConfig(**kw), leads_partitions=leads)


def test_first_registration_gets_the_record_offset_as_epoch() -> None:
    c = ctl()
    r1, ev1 = c.register(reg(1), 0)
    r2, _ = c.register(reg(2), 0)
    assert (r1.error_code, r1.broker_epoch, r2.broker_epoch) == (0, 1, 2)
    assert ev1[0].kind == EventKind.JOINED and c.registrations[1].state == ControlState.FENCED


def test_wrong_cluster_id() -> None:
    r, ev = ctl().register(reg(cluster="other"), 0)
    assert (r.error_code, r.broker_epoch, ev) == (104, -1, [])


def test_duplicate_incarnation_with_a_live_session_then_expired() -> None:
    c = ctl(session_timeout_ms=1000)
    e = c.register(reg(1, INC_A), 0)[0].broker_epoch
    c.heartbeat(hb(1, e), 0)  # unfenced
    assert c.registrations[1].state == ControlState.UNFENCED
    assert c.register(reg(1, INC_B), 500)[0].error_code == 101
    r, ev = c.register(reg(1, INC_B), 1001)  # session expired, even before the fencing task ran
    assert r.error_code == 0 and r.broker_epoch > e and ev[0].kind == EventKind.BOUNCED


def test_same_incarnation_keeps_epoch_and_flags_but_moves_the_record_offset() -> None:
    c = ctl()
    e = c.register(reg(1), 0)[0].broker_epoch
    c.heartbeat(hb(1, e), 0)
    old_offset = c.registrations[1].record_offset
    r, ev = c.register(reg(1), 10)
    assert r.broker_epoch == e and ev[0].kind == EventKind.UPDATED
    assert c.registrations[1].state == ControlState.UNFENCED and c.registrations[1].record_offset > old_offset


@pytest.mark.parametrize(("migration", "mv", "code"), [
    (False, MV, 102), (True, MetadataVersion.IBP_3_3_IV3, 102), (True, MV, 0),
])
def test_migrating_zk_broker_needs_migration(migration: bool, mv: MetadataVersion, code: int) -> None:
    c = ctl(migration_enabled=migration, metadata_version=mv)
    r, _ = c.register(reg(migrating=True, mv_range=(mv.feature_level, mv.feature_level)), 0)
    assert r.error_code == code


def test_kraft_broker_during_pre_migration() -> None:
    assert ctl(migration_enabled=True, pre_migration=True).register(reg(), 0)[0].error_code == 102


def test_migrating_broker_without_the_inter_broker_listener() -> None:
    r, _ = ctl(migration_enabled=True).register(reg(migrating=True, listener="INTERNAL"), 0)
    assert r.error_code == 119


@pytest.mark.parametrize("dirs", [(), (uuid.UUID(int=5),), (DIR_1, DIR_1)])
def test_bad_log_dirs(dirs: tuple[uuid.UUID, ...]) -> None:
    assert ctl().register(reg(dirs=dirs), 0)[0].error_code == 119


def test_log_dir_owned_by_another_broker_and_old_versions_skip_the_check() -> None:
    c = ctl()
    c.register(reg(1, dirs=(DIR_1,)), 0)
    assert c.register(reg(2, dirs=(DIR_1,)), 0)[0].error_code == 119
    mv = MetadataVersion.IBP_3_6_IV2
    assert ctl(metadata_version=mv).register(reg(dirs=(), mv_range=(1, mv.feature_level)), 0)[0].error_code == 0


def test_unknown_security_protocol_is_unknown_server_error() -> None:
    assert ctl().register(reg(protocol=9), 0)[0].error_code == -1


@pytest.mark.parametrize(("mv_range", "extra", "code"), [
    ((1, 20), (), 35),
    ((22, 23), (), 35),
    (None, (), 35),
    ((1, 21), (), 0),
    ((1, 21), (Feature(name="unknown.feature", min_supported_version=0, max_supported_version=3),), 0),
])
def test_feature_checks(mv_range: tuple[int, int] | None, extra: tuple[Feature, ...], code: int) -> None:
    assert ctl().register(reg(mv_range=mv_range, extra=extra), 0)[0].error_code == code


def test_finalized_feature_the_broker_does_not_list() -> None:
    c = ctl(finalized_features=(("group.version", 1),))
    assert c.register(reg(), 0)[0].error_code == 35
    ok = reg(extra=(Feature(name="group.version", min_supported_version=0, max_supported_version=1),))
    assert c.register(ok, 0)[0].error_code == 0


def test_metadata_version_1_accepts_a_broker_without_the_feature() -> None:
    mv = MetadataVersion.IBP_3_0_IV1
    assert ctl(metadata_version=mv).register(reg(mv_range=None, dirs=()), 0)[0].error_code == 0


def test_heartbeat_epoch_must_be_exact() -> None:
    c = ctl()
    e = c.register(reg(1), 0)[0].broker_epoch
    assert c.heartbeat(hb(1, e + 1), 0)[0].error_code == 77
    assert c.heartbeat(hb(1, e - 1), 0)[0].error_code == 77
    assert c.heartbeat(hb(9, e), 0)[0].error_code == 77
    r = c.heartbeat(hb(9, e), 0)[0]
    assert (r.is_fenced, r.is_caught_up, r.should_shut_down) == (True, False, False)  # defaults on error


def test_unfence_needs_the_registration_offset() -> None:
    c = ctl()
    e = c.register(reg(1), 0)[0].broker_epoch
    r, ev = c.heartbeat(hb(1, e, offset=e - 1), 0)
    assert (r.is_caught_up, r.is_fenced, ev) == (False, True, [])
    r, ev = c.heartbeat(hb(1, e, offset=e), 0)
    assert (r.is_caught_up, r.is_fenced) == (True, False) and ev[0].kind == EventKind.UNFENCED


def test_state_table() -> None:
    leading = {1}
    c = ctl(leads=lambda b: b in leading)
    e = c.register(reg(1), 0)[0].broker_epoch
    c.register(reg(2), 0)
    c.heartbeat(hb(1, e), 0)
    c.heartbeat(hb(2, 2, offset=2000), 0)
    r, ev = c.heartbeat(hb(1, e, shut=True), 0)
    assert c.registrations[1].state == ControlState.CONTROLLED_SHUTDOWN and not r.is_fenced and not r.should_shut_down
    leading.clear()
    r, ev = c.heartbeat(hb(1, e, shut=True), 0)  # broker 2 reported 2000 >= the shutdown offset
    assert r.should_shut_down and r.is_fenced and ev[0].kind == EventKind.SHUTDOWN_NOW
    r, ev = c.heartbeat(hb(2, 2, fence=True), 0)
    assert r.is_fenced and ev[0].kind == EventKind.FENCED
    r, _ = c.heartbeat(hb(2, 2, shut=True), 0)
    assert r.should_shut_down


def test_session_expiry_fences_oldest_first() -> None:
    c = ctl(session_timeout_ms=100)
    for b in (1, 2, 3):
        c.register(reg(b), 0)
    c.heartbeat(hb(2, 2), 10)
    c.heartbeat(hb(1, 1), 20)
    c.heartbeat(hb(3, 3), 500)
    assert c.next_expiry_ms() == 110
    ev = c.fence_stale_brokers(200)
    assert [(e.kind, e.broker_id) for e in ev] == [(EventKind.FENCED, 2), (EventKind.FENCED, 1)]
    assert c.fence_stale_brokers(200) == []


def test_authorization_and_not_controller() -> None:
    c = ctl()
    c.deny_cluster_action = True
    assert c.register(reg(), 0)[0].error_code == 31
    assert c.heartbeat(hb(1, 1), 0)[0].error_code == 31
    c.deny_cluster_action, c.active = False, False
    assert c.register(reg(), 0)[0].error_code == 41


# ---------------------------------------------------------------- properties over random histories


_OPS = st.one_of(
    st.tuples(st.just("register"), st.integers(0, 2), st.integers(0, 2)),
    st.tuples(st.just("heartbeat"), st.integers(0, 2), st.sampled_from([0, -1, 1]), st.booleans(), st.booleans(),
              st.sampled_from([0, 1000])),
    st.tuples(st.just("wait"), st.integers(0, 300)),
    st.tuples(st.just("fence"),),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_OPS, max_size=30))
def test_registration_and_heartbeat_properties(ops: list[tuple]) -> None:  # type: ignore[type-arg]
    c = ctl(session_timeout_ms=200)
    now, epochs_seen, incarnations = 0, [0], {}
    for op in ops:
        before_offset = c.next_offset
        if op[0] == "register":
            _, b, inc = op
            existing = c.registrations.get(b)
            valid = existing is not None and existing.session_valid(now, 200)
            r, ev = c.register(reg(b, uuid.UUID(int=inc + 1)), now)
            if valid and existing.incarnation_id != uuid.UUID(int=inc + 1):
                assert r.error_code == 101 and c.next_offset == before_offset
                continue
            assert r.error_code == 0 and c.next_offset == before_offset + 1
            if incarnations.get(b) == inc:
                assert r.broker_epoch == existing.epoch and ev[0].kind == EventKind.UPDATED
            else:
                assert r.broker_epoch > max(epochs_seen)  # a new incarnation: a newer epoch than any before
                epochs_seen.append(r.broker_epoch)
            incarnations[b] = inc
        elif op[0] == "heartbeat":
            _, b, delta, fence, shut, offset = op
            registered = c.registrations.get(b)
            epoch = (registered.epoch if registered else 1) + delta
            h, ev = c.heartbeat(hb(b, epoch, offset, fence=fence, shut=shut), now)
            if registered is None or delta != 0:
                assert h.error_code == 77 and ev == [] and c.next_offset == before_offset
                continue
            assert h.error_code == 0
            assert h.is_fenced == c.registrations[b].state.fenced
            assert h.should_shut_down == (c.registrations[b].state == ControlState.SHUTDOWN_NOW)
            assert h.is_caught_up == (offset >= registered.record_offset)
            assert c.next_offset == before_offset + len(ev)  # one record per state change
        elif op[0] == "wait":
            now += op[1]
        else:
            ev = c.fence_stale_brokers(now)
            assert all(e.kind == EventKind.FENCED for e in ev)
            assert all(r.state.fenced or r.session_valid(now, 200) for r in c.registrations.values())


# ---------------------------------------------------------------- heartbeat deadline, failover (review)


def test_a_heartbeat_past_its_deadline_is_request_timed_out_and_only_touches_the_broker() -> None:
    """QC:2241-2246, RCM:1581-1589: deadline = heartbeat interval / 2; the broker's contact and
    offset are refreshed, its state is not changed (a fenced, caught-up broker stays fenced)."""
    c = ctl(heartbeat_interval_ms=2000, session_timeout_ms=9000)
    e = c.register(reg(1), 0)[0].broker_epoch
    r, ev = c.heartbeat(hb(1, e), 5000, received_ms=3999)  # waited 1001 ms
    assert (r.error_code, r.is_fenced, r.is_caught_up, ev) == (7, True, False, [])
    entry = c.registrations[1]
    assert (entry.state, entry.last_contact_ms, entry.metadata_offset) == (ControlState.FENCED, 5000, 1000)
    r, ev = c.heartbeat(hb(1, e), 5000, received_ms=4000)  # waited exactly the deadline: handled
    assert r.error_code == 0 and [x.kind for x in ev] == [EventKind.UNFENCED]


def test_a_late_heartbeat_with_a_stale_epoch_touches_nothing() -> None:
    c = ctl(heartbeat_interval_ms=200)
    e = c.register(reg(1), 0)[0].broker_epoch
    assert c.heartbeat(hb(1, e + 1), 500, received_ms=0)[0].error_code == 7
    assert c.registrations[1].last_contact_ms == 0


def test_unknown_server_error_makes_the_controller_renounce_and_restart_its_sessions() -> None:
    """QC:551-553: -1 (an unknown security protocol) renounces; the re-elected controller registers
    every broker with last contact = now (ClusterCM:322-327), so nobody is fenced before a full session."""
    c = ctl(session_timeout_ms=1000)
    e = c.register(reg(1), 0)[0].broker_epoch
    c.heartbeat(hb(1, e), 0)
    assert c.registrations[1].state == ControlState.UNFENCED
    epoch = c.leader_epoch
    assert c.register(reg(2, protocol=9), 900)[0].error_code == -1
    assert c.leader_epoch == epoch + 1 and 2 not in c.registrations
    assert c.registrations[1].last_contact_ms == 900 and c.registrations[1].metadata_offset == -1
    assert c.fence_stale_brokers(1500) == []  # 0 + 1000 would have expired
    assert [x.kind for x in c.fence_stale_brokers(1901)] == [EventKind.FENCED]


def test_a_rejected_registration_of_another_kind_does_not_renounce() -> None:
    c = ctl()
    assert c.register(reg(cluster="other"), 0)[0].error_code == 104
    assert c.leader_epoch == 1


def test_heartbeat_interval_is_checked() -> None:
    with pytest.raises(ValueError, match="heartbeat_interval_ms"):
        ControllerConfig(cluster_id="c1", heartbeat_interval_ms=0)


# ---------------------------------------------------------------- bounds and O(1) bookkeeping (issue 15)


def test_max_brokers_refuses_a_new_id_with_policy_violation_after_every_kafka_check() -> None:
    c = ctl(max_brokers=2, session_timeout_ms=100)
    c.register(reg(1), 0)
    c.register(reg(2), 0)
    offset = c.next_offset
    assert c.register(reg(3), 50)[0].error_code == 44  # 1 and 2 were in contact within a session
    assert c.register(reg(3, cluster="other"), 50)[0].error_code == 104  # Kafka's checks come first
    assert c.next_offset == offset and sorted(c.registrations) == [1, 2]
    assert c.register(reg(2), 50)[0].error_code == 0  # a known id is no new registration


def test_at_max_brokers_a_stale_fenced_registration_is_forgotten_for_a_new_id() -> None:
    c = ctl(max_brokers=2, session_timeout_ms=100)
    e1 = c.register(reg(1), 0)[0].broker_epoch
    c.register(reg(2), 0)
    c.heartbeat(hb(1, e1), 50)  # broker 1 unfenced: never forgotten while unfenced
    c.heartbeat(hb(1, e1), 150)
    r, ev = c.register(reg(3), 150)  # broker 2: fenced, no contact since 0 (+100 < 150)
    assert r.error_code == 0 and [(x.kind, x.broker_id) for x in ev] == [(EventKind.FORGOTTEN, 2), (EventKind.JOINED, 3)]
    assert sorted(c.registrations) == [1, 3]
    assert c.heartbeat(hb(2, 2), 160)[0].error_code == 77
    assert uuid.UUID(int=(2 << 64) | 777) not in c._dir_owner  # its log dir is free again
    assert c.register(reg(4), 160)[0].error_code == 44  # broker 3 is fenced but was in contact at 150


def test_a_broker_fenced_by_session_expiry_is_evictable_before_a_fresher_fenced_one() -> None:
    c = ctl(max_brokers=2, session_timeout_ms=100)
    e1 = c.register(reg(1), 0)[0].broker_epoch
    c.heartbeat(hb(1, e1), 0)  # unfenced, last contact 0
    c.register(reg(2), 50)  # fenced, last contact 50
    assert [x.broker_id for x in c.fence_stale_brokers(120)] == [1]  # fenced at 120, out of contact since 0
    r, ev = c.register(reg(3), 140)  # broker 1 is stale (0 + 100 < 140), broker 2 is not (50 + 100 >= 140)
    assert r.error_code == 0 and (ev[0].kind, ev[0].broker_id) == (EventKind.FORGOTTEN, 1)


def test_a_log_dir_is_released_when_its_broker_registers_other_dirs() -> None:
    c = ctl()
    c.register(reg(1, dirs=(DIR_1,)), 0)
    assert c.register(reg(2, dirs=(DIR_1,)), 0)[0].error_code == 119
    c.register(reg(1, dirs=(DIR_2,)), 0)  # same incarnation, another dir
    assert c.register(reg(2, dirs=(DIR_1,)), 0)[0].error_code == 0


def test_max_brokers_is_checked() -> None:
    with pytest.raises(ValueError, match="max_brokers must be >= 1"):
        ControllerConfig(cluster_id="c1", max_brokers=0)


@settings(max_examples=300, deadline=None)
@given(st.lists(_OPS, max_size=40), st.integers(1, 3))
def test_session_queues_and_bounds_match_a_full_scan(ops: list[tuple], max_brokers: int) -> None:  # type: ignore[type-arg]
    """After any history: at most max_brokers registrations; next_expiry_ms and the brokers fenced
    are what scanning every registration gives; log dirs are owned by their registrations only."""
    c = ctl(session_timeout_ms=200, max_brokers=max_brokers)
    now = 0
    for op in ops:
        if op[0] == "register":
            before = dict(c.registrations)
            r, ev = c.register(reg(op[1], uuid.UUID(int=op[2] + 1)), now)
            if r.error_code == 44:  # only when no fenced registration has been out of contact for a session
                assert op[1] not in before and len(before) == max_brokers
                assert all(not x.state.fenced or x.last_contact_ms + 200 >= now for x in before.values())
            forgotten = [x.broker_id for x in ev if x.kind == EventKind.FORGOTTEN]
            assert all(before[b].state.fenced and before[b].last_contact_ms + 200 < now for b in forgotten)
        elif op[0] == "heartbeat":
            _, b, delta, fence, shut, offset = op
            registered = c.registrations.get(b)
            c.heartbeat(hb(b, (registered.epoch if registered else 1) + delta, offset, fence=fence, shut=shut), now)
        elif op[0] == "wait":
            now += op[1]
        else:
            stale = sorted((r.last_contact_ms, r.broker_id) for r in c.registrations.values()
                           if not r.state.fenced and r.last_contact_ms + 200 < now)
            ev = c.fence_stale_brokers(now)
            assert [e.broker_id for e in ev] == [b for _, b in stale]
        assert len(c.registrations) <= max_brokers
        unfenced = [r.last_contact_ms + 200 for r in c.registrations.values() if not r.state.fenced]
        assert c.next_expiry_ms() == (min(unfenced) if unfenced else None)
        owners = {d: r.broker_id for r in c.registrations.values() for d in r.log_dirs}
        assert c._dir_owner == owners
