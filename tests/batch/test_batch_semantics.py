"""Batch behaviour that the 18 Kafka tests leave out, each from kafka-controller-batch-semantics.md
(section in the comment above each test), plus the port's own promises (determinism, shared
bodies, callable metadata version, pickling).
"""

from __future__ import annotations

import logging
import os
import pickle
import struct
import subprocess
import sys
import uuid

import pytest

from ctrlbatch.batch import (
    ControllerBrokerRequestBatch,
    LeaderAndIsrResponseReceived,
    RecordingTransport,
    TopicDeletionStopReplicaResponseReceived,
    UpdateMetadataBuilder,
    UpdateMetadataResponseReceived,
    UpdateType,
)
from ctrlbatch.context import (
    ZERO_UUID,
    Broker,
    BrokerEndPointNotAvailableError,
    ControllerContext,
    EndPoint,
    IllegalStateError,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    MetadataVersion,
    ReplicaAssignment,
    SecurityProtocol,
    TopicPartition,
)
from ctrlbatch.requests import (
    StopReplicaPartitionError,
    StopReplicaPartitionState,
    StopReplicaResponse,
    UnsupportedVersionError,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
)

MV = MetadataVersion
ALL_VERSIONS = list(MetadataVersion)
VERSION_IDS = [mv.version for mv in ALL_VERSIONS]
FOO0 = TopicPartition("foo", 0)
FOO1 = TopicPartition("foo", 1)
BAR0 = TopicPartition("bar", 0)
BAR1 = TopicPartition("bar", 1)
LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA = 4, 5, 6
NOT_EMPTY = "Controller to broker state change requests batch is not empty while creating a new one. "
STATE_CHANGE = "state.change.logger"


def lice(leader, isr, controller_epoch=1, **kw):
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr, **kw), controller_epoch)


def put(context, tp, leader, isr, **kw):
    li = lice(leader, isr, **kw)
    context.put_partition_leadership_info(tp, li)
    return li


def ra(*replicas):
    return ReplicaAssignment(list(replicas))


# ============================================================== §4 newBatch / clear


# §4 newBatch: checks in order LAIR, then SR, then UMR brokers; Kafka's text with a trailing space.
def test_new_batch_refuses_pending_leader_and_isr_first(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    b.new_batch()
    li = put(context, FOO0, 1, [1, 2])
    b.add_lair([2], FOO0, li, ra(1, 2, 3), False)
    b.add_sr([3], FOO1, False)
    with pytest.raises(IllegalStateError) as e:
        b.new_batch()
    msg = str(e.value)
    assert msg == (
        NOT_EMPTY
        + "Some LeaderAndIsr state changes HashMap(2 -> HashMap(foo-0 -> LeaderAndIsrPartitionState("
        "topicName='foo', partitionIndex=0, controllerEpoch=1, leader=1, leaderEpoch=0, isr=[1, 2], "
        "partitionEpoch=0, replicas=[1, 2, 3], addingReplicas=[], removingReplicas=[], isNew=false, "
        "leaderRecoveryState=0))) might be lost "
    )
    assert msg.endswith(" might be lost ")


# §4 newBatch: with no LAIR pending, StopReplica is reported before UpdateMetadata.
def test_new_batch_refuses_pending_stop_replica_second(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    b.new_batch()
    put(context, FOO0, 1, [1, 2])
    b.add_sr([2], FOO0, False)
    b.add_umr([3], [])
    with pytest.raises(IllegalStateError) as e:
        b.new_batch()
    assert str(e.value) == (
        NOT_EMPTY
        + "Some StopReplica state changes HashMap(2 -> HashMap(foo-0 -> StopReplicaPartitionState("
        "partitionIndex=0, leaderEpoch=0, deletePartition=false))) might be lost "
    )


# §4 newBatch: UpdateMetadata brokers alone, with the partition info in the message.
def test_new_batch_refuses_pending_update_metadata_brokers_third(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    b.new_batch()
    b.add_umr([2], [])
    with pytest.raises(IllegalStateError) as e:
        b.new_batch()
    assert str(e.value) == (
        NOT_EMPTY + "Some UpdateMetadata state changes to brokers HashSet(2) with partition info HashMap() might be lost "
    )

    b2 = kt.MockBatch(context)
    b2.new_batch()
    put(context, FOO0, 1, [1, 2])
    b2.add_umr([2], [FOO0])
    with pytest.raises(IllegalStateError) as e:
        b2.new_batch()
    assert str(e.value) == (
        NOT_EMPTY
        + "Some UpdateMetadata state changes to brokers HashSet(2) with partition info HashMap(foo-0 -> "
        "UpdateMetadataPartitionState(topicName='foo', partitionIndex=0, controllerEpoch=1, leader=1, "
        "leaderEpoch=0, isr=[1, 2], zkVersion=0, replicas=[1, 2, 3], offlineReplicas=[])) might be lost "
    )


# §4 newBatch: leftover UMR partition info with an empty broker set is not checked, and is sent
# with the next batch.
@pytest.mark.parametrize("brokers", [[], [-1], [-1, -5]], ids=["empty", "negative", "all-negative"])
def test_new_batch_ignores_leftover_update_metadata_partitions(kt, brokers):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    put(context, FOO0, 1, [1, 2])
    b.new_batch()
    b.add_umr(brokers, [FOO0])
    assert not b.batch.update_metadata_request_broker_set
    assert FOO0 in b.batch.update_metadata_request_partition_info_map
    b.new_batch()  # no error
    b.add_umr([2], [])
    b.send()
    (req,) = b.collect_umr(2)
    version = b.collect_sent(2, UPDATE_METADATA)[0].version
    assert [kt.tp_of(s) for s in kt.umr_partition_states(req, version)] == [FOO0]


# §4 clear(): empties all four collections, forgets the context and resets the update type.
def test_clear_empties_everything(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    b.new_batch()
    li = put(context, FOO0, 1, [1, 2])
    b.add_lair([2], FOO0, li, ra(1, 2, 3), False)
    b.add_sr([3], FOO1, True)
    b.add_umr([1], [FOO0])
    b.batch.set_update_type(UpdateType.FULL)
    b.batch.clear()
    batch = b.batch
    assert batch.leader_and_isr_request_map == {}
    assert batch.stop_replica_request_map == {}
    assert len(batch.update_metadata_request_broker_set) == 0
    assert batch.update_metadata_request_partition_info_map == {}
    assert batch.update_type == UpdateType.UNKNOWN
    assert batch.metadata_instance is None
    assert b.sent_requests == {}
    # a context is needed again, by every add
    with pytest.raises(IllegalStateError):
        b.add_sr([2], FOO0, False)
    with pytest.raises(IllegalStateError):
        b.add_umr([2], [FOO0])
    with pytest.raises(IllegalStateError):
        b.add_lair([2], FOO0, li, ra(1, 2, 3), True)
    assert batch.leader_and_isr_request_map == {} and batch.update_metadata_request_partition_info_map == {}
    b.new_batch()
    b.send()
    assert b.sent_requests == {}


# §4 note: every add_* needs newBatch first (Kafka: NPE on the null metadataInstance).
@pytest.mark.parametrize("which", ["lair", "umr", "umr-no-partitions", "sr"])
def test_add_before_new_batch_raises(kt, which):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    li = put(context, FOO0, 1, [1, 2])
    with pytest.raises(IllegalStateError):
        if which == "lair":
            b.add_lair([2], FOO0, li, ra(1, 2, 3), False)
        elif which == "umr":
            b.add_umr([2], [FOO0])
        elif which == "umr-no-partitions":
            b.add_umr([2], [])
        else:
            b.add_sr([2], FOO0, False)
    assert b.batch.leader_and_isr_request_map == {}
    assert b.batch.stop_replica_request_map == {}


# §4 note / §8: sending before newBatch fails too (no captured context); nothing is sent.
def test_send_before_new_batch_raises(kt):
    b = kt.MockBatch(kt.kafka_context())
    with pytest.raises(IllegalStateError):
        b.send()
    assert b.sent_requests == {}


# ============================================================== §5-§7 adds


# §5/§6/§7 and §14.1: broker ids below 0 are dropped by every add.
def test_negative_broker_ids_dropped(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    b.new_batch()
    li = put(context, FOO0, 1, [1, 2])
    b.add_lair([-1, 2, -2], FOO0, li, ra(1, 2, 3), False)
    b.add_sr([-1, 3], FOO0, True)
    b.add_umr([-7], [])
    assert set(b.batch.leader_and_isr_request_map) == {2}
    assert set(b.batch.stop_replica_request_map) == {3}
    assert set(b.batch.update_metadata_request_broker_set) == {1, 2, 3}  # the LAIR piggyback
    b.send()
    assert set(b.sent_requests) == {1, 2, 3}
    assert -1 not in b.sent_requests


# §5: every LAIR add schedules UMR to all live-or-shutting-down brokers, even with no valid
# destination; the UMR state comes from the context's leadership, not the add's arguments.
def test_lair_add_piggybacks_update_metadata_from_context(kt):
    context = kt.kafka_context()
    context.shutting_down_broker_ids.add(3)
    b = kt.MockBatch(context)
    put(context, FOO0, 1, [1, 2], leader_epoch=4)
    b.new_batch()
    b.add_lair([-1], FOO0, lice(3, [3], leader_epoch=9), ra(3, 2, 1), False)
    b.add_lair([], FOO1, lice(2, [2]), ra(2, 3, 1), False)  # FOO1 has no leadership in the context
    assert b.batch.leader_and_isr_request_map == {}
    assert set(b.batch.update_metadata_request_broker_set) == {1, 2, 3}
    assert set(b.batch.update_metadata_request_partition_info_map) == {FOO0}
    b.send()
    assert set(b.sent_requests) == {1, 2, 3}
    for broker in (1, 2, 3):
        (req,) = b.collect_umr(broker)
        assert b.collect_lair(broker) == []
        version = b.collect_sent(broker, UPDATE_METADATA)[0].version
        (s,) = kt.umr_partition_states(req, version)
        assert (s.leader, s.leader_epoch, list(s.isr), list(s.replicas)) == (1, 4, [1, 2], [1, 2, 3])


# §5: the piggybacked UMR goes to brokers that became live between two LAIR adds, and not to
# brokers that died before the send (the engine caches the broker set per membership change).
def test_lair_add_tracks_broker_membership_changes(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    li0 = put(context, FOO0, 1, [1, 2])
    li1 = put(context, FOO1, 2, [2, 3])
    b.new_batch()
    b.add_lair([2], FOO0, li0, ra(1, 2, 3), False)
    context.add_live_brokers({kt.plaintext_broker(4): 1})
    b.add_lair([2], FOO1, li1, ra(2, 3, 1), False)
    assert 4 in b.batch.update_metadata_request_broker_set
    context.remove_live_brokers({3})
    b.add_lair([2], FOO0, li0, ra(1, 2, 3), False)
    b.send()
    assert set(b.sent_requests) == {1, 2, 4}
    (req4,) = b.collect_umr(4)
    assert {b_.id for b_ in req4.live_brokers} == {1, 2, 4}

    # a second batch on the same instance, membership unchanged since: brokers are added again
    b.transport.clear()
    b.new_batch()
    b.add_lair([2], FOO0, li0, ra(1, 2, 3), False)
    b.send()
    assert set(b.sent_requests) == {1, 2, 4}


# §5: a context without the membership-version hint (any ControllerChannelContext) still works.
def test_lair_add_with_plain_channel_context(kt):
    class Plain:
        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            if name == "broker_membership_version":
                raise AttributeError(name)
            return getattr(self._inner, name)

    context = kt.kafka_context()
    plain = Plain(context)
    b = kt.MockBatch(plain)
    li = put(context, FOO0, 1, [1, 2])
    b.new_batch()
    b.add_lair([2], FOO0, li, ra(1, 2, 3), False)
    context.add_live_brokers({kt.plaintext_broker(4): 1})
    b.add_lair([2], FOO0, li, ra(1, 2, 3), False)
    b.send()
    assert set(b.sent_requests) == {1, 2, 3, 4}


# §5 step 3, §14.6: isNew is a sticky OR per (broker, tp); every other field: the last add wins.
def test_lair_is_new_sticky_and_last_add_wins(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    b.new_batch()
    b.add_lair([2, 3], FOO0, lice(1, [1, 2]), ra(1, 2, 3), True)
    b.add_lair([2], FOO0, lice(2, [2], leader_epoch=3, partition_epoch=5), ra(2, 1), False)
    b.add_lair([1], FOO0, lice(1, [1, 2]), ra(1, 2, 3), False)
    b.add_lair([1], FOO0, lice(1, [1, 2]), ra(1, 2, 3), True)
    m = b.batch.leader_and_isr_request_map
    s2, s3, s1 = m[2][FOO0], m[3][FOO0], m[1][FOO0]
    assert s2.is_new is True
    assert (s2.leader, s2.leader_epoch, s2.partition_epoch, list(s2.isr), list(s2.replicas)) == (2, 3, 5, [2], [2, 1])
    assert s3.is_new is True and s3.leader == 1
    assert s1.is_new is True
    b.send()
    for broker, leader in ((1, 1), (2, 2), (3, 1)):
        (req,) = b.collect_lair(broker)
        version = b.collect_sent(broker, LEADER_AND_ISR)[0].version
        (s,) = kt.lair_partition_states(req, version)
        assert s.is_new is True and s.leader == leader
        assert kt.lair_partition_states(kt.check_wire(b.collect_sent(broker, LEADER_AND_ISR)[0]), version)[0].is_new is True


# §5 step 3: controllerEpoch in the state is the leadership's, the request's is the send argument;
# replicas/adding/removing come from the add's assignment argument.
def test_lair_epochs_and_assignment_sources(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    li = put(context, FOO0, 1, [1, 2], controller_epoch=5)
    b.new_batch()
    b.add_lair([2], FOO0, li, ReplicaAssignment([1, 2, 3, 4], [4], [3]), False)
    b.send(9)
    (req,) = b.collect_lair(2)
    (s,) = kt.lair_partition_states(req, 7)
    assert req.controller_epoch == 9
    assert s.controller_epoch == 5
    assert (list(s.replicas), list(s.adding_replicas), list(s.removing_replicas)) == ([1, 2, 3, 4], [4], [3])
    (umr,) = b.collect_umr(2)
    assert umr.controller_epoch == 9
    (us,) = kt.umr_partition_states(umr, 8)
    assert us.controller_epoch == 5
    assert list(us.replicas) == [1, 2, 3]  # from the context


# §7, §14.6: deletePartition is a sticky OR; leaderEpoch is from the latest call, read from the
# context at add time (-1 without leadership, -2 once queued for deletion).
def test_stop_replica_delete_sticky_and_epoch_from_latest_add(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    b.new_batch()
    b.add_sr([2, 3], FOO0, True)
    assert b.batch.stop_replica_request_map[2][FOO0].leader_epoch == -1
    put(context, FOO0, 1, [1, 2], leader_epoch=6)
    b.add_sr([2], FOO0, False)
    b.add_sr([1], FOO0, False)
    context.queue_topic_deletion({"foo"})
    b.add_sr([1], FOO0, True)
    m = b.batch.stop_replica_request_map
    assert (m[2][FOO0].delete_partition, m[2][FOO0].leader_epoch) == (True, 6)
    assert (m[3][FOO0].delete_partition, m[3][FOO0].leader_epoch) == (True, -1)
    assert (m[1][FOO0].delete_partition, m[1][FOO0].leader_epoch) == (True, -2)
    b.send()
    for broker, epoch in ((1, -2), (2, 6), (3, -1)):
        (req,) = b.collect_sr(broker)
        states = kt.sr_partition_states(req, 4)
        assert states == {FOO0: StopReplicaPartitionState(0, epoch, True)}


# §6: one UMR partition map for every destination; last write wins per partition.
def test_update_metadata_partitions_shared_by_all_destinations(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    put(context, FOO0, 1, [1, 2])
    put(context, BAR1, 3, [1, 3])
    b.new_batch()
    b.add_umr([2], [FOO0])
    b.add_umr([3], [BAR1])
    put(context, FOO0, 2, [2], leader_epoch=1)
    b.add_umr([2], [FOO0])
    b.send()
    assert set(b.sent_requests) == {2, 3}
    for broker in (2, 3):
        (req,) = b.collect_umr(broker)
        states = {kt.tp_of(s): s for s in kt.umr_partition_states(req, 8)}
        assert set(states) == {FOO0, BAR1}
        assert (states[FOO0].leader, states[FOO0].leader_epoch) == (2, 1)


# §6 (a): offlineReplicas = replicas not online: on shutting-down brokers, dead brokers and
# offline log dirs, in the order of the replica list.
def test_update_metadata_offline_replicas(kt):
    context = kt.kafka_context()  # foo-0 [1,2,3], foo-1 [2,3,1], bar-0 [3,1,2], bar-1 [1,2,3]
    context.shutting_down_broker_ids.add(2)
    context.remove_live_brokers({3})
    context.add_replicas_on_offline_dirs(1, [FOO0])
    for tp in (FOO0, FOO1, BAR0):
        put(context, tp, 1, [1])
    b = kt.MockBatch(context)
    b.new_batch()
    b.add_umr([1], [FOO0, FOO1, BAR0])
    b.send()
    (req,) = b.collect_umr(1)
    states = {kt.tp_of(s): s for s in kt.umr_partition_states(req, 8)}
    assert list(states[FOO0].offline_replicas) == [1, 2, 3]
    assert list(states[FOO1].offline_replicas) == [2, 3]
    assert list(states[BAR0].offline_replicas) == [3, 2]
    assert list(states[FOO1].replicas) == [2, 3, 1]
    parsed = kt.parse_back(b.collect_sent(1, UPDATE_METADATA)[0])
    assert {kt.tp_of(s): list(s.offline_replicas) for s in kt.umr_partition_states(parsed, 8)} == {
        FOO0: [1, 2, 3], FOO1: [2, 3], BAR0: [3, 2]
    }


# §6 (a), §0 duringDelete: a queued topic's UMR state is leader -2, leaderEpoch 0, zkVersion 0,
# ISR and controller epoch kept; other topics keep their real epochs (zkVersion = partitionEpoch).
def test_update_metadata_for_topic_queued_for_deletion(kt):
    context = kt.kafka_context()
    put(context, FOO0, 1, [1, 2], controller_epoch=3, leader_epoch=5, partition_epoch=7)
    put(context, BAR1, 3, [3, 1], controller_epoch=3, leader_epoch=5, partition_epoch=7)
    context.queue_topic_deletion({"foo"})
    b = kt.MockBatch(context)
    b.new_batch()
    b.add_umr([2], [FOO0, BAR1])
    b.send()
    (req,) = b.collect_umr(2)
    parsed = kt.parse_back(b.collect_sent(2, UPDATE_METADATA)[0])
    for r in (req, parsed):
        states = {kt.tp_of(s): s for s in kt.umr_partition_states(r, 8)}
        foo = states[FOO0]
        assert (foo.leader, foo.leader_epoch, foo.zk_version, list(foo.isr), foo.controller_epoch) == (-2, 0, 0, [1, 2], 3)
        bar = states[BAR1]
        assert (bar.leader, bar.leader_epoch, bar.zk_version, list(bar.isr)) == (3, 5, 7, [3, 1])


# ============================================================== §8 send


# §8: LAIR → UMR → SR(delete) → SR(non-delete), per broker, in transport order; maps cleared.
def test_send_order_per_broker_and_maps_cleared(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context, MV.IBP_2_4_IV1)  # SR v2: split requests
    li = put(context, FOO0, 1, [1, 2])
    put(context, FOO1, 2, [2, 3])
    b.new_batch()
    b.add_sr([2], FOO1, False)
    b.add_sr([2], FOO0, True)
    b.add_lair([2], FOO0, li, ra(1, 2, 3), False)
    b.send()
    sent = b.sent_requests[2]
    assert [(r.api_key, getattr(r.body, "delete_partitions", None)) for r, _ in sent] == [
        (LEADER_AND_ISR, None), (UPDATE_METADATA, None), (STOP_REPLICA, True), (STOP_REPLICA, False)
    ]
    assert sent[2][1] is not None and sent[3][1] is None  # §8.3: no callback on the non-delete request
    batch = b.batch
    assert batch.leader_and_isr_request_map == {} and batch.stop_replica_request_map == {}
    assert len(batch.update_metadata_request_broker_set) == 0
    assert batch.update_metadata_request_partition_info_map == {}
    assert batch.metadata_instance is context  # §8: kept until the next newBatch/clear
    b.new_batch()


# §8.1/§8.2/§8.3: entries for dead brokers are dropped silently and the maps still cleared.
def test_dead_broker_entries_dropped_and_cleared(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    li = put(context, FOO0, 1, [1, 2])
    b.new_batch()
    b.add_lair([7], FOO0, li, ra(1, 2, 3), False)
    b.add_sr([8], FOO0, False)
    b.add_umr([9], [FOO0])
    b.send()
    assert set(b.sent_requests) == {1, 2, 3}  # only the LAIR piggyback UMRs
    assert all(r.api_key == UPDATE_METADATA for reqs in b.sent_requests.values() for r, _ in reqs)
    b.new_batch()  # nothing left over


# §8 failure: a live leader with no endpoint on the inter-broker listener fails phase 1; the error
# is re-raised as IllegalStateError with the cause, nothing is cleared and updateType is kept.
def test_send_failure_in_leader_and_isr_phase(kt, caplog):
    context = kt.kafka_context()
    old3 = next(x for x in context.live_or_shutting_down_brokers if x.id == 3)
    context.update_broker_metadata(old3, Broker(3, [EndPoint("h3", 19093, "INTERNAL", SecurityProtocol.SSL)]))
    b = kt.MockBatch(context)
    li = put(context, FOO0, 3, [3, 1])
    b.new_batch()
    b.batch.set_update_type(UpdateType.FULL)
    b.add_lair([2], FOO0, li, ra(3, 1, 2), False)
    b.add_sr([1], FOO1, False)
    caplog.set_level(logging.ERROR)
    with pytest.raises(IllegalStateError) as e:
        b.send()
    cause = e.value.__cause__
    assert isinstance(cause, BrokerEndPointNotAvailableError)
    assert str(cause) == "End point with listener name PLAINTEXT not found for broker 3"
    assert "End point with listener name PLAINTEXT not found for broker 3" in str(e.value)
    assert b.sent_requests == {}
    batch = b.batch
    assert set(batch.leader_and_isr_request_map) == {2}
    assert set(batch.update_metadata_request_broker_set) == {1, 2, 3}
    assert set(batch.update_metadata_request_partition_info_map) == {FOO0}
    assert set(batch.stop_replica_request_map) == {1}
    assert batch.update_type == UpdateType.FULL
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any(m.startswith("Haven't been able to send leader and isr requests, current state of the map is HashMap(2 -> ")
               for m in errors), errors
    assert any(m.startswith("Haven't been able to send metadata update requests to brokers HashSet(1, 2, 3), "
                            "current state of the partition info is HashMap(foo-0 -> ") for m in errors), errors
    assert any(m.startswith("Haven't been able to send stop replica requests, current state of the map is HashMap(1 -> ")
               for m in errors), errors
    with pytest.raises(IllegalStateError, match="^" + NOT_EMPTY + "Some LeaderAndIsr state changes "):
        b.new_batch()
    batch.clear()
    b.new_batch()


# §8.2 failure in phase 2: UMR v1/v2 refuse custom listener names; phase 1 was already sent and
# cleared, the UMR and SR collections stay, so the next newBatch names the StopReplica map.
@pytest.mark.parametrize(("ibp", "version"), [(MV.IBP_0_9_0, 1), (MV.IBP_0_10_0_IV1, 2)], ids=["v1", "v2"])
def test_update_metadata_custom_listener_fails_below_v3(kt, ibp, version):
    context = kt.kafka_context()
    old3 = next(x for x in context.live_or_shutting_down_brokers if x.id == 3)
    context.update_broker_metadata(old3, Broker(3, [EndPoint("localhost", 9903, "INTERNAL", SecurityProtocol.PLAINTEXT)]))
    b = kt.MockBatch(context, ibp)
    li = put(context, FOO0, 1, [1, 2])
    b.new_batch()
    b.add_lair([2], FOO0, li, ra(1, 2, 3), False)
    b.add_sr([2], FOO1, False)
    with pytest.raises(IllegalStateError) as e:
        b.send()
    cause = e.value.__cause__
    assert isinstance(cause, UnsupportedVersionError)
    assert str(cause) == (
        f"UpdateMetadataRequest v0-v3 does not support custom listeners, request version: {version}, endpoints: "
        "[UpdateMetadataEndpoint(port=9903, host='localhost', listener='INTERNAL', securityProtocol=0)]"
    )
    assert [r.api_key for r, _ in b.sent_requests[2]] == [LEADER_AND_ISR]
    assert b.batch.leader_and_isr_request_map == {}
    assert len(b.batch.update_metadata_request_broker_set) == 3
    assert set(b.batch.stop_replica_request_map) == {2}
    with pytest.raises(IllegalStateError, match="^" + NOT_EMPTY + "Some StopReplica state changes "):
        b.new_batch()


# §8.2: from v3 on a custom listener name goes on the wire.
def test_update_metadata_custom_listener_ok_from_v3(kt):
    context = kt.kafka_context()
    old3 = next(x for x in context.live_or_shutting_down_brokers if x.id == 3)
    context.update_broker_metadata(old3, Broker(3, [EndPoint("localhost", 9903, "INTERNAL", SecurityProtocol.PLAINTEXT)]))
    b = kt.MockBatch(context, MV.IBP_0_10_2_IV0)
    b.new_batch()
    b.add_umr([2], [])
    b.send()
    sent = b.collect_sent(2, UPDATE_METADATA)
    assert sent[0].version == 3
    parsed = kt.check_wire(sent[0])
    (ep,) = next(x for x in parsed.live_brokers if x.id == 3).endpoints
    assert (ep.listener, ep.security_protocol, ep.port) == ("INTERNAL", 0, 9903)


# §8.2 v0: the batch sends one endpoint per broker, the PLAINTEXT listener's node, as protocol 0.
# A broker without that listener fails through Broker.node, wrapped as IllegalStateError.
def test_update_metadata_v0_endpoint(kt):
    context = kt.kafka_context()
    old2 = next(x for x in context.live_or_shutting_down_brokers if x.id == 2)
    # two listeners, and the one named PLAINTEXT is actually SSL: v0 still sends one PLAINTEXT endpoint
    context.update_broker_metadata(old2, Broker(2, [EndPoint("h2", 9092, "PLAINTEXT", SecurityProtocol.SSL),
                                                   EndPoint("h2", 9093, "SSL", SecurityProtocol.SSL)]))
    b = kt.MockBatch(context, MV.IBP_0_8_2)
    b.new_batch()
    b.add_umr([2], [])
    b.send()
    sent = b.collect_sent(2, UPDATE_METADATA)
    assert sent[0].version == 0
    parsed = kt.check_wire(sent[0])
    assert {(x.id, x.v0_host, x.v0_port) for x in parsed.live_brokers} == {
        (1, "localhost", 9901), (2, "h2", 9092), (3, "localhost", 9903)
    }

    old3 = next(x for x in context.live_or_shutting_down_brokers if x.id == 3)
    context.update_broker_metadata(old3, Broker(3, [EndPoint("h3", 9094, "SSL", SecurityProtocol.SSL)]))
    b.new_batch()
    b.add_umr([2], [])
    with pytest.raises(IllegalStateError) as e:
        b.send()
    assert isinstance(e.value.__cause__, BrokerEndPointNotAvailableError)
    assert str(e.value.__cause__) == "End point with listener name PLAINTEXT not found for broker 3"


# §8.2 (UMRq:37-78) v0 builder rules, which the batch itself can never trip (it always builds a
# single PLAINTEXT endpoint at v0), checked on the builder directly.
def test_update_metadata_builder_v0_rules():
    two = UpdateMetadataBroker(id=1, endpoints=[UpdateMetadataEndpoint(port=1, host="a", listener="PLAINTEXT"),
                                                UpdateMetadataEndpoint(port=2, host="a", listener="SSL", security_protocol=1)])
    ssl = UpdateMetadataBroker(id=1, endpoints=[UpdateMetadataEndpoint(port=2, host="a", listener="SSL", security_protocol=1)])
    with pytest.raises(UnsupportedVersionError, match="^UpdateMetadataRequest v0 requires a single endpoint$"):
        UpdateMetadataBuilder(0, 1, 1, [], (two,), {}).build(1)
    with pytest.raises(UnsupportedVersionError, match="^UpdateMetadataRequest v0 only handles PLAINTEXT endpoints$"):
        UpdateMetadataBuilder(0, 1, 1, [], (ssl,), {}).build(1)
    UpdateMetadataBuilder(1, 1, 1, [], (two,), {}).build(1)  # default listener names are fine at v1


# §11, §8.1-8.3: isKRaftController is written only at LAIR v7+, UMR v8+, SR v4+.
@pytest.mark.parametrize("ibp", ALL_VERSIONS, ids=VERSION_IDS)
def test_kraft_controller_flag(kt, ibp):
    context = kt.kafka_context()
    b = kt.MockBatch(context, ibp, kraft_controller=True)
    li = put(context, FOO0, 1, [1, 2])
    b.new_batch()
    b.add_lair([2], FOO0, li, ra(1, 2, 3), False)
    b.add_sr([2], FOO1, False)
    b.send()
    wanted = {LEADER_AND_ISR: kt.expected_lair_version(ibp) >= 7, UPDATE_METADATA: kt.expected_umr_version(ibp) >= 8,
              STOP_REPLICA: kt.expected_sr_version(ibp) >= 4}
    seen = set()
    for req, _ in b.sent_requests[2]:
        parsed = kt.check_wire(req)
        assert req.body.is_k_raft_controller is wanted[req.api_key], (req.api_key, req.version)
        assert parsed.is_k_raft_controller is wanted[req.api_key]
        seen.add(req.api_key)
    assert seen == {LEADER_AND_ISR, UPDATE_METADATA, STOP_REPLICA}


# §4 setUpdateType, §8.1 (Type at LAIR v5+), §8.2 (tagged Type at UMR v8 only); reset after a
# successful send.
@pytest.mark.parametrize("ibp", ALL_VERSIONS, ids=VERSION_IDS)
def test_update_type_written_and_reset(kt, ibp):
    context = kt.kafka_context()
    b = kt.MockBatch(context, ibp)
    li = put(context, FOO0, 1, [1, 2])
    b.new_batch()
    b.batch.set_update_type(UpdateType.FULL)
    b.add_lair([2], FOO0, li, ra(1, 2, 3), False)
    b.send()
    assert b.batch.update_type == UpdateType.UNKNOWN
    (lair,) = b.collect_sent(2, LEADER_AND_ISR)
    (umr,) = b.collect_sent(2, UPDATE_METADATA)
    lair_type = 2 if lair.version >= 5 else 0
    umr_type = 2 if umr.version >= 8 else 0
    assert lair.body.type == lair_type and kt.check_wire(lair).type == lair_type
    assert umr.body.type == umr_type and kt.check_wire(umr).type == umr_type

    b.transport.clear()
    b.new_batch()
    b.add_lair([2], FOO0, li, ra(1, 2, 3), False)
    b.send()
    for req, _ in b.sent_requests[2]:
        assert kt.check_wire(req).type == 0


# §8.2: the UMR tagged Type changes the v8 bytes; below v8 FULL and UNKNOWN encode identically.
def test_update_type_bytes_umr(kt):
    def umr_bytes(ibp, update_type):
        context = kt.kafka_context({"foo": uuid.UUID(int=1), "bar": uuid.UUID(int=2)})
        b = kt.MockBatch(context, ibp)
        b.new_batch()
        b.batch.set_update_type(update_type)
        b.add_umr([2], [])
        b.send()
        return b.collect_sent(2, UPDATE_METADATA)[0].encode_body()

    assert umr_bytes(MV.IBP_3_9_IV0, UpdateType.FULL) != umr_bytes(MV.IBP_3_9_IV0, UpdateType.UNKNOWN)
    assert umr_bytes(MV.IBP_3_9_IV0, UpdateType.INCREMENTAL) != umr_bytes(MV.IBP_3_9_IV0, UpdateType.UNKNOWN)
    assert umr_bytes(MV.IBP_3_3_IV3, UpdateType.FULL) == umr_bytes(MV.IBP_3_3_IV3, UpdateType.UNKNOWN)


# §8.1/§8.2: a topic without an id gets ZERO_UUID (LAIR: absent from the map; UMR: left out).
def test_topics_without_ids_get_zero_uuid(kt):
    context = kt.kafka_context()
    context.set_all_topics(["foo", "bar", "baz"])
    baz0 = TopicPartition("baz", 0)
    context.update_partition_full_replica_assignment(baz0, ra(1, 2, 3))
    li = put(context, baz0, 1, [1, 2])
    li_foo = put(context, FOO0, 1, [1, 2])
    b = kt.MockBatch(context)
    b.new_batch()
    b.add_lair([2], baz0, li, ra(1, 2, 3), False)
    b.add_lair([2], FOO0, li_foo, ra(1, 2, 3), False)
    b.send()
    for api in (LEADER_AND_ISR, UPDATE_METADATA):
        (req,) = b.collect_sent(2, api)
        for r in (req.body, kt.check_wire(req)):
            ids = {ts.topic_name: ts.topic_id for ts in r.topic_states}
            assert ids == {"baz": ZERO_UUID, "foo": context.topic_ids["foo"]}


# §8.1: liveLeaders are the live-or-shutting-down leaders on the inter-broker listener; dead
# leaders, -1 and -2 are left out.
def test_live_leaders_use_inter_broker_listener(kt):
    context = ControllerContext()
    brokers = {
        Broker(i, [EndPoint("localhost", 9900 + i, "PLAINTEXT", SecurityProtocol.PLAINTEXT),
                   EndPoint(f"internal-{i}", 9800 + i, "INTERNAL", SecurityProtocol.SSL)]): 1
        for i in (1, 2, 3, 4)
    }
    context.set_live_brokers(brokers)
    context.set_all_topics(["foo", "bar"])
    context.shutting_down_broker_ids.add(2)
    context.remove_live_brokers({3})
    b = kt.MockBatch(context, inter_broker_listener_name="INTERNAL")
    b.new_batch()
    for tp, leader in ((FOO0, 1), (FOO1, 3), (BAR0, -1), (BAR1, 2)):
        context.update_partition_full_replica_assignment(tp, ra(1, 2, 3))
        b.add_lair([4], tp, lice(leader, [1, 2]), ra(1, 2, 3), False)
    b.send()
    (req,) = b.collect_sent(4, LEADER_AND_ISR)
    for r in (req.body, kt.check_wire(req)):
        assert {(x.broker_id, x.host_name, x.port) for x in r.live_leaders} == {(1, "internal-1", 9801), (2, "internal-2", 9802)}
    # UMR v1+ lists every endpoint of every live-or-shutting-down broker, in order
    (umr,) = b.collect_sent(4, UPDATE_METADATA)
    assert [(x.id, [e.listener for e in x.endpoints]) for x in kt.check_wire(umr).live_brokers] == [
        (1, ["PLAINTEXT", "INTERNAL"]), (2, ["PLAINTEXT", "INTERNAL"]), (4, ["PLAINTEXT", "INTERNAL"])
    ]


# §8.3: the StopReplica callback reads deletion state when the response arrives; a top-level
# error is carried in the event; a response with no partition errors makes no event (CCM:353-357).
def test_stop_replica_callback_reads_context_at_response_time(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    put(context, FOO0, 1, [1, 2])
    b.new_batch()
    b.add_sr([2], FOO0, True)
    b.add_sr([2], BAR1, True)
    b.send()
    (req, cb) = b.sent_requests[2][0]
    assert cb is not None
    cb(StopReplicaResponse(error_code=0, partition_errors=[StopReplicaPartitionError("foo", 0, 0)]))
    assert b.sent_events == []
    context.queue_topic_deletion({"foo"})
    context.begin_topic_deletion({"foo"})
    kt.apply_sr_callbacks(kt.STALE_BROKER_EPOCH, b.sent_requests[2])
    assert b.sent_events == [TopicDeletionStopReplicaResponseReceived(2, kt.STALE_BROKER_EPOCH, {FOO0: kt.STALE_BROKER_EPOCH})]
    cb(StopReplicaResponse(error_code=kt.STALE_BROKER_EPOCH))  # as a broker answers a stale epoch (§11)
    assert len(b.sent_events) == 1


# §8.3: at v3+ only the partitions deleted in this request count; below v3 the delete request's
# callback counts every partition it carries.
def test_stop_replica_callback_only_deleted_partitions(kt):
    context = kt.kafka_context()
    context.queue_topic_deletion({"foo"})
    context.begin_topic_deletion({"foo"})
    b = kt.MockBatch(context)
    b.new_batch()
    b.add_sr([2], FOO0, True)
    b.add_sr([2], FOO1, False)
    b.send()
    kt.apply_sr_callbacks(kt.NONE, b.sent_requests[2])
    assert [set(e.partition_errors) for e in b.sent_events] == [{FOO0}]


# §8.1 callbacks: each LAIR / UMR response becomes an event naming its broker.
def test_lair_and_umr_callbacks_become_events(kt):
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    li = put(context, FOO0, 1, [1, 2])
    b.new_batch()
    b.add_lair([1, 2], FOO0, li, ra(1, 2, 3), False)
    b.send()
    for broker in (1, 2):
        kt.apply_lair_callbacks(kt.KAFKA_STORAGE_ERROR, b.sent_requests[broker])
    kt.apply_umr_callbacks(kt.NONE, b.sent_requests[3])
    kinds = [(type(e), e.broker_id) for e in b.sent_events]
    assert kinds == [(LeaderAndIsrResponseReceived, 1), (LeaderAndIsrResponseReceived, 2), (UpdateMetadataResponseReceived, 3)]
    assert b.sent_events[0].response.topics[0].partition_errors[0].error_code == kt.KAFKA_STORAGE_ERROR


# §2: with on_event set, events go there and not to batch.events.
def test_on_event_receives_events(kt):
    got = []
    context = kt.kafka_context()
    b = kt.MockBatch(context, on_event=got.append)
    b.new_batch()
    b.add_umr([2], [])
    b.send()
    kt.apply_umr_callbacks(kt.NONE, b.sent_requests[2])
    assert len(got) == 1 and b.sent_events == []


# ============================================================== shared bodies (port design)


# §8.1/§8.2 plus the port's sharing: every broker's request of one api has the same bytes except
# the 8 broker-epoch bytes (none differ where the version has no BrokerEpoch), and each equals
# its own body.encode(version).
@pytest.mark.parametrize("ibp", ALL_VERSIONS, ids=VERSION_IDS)
def test_shared_bodies_differ_only_in_broker_epoch(kt, ibp):
    epochs = {1: 101, 2: 0x0102030405060708, 3: 3}
    context = kt.init_context([1, 2, 3], 2, 3, {"foo": uuid.UUID(int=5), "bar": uuid.UUID(int=6)}, broker_epochs=epochs)
    b = kt.MockBatch(context, ibp)
    lis = {tp: put(context, tp, 1 + i, [1, 2, 3]) for i, tp in enumerate((FOO0, FOO1, BAR1))}
    b.new_batch()
    for tp, li in lis.items():
        b.add_lair([1, 2, 3], tp, li, ra(1, 2, 3), tp == FOO1)
        b.add_sr([1, 2, 3], tp, tp != BAR1)
    b.send()
    for api in (LEADER_AND_ISR, UPDATE_METADATA, STOP_REPLICA):
        per_broker = {broker: b.collect_sent(broker, api) for broker in (1, 2, 3)}
        count = len(per_broker[1])
        assert count >= 1 and all(len(v) == count for v in per_broker.values())
        for i in range(count):
            reqs = {broker: per_broker[broker][i] for broker in (1, 2, 3)}
            datas = {}
            for broker, req in reqs.items():
                kt.check_wire(req)
                datas[broker] = req.encode_body()
            # §11: BrokerEpoch is on the wire in LAIR v2+, UMR v5+, SR v1+
            has_epoch = reqs[1].version >= {LEADER_AND_ISR: 2, UPDATE_METADATA: 5, STOP_REPLICA: 1}[api]
            if not has_epoch:
                assert datas[1] == datas[2] == datas[3]
                continue
            for broker, req in reqs.items():
                assert req.body.broker_epoch == epochs[broker]
                assert kt.parse_back(req).broker_epoch == epochs[broker]
            window = kt.epoch_diff_window(datas[1], datas[2])
            assert window is not None and window[1] - window[0] <= 7
            # the epoch field: broker 2's epoch has 8 distinct non-zero bytes, so it is found once
            start = datas[2].index(struct.pack(">q", epochs[2]))
            assert start <= window[0] and window[1] < start + 8
            for broker in (1, 2, 3):
                d = datas[broker]
                assert d[start:start + 8] == struct.pack(">q", epochs[broker])
                assert d[:start] == datas[2][:start] and d[start + 8:] == datas[2][start + 8:]


# §8.1 (per-destination contents): brokers with different partition sets get their own bodies,
# and the shared encodings of states still match the codec.
@pytest.mark.parametrize("ibp", [MV.IBP_0_8_0, MV.IBP_1_0_IV0, MV.IBP_2_2_IV0, MV.IBP_2_4_IV1, MV.IBP_2_8_IV1, MV.IBP_3_9_IV0],
                         ids=lambda m: m.version)
def test_lair_per_broker_contents(kt, ibp):
    context = kt.kafka_context()
    b = kt.MockBatch(context, ibp)
    lis = {tp: put(context, tp, 1, [1, 2]) for tp in (FOO0, FOO1, BAR0, BAR1)}
    b.new_batch()
    b.add_lair([1, 2, 3], FOO0, lis[FOO0], ra(1, 2, 3), False)
    b.add_lair([1, 3], BAR0, lis[BAR0], ra(1, 2, 3), True)
    b.add_lair([3], FOO1, lis[FOO1], ra(1, 2, 3), False)
    b.add_lair([2, 1], BAR1, lis[BAR1], ra(1, 2, 3), False)
    b.add_lair([1], FOO0, lis[FOO0], ra(1, 2, 3), True)
    b.send()
    expected = {1: [FOO0, BAR0, BAR1], 2: [FOO0, BAR1], 3: [FOO0, BAR0, FOO1]}
    for broker, tps in expected.items():
        (req,) = b.collect_sent(broker, LEADER_AND_ISR)
        parsed = kt.check_wire(req)
        states = kt.lair_partition_states(req.body, req.version)
        assert sorted(kt.tp_of(s) for s in states) == sorted(tps)
        if req.version >= 1:
            assert {kt.tp_of(s): s.is_new for s in kt.lair_partition_states(parsed, req.version)} == {
                tp: (broker == 1 and tp == FOO0) or tp == BAR0 for tp in tps
            }


# ============================================================== §8 logging


def _state_change_messages(caplog, level):
    return [r.getMessage() for r in caplog.records if r.name == STATE_CHANGE and r.levelno == level]


# §8.1/§8.2/§8.3 INFO lines on the state-change logger, "[Controller id=1 epoch=E] " prefix;
# per-partition lines (Kafka TRACE) only at DEBUG.
def test_state_change_logging_info(kt, caplog):
    caplog.set_level(logging.INFO, logger=STATE_CHANGE)
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    b.new_batch()
    for tp, leader, isr in ((FOO0, 1, [1, 2]), (FOO1, 2, [2, 3]), (BAR1, 3, [1, 3])):
        b.add_lair([2], tp, put(context, tp, leader, isr), ra(1, 2, 3), False)
    b.add_sr([3], FOO0, False)
    b.send(1)
    assert _state_change_messages(caplog, logging.INFO) == [
        "[Controller id=1 epoch=1] Sending LeaderAndIsr request to broker 2 with 1 become-leader and 2 become-follower partitions",
        "[Controller id=1 epoch=1] Sending UpdateMetadata request to brokers HashSet(1, 2, 3) for 3 partitions",
        "[Controller id=1 epoch=1] Sending StopReplica request for 1 replicas to broker 3",
    ]
    assert _state_change_messages(caplog, logging.DEBUG) == []


def test_state_change_logging_debug(kt, caplog):
    caplog.set_level(logging.DEBUG, logger=STATE_CHANGE)
    context = kt.kafka_context()
    b = kt.MockBatch(context)
    b.new_batch()
    b.add_lair([2], FOO0, put(context, FOO0, 1, [1, 2]), ra(1, 2, 3), False)
    b.add_lair([2], FOO1, put(context, FOO1, 2, [2, 3]), ra(2, 3, 1), False)
    b.add_sr([3], FOO0, True)
    b.send(4)
    debug = _state_change_messages(caplog, logging.DEBUG)
    assert debug == [
        "[Controller id=1 epoch=4] Sending become-follower LeaderAndIsr request LeaderAndIsrPartitionState(topicName='foo', "
        "partitionIndex=0, controllerEpoch=1, leader=1, leaderEpoch=0, isr=[1, 2], partitionEpoch=0, replicas=[1, 2, 3], "
        "addingReplicas=[], removingReplicas=[], isNew=false, leaderRecoveryState=0) to broker 2 for partition foo-0",
        "[Controller id=1 epoch=4] Sending become-leader LeaderAndIsr request LeaderAndIsrPartitionState(topicName='foo', "
        "partitionIndex=1, controllerEpoch=1, leader=2, leaderEpoch=0, isr=[2, 3], partitionEpoch=0, replicas=[2, 3, 1], "
        "addingReplicas=[], removingReplicas=[], isNew=false, leaderRecoveryState=0) to broker 2 for partition foo-1",
        "[Controller id=1 epoch=4] Sending StopReplica request StopReplicaPartitionState(partitionIndex=0, leaderEpoch=0, "
        "deletePartition=true) to broker 3 for partition foo-0",
    ]
    assert "[Controller id=1 epoch=4] Sending LeaderAndIsr request to broker 2 with 1 become-leader and 1 become-follower partitions" in (
        _state_change_messages(caplog, logging.INFO)
    )


# §8.2: the UMR INFO line is logged even with no destination; §8.3 pre-v3 delete/non-delete lines.
def test_state_change_logging_pre_v3_stop_replica(kt, caplog):
    caplog.set_level(logging.INFO, logger=STATE_CHANGE)
    context = kt.kafka_context()
    b = kt.MockBatch(context, MV.IBP_2_5_IV0)
    b.new_batch()
    b.add_sr([2], FOO0, True)
    b.add_sr([2], FOO1, True)
    b.add_sr([2], BAR0, False)
    b.send(3)
    assert _state_change_messages(caplog, logging.INFO) == [
        "[Controller id=1 epoch=3] Sending UpdateMetadata request to brokers HashSet() for 0 partitions",
        "[Controller id=1 epoch=3] Sending StopReplica request (delete = true) for 2 replicas to broker 2",
        "[Controller id=1 epoch=3] Sending StopReplica request (delete = false) for 1 replicas to broker 2",
    ]


# §6 (a): a partition without leadership is skipped with an INFO line.
def test_leader_not_yet_assigned_logged(kt, caplog):
    caplog.set_level(logging.INFO)
    b = kt.MockBatch(kt.kafka_context())
    b.new_batch()
    b.add_umr([2], [FOO0])
    assert "Leader not yet assigned for partition foo-0. Skip sending UpdateMetadataRequest." in [
        r.getMessage() for r in caplog.records if r.levelno == logging.INFO
    ]


# ============================================================== determinism, providers, pickle

_SCENARIO = r'''
import hashlib, uuid
from ctrlbatch.batch import ControllerBrokerRequestBatch, RecordingTransport
from ctrlbatch.context import (Broker, ControllerContext, EndPoint, LeaderAndIsr, LeaderIsrAndControllerEpoch,
    MetadataVersion, ReplicaAssignment, SecurityProtocol, TopicPartition)

def run(ibp):
    ctx = ControllerContext()
    ctx.set_live_brokers({Broker(i, [EndPoint("localhost", 9900 + i, "PLAINTEXT", SecurityProtocol.PLAINTEXT)]): 10 * i
                          for i in (3, 1, 2, 4)})
    topics = ["zeta", "alpha", "mid", "beta"]
    ctx.set_all_topics(topics)
    for n, t in enumerate(topics):
        ctx.add_topic_id(t, uuid.UUID(int=n + 1))
    tps = []
    for n, t in enumerate(topics):
        for p in range(3):
            tp = TopicPartition(t, p)
            reps = [1 + (n + p + i) % 4 for i in range(3)]
            ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment(reps))
            ctx.put_partition_leadership_info(tp, LeaderIsrAndControllerEpoch(LeaderAndIsr(reps[0], reps[:2], p, n), 1))
            tps.append(tp)
    ctx.queue_topic_deletion({"mid"})
    ctx.begin_topic_deletion({"mid"})
    ctx.shutting_down_broker_ids.add(4)
    t = RecordingTransport()
    b = ControllerBrokerRequestBatch(1, ctx, ibp, t)
    b.new_batch()
    for tp in tps:
        li = ctx.partition_leadership_info(tp)
        b.add_leader_and_isr_request_for_brokers(ctx.partition_replica_assignment(tp), tp, li,
                                                 ctx.partition_full_replica_assignment(tp), tp.partition == 1)
    b.add_update_metadata_request_for_brokers({4, 2, 3}, set(tps))
    for tp in tps:
        b.add_stop_replica_request_for_brokers([2, 3], tp, tp.topic in ("mid", "beta"))
    b.send_requests_to_brokers(5)
    h = hashlib.sha256()
    corr = 0
    for broker, reqs in t.sent.items():
        h.update(str(broker).encode())
        for req, cb in reqs:
            corr += 1
            h.update(req.encode(corr, "1"))
            h.update(b"cb" if cb is not None else b"-")
    return h.hexdigest()

print(run(MetadataVersion.IBP_3_9_IV0), run(MetadataVersion.IBP_2_4_IV1), run(MetadataVersion.IBP_0_8_0))
'''


# Port promise: the same sequence gives identical frames, in one process and across hash seeds.
def test_determinism_same_sequence_same_bytes():
    ns: dict = {}
    exec(compile(_SCENARIO.replace("print(", "RESULT = ("), "<scenario>", "exec"), ns)
    first = ns["RESULT"]
    exec(compile(_SCENARIO.replace("print(", "RESULT = ("), "<scenario>", "exec"), ns)
    assert ns["RESULT"] == first
    outs = set()
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", _SCENARIO], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        outs.add(out.stdout.strip())
    assert outs == {" ".join(first)}


# Port promise: a metadata version given as a zero-arg callable is read at new_batch.
def test_metadata_version_callable_read_at_new_batch(kt):
    cell = [MV.IBP_3_9_IV0]
    calls = []

    def provider():
        calls.append(cell[0])
        return cell[0]

    context = kt.kafka_context()
    b = kt.MockBatch(context, provider)
    assert calls == []
    li = put(context, FOO0, 1, [1, 2], leader_recovery_state=LeaderRecoveryState.RECOVERING)
    b.new_batch()
    assert calls == [MV.IBP_3_9_IV0]
    cell[0] = MV.IBP_2_0_IV0
    b.add_lair([2], FOO0, li, ra(1, 2, 3), False)
    b.send()
    (req,) = b.collect_sent(2, LEADER_AND_ISR)
    assert req.version == 7
    assert kt.lair_partition_states(req.body, 7)[0].leader_recovery_state == 1
    b.transport.clear()
    b.new_batch()
    b.add_lair([2], FOO0, li, ra(1, 2, 3), False)
    b.send()
    (req,) = b.collect_sent(2, LEADER_AND_ISR)
    assert req.version == 1
    assert kt.lair_partition_states(req.body, 1)[0].leader_recovery_state == 0
    assert b.collect_sent(2, UPDATE_METADATA)[0].version == 4


# §2: the context may also come from a zero-arg provider, called at new_batch.
def test_context_provider_callable(kt):
    contexts = [kt.kafka_context(), kt.init_context([1, 2], 1, 2, ["foo"])]
    it = iter(contexts)
    b = kt.MockBatch(lambda: next(it))
    b.new_batch()
    b.add_umr([1, 2, 3], [])
    b.send()
    assert set(b.sent_requests) == {1, 2, 3}
    b.transport.clear()
    b.new_batch()
    b.add_umr([1, 2, 3], [])
    b.send()
    assert set(b.sent_requests) == {1, 2}


def _filled_batch(kt):
    context = kt.kafka_context({"foo": uuid.UUID(int=11), "bar": uuid.UUID(int=12)})
    transport = RecordingTransport()
    batch = ControllerBrokerRequestBatch(1, context, MV.IBP_3_9_IV0, transport, on_event=None)
    batch.new_batch()
    li = put(context, FOO0, 1, [1, 2], leader_recovery_state=LeaderRecoveryState.RECOVERING)
    put(context, BAR1, 3, [3, 1])
    batch.add_leader_and_isr_request_for_brokers([2, 3], FOO0, li, ReplicaAssignment([1, 2, 3]), True)
    batch.add_leader_and_isr_request_for_brokers([2], FOO0, li, ReplicaAssignment([1, 2, 3]), False)
    batch.add_stop_replica_request_for_brokers([3], FOO1, True)
    batch.add_update_metadata_request_for_brokers([1], [BAR1])
    batch.set_update_type(UpdateType.INCREMENTAL)
    return batch, transport


def _frames(transport):
    return {broker: [(r.encode(9, "c"), cb is not None) for r, cb in reqs] for broker, reqs in transport.sent.items()}


# Port promise: a filled batch pickles with its pending state, and sends the same bytes.
def test_pickle_filled_batch(kt):
    batch, transport = _filled_batch(kt)
    clone = pickle.loads(pickle.dumps(batch))
    assert clone.leader_and_isr_request_map == batch.leader_and_isr_request_map
    assert clone.stop_replica_request_map == batch.stop_replica_request_map
    assert list(clone.update_metadata_request_broker_set) == list(batch.update_metadata_request_broker_set)
    assert clone.update_metadata_request_partition_info_map == batch.update_metadata_request_partition_info_map
    assert clone.update_type == UpdateType.INCREMENTAL
    assert clone.metadata_version == batch.metadata_version
    assert clone.metadata_instance is not None and clone.metadata_instance is not batch.metadata_instance
    assert dict(clone.metadata_instance.topic_ids) == dict(batch.metadata_instance.topic_ids)
    assert isinstance(clone.transport, RecordingTransport) and clone.transport is not transport
    with pytest.raises(IllegalStateError, match="Some LeaderAndIsr state changes"):
        clone.new_batch()
    # the clone still applies the sticky rules to its state
    clone.add_leader_and_isr_request_for_brokers(
        [3], FOO0, clone.metadata_instance.partition_leadership_info(FOO0), ReplicaAssignment([1, 2, 3]), False
    )
    batch.add_leader_and_isr_request_for_brokers(
        [3], FOO0, batch.metadata_instance.partition_leadership_info(FOO0), ReplicaAssignment([1, 2, 3]), False
    )
    assert clone.leader_and_isr_request_map[3][FOO0].is_new is True
    batch.send_requests_to_brokers(2)
    clone.send_requests_to_brokers(2)
    assert _frames(clone.transport) == _frames(transport)
    assert clone.update_type == UpdateType.UNKNOWN
    # and the clone's callbacks report to the clone
    kt.apply_umr_callbacks(kt.NONE, clone.transport.sent[1])
    assert len(clone.events) == 1 and batch.events == []


# §8.1/§8.2 "fields the wire version does not have are simply not serialized": isNew (v1+),
# adding/removing replicas (v3+), offlineReplicas (UMR v4+), rack (UMR v2+) at every version.
@pytest.mark.parametrize("ibp", ALL_VERSIONS, ids=VERSION_IDS)
def test_fields_missing_from_a_version_are_dropped(kt, ibp):
    context = kt.kafka_context()
    old2 = next(x for x in context.live_or_shutting_down_brokers if x.id == 2)
    context.update_broker_metadata(old2, Broker(2, old2.endpoints, rack="rack-b"))
    context.shutting_down_broker_ids.add(3)
    li = put(context, FOO0, 1, [1, 2])
    b = kt.MockBatch(context, ibp)
    b.new_batch()
    b.add_lair([2], FOO0, li, ReplicaAssignment([1, 2, 3, 4], [4], [3]), True)
    b.send()
    (lair,) = b.collect_sent(2, LEADER_AND_ISR)
    (s,) = kt.lair_partition_states(kt.check_wire(lair), lair.version)
    assert s.is_new is (lair.version >= 1)
    assert (list(s.adding_replicas), list(s.removing_replicas)) == (([4], [3]) if lair.version >= 3 else ([], []))
    assert list(s.replicas) == [1, 2, 3, 4]
    (umr,) = b.collect_sent(2, UPDATE_METADATA)
    parsed = kt.check_wire(umr)
    (us,) = kt.umr_partition_states(parsed, umr.version)
    assert list(us.offline_replicas) == ([3] if umr.version >= 4 else [])
    racks = {x.id: x.rack for x in parsed.live_brokers}
    if umr.version >= 2:
        assert racks == {1: None, 2: "rack-b", 3: None}


# §8 "every failure is wrapped": a transport that fails part-way through a phase.
def test_transport_failure_is_wrapped_and_state_kept(kt):
    class Failing(RecordingTransport):
        def send(self, broker_id, request, callback):
            if broker_id == 3:
                raise ConnectionError("queue closed")
            super().send(broker_id, request, callback)

    context = kt.kafka_context()
    transport = Failing()
    batch = ControllerBrokerRequestBatch(1, context, MV.IBP_3_9_IV0, transport)
    li = put(context, FOO0, 1, [1, 2])
    batch.new_batch()
    batch.add_leader_and_isr_request_for_brokers([2, 3], FOO0, li, ra(1, 2, 3), False)
    with pytest.raises(IllegalStateError) as e:
        batch.send_requests_to_brokers(1)
    assert isinstance(e.value.__cause__, ConnectionError)
    assert [r.api_key for r, _ in transport.sent[2]] == [LEADER_AND_ISR]
    assert set(batch.leader_and_isr_request_map) == {2, 3}
    with pytest.raises(IllegalStateError, match="Some LeaderAndIsr state changes"):
        batch.new_batch()


# Port design (shared LeaderAndIsr encodings): large arrays (multi-byte varint counts in flexible
# versions), long topic names and per-broker subsets still equal the codec's bytes, one IBP per
# LeaderAndIsr version.
@pytest.mark.parametrize(
    "ibp",
    [MV.IBP_0_8_0, MV.IBP_1_0_IV0, MV.IBP_2_2_IV0, MV.IBP_2_4_IV0, MV.IBP_2_4_IV1, MV.IBP_2_8_IV1, MV.IBP_3_2_IV0,
     MV.IBP_3_9_IV0],
    ids=lambda m: m.version,
)
def test_large_batch_matches_codec(kt, ibp):
    long_name = "t" * 200
    topics = {long_name: uuid.UUID(int=7), "foo": uuid.UUID(int=8), "bar": uuid.UUID(int=9)}
    context = kt.init_context([1, 2, 3, 4], 150, 3, topics, broker_epochs={1: 11, 2: 22, 3: 33, 4: 44})
    b = kt.MockBatch(context, ibp)
    b.new_batch()
    n = 0
    for topic in ("foo", long_name, "bar"):
        for p in range(150):
            tp = TopicPartition(topic, p)
            replicas = list(context.partition_replica_assignment(tp))
            li = put(context, tp, replicas[0], replicas[:2], leader_epoch=p % 5, partition_epoch=p)
            b.add_lair(replicas, tp, li, context.partition_full_replica_assignment(tp), p % 7 == 0)
            if n % 3 == 0:
                b.add_sr([replicas[-1]], tp, p % 2 == 0)
            n += 1
    b.send(3)
    for broker in (1, 2, 3, 4):
        for req, _ in b.sent_requests[broker]:
            kt.check_wire(req)
        (lair,) = b.collect_sent(broker, LEADER_AND_ISR)
        states = kt.lair_partition_states(lair.body, lair.version)
        assert len(states) == sum(1 for t in ("foo", long_name, "bar") for p in range(150)
                                  if broker in context.partition_replica_assignment(TopicPartition(t, p)))
        (umr,) = b.collect_sent(broker, UPDATE_METADATA)
        assert len(kt.umr_partition_states(umr.body, umr.version)) == 450


def test_live_leaders_one_node_per_registered_broker_value() -> None:
    # §8.1 (CCM:544-546): liveLeaders maps the live Broker *values* whose id leads a partition
    # to Nodes on the inter-broker listener, as a set: two registrations of one id with other
    # hosts give two nodes; two that give the same node give one.
    from ctrlbatch.batch import ControllerBrokerRequestBatch, RecordingTransport
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

    def plaintext(host: str) -> tuple[EndPoint, ...]:
        return (EndPoint(host, 9092, "PLAINTEXT", SecurityProtocol.PLAINTEXT),)

    for second, expected in (
        (Broker(0, plaintext("new-host")), [(0, "old-host"), (0, "new-host")]),
        (Broker(0, plaintext("old-host") + (EndPoint("old-host", 9093, "SSL", SecurityProtocol.SSL),)), [(0, "old-host")]),
    ):
        ctx = ControllerContext()
        ctx.set_live_brokers({Broker(0, plaintext("old-host")): 10, Broker(1, plaintext("h1")): 11})
        ctx.add_live_brokers({second: 12})
        tp = TopicPartition("t", 0)
        ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment((0, 1)))
        leadership = LeaderIsrAndControllerEpoch(LeaderAndIsr(0, (0, 1)), 1)
        ctx.put_partition_leadership_info(tp, leadership)
        transport = RecordingTransport()
        batch = ControllerBrokerRequestBatch(5, ctx, MetadataVersion.IBP_3_9_IV0, transport)
        batch.new_batch()
        batch.add_leader_and_isr_request_for_brokers([1], tp, leadership, ReplicaAssignment((0, 1)), False)
        batch.send_requests_to_brokers(1)
        (request,) = transport.requests_for(1, 4)
        assert [(n.broker_id, n.host_name) for n in request.body.live_leaders] == expected
        assert request.body.encode(request.version) == request.encode_body()
