"""The lean path's lazy partition states (replay/propagate/incremental.py _LairStates,
_UmrStates): the rows count a body's states without making them, and the states, once read,
are the batch's (tests/replay/test_incremental.py compares them on every delta); a partition
sent to several brokers in one send is one state object, as the batch's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctrlbatch.replay.engine.skeleton import snapshot_start
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.image.deltas import group_deltas
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.propagate.incremental import _LairStates, _UmrStates
from ctrlbatch.replay.propagate.propagator import ReplayOptions, propagate_delta
from ctrlbatch.requests import LeaderAndIsrPartitionState, UpdateMetadataPartitionState


def test_lazy_states_are_counted_unmade_then_made_once(tmp_path: Path) -> None:
    generate_log(tmp_path, brokers=6, topics=12, partitions=120, records=3_000, seed=3)
    history = open_history(str(tmp_path), from_snapshot=None)
    image, _ = snapshot_start(history)
    seen = {"lair": 0, "umr": 0}
    for delta in group_deltas(history.batches(), 1):
        image, sends = propagate_delta(image, delta, ReplayOptions())
        by_partition: dict[tuple[str, int], Any] = {}
        checked: set[int] = set()
        for send in sends:
            states = getattr(send.request.builder, "partition_states", None)  # StopReplica has topic_states
            if not isinstance(states, (_LairStates, _UmrStates)) or id(states) in checked:
                continue  # a shared builder (the UpdateMetadata fan-out, equal bodies) checked once
            checked.add(id(states))
            n = len(states)
            assert states._states is None  # counted, not made
            made = list(states)
            assert len(made) == n and states._states is not None and list(states) == made
            kind = LeaderAndIsrPartitionState if isinstance(states, _LairStates) else UpdateMetadataPartitionState
            assert all(type(s) is kind for s in made)
            if isinstance(states, _LairStates):
                seen["lair"] += 1
                for s in made:
                    # one object per partition per send
                    assert by_partition.setdefault((s.topic_name, s.partition_index), s) is s
            else:
                seen["umr"] += 1
    assert seen["lair"] > 50 and seen["umr"] > 50
