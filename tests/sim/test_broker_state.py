"""BrokerState, sans I/O: kafka-broker-control-requests.md's rules as golden cases.

The cases follow Kafka's own tests named in §7 (KafkaApisTest broker-epoch matrix,
ReplicaManagerTest StopReplica matrix and topic-id cases, MetadataCacheTest FULL updates).
Every response also round-trips through its codec at the request's version.
"""

from __future__ import annotations

import uuid

import attrs
import pytest

from ctrlbatch.context import TopicPartition
from ctrlbatch.requests import (
    ZERO_UUID,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
    StopReplicaPartitionState,
    StopReplicaPartitionV0,
    StopReplicaRequest,
    StopReplicaTopicState,
    StopReplicaTopicV1,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)
from ctrlbatch.sim.broker_state import BrokerState
from ctrlbatch.sim.errors import Errors

BROKER, EPOCH = 1, 100
FOO_ID = uuid.UUID(int=0xF00)
BAR_ID = uuid.UUID(int=0xBA2)


def handled(state: BrokerState, key: int, version: int, req):  # type: ignore[no-untyped-def]
    resp = state.handle(key, version, req)
    again = type(resp).decode(resp.encode(version), version)
    assert again == resp or version < 5  # fields of other versions fall back to defaults
    return again


def lair(
    *parts: tuple[str, int, int, int],
    version: int = 7,
    controller_epoch: int = 5,
    broker_epoch: int = EPOCH,
    ids: dict[str, uuid.UUID] | None = None,
    replicas: tuple[int, ...] = (1, 2),
    kraft: bool = False,
    type_: int = 0,
) -> LeaderAndIsrRequest:
    """parts: (topic, partition, leader, leader_epoch)."""
    ids = {"foo": FOO_ID, "bar": BAR_ID} if ids is None else ids
    topics: dict[str, list[LeaderAndIsrPartitionState]] = {}
    for topic, p, leader, le in parts:
        topics.setdefault(topic, []).append(LeaderAndIsrPartitionState(
            partition_index=p, controller_epoch=controller_epoch, leader=leader, leader_epoch=le, isr=replicas,
            partition_epoch=3, replicas=replicas))
    return LeaderAndIsrRequest(
        controller_id=0, is_k_raft_controller=kraft, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
        type=type_, topic_states=[LeaderAndIsrTopicState(topic_name=t, topic_id=ids.get(t, ZERO_UUID), partition_states=ps)
                                  for t, ps in topics.items()])


def lair_codes(resp) -> dict[tuple[uuid.UUID, int], int]:  # type: ignore[no-untyped-def]
    return {(t.topic_id, e.partition_index): e.error_code for t in resp.topics for e in t.partition_errors}


def broker(b: int, port: int = 9092) -> UpdateMetadataBroker:
    return UpdateMetadataBroker(id=b, endpoints=[UpdateMetadataEndpoint(port=port + b, host="localhost", listener="PLAINTEXT",
                                                                        security_protocol=0)], rack=None)


def umr(
    *parts: tuple[str, int, int],
    brokers: tuple[int, ...] = (1, 2),
    controller_epoch: int = 5,
    broker_epoch: int = EPOCH,
    ids: dict[str, uuid.UUID] | None = None,
    kraft: bool = False,
    type_: int = 0,
) -> UpdateMetadataRequest:
    """parts: (topic, partition, leader)."""
    ids = {"foo": FOO_ID, "bar": BAR_ID} if ids is None else ids
    topics: dict[str, list[UpdateMetadataPartitionState]] = {}
    for topic, p, leader in parts:
        topics.setdefault(topic, []).append(UpdateMetadataPartitionState(
            partition_index=p, controller_epoch=controller_epoch, leader=leader, leader_epoch=1, isr=(1, 2),
            zk_version=1, replicas=(1, 2)))
    return UpdateMetadataRequest(
        controller_id=0, is_k_raft_controller=kraft, type=type_, controller_epoch=controller_epoch,
        broker_epoch=broker_epoch, live_brokers=[broker(b) for b in brokers],
        topic_states=[UpdateMetadataTopicState(topic_name=t, topic_id=ids.get(t, ZERO_UUID), partition_states=ps)
                      for t, ps in topics.items()])


def stop(*parts: tuple[str, int, int, bool], controller_epoch: int = 5, broker_epoch: int = EPOCH) -> StopReplicaRequest:
    """parts: (topic, partition, leader_epoch, delete) at v3+."""
    topics: dict[str, list[StopReplicaPartitionState]] = {}
    for topic, p, le, delete in parts:
        topics.setdefault(topic, []).append(StopReplicaPartitionState(partition_index=p, leader_epoch=le, delete_partition=delete))
    return StopReplicaRequest(controller_id=0, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
                              topic_states=[StopReplicaTopicState(topic_name=t, partition_states=ps) for t, ps in topics.items()])


@pytest.fixture
def state() -> BrokerState:
    return BrokerState(BROKER, EPOCH)


# ---------------------------------------------------------------- broker epoch (§1.4, KafkaApisTest)


@pytest.mark.parametrize(("offset", "stale"), [(0, False), (1, False), (-1, True)])
def test_broker_epoch_matrix_for_all_three(state: BrokerState, offset: int, stale: bool) -> None:
    epoch = EPOCH + offset
    r = handled(state, 6, 8, umr(("foo", 0, 2), broker_epoch=epoch))
    assert r.error_code == (77 if stale else 0)
    r = handled(state, 4, 7, lair(("foo", 0, 1, 1), broker_epoch=epoch))
    assert r.error_code == (77 if stale else 0)
    assert set(lair_codes(r).values()) == {77 if stale else 0}
    r = handled(state, 5, 4, stop(("foo", 0, 1, False), broker_epoch=epoch))
    assert r.error_code == (77 if stale else 0)
    assert len(r.partition_errors) == (0 if stale else 1)


def test_unknown_broker_epoch_is_never_stale(state: BrokerState) -> None:
    assert handled(state, 6, 8, umr(broker_epoch=-1)).error_code == 0
    # versions without the field decode it as -1
    old = UpdateMetadataRequest(controller_id=0, controller_epoch=5, ungrouped_partition_states=[], live_brokers=[broker(1)])
    assert handled(state, 6, 4, old).error_code == 0


def test_stale_broker_epoch_changes_nothing(state: BrokerState) -> None:
    handled(state, 4, 7, lair(("foo", 0, 1, 1), broker_epoch=EPOCH - 1))
    assert state.partitions == {} and state.controller_epoch == 0


def test_kraft_controller_epoch_without_lifecycle_manager_is_unknown_server_error(state: BrokerState) -> None:
    r = handled(state, 4, 7, lair(("foo", 0, 1, 1), kraft=True))
    assert r.error_code == -1 and set(lair_codes(r).values()) == {-1}
    assert handled(state, 6, 8, umr(kraft=True)).error_code == -1
    r = handled(state, 5, 4, StopReplicaRequest(controller_id=0, is_k_raft_controller=True, controller_epoch=5, broker_epoch=9,
                                                 topic_states=[StopReplicaTopicState(topic_name="foo", partition_states=[
                                                     StopReplicaPartitionState(partition_index=0)])]))
    assert r.error_code == -1 and [e.error_code for e in r.partition_errors] == [-1]


def test_kraft_controller_epoch_compares_with_registration_epoch() -> None:
    s = BrokerState(BROKER, EPOCH, migration_enabled=True, kraft_broker_epoch=7)
    assert handled(s, 6, 8, umr(kraft=True, broker_epoch=6)).error_code == 77
    assert handled(s, 6, 8, umr(kraft=True, broker_epoch=7)).error_code == 0
    # the ZooKeeper epoch (100) is not what a KRaft controller's request is compared with
    assert handled(s, 6, 8, umr(kraft=True, broker_epoch=50)).error_code == 0


def test_cluster_authorization_denied(state: BrokerState) -> None:
    state.deny_cluster_action = True
    r = handled(state, 4, 7, lair(("foo", 0, 1, 1), ("bar", 1, 2, 1)))
    assert r.error_code == 31 and set(lair_codes(r).values()) == {31} and len(lair_codes(r)) == 2
    r = handled(state, 5, 4, stop(("foo", 0, 1, False)))
    assert r.error_code == 31 and [e.error_code for e in r.partition_errors] == [31]
    assert handled(state, 6, 8, umr()).error_code == 31


# ---------------------------------------------------------------- controller epoch (§1.5)


def test_controller_epoch_is_shared_and_strictly_older_is_rejected(state: BrokerState) -> None:
    assert handled(state, 6, 8, umr(controller_epoch=5)).error_code == 0
    assert state.controller_epoch == 5
    r = handled(state, 4, 7, lair(("foo", 0, 1, 1), controller_epoch=4))
    assert r.error_code == 11 and set(lair_codes(r).values()) == {11}
    r = handled(state, 5, 4, stop(("foo", 0, 1, True), controller_epoch=4))
    assert r.error_code == 11 and r.partition_errors == ()
    assert handled(state, 6, 8, umr(controller_epoch=4)).error_code == 11
    assert handled(state, 6, 8, umr(controller_epoch=5)).error_code == 0  # equal is accepted
    assert handled(state, 5, 4, stop(controller_epoch=9)).error_code == 0
    assert state.controller_epoch == 9


# ---------------------------------------------------------------- LeaderAndIsr (§2.3)


def test_become_leader_and_follower(state: BrokerState) -> None:
    handled(state, 6, 8, umr(brokers=(1, 2)))
    r = handled(state, 4, 7, lair(("foo", 0, 1, 4), ("foo", 1, 2, 4)))
    assert lair_codes(r) == {(FOO_ID, 0): 0, (FOO_ID, 1): 0}
    leader, follower = state.partitions[TopicPartition("foo", 0)], state.partitions[TopicPartition("foo", 1)]
    assert (leader.leader, leader.leader_epoch, leader.isr, leader.log_topic_id) == (1, 4, (1, 2), FOO_ID)
    assert (follower.leader, follower.leader_epoch, follower.isr) == (2, 4, ())  # followers keep an empty ISR


def test_follower_of_a_leader_not_alive_only_creates_the_log(state: BrokerState) -> None:
    handled(state, 6, 8, umr(brokers=(1,)))
    r = handled(state, 4, 7, lair(("foo", 0, 2, 4)))
    assert lair_codes(r) == {(FOO_ID, 0): 0}
    p = state.partitions[TopicPartition("foo", 0)]
    assert p.log_exists and p.leader_epoch == -1 and p.leader is None


@pytest.mark.parametrize(("epoch", "code"), [(5, 0), (4, 11), (3, 11)])
def test_leader_epoch_rules(state: BrokerState, epoch: int, code: int) -> None:
    handled(state, 4, 7, lair(("foo", 0, 1, 4)))
    r = handled(state, 4, 7, lair(("foo", 0, 1, epoch)))
    assert lair_codes(r) == {(FOO_ID, 0): code}
    assert state.partitions[TopicPartition("foo", 0)].leader_epoch == max(epoch, 4)


def test_equal_epoch_from_kraft_controller_is_applied() -> None:
    s = BrokerState(BROKER, EPOCH, migration_enabled=True, kraft_broker_epoch=1)
    handled(s, 4, 7, lair(("foo", 0, 1, 4), kraft=True))
    r = handled(s, 4, 7, lair(("foo", 0, 1, 4), kraft=True))
    assert lair_codes(r) == {(FOO_ID, 0): 0}


def test_not_in_replicas_is_unknown_topic_or_partition(state: BrokerState) -> None:
    r = handled(state, 4, 7, lair(("foo", 0, 2, 1), replicas=(2, 3)))
    assert lair_codes(r) == {(FOO_ID, 0): 3}
    assert TopicPartition("foo", 0) in state.partitions  # created before the checks (RM:1968)


def test_inconsistent_topic_id(state: BrokerState) -> None:
    handled(state, 4, 7, lair(("foo", 0, 1, 1)))
    r = handled(state, 4, 7, lair(("foo", 0, 1, 2), ids={"foo": BAR_ID}))
    assert lair_codes(r) == {(BAR_ID, 0): 103}


def test_equal_epoch_assigns_a_missing_topic_id(state: BrokerState) -> None:
    handled(state, 4, 7, lair(("foo", 0, 1, 1), ids={}))
    assert state.partitions[TopicPartition("foo", 0)].log_topic_id is None
    r = handled(state, 4, 7, lair(("foo", 0, 1, 1)))
    assert lair_codes(r) == {(FOO_ID, 0): 0}
    assert state.partitions[TopicPartition("foo", 0)].log_topic_id == FOO_ID


def test_offline_partition_is_storage_error(state: BrokerState) -> None:
    state.offline.add(TopicPartition("foo", 0))
    r = handled(state, 4, 7, lair(("foo", 0, 1, 1), ("foo", 1, 1, 1)))
    assert lair_codes(r) == {(FOO_ID, 0): 56, (FOO_ID, 1): 0}


def test_zero_ids_collapse_into_one_group_at_v5(state: BrokerState) -> None:
    r = handled(state, 4, 5, lair(("foo", 0, 1, 1), ("bar", 0, 1, 1), ids={}))
    assert [t.topic_id for t in r.topics] == [ZERO_UUID]
    assert sorted(e.partition_index for e in r.topics[0].partition_errors) == [0, 0]


def test_v4_response_is_flat_with_names(state: BrokerState) -> None:
    r = handled(state, 4, 4, lair(("foo", 0, 1, 1), ("bar", 2, 1, 1), version=4))
    assert [(e.topic_name, e.partition_index, e.error_code) for e in r.partition_errors] == [("foo", 0, 0), ("bar", 2, 0)]


def test_older_partition_epoch_is_ignored_but_answered_none(state: BrokerState) -> None:
    handled(state, 4, 7, lair(("foo", 0, 1, 1)))
    p = state.partitions[TopicPartition("foo", 0)]
    p.partition_epoch = 10
    r = handled(state, 4, 7, lair(("foo", 0, 1, 2)))  # partition epoch 3 < 10
    assert lair_codes(r) == {(FOO_ID, 0): 0} and p.leader_epoch == 1


def test_full_request_from_kraft_controller_removes_stray_logs() -> None:
    s = BrokerState(BROKER, EPOCH, migration_enabled=True, kraft_broker_epoch=1)
    handled(s, 4, 7, lair(("foo", 0, 1, 1), ("bar", 0, 1, 1), kraft=True))
    handled(s, 4, 7, lair(("foo", 0, 1, 2), kraft=True, type_=2))
    assert set(s.partitions) == {TopicPartition("foo", 0)}


# ---------------------------------------------------------------- StopReplica (§4.3)


@pytest.mark.parametrize(("epoch", "code"), [(-2, 0), (-1, 0), (4, 0), (5, 0), (3, 74)])
@pytest.mark.parametrize("delete", [False, True])
def test_stop_replica_leader_epoch_matrix(state: BrokerState, epoch: int, code: int, delete: bool) -> None:
    handled(state, 4, 7, lair(("foo", 0, 1, 4)))
    r = handled(state, 5, 4, stop(("foo", 0, epoch, delete)))
    assert r.error_code == 0 and [(e.topic_name, e.partition_index, e.error_code) for e in r.partition_errors] == [("foo", 0, code)]
    present = TopicPartition("foo", 0) in state.partitions
    assert present == (not delete or code != 0)
    if present and code == 0:
        assert state.partitions[TopicPartition("foo", 0)].leader_epoch == 4  # delete = false keeps the state


def test_stop_replica_unknown_and_offline(state: BrokerState) -> None:
    state.offline.add(TopicPartition("foo", 1))
    r = handled(state, 5, 4, stop(("foo", 0, 1, True), ("foo", 1, 1, True)))
    assert [e.error_code for e in r.partition_errors] == [0, 56]


def test_stop_replica_idempotent_delete(state: BrokerState) -> None:
    handled(state, 4, 7, lair(("foo", 0, 1, 4)))
    for _ in range(2):
        r = handled(state, 5, 4, stop(("foo", 0, -2, True)))
        assert [e.error_code for e in r.partition_errors] == [0]
    assert state.partitions == {}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_stop_replica_old_versions_use_the_request_wide_delete_flag(state: BrokerState, version: int) -> None:
    handled(state, 4, 7, lair(("foo", 0, 1, 4), ("foo", 1, 1, 4)))
    if version == 0:
        req = StopReplicaRequest(controller_id=0, controller_epoch=5, delete_partitions=True, ungrouped_partitions=[
            StopReplicaPartitionV0(topic_name="foo", partition_index=0)])
    else:
        req = StopReplicaRequest(controller_id=0, controller_epoch=5, broker_epoch=EPOCH, delete_partitions=True,
                                 topics=[StopReplicaTopicV1(name="foo", partition_indexes=[0])])
    r = handled(state, 5, version, req)
    assert [(e.topic_name, e.partition_index, e.error_code) for e in r.partition_errors] == [("foo", 0, 0)]
    assert set(state.partitions) == {TopicPartition("foo", 1)}


# ---------------------------------------------------------------- UpdateMetadata cache (§3.3)


def test_alive_brokers_replaced_partitions_merged(state: BrokerState) -> None:
    handled(state, 6, 8, umr(("foo", 0, 1), ("foo", 1, 2), brokers=(1, 2, 3)))
    handled(state, 6, 8, umr(("bar", 0, 1), brokers=(1,)))
    view = state.cache.view()
    assert set(view.brokers) == {1}
    assert set(view.partitions) == {TopicPartition("foo", 0), TopicPartition("foo", 1), TopicPartition("bar", 0)}
    assert view.topic_ids == {"foo": FOO_ID, "bar": BAR_ID}


def test_no_partition_states_keeps_the_map(state: BrokerState) -> None:
    handled(state, 6, 8, umr(("foo", 0, 1)))
    handled(state, 6, 8, umr(brokers=(2,)))
    assert set(state.cache.view().partitions) == {TopicPartition("foo", 0)}


def test_leader_minus_two_deletes_and_drops_the_topic_id(state: BrokerState) -> None:
    handled(state, 6, 8, umr(("foo", 0, 1), ("foo", 1, 1)))
    handled(state, 6, 8, umr(("foo", 0, -2)))
    assert state.cache.view().topic_ids == {"foo": FOO_ID}
    handled(state, 6, 8, umr(("foo", 1, -2)))
    assert state.cache.view().partitions == {} and state.cache.view().topic_ids == {}
    assert state.deleted_partitions == [TopicPartition("foo", 0), TopicPartition("foo", 1)]


def test_delete_then_recreate_in_one_request_is_not_reported(state: BrokerState) -> None:
    handled(state, 6, 8, umr(("foo", 0, 1)))
    handled(state, 6, 8, umr(("foo", 0, -2), ("foo", 0, 2)))
    assert state.deleted_partitions == [] and state.cache.view().partitions[TopicPartition("foo", 0)].leader == 2


def test_zero_topic_id_removes_the_id(state: BrokerState) -> None:
    handled(state, 6, 8, umr(("foo", 0, 1)))
    handled(state, 6, 8, umr(("foo", 0, 1), ids={}))
    assert state.cache.view().topic_ids == {}


def test_full_update_from_kraft_controller_deletes_unmentioned_topics() -> None:
    s = BrokerState(BROKER, EPOCH, migration_enabled=True, kraft_broker_epoch=1)
    handled(s, 6, 8, umr(("foo", 0, 1), ("bar", 0, 1), ("bar", 1, 1), kraft=True))
    handled(s, 6, 8, umr(("foo", 1, 1), kraft=True, type_=2))
    # bar is gone; foo's cached partition 0 stays although the FULL request lacks it (ZkMC:92-108)
    assert set(s.cache.view().partitions) == {TopicPartition("foo", 0), TopicPartition("foo", 1)}
    assert s.deleted_partitions == [TopicPartition("bar", 0), TopicPartition("bar", 1)]


def test_full_update_without_migration_is_a_normal_update() -> None:
    # unreachable through the handler (a KRaft controller's request fails the epoch check
    # first without migration), so the cache is driven directly
    cache = BrokerState(BROKER, EPOCH).cache
    cache.update(umr(("foo", 0, 1), ("bar", 0, 1), kraft=True), 8, migration_enabled=False)
    cache.update(umr(("foo", 1, 1), kraft=True, type_=2), 8, migration_enabled=False)
    assert len(cache.view().partitions) == 3


def test_kraft_controller_before_registration_is_accepted() -> None:
    s = BrokerState(BROKER, EPOCH, migration_enabled=True)  # registration epoch still -1
    assert handled(s, 6, 8, umr(kraft=True, broker_epoch=3)).error_code == 0


def test_controller_id_and_kind(state: BrokerState) -> None:
    handled(state, 6, 8, umr())
    assert (state.cache.controller_id, state.cache.controller_is_kraft) == (0, False)
    req = UpdateMetadataRequest(controller_id=-1, controller_epoch=5, broker_epoch=EPOCH)
    handled(state, 6, 8, req)
    assert state.cache.controller_id is None


def test_v0_broker_becomes_one_plaintext_endpoint(state: BrokerState) -> None:
    req = UpdateMetadataRequest(controller_id=0, controller_epoch=5, live_brokers=[
        UpdateMetadataBroker(id=2, v0_host="h", v0_port=9)])
    handled(state, 6, 0, req)
    assert state.cache.view().brokers[2].endpoints == (("PLAINTEXT", "h", 9, 0),)


def test_v2_listener_is_named_after_the_protocol(state: BrokerState) -> None:
    req = UpdateMetadataRequest(controller_id=0, controller_epoch=5, live_brokers=[
        UpdateMetadataBroker(id=2, endpoints=[UpdateMetadataEndpoint(port=1, host="h", security_protocol=1)], rack="r")])
    handled(state, 6, 2, req)
    assert state.cache.view().brokers[2].endpoints == (("SSL", "h", 1, 1),)
    assert state.cache.view().brokers[2].rack == "r"


def test_errors_are_kafka_numbers() -> None:
    assert (Errors.STALE_BROKER_EPOCH, Errors.FENCED_LEADER_EPOCH, Errors.INCONSISTENT_CLUSTER_ID) == (77, 74, 104)


# ---------------------------------------------------------------- review fixes


@pytest.mark.parametrize(("request_leader", "code"), [(2, 0), (1, 11)])
def test_equal_epoch_downgrade_case_looks_at_the_requests_leader(state: BrokerState, request_leader: int, code: int) -> None:
    """RM:2022-2029: equal leader epoch, no topic id in the request, an id on the log: NONE when the
    request's leader (partitionState.leader) is another broker; the partition's old leader does not count."""
    handled(state, 6, 8, umr(brokers=(1, 2)))
    handled(state, 4, 7, lair(("foo", 0, 1, 4)))  # this broker leads, its log has FOO_ID
    assert state.partitions[TopicPartition("foo", 0)].leader == 1
    r = handled(state, 4, 4, lair(("foo", 0, request_leader, 4), version=4))
    assert [(e.partition_index, e.error_code) for e in r.partition_errors] == [(0, code)]


def test_equal_epoch_downgrade_case_for_a_follower_that_the_request_makes_leader(state: BrokerState) -> None:
    handled(state, 6, 8, umr(brokers=(1, 2)))
    handled(state, 4, 7, lair(("foo", 0, 2, 4)))  # a follower of broker 2, its log has FOO_ID
    r = handled(state, 4, 4, lair(("foo", 0, 1, 4), version=4))
    assert [e.error_code for e in r.partition_errors] == [11]  # ignored: the request names this broker leader


def test_full_request_strays_are_logs_under_another_topic_id() -> None:
    s = BrokerState(BROKER, EPOCH, migration_enabled=True, kraft_broker_epoch=1)
    handled(s, 4, 7, lair(("foo", 0, 1, 1), ("bar", 0, 1, 1), kraft=True))
    handled(s, 4, 7, lair(("foo", 0, 1, 2), ("bar", 0, 1, 2), kraft=True, type_=2, ids={"foo": FOO_ID, "bar": uuid.UUID(int=7)}))
    assert s.partitions[TopicPartition("bar", 0)].log_topic_id == uuid.UUID(int=7)  # re-created: the old log went
    assert s.partitions[TopicPartition("foo", 0)].leader_epoch == 2


def test_full_request_with_a_log_without_topic_id_is_unknown_server_error_and_changes_nothing() -> None:
    s = BrokerState(BROKER, EPOCH, migration_enabled=True, kraft_broker_epoch=1)
    handled(s, 4, 7, lair(("foo", 0, 1, 1), ids={}))  # a ZooKeeper controller without ids: no id on the log
    before = s.partition_summary()
    r = handled(s, 4, 7, lair(("bar", 0, 1, 1), kraft=True, type_=2, controller_epoch=6))
    assert r.error_code == -1 and lair_codes(r) == {(BAR_ID, 0): -1}
    assert s.partition_summary() == before and s.controller_epoch == 5


@pytest.mark.parametrize(("code", "listed"), [(77, False), (11, False), (-1, True), (56, True)])
def test_injected_stop_replica_errors_have_the_brokers_shape(code: int, listed: bool) -> None:
    from ctrlbatch.sim.broker_state import error_response

    r = error_response(5, 4, stop(("foo", 0, 1, True), ("foo", 1, 1, True)), code)
    assert r.error_code == code
    assert [e.error_code for e in r.partition_errors] == ([code, code] if listed else [])


# ---------------------------------------------------------------- issue 14: createLogIfNotExists, duplicates


def _log_without_id(state: BrokerState, leader: int = 1) -> None:
    """A log created by a request without topic ids (LeaderAndIsr v4, say)."""
    handled(state, 6, 8, umr(brokers=(1, 2)))
    handled(state, 4, 4, lair(("foo", 0, leader, 1), version=4))
    assert state.partitions[TopicPartition("foo", 0)].log_topic_id is None


@pytest.mark.parametrize("leader", [1, 2])
def test_a_transition_gives_an_existing_log_without_id_the_requests_id(state: BrokerState, leader: int) -> None:
    """Partition.createLogIfNotExists (3.9.0 Partition.scala:462-463), from makeLeader and makeFollower."""
    _log_without_id(state, leader)
    r = handled(state, 4, 7, lair(("foo", 0, leader, 2)))
    assert lair_codes(r) == {(FOO_ID, 0): 0}
    assert state.partitions[TopicPartition("foo", 0)].log_topic_id == FOO_ID
    # so that later requests answer as Kafka does:
    assert lair_codes(handled(state, 4, 7, lair(("foo", 0, leader, 3), ids={"foo": BAR_ID}))) == {(BAR_ID, 0): 103}
    assert lair_codes(handled(state, 4, 7, lair(("foo", 0, leader, 2)))) == {(FOO_ID, 0): 11}  # equal epoch, has an id


def test_the_dead_leader_branch_of_make_followers_also_assigns_the_id(state: BrokerState) -> None:
    _log_without_id(state, leader=2)
    handled(state, 6, 8, umr(brokers=(1,)))  # broker 2, the leader, is not alive any more
    r = handled(state, 4, 7, lair(("foo", 0, 2, 2)))
    assert lair_codes(r) == {(FOO_ID, 0): 0}
    p = state.partitions[TopicPartition("foo", 0)]
    assert p.log_topic_id == FOO_ID and p.leader_epoch == 1  # only the log changed


def test_the_downgrade_case_after_an_id_was_assigned_is_none(state: BrokerState) -> None:
    _log_without_id(state, leader=2)
    handled(state, 4, 7, lair(("foo", 0, 2, 2)))  # the follower's log takes FOO_ID
    r = handled(state, 4, 4, lair(("foo", 0, 2, 2), version=4))  # equal epoch, no id in the request
    assert [e.error_code for e in r.partition_errors] == [0]


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_a_v0_to_v4_error_response_lists_every_partition_state_duplicates_included(state: BrokerState, version: int) -> None:
    state.controller_epoch = 9
    ps = [LeaderAndIsrPartitionState(topic_name="foo" if version < 2 else "", partition_index=p, leader=1, leader_epoch=1,
                                     replicas=(1,), isr=(1,)) for p in (0, 1, 0)]
    req = (LeaderAndIsrRequest(controller_id=0, controller_epoch=5, ungrouped_partition_states=ps) if version < 2 else
           LeaderAndIsrRequest(controller_id=0, controller_epoch=5, topic_states=[
               LeaderAndIsrTopicState(topic_name="foo", partition_states=ps[:2]),
               LeaderAndIsrTopicState(topic_name="foo", partition_states=ps[2:])]))
    r = handled(state, 4, version, req)
    assert r.error_code == 11
    assert [(e.topic_name, e.partition_index, e.error_code) for e in r.partition_errors] == [
        ("foo", 0, 11), ("foo", 1, 11), ("foo", 0, 11)]


# --- A repeated big UpdateMetadata does not build a second copy of the cached live brokers (issue 24).


def _live_brokers_umr(n: int, host: str = "broker.example") -> UpdateMetadataRequest:
    req = UpdateMetadataRequest(controller_id=0, controller_epoch=1, broker_epoch=-1, live_brokers=[
        UpdateMetadataBroker(id=i, endpoints=[UpdateMetadataEndpoint(port=9092, host=host, listener="PLAINTEXT")],
                             rack="r1" if i % 2 else None)
        for i in range(n)])
    return UpdateMetadataRequest.decode(req.encode(8), 8)  # decoded: its own strings, as a server gets it


def test_a_repeated_update_metadata_reuses_the_cached_brokers() -> None:
    s = BrokerState(1, 1)
    first = _live_brokers_umr(500)
    s.handle(6, 8, first, s.prepare(6, 8, first))
    before = s.cache.alive_brokers
    assert len({id(b.endpoints) for b in before.values()}) == 1  # equal endpoints: one tuple
    again = _live_brokers_umr(500)
    s.handle(6, 8, again, s.prepare(6, 8, again))
    assert s.cache.alive_brokers is before  # the same brokers in the same order: the cached map itself
    reordered = UpdateMetadataRequest.decode(attrs.evolve(again, live_brokers=again.live_brokers[::-1]).encode(8), 8)
    s.handle(6, 8, reordered, s.prepare(6, 8, reordered))
    after = s.cache.alive_brokers
    assert after is not before and after == before and all(after[i] is before[i] for i in range(500))
    twice = UpdateMetadataRequest.decode(attrs.evolve(again, live_brokers=list(again.live_brokers[:250]) * 2).encode(8), 8)
    s.handle(6, 8, twice, s.prepare(6, 8, twice))  # as many entries as cached, but ids repeated: 250 brokers
    assert sorted(s.cache.alive_brokers) == list(range(250))
    s.handle(6, 8, again, s.prepare(6, 8, again))
    changed = _live_brokers_umr(501, host="moved.example")  # changed endpoints: new objects, new content
    s.handle(6, 8, changed, s.prepare(6, 8, changed))
    assert all(s.cache.alive_brokers[i] is not before[i] for i in range(500))
    assert {b.endpoints[0][1] for b in s.cache.alive_brokers.values()} == {"moved.example"}


def test_a_repeated_update_metadata_costs_the_cache_a_fraction_of_the_first() -> None:
    """Traced bytes the prepared live brokers of a second, equal request keep alive beyond the
    cache, against the first's (before the fix the second was a full copy: about 1x)."""
    import gc
    import tracemalloc

    s = BrokerState(1, 1)
    first = _live_brokers_umr(20_000)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        prepared = s.prepare(6, 8, first)
        first_cost = tracemalloc.get_traced_memory()[0] - base
        s.handle(6, 8, first, prepared)
        del prepared, first
        again = _live_brokers_umr(20_000)
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        second = s.prepare(6, 8, again)
        second_cost = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert second is not None and len(second) == 20_000
    assert first_cost > 0 and second_cost < first_cost * 0.5, (first_cost, second_cost)


def test_the_cached_brokers_keep_nothing_the_decoder_allocated_per_broker() -> None:
    """One decoder object kept per broker would pin every heap arena of the decoded request
    (metadata_cache.alive_brokers): ids are copied, equal racks and endpoint lists shared."""
    s = BrokerState(1, 1)
    req = UpdateMetadataRequest.decode(UpdateMetadataRequest(controller_id=0, controller_epoch=1, broker_epoch=-1, live_brokers=[
        UpdateMetadataBroker(id=1000 + i, endpoints=[UpdateMetadataEndpoint(port=9092, host="h", listener="L")], rack="rack-a")
        for i in range(300)]).encode(8), 8)
    s.handle(6, 8, req, s.prepare(6, 8, req))
    cached = s.cache.alive_brokers
    decoded_ids = {id(b.id) for b in req.live_brokers}
    assert sorted(cached) == [1000 + i for i in range(300)]
    assert not decoded_ids & {id(k) for k in cached} and not decoded_ids & {id(b.id) for b in cached.values()}
    assert len({id(b.rack) for b in cached.values()}) == 1 and len({id(b.endpoints) for b in cached.values()}) == 1
