"""The net builder's accumulators (replay/image/net_effect.py: one list per partition, changed in
place): ``packed()`` is ``effect().pack()``, an effect taken is not changed by later deltas, and
random deltas over a small set of topics (creations, removals, re-creations, changes, in one delta
or across deltas) compose to what the fold gives wherever the fold accepts them, and never compose
where it refuses them."""

from __future__ import annotations

import pickle
import uuid
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.image.image import EMPTY_IMAGE, MetadataImage, MetadataReplayError, apply_delta
from ctrlbatch.replay.image.net_effect import NetBuilder, NotComposable, compose
from ctrlbatch.replay.image.packed_image import pack_image, unpack_image
from ctrlbatch.replay.log import records as rec
from ctrlbatch.replay.schema import metadata_classes as mc

from .test_net_effect import LOGS, _deltas, _ordered

TOPICS = [uuid.UUID(int=i) for i in (1, 2, 3)]
NAMES = ["a", "b"]
ids = st.none() | st.lists(st.integers(0, 3), max_size=3)


def _record(type_id: int, data: Any) -> rec.MetadataRecord:
    return rec.MetadataRecord(0, type_id, 0, data)


topic_records = st.builds(
    lambda name, tid: _record(rec.TOPIC_RECORD, mc.TopicRecord(name=name, topic_id=tid)),
    st.sampled_from(NAMES), st.sampled_from(TOPICS),
)
partition_records = st.builds(
    lambda tid, p, leader, epoch: _record(rec.PARTITION_RECORD, mc.PartitionRecord(
        partition_id=p, topic_id=tid, replicas=[1, 2], isr=[1], leader=leader, leader_epoch=epoch,
        partition_epoch=epoch)),
    st.sampled_from(TOPICS), st.integers(0, 1), st.integers(-1, 2), st.integers(0, 3),
)
change_records = st.builds(
    lambda tid, p, isr, replicas, leader, lrs, elr: _record(rec.PARTITION_CHANGE_RECORD, mc.PartitionChangeRecord(
        partition_id=p, topic_id=tid, isr=isr, replicas=replicas, leader=leader, leader_recovery_state=lrs,
        eligible_leader_replicas=elr)),
    st.sampled_from(TOPICS), st.integers(0, 1), ids, ids, st.sampled_from([-2, -2, 0, 1]),
    st.sampled_from([-1, -1, 0, 1]), ids,
)
remove_records = st.builds(lambda tid: _record(rec.REMOVE_TOPIC_RECORD, mc.RemoveTopicRecord(topic_id=tid)),
                           st.sampled_from(TOPICS))
records = st.one_of(topic_records, partition_records, change_records, change_records, change_records, remove_records)
deltas = st.lists(st.lists(records, max_size=5), min_size=1, max_size=5)


def _fold(image: MetadataImage, span: list[list[Any]], first: int) -> MetadataImage:
    for i, records_ in enumerate(span):
        image = apply_delta(image, records_, offset=first + i, epoch=1)[0]
    return image


def _created(tids: list[uuid.UUID]) -> list[list[Any]]:
    """One delta per topic: its TopicRecord (a name of its own) and partitions 0 and 1."""
    return [[_record(rec.TOPIC_RECORD, mc.TopicRecord(name=f"t{tid.int}", topic_id=tid)),
             *(_record(rec.PARTITION_RECORD, mc.PartitionRecord(partition_id=p, topic_id=tid, replicas=[1, 2], isr=[1],
                                                                 leader=1, leader_epoch=3, partition_epoch=5))
               for p in (0, 1))] for tid in tids]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.lists(st.sampled_from(TOPICS), unique=True).map(_created) | deltas, span=deltas)
def test_random_deltas_compose_exactly_where_the_fold_accepts_them(base: list[list[Any]], span: list[list[Any]]) -> None:
    try:
        image = _fold(EMPTY_IMAGE, base, 0)
    except MetadataReplayError:
        image = EMPTY_IMAGE
    try:
        folded: MetadataImage | None = _fold(image, span, len(base))
    except MetadataReplayError:
        folded = None
    builder = NetBuilder()
    try:
        for i, records_ in enumerate(span):
            builder.add(tuple(records_), len(base) + i, 1)
        packed = builder.packed()
        assert pickle.dumps(packed, 5) == pickle.dumps(builder.effect().pack(), 5)  # dict order included
        composed = unpack_image(compose(packed, pack_image(image)))
    except NotComposable:
        event("not composed")
        return
    event(f"composed ({'no ' if not image.topics else ''}base topics), fold {'refused' if folded is None else 'accepted'}")
    assert folded is not None, "composed a range the fold refuses"
    assert _ordered(composed) == _ordered(folded)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(LOGS), st.integers(0, 10_000), st.integers(1, 400))
def test_packed_is_the_packed_effect_and_an_effect_stays_as_taken(log: tuple[int, int, int | None], start: int,
                                                                    length: int) -> None:
    all_deltas = _deltas(*log)
    start %= len(all_deltas)
    span = all_deltas[start:start + length]
    builder = NetBuilder()
    half = len(span) // 2
    try:
        for delta in span[:half]:
            builder.add(delta.records, delta.last_offset, delta.epoch)
        first = builder.effect()
        taken = pickle.dumps(first.pack(), 5)
        assert pickle.dumps(builder.packed(), 5) == taken
        for delta in span[half:]:
            builder.add(delta.records, delta.last_offset, delta.epoch)
        assert pickle.dumps(builder.packed(), 5) == pickle.dumps(builder.effect().pack(), 5)
    except NotComposable:
        assert any(r.type == rec.CLEAR_ELR_RECORD for d in span for r in d.records)
        return
    assert pickle.dumps(first.pack(), 5) == taken  # later deltas changed the builder, not the effect taken
