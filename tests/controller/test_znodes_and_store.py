"""The store: znode JSON as Kafka writes it, conditional writes, fencing, watches, sessions and
failure injection of InMemoryKafkaZkClient."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.context import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicPartition,
)
from ctrlbatch.controller import (
    Code,
    ControllerMovedException,
    InMemoryKafkaZkClient,
    KafkaZkClient,
    KeeperException,
    StateChangeHandler,
    ZNodeChangeHandler,
    ZNodeChildChangeHandler,
    ZooKeeperClientException,
)
from ctrlbatch.controller import znodes as zn
from ctrlbatch.controller.errors import BadVersionException, NodeExistsException, NoNodeException
from ctrlbatch.controller.store import Stat

TP = TopicPartition("t", 0)

# ------------------------------------------------------------------ znode JSON


def test_state_znode_bytes_are_kafkas() -> None:
    value = LeaderIsrAndControllerEpoch(LeaderAndIsr(102, [102, 103], 8), 33)
    # the key order of a real 3.x state znode (Scala 2.13 HashMap order)
    assert zn.encode_partition_state(value) == (
        b'{"controller_epoch":33,"leader":102,"version":1,"leader_epoch":8,"isr":[102,103]}'
    )
    recovering = LeaderIsrAndControllerEpoch(LeaderAndIsr(5, [5], 1, 0, LeaderRecoveryState.RECOVERING), 50)
    assert zn.encode_partition_state(recovering) == (
        b'{"controller_epoch":50,"leader":5,"version":1,"leader_recovery_state":1,"leader_epoch":1,"isr":[5]}'
    )


def test_scala_orders() -> None:
    assert zn._champ_order(["version", "leader", "leader_epoch", "controller_epoch", "isr"]) == [
        "controller_epoch", "leader", "version", "leader_epoch", "isr"]
    # mutable.HashMap of partition ids: 16 buckets until the 12th key, then 32
    assert zn._mutable_order([str(i) for i in range(11)]) == [str(i) for i in range(11)]
    assert zn._mutable_order([str(i) for i in range(12)])[:2] == ["11", "0"]


leaders = st.integers(-2, 1000)
isrs = st.lists(st.integers(0, 1000), max_size=5)


@given(leaders, isrs, st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1),
       st.sampled_from(list(LeaderRecoveryState)))
def test_state_znode_round_trips(leader: int, isr: list[int], leader_epoch: int, controller_epoch: int,
                                 version: int, recovery: LeaderRecoveryState) -> None:
    value = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr, leader_epoch, 0, recovery), controller_epoch)
    data = zn.encode_partition_state(value)
    decoded = zn.decode_partition_state(data, Stat(1, 1, version))
    assert decoded == LeaderIsrAndControllerEpoch(value.leader_and_isr.with_partition_epoch(version), controller_epoch)
    js = json.loads(data)
    assert js["version"] == 1 and ("leader_recovery_state" in js) == (recovery is LeaderRecoveryState.RECOVERING)
    assert b" " not in data


def test_state_znode_decode_of_non_json_is_none() -> None:
    assert zn.decode_partition_state(b"not json", Stat(0, 0, 0)) is None
    assert zn.decode_partition_state(None, None) is None
    with pytest.raises(ValueError, match="partition state znode"):
        zn.decode_partition_state(b'{"version":1}', Stat(0, 0, 0))


@given(st.dictionaries(st.integers(0, 40), st.tuples(isrs, isrs, isrs), max_size=25), st.booleans())
def test_topic_znode_round_trips(parts: dict[int, tuple[list[int], list[int], list[int]]], with_id: bool) -> None:
    assignment = {TopicPartition("t", p): ReplicaAssignment(*lists) for p, lists in parts.items()}
    topic_id = uuid.uuid4() if with_id else None
    data = zn.encode_topic(topic_id, assignment)
    assert zn.decode_topic("t", data) == (topic_id, assignment)
    js = json.loads(data)
    assert js["version"] == 3 and set(js["adding_replicas"]) == {str(p) for p, lists in parts.items() if lists[1]}


def test_topic_znode_key_order() -> None:
    tid = uuid.UUID(int=0)
    data = zn.encode_topic(tid, {TP: ReplicaAssignment([1, 2], [2], [])})
    assert data == (b'{"partitions":{"0":[1,2]},"removing_replicas":{},"topic_id":"AAAAAAAAAAAAAAAAAAAAAA",'
                    b'"adding_replicas":{"0":[2]},"version":3}')


# ------------------------------------------------------------------ store basics


def _store(epoch: int = 50) -> InMemoryKafkaZkClient:
    store = InMemoryKafkaZkClient()
    store.tree.create(zn.CONTROLLER_EPOCH_PATH, str(epoch).encode())
    store.create_topic("t", [[1, 2]], topic_id=None)
    return store


def test_it_is_a_kafka_zk_client() -> None:
    assert isinstance(InMemoryKafkaZkClient(), KafkaZkClient)


def test_controller_election_bumps_the_epoch() -> None:
    store = InMemoryKafkaZkClient()
    assert store.register_controller_and_increment_controller_epoch(1) == (1, 1)
    assert store.get_controller_id() == 1
    other = store.new_client()
    with pytest.raises(ControllerMovedException, match="Controller moved to another broker"):
        other.register_controller_and_increment_controller_epoch(2)
    store.expire_session(store.session_id)
    assert store.get_controller_id() is None
    assert other.register_controller_and_increment_controller_epoch(2) == (2, 2)


def test_create_update_and_read_partition_states() -> None:
    store = _store()
    info = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, [1, 2]), 50)
    (created,) = store.create_topic_partition_states_raw({TP: info}, 0)
    assert created.result_code is Code.OK and created.ctx == TP
    (again,) = store.create_topic_partition_states_raw({TP: info}, 0)
    assert again.result_code is Code.NODEEXISTS
    assert isinstance(again.result_exception, NodeExistsException)
    assert store.get_topic_partition_states([TP, TopicPartition("t", 9)]) == {TP: info}
    result = store.update_leader_and_isr({TP: LeaderAndIsr(2, [2], 1, 0)}, 50, 0)
    assert result.finished_partitions == {TP: LeaderAndIsr(2, [2], 1, 1)}
    stale = store.update_leader_and_isr({TP: LeaderAndIsr(1, [1], 2, 0)}, 50, 0)
    assert stale.partitions_to_retry == [TP] and stale.finished_partitions == {}
    missing = store.update_leader_and_isr({TopicPartition("t", 3): LeaderAndIsr(1, [1])}, 50, 0)
    assert isinstance(missing.finished_partitions[TopicPartition("t", 3)], NoNodeException)


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 9)), max_size=20))
def test_a_stale_version_never_overwrites(writes: list[tuple[int, int]]) -> None:
    """Conditional writes: only a write at the current version lands, and bumps it by one."""
    store = _store()
    store.set_partition_state(TP, LeaderIsrAndControllerEpoch(LeaderAndIsr(1, [1]), 50))
    version = 0
    for expected, leader in writes:
        result = store.update_leader_and_isr({TP: LeaderAndIsr(leader, [leader], 0, expected)}, 50, 0)
        current = store.partition_state(TP)
        assert current is not None
        if expected == version:
            version += 1
            assert result.finished_partitions == {TP: LeaderAndIsr(leader, [leader], 0, version)}
            assert current.leader_and_isr.leader == leader
        else:
            assert result.partitions_to_retry == [TP]
        assert current.leader_and_isr.partition_epoch == version


def test_fencing() -> None:
    store = _store()
    info = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, [1, 2]), 50)
    with pytest.raises(ControllerMovedException, match="Controller epoch zkVersion check fails. Expected zkVersion = 3"):
        store.create_topic_partition_states_raw({TP: info}, 3)
    assert store.partition_state(TP) is None
    # an invalid expected version fails inside the write: every partition gets the error (KZC:368-373)
    invalid = store.update_leader_and_isr({TP: info.leader_and_isr}, 50, -2).finished_partitions[TP]
    assert isinstance(invalid, ValueError) and "should be non-negative" in str(invalid)
    with pytest.raises(ValueError, match="should be non-negative"):
        store.set_topic_partition_states_raw({TP: info}, -2)
    store.create_topic_partition_states_raw({TP: info}, -1)  # MatchAnyVersion: unfenced
    store.elect_other_controller(3)
    with pytest.raises(ControllerMovedException):
        store.update_leader_and_isr({TP: info.leader_and_isr}, 50, 0)
    assert store.partition_state(TP) == info


def test_log_configs() -> None:
    store = _store()
    store.set_topic_config("t", {"unclean.leader.election.enable": "true"})
    configs, failed = store.get_log_configs(["t", "u"], {"unclean.leader.election.enable": False})
    assert (configs["t"].unclean_leader_election_enable, configs["u"].unclean_leader_election_enable) == (True, False)
    assert failed == {}
    configs, _ = store.get_log_configs(["u"], {"unclean.leader.election.enable": "true"})
    assert configs["u"].unclean_leader_election_enable
    store.inject("get_log_configs", code=Code.NOAUTH, topics=["t"])
    configs, failed = store.get_log_configs(["t", "u"], {})
    assert set(configs) == {"u"} and isinstance(failed["t"], KeeperException)
    store.inject("get_log_configs", raise_=ZooKeeperClientException("x"))
    configs, failed = store.get_log_configs(["t", "u"], {})
    assert configs == {} and set(failed) == {"t", "u"}


# ------------------------------------------------------------------ watches and sessions


class _Node(ZNodeChangeHandler):
    def __init__(self, path: str, seen: list[str]) -> None:
        self.path, self.seen = path, seen

    def handle_creation(self) -> None:
        self.seen.append(f"created {self.path}")

    def handle_deletion(self) -> None:
        self.seen.append(f"deleted {self.path}")

    def handle_data_change(self) -> None:
        self.seen.append(f"data {self.path}")


class _Children(ZNodeChildChangeHandler):
    def __init__(self, path: str, seen: list[str]) -> None:
        self.path, self.seen = path, seen

    def handle_child_change(self) -> None:
        self.seen.append(f"children {self.path}")


def test_watches_are_one_shot_and_armed_by_reads(ck: Any) -> None:
    store = _store()
    seen: list[str] = []
    store.register_znode_child_change_handler(_Children(zn.BROKER_IDS_PATH, seen))
    epoch = store.register_broker(ck.broker(1))
    assert seen == []  # no read yet: no watch
    assert store.get_all_broker_and_epochs_in_cluster() == {ck.broker(1): epoch}
    store.register_broker(ck.broker(2))
    store.register_broker(ck.broker(3))
    assert seen == ["children /brokers/ids"]  # one-shot
    store.get_sorted_broker_list()
    store.expire_broker(2)
    assert seen == ["children /brokers/ids"] * 2
    assert store.get_sorted_broker_list() == [1, 3]
    # node handler: creation via exists, then data and deletion via reads
    assert store.register_znode_change_handler_and_check_existence(_Node(zn.REASSIGN_PARTITIONS_PATH, seen)) is False
    store.reassign_partitions({TP: [2, 1]})
    assert seen[-1] == "created /admin/reassign_partitions"
    assert store.get_partition_reassignment() == {TP: [2, 1]}
    store.delete_partition_reassignment(0)
    assert seen[-1] == "deleted /admin/reassign_partitions"


def test_broker_epoch_is_the_czxid_and_a_bounce_raises_it(ck: Any) -> None:
    store = _store()
    first = store.register_broker(ck.broker(1))
    store.expire_broker(1)
    second = store.register_broker(ck.broker(1))
    assert second > first
    with pytest.raises(NodeExistsException):
        store.register_broker(ck.broker(1))


def test_own_session_expiry_reinitialises() -> None:
    store = _store()
    seen: list[str] = []

    class Handler(StateChangeHandler):
        name = "controller"

        def before_initializing_session(self) -> None:
            seen.append("before")

        def after_initializing_session(self) -> None:
            seen.append("after")

    store.register_state_change_handler(Handler())
    old = store.session_id
    store.register_controller_and_increment_controller_epoch(5)
    store.expire_session(old)
    assert seen == ["before", "after"] and store.session_id != old
    assert store.get_controller_id() is None  # the ephemeral /controller went with the session
    store.close()
    with pytest.raises(ZooKeeperClientException):
        store.get_controller_id()


def test_notifications_and_admin_paths() -> None:
    store = _store()
    seq = store.notify_isr_change([TP])
    assert store.get_all_isr_change_notifications() == [seq]
    assert store.get_partitions_from_isr_change_notifications([seq]) == [TP]
    store.delete_isr_change_notifications(None, 0)
    assert store.get_all_isr_change_notifications() == []
    log_seq = store.notify_log_dir_event(3)
    assert store.get_broker_ids_from_log_dir_events(store.get_all_log_dir_event_notifications()) == [3]
    store.delete_log_dir_event_notifications([log_seq], 0)
    assert store.get_all_log_dir_event_notifications() == []
    store.elect_preferred_replicas([TP])
    assert store.get_preferred_replica_election() == {TP}
    store.delete_preferred_replica_election(0)
    assert store.get_preferred_replica_election() == set()
    store.delete_topic("t")
    assert store.get_topic_deletions() == ["t"]
    store.delete_topic_deletions(["t"], 0)
    assert store.get_topic_deletions() == []
    store.add_partitions("t", {1: [2, 1]})
    assert store.get_full_replica_assignment_for_topics({"t"}) == {
        TP: ReplicaAssignment([1, 2]), TopicPartition("t", 1): ReplicaAssignment([2, 1])}
    (with_id,) = store.set_topic_ids(store.get_replica_assignment_and_topic_id_for_topics({"t"}), 0)
    assert with_id.topic_id is not None
    with pytest.raises(ValueError, match="already contains a topic ID"):
        store.set_topic_ids([with_id], 0)
    store.set_or_create_partition_reassignment({TP: [1]}, 0)
    assert store.reassign_partitions_in_progress()


def test_injection_codes_filter_and_times() -> None:
    store = _store()
    other = TopicPartition("t", 1)
    for tp in (TP, other):
        store.set_partition_state(tp, LeaderIsrAndControllerEpoch(LeaderAndIsr(1, [1]), 50))
    store.inject("get_topic_partition_states_raw", code=Code.NONODE, partitions=[other], times=2)
    for _ in range(2):
        codes = [r.result_code for r in store.get_topic_partition_states_raw([TP, other])]
        assert codes == [Code.OK, Code.NONODE]
    assert [r.result_code for r in store.get_topic_partition_states_raw([TP, other])] == [Code.OK, Code.OK]
    store.inject("update_leader_and_isr", code=Code.BADVERSION)
    assert store.update_leader_and_isr({TP: LeaderAndIsr(1, [1], 1, 0)}, 50, 0).partitions_to_retry == [TP]
    store.inject("update_leader_and_isr", raise_=ZooKeeperClientException("gone"))
    failed = store.update_leader_and_isr({TP: LeaderAndIsr(1, [1], 1, 0)}, 50, 0)
    assert isinstance(failed.finished_partitions[TP], ZooKeeperClientException)
    assert isinstance(KeeperException.create(Code.BADVERSION, "/x"), BadVersionException)
    assert str(KeeperException.create(Code.NONODE, "/x")) == "KeeperErrorCode = NoNode for /x"
    with pytest.raises(ValueError, match="must name a KafkaZkClient method"):
        store.inject("no_such_method", code=Code.NONODE)
    with pytest.raises(ValueError, match="give raise_, code or before"):
        store.inject("get_broker")
