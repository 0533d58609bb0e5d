"""The cached pieces of UpdateMetadata bodies: the live brokers' bytes, encoded once per
live-broker tuple and spliced into the envelope, and the live-broker tuples shared by batches.
Each is checked against the body built from scratch (builder.build(epoch).encode(version))."""

from __future__ import annotations

import uuid

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.batch import builders, request_batch
from ctrlbatch.batch.builders import LeaderAndIsrBuilder, SendParts, UpdateMetadataBuilder, live_brokers_piece
from ctrlbatch.context import Broker, EndPoint, SecurityProtocol
from ctrlbatch.requests import (
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    UnsupportedVersionError,
    UpdateMetadataBroker,
    UpdateMetadataPartitionState,
)
from ctrlbatch.testing.contexts import brokers

_names = st.sampled_from(["a", "b", "topic-x", "é"])
_ints = st.integers(-1, 2**31 - 1)
_ids = st.lists(st.integers(0, 20), max_size=4).map(tuple)


@st.composite
def _states(draw: st.DrawFn) -> list[UpdateMetadataPartitionState]:
    out = []
    for _ in range(draw(st.integers(0, 6))):
        out.append(
            UpdateMetadataPartitionState(
                topic_name=draw(_names), partition_index=draw(st.integers(0, 9)), controller_epoch=draw(_ints),
                leader=draw(st.integers(-2, 20)), leader_epoch=draw(_ints), isr=draw(_ids), zk_version=draw(_ints),
                replicas=draw(_ids), offline_replicas=draw(_ids),
            )
        )
    return out


@st.composite
def _live(draw: st.DrawFn, version: int) -> tuple[UpdateMetadataBroker, ...]:
    ids = draw(st.lists(st.integers(0, 1000), unique=True, max_size=5))
    return request_batch.live_brokers(tuple(draw(brokers(i)) for i in ids), version)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), version=st.integers(0, 8), epoch=st.integers(-1, 2**63 - 1),
       update_type=st.integers(0, 2), kraft=st.booleans(), controller=_ints, controller_epoch=_ints)
def test_spliced_body_equals_the_built_one(
    data: st.DataObject, version: int, epoch: int, update_type: int, kraft: bool, controller: int, controller_epoch: int
) -> None:
    live = data.draw(_live(version))
    states = data.draw(_states())
    topic_ids = {t: uuid.UUID(int=data.draw(st.integers(0, 2**128 - 1))) for t in data.draw(st.sets(_names))}
    builder = UpdateMetadataBuilder(version, controller, controller_epoch, states, live, topic_ids, kraft, update_type)
    try:
        expected = builder.build(epoch).encode(version)
    except UnsupportedVersionError as e:  # v0-2 endpoint rules: the spliced path refuses alike
        with pytest.raises(UnsupportedVersionError, match=str(e)[:40]):
            builder.encode_body(epoch)
        return
    assert builder.encode_body(epoch) == expected
    assert builder.encode_body(epoch) == expected  # a second time, from the cached piece
    # An equal tuple that is another object (found by value) gives the same bytes.
    assert attrs.evolve(builder, live_brokers=tuple(list(live))).encode_body(epoch) == expected


@settings(max_examples=100, deadline=None)
@given(data=st.data(), version=st.integers(1, 8))
def test_live_brokers_tuple_is_shared_by_value(data: st.DataObject, version: int) -> None:
    ids = data.draw(st.lists(st.integers(0, 50), unique=True, min_size=1, max_size=4))
    registered = tuple(data.draw(brokers(i)) for i in ids)
    first = request_batch.live_brokers(registered, version)
    assert first == tuple(request_batch._update_metadata_broker(b, version) for b in registered)
    # Equal Broker values (other objects) give the very same tuple: its piece is found by identity.
    again = request_batch.live_brokers(tuple(attrs.evolve(b) for b in registered), version)
    assert again is first
    other = request_batch.live_brokers(registered[:-1], version)
    assert other == tuple(request_batch._update_metadata_broker(b, version) for b in registered[:-1])


def test_caches_stay_bounded() -> None:
    for i in range(3 * request_batch._LIVE_BROKERS_KEPT):
        registered = (Broker(i, (EndPoint("h", 9092, "PLAINTEXT", SecurityProtocol.PLAINTEXT),)),)
        live = request_batch.live_brokers(registered, 8)
        assert live_brokers_piece(8, live) == UpdateMetadataBuilder(8, 0, 0, [], live, {}).build(-1).encode(8)[-len(live_brokers_piece(8, live)) - 1 : -1]
    assert len(request_batch._live_brokers_kept) <= request_batch._LIVE_BROKERS_KEPT
    assert len(builders._live_pieces) <= builders._LIVE_PIECES_KEPT


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
            leader_recovery_state=draw(st.integers(0, 1)) if version >= 6 else 0,  # the batch's gate
        )
        for _ in range(draw(st.integers(0, 6)))
    ]


@settings(max_examples=300, deadline=None)
@given(data=st.data(), version=st.integers(0, 7), epochs=st.lists(st.integers(-1, 2**63 - 1), min_size=1, max_size=3),
       update_type=st.integers(0, 2), kraft=st.booleans(), controller=_ints, controller_epoch=_ints)
def test_leader_and_isr_envelope_from_pieces_equals_the_built_one(
    data: st.DataObject, version: int, epochs: list[int], update_type: int, kraft: bool, controller: int,
    controller_epoch: int,
) -> None:
    """LeaderAndIsr bodies assembled from the cached head, the states and each live leader's
    bytes (shared by a send's builders through SendParts) equal the built request's encoding."""
    parts = SendParts()
    kept = []  # SendParts keys pieces by id: as the batch does, every builder lives until the send ends
    topic_ids = {t: uuid.UUID(int=data.draw(st.integers(0, 2**128 - 1))) for t in data.draw(st.sets(_names))}
    for epoch in epochs:  # several bodies of one send share the parts
        builder = LeaderAndIsrBuilder(
            version, controller, controller_epoch, data.draw(_lair_states(version)), topic_ids, data.draw(_leaders), kraft,
            update_type,
        )
        kept.append(builder)
        assert builder.encode_body(epoch, parts) == builder.build(epoch).encode(version)
