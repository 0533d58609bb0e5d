"""full_image's kept topic array (TopicPieces: records in name order, patched in place, a shared
epoch piece) against the batch's bytes, over random sequences of images: topics created
(with and without partitions), deleted and re-created under another id, partitions changed,
added and reordered, topic objects replaced as they are, the topics mapping in another order,
new controller epochs (alone and with the other changes in one image), brokers
registering and leaving, with encoded and sized bodies of several versions interleaved on one
memo. After each image the body equals the batch's encoding of the same request (its builder
encodes the partition states from state objects: the codec, no piece), sized ones its length,
and the memo holds one record per named topic and at most two arrays."""

from __future__ import annotations

import uuid
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.batch import UpdateType
from ctrlbatch.replay.image.image import EMPTY_IMAGE, MetadataImage, TopicImage, apply_delta
from ctrlbatch.replay.log.records import (
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REMOVE_TOPIC_RECORD,
    TOPIC_RECORD,
    UNREGISTER_BROKER_RECORD,
    MetadataRecord,
)
from ctrlbatch.replay.propagate.full_image import TopicPieces, full_image_body

from .test_full_image import _rec, _register

BASE = ("create", "create_empty", "delete", "recreate", "change", "add", "reorder", "same", "shuffle", "epoch", "broker")
KINDS = (*BASE, "epoch", "epoch+change", "epoch+broker", "epoch+add", "epoch+create")  # +: a new epoch in the same image
STEPS = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 10**6), st.integers(0, 10**6), st.booleans(),
              st.sampled_from([8, 8, 8, 8, 8, 7, 6, 5])),
    min_size=1, max_size=25,
)


class _Cluster:
    """Images built with apply_delta from records, as the replay builds them."""

    def __init__(self) -> None:
        self.offset = 0
        self.next_id = 100
        records = [_register(b, b) for b in range(1, 5)]
        self.image, _ = apply_delta(EMPTY_IMAGE, records, offset=len(records), epoch=3)
        for k in range(3):
            self.create(f"t{k}", 1 + k * 2)

    def apply(self, records: list[MetadataRecord]) -> None:
        self.offset += len(records) + 1
        self.image, _ = apply_delta(self.image, records, offset=self.offset)

    def rec(self, type_id: int, version: int = 0, **fields: Any) -> MetadataRecord:
        self.offset += 1
        return _rec(self.offset, type_id, version, **fields)

    def partition(self, tid: uuid.UUID, p: int, seed: int) -> MetadataRecord:
        replicas = [1 + (seed + p + k) % 6 for k in range(1 + seed % 3)]  # brokers 5, 6 may be offline
        return self.rec(PARTITION_RECORD, partition_id=p, topic_id=tid, replicas=replicas, isr=replicas[:1 + seed % 2],
                        leader=replicas[0], leader_epoch=0, partition_epoch=0)

    def create(self, name: str, partitions: int, seed: int = 0) -> None:
        tid = uuid.UUID(int=self.next_id)
        self.next_id += 1
        self.apply([self.rec(TOPIC_RECORD, name=name, topic_id=tid),
                    *(self.partition(tid, p, seed) for p in range(partitions))])

    def topic(self, pick: int) -> TopicImage | None:
        named = sorted(self.image.topic_ids_by_name.items())
        return self.image.topics[named[pick % len(named)][1]] if named else None

    def step(self, kind: str, a: int, b: int) -> None:
        if kind.startswith("epoch+"):
            self.step(kind.removeprefix("epoch+"), a, b)
            kind = "epoch"
        image, topic = self.image, self.topic(a)
        if kind in ("create", "create_empty"):
            name = f"t{a % 12}"
            if name not in image.topic_ids_by_name:
                self.create(name, 0 if kind == "create_empty" else 1 + b % 6, b)
        elif topic is None or kind == "broker":
            broker = 1 + b % 6
            if broker in image.brokers and len(image.brokers) > 1:
                self.apply([self.rec(UNREGISTER_BROKER_RECORD, broker_id=broker, broker_epoch=image.brokers[broker].epoch)])
            elif broker not in image.brokers:
                self.offset += 1
                self.apply([_register(self.offset, broker)])
        elif kind in ("delete", "recreate"):
            self.apply([self.rec(REMOVE_TOPIC_RECORD, topic_id=topic.id)])
            if kind == "recreate":
                self.create(topic.name, 1 + b % 4, b)
        elif kind == "change" and topic.partitions:
            parts = sorted(topic.partitions)
            changed = {parts[(b + k) % len(parts)] for k in range(1 + b % 3)}
            records = []
            for p in sorted(changed):
                replicas = topic.partitions[p].replicas
                records.append(self.rec(PARTITION_CHANGE_RECORD, partition_id=p, topic_id=topic.id,
                                        leader=replicas[b % len(replicas)], isr=replicas[:1 + (b + p) % len(replicas)]))
            self.apply(records)
        elif kind == "add" or (kind == "change" and not topic.partitions):
            n = len(topic.partitions)
            self.apply([self.partition(topic.id, n + k, b) for k in range(1 + b % 2)])
        elif kind in ("reorder", "same"):
            mapping = dict(reversed(list(topic.partitions.items()))) if kind == "reorder" else dict(topic.partitions)
            self.image = attrs.evolve(image, topics={**image.topics, topic.id: TopicImage(topic.id, topic.name, mapping)})
        elif kind == "shuffle":  # the same topics in another order (an unpacked image may have any)
            self.image = attrs.evolve(image, topics=dict(reversed(list(image.topics.items()))))
        elif kind == "epoch":
            self.image = attrs.evolve(image, epoch=image.epoch + 1 + b % 2)


def _body(pieces: TopicPieces, image: MetadataImage, version: int, sized: bool) -> Any:
    return full_image_body(pieces, image, version=version, controller_id=1, header_epoch=3,
                           update_type=UpdateType.UNKNOWN, first_broker_epoch=7,
                           live=[r.broker for _, r in sorted(image.brokers.items())], sizes_only=sized)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
def test_the_kept_array_gives_the_batchs_bytes_after_every_image(steps: list[tuple[str, int, int, bool, int]]) -> None:
    cluster = _Cluster()
    pieces = TopicPieces()
    _body(pieces, cluster.image, 8, False)  # a warm memo from the start
    for kind, a, b, sized, version in steps:
        cluster.step(kind, a, b)
        image = cluster.image
        got = _body(pieces, image, version, sized)
        want = got.builder.encode_body(7)  # the codec over the image's state objects (_ImageStates)
        if sized:
            assert got.body.size == len(want), (kind, version)
        else:
            assert got.body.data == want, (kind, version)
        assert len(got.builder.partition_states) == sum(len(t.partitions) for t in image.topics.values())
        kept = pieces._arrays[(version, sized)]
        assert len(kept.records) == len(image.topic_ids_by_name) and len(pieces._arrays) <= 2


def test_a_new_epoch_and_a_patch_after_it_reencode_only_what_changed() -> None:
    """After a new epoch (states split at their epoch, once) a change re-encodes only the changed
    states, a new epoch or a topic object with the same registrations none; every body is the batch's."""
    cluster = _Cluster()
    pieces = TopicPieces()
    _body(pieces, cluster.image, 8, False)
    for kind in ("epoch", "change", "epoch", "change", "same", "epoch", "change"):
        before, topic = pieces.encoded, cluster.topic(2)
        cluster.step(kind, 2, 1)
        got = _body(pieces, cluster.image, 8, False)
        assert got.body.data == got.builder.encode_body(7)
        assert topic is not None
        changed = sum(reg is not topic.partitions[p] for p, reg in (cluster.topic(2) or topic).partitions.items())
        assert pieces.encoded - before == (changed if kind == "change" else 0) and (kind != "change" or changed > 0)
