from __future__ import annotations

import pickle

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.context import TopicPartition

topic_partitions = st.builds(TopicPartition, st.text(max_size=8), st.integers(-5, 1000))


def test_str_is_kafka_topic_dash_partition() -> None:
    assert str(TopicPartition("foo", 0)) == "foo-0"
    assert str(TopicPartition("my-topic", 12)) == "my-topic-12"


def test_equal_values_are_one_dict_key() -> None:
    index = {TopicPartition("foo", 1): "a"}
    assert index[TopicPartition("foo", 1)] == "a"
    assert TopicPartition("foo", 2) not in index
    assert TopicPartition("bar", 1) not in index


def test_is_frozen() -> None:
    tp = TopicPartition("foo", 1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        tp.partition = 2  # type: ignore[misc]


def test_orders_by_topic_then_partition() -> None:
    unsorted = [
        TopicPartition("foo", 1),
        TopicPartition("bar", 10),
        TopicPartition("foo", 0),
        TopicPartition("bar", 2),
    ]
    assert sorted(unsorted) == [
        TopicPartition("bar", 2),
        TopicPartition("bar", 10),
        TopicPartition("foo", 0),
        TopicPartition("foo", 1),
    ]


@given(topic_partitions, topic_partitions)
def test_order_and_equality_follow_the_field_tuple(a: TopicPartition, b: TopicPartition) -> None:
    assert (a < b) == ((a.topic, a.partition) < (b.topic, b.partition))
    assert (a == b) == ((a.topic, a.partition) == (b.topic, b.partition))
    if a == b:
        assert hash(a) == hash(b)


@given(topic_partitions)
def test_pickle_round_trip_keeps_value_and_hash(tp: TopicPartition) -> None:
    hash(tp)  # fill the cached hash before pickling
    copy = pickle.loads(pickle.dumps(tp))
    assert copy == tp
    assert hash(copy) == hash(tp)
    assert {copy: 1}[tp] == 1
