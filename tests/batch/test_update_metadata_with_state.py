"""§6 (c), CCM:492-513: the UpdateMetadata overload with an explicit partition state.

It adds the brokers (ids >= 0), stores the state given (zkVersion = partitionEpoch, CCM:509) in the
batch's one UpdateMetadata partition map, last write wins per partition, and reads nothing of the
context's leadership for it.
"""

from __future__ import annotations

import pytest

from ctrlbatch.context import IllegalStateError, TopicPartition

FOO0 = TopicPartition("foo", 0)
BAR1 = TopicPartition("bar", 1)


def _add(b, brokers, tp, **kw):
    state = dict(controller_epoch=4, leader=2, leader_epoch=6, partition_epoch=9,
                 isr=[2, 3], replicas=[2, 3, 1], offline_replicas=[1])
    state.update(kw)
    b.batch.add_update_metadata_request_for_brokers_with_state(brokers, tp, **state)


def _states(kt, b, broker):
    (req,) = b.collect_umr(broker)
    return {kt.tp_of(s): s for s in kt.umr_partition_states(req, req_version(b, broker))}


def req_version(b, broker):
    (req,) = b.collect_sent(broker, 6)
    return req.version


def test_explicit_state_sent_as_given(kt):
    context = kt.kafka_context()  # no leadership cached: the state comes from the arguments only
    b = kt.MockBatch(context)
    b.new_batch()
    _add(b, [2, -1, 3], FOO0)
    b.send()
    assert set(b.sent_requests) == {2, 3}
    for broker in (2, 3):
        s = _states(kt, b, broker)[FOO0]
        assert (s.controller_epoch, s.leader, s.leader_epoch, s.zk_version) == (4, 2, 6, 9)
        assert (list(s.isr), list(s.replicas), list(s.offline_replicas)) == ([2, 3], [2, 3, 1], [1])


def test_last_write_wins_and_map_shared_with_context_adds(kt):
    context = kt.kafka_context()
    context.put_partition_leadership_info(BAR1, kt.leadership(3, [3, 1], leader_epoch=2))
    b = kt.MockBatch(context)
    b.new_batch()
    _add(b, [2], FOO0)
    b.add_umr([3], [BAR1])
    _add(b, [1], FOO0, leader=3, leader_epoch=8, isr=[3])
    b.send()
    assert set(b.sent_requests) == {1, 2, 3}
    for broker in (1, 2, 3):  # every destination gets every state (§6 consequence)
        states = _states(kt, b, broker)
        assert set(states) == {FOO0, BAR1}
        assert (states[FOO0].leader, states[FOO0].leader_epoch, list(states[FOO0].isr)) == (3, 8, [3])
        assert (states[BAR1].leader, states[BAR1].leader_epoch) == (3, 2)


def test_explicit_state_replaces_a_context_state(kt):
    context = kt.kafka_context()
    context.put_partition_leadership_info(FOO0, kt.leadership(1, [1, 2]))
    b = kt.MockBatch(context)
    b.new_batch()
    b.add_umr([2], [FOO0])
    _add(b, [2], FOO0, leader=-2, leader_epoch=0, partition_epoch=0)
    b.send()
    s = _states(kt, b, 2)[FOO0]
    assert (s.leader, s.leader_epoch, s.zk_version) == (-2, 0, 0)


def test_empty_broker_list_still_stores_the_state(kt):
    b = kt.MockBatch(kt.kafka_context())
    b.new_batch()
    _add(b, [], FOO0)
    assert FOO0 in b.batch.update_metadata_request_partition_info_map
    assert not b.batch.update_metadata_request_broker_set


def test_with_state_before_new_batch_raises(kt):
    b = kt.MockBatch(kt.kafka_context())
    with pytest.raises(IllegalStateError, match="new_batch"):
        _add(b, [1], FOO0)


def test_keywords_are_required(kt):
    b = kt.MockBatch(kt.kafka_context())
    b.new_batch()
    with pytest.raises(TypeError):
        b.batch.add_update_metadata_request_for_brokers_with_state([1], FOO0, 1, 2, 3, 4, [2], [2], [])
