"""Public inputs of the batch are checked once, at the edge, with a message naming the parameter
and what it expects (issue 8, "friendlier at the edge"); nothing of a refused add is stored.
Also the short reprs and the one-message lifecycle errors.
"""

from __future__ import annotations

import pytest

from ctrlbatch.batch import ControllerBrokerRequestBatch, RecordingTransport
from ctrlbatch.context import (
    IllegalStateError,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    MetadataVersion,
    ReplicaAssignment,
    TopicPartition,
)

FOO0 = TopicPartition("foo", 0)


def lice(leader, isr):
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr), 1)


def _batch(kt, ibp=MetadataVersion.IBP_3_9_IV0):
    context = kt.kafka_context()
    context.put_partition_leadership_info(FOO0, lice(1, [1, 2]))
    batch = ControllerBrokerRequestBatch(1, context, ibp, RecordingTransport())
    return batch


def _nothing_stored(batch):
    assert batch.leader_and_isr_request_map == {}
    assert batch.stop_replica_request_map == {}
    assert batch.update_metadata_request_broker_set == {}
    assert batch.update_metadata_request_partition_info_map == {}


# ------------------------------------------------------------------ constructor


@pytest.mark.parametrize("text, expected", [("3.9-IV0", MetadataVersion.IBP_3_9_IV0), ("2.8", MetadataVersion.IBP_2_8_IV1)])
def test_metadata_version_as_a_string(kt, text, expected):
    batch = _batch(kt, text)
    batch.new_batch()
    assert batch.metadata_version is expected
    batch.add_leader_and_isr_request_for_brokers([2], FOO0, lice(1, [1, 2]), ReplicaAssignment([1, 2, 3]), False)
    batch.send_requests_to_brokers(1)
    assert set(batch.transport.sent) == {1, 2, 3}


def test_metadata_version_bad_string(kt):
    with pytest.raises(ValueError, match=r"metadata_version 'foo' is not a metadata version; expected e\.g\. '3\.9-IV0'"):
        _batch(kt, "foo")


def test_metadata_version_wrong_type(kt):
    with pytest.raises(TypeError, match=r"metadata_version must be a MetadataVersion, a version string .* not float 3\.9"):
        _batch(kt, 3.9)


def test_metadata_version_callable_must_return_a_version(kt):
    batch = _batch(kt, lambda: "3.9")
    with pytest.raises(TypeError, match=r"metadata_version\(\) must return a MetadataVersion, not str '3\.9'"):
        batch.new_batch()


def test_controller_id_and_transport_checked(kt):
    context = kt.kafka_context()
    with pytest.raises(TypeError, match="controller_id must be an int broker id, not str '1'"):
        ControllerBrokerRequestBatch("1", context, "3.9", RecordingTransport())
    with pytest.raises(TypeError, match=r"transport must have a send\(broker_id, request, callback\) method, not list"):
        ControllerBrokerRequestBatch(1, context, "3.9", [])


def test_context_that_is_not_a_channel_context(kt):
    batch = ControllerBrokerRequestBatch(1, {"brokers": [1]}, "3.9", RecordingTransport())
    with pytest.raises(TypeError, match=r"context must be a ControllerChannelContext .*dict lacks .*is_replica_online"):
        batch.new_batch()


# ------------------------------------------------------------------ adds


def test_leader_and_isr_where_leadership_belongs(kt):
    batch = _batch(kt)
    batch.new_batch()
    with pytest.raises(TypeError, match=r"leader_isr_and_controller_epoch must be a LeaderIsrAndControllerEpoch, "
                                        r"not LeaderAndIsr .*\(wrap it: LeaderIsrAndControllerEpoch\(leader_and_isr, controller_epoch\)\)"):
        batch.add_leader_and_isr_request_for_brokers([2], FOO0, LeaderAndIsr(1, [1, 2]), ReplicaAssignment([1, 2]), False)
    _nothing_stored(batch)


@pytest.mark.parametrize("broker_ids, shown", [(["1", "2"], "str '1'"), ([2, "3"], "str '3'"), ([None], "NoneType None")])
def test_broker_ids_as_strings(kt, broker_ids, shown):
    batch = _batch(kt)
    batch.new_batch()
    with pytest.raises(TypeError, match=f"broker_ids must hold int broker ids, not {shown}"):
        batch.add_leader_and_isr_request_for_brokers(broker_ids, FOO0, lice(1, [1, 2]), ReplicaAssignment([1, 2]), False)
    with pytest.raises(TypeError, match=f"broker_ids must hold int broker ids, not {shown}"):
        batch.add_stop_replica_request_for_brokers(broker_ids, FOO0, False)
    with pytest.raises(TypeError, match=f"broker_ids must hold int broker ids, not {shown}"):
        batch.add_update_metadata_request_for_brokers(broker_ids, [FOO0])
    _nothing_stored(batch)


def test_broker_ids_as_one_string(kt):
    batch = _batch(kt)
    batch.new_batch()
    with pytest.raises(TypeError, match="broker_ids must be an iterable of int broker ids, not str '12'"):
        batch.add_stop_replica_request_for_brokers("12", FOO0, False)


@pytest.mark.parametrize("partitions, shown", [("foo-0", "str 'foo-0'"), (FOO0, "TopicPartition")])
def test_partitions_not_an_iterable_of_partitions(kt, partitions, shown):
    batch = _batch(kt)
    batch.new_batch()
    with pytest.raises(TypeError, match=f"partitions must be an iterable of TopicPartition, not {shown}"):
        batch.add_update_metadata_request_for_brokers([1], partitions)
    _nothing_stored(batch)


def test_partitions_as_strings(kt):
    batch = _batch(kt)
    batch.new_batch()
    with pytest.raises(TypeError, match="partitions must be TopicPartition values, not str 'foo-0'"):
        batch.add_update_metadata_request_for_brokers([1], ["foo-0"])
    _nothing_stored(batch)  # no empty UpdateMetadata goes out for a refused add


def test_topic_partition_as_a_tuple(kt):
    batch = _batch(kt)
    batch.new_batch()
    with pytest.raises(TypeError, match=r"topic_partition must be a TopicPartition, not tuple \('foo', 0\)"):
        batch.add_leader_and_isr_request_for_brokers([2], ("foo", 0), lice(1, [1, 2]), ReplicaAssignment([1, 2]), False)
    with pytest.raises(TypeError, match=r"topic_partition must be a TopicPartition, not tuple \('foo', 0\)"):
        batch.add_stop_replica_request_for_brokers([2], ("foo", 0), False)
    _nothing_stored(batch)


@pytest.mark.parametrize("value", ["no", 0, None, 1])
def test_is_new_must_be_a_bool(kt, value):
    batch = _batch(kt)
    batch.new_batch()
    with pytest.raises(TypeError, match=f"is_new must be a bool, not {type(value).__name__} {value!r}"):
        batch.add_leader_and_isr_request_for_brokers([2], FOO0, lice(1, [1, 2]), ReplicaAssignment([1, 2]), value)
    _nothing_stored(batch)


def test_delete_partition_must_be_a_bool(kt):
    batch = _batch(kt)
    batch.new_batch()
    with pytest.raises(TypeError, match="delete_partition must be a bool, not str 'yes'"):
        batch.add_stop_replica_request_for_brokers([2], FOO0, "yes")
    _nothing_stored(batch)


def test_replica_assignment_type(kt):
    batch = _batch(kt)
    batch.new_batch()
    with pytest.raises(TypeError, match=r"replica_assignment must be a ReplicaAssignment, not list \[1, 2\]"):
        batch.add_leader_and_isr_request_for_brokers([2], FOO0, lice(1, [1, 2]), [1, 2], False)
    _nothing_stored(batch)


def test_with_state_checks_its_inputs(kt):
    batch = _batch(kt)
    batch.new_batch()
    kw = dict(controller_epoch=1, leader=1, leader_epoch=0, partition_epoch=0, isr=[1], replicas=[1, 2], offline_replicas=[])
    with pytest.raises(TypeError, match="leader must be an int, not str '1'"):
        batch.add_update_metadata_request_for_brokers_with_state([1], FOO0, **{**kw, "leader": "1"})
    with pytest.raises(TypeError, match="isr must hold int broker ids, not str 'a'"):
        batch.add_update_metadata_request_for_brokers_with_state([1], FOO0, **{**kw, "isr": "a"})
    with pytest.raises(TypeError, match=r"tp must be a TopicPartition, not str 'foo-0'"):
        batch.add_update_metadata_request_for_brokers_with_state([1], "foo-0", **kw)
    _nothing_stored(batch)


# ------------------------------------------------------------------ lifecycle messages


def test_send_before_new_batch_says_one_thing(kt):
    batch = _batch(kt)
    with pytest.raises(IllegalStateError) as info:
        batch.send_requests_to_brokers(1)
    assert str(info.value) == "new_batch() must be called before send_requests_to_brokers()"
    assert info.value.__cause__ is None


def test_add_before_new_batch_says_one_thing(kt):
    batch = _batch(kt)
    with pytest.raises(IllegalStateError) as info:
        batch.add_stop_replica_request_for_brokers([1], FOO0, False)
    assert str(info.value) == "new_batch() must be called before adding requests to the batch"


def test_controller_epoch_checked_at_send(kt):
    batch = _batch(kt)
    batch.new_batch()
    with pytest.raises(TypeError, match="controller_epoch must be an int, not str '1'"):
        batch.send_requests_to_brokers("1")


# ------------------------------------------------------------------ reprs


def test_short_reprs(kt):
    context = kt.init_context([1, 2, 3], 20_000, 3, ["big"])
    for p in range(20_000):
        context.put_partition_leadership_info(TopicPartition("big", p), lice(1, [1, 2, 3]))
    transport = RecordingTransport()
    batch = ControllerBrokerRequestBatch(1, context, "3.9-IV0", transport)
    assert repr(batch) == (
        "<ControllerBrokerRequestBatch controller 1, no batch: LeaderAndIsr to 0 brokers, StopReplica to 0, "
        "UpdateMetadata to 0 (0 partitions)>"
    )
    batch.new_batch()
    for p in range(20_000):
        tp = TopicPartition("big", p)
        batch.add_leader_and_isr_request_for_brokers([1], tp, lice(1, [1, 2, 3]), ReplicaAssignment([1, 2, 3]), False)
    assert repr(batch) == (
        "<ControllerBrokerRequestBatch controller 1, batch open at 3.9-IV0: LeaderAndIsr to 1 brokers, "
        "StopReplica to 0, UpdateMetadata to 3 (20000 partitions)>"
    )
    batch.send_requests_to_brokers(4)
    (request, _), (umr, _) = transport.sent[1]
    assert repr(request) == (
        f"<OutboundRequest LeaderAndIsr v7, broker epoch 1, {request.body_size():,} body bytes, "
        "LeaderAndIsrBuilder(v7, controller 1, epoch 4, 20000 partitions)>"
    )
    assert len(repr(umr)) < 200 and "UpdateMetadata v8" in repr(umr)
    assert repr(transport) == "<RecordingTransport 4 requests to 3 brokers {1: 2, 2: 1, 3: 1}>"
    assert repr(context) == (
        "<ControllerContext epoch 0: 3 live brokers (0 shutting down), 1 topics, 20000 partitions assigned, "
        "20000 with leaders, 0 topics queued for deletion>"
    )
