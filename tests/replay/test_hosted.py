"""HostedIndex (replay/propagate/hosted.py) against the walk it replaces (propagator._hosted_by)."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.engine.skeleton import snapshot_start
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.image.deltas import group_deltas
from ctrlbatch.replay.image.image import EMPTY_IMAGE, MetadataImage, TopicImage, apply_delta
from ctrlbatch.replay.log.records import (
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    REMOVE_TOPIC_RECORD,
    TOPIC_RECORD,
    MetadataRecord,
)
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.propagate.hosted import HostedIndex
from ctrlbatch.replay.propagate.propagator import _hosted_by
from ctrlbatch.replay.schema.record_classes import record_class


def _check(index: HostedIndex, image: MetadataImage, brokers: set[int]) -> int:
    got = index.hosted(image, brokers)
    assert got == list(_hosted_by(image, brokers)), sorted(brokers)
    return len(got)


def _walk_history(path: Path) -> tuple[int, int, HostedIndex]:
    """Every delta of the log advances the index; after each, the index answers like the walk for
    the delta's changed brokers and for each single broker. Returns (deltas, partitions found, index)."""
    history = open_history(str(path), from_snapshot=None)
    image, _ = snapshot_start(history)
    index = HostedIndex()
    deltas = found = 0
    for delta in group_deltas(history.batches(), 1):
        before = image
        image, changes = apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)
        index.advance(before.topics, image.topics, changes)
        changed = set(changes.changed_brokers) or {min(image.brokers, default=0)}
        found += _check(index, image, changed)
        if deltas % 17 == 0:
            for b in image.brokers:
                found += _check(index, image, {b})
            found += _check(index, image, set(image.brokers))
        deltas += 1
    return deltas, found, index


def test_a_generated_log_every_delta_one_walk(tmp_path: Path) -> None:
    """Topic creation, deletion and reassignment follow the log; the image is walked once."""
    generate_log(tmp_path, brokers=6, topics=12, partitions=120, records=8_000, seed=5)
    deltas, found, index = _walk_history(tmp_path)
    assert deltas > 1_000 and found > 0
    assert index.builds == 1  # built at the first question, then only advanced


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), brokers=st.integers(1, 7), topics=st.integers(1, 8),
       partitions=st.integers(1, 60), records=st.integers(200, 3_000), snapshots=st.sampled_from([0, 1]))
def test_generated_logs_every_delta(seed: int, brokers: int, topics: int, partitions: int, records: int,
                                    snapshots: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        generate_log(tmp, brokers=brokers, topics=topics, partitions=max(partitions, topics), records=records,
                     seed=seed, snapshots=snapshots, replication_factor=min(3, brokers))
        _walk_history(Path(tmp))


def _rec(offset: int, type_id: int, version: int = 0, **fields: Any) -> MetadataRecord:
    cls = record_class(type_id)
    assert cls is not None
    return MetadataRecord(offset, type_id, version, cls(**fields))


def _register(offset: int, broker: int) -> MetadataRecord:
    cls: Any = record_class(REGISTER_BROKER_RECORD)
    ep = cls.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9000 + broker, security_protocol=0)
    return _rec(offset, REGISTER_BROKER_RECORD, 2, broker_id=broker, broker_epoch=offset, end_points=(ep,), fenced=False)


_IDS = [uuid.UUID(int=i) for i in range(1, 5)]
_STEPS = st.one_of(
    st.tuples(st.just("create"), st.sampled_from(_IDS), st.sampled_from(["a", "b", "c"]), st.integers(0, 4)),
    st.tuples(st.just("delete"), st.sampled_from(_IDS), st.just(""), st.integers(0, 0)),
    st.tuples(st.just("reassign"), st.sampled_from(_IDS), st.just(""), st.integers(0, 6)),
    st.tuples(st.just("leader"), st.sampled_from(_IDS), st.just(""), st.integers(0, 6)),
    st.tuples(st.just("delete-and-create"), st.sampled_from(_IDS), st.sampled_from(["a", "b", "c"]), st.integers(0, 4)),
    st.tuples(st.just("other-mapping"), st.sampled_from(_IDS), st.just(""), st.integers(0, 0)),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_STEPS, min_size=1, max_size=15))
def test_random_topic_changes(steps: list[tuple[str, uuid.UUID, str, int]]) -> None:
    """Topics created (under a taken name too), deleted, deleted and re-created in one delta,
    reassigned, re-led, and an image not made by apply_delta: after each, every broker set's
    partitions equal the walk's."""
    image, _ = apply_delta(EMPTY_IMAGE, [_register(b, b) for b in range(1, 6)], offset=10)
    index = HostedIndex()
    offset = 100
    for kind, tid, name, value in steps:
        records: list[MetadataRecord] = []
        topic = image.topics.get(tid)
        if kind in ("delete", "delete-and-create") and topic is not None:
            records.append(_rec(offset, REMOVE_TOPIC_RECORD, topic_id=tid))
        if kind in ("create", "delete-and-create") and (kind == "delete-and-create" or topic is None) \
                and name not in image.topic_ids_by_name:
            records.append(_rec(offset, TOPIC_RECORD, name=name, topic_id=tid))
            for p in range(value + 1):
                replicas = [1 + (p + k + value) % 7 for k in range(3)]
                records.append(_rec(offset, PARTITION_RECORD, partition_id=p, topic_id=tid, replicas=replicas,
                                    isr=replicas[:2], leader=replicas[0], leader_epoch=0, partition_epoch=0))
        if kind in ("reassign", "leader") and topic is not None and topic.partitions:
            p = sorted(topic.partitions)[value % len(topic.partitions)]
            reg = topic.partitions[p]
            if kind == "reassign":
                replicas = [1 + (value + k) % 7 for k in range(1 + value % 3)]
                records.append(_rec(offset, PARTITION_CHANGE_RECORD, partition_id=p, topic_id=tid, replicas=replicas,
                                    isr=replicas, leader=replicas[0]))
            else:
                records.append(_rec(offset, PARTITION_CHANGE_RECORD, partition_id=p, topic_id=tid, leader=reg.replicas[-1]))
        if kind == "other-mapping" and topic is not None:
            image = attrs.evolve(image, topics={**image.topics, tid: TopicImage(tid, topic.name, dict(topic.partitions))})
        elif records:
            before = image
            image, changes = apply_delta(image, records, offset=offset, epoch=1)
            index.advance(before.topics, image.topics, changes)
        offset += 10
        for brokers in ({1}, {6}, {2, 7}, set(range(1, 8))):
            _check(index, image, brokers)
