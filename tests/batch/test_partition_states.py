"""Kafka's partitionStates() on LeaderAndIsr and UpdateMetadata requests: a request decoded from
the wire carries each topic's name once (in v2+ / v5+ the nested states have an empty topic
name), so it differs from the request built; partition_states() fills the names in, as Kafka's
request classes do, and then both give the batch's states."""

from __future__ import annotations

import pytest

from ctrlbatch.context import MetadataVersion, TopicPartition
from ctrlbatch.requests import decode_request

VERSIONS = [mv for mv in MetadataVersion if mv.is_at_least(MetadataVersion.IBP_0_10_0_IV1)]


@pytest.mark.parametrize("ibp", VERSIONS, ids=lambda mv: mv.version)
def test_decoded_partition_states_equal_the_built_ones(kt, ibp):
    context = kt.kafka_context()
    b = kt.MockBatch(context, ibp)
    tps = [TopicPartition("foo", 0), TopicPartition("bar", 1), TopicPartition("foo", 1)]
    for tp in tps:
        context.put_partition_leadership_info(tp, kt.leadership(1, [1, 2], leader_epoch=3))
    b.new_batch()
    for tp in tps:
        b.add_lair([2], tp, kt.leadership(1, [1, 2], leader_epoch=3), kt.replica_assignment([1, 2, 3]), False)
    expected_lair = list(b.batch.leader_and_isr_request_map[2].values())
    expected_umr = list(b.batch.update_metadata_request_partition_info_map.values())
    b.send()
    for request, _ in b.sent_requests[2]:
        decoded = decode_request(request.encode(1, "c")[4:]).body
        expected = expected_lair if request.api_key == kt.LEADER_AND_ISR else expected_umr
        grouped = request.version >= (2 if request.api_key == kt.LEADER_AND_ISR else 5)
        if grouped:
            assert decoded != request.body  # the nested states carry no topic name on the wire
            assert {p.topic_name for t in decoded.topic_states for p in t.partition_states} == {""}
        got = decoded.partition_states()
        assert got == request.body.partition_states()
        if grouped:  # first-seen topic order, then add order within a topic
            expected = sorted(expected, key=lambda s: s.topic_name != "foo")
        assert [kt.tp_of(s) for s in got] == [kt.tp_of(s) for s in expected]
        version = request.version
        assert [s.to_dict(version) for s in got] == [s.to_dict(version) for s in expected]
