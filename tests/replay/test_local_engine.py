"""The sequential engine end to end: the real sample (every row computed by hand from the
reference), a snapshot written with the project's writer (the image path, then the log), seq
numbering, drop counting, determinism."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

import pytest

from ctrlbatch.context import MetadataVersion
from ctrlbatch.replay.engine.local import replay_local
from ctrlbatch.replay.generate.writer import encode_batch
from ctrlbatch.replay.log.records import (
    END_TRANSACTION_RECORD,
    FEATURE_LEVEL_RECORD,
    LEADER_CHANGE,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    REMOVE_TOPIC_RECORD,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    TOPIC_RECORD,
)
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.propagate.propagator import ReplayOptions
from ctrlbatch.replay.schema.record_classes import control_class, encode_control, encode_value, record_class
from ctrlbatch.requests import decode_request

SAMPLE = Path(__file__).resolve().parents[2].parent / "shared" / "samples" / "kraft-single-node"
LAIR, SR, UMR = 4, 5, 6

# The real sample with --targets all, derived from kafka-metadata-records.md §9 and the propagator:
# (delta, api, partitions, update type)
SAMPLE_ROWS = [
    (9, UMR, 0, "UNKNOWN"),  # the unfence: broker 1 is a changed ZK broker; batch A with every partition (none yet)
    (469, LAIR, 50, "INCREMENTAL"), (469, UMR, 50, "INCREMENTAL"),  # __consumer_offsets created, 50 partitions
    (472, LAIR, 1, "INCREMENTAL"), (472, UMR, 1, "INCREMENTAL"),  # four one-partition topics
    (542, LAIR, 1, "INCREMENTAL"), (542, UMR, 1, "INCREMENTAL"),
    (2214, LAIR, 1, "INCREMENTAL"), (2214, UMR, 1, "INCREMENTAL"),
    (2216, LAIR, 1, "INCREMENTAL"), (2216, UMR, 1, "INCREMENTAL"),
    # offset 4871: inControlledShutdown on the unfenced broker plus the 54 leader=-1 changes, one
    # batch: batch A UpdateMetadata with all 54, then LeaderAndIsr for all 54 and its UpdateMetadata
    (4925, UMR, 54, "UNKNOWN"), (4925, LAIR, 54, "INCREMENTAL"), (4925, UMR, 54, "INCREMENTAL"),
]


def test_the_real_sample_end_to_end() -> None:
    result = replay_local(open_history(str(SAMPLE)), ReplayOptions())
    rows = result.drain()
    assert [(r["delta_last_offset"], r["api_key"], r["partitions"], r["update_type"]) for r in rows] == SAMPLE_ROWS
    assert [r["seq"] for r in rows] == list(range(14)) and {r["broker"] for r in rows} == {1}
    for r in rows:
        assert (r["controller_id"], r["controller_epoch"], r["api_version"]) == (1, 1, {LAIR: 7, UMR: 8}[r["api_key"]])
    shutdown = [r for r in rows if r["delta_last_offset"] == 4925]
    # each delta's cause, from its records (kafka-metadata-records.md §9)
    assert {r["delta_last_offset"]: r["cause"] for r in rows} == {
        9: "broker unfence", 469: "topic creation", 472: "topic creation", 542: "topic creation",
        2214: "topic creation", 2216: "topic creation", 4925: "controlled shutdown",
    }
    assert {r["api"] for r in rows} == {"LeaderAndIsr", "UpdateMetadata"}
    assert shutdown[0]["timestamp"] == shutdown[1]["timestamp"] > rows[0]["timestamp"]
    # The registrations at offsets 6 and 8 and the final fence reach a fenced broker: dropped.
    summary = result.summary.to_dict()
    assert summary["by_api"]["UpdateMetadata"]["dropped"] == 3
    assert summary["totals"] == {
        "requests": 14, "partitions": 270, "bytes": sum(r["bytes"] for r in rows), "dropped": 3,
    }
    assert summary["deltas"] == {"total": 4813, "with_requests": 7, "without_requests": 4806}
    # per cause, in CAUSES' order: what each event cost
    assert {c: b["requests"] for c, b in summary["by_cause"].items()} == {
        "topic creation": 10, "controlled shutdown": 3, "broker unfence": 1,
    }
    assert list(summary["by_cause"]) == ["topic creation", "controlled shutdown", "broker unfence"]
    assert sum(b["bytes"] for b in summary["by_cause"].values()) == summary["totals"]["bytes"]
    assert summary["records_by_type"]["NO_OP_RECORD"] == 4801 and summary["records_by_type"]["PARTITION_RECORD"] == 54
    assert result.image.offset == 4928 and len(result.image.topics) == 5
    assert sum(len(t.partitions) for t in result.image.topics.values()) == 54


def test_targets_migrating_on_the_sample_delivers_nothing() -> None:
    result = replay_local(open_history(str(SAMPLE)), ReplayOptions(targets="migrating"))
    assert result.drain() == []
    assert result.summary.to_dict()["totals"]["dropped"] == 12  # 6 LeaderAndIsr + 6 UpdateMetadata
    assert dict(result.summary.dropped) == {"LeaderAndIsr": 6, "UpdateMetadata": 6}


def test_a_what_if_ibp_changes_versions_and_bytes_only() -> None:
    base = replay_local(open_history(str(SAMPLE)), ReplayOptions()).drain()
    old = replay_local(open_history(str(SAMPLE)), ReplayOptions(ibp=MetadataVersion.IBP_2_8_IV1)).drain()
    def key(r: dict[str, Any]) -> tuple[int, int, int]:
        return r["delta_last_offset"], r["api_key"], r["partitions"]

    assert [key(r) for r in old] == [key(r) for r in base]
    assert {(r["api_key"], r["api_version"]) for r in old} == {(LAIR, 5), (UMR, 7)}
    assert sum(r["bytes"] for r in old) != sum(r["bytes"] for r in base)


def rec(type_id: int, version: int = 0, **fields: Any) -> bytes:
    cls = record_class(type_id)
    assert cls is not None
    return encode_value(type_id, version, cls(**fields))


def register(broker: int, epoch: int) -> bytes:
    cls: Any = record_class(REGISTER_BROKER_RECORD)
    ep = cls.BrokerEndpoint(name="PLAINTEXT", host=f"h{broker}", port=9092, security_protocol=0)
    return rec(REGISTER_BROKER_RECORD, 2, broker_id=broker, broker_epoch=epoch, end_points=(ep,), fenced=False)


def control(type_id: int, **fields: Any) -> bytes:
    cls = control_class(type_id)
    assert cls is not None
    return encode_control(cls(**fields))


def write_snapshot_and_log(directory: Path) -> None:
    """A snapshot up to offset 9 (end 10, epoch 4): brokers 1, 2; topic t with t-0 [1,2] and t-1 [2];
    then a log: LeaderChange (leader 3000) at 10, an ISR change at 11, the deletion of t at 12."""
    t = uuid.UUID(int=5)
    data = [
        rec(FEATURE_LEVEL_RECORD, name="metadata.version", feature_level=21), register(1, 1), register(2, 2),
        rec(TOPIC_RECORD, name="t", topic_id=t),
        rec(PARTITION_RECORD, partition_id=0, topic_id=t, replicas=[1, 2], isr=[1, 2], leader=1, leader_epoch=0, partition_epoch=0),
        rec(PARTITION_RECORD, partition_id=1, topic_id=t, replicas=[2], isr=[2], leader=2, leader_epoch=0, partition_epoch=0),
    ]
    snapshot = (
        encode_batch(0, 4, 777, [control(SNAPSHOT_HEADER, last_contained_log_timestamp=555)], control_types=[SNAPSHOT_HEADER])
        + encode_batch(1, 4, 777, data)
        + encode_batch(7, 4, 777, [control(SNAPSHOT_FOOTER)], control_types=[SNAPSHOT_FOOTER])
    )
    directory.mkdir()
    (directory / "00000000000000000010-0000000004.checkpoint").write_bytes(snapshot)
    log = (
        encode_batch(10, 5, 1000, [control(LEADER_CHANGE, leader_id=3000)], control_types=[LEADER_CHANGE])
        + encode_batch(11, 5, 1001, [rec(PARTITION_CHANGE_RECORD, partition_id=0, topic_id=t, isr=[1])])
        + encode_batch(12, 5, 1002, [rec(REMOVE_TOPIC_RECORD, topic_id=t)])
    )
    (directory / "00000000000000000010.log").write_bytes(log)


def test_a_snapshot_takes_the_image_path_then_the_log_follows(tmp_path: Path) -> None:
    directory = tmp_path / "__cluster_metadata-0"
    write_snapshot_and_log(directory)
    result = replay_local(open_history(str(directory), from_snapshot="newest"), ReplayOptions(), with_frames=True)
    rows = result.drain()
    got = [(r["delta_last_offset"], r["api_key"], r["broker"], r["partitions"], r["update_type"], r["controller_id"],
            r["controller_epoch"]) for r in rows]
    assert {r["delta_last_offset"]: r["cause"] for r in rows} == {9: "snapshot", 11: "ISR change", 12: "topic deletion"}
    assert got == [
        # the image (last contained offset 9, epoch 4): UpdateMetadata with everything, then FULL
        (9, UMR, 1, 2, "UNKNOWN", 1, 4), (9, UMR, 2, 2, "UNKNOWN", 1, 4),
        (9, LAIR, 1, 1, "FULL", 1, 4), (9, LAIR, 2, 2, "FULL", 1, 4), (9, UMR, 1, 2, "FULL", 1, 4), (9, UMR, 2, 2, "FULL", 1, 4),
        # offset 11: ISR change of t-0, from the new KRaft leader 3000 in epoch 5
        (11, LAIR, 1, 1, "INCREMENTAL", 3000, 5), (11, LAIR, 2, 1, "INCREMENTAL", 3000, 5), (11, UMR, 1, 1, "INCREMENTAL", 3000, 5), (11, UMR, 2, 1, "INCREMENTAL", 3000, 5),
        # offset 12: t deleted: during-delete UpdateMetadata, StopReplica(delete) to every replica
        (12, UMR, 1, 2, "INCREMENTAL", 3000, 5), (12, UMR, 2, 2, "INCREMENTAL", 3000, 5), (12, SR, 1, 1, None, 3000, 5), (12, SR, 2, 2, None, 3000, 5),
    ]
    assert rows[0]["timestamp"] == 555  # the snapshot header's lastContainedLogTimestamp
    for r in rows:  # no StopReplica on the image path; seq per broker; frames decode with seq and controller id
        d = decode_request(r["frame"][4:])
        assert d.header.correlation_id == r["seq"] and d.header.client_id == str(r["controller_id"])
        assert hashlib.sha256(r["frame"]).hexdigest() == r["sha256"]
    assert [r["seq"] for r in rows if r["broker"] == 1] == list(range(7))
    assert [r["seq"] for r in rows if r["broker"] == 2] == list(range(7))
    stop = decode_request(rows[-1]["frame"][4:]).body
    assert [(s.partition_index, s.delete_partition, s.leader_epoch) for t in stop.topic_states for s in t.partition_states] == [
        (0, True, -2), (1, True, -2)
    ]
    assert result.summary.to_dict()["deltas"] == {"total": 3, "with_requests": 3, "without_requests": 0}
    assert result.summary.records_by_type["SNAPSHOT_HEADER"] == 1


def test_the_replay_is_deterministic_and_coalesce_merges_deltas(tmp_path: Path) -> None:
    directory = tmp_path / "__cluster_metadata-0"
    write_snapshot_and_log(directory)

    class Count:
        n = 0

        def advance(self, n: int = 1) -> None:
            self.n += n

    progress = Count()
    runs = [replay_local(open_history(str(directory), from_snapshot="newest"), ReplayOptions(), progress=progress).drain()
            for _ in range(2)]
    assert [r["sha256"] for r in runs[0]] == [r["sha256"] for r in runs[1]]
    assert progress.n == 2 * 6  # 3 snapshot batches + 3 log batches, per run
    merged = replay_local(open_history(str(directory), from_snapshot="newest"), ReplayOptions(), coalesce=2)
    rows = merged.drain()
    # the ISR change and the deletion in one delta: t is gone, so only the deletion's requests remain
    assert sorted({r["delta_last_offset"] for r in rows}) == [9, 12]
    assert merged.summary.deltas == 2
    with pytest.raises(ValueError, match="coalesce"):
        replay_local(open_history(str(directory), from_snapshot="newest"), ReplayOptions(), coalesce=0)


def test_summaries_merge_additively_and_round_trip_through_json() -> None:
    import json

    from hypothesis import given
    from hypothesis import strategies as st

    from ctrlbatch.replay.rows.summary import ReplaySummary

    row = st.fixed_dictionaries({
        "api_key": st.sampled_from([LAIR, SR, UMR]), "broker": st.integers(0, 4),
        "partitions": st.integers(0, 50), "bytes": st.integers(60, 5000),
    })
    event = st.one_of(st.tuples(st.just("row"), row), st.tuples(st.just("drop"), st.sampled_from([LAIR, SR, UMR])),
                      st.tuples(st.just("delta"), st.integers(0, 3)))

    def fill(events: list[Any]) -> ReplaySummary:
        s = ReplaySummary()
        for kind, value in events:
            {"row": s.count_row, "drop": s.count_dropped, "delta": s.count_delta}[kind](value)
        return s

    @given(st.lists(event, max_size=30), st.integers(0, 30))
    def check(events: list[Any], cut: int) -> None:
        whole = fill(events)
        left, right = fill(events[:cut]), fill(events[cut:])
        left.merge(right)
        assert left.to_dict() == whole.to_dict()
        text = json.dumps(whole.to_dict())
        assert ReplaySummary.from_dict(json.loads(text)).to_dict() == whole.to_dict()
        d = whole.to_dict()
        rows = [v for k, v in events if k == "row"]
        assert d["totals"]["requests"] == len(rows) == sum(b["requests"] for b in d["by_broker"].values())
        assert d["totals"]["bytes"] == sum(r["bytes"] for r in rows)
        assert d["totals"]["dropped"] == sum(1 for k, _v in events if k == "drop")
        assert d["deltas"]["total"] == sum(1 for k, _v in events if k == "delta")

    check()


def refused_log(directory: Path) -> tuple[Path, int]:
    """A segment whose second batch (offset 1) changes a partition nobody created; returns the
    segment and that batch's byte position."""
    directory.mkdir(parents=True)
    bad = rec(PARTITION_CHANGE_RECORD, partition_id=0, topic_id=uuid.UUID(int=77), isr=[1])
    first = encode_batch(0, 1, 5, [register(1, 0)])
    segment = directory / "00000000000000000000.log"
    segment.write_bytes(first + encode_batch(1, 1, 6, [bad]))
    return segment, len(first)


def test_a_record_the_replay_refuses_stops_it_naming_the_file_byte_and_offset(tmp_path: Path) -> None:
    from ctrlbatch.replay.image.image import MetadataReplayError

    segment, position = refused_log(tmp_path / "__cluster_metadata-0")
    result = replay_local(open_history(str(segment.parent)), ReplayOptions())
    with pytest.raises(MetadataReplayError) as info:
        result.drain()
    assert str(info.value).startswith(
        f"{segment}, byte offset {position} (the batch of offsets 1-1): record at offset 1 (PARTITION_CHANGE_RECORD v0): "
        "partition 0 of topic id"
    )


def test_a_transaction_error_is_named_by_file_and_byte_too(tmp_path: Path) -> None:
    from ctrlbatch.replay.image.image import MetadataReplayError

    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    first = encode_batch(0, 1, 5, [register(1, 0)])
    (directory / "00000000000000000000.log").write_bytes(first + encode_batch(1, 1, 6, [rec(END_TRANSACTION_RECORD)]))
    result = replay_local(open_history(str(directory)), ReplayOptions())
    with pytest.raises(MetadataReplayError, match=rf", byte offset {len(first)} \(the batch of offsets 1-1\): record at "
                       r"offset 1 \(END_TRANSACTION_RECORD v0\): Encountered EndTransactionRecord without"):
        result.drain()


def test_a_refused_record_in_json_lines_is_named_by_its_line(tmp_path: Path) -> None:
    from ctrlbatch.replay.image.image import MetadataReplayError

    path = tmp_path / "records.jsonl"
    path.write_text(
        '{"offset": 0, "type": "TOPIC_RECORD", "version": 0, "data": {"name": "a", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"}}\n'
        '{"offset": 1, "type": "REMOVE_TOPIC_RECORD", "version": 0, "data": {"topicId": "AAAAAAAAAAAAAAAAAAAAAg"}}\n'
    )
    result = replay_local(open_history(str(path)), ReplayOptions())
    with pytest.raises(MetadataReplayError, match=rf"^{path}, line 2 \(the batch of offsets 1-1\): record at offset 1 "
                       r"\(REMOVE_TOPIC_RECORD v0\): Unable to delete topic"):
        result.drain()


@pytest.mark.parametrize("max_tally", [1, 3, 4_096])
def test_tallied_groups_count_as_every_row_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_tally: int) -> None:
    """The engine tallies send groups per (API, broker set) and settles them into the summary
    and ``delivered`` (at MAX_TALLY keys and at the end): the same counts as count_row on every
    row, and delivered is each broker's rows."""
    from collections import Counter

    from ctrlbatch.replay.engine import skeleton as engine
    from ctrlbatch.replay.engine.skeleton import EngineRun
    from ctrlbatch.replay.generate.generator import generate_log
    from ctrlbatch.replay.rows.rows import expand_rows
    from ctrlbatch.replay.rows.summary import ReplaySummary

    monkeypatch.setattr(engine, "MAX_TALLY", max_tally)
    generate_log(tmp_path / "log", brokers=5, topics=6, partitions=40, records=1_500, seed=3)
    history = open_history(str(tmp_path / "log"))
    run = EngineRun(history, ReplayOptions())
    rows = list(expand_rows(run.groups(history.batches()), {}, False))
    by_row = ReplaySummary()
    for r in rows:
        by_row.count_row(r)
    assert len({r["broker"] for r in rows}) > 1 and len({r["api_key"] for r in rows}) > 1
    assert run.summary.by_api == by_row.by_api and run.summary.by_broker == by_row.by_broker
    assert run.delivered == Counter(r["broker"] for r in rows)
    assert run.summary.deltas_with_requests == len({r["delta_last_offset"] for r in rows})
