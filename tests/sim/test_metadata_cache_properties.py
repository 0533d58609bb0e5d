"""The metadata cache against a plain model, over random UpdateMetadata sequences (ZkMC rules)."""

from __future__ import annotations

import uuid

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.context import TopicPartition
from ctrlbatch.requests import (
    ZERO_UUID,
    UpdateMetadataBroker,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)
from ctrlbatch.sim.metadata_cache import MetadataCache

IDS = {"a": uuid.UUID(int=0xA), "b": uuid.UUID(int=0xB)}

_STATE = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 2), st.sampled_from([-2, -1, 0, 1]), st.integers(0, 5))
_REQUEST = st.tuples(st.lists(_STATE, max_size=6), st.lists(st.integers(0, 3), max_size=3, unique=True),
                     st.booleans())


def _request(states: list[tuple[str, int, int, int]], brokers: list[int], with_ids: bool, version: int) -> UpdateMetadataRequest:
    pstates = [UpdateMetadataPartitionState(topic_name=t if version < 5 else "", partition_index=p, leader=leader,
                                            leader_epoch=e, isr=(1,), replicas=(1,)) for t, p, leader, e in states]
    live = [UpdateMetadataBroker(id=b) for b in brokers]
    if version < 5:
        return UpdateMetadataRequest(controller_id=1, ungrouped_partition_states=pstates, live_brokers=live)
    topics: list[UpdateMetadataTopicState] = []
    for (t, *_rest), s in zip(states, pstates, strict=True):  # one topic state per run of the same topic, in order
        if not topics or topics[-1].topic_name != t:
            topics.append(UpdateMetadataTopicState(topic_name=t, topic_id=IDS[t] if with_ids else ZERO_UUID))
        topics[-1] = UpdateMetadataTopicState(topic_name=t, topic_id=topics[-1].topic_id,
                                              partition_states=(*topics[-1].partition_states, s))
    return UpdateMetadataRequest(controller_id=1, topic_states=topics, live_brokers=live)


@settings(max_examples=300, deadline=None)
@given(st.lists(_REQUEST, min_size=1, max_size=6), st.sampled_from([4, 8]))
def test_cache_matches_the_model(requests: list[tuple[list[tuple[str, int, int, int]], list[int], bool]], version: int) -> None:
    cache = MetadataCache()
    model: dict[TopicPartition, tuple[int, int]] = {}
    model_ids: dict[str, uuid.UUID] = {}
    deleted_log: list[TopicPartition] = []
    for states, brokers, with_ids in requests:
        wire = _request(states, brokers, with_ids, version)
        deleted = cache.update(UpdateMetadataRequest.decode(wire.encode(version), version), version, migration_enabled=False)
        if version >= 5:
            for t, *_ in states:
                if with_ids:
                    model_ids[t] = IDS[t]
                else:
                    model_ids.pop(t, None)
        gone: dict[TopicPartition, None] = {}
        for t, p, leader, e in states:
            tp = TopicPartition(t, p)
            if leader == -2:
                # removePartitionInfo: only a cached topic can lose its id, once its last partition goes
                if any(k.topic == t for k in model):
                    model.pop(tp, None)
                    if not any(k.topic == t for k in model):
                        model_ids.pop(t, None)
                gone[tp] = None
            else:
                model[tp] = (leader, e)
                gone.pop(tp, None)
        deleted_log.extend(gone)
        assert deleted == list(gone)
        view = cache.view()
        assert {tp: (v.leader, v.leader_epoch) for tp, v in view.partitions.items()} == model
        assert set(view.brokers) == set(brokers)  # replaced, never merged
        assert view.topic_ids == model_ids
        assert cache.matches(view)
        for tp, pv in view.partitions.items():  # any difference is seen
            other = attrs.evolve(pv, leader=pv.leader + 1)
            assert not cache.matches(attrs.evolve(view, partitions={**view.partitions, tp: other}))
            assert not cache.matches(attrs.evolve(view, partitions={k: v for k, v in view.partitions.items() if k != tp}))


@settings(max_examples=100, deadline=None)
@given(st.lists(_REQUEST, min_size=1, max_size=4), st.sampled_from([4, 8]))
def test_prepared_live_brokers_give_the_same_cache(requests: list[tuple[list[tuple[str, int, int, int]], list[int], bool]],
                                                   version: int) -> None:
    """A big request's brokers are prepared off the state lock (BrokerState.prepare): same result."""
    from ctrlbatch.sim.broker_state import BrokerState

    plain, prepared = BrokerState(1, 1), BrokerState(1, 1)
    for states, brokers, with_ids in requests:
        req = UpdateMetadataRequest.decode(_request(states, brokers, with_ids, version).encode(version), version)
        a = plain.handle(6, version, req)
        b = prepared.handle(6, version, req, prepared.prepare(6, version, req))
        assert a == b
        assert plain.cache.view() == prepared.cache.view() and plain.deleted_partitions == prepared.deleted_partitions
