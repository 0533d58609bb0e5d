from __future__ import annotations

import pickle
import uuid
from collections.abc import Callable

import pytest

from ctrlbatch.context import (
    INITIAL_CONTROLLER_EPOCH,
    Broker,
    ControllerChannelContext,
    ControllerContext,
    EndPoint,
    IllegalStateError,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    SecurityProtocol,
    TopicPartition,
    kafka_uuid_string,
)

FOO0 = TopicPartition("foo", 0)
FOO1 = TopicPartition("foo", 1)
BAR0 = TopicPartition("bar", 0)
BAR1 = TopicPartition("bar", 1)

BrokerFactory = Callable[[int], Broker]


def leadership(
    leader: int, isr: list[int], leader_epoch: int = 0, controller_epoch: int = 1
) -> LeaderIsrAndControllerEpoch:
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr, leader_epoch), controller_epoch)


# ------------------------------------------------------------------ the protocol


def test_context_implements_the_channel_protocol(kafka_context: ControllerContext) -> None:
    assert isinstance(kafka_context, ControllerChannelContext)


def test_protocol_lists_exactly_kafkas_ten_members() -> None:
    members = {
        name for name in vars(ControllerChannelContext) if not name.startswith("_") and name not in {"mro"}
    }
    assert members == {
        "is_topic_deletion_in_progress",
        "topic_ids",
        "live_broker_id_and_epochs",
        "live_or_shutting_down_brokers",
        "is_topic_queued_up_for_deletion",
        "is_replica_online",
        "partition_replica_assignment",
        "leader_epoch",
        "live_or_shutting_down_broker_ids",
        "partition_leadership_info",
    }


def test_objects_missing_the_read_side_are_not_channel_contexts() -> None:
    assert not isinstance(object(), ControllerChannelContext)


# ------------------------------------------------------------------------ brokers


def test_fresh_context_is_empty() -> None:
    context = ControllerContext()
    assert len(context.live_or_shutting_down_broker_ids) == 0
    assert list(context.live_or_shutting_down_brokers) == []
    assert dict(context.live_broker_id_and_epochs) == {}
    assert context.shutting_down_broker_ids == set()
    assert context.epoch == INITIAL_CONTROLLER_EPOCH == 0
    assert context.epoch_zk_version == 0
    assert context.all_partitions == set()


def test_set_live_brokers_fills_set_and_epochs(kafka_context: ControllerContext) -> None:
    assert set(kafka_context.live_or_shutting_down_broker_ids) == {1, 2, 3}
    assert dict(kafka_context.live_broker_id_and_epochs) == {1: 1, 2: 1, 3: 1}
    assert [b.id for b in kafka_context.live_or_shutting_down_brokers] == [1, 2, 3]
    assert set(kafka_context.live_broker_ids) == {1, 2, 3}


def test_set_live_brokers_replaces_everything(broker_factory: BrokerFactory) -> None:
    context = ControllerContext()
    context.set_live_brokers({broker_factory(1): 10, broker_factory(2): 20})
    context.set_live_brokers({broker_factory(5): 50, broker_factory(3): 30})
    assert [b.id for b in context.live_or_shutting_down_brokers] == [5, 3]
    assert list(context.live_broker_id_and_epochs.items()) == [(5, 50), (3, 30)]
    assert set(context.live_or_shutting_down_broker_ids) == {3, 5}


def test_add_live_brokers_appends_in_order(broker_factory: BrokerFactory) -> None:
    context = ControllerContext()
    context.set_live_brokers({broker_factory(3): 1, broker_factory(1): 1})
    context.add_live_brokers({broker_factory(9): 7, broker_factory(2): 8})
    assert [b.id for b in context.live_or_shutting_down_brokers] == [3, 1, 9, 2]
    assert context.live_broker_id_and_epochs[9] == 7


def test_add_live_brokers_updates_epoch_of_known_broker(broker_factory: BrokerFactory) -> None:
    context = ControllerContext()
    context.set_live_brokers({broker_factory(1): 1, broker_factory(2): 1})
    context.add_live_brokers({broker_factory(1): 42})
    assert context.live_broker_id_and_epochs[1] == 42
    assert [b.id for b in context.live_or_shutting_down_brokers] == [1, 2]


def test_remove_live_brokers_drops_set_and_epochs(kafka_context: ControllerContext) -> None:
    kafka_context.remove_live_brokers({3, 99})
    assert set(kafka_context.live_or_shutting_down_broker_ids) == {1, 2}
    assert [b.id for b in kafka_context.live_or_shutting_down_brokers] == [1, 2]
    assert 3 not in kafka_context.live_broker_id_and_epochs


def test_update_broker_metadata_swaps_the_registration(kafka_context: ControllerContext) -> None:
    old = kafka_context.live_or_shutting_down_broker(2)
    assert old is not None
    new = Broker(2, [EndPoint("otherhost", 1234, "SSL", SecurityProtocol.SSL)], "rack-a")
    kafka_context.update_broker_metadata(old, new)
    assert kafka_context.live_or_shutting_down_broker(2) == new
    assert old not in kafka_context.live_or_shutting_down_brokers
    assert kafka_context.live_broker_id_and_epochs[2] == 1


def test_broker_lookup_by_id(kafka_context: ControllerContext, broker_factory: BrokerFactory) -> None:
    assert kafka_context.live_or_shutting_down_broker(3) == broker_factory(3)
    assert kafka_context.live_or_shutting_down_broker(4) is None


def test_shutting_down_broker_stays_live_or_shutting_down(kafka_context: ControllerContext) -> None:
    kafka_context.shutting_down_broker_ids.add(2)
    assert 2 in kafka_context.live_or_shutting_down_broker_ids
    assert 2 in [b.id for b in kafka_context.live_or_shutting_down_brokers]
    assert 2 in kafka_context.live_broker_id_and_epochs
    assert set(kafka_context.live_broker_ids) == {1, 3}


def test_views_are_read_only(kafka_context: ControllerContext) -> None:
    with pytest.raises(TypeError):
        kafka_context.live_broker_id_and_epochs[7] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        kafka_context.topic_ids["baz"] = uuid.uuid4()  # type: ignore[index]
    assert not hasattr(kafka_context.live_or_shutting_down_broker_ids, "add")


def test_views_reflect_later_changes_without_copying(
    kafka_context: ControllerContext, broker_factory: BrokerFactory
) -> None:
    ids = kafka_context.live_or_shutting_down_broker_ids
    epochs = kafka_context.live_broker_id_and_epochs
    kafka_context.add_live_brokers({broker_factory(4): 5})
    assert 4 in ids
    assert epochs[4] == 5


# ---------------------------------------------------------------- replica online


def test_is_replica_online_rules(kafka_context: ControllerContext) -> None:
    assert kafka_context.is_replica_online(1, FOO0)
    kafka_context.shutting_down_broker_ids.add(2)
    assert not kafka_context.is_replica_online(2, FOO0)
    assert kafka_context.is_replica_online(2, FOO0, include_shutting_down_brokers=True)
    kafka_context.remove_live_brokers({3})
    assert not kafka_context.is_replica_online(3, FOO0)
    assert not kafka_context.is_replica_online(3, FOO0, include_shutting_down_brokers=True)
    assert not kafka_context.is_replica_online(77, FOO0)


def test_offline_log_dirs_take_replicas_offline(kafka_context: ControllerContext) -> None:
    kafka_context.add_replicas_on_offline_dirs(1, [FOO0, BAR1])
    assert not kafka_context.is_replica_online(1, FOO0)
    assert not kafka_context.is_replica_online(1, BAR1, include_shutting_down_brokers=True)
    assert kafka_context.is_replica_online(1, FOO1)
    assert kafka_context.is_replica_online(2, FOO0)
    assert kafka_context.replicas_on_offline_dirs[1] == {FOO0, BAR1}
    kafka_context.add_replicas_on_offline_dirs(1, [FOO1])
    assert kafka_context.replicas_on_offline_dirs[1] == {FOO0, FOO1, BAR1}
    kafka_context.remove_replicas_on_offline_dirs(1, [FOO0])
    assert kafka_context.is_replica_online(1, FOO0)
    assert not kafka_context.is_replica_online(1, FOO1)
    kafka_context.remove_replicas_on_offline_dirs(3, [FOO0])  # unknown broker: nothing to do
    assert 3 not in kafka_context.replicas_on_offline_dirs


# ------------------------------------------------------------------------- topics


def test_set_all_topics_replaces(kafka_context: ControllerContext) -> None:
    assert set(kafka_context.all_topics) == {"foo", "bar"}
    kafka_context.set_all_topics(["baz"])
    assert set(kafka_context.all_topics) == {"baz"}
    assert "foo" in kafka_context.topic_ids  # ids are not cleaned up, as in Kafka


def test_add_topic_id_needs_the_topic() -> None:
    context = ControllerContext()
    with pytest.raises(IllegalStateError) as raised:
        context.add_topic_id("foo", uuid.uuid4())
    assert str(raised.value) == "topic foo is not contained in all topics."


def test_add_topic_id_binds_both_directions() -> None:
    context = ControllerContext()
    context.set_all_topics(["foo"])
    topic_id = uuid.uuid4()
    context.add_topic_id("foo", topic_id)
    context.add_topic_id("foo", topic_id)  # the same binding again is fine
    assert context.topic_ids == {"foo": topic_id}
    assert context.topic_names == {topic_id: "foo"}
    assert context.topic_name(topic_id) == "foo"
    assert context.topic_name(uuid.uuid4()) is None


def test_add_topic_id_rejects_a_conflicting_id() -> None:
    context = ControllerContext()
    context.set_all_topics(["foo"])
    first, second = uuid.uuid4(), uuid.uuid4()
    context.add_topic_id("foo", first)
    with pytest.raises(IllegalStateError) as raised:
        context.add_topic_id("foo", second)
    assert str(raised.value) == (
        f"topic ID map already contained ID for topic foo and new ID {kafka_uuid_string(second)} "
        f"did not match existing ID {kafka_uuid_string(first)}"
    )
    assert context.topic_ids["foo"] == first


def test_add_topic_id_rejects_a_conflicting_name() -> None:
    context = ControllerContext()
    context.set_all_topics(["foo", "bar"])
    topic_id = uuid.uuid4()
    context.add_topic_id("foo", topic_id)
    with pytest.raises(IllegalStateError) as raised:
        context.add_topic_id("bar", topic_id)
    assert str(raised.value) == (
        f"topic name map already contained ID {kafka_uuid_string(topic_id)} and new name bar "
        "did not match existing name foo"
    )
    assert "bar" not in context.topic_ids


def test_illegal_state_error_is_a_runtime_error() -> None:
    assert issubclass(IllegalStateError, RuntimeError)


def test_remove_topic_forgets_everything_about_it(kafka_context: ControllerContext) -> None:
    foo_id = kafka_context.topic_ids["foo"]
    kafka_context.put_partition_leadership_info(FOO0, leadership(1, [1]))
    kafka_context.put_partition_leadership_info(BAR0, leadership(1, [1]))
    kafka_context.queue_topic_deletion(["foo"])
    kafka_context.begin_topic_deletion(["foo"])
    kafka_context.remove_topic("foo")
    assert "foo" not in kafka_context.all_topics
    assert "foo" not in kafka_context.topic_ids
    assert kafka_context.topic_name(foo_id) is None
    assert kafka_context.partitions_for_topic("foo") == set()
    assert kafka_context.partition_leadership_info(FOO0) is None
    assert kafka_context.partition_leadership_info(BAR0) is not None
    assert not kafka_context.is_topic_queued_up_for_deletion("foo")
    assert not kafka_context.is_topic_deletion_in_progress("foo")


# -------------------------------------------------------------------- assignments


def test_kafka_fixture_assignment_is_round_robin(kafka_context: ControllerContext) -> None:
    # initContext walks topics in order (foo, bar) with a running leader index.
    assert kafka_context.partition_replica_assignment(FOO0) == (1, 2, 3)
    assert kafka_context.partition_replica_assignment(FOO1) == (2, 3, 1)
    assert kafka_context.partition_replica_assignment(BAR0) == (3, 1, 2)
    assert kafka_context.partition_replica_assignment(BAR1) == (1, 2, 3)


def test_unknown_partition_has_empty_assignment(kafka_context: ControllerContext) -> None:
    assert kafka_context.partition_replica_assignment(TopicPartition("foo", 9)) == ()
    assert kafka_context.partition_replica_assignment(TopicPartition("nope", 0)) == ()
    assert (
        kafka_context.partition_full_replica_assignment(TopicPartition("nope", 0)) == ReplicaAssignment.EMPTY
    )


def test_full_assignment_keeps_reassignment_lists() -> None:
    context = ControllerContext()
    full = ReplicaAssignment([4, 1, 2], adding_replicas=[4], removing_replicas=[2])
    context.update_partition_full_replica_assignment(FOO0, full)
    assert context.partition_full_replica_assignment(FOO0) == full
    assert context.partition_replica_assignment(FOO0) == (4, 1, 2)
    context.update_partition_full_replica_assignment(FOO0, ReplicaAssignment([4, 1]))
    assert context.partition_replica_assignment(FOO0) == (4, 1)


def test_partition_queries(kafka_context: ControllerContext) -> None:
    assert kafka_context.partitions_for_topic("foo") == {FOO0, FOO1}
    assert kafka_context.partitions_for_topic("missing") == set()
    assert kafka_context.all_partitions == {FOO0, FOO1, BAR0, BAR1}
    assert kafka_context.partition_replica_assignment_for_topic("bar") == {BAR0: (3, 1, 2), BAR1: (1, 2, 3)}
    assert kafka_context.partition_full_replica_assignment_for_topic("foo") == {
        FOO0: ReplicaAssignment([1, 2, 3]),
        FOO1: ReplicaAssignment([2, 3, 1]),
    }
    kafka_context.update_partition_full_replica_assignment(BAR1, ReplicaAssignment([2]))
    assert kafka_context.partitions_on_broker(1) == {FOO0, FOO1, BAR0}


# --------------------------------------------------------------------- leadership


def test_leadership_info_round_trip(kafka_context: ControllerContext) -> None:
    assert kafka_context.partition_leadership_info(FOO0) is None
    assert kafka_context.partition_leader_and_isr(FOO0) is None
    info = leadership(1, [1, 2], leader_epoch=4, controller_epoch=3)
    kafka_context.put_partition_leadership_info(FOO0, info)
    assert kafka_context.partition_leadership_info(FOO0) is info
    assert kafka_context.partition_leader_and_isr(FOO0) == LeaderAndIsr(1, [1, 2], 4)
    assert kafka_context.partitions_leadership_info == {FOO0: info}
    assert kafka_context.partition_with_leaders_count == 1
    kafka_context.clear_partition_leadership_info()
    assert kafka_context.partition_leadership_info(FOO0) is None


def test_partitions_with_leaders_skip_queued_topics(kafka_context: ControllerContext) -> None:
    for tp in (FOO0, FOO1, BAR1):
        kafka_context.put_partition_leadership_info(tp, leadership(1, [1]))
    kafka_context.queue_topic_deletion(["foo"])
    assert kafka_context.partitions_with_leaders == {BAR1}


def test_leader_epoch_sentinels(kafka_context: ControllerContext) -> None:
    assert kafka_context.leader_epoch(FOO0) == LeaderAndIsr.NO_EPOCH == -1
    kafka_context.put_partition_leadership_info(FOO0, leadership(1, [1], leader_epoch=7))
    assert kafka_context.leader_epoch(FOO0) == 7
    kafka_context.queue_topic_deletion(["foo"])
    assert kafka_context.leader_epoch(FOO0) == LeaderAndIsr.EPOCH_DURING_DELETE == -2
    assert kafka_context.leader_epoch(FOO1) == -2  # queued overrides "no leadership" too
    assert kafka_context.leader_epoch(BAR0) == -1


# ----------------------------------------------------------------- topic deletion


def test_queued_and_started_are_separate(kafka_context: ControllerContext) -> None:
    kafka_context.queue_topic_deletion(["foo"])
    assert kafka_context.is_topic_queued_up_for_deletion("foo")
    assert not kafka_context.is_topic_deletion_in_progress("foo")
    kafka_context.begin_topic_deletion(["foo"])
    assert kafka_context.is_topic_deletion_in_progress("foo")
    kafka_context.begin_topic_deletion(["bar"])
    assert kafka_context.is_topic_deletion_in_progress("bar")
    assert not kafka_context.is_topic_queued_up_for_deletion("bar")
    kafka_context.queue_topic_deletion(["foo", "baz"])
    assert set(kafka_context.topics_queued_for_deletion) == {"foo", "baz"}
    assert set(kafka_context.topics_with_deletion_started) == {"foo", "bar"}


# ---------------------------------------------------------------- reset and pickle


def test_reset_context_forgets_everything(kafka_context: ControllerContext) -> None:
    kafka_context.shutting_down_broker_ids.add(1)
    kafka_context.queue_topic_deletion(["foo"])
    kafka_context.put_partition_leadership_info(FOO0, leadership(1, [1]))
    kafka_context.add_replicas_on_offline_dirs(1, [FOO0])
    kafka_context.epoch = 5
    kafka_context.reset_context()
    assert kafka_context.epoch == 0
    assert len(kafka_context.live_or_shutting_down_broker_ids) == 0
    assert kafka_context.shutting_down_broker_ids == set()
    assert set(kafka_context.all_topics) == set()
    assert len(kafka_context.topic_ids) == 0
    assert kafka_context.all_partitions == set()
    assert kafka_context.partition_leadership_info(FOO0) is None
    assert not kafka_context.is_topic_queued_up_for_deletion("foo")
    assert len(kafka_context.replicas_on_offline_dirs) == 0


def test_pickle_round_trips_a_populated_context(
    kafka_context: ControllerContext, broker_factory: BrokerFactory
) -> None:
    kafka_context.add_live_brokers({broker_factory(4): 9})
    kafka_context.shutting_down_broker_ids.add(2)
    kafka_context.put_partition_leadership_info(FOO0, leadership(1, [1, 2], leader_epoch=3))
    kafka_context.put_partition_leadership_info(BAR1, leadership(3, [1, 3]))
    kafka_context.add_replicas_on_offline_dirs(3, [BAR1])
    kafka_context.queue_topic_deletion(["bar"])
    kafka_context.begin_topic_deletion(["bar"])
    kafka_context.epoch = 4

    copy = pickle.loads(pickle.dumps(kafka_context))

    assert copy is not kafka_context
    assert list(copy.live_or_shutting_down_brokers) == list(kafka_context.live_or_shutting_down_brokers)
    assert list(copy.live_broker_id_and_epochs.items()) == [(1, 1), (2, 1), (3, 1), (4, 9)]
    assert copy.shutting_down_broker_ids == {2}
    assert copy.topic_ids == kafka_context.topic_ids
    assert set(copy.all_topics) == {"foo", "bar"}
    assert copy.all_partitions == kafka_context.all_partitions
    for tp in (FOO0, FOO1, BAR0, BAR1):
        assert copy.partition_replica_assignment(tp) == kafka_context.partition_replica_assignment(tp)
        assert copy.partition_leadership_info(tp) == kafka_context.partition_leadership_info(tp)
        assert copy.leader_epoch(tp) == kafka_context.leader_epoch(tp)
        for broker_id in (1, 2, 3, 4):
            assert copy.is_replica_online(broker_id, tp) == kafka_context.is_replica_online(broker_id, tp)
    assert copy.is_topic_deletion_in_progress("bar")
    assert copy.epoch == 4
    # The copy is independent of the original.
    copy.remove_live_brokers({1})
    assert 1 in kafka_context.live_or_shutting_down_broker_ids
