"""Copy-on-write partition maps: caches applying the same decoded UpdateMetadata share its maps, and a
change to one cache never shows in another (metadata_cache.py's rules), over random histories."""

from __future__ import annotations

import uuid

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.context import TopicPartition
from ctrlbatch.requests import UpdateMetadataRequest
from ctrlbatch.sim.metadata_cache import MatchMemo, MetadataCache

from .test_metadata_cache_properties import _REQUEST, IDS, _request

VERSION = 8
_STEP = st.tuples(_REQUEST, st.sets(st.integers(0, 2), min_size=1))


def _model_apply(model: dict[TopicPartition, tuple[int, int]], ids: dict[str, uuid.UUID],
                 states: list[tuple[str, int, int, int]], with_ids: bool) -> None:
    for t, *_ in states:
        if with_ids:
            ids[t] = IDS[t]
        else:
            ids.pop(t, None)
    for t, p, leader, e in states:
        tp = TopicPartition(t, p)
        if leader == -2:
            if any(k.topic == t for k in model):
                model.pop(tp, None)
                if not any(k.topic == t for k in model):
                    ids.pop(t, None)
        else:
            model[tp] = (leader, e)


@settings(max_examples=300, deadline=None)
@given(st.lists(_STEP, min_size=1, max_size=8))
def test_caches_sharing_requests_each_match_their_own_history(
        steps: list[tuple[tuple[list[tuple[str, int, int, int]], list[int], bool], set[int]]]) -> None:
    caches = [MetadataCache() for _ in range(3)]
    models: list[dict[TopicPartition, tuple[int, int]]] = [{} for _ in caches]
    model_ids: list[dict[str, uuid.UUID]] = [{} for _ in caches]
    for (states, brokers, with_ids), who in steps:
        shared = UpdateMetadataRequest.decode(_request(states, brokers, with_ids, VERSION).encode(VERSION), VERSION)
        for i in sorted(who):
            caches[i].update(shared, VERSION, migration_enabled=False)  # one decoded object for all of them
            _model_apply(models[i], model_ids[i], states, with_ids)
        for i, cache in enumerate(caches):
            view = cache.view()
            assert {tp: (v.leader, v.leader_epoch) for tp, v in view.partitions.items()} == models[i]
            assert view.topic_ids == model_ids[i]
    views = [c.view() for c in caches]
    for want in views:  # one memo across caches, as SimCluster.converged uses it
        memo = MatchMemo(want)
        assert [c.matches(want, memo) for c in caches] == [v == want for v in views]


def test_a_full_request_applied_by_many_caches_is_one_map_per_topic() -> None:
    states = [("a", p, 1, 0) for p in range(3)] + [("b", 0, 1, 0)]
    shared = UpdateMetadataRequest.decode(_request(states, [1], True, VERSION).encode(VERSION), VERSION)
    caches = [MetadataCache() for _ in range(4)]
    for epoch, c in enumerate(caches):  # each broker's copy carries its own BrokerEpoch (SharedDecoder)
        c.update(attrs.evolve(shared, broker_epoch=100 + epoch), VERSION, migration_enabled=False)
    assert all(c.partition_states["a"] is caches[0].partition_states["a"] for c in caches)
    # a partial update copies first: the others keep the shared map as it was
    partial = UpdateMetadataRequest.decode(_request([("a", 0, 2, 1)], [1], True, VERSION).encode(VERSION), VERSION)
    caches[0].update(partial, VERSION, migration_enabled=False)
    assert caches[0].partition_states["a"] is not caches[1].partition_states["a"]
    assert caches[0].partition_states["a"][0].leader == 2 and caches[1].partition_states["a"][0].leader == 1
    assert caches[0].partition_states["a"][1] is caches[1].partition_states["a"][1]
    caches[1].update(attrs.evolve(partial, broker_epoch=7), VERSION, migration_enabled=False)
    assert caches[1].partition_states["a"] is caches[0].partition_states["a"]  # the same merge, shared
    assert caches[2].partition_states["a"][0].leader == 1  # untouched by both
