"""Full-image UpdateMetadata from cached pieces (replay/propagate/full_image.py) against the batch.

On every delta of the real sample and of generated logs (hypothesis: sizes, seeds, metadata
versions, snapshots, and --ibp for each UpdateMetadata version with topic states), the sends
the propagator makes with the pieces equal, byte for byte and field for field, the sends of the
batch path building every body from scratch; the bodies decode back to the builder's request.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.batch import UpdateType
from ctrlbatch.context import MetadataVersion
from ctrlbatch.replay.engine.skeleton import snapshot_start
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.image.deltas import group_deltas
from ctrlbatch.replay.image.image import EMPTY_IMAGE, MetadataImage, TopicImage, apply_delta
from ctrlbatch.replay.log.records import (
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    TOPIC_RECORD,
    UNREGISTER_BROKER_RECORD,
    MetadataRecord,
)
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.propagate.full_image import (
    FIRST_VERSION,
    FullImageBody,
    TopicPieces,
    _layout,
    full_image_body,
)
from ctrlbatch.replay.propagate.propagator import (
    ReplayOptions,
    Send,
    _controller,
    _image_sends,
    _propagate_changes,
)
from ctrlbatch.replay.schema.record_classes import record_class
from ctrlbatch.requests import UpdateMetadataPartitionState, UpdateMetadataRequest
from ctrlbatch.requests.apis import UPDATE_METADATA

IBPS = [None, MetadataVersion.IBP_2_2_IV0, MetadataVersion.IBP_2_4_IV1, MetadataVersion.IBP_2_8_IV1]  # v8 (the log's), 5, 6, 7


def _fields(send: Send) -> tuple[Any, ...]:
    r = send.request
    b: Any = r.builder
    return (send.broker, send.dropped, r.api_key, r.version, r.broker_epoch, bytes(r.shared.data), r.shared.epoch_offset,
            b.controller_id, b.controller_epoch, int(getattr(b, "update_type", 0)), len(getattr(b, "partition_states", ())))


def _compare_history(path: Path, options: ReplayOptions, *, decode_every: int = 1) -> tuple[int, int, int]:
    """Every delta's sends with the pieces (a fresh TopicPieces) and from scratch; returns
    (deltas compared, full-image sends, partition states encoded by the pieces)."""
    history = open_history(str(path), from_snapshot=None)
    pieces = TopicPieces()
    compared = full = 0
    image, start = snapshot_start(history)
    if start is not None:
        with_pieces = _image_sends(image, options, None, pieces)
        assert [_fields(s) for s in with_pieces] == [_fields(s) for s in _image_sends(image, options, None, None)]
    for delta in group_deltas(history.batches(), 1):
        image, changes = apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)
        header = delta.epoch if options.zk_controller_epoch is None else options.zk_controller_epoch
        kw = {"controller_id": _controller(delta.leader_id, options), "header_epoch": header}
        got = _propagate_changes(image, changes, options, pieces=pieces, **kw)
        want = _propagate_changes(image, changes, options, pieces=None, **kw)
        assert [_fields(s) for s in got] == [_fields(s) for s in want], f"delta at offset {delta.last_offset}"
        for i, s in enumerate(got):
            if s.request.api_key != UPDATE_METADATA.key or isinstance(s.request.builder.partition_states, list):
                continue
            full += 1
            if full % decode_every == 0:  # the lazy states build what the batch built, and the bytes decode to it
                assert s.request.body == want[i].request.body
                version = s.request.version
                data = b"".join(s.request.shared.pieces(s.request.broker_epoch))
                assert s.request.body.encode(version) == data
                assert UpdateMetadataRequest.decode(data, version).encode(version) == data
        compared += 1
    return compared, full, pieces.encoded


def test_the_real_sample_every_delta(sample_dir: Path) -> None:
    compared, full, _ = _compare_history(sample_dir, ReplayOptions())
    assert compared > 100 and full > 0


@pytest.mark.parametrize("ibp", IBPS, ids=lambda v: str(v))
def test_a_generated_log_every_delta_and_the_pieces_save_work(tmp_path: Path, ibp: MetadataVersion | None) -> None:
    generate_log(tmp_path, brokers=6, topics=12, partitions=120, records=8_000, seed=5)
    compared, full, encoded = _compare_history(tmp_path, ReplayOptions(ibp=ibp), decode_every=7)
    assert full >= 5
    assert encoded < full * 120 / 2  # touched partitions only, not every partition of every full send


# Generated logs of the shapes the generator makes (test_incremental's property test too).
GENERATED_LOGS: dict[str, Any] = dict(
    seed=st.integers(0, 2**31),
    brokers=st.integers(1, 7),
    topics=st.integers(1, 8),
    partitions=st.integers(1, 60),
    records=st.integers(200, 3_000),
    level=st.sampled_from([8, 14, 21, 25, 33]),  # 3.4-IV0, 3.6-IV2, 3.9-IV0, 4.0-IV3, 4.4-IV2
    snapshots=st.sampled_from([0, 1]),
    targets=st.sampled_from(["all", "migrating"]),
)  # and ibp: each test its own versions


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**GENERATED_LOGS, ibp=st.sampled_from(IBPS))
def test_generated_logs_every_delta(
    seed: int, brokers: int, topics: int, partitions: int, records: int, level: int, snapshots: int,
    ibp: MetadataVersion | None, targets: Any,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        generate_log(Path(tmp), brokers=brokers, topics=topics, partitions=max(partitions, topics), records=records,
                     seed=seed, metadata_version=level, upgrade_to=None, snapshots=snapshots,
                     replication_factor=min(3, brokers))
        _compare_history(Path(tmp), ReplayOptions(ibp=ibp, targets=targets))


def test_pieces_follow_the_image_not_the_log(tmp_path: Path) -> None:
    """Entries of removed topics go once they outnumber the image's topics; a new epoch re-encodes
    nothing (the epoch is spliced into the kept states) yet changes the bytes."""
    generate_log(tmp_path, brokers=3, topics=4, partitions=20, records=2_000, seed=2)
    history = open_history(str(tmp_path), from_snapshot=None)
    image, _ = snapshot_start(history)
    for delta in group_deltas(history.batches(), 1):
        image, _ = apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)
    pieces = TopicPieces()

    def body(img: Any) -> FullImageBody:
        return full_image_body(pieces, img, version=8, controller_id=1, header_epoch=3, update_type=0,
                               first_broker_epoch=7, live=[r.broker for _, r in sorted(img.brokers.items())])

    first = body(image)
    n = pieces.encoded
    assert n == sum(len(t.partitions) for t in image.topics.values())
    assert body(image).body.data == first.body.data and pieces.encoded == n  # nothing re-encoded
    later = attrs.evolve(image, epoch=image.epoch + 1)
    again = body(later)
    assert again.body.data != first.body.data and pieces.encoded == n  # the states' controller epoch, spliced in
    assert again.body.data == full_image_body(
        TopicPieces(), later, version=8, controller_id=1, header_epoch=3, update_type=UpdateType.UNKNOWN, first_broker_epoch=7,
        live=[r.broker for _, r in sorted(later.brokers.items())]).body.data
    gone = min(image.brokers)
    hosted = sum(gone in reg.replicas for t in image.topics.values() for reg in t.partitions.values())
    assert hosted > 0
    fewer = attrs.evolve(later, brokers={b: r for b, r in later.brokers.items() if b != gone})
    body(fewer)
    assert pieces.encoded == n + hosted  # a broker leaving re-encodes only the states naming it


@given(epoch=st.integers(-(2**31), 2**31 - 1), partition=st.integers(0, 2**31 - 1),
       replicas=st.lists(st.integers(0, 2**31 - 1), max_size=5))
def test_a_states_controller_epoch_sits_where_the_pieces_splice_it(epoch: int, partition: int, replicas: list[int]) -> None:
    """At every v5+ version a state's encoding with another controller epoch is the old bytes
    with 4 bytes replaced at state_epoch_at, and its size is the same (what _reepoched relies on)."""
    for version in range(FIRST_VERSION, UpdateMetadataRequest.MAX_VERSION + 1):
        layout = _layout(version)
        at = layout.state_epoch_at
        assert at == 4
        states = [_state_with(e, partition, replicas) for e in (0, epoch)]
        a, b = (layout.encode_state(s) for s in states)
        assert b == a[:at] + epoch.to_bytes(4, "big", signed=True) + a[at + 4:]
        assert layout.size_state(states[0]) == layout.size_state(states[1]) == len(a)


def _state_with(epoch: int, partition: int, replicas: list[int]) -> Any:
    return UpdateMetadataPartitionState(topic_name="t", partition_index=partition, controller_epoch=epoch, leader=-1,
                                        leader_epoch=5, isr=tuple(replicas), zk_version=2, replicas=tuple(replicas),
                                        offline_replicas=tuple(replicas[:1]))


# ----------------------------------------------------------------------------- a large topic's pieces

LARGE = uuid.UUID(int=41)
SMALL = uuid.UUID(int=42)
LARGE_PARTITIONS = 300


def _rec(offset: int, type_id: int, version: int = 0, **fields: Any) -> MetadataRecord:
    cls = record_class(type_id)
    assert cls is not None
    return MetadataRecord(offset, type_id, version, cls(**fields))


def _register(offset: int, broker: int) -> MetadataRecord:
    cls: Any = record_class(REGISTER_BROKER_RECORD)
    ep = cls.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9000 + broker, security_protocol=0)
    return _rec(offset, REGISTER_BROKER_RECORD, 2, broker_id=broker, broker_epoch=offset, end_points=(ep,),
                fenced=False)


def _large_topic_image() -> MetadataImage:
    """Brokers 1-5 registered (replicas also name 6 and 7: offline), a topic of 300 partitions, one of 3."""
    records = [_register(b, b) for b in range(1, 6)]
    for tid, name, n in ((LARGE, "large", LARGE_PARTITIONS), (SMALL, "small", 3)):
        records.append(_rec(len(records), TOPIC_RECORD, name=name, topic_id=tid))
        for p in range(n):
            replicas = [1 + (p + k) % 7 for k in range(3)]
            records.append(_rec(len(records), PARTITION_RECORD, partition_id=p, topic_id=tid, replicas=replicas,
                                isr=replicas[:2], leader=replicas[0], leader_epoch=0, partition_epoch=0))
    image, _ = apply_delta(EMPTY_IMAGE, records, offset=len(records), epoch=4)
    return image


_STEPS = st.one_of(
    st.tuples(st.just("change"), st.lists(st.integers(0, LARGE_PARTITIONS - 1), min_size=1, max_size=20),
              st.integers(1, 7)),
    st.tuples(st.just("add"), st.integers(1, 3), st.integers(1, 7)),
    st.tuples(st.just("reorder"), st.integers(0, 0), st.integers(0, 0)),
    st.tuples(st.just("broker"), st.integers(1, 7), st.integers(0, 0)),
    st.tuples(st.just("epoch"), st.integers(0, 0), st.integers(0, 0)),
    st.tuples(st.just("same"), st.integers(0, 0), st.integers(0, 0)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_STEPS, min_size=1, max_size=12), sizes_only=st.booleans())
def test_a_large_topics_cached_pieces_joined_equal_a_fresh_encode(
    steps: list[tuple[str, Any, int]], sizes_only: bool
) -> None:
    """Random partition changes in a large topic (apply_delta's PartitionChangeRecords), new
    partitions, a mapping in another order, brokers registering and leaving, a new epoch, a new
    topic object with the same registrations: after each, the body from the kept pieces equals
    the body from a fresh TopicPieces; a change of k partitions re-encodes exactly k states."""
    image = _large_topic_image()
    pieces = TopicPieces()

    def body(img: MetadataImage, with_pieces: TopicPieces) -> FullImageBody:
        return full_image_body(with_pieces, img, version=8, controller_id=1, header_epoch=3, update_type=UpdateType.UNKNOWN,
                               first_broker_epoch=7, live=[r.broker for _, r in sorted(img.brokers.items())],
                               sizes_only=sizes_only)

    body(image, pieces)
    offset = 10_000
    for kind, arg, value in steps:
        before = pieces.encoded
        large = image.topics[LARGE]
        if kind == "change":
            records = [_rec(offset + i, PARTITION_CHANGE_RECORD, partition_id=p, topic_id=LARGE,
                            leader=large.partitions[p].replicas[value % 3], isr=large.partitions[p].replicas[:1 + value % 3])
                       for i, p in enumerate(arg)]
            image, _ = apply_delta(image, records, offset=offset + len(records), epoch=image.epoch)
        elif kind == "add":
            n = len(large.partitions)
            records = [_rec(offset + i, PARTITION_RECORD, partition_id=n + i, topic_id=LARGE, replicas=[value],
                            isr=[value], leader=value, leader_epoch=0, partition_epoch=0) for i in range(arg)]
            image, _ = apply_delta(image, records, offset=offset + arg, epoch=image.epoch)
        elif kind == "reorder":
            reordered = dict(reversed(list(large.partitions.items())))
            image = attrs.evolve(image, topics={**image.topics, LARGE: TopicImage(LARGE, "large", reordered)})
        elif kind == "broker":
            if value in image.brokers:
                image, _ = apply_delta(image, [_rec(offset, UNREGISTER_BROKER_RECORD, broker_id=value,
                                                    broker_epoch=image.brokers[value].epoch)], offset=offset)
            else:
                image, _ = apply_delta(image, [_register(offset, value)], offset=offset)
        elif kind == "epoch":
            image = attrs.evolve(image, epoch=image.epoch + 1)
        else:
            image = attrs.evolve(image, topics={**image.topics, LARGE: TopicImage(LARGE, "large", dict(large.partitions))})
        offset += 100
        if not image.brokers:
            continue  # no live broker: nothing to send (the propagator never asks)
        got, fresh = body(image, pieces), body(image, TopicPieces())
        assert got.body.data == fresh.body.data and got.body.size == fresh.body.size, (kind, arg, value)
        assert len(got.builder.partition_states) == len(fresh.builder.partition_states)
        if kind == "change":
            assert pieces.encoded - before == len(set(arg))  # what changed, not the topic
        elif kind in ("same", "epoch"):
            assert pieces.encoded == before
