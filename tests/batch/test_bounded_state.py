"""The error lines of a failed send carry a bounded summary of the batch's state: they start as
Kafka's do ("Haven't been able to send ... current state of the map is HashMap(..."), show the
first entries of each collection and how many more there are, and never grow with the state
(Kafka prints it whole: hundreds of megabytes for a big cluster or one huge name)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.batch.kafka_text import scala_map, scala_set
from ctrlbatch.batch.request_batch import LOG_STATE_CHARS, LOG_STATE_ENTRIES, bounded_state
from ctrlbatch.context import (
    Broker,
    EndPoint,
    IllegalStateError,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    SecurityProtocol,
    TopicPartition,
)

CUT_NOTE = len("... (999,999,999 characters)")


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(-5, 10**6), st.one_of(st.integers(), st.text(max_size=20)), max_size=LOG_STATE_ENTRIES))
def test_a_small_state_prints_as_kafka_prints_it(state: dict[int, Any]) -> None:
    if len(scala_map(state)) <= LOG_STATE_CHARS:
        assert bounded_state(state) == scala_map(state)
    assert bounded_state(state.keys(), as_set=True) == scala_set(state.keys()) or len(scala_set(state.keys())) > LOG_STATE_CHARS


@settings(max_examples=50, deadline=None)
@given(
    outer=st.integers(0, 40), inner=st.integers(0, 3000), name=st.integers(1, 200_000),
)
def test_any_state_prints_within_the_bound(outer: int, inner: int, name: int) -> None:
    big = "n" * name
    state = {b: {TopicPartition(big if b == 0 else "t", p): p for p in range(inner)} for b in range(outer)}
    text = bounded_state(state)
    assert len(text) <= LOG_STATE_CHARS + CUT_NOTE
    assert text.startswith("HashMap(")
    if outer > LOG_STATE_ENTRIES:
        assert f"... {outer - LOG_STATE_ENTRIES:,} more" in text or "characters)" in text


def test_a_failed_send_of_a_big_batch_logs_short_lines_with_kafkas_start(kt: Any, caplog: pytest.LogCaptureFixture) -> None:
    context = kt.kafka_context(("foo", "t" * 30_000))
    old3 = next(x for x in context.live_or_shutting_down_brokers if x.id == 3)
    context.update_broker_metadata(old3, Broker(3, [EndPoint("h3", 19093, "INTERNAL", SecurityProtocol.SSL)]))
    b = kt.MockBatch(context)
    b.new_batch()
    for topic in ("foo", "t" * 30_000):
        for p in range(2_000):
            tp = TopicPartition(topic, p)
            li = LeaderIsrAndControllerEpoch(LeaderAndIsr(3, [3, 1]), 1)
            context.put_partition_leadership_info(tp, li)
            b.add_lair([1, 2], tp, li, ReplicaAssignment([3, 1, 2]), False)
            b.add_sr([1], tp, False)
    caplog.set_level(logging.ERROR)
    with pytest.raises(IllegalStateError):
        b.send()
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    starts = (
        "Haven't been able to send leader and isr requests, current state of the map is HashMap(",
        "Haven't been able to send metadata update requests to brokers HashSet(",
        "Haven't been able to send stop replica requests, current state of the map is HashMap(",
    )
    assert [next(s for s in starts if line.startswith(s)) for line in lines] == list(starts)
    for line in lines:
        assert len(line) <= 4 * (LOG_STATE_CHARS + CUT_NOTE) + 300, len(line)
        assert "more" in line or "characters)" in line, "says that the state was cut"
        assert "Exception message: BrokerEndPointNotAvailableError" in line
