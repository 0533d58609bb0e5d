"""ControllerContext at the edge (issue 8): protocol names, broker checks, add_topic, repr; and its
optional UpdateMetadataHints, which must agree with the ten ControllerChannelContext members."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.context import (
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
    UpdateMetadataHints,
)
from ctrlbatch.testing import ChannelContextView, controller_contexts

# ------------------------------------------------------------------ security protocols


@pytest.mark.parametrize("given_as", ["PLAINTEXT", "plaintext", 0, SecurityProtocol.PLAINTEXT])
def test_endpoint_accepts_protocol_names(given_as):
    assert EndPoint("h", 9092, "PLAINTEXT", given_as).security_protocol is SecurityProtocol.PLAINTEXT


def test_endpoint_protocol_name_sasl():
    assert EndPoint("h", 9092, "INTERNAL", "SASL_SSL").security_protocol is SecurityProtocol.SASL_SSL
    assert EndPoint.with_default_listener("h", 1, "ssl") == EndPoint("h", 1, "SSL", SecurityProtocol.SSL)


@pytest.mark.parametrize("bad", ["PLAIN", 9, True, None])
def test_endpoint_unknown_protocol_lists_the_valid_ones(bad):
    with pytest.raises(ValueError) as info:
        EndPoint("h", 9092, "X", bad)
    assert str(info.value) == (
        f"{bad!r} is not a security protocol; valid: PLAINTEXT (0), SSL (1), SASL_PLAINTEXT (2), SASL_SSL (3)"
    )


# ------------------------------------------------------------------ brokers


def test_set_live_brokers_with_ids_for_brokers():
    context = ControllerContext()
    with pytest.raises(TypeError) as info:
        context.set_live_brokers({1: 10})
    message = str(info.value)
    assert message.startswith("set_live_brokers: broker_and_epochs must map Broker values to broker epochs; key 1 is a int")
    assert "Broker(1, [EndPoint('localhost', 9092, 'PLAINTEXT', 'PLAINTEXT')]): 0" in message
    assert not context.live_or_shutting_down_broker_ids


def test_set_live_brokers_with_a_bad_epoch_or_not_a_mapping():
    context = ControllerContext()
    b = Broker(1, [EndPoint("h", 1, "PLAINTEXT", "PLAINTEXT")])
    with pytest.raises(TypeError, match="set_live_brokers: the broker epoch of broker 1 must be an int, not str '10'"):
        context.set_live_brokers({b: "10"})
    with pytest.raises(TypeError, match="add_live_brokers: broker_and_epochs must be a mapping of Broker to broker epoch, not list"):
        context.add_live_brokers([b])
    context.set_live_brokers({b: 10})
    assert dict(context.live_broker_id_and_epochs) == {1: 10}


# ------------------------------------------------------------------ add_topic


def test_add_topic_in_one_call():
    context = ControllerContext()
    context.epoch = 5
    topic_id = uuid.UUID(int=7)
    tps = context.add_topic("orders", [[1, 2, 3], [2, 3, 1]], topic_id=topic_id, leader_epoch=2, partition_epoch=4)
    assert tps == [TopicPartition("orders", 0), TopicPartition("orders", 1)]
    assert "orders" in context.all_topics
    assert context.topic_ids["orders"] == topic_id
    assert context.partition_full_replica_assignment(tps[1]) == ReplicaAssignment([2, 3, 1])
    assert context.partition_leadership_info(tps[1]) == LeaderIsrAndControllerEpoch(LeaderAndIsr(2, [2, 3, 1], 2, 4), 5)
    assert context.leader_epoch(tps[0]) == 2


def test_add_topic_random_id_and_controller_epoch():
    context = ControllerContext()
    (tp,) = context.add_topic("t", [[4]], controller_epoch=9)
    assert context.topic_ids["t"].version == 4
    assert context.partition_leadership_info(tp).controller_epoch == 9


@pytest.mark.parametrize("replicas, message", [
    ("123", "add_topic: replicas must be a list of replica lists"),
    ([[1, 2], []], r"add_topic: replicas\[1\] must be a non-empty list of broker ids \(ints >= 0\), not \[\]"),
    ([["1"]], r"add_topic: replicas\[0\] must be a non-empty list of broker ids \(ints >= 0\), not \['1'\]"),
    ([[1, -1]], r"add_topic: replicas\[0\] must be a non-empty list"),
])
def test_add_topic_checks_its_replicas(replicas, message):
    context = ControllerContext()
    with pytest.raises((TypeError, ValueError), match=message):
        context.add_topic("t", replicas)
    assert not context.all_topics


def test_add_topic_with_a_clashing_id():
    context = ControllerContext()
    context.add_topic("a", [[1]], topic_id=uuid.UUID(int=1))
    with pytest.raises(IllegalStateError, match="topic name map already contained ID"):
        context.add_topic("b", [[1]], topic_id=uuid.UUID(int=1))


# ------------------------------------------------------------------ hints


def test_controller_context_offers_the_hints():
    context = ControllerContext()
    assert isinstance(context, ControllerChannelContext)
    assert isinstance(context, UpdateMetadataHints)
    view = ChannelContextView(context)
    assert isinstance(view, ControllerChannelContext) and not isinstance(view, UpdateMetadataHints)


def _view_from_members(ctx, tp):
    """kafka-controller-batch-semantics.md §6 (a), from the ten members only."""
    info = ctx.partition_leadership_info(tp)
    if info is None:
        return None
    replicas = tuple(ctx.partition_replica_assignment(tp))
    offline = tuple(r for r in replicas if not ctx.is_replica_online(r, tp))
    return info, replicas, offline, ctx.is_topic_queued_up_for_deletion(tp.topic)


@settings(max_examples=150, deadline=None)
@given(context=controller_contexts(), extra=st.lists(st.builds(TopicPartition, st.sampled_from(["x", "foo"]), st.integers(0, 3))))
def test_update_metadata_view_equals_the_members(context, extra):
    partitions = [TopicPartition(t, p) for t in context.all_topics for p in range(5)] + extra
    for tp in partitions:
        assert context.update_metadata_view(tp) == _view_from_members(context, tp)
        assert context.offline_replicas(tp, context.partition_replica_assignment(tp)) == tuple(
            r for r in context.partition_replica_assignment(tp) if not context.is_replica_online(r, tp)
        )


@settings(max_examples=60, deadline=None)
@given(context=controller_contexts())
def test_broker_membership_version_moves_with_the_broker_set(context):
    before = context.broker_membership_version
    context.add_live_brokers({Broker(99, [EndPoint("h", 1, "PLAINTEXT", "PLAINTEXT")]): 1})
    after_add = context.broker_membership_version
    context.remove_live_brokers([99])
    assert before != after_add != context.broker_membership_version
