"""Full-image UpdateMetadata from cached pieces (replay/propagate/full_image.py) against the batch.

On every delta of the real sample and of generated logs (hypothesis: sizes, seeds, metadata
versions, snapshots, and --ibp for each UpdateMetadata version with topic states), the sends
the propagator makes with the pieces equal, byte for byte and field for field, the sends of the
batch path building every body from scratch; the bodies decode back to the builder's request.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.context import MetadataVersion
from ctrlbatch.replay.engine.skeleton import snapshot_start
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.image.deltas import group_deltas
from ctrlbatch.replay.image.image import apply_delta
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.propagate.full_image import FullImageBody, TopicPieces, full_image_body
from ctrlbatch.replay.propagate.propagator import (
    ReplayOptions,
    Send,
    _controller,
    _image_sends,
    _propagate_changes,
)
from ctrlbatch.requests import UpdateMetadataRequest
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
    """Entries of removed topics go once they outnumber the image's topics; a new epoch re-encodes."""
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
    import attrs

    later = attrs.evolve(image, epoch=image.epoch + 1)
    assert body(later).body.data != first.body.data and pieces.encoded == 2 * n  # the states' controller epoch
    gone = min(image.brokers)
    hosted = sum(gone in reg.replicas for t in image.topics.values() for reg in t.partitions.values())
    assert hosted > 0
    fewer = attrs.evolve(later, brokers={b: r for b, r in later.brokers.items() if b != gone})
    body(fewer)
    assert pieces.encoded == 2 * n + hosted  # a broker leaving re-encodes only the states naming it
