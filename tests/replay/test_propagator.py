"""MigrationPropagator's requests, per section of kafka-migration-propagator.md, with expectations
computed by hand: every frame is decoded back with ctrlbatch.requests.decode_request and its
fields are checked against the rule that produced them."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from ctrlbatch.context import MetadataVersion
from ctrlbatch.replay.image.deltas import Delta, group_deltas
from ctrlbatch.replay.image.image import EMPTY_IMAGE, MetadataImage, MetadataReplayError, apply_delta
from ctrlbatch.replay.log.records import (
    BROKER_REGISTRATION_CHANGE_RECORD,
    CONFIG_RECORD,
    FEATURE_LEVEL_RECORD,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    REMOVE_TOPIC_RECORD,
    TOPIC_RECORD,
    MetadataRecord,
)
from ctrlbatch.replay.propagate.propagator import ReplayOptions, Send, propagate_delta, propagate_image
from ctrlbatch.replay.schema.record_classes import record_class
from ctrlbatch.requests import decode_request

LAIR, SR, UMR = 4, 5, 6
UNKNOWN, INCREMENTAL, FULL = 0, 1, 2
EPOCH = 5  # the KRaft epoch of the test deltas
A_ID = uuid.UUID(int=0xA)
B_ID = uuid.UUID(int=0xB)


def rec(offset: int, type_id: int, version: int = 0, **fields: Any) -> MetadataRecord:
    cls = record_class(type_id)
    assert cls is not None
    return MetadataRecord(offset, type_id, version, cls(**fields))


def register(offset: int, broker: int, *, fenced: bool = False, zk: bool = True, epoch: int | None = None) -> MetadataRecord:
    cls = record_class(REGISTER_BROKER_RECORD)
    endpoint = cls.BrokerEndpoint(name="PLAINTEXT", host=f"b{broker}", port=9090 + broker, security_protocol=0)  # type: ignore[union-attr]
    extra = cls.BrokerEndpoint(name="INTERNAL", host=f"i{broker}", port=19090 + broker, security_protocol=0)  # type: ignore[union-attr]
    return rec(
        offset, REGISTER_BROKER_RECORD, 2, broker_id=broker, is_migrating_zk_broker=zk, incarnation_id=uuid.UUID(int=broker),
        broker_epoch=offset if epoch is None else epoch, end_points=(endpoint, extra), rack=None, fenced=fenced,
    )


def partition(offset: int, topic: uuid.UUID, p: int, replicas: list[int], *, leader: int | None = None,
              isr: list[int] | None = None, leader_epoch: int = 0, partition_epoch: int = 0) -> MetadataRecord:
    return rec(
        offset, PARTITION_RECORD, 0, partition_id=p, topic_id=topic, replicas=replicas,
        isr=replicas if isr is None else isr, leader=replicas[0] if leader is None else leader,
        leader_epoch=leader_epoch, partition_epoch=partition_epoch,
    )


def mv(offset: int, level: int = 19) -> MetadataRecord:
    return rec(offset, FEATURE_LEVEL_RECORD, 0, name="metadata.version", feature_level=level)


def base_image() -> MetadataImage:
    """Brokers 1, 2, 3 (unfenced ZK brokers); topic a: a-0 [1,2], a-1 [2,3]; topic b: b-0 [3,1]."""
    records = [
        mv(0), register(1, 1), register(2, 2), register(3, 3),
        rec(4, TOPIC_RECORD, name="a", topic_id=A_ID),
        partition(5, A_ID, 0, [1, 2], leader_epoch=3, partition_epoch=7),
        partition(6, A_ID, 1, [2, 3]),
        rec(7, TOPIC_RECORD, name="b", topic_id=B_ID),
        partition(8, B_ID, 0, [3, 1], leader_epoch=1, partition_epoch=2),
    ]
    image, _ = apply_delta(EMPTY_IMAGE, records, offset=8, epoch=EPOCH)
    return image


def delta(records: list[MetadataRecord], *, leader: int | None = 3000, epoch: int = EPOCH) -> Delta:
    return Delta(records[-1].offset if records else 99, 1_700_000_000_000, epoch, tuple(records), leader)


def decoded(sends: list[Send]) -> list[tuple[int, int, bool, Any, Any]]:
    """(broker, api key, dropped, header, body) per send, from the encoded frame."""
    out = []
    for s in sends:
        frame = s.request.encode(correlation_id=7, client_id="c")
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4
        d = decode_request(frame[4:])
        assert d.header.request_api_key == s.request.api_key
        assert d.header.request_api_version == s.request.version
        out.append((s.broker, s.request.api_key, s.dropped, d.header, d.body))
    return out


def shape(sends: list[Send]) -> list[tuple[int, int]]:
    return [(api, broker) for broker, api, _d, _h, _b in decoded(sends)]


def lair_states(body: Any) -> dict[tuple[str, int], Any]:
    return {(t.topic_name, s.partition_index): s for t in body.topic_states for s in t.partition_states}


def umr_states(body: Any) -> dict[tuple[str, int], Any]:
    return {(t.topic_name, s.partition_index): s for t in body.topic_states for s in t.partition_states}


def sr_states(body: Any) -> dict[tuple[str, int], Any]:
    return {(t.topic_name, s.partition_index): s for t in body.topic_states for s in t.partition_states}


def check_header(body: Any, image: MetadataImage, broker: int, *, controller: int = 3000, epoch: int = EPOCH) -> None:
    assert body.controller_id == controller
    assert body.controller_epoch == epoch
    assert body.is_k_raft_controller is True
    assert body.broker_epoch == image.brokers[broker].epoch


# ---------------------------------------------------------------- §5.1 what produces nothing


def test_a_config_only_delta_touches_nothing_and_sends_nothing() -> None:
    image = base_image()
    cfg = rec(20, CONFIG_RECORD, 0, resource_type=2, resource_name="a", name="retention.ms", value="1")
    new, sends = propagate_delta(image, delta([cfg]), ReplayOptions())
    assert sends == []
    assert new.offset == 20 and new.topics == image.topics


def test_an_aborted_transaction_is_an_empty_delta_and_sends_nothing() -> None:
    from ctrlbatch.replay.log.records import ABORT_TRANSACTION_RECORD, BEGIN_TRANSACTION_RECORD, LogBatch

    def batch(base: int, records: list[MetadataRecord]) -> LogBatch:
        return LogBatch(base, records[-1].offset, EPOCH, 0, False, tuple(records), (), 0, "t", base)

    deltas = list(group_deltas([
        batch(20, [rec(20, BEGIN_TRANSACTION_RECORD, 0, name="t"), rec(21, TOPIC_RECORD, name="c", topic_id=uuid.uuid4())]),
        batch(22, [rec(22, ABORT_TRANSACTION_RECORD, 0, reason="no")]),
    ]))
    assert [(d.last_offset, d.records) for d in deltas] == [(22, ())]
    image = base_image()
    new, sends = propagate_delta(image, deltas[0], ReplayOptions())
    assert sends == [] and new.topics == image.topics


# ---------------------------------------------------------------- §5.2 step 8: changed topics


def test_topic_creation_sends_leader_and_isr_to_the_replicas_and_update_metadata_to_all() -> None:
    image = base_image()
    c = uuid.UUID(int=0xC)
    records = [rec(20, TOPIC_RECORD, name="c", topic_id=c), partition(21, c, 1, [3, 2]), partition(22, c, 0, [2, 1])]
    new, sends = propagate_delta(image, delta(records), ReplayOptions())
    assert shape(sends) == [(LAIR, 1), (LAIR, 2), (LAIR, 3), (UMR, 1), (UMR, 2), (UMR, 3)]
    out = decoded(sends)
    for broker, _api, dropped, header, body in out:
        assert not dropped
        assert header.client_id == "c" and header.correlation_id == 7
        check_header(body, new, broker)
        assert body.type == INCREMENTAL
    # LeaderAndIsr: each broker gets exactly the partitions it hosts, is_new, the KRaft epoch.
    expected_hosts = {1: [("c", 0)], 2: [("c", 0), ("c", 1)], 3: [("c", 1)]}
    for broker, _api, _d, _h, body in out[:3]:
        states = lair_states(body)
        assert list(states) == expected_hosts[broker]
        assert [t.topic_id for t in body.topic_states] == [c]
        for s in states.values():
            assert s.is_new is True and s.controller_epoch == EPOCH
            assert s.leader == s.replicas[0] and s.leader_epoch == 0 and s.partition_epoch == 0
        assert [ll.broker_id for ll in body.live_leaders] == sorted({s.leader for s in states.values()})
        assert {ll.host_name for ll in body.live_leaders} <= {"b1", "b2", "b3"}  # the PLAINTEXT listener
    # UpdateMetadata: one shared body, both partitions, every broker with all its endpoints, sorted.
    bodies = [b for _br, api, _d, _h, b in out if api == UMR]
    assert len({id(s.request.shared) for s in sends if s.request.api_key == UMR}) == 1
    for body in bodies:
        assert list(umr_states(body)) == [("c", 0), ("c", 1)]
        assert [b.id for b in body.live_brokers] == [1, 2, 3]
        assert [e.listener for e in body.live_brokers[0].endpoints] == ["PLAINTEXT", "INTERNAL"]
        s = umr_states(body)[("c", 1)]
        assert (s.leader, s.isr, s.replicas, s.offline_replicas, s.zk_version) == (3, (3, 2), (3, 2), (), 0)


def test_an_isr_change_sends_is_new_leader_and_isr_to_all_replicas() -> None:
    image = base_image()
    change = rec(20, PARTITION_CHANGE_RECORD, 0, partition_id=0, topic_id=A_ID, isr=[1])
    new, sends = propagate_delta(image, delta([change]), ReplayOptions())
    assert shape(sends) == [(LAIR, 1), (LAIR, 2), (UMR, 1), (UMR, 2), (UMR, 3)]
    for _broker, api, _d, _h, body in decoded(sends):
        if api == LAIR:
            (s,) = lair_states(body).values()
            # leader epoch kept (no leader field), partition epoch + 1, is_new always true
            assert (s.leader, s.leader_epoch, s.isr, s.partition_epoch, s.is_new) == (1, 3, (1,), 8, True)
        else:
            (s,) = umr_states(body).values()
            assert (s.leader, s.leader_epoch, s.isr, s.zk_version) == (1, 3, (1,), 8)


def test_a_leader_change_bumps_the_leader_epoch() -> None:
    change = rec(20, PARTITION_CHANGE_RECORD, 0, partition_id=0, topic_id=A_ID, leader=2)
    new, sends = propagate_delta(base_image(), delta([change]), ReplayOptions())
    (s,) = lair_states(decoded(sends)[0][4]).values()
    assert (s.leader, s.leader_epoch, s.partition_epoch) == (2, 4, 8)


def test_a_completed_reassignment_stops_and_deletes_the_removed_replica() -> None:
    image = base_image()
    done = rec(20, PARTITION_CHANGE_RECORD, 0, partition_id=0, topic_id=A_ID, replicas=[2, 3], isr=[2, 3], leader=2,
               adding_replicas=[], removing_replicas=[])
    new, sends = propagate_delta(image, delta([done]), ReplayOptions())
    assert shape(sends) == [(LAIR, 2), (LAIR, 3), (UMR, 1), (UMR, 2), (UMR, 3), (SR, 1)]
    broker, _api, _d, _h, body = decoded(sends)[-1]
    assert broker == 1
    check_header(body, new, 1)
    (s,) = sr_states(body).values()
    assert (s.partition_index, s.delete_partition, s.leader_epoch) == (0, True, 4)  # the new leader epoch


def test_a_reassignment_in_progress_keeps_the_removing_replica_in_leader_and_isr() -> None:
    start = rec(20, PARTITION_CHANGE_RECORD, 0, partition_id=0, topic_id=A_ID, replicas=[2, 3, 1],
                adding_replicas=[2, 3], removing_replicas=[1])
    _new, sends = propagate_delta(base_image(), delta([start]), ReplayOptions())
    assert shape(sends) == [(LAIR, 1), (LAIR, 2), (LAIR, 3), (UMR, 1), (UMR, 2), (UMR, 3)]
    (s,) = lair_states(decoded(sends)[0][4]).values()
    assert (s.replicas, s.adding_replicas, s.removing_replicas) == ((2, 3, 1), (2, 3), (1,))


# ---------------------------------------------------------------- §5.2 step 7: deleted topics


def deletion_image() -> MetadataImage:
    """base_image plus topic d with d-0 on [3, 4]: broker 4 is not registered."""
    d = uuid.UUID(int=0xD)
    image, _ = apply_delta(
        base_image(), [rec(9, TOPIC_RECORD, name="d", topic_id=d), partition(10, d, 0, [3, 4], isr=[3])],
        offset=10, epoch=EPOCH,
    )
    return image


@pytest.mark.parametrize("correct", [False, True])
def test_a_topic_deletion_sends_stop_replica_delete_and_the_explicit_during_delete_state(correct: bool) -> None:
    image = deletion_image()
    removal = rec(20, REMOVE_TOPIC_RECORD, 0, topic_id=uuid.UUID(int=0xD))
    new, sends = propagate_delta(image, delta([removal]), ReplayOptions(correct_offline=correct, zk_controller_epoch=42))
    assert "d" not in new.topic_ids_by_name
    # No LeaderAndIsr; UpdateMetadata to the old ZK brokers; StopReplica to the registered replica 3
    # (broker 4 is not registered: the batch keeps its entry but never sends it).
    assert shape(sends) == [(UMR, 1), (UMR, 2), (UMR, 3), (SR, 3)]
    out = decoded(sends)
    for _b, _api, _d, _header, body in out:
        assert body.controller_epoch == 42  # the header's epoch is the ZK controller epoch
    s = umr_states(out[0][4])[("d", 0)]
    # LeaderAndIsr.duringDelete: leader -2, epoch 0, zkVersion 0; controller epoch = zkControllerEpoch.
    assert (s.leader, s.leader_epoch, s.zk_version, s.controller_epoch) == (-2, 0, 0, 42)
    assert (s.isr, s.replicas) == ((3,), (3, 4))
    # Kafka's quirk: the "offline" list holds the replicas that ARE registered; corrected: those that are not.
    assert s.offline_replicas == ((4,) if correct else (3,))
    assert out[0][4].type == INCREMENTAL
    assert [t.topic_id for t in out[0][4].topic_states] == [uuid.UUID(int=0)]  # no id: gone from the image
    (sr,) = sr_states(out[-1][4]).values()
    assert (sr.delete_partition, sr.leader_epoch) == (True, -2)


def test_a_topic_deleted_and_recreated_under_its_name_ends_with_the_new_topic() -> None:
    image = base_image()
    new_b = uuid.UUID(int=0xBB)
    records = [rec(20, REMOVE_TOPIC_RECORD, 0, topic_id=B_ID), rec(21, TOPIC_RECORD, name="b", topic_id=new_b),
               partition(22, new_b, 0, [2, 3], leader_epoch=0)]
    new, sends = propagate_delta(image, delta(records), ReplayOptions())
    assert new.topic_ids_by_name["b"] == new_b and B_ID not in new.topics
    assert shape(sends) == [(LAIR, 2), (LAIR, 3), (UMR, 1), (UMR, 2), (UMR, 3), (SR, 1), (SR, 3)]
    out = decoded(sends)
    s = umr_states(out[2][4])[("b", 0)]
    assert (s.leader, s.replicas) == (2, (2, 3))  # the re-created partition's state wins
    for _b, _api, _d, _h, body in out[-2:]:
        (sr,) = sr_states(body).values()
        assert (sr.delete_partition, sr.leader_epoch) == (True, 0)  # the new partition's epoch


# ---------------------------------------------------------------- §5.2 steps 3 and 5: brokers


def fenced_three() -> MetadataImage:
    fence = rec(9, BROKER_REGISTRATION_CHANGE_RECORD, 0, broker_id=3, broker_epoch=3, fenced=1)
    image, _ = apply_delta(base_image(), [fence], offset=9, epoch=EPOCH)
    return image


def test_a_fenced_broker_is_addressed_but_its_requests_are_dropped() -> None:
    image = fenced_three()
    change = rec(20, PARTITION_CHANGE_RECORD, 0, partition_id=1, topic_id=A_ID, isr=[2])
    _new, sends = propagate_delta(image, delta([change]), ReplayOptions())
    assert [(s.request.api_key, s.broker, s.dropped) for s in sends] == [
        (LAIR, 2, False), (LAIR, 3, True), (UMR, 1, False), (UMR, 2, False), (UMR, 3, True)
    ]
    # a fenced broker still counts as online (registered) for the offline list
    s = umr_states(decoded(sends)[2][4])[("a", 1)]
    assert s.offline_replicas == ()


def test_a_broker_unfence_sends_batch_a_everything_then_leader_and_isr_for_what_it_hosts() -> None:
    image = fenced_three()
    unfence = rec(20, BROKER_REGISTRATION_CHANGE_RECORD, 0, broker_id=3, broker_epoch=3, fenced=-1)
    new, sends = propagate_delta(image, delta([unfence]), ReplayOptions())
    assert shape(sends) == [(UMR, 1), (UMR, 2), (UMR, 3), (LAIR, 3), (UMR, 1), (UMR, 2), (UMR, 3)]
    out = decoded(sends)
    everything = [("a", 0), ("a", 1), ("b", 0)]
    for _b, _api, _d, _h, body in out[:3]:  # batch A, UNKNOWN, every partition
        assert body.type == UNKNOWN and list(umr_states(body)) == everything
    lair = out[3][4]
    assert lair.type == INCREMENTAL
    assert list(lair_states(lair)) == [("a", 1), ("b", 0)]  # the partitions broker 3 hosts
    assert all(s.is_new for s in lair_states(lair).values())
    for _b, _api, _d, _h, body in out[4:]:
        assert body.type == INCREMENTAL and list(umr_states(body)) == [("a", 1), ("b", 0)]


def test_a_controlled_shutdown_flag_on_an_unfenced_broker_makes_it_a_changed_zk_broker() -> None:
    """MP:122-125: changedZkBrokers keeps every changed registration that is unfenced, so the
    in-controlled-shutdown flip of an unfenced broker takes the changed-broker path (the
    reference's §5.3 summary says "UpdateMetadata only"; the code, followed here, does more)."""
    shutdown = rec(20, BROKER_REGISTRATION_CHANGE_RECORD, 1, broker_id=2, broker_epoch=2, in_controlled_shutdown=1)
    new, sends = propagate_delta(base_image(), delta([shutdown]), ReplayOptions())
    assert new.brokers[2].in_controlled_shutdown
    assert shape(sends) == [(UMR, 1), (UMR, 2), (UMR, 3), (LAIR, 2), (UMR, 1), (UMR, 2), (UMR, 3)]


def test_a_controlled_shutdown_of_a_non_target_broker_sends_update_metadata_only() -> None:
    """With --targets migrating and broker 2 a KRaft broker: brokersChanged only, so the old ZK
    brokers get an UpdateMetadata with the new broker list and no partitions."""
    records = [register(2, 2, zk=False)]
    image, _ = apply_delta(base_image(), records, offset=9, epoch=EPOCH)
    shutdown = rec(20, BROKER_REGISTRATION_CHANGE_RECORD, 1, broker_id=2, broker_epoch=2, in_controlled_shutdown=1)
    _new, sends = propagate_delta(image, delta([shutdown]), ReplayOptions(targets="migrating"))
    assert [(s.request.api_key, s.broker, s.dropped) for s in sends] == [(UMR, 1, False), (UMR, 3, False)]
    for _b, _api, _d, _h, body in decoded(sends):
        assert body.type == UNKNOWN and body.topic_states == () and [b.id for b in body.live_brokers] == [1, 2, 3]


def test_a_no_op_registration_change_sends_nothing() -> None:
    same = rec(20, BROKER_REGISTRATION_CHANGE_RECORD, 0, broker_id=2, broker_epoch=2, fenced=0)
    _new, sends = propagate_delta(base_image(), delta([same]), ReplayOptions())
    assert sends == []


# ---------------------------------------------------------------- §6 the image path


def test_a_snapshot_image_sends_everything_then_a_full_batch_and_no_stop_replica() -> None:
    image = base_image()
    sends = propagate_image(image, ReplayOptions(), offset=8, epoch=EPOCH, leader_id=3000)
    assert shape(sends) == [(UMR, 1), (UMR, 2), (UMR, 3), (LAIR, 1), (LAIR, 2), (LAIR, 3), (UMR, 1), (UMR, 2), (UMR, 3)]
    out = decoded(sends)
    for _b, _api, _d, _h, body in out[:3]:
        assert body.type == UNKNOWN and list(umr_states(body)) == [("a", 0), ("a", 1), ("b", 0)]
    hosts = {1: [("a", 0), ("b", 0)], 2: [("a", 0), ("a", 1)], 3: [("a", 1), ("b", 0)]}
    for broker, _api, _d, _h, body in out[3:6]:
        assert body.type == FULL and list(lair_states(body)) == hosts[broker]
    for _b, _api, _d, _h, body in out[6:]:
        assert body.type == FULL and len(umr_states(body)) == 3


def test_the_image_path_addresses_fenced_zk_brokers_in_batch_a() -> None:
    sends = propagate_image(fenced_three(), ReplayOptions(), leader_id=None)
    assert [(s.request.api_key, s.broker, s.dropped) for s in sends][:3] == [(UMR, 1, False), (UMR, 2, False), (UMR, 3, True)]
    assert decoded(sends)[0][4].controller_id == 1  # no leader known: options.controller_id


# ---------------------------------------------------------------- §7 epochs, ids and versions


def test_versions_follow_the_image_metadata_version_or_the_forced_ibp() -> None:
    done = rec(20, PARTITION_CHANGE_RECORD, 0, partition_id=0, topic_id=A_ID, replicas=[2, 3], isr=[2, 3])
    _new, sends = propagate_delta(base_image(), delta([done]), ReplayOptions())
    assert {(s.request.api_key, s.request.version) for s in sends} == {(LAIR, 7), (UMR, 8), (SR, 4)}
    _new, sends = propagate_delta(base_image(), delta([done]), ReplayOptions(ibp=MetadataVersion.IBP_2_8_IV1))
    assert {(s.request.api_key, s.request.version) for s in sends} == {(LAIR, 5), (UMR, 7), (SR, 3)}
    for _b, api, _d, _h, body in decoded(sends):
        if api == LAIR:
            assert body.type == INCREMENTAL  # LeaderAndIsr has Type from v5
        if api == UMR:
            assert body.type == UNKNOWN  # the builder forces UNKNOWN below v8


def test_an_image_without_a_metadata_version_uses_3_0_iv1() -> None:
    records = [register(1, 1), rec(2, TOPIC_RECORD, name="a", topic_id=A_ID), partition(3, A_ID, 0, [1])]
    image, _ = apply_delta(EMPTY_IMAGE, records[:1], offset=1, epoch=1)
    assert image.metadata_version is MetadataVersion.IBP_3_0_IV1
    _new, sends = propagate_delta(image, delta(records[1:]), ReplayOptions())
    assert {(s.request.api_key, s.request.version) for s in sends} == {(LAIR, 5), (UMR, 7)}


def test_controller_id_is_the_kraft_leader_else_the_option_and_the_epoch_the_delta_epoch() -> None:
    change = rec(20, PARTITION_CHANGE_RECORD, 0, partition_id=0, topic_id=A_ID, isr=[1])
    _n, sends = propagate_delta(base_image(), delta([change], leader=None, epoch=9), ReplayOptions(controller_id=77))
    for _b, api, _d, _h, body in decoded(sends):
        assert body.controller_id == 77 and body.controller_epoch == 9
        for s in (lair_states(body) if api == LAIR else umr_states(body)).values():
            assert s.controller_epoch == 9


def test_a_record_kafka_would_refuse_is_an_error_naming_its_offset() -> None:
    bad = rec(31, PARTITION_CHANGE_RECORD, 0, partition_id=5, topic_id=A_ID, isr=[1])
    with pytest.raises(MetadataReplayError, match=r"offset 31 \(PARTITION_CHANGE_RECORD v0\): partition 5"):
        propagate_delta(base_image(), delta([bad]), ReplayOptions())
    stale = rec(32, BROKER_REGISTRATION_CHANGE_RECORD, 0, broker_id=2, broker_epoch=99, fenced=1)
    with pytest.raises(MetadataReplayError, match="given epoch, 99, did not match the current broker epoch, 2"):
        propagate_delta(base_image(), delta([stale]), ReplayOptions())


def test_options_are_checked_by_name() -> None:
    with pytest.raises(ValueError, match="targets"):
        ReplayOptions(targets="zk")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="controller_id"):
        ReplayOptions(controller_id="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ibp"):
        ReplayOptions(ibp="3.9")  # type: ignore[arg-type]
