"""The partition-level batch built directly (replay/propagate/incremental.py) against the batch.

On every delta of the real sample and of generated logs (hypothesis: sizes, seeds, metadata
levels 3.x and 4.x, snapshots, --ibp for old and new LeaderAndIsr / UpdateMetadata /
StopReplica versions, targets, correct_offline, a controller epoch), the propagator's sends with
the lean path equal the sends of the batch path, which feeds ControllerBrokerRequestBatch add
by add: same broker, dropped flag, api and version, broker epoch, builder fields and body bytes
(the batch's errors too, for versions that refuse the brokers' listeners).
"""

from __future__ import annotations

import collections
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.context import MetadataVersion
from ctrlbatch.replay.engine.skeleton import snapshot_start
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.image.deltas import group_deltas
from ctrlbatch.replay.image.image import MetadataReplayError, apply_delta
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.propagate.channel_context import MigrationControllerChannelContext
from ctrlbatch.replay.propagate.incremental import incremental_sends
from ctrlbatch.replay.propagate.propagator import (
    ReplayOptions,
    Send,
    _controller,
    _delta_plans,
    _image_sends,
    _Plan,
    _propagate_changes,
)
from ctrlbatch.requests.apis import LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA

from .test_full_image import GENERATED_LOGS

MV = MetadataVersion
# (LeaderAndIsr, UpdateMetadata, StopReplica) versions: the log's, then older ones down to v0
IBPS = [
    None, MV.IBP_3_2_IV0, MV.IBP_2_8_IV1, MV.IBP_2_6_IV0, MV.IBP_2_4_IV1, MV.IBP_2_2_IV0,  # 6/7/3 5/7/3 4/6/3 4/6/2 2/5/1
    MV.IBP_1_0_IV0, MV.IBP_0_10_2_IV0, MV.IBP_0_10_0_IV1, MV.IBP_0_9_0, MV.IBP_0_8_0,  # 1/4/0 0/3/0 0/2/0 0/1/0 0/0/0
]


def _value(v: Any) -> Any:
    """A builder field as compared: sequences as lists (the lazy full-image states get built), maps as item lists."""
    if isinstance(v, dict):
        return list(v.items())
    if isinstance(v, Sequence) and not isinstance(v, (str, bytes)):
        return list(v)
    return v


def _fields(send: Send) -> tuple[Any, ...]:
    r = send.request
    b: Any = r.builder
    builder = tuple((f.name, _value(getattr(b, f.name))) for f in attrs.fields(type(b)))
    return (send.broker, send.dropped, r.api_key, r.version, r.broker_epoch, bytes(r.shared.data), r.shared.epoch_offset,
            type(b).__name__, builder)


def _sends(fn: Any, **kw: Any) -> Any:
    try:
        return [_fields(s) for s in fn(**kw)]
    except MetadataReplayError as e:
        return ("error", str(e))


def _compare_history(path: Path, options: ReplayOptions) -> collections.Counter[str]:
    """Every delta's (and a start snapshot's) sends with the lean path and through the batch;
    returns how many sends of each api were compared, and how many deltas."""
    history = open_history(str(path), from_snapshot=None)
    seen: collections.Counter[str] = collections.Counter()
    image, start = snapshot_start(history)
    if start is not None:
        got = _sends(_image_sends, image=image, options=options, leader_id=None, pieces=None, lean=True)
        assert got == _sends(_image_sends, image=image, options=options, leader_id=None, pieces=None, lean=False)
    for delta in group_deltas(history.batches(), 1):
        image, changes = apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)
        header = delta.epoch if options.zk_controller_epoch is None else options.zk_controller_epoch
        kw: dict[str, Any] = {"image": image, "changes": changes, "options": options,
              "controller_id": _controller(delta.leader_id, options), "header_epoch": header}
        got = _sends(_propagate_changes, pieces=None, lean=True, **kw)
        want = _sends(_propagate_changes, pieces=None, lean=False, **kw)
        assert got == want, f"delta at offset {delta.last_offset}"
        seen["deltas"] += 1
        # the lean path really built plan B (it falls back only where the batch fails too)
        ctx = MigrationControllerChannelContext(image)
        _, plan = _delta_plans(image, changes, options, ctx, header)
        if changes.touched and not plan.empty():
            lean = incremental_sends(plan, ctx, options.ibp or image.metadata_version, controller_id=kw["controller_id"],
                                     header_epoch=header, listener=options.inter_broker_listener)
            assert (lean is None) == isinstance(got, tuple), f"delta at offset {delta.last_offset}"
            seen["lean"] += lean is not None
        if isinstance(got, tuple):
            seen["errors"] += 1
            continue
        for f in got:
            seen[{LEADER_AND_ISR.key: "lisr", UPDATE_METADATA.key: "umr", STOP_REPLICA.key: "stop"}[f[2]]] += 1
    return seen


def test_the_real_sample_every_delta(sample_dir: Path) -> None:
    seen = _compare_history(sample_dir, ReplayOptions())
    assert seen["deltas"] > 100 and seen["lean"] > 0 and seen["lisr"] > 0 and seen["umr"] > 0


@pytest.mark.parametrize("ibp", [None, MV.IBP_2_8_IV1, MV.IBP_2_4_IV1, MV.IBP_0_8_0], ids=str)
def test_a_generated_log_every_delta(tmp_path: Path, ibp: MetadataVersion | None) -> None:
    generate_log(tmp_path, brokers=6, topics=12, partitions=120, records=8_000, seed=5, snapshots=1)
    seen = _compare_history(tmp_path, ReplayOptions(ibp=ibp))
    assert seen["lean"] > 100 and seen["lisr"] > 100 and seen["stop"] > 0 and seen["umr"] > 100


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    **GENERATED_LOGS,
    ibp=st.sampled_from(IBPS),
    correct_offline=st.booleans(),
    zk_epoch=st.sampled_from([None, 7]),
)
def test_generated_logs_every_delta(
    seed: int, brokers: int, topics: int, partitions: int, records: int, level: int, snapshots: int,
    ibp: MetadataVersion | None, targets: Any, correct_offline: bool, zk_epoch: int | None,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        generate_log(Path(tmp), brokers=brokers, topics=topics, partitions=max(partitions, topics), records=records,
                     seed=seed, metadata_version=level, upgrade_to=None, snapshots=snapshots,
                     replication_factor=min(3, brokers))
        options = ReplayOptions(ibp=ibp, targets=targets, correct_offline=correct_offline, zk_controller_epoch=zk_epoch)
        _compare_history(Path(tmp), options)


def test_a_plan_with_every_partition_falls_back(tmp_path: Path) -> None:
    generate_log(tmp_path, brokers=3, topics=2, partitions=6, records=300, seed=1)
    history = open_history(str(tmp_path), from_snapshot=None)
    image, _ = snapshot_start(history)
    for delta in group_deltas(history.batches(), 1):
        image, _ = apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)
    ctx = MigrationControllerChannelContext(image)
    kw: Any = {"controller_id": 1, "header_epoch": 1, "listener": "PLAINTEXT"}
    from ctrlbatch.batch import UpdateType

    assert incremental_sends(_Plan(UpdateType.UNKNOWN, everything=True), ctx, image.metadata_version, **kw) is None
    empty = incremental_sends(_Plan(UpdateType.INCREMENTAL), ctx, image.metadata_version, **kw)
    assert empty == []
