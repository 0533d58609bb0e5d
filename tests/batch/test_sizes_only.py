"""Sizes only: the batch with sizes_only=True sends the same requests as the encoding batch, each
body sized, not encoded, to exactly the encoded body's length; and the builders' size_body
equals len(encode_body) for every builder, version and content drawn (bodies sharing a send's
parts included)."""

from __future__ import annotations

import pickle
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.batch import ControllerBrokerRequestBatch, IllegalStateError, RecordingTransport
from ctrlbatch.batch.builders import (
    LeaderAndIsrBuilder,
    SendParts,
    SharedBody,
    StopReplicaBuilder,
    UpdateMetadataBuilder,
    shared_body,
)
from ctrlbatch.batch.request_batch import live_brokers
from ctrlbatch.context import ControllerContext, MetadataVersion
from ctrlbatch.requests import (
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    StopReplicaPartitionState,
    UnsupportedVersionError,
    UpdateMetadataPartitionState,
    request_frame_size,
)
from ctrlbatch.testing import apply_ops, batch_op_sequences, controller_contexts, metadata_versions
from ctrlbatch.testing.contexts import brokers

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_names = st.sampled_from(["a", "b", "topic-x", "é", "t" * 140])
_ints = st.integers(-1, 2**31 - 1)
_ids = st.lists(st.integers(0, 20), max_size=140).map(tuple)


def _run(context: ControllerContext, mv: MetadataVersion, ops: Any, sizes_only: bool) -> tuple[str | None, RecordingTransport]:
    transport = RecordingTransport()
    batch = ControllerBrokerRequestBatch(3, context, mv, transport, sizes_only=sizes_only)
    batch.new_batch()
    apply_ops(ops, batch)
    try:
        batch.send_requests_to_brokers(5)
    except IllegalStateError as e:
        return str(e), transport
    return None, transport


@SETTINGS
@given(controller_contexts(min_brokers=1), metadata_versions(), st.data())
def test_a_sized_batch_sends_what_the_encoding_batch_sends(context: ControllerContext, mv: MetadataVersion, data: st.DataObject) -> None:
    ops = data.draw(batch_op_sequences(context), label="ops")
    encoded = _run(pickle.loads(pickle.dumps(context)), mv, ops, sizes_only=False)
    sized = _run(pickle.loads(pickle.dumps(context)), mv, ops, sizes_only=True)
    assert encoded[0] == sized[0]
    assert list(encoded[1].sent) == list(sized[1].sent)
    for broker, items in encoded[1].sent.items():
        others = sized[1].sent[broker]
        assert [(r.api_key, r.version, r.broker_epoch) for r, _ in items] == [(r.api_key, r.version, r.broker_epoch) for r, _ in others]
        for (e, _), (s, _) in zip(items, others, strict=True):
            assert s.shared.sized is not None and s.shared.data == b""
            assert s.body_size() == e.body_size() == len(e.encode_body())
            assert request_frame_size(s.api_key, s.version, "3", s.body_size()) == len(e.encode(7, "3"))
            assert s.body == e.body  # the same content, field for field


def test_a_sized_body_has_no_bytes_to_send() -> None:
    body = SharedBody(b"", 0, 42)
    assert body.size == 42
    with pytest.raises(ValueError, match="sized, not encoded"):
        body.pieces(1)


_leaders = st.lists(
    st.builds(LeaderAndIsrLiveLeader, broker_id=st.integers(0, 99), host_name=_names, port=st.integers(0, 65535)),
    max_size=4,
).map(tuple)


@st.composite
def _lair_states(draw: st.DrawFn, version: int) -> list[LeaderAndIsrPartitionState]:
    return [
        LeaderAndIsrPartitionState(
            topic_name=draw(_names), partition_index=draw(st.integers(0, 9)), controller_epoch=draw(_ints),
            leader=draw(st.integers(-1, 20)), leader_epoch=draw(_ints), isr=draw(_ids), partition_epoch=draw(_ints),
            replicas=draw(_ids), adding_replicas=draw(_ids), removing_replicas=draw(_ids), is_new=draw(st.booleans()),
            leader_recovery_state=draw(st.integers(0, 1)) if version >= 6 else 0,
        )
        for _ in range(draw(st.integers(0, 6)))
    ]


@SETTINGS
@given(data=st.data(), version=st.integers(0, 7), update_type=st.integers(0, 2), kraft=st.booleans())
def test_leader_and_isr_size_body(data: st.DataObject, version: int, update_type: int, kraft: bool) -> None:
    parts, sized_parts, kept = SendParts(), SendParts(), []
    topic_ids = {t: uuid.UUID(int=data.draw(st.integers(0, 2**128 - 1))) for t in data.draw(st.sets(_names))}
    for _ in range(data.draw(st.integers(1, 3))):  # several bodies of one send share the parts
        states = data.draw(_lair_states(version))
        if kept and data.draw(st.booleans()):
            states = kept[-1].partition_states + states  # states shared with another body of the send
        builder = LeaderAndIsrBuilder(version, 1, 2, states, topic_ids, data.draw(_leaders), kraft, update_type)
        kept.append(builder)
        assert builder.size_body(sized_parts) == len(builder.encode_body(9, parts))
        assert shared_body(builder, 9, None, SendParts(), sizes_only=True).size == len(builder.build(9).encode(version))


@SETTINGS
@given(data=st.data(), version=st.integers(0, 8), update_type=st.integers(0, 2), kraft=st.booleans())
def test_update_metadata_size_body(data: st.DataObject, version: int, update_type: int, kraft: bool) -> None:
    ids = data.draw(st.lists(st.integers(0, 1000), unique=True, max_size=5))
    live = live_brokers(tuple(data.draw(brokers(i)) for i in ids), version)
    states = [
        UpdateMetadataPartitionState(
            topic_name=data.draw(_names), partition_index=data.draw(st.integers(0, 9)), leader=data.draw(st.integers(-2, 20)),
            isr=data.draw(_ids), replicas=data.draw(_ids), offline_replicas=data.draw(_ids),
        )
        for _ in range(data.draw(st.integers(0, 5)))
    ]
    topic_ids = {t: uuid.UUID(int=data.draw(st.integers(0, 2**128 - 1))) for t in data.draw(st.sets(_names))}
    builder = UpdateMetadataBuilder(version, 1, 2, states, live, topic_ids, kraft, update_type)
    try:
        expected = len(builder.encode_body(4))
    except UnsupportedVersionError as e:  # v0-2 endpoint rules: sizing refuses alike
        with pytest.raises(UnsupportedVersionError, match=str(e)[:40]):
            builder.size_body()
        return
    assert builder.size_body() == expected
    assert builder.size_body() == expected  # a second time, from the kept live-broker size


@SETTINGS
@given(data=st.data(), version=st.integers(0, 4), delete=st.booleans(), kraft=st.booleans())
def test_stop_replica_size_body(data: st.DataObject, version: int, delete: bool, kraft: bool) -> None:
    topics = data.draw(st.dictionaries(_names, st.lists(
        st.builds(StopReplicaPartitionState, partition_index=st.integers(0, 9), leader_epoch=_ints, delete_partition=st.booleans()),
        max_size=4,
    ), max_size=3))
    builder = StopReplicaBuilder(version, 1, 2, delete, list(topics.items()), kraft)
    assert builder.size_body() == len(builder.encode_body(3))
