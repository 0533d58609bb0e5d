"""Bodies joined from pre-encoded pieces (builders.lair_body_from_runs, lair_state_args,
lair_head_pieces, lair_leaders_piece; UpdateMetadataBuilder.encode_body_from_runs with
umr_run_pieces), as replay/propagate/incremental.py makes them: each must equal the codec's
encoding of the request the builder builds (build(epoch).encode(version)), for any states,
topics (with and without ids), leaders, controller values and broker epoch."""

from __future__ import annotations

import uuid
from itertools import groupby
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.batch import request_batch
from ctrlbatch.batch.builders import (
    LeaderAndIsrBuilder,
    UpdateMetadataBuilder,
    lair_body_from_runs,
    lair_head_pieces,
    lair_leaders_piece,
    lair_run_pieces,
    lair_state_args,
    umr_run_pieces,
)
from ctrlbatch.batch.lair_rows import LAIR_STATE_FIELDS, make_lair_state
from ctrlbatch.batch.partition_info import UMR_STATE_FIELDS, make_umr_state
from ctrlbatch.requests import LeaderAndIsrLiveLeader, UnsupportedVersionError
from ctrlbatch.testing.contexts import brokers

_names = st.sampled_from(["a", "b", "topic-x", "é", "t" * 300])
_ints = st.integers(-1, 2**31 - 1)
_ids = st.lists(st.integers(0, 20), max_size=4).map(tuple)
_keys = st.lists(st.tuples(_names, st.integers(0, 300)), unique=True, max_size=300 // 20).map(sorted)


def _topic_ids(data: st.DataObject) -> dict[str, uuid.UUID]:
    return {t: uuid.UUID(int=data.draw(st.integers(0, 2**128 - 1))) for t in data.draw(st.sets(_names))}


def _lair_values(data: st.DataObject, topic: str, partition: int, version: int) -> tuple[Any, ...]:
    return (
        topic, partition, data.draw(_ints), data.draw(st.integers(-2, 20)), data.draw(_ints), data.draw(_ids),
        data.draw(_ints), data.draw(_ids), data.draw(_ids), data.draw(_ids), data.draw(st.booleans()),
        data.draw(st.integers(0, 1)) if version >= 6 else 0,  # the recovery state exists from v6 (KIP-704)
    )


@settings(max_examples=300, deadline=None)
@given(data=st.data(), version=st.integers(2, 7), epoch=st.integers(-1, 2**63 - 1), update_type=st.integers(0, 2),
       kraft=st.booleans(), controller=_ints, controller_epoch=_ints, keys=_keys)
def test_lair_body_from_runs_equals_the_built_one(
    data: st.DataObject, version: int, epoch: int, update_type: int, kraft: bool, controller: int,
    controller_epoch: int, keys: list[tuple[str, int]],
) -> None:
    topic_ids = _topic_ids(data)
    values = [_lair_values(data, t, p, version) for t, p in keys]
    assert all(len(v) == len(LAIR_STATE_FIELDS) for v in values)
    states = [make_lair_state(*v) for v in values]
    leaders = tuple(
        LeaderAndIsrLiveLeader(broker_id=i, host_name=f"h{i}", port=9000 + i)
        for i in data.draw(st.lists(st.integers(0, 300), unique=True, max_size=300))
    )
    builder = LeaderAndIsrBuilder(version, controller, controller_epoch, states, topic_ids, leaders, kraft, update_type)
    args = lair_state_args(version)
    encode, head_of, count, tail = lair_run_pieces(version)
    runs: list[bytes] = []
    topics = 0
    for topic, group in groupby(values, lambda v: v[0]):
        encoded = [args(*v) for v in group]
        assert encoded == [encode(make_lair_state(*v)) for v in values if v[0] == topic]  # args encode alike
        runs += [head_of(topic, topic_ids), count(len(encoded)), *encoded, tail]
        topics += 1
    head = lair_head_pieces(version, controller, kraft, controller_epoch, update_type)
    body = lair_body_from_runs(head, epoch, count(topics), runs, lair_leaders_piece(version, leaders))
    assert body == builder.build(epoch).encode(version)
    assert body == builder.encode_body(epoch)


@pytest.mark.parametrize("version", [2, 5])
def test_lair_state_args_refuse_what_the_codec_refuses(version: int) -> None:
    """A recovery state before v6: the args encoder fails too (incremental.py then falls back to
    the batch, which raises the codec's error)."""
    values = ("t", 0, 1, 1, 1, (1,), 1, (1,), (), (), True, 1)
    with pytest.raises(UnsupportedVersionError, match=f"leaderRecoveryState at version {version}"):
        lair_run_pieces(version)[0](make_lair_state(*values))
    with pytest.raises(Exception):  # noqa: B017 (untranslated: whatever the codec's raw error is)
        lair_state_args(version)(*values)


def test_lair_head_pieces_refuse_versions_without_a_broker_epoch() -> None:
    with pytest.raises(ValueError, match="LeaderAndIsr v1: no broker epoch"):
        lair_head_pieces(1, 1, False, 1, 0)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), version=st.integers(5, 8), epoch=st.integers(-1, 2**63 - 1), update_type=st.integers(0, 2),
       kraft=st.booleans(), controller=_ints, controller_epoch=_ints, keys=_keys)
def test_umr_body_from_runs_equals_the_built_one(
    data: st.DataObject, version: int, epoch: int, update_type: int, kraft: bool, controller: int,
    controller_epoch: int, keys: list[tuple[str, int]],
) -> None:
    topic_ids = _topic_ids(data)
    values = [
        (t, p, data.draw(_ints), data.draw(st.integers(-2, 20)), data.draw(_ints), data.draw(_ids), data.draw(_ints),
         data.draw(_ids), data.draw(_ids))
        for t, p in keys
    ]
    assert all(len(v) == len(UMR_STATE_FIELDS) for v in values)
    states = [make_umr_state(*v) for v in values]
    ids = data.draw(st.lists(st.integers(0, 1000), unique=True, max_size=5))
    live = request_batch.live_brokers(tuple(data.draw(brokers(i, custom_listeners=False)) for i in ids), version)
    builder = UpdateMetadataBuilder(version, controller, controller_epoch, states, live, topic_ids, kraft, update_type)
    args, encode, head_of, count, tail = umr_run_pieces(version)
    runs: list[bytes] = []
    topics = 0
    for topic, group in groupby(values, lambda v: v[0]):
        # a state kept as such (encode) or as its arguments (args): the same bytes
        encoded = [args(*v) if i % 2 else encode(make_umr_state(*v)) for i, v in enumerate(group)]
        tid = topic_ids.get(topic)
        runs += [head_of(topic, 0 if tid is None else tid.int), count(len(encoded)), *encoded, tail]
        topics += 1
    body = builder.encode_body_from_runs(epoch, topics, runs)
    assert body == builder.build(epoch).encode(version)
    assert body == builder.encode_body(epoch)


def test_umr_run_pieces_refuse_versions_without_topic_states() -> None:
    with pytest.raises(ValueError, match="UpdateMetadata v4: no topic states"):
        umr_run_pieces(4)
