"""Net effects (replay/image/net_effect.py): composing a range's deltas equals folding them one by one."""

from __future__ import annotations

import functools
import pickle
import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.generate.generator import generate_log, metadata_dir
from ctrlbatch.replay.image.deltas import group_deltas
from ctrlbatch.replay.image.image import EMPTY_IMAGE, MetadataImage, PartitionRegistration, apply_delta
from ctrlbatch.replay.image.net_effect import NO_CHANGE, NetBuilder, NotComposable, compose
from ctrlbatch.replay.image.packed_image import pack_image, unpack_image
from ctrlbatch.replay.log.records import CLEAR_ELR_RECORD
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.schema.metadata_classes import PartitionChangeRecord

ids = st.lists(st.integers(-1, 6), max_size=4).map(tuple)
maybe_ids = st.none() | ids


@st.composite
def registrations(draw: Any) -> PartitionRegistration:
    return PartitionRegistration(
        draw(ids), draw(ids), draw(ids), draw(ids), draw(st.integers(-1, 6)), draw(st.integers(0, 1)),
        draw(st.integers(-1, 100)), draw(st.integers(-1, 100)), draw(ids), draw(ids),
    )


@st.composite
def changes(draw: Any) -> PartitionChangeRecord:
    return PartitionChangeRecord(
        partition_id=0, topic_id=uuid.UUID(int=1), isr=draw(maybe_ids), leader=draw(st.integers(-2, 6)),
        replicas=draw(maybe_ids), removing_replicas=draw(maybe_ids), adding_replicas=draw(maybe_ids),
        leader_recovery_state=draw(st.integers(-1, 1)), eligible_leader_replicas=draw(maybe_ids),
        last_known_elr=draw(maybe_ids),
    )


@given(registrations(), st.lists(changes(), max_size=8))
def test_merged_changes_equal_merging_one_by_one(base: PartitionRegistration, records: list[Any]) -> None:
    folded, composed = base, NO_CHANGE
    for d in records:
        folded = folded.merge(d)
        composed = composed.then(d)
    assert composed.apply(base) == folded
    assert composed.count == len(records)


def _ordered(image: MetadataImage) -> Any:
    """The image with every dict as a list of items: equality that sees dict order too."""
    return (
        list(image.brokers.items()),
        [(tid, t.name, list(t.partitions.items())) for tid, t in image.topics.items()],
        list(image.topic_ids_by_name.items()),
        image.metadata_version, image.offset, image.epoch,
    )


@functools.cache
def _deltas(seed: int, level: int, upgrade: int | None) -> list[Any]:
    """The deltas of a small generated log (one per parameter set, kept for the whole session)."""
    out = tempfile.mkdtemp(prefix="net-effect-")
    generate_log(out, brokers=6, topics=12, partitions=80, records=3_000, seed=seed, metadata_version=level,
                 upgrade_to=upgrade)
    history = open_history(metadata_dir(out))
    return list(group_deltas(history.reader()))


LOGS = [(1, 14, 21), (2, 8, 21), (3, 21, None), (4, 23, 33), (5, 12, 30)]


def _ranges(log: tuple[int, int, int | None], fractions: list[float]) -> Iterator[tuple[list[Any], MetadataImage, Any]]:
    """The log's deltas cut at the fractions: each range's deltas, the sequential fold's image
    after it, and a function giving the range's net effect (raises NotComposable as the builder does)."""
    deltas = _deltas(*log)
    cuts = sorted({int(f * len(deltas)) for f in fractions} | {0, len(deltas)})
    folded = EMPTY_IMAGE
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        span = deltas[lo:hi]
        for delta in span:
            folded = apply_delta(folded, delta.records, offset=delta.last_offset, epoch=delta.epoch)[0]

        def effect(span: list[Any] = span) -> Any:
            builder = NetBuilder()
            for delta in span:
                builder.add(delta.records, delta.last_offset, delta.epoch)
            return builder.effect()

        yield span, folded, effect


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(LOGS), st.lists(st.floats(0, 1), max_size=6))
def test_composed_ranges_equal_the_sequential_fold(log: tuple[int, int, int | None], fractions: list[float]) -> None:
    """Random generated logs cut at random deltas: each range's net effect applied in order to the
    image before it gives the sequential fold's image at every cut, dict order included; a range
    that does not compose holds a ClearElrRecord (the one case a generated log has)."""
    composed = EMPTY_IMAGE
    for span, folded, effect in _ranges(log, fractions):
        try:
            composed = effect().apply(composed)
        except NotComposable:
            assert any(r.type == CLEAR_ELR_RECORD for d in span for r in d.records)
            return
        assert composed == folded
        assert _ordered(composed) == _ordered(folded)


def test_a_change_to_a_partition_the_image_lacks_does_not_compose() -> None:
    deltas = _deltas(*LOGS[0])
    builder = NetBuilder()
    # the deltas after the first topic's creation, applied to the empty image: their base is missing
    start = next(i for i, d in enumerate(deltas) if any(r.type == 5 for r in d.records))
    for delta in deltas[start:start + 50]:
        builder.add(delta.records, delta.last_offset, delta.epoch)
    with pytest.raises(NotComposable):
        builder.effect().apply(EMPTY_IMAGE)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(LOGS), st.lists(st.floats(0, 1), max_size=6))
def test_packed_composition_equals_the_sequential_fold(log: tuple[int, int, int | None], fractions: list[float]) -> None:
    """What the driver does: packed net effects (pickled, as a range task hands them over)
    composed one after the other on a packed image, never unpacked in between; unpacked at each
    cut it is the sequential fold's image, dict order included."""
    packed = pack_image(EMPTY_IMAGE)
    for span, folded, effect in _ranges(log, fractions):
        try:
            packed = compose(pickle.loads(pickle.dumps(effect().pack(), 5)), packed)
        except NotComposable:
            assert any(r.type == CLEAR_ELR_RECORD for d in span for r in d.records)
            return
        assert _ordered(unpack_image(packed)) == _ordered(folded)
        assert _ordered(unpack_image(pack_image(folded))) == _ordered(folded)


def test_a_packed_image_from_another_version_is_refused() -> None:
    packed = pack_image(_folded(*LOGS[0]))
    with pytest.raises(RuntimeError, match="another version of ctrlbatch"):
        unpack_image(packed._replace(part_fields=(*packed.part_fields, "directories")))


def test_composing_shares_what_the_range_did_not_touch() -> None:
    """Copy on write: a topic the range left alone is the same object in both packed images."""
    deltas = _deltas(*LOGS[2])
    half = len(deltas) // 2
    base = pack_image(_fold(deltas[:half]))
    builder = NetBuilder()
    for delta in deltas[half:half + 5]:
        builder.add(delta.records, delta.last_offset, delta.epoch)
    net = builder.effect().pack()
    after = compose(net, base)
    untouched = [tid for tid in base.topics if tid not in net.topics]
    assert untouched and all(after.topics[tid] is base.topics[tid] for tid in untouched)
    assert _ordered(unpack_image(after)) == _ordered(_fold(deltas[:half + 5]))


def _fold(deltas: list[Any]) -> MetadataImage:
    image = EMPTY_IMAGE
    for delta in deltas:
        image = apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)[0]
    return image


def _folded(seed: int, level: int, upgrade: int | None) -> MetadataImage:
    return _fold(_deltas(seed, level, upgrade))
