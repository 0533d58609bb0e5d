"""Kafka 4.1+ image rules on a hand-made 4.x log, replayed by both engines from offset 0 and from a
snapshot: ClearElrRecord after KAFKA-19383 / KAFKA-19497 (TopicsDelta.replay(ClearElrRecord) and
TopicDelta.replay() of 4.1+), CordonedLogDirs (RegisterBrokerRecord v4, BrokerRegistrationChange
Record v3) compared as part of the registration, controller (un)registrations.

The log (one record per offset; each line one batch, so one delta; the snapshot ends at 10):
  0 LeaderChange (3000) | 1 metadata.version 33 | 2-4 brokers 1-3 (v4, one log dir each)
  5-7 topic "old" (X: p0, p1, no ELR) | 8-9 topic "keep" (K: p0 with ELR [2] and last known ELR [3])
  10-13 RemoveTopic X, topic "new" (Y: p0 with ELR [3], partition epoch 0), ClearElr("")  <- the issue's case
  14 ClearElr("keep")
  15-18 RemoveTopic K, topic "keep" again (K2: p0 with ELR [1]), ClearElr("keep")
  19-22 topic "tmp" (Z: p0 with ELR [2]), RemoveTopic Z, ClearElr("")
  23 RegisterControllerRecord 3000 | 24 broker 2 cordons its dir | 25 broker 2: no cordon change (null)
  26 broker 2 cordons the same dir again | 27 broker 2 uncordons all | 28 UnregisterControllerRecord 3000
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.engine.local import replay_local
from ctrlbatch.replay.generate.writer import encode_batch
from ctrlbatch.replay.image.image import EMPTY_IMAGE, MetadataImage, MetadataReplayError, apply_delta
from ctrlbatch.replay.log.records import (
    BROKER_REGISTRATION_CHANGE_RECORD,
    CLEAR_ELR_RECORD,
    FEATURE_LEVEL_RECORD,
    LEADER_CHANGE,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    REGISTER_CONTROLLER_RECORD,
    REMOVE_TOPIC_RECORD,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    TOPIC_RECORD,
    UNREGISTER_CONTROLLER_RECORD,
    MetadataRecord,
)
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.propagate.propagator import ReplayOptions
from ctrlbatch.replay.schema.record_classes import control_class, encode_control, encode_value, record_class
from ctrlbatch.requests import decode_request

X, K, Y, K2, Z = (uuid.UUID(int=i) for i in (21, 22, 23, 24, 25))
ZERO = uuid.UUID(int=0)
LAIR, SR, UMR = 4, 5, 6


def _dir(broker: int) -> uuid.UUID:
    return uuid.UUID(int=100 + broker)


def value(type_id: int, version: int, **fields: Any) -> bytes:
    cls: Any = record_class(type_id)
    return encode_value(type_id, version, cls(**fields))


def register(b: int) -> bytes:
    cls: Any = record_class(REGISTER_BROKER_RECORD)
    ep = cls.BrokerEndpoint(name="PLAINTEXT", host=f"b{b}", port=9092, security_protocol=0)
    return value(REGISTER_BROKER_RECORD, 4, broker_id=b, broker_epoch=b + 1, end_points=(ep,), fenced=False,
                 log_dirs=(_dir(b),))


def topic(name: str, tid: uuid.UUID) -> bytes:
    return value(TOPIC_RECORD, 0, name=name, topic_id=tid)


def part(tid: uuid.UUID, p: int, replicas: list[int], isr: list[int], *, elr: list[int] | None = None,
         lkelr: list[int] | None = None, leader_epoch: int = 0, partition_epoch: int = 0) -> bytes:
    return value(PARTITION_RECORD, 2, partition_id=p, topic_id=tid, replicas=replicas, isr=isr, leader=isr[0],
                 leader_epoch=leader_epoch, partition_epoch=partition_epoch,
                 directories=[_dir(r) for r in replicas], eligible_leader_replicas=elr, last_known_elr=lkelr)


def clear(name: str) -> bytes:
    return value(CLEAR_ELR_RECORD, 0, topic_name=name)


def cordon(dirs: tuple[uuid.UUID, ...] | None) -> bytes:
    return value(BROKER_REGISTRATION_CHANGE_RECORD, 3, broker_id=2, broker_epoch=3, cordoned_log_dirs=dirs)


def controller(type_id: int) -> bytes:
    if type_id == UNREGISTER_CONTROLLER_RECORD:
        return value(type_id, 0, controller_id=3000)
    cls: Any = record_class(type_id)
    ep = cls.ControllerEndpoint(name="CONTROLLER", host="c3000", port=9093, security_protocol=0)
    return value(type_id, 0, controller_id=3000, incarnation_id=uuid.UUID(int=7), zk_migration_ready=False,
                 end_points=(ep,))


def control(type_id: int, **fields: Any) -> bytes:
    cls: Any = control_class(type_id)
    return encode_control(cls(**fields))


BEFORE_SNAPSHOT = [
    [value(FEATURE_LEVEL_RECORD, 0, name="metadata.version", feature_level=33)],
    [register(1), register(2), register(3)],
    [topic("old", X), part(X, 0, [1, 2, 3], [1, 2, 3]), part(X, 1, [2, 3, 1], [2, 3, 1])],
    [topic("keep", K), part(K, 0, [1, 2, 3], [1], elr=[2], lkelr=[3], leader_epoch=2, partition_epoch=3)],
]
AFTER_SNAPSHOT = [
    [value(REMOVE_TOPIC_RECORD, 0, topic_id=X), topic("new", Y), part(Y, 0, [2, 3, 1], [2], elr=[3]), clear("")],
    [clear("keep")],
    [value(REMOVE_TOPIC_RECORD, 0, topic_id=K), topic("keep", K2), part(K2, 0, [3, 1, 2], [3], elr=[1]), clear("keep")],
    [topic("tmp", Z), part(Z, 0, [1, 2, 3], [1], elr=[2]), value(REMOVE_TOPIC_RECORD, 0, topic_id=Z), clear("")],
    [controller(REGISTER_CONTROLLER_RECORD)],
    [cordon((_dir(2),))],
    [cordon(None)],
    [cordon((_dir(2),))],
    [cordon(())],
    [controller(UNREGISTER_CONTROLLER_RECORD)],
]
SNAPSHOT_END = 10


def write_log(directory: Path) -> Path:
    """The log of the module docstring, and a snapshot of its state at offset 9 (end 10, epoch 1)."""
    out = encode_batch(0, 1, 1000, [control(LEADER_CHANGE, version=0, leader_id=3000)], control_types=[LEADER_CHANGE])
    offset = 1
    for i, values in enumerate(BEFORE_SNAPSHOT + AFTER_SNAPSHOT):
        out += encode_batch(offset, 1, 1001 + i, values)
        offset += len(values)
    meta = directory / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    (meta / "00000000000000000000.log").write_bytes(out)
    state = [v for values in BEFORE_SNAPSHOT for v in values]
    assert 1 + len(state) == SNAPSHOT_END
    snapshot = (
        encode_batch(0, 1, 1004, [control(SNAPSHOT_HEADER, last_contained_log_timestamp=1004)],
                     control_types=[SNAPSHOT_HEADER])
        + encode_batch(1, 1, 1004, state)
        + encode_batch(1 + len(state), 1, 1004, [control(SNAPSHOT_FOOTER)], control_types=[SNAPSHOT_FOOTER])
    )
    (meta / f"{SNAPSHOT_END:020d}-{1:010d}.checkpoint").write_bytes(snapshot)
    return directory


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_log(tmp_path_factory.mktemp("elr_cordon"))


def _replay(log: Path, snapshot: bool) -> tuple[list[dict[str, Any]], MetadataImage]:
    # From the snapshot the log's LeaderChange (offset 0) is not read: name its controller, as the CLI does.
    options = ReplayOptions(controller_id=3000)
    result = replay_local(open_history(log, from_snapshot="newest" if snapshot else None), options, with_frames=True)
    rows = result.drain()
    return rows, result.image


def _states(row: dict[str, Any]) -> list[tuple[str, uuid.UUID, int, int, int, int]]:
    """(topic, topic id, partition, leader, leader epoch, partition epoch) of an UpdateMetadata frame."""
    body: Any = decode_request(row["frame"][4:]).body
    return [(t.topic_name, t.topic_id, s.partition_index, s.leader, s.leader_epoch, s.zk_version)
            for t in body.topic_states for s in t.partition_states]


def _lair(row: dict[str, Any]) -> list[tuple[str, int, int, int, tuple[int, ...]]]:
    body: Any = decode_request(row["frame"][4:]).body
    return [(t.topic_name, s.partition_index, s.leader_epoch, s.partition_epoch, tuple(s.isr))
            for t in body.topic_states for s in t.partition_states]


def at(rows: list[dict[str, Any]], delta: int) -> list[dict[str, Any]]:
    return [r for r in rows if r["delta_last_offset"] == delta]


# ---------------------------------------------------------------- the image, record by record


def _fold(batches: list[list[bytes]]) -> MetadataImage:
    from ctrlbatch.replay.schema.record_classes import decode_value

    image, offset = EMPTY_IMAGE, 1
    for values in batches:
        records = []
        for v in values:
            t, version, data = decode_value(v, 0, len(v))
            records.append(MetadataRecord(offset, t, version, data))
            offset += 1
        image, _ = apply_delta(image, records, offset=offset - 1, epoch=1)
    return image


def test_the_issue_case_a_removed_topic_stays_removed_and_the_new_topic_is_cleared() -> None:
    before = _fold(BEFORE_SNAPSHOT)
    image = _fold(BEFORE_SNAPSHOT + AFTER_SNAPSHOT[:1])
    assert X not in image.topics and "old" not in image.topic_ids_by_name
    y0 = image.topics[Y].partitions[0]
    assert (y0.elr, y0.last_known_elr, y0.partition_epoch, y0.leader_epoch) == ((), (), 1, 0)
    k0 = image.topics[K].partitions[0]
    assert (k0.elr, k0.last_known_elr, k0.partition_epoch) == ((), (), before.topics[K].partitions[0].partition_epoch + 1)


def test_a_re_created_name_is_cleared_under_its_new_id_and_a_created_then_removed_topic_stays_gone() -> None:
    image = _fold(BEFORE_SNAPSHOT + AFTER_SNAPSHOT[:4])
    assert set(image.topics) == {Y, K2} and image.topic_ids_by_name == {"new": Y, "keep": K2}
    assert image.topics[K2].partitions[0].partition_epoch == 1 and not image.topics[K2].partitions[0].has_elr


def test_cordoning_is_kept_and_only_an_actual_change_is_a_broker_change() -> None:
    image = _fold(BEFORE_SNAPSHOT + AFTER_SNAPSHOT[:5])
    assert image.brokers[2].cordoned_log_dirs is None
    expected = [((_dir(2),), True), (None, False), ((_dir(2),), False), ((), True)]
    for i, (dirs, changed) in enumerate(expected):
        records = [MetadataRecord(24 + i, BROKER_REGISTRATION_CHANGE_RECORD, 3,
                                  _data(BROKER_REGISTRATION_CHANGE_RECORD, cordon(dirs)))]
        after, changes = apply_delta(image, records)
        assert (2 in changes.changed_brokers) == changed, (dirs, changed)
        want = image.brokers[2].cordoned_log_dirs if dirs is None else dirs
        assert after.brokers[2].cordoned_log_dirs == want
        assert after.brokers[2].directories == (_dir(2),)  # LogDirs absent: unchanged
        image = after
    assert _fold(BEFORE_SNAPSHOT).brokers[1].cordoned_log_dirs is None  # RegisterBrokerRecord v4, null


def _data(type_id: int, v: bytes) -> Any:
    from ctrlbatch.replay.schema.record_classes import decode_value

    t, _version, data = decode_value(v, 0, len(v))
    assert t == type_id
    return data


# ---------------------------------------------------------------- the requests


def test_the_requests_follow_the_4_1_rules(log: Path) -> None:
    rows, image = _replay(log, snapshot=False)
    # offsets 10-13: X deleted (zero topic id, leader -2 in UpdateMetadata; StopReplica with leader
    # epoch -2 to its replicas), Y created and cleared (partition epoch 1), K's partition cleared.
    d = at(rows, 13)
    stops = [r for r in d if r["api_key"] == SR]
    assert sorted(r["broker"] for r in stops) == [1, 2, 3]
    for r in stops:
        body: Any = decode_request(r["frame"][4:]).body
        assert [(t.topic_name, s.leader_epoch, s.delete_partition) for t in body.topic_states
                for s in t.partition_states] == [("old", -2, True), ("old", -2, True)]
    umr_states = sorted({s for r in d if r["api_key"] == UMR for s in _states(r)})
    assert ("old", ZERO, 0, -2, 0, 0) in umr_states and ("old", ZERO, 1, -2, 0, 0) in umr_states
    assert not any(s[1] == X for s in umr_states)  # the real id of the removed topic is never sent
    lair = sorted({s for r in d if r["api_key"] == LAIR for s in _lair(r)})
    assert lair == [("keep", 0, 2, 4, (1,)), ("new", 0, 0, 1, (2,))]
    # offset 14: ClearElr("keep"), nothing left to clear: topic changed, no partition: UpdateMetadata with none
    assert sorted((r["api_key"], r["broker"], r["partitions"]) for r in at(rows, 14)) == [(UMR, b, 0) for b in (1, 2, 3)]
    # offsets 15-18: "keep" re-created as K2 and cleared under the new id; K removed for good
    d = at(rows, 18)
    assert sorted({s for r in d if r["api_key"] == LAIR for s in _lair(r)}) == [("keep", 0, 0, 1, (3,))]
    # K's removal still stops its replicas; its during-delete UpdateMetadata state is keyed by the
    # TopicPartition ("keep", 0), so K2's state of the same name replaces it (the batch's last write).
    assert sorted(r["broker"] for r in d if r["api_key"] == SR) == [1, 2, 3]
    assert {s for r in d if r["api_key"] == UMR for s in _states(r)} == {("keep", K2, 0, 3, 0, 1)}
    # offsets 19-22: Z created and removed in one delta, then ClearElr(""): no trace of Z
    d = at(rows, 22)
    assert all(s[0] != "tmp" for r in d if r["api_key"] == UMR for s in _states(r))
    assert sorted((r["api_key"], r["partitions"]) for r in d) == [(UMR, 0)] * 3
    # offset 23 and 28: controller (un)registration: no request
    assert at(rows, 23) == [] and at(rows, 28) == []
    # offset 24: broker 2 cordons its dir: a changed broker: UpdateMetadata with everything to all,
    # LeaderAndIsr for broker 2's partitions; the full UpdateMetadata lists only the live topics.
    d = at(rows, 24)
    full = [r for r in d if r["api_key"] == UMR and r["update_type"] == "UNKNOWN"]
    assert sorted(r["broker"] for r in full) == [1, 2, 3]
    for r in full:
        assert sorted(_states(r)) == [("keep", K2, 0, 3, 0, 1), ("new", Y, 0, 2, 0, 1)]
    assert sorted((r["broker"], r["partitions"]) for r in d if r["api_key"] == LAIR) == [(2, 2)]
    # offsets 25, 26: no change (null; the same dirs again): nothing sent. 27: uncordon: a change again
    assert at(rows, 25) == [] and at(rows, 26) == []
    assert [(r["api_key"], r["broker"], r["partitions"]) for r in at(rows, 27)] == \
        [(r["api_key"], r["broker"], r["partitions"]) for r in d]
    assert image.brokers[2].cordoned_log_dirs == () and set(image.topics) == {Y, K2}


def test_from_the_snapshot_the_log_after_it_sends_the_same(log: Path) -> None:
    rows, image = _replay(log, snapshot=False)
    snap_rows, snap_image = _replay(log, snapshot=True)
    assert snap_image.topics == image.topics and snap_image.brokers == image.brokers
    assert {r["delta_last_offset"] for r in snap_rows} == {SNAPSHOT_END - 1} | {r["delta_last_offset"] for r in rows if r["delta_last_offset"] >= SNAPSHOT_END}

    def content(rs: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(r["delta_last_offset"], r["broker"], r["api_key"], r["partitions"], r["bytes"], r["update_type"],
                 r["controller_id"], r["controller_epoch"]) for r in rs]

    assert content([r for r in snap_rows if r["delta_last_offset"] >= SNAPSHOT_END]) == content(
        [r for r in rows if r["delta_last_offset"] >= SNAPSHOT_END])


@pytest.mark.parametrize("snapshot", [False, True])
def test_both_engines_give_the_same_rows(spark: Any, log: Path, tmp_path: Path, snapshot: bool) -> None:
    import pyarrow.parquet as pq

    from ctrlbatch.replay.spark.engine import HistorySource, replay_spark

    local = replay_local(open_history(log, from_snapshot="newest" if snapshot else None), ReplayOptions())
    rows = local.drain()
    result = replay_spark(spark, HistorySource(str(log), "newest" if snapshot else None), ReplayOptions(),
                          requests_dir=tmp_path / "r", unit_bytes=1 << 10)
    assert pq.read_table(tmp_path / "r").to_pylist() == rows
    assert result.summary.to_dict() == local.summary.to_dict()
    # A ClearElrRecord is not composed by the parallel plan: the run is planned serially, and says why.
    if snapshot:
        assert result.planned == "serial: the history starts from a snapshot"
    else:
        assert result.planned.startswith("serial: ") and "(CLEAR_ELR_RECORD) is not composed" in result.planned


def test_a_partial_image_holds_what_a_clear_elr_reads() -> None:
    """The partial-image contract (propagator._touched_topics): a ClearElrRecord reads its name's
    topic, or every topic of the image when the name is empty; a partial image with those gives the
    same sends as the whole image on every delta of the log where no broker changed."""
    from ctrlbatch.replay.image.deltas import Delta
    from ctrlbatch.replay.propagate.propagator import (
        _needs_full_image,
        _partial_image,
        _touched_topics,
        propagate_delta,
    )
    from ctrlbatch.replay.schema.record_classes import decode_value

    image, offset, checked = EMPTY_IMAGE, 1, 0
    options = ReplayOptions(controller_id=3000)
    for values in BEFORE_SNAPSHOT + AFTER_SNAPSHOT:
        records = []
        for v in values:
            t, version, data = decode_value(v, 0, len(v))
            records.append(MetadataRecord(offset, t, version, data))
            offset += 1
        delta = Delta(offset - 1, 1000, 1, tuple(records), 3000)
        touched = _touched_topics(records, image)
        if any(r.type == CLEAR_ELR_RECORD and not r.data.topic_name for r in records):
            assert touched.every and touched.ids >= set(image.topics)
        if not _needs_full_image(image, records, options):
            checked += 1
            part, part_sends = propagate_delta(_partial_image(image, records), delta, options)
            full, sends = propagate_delta(image, delta, options)
            assert [(s.broker, s.dropped, s.request.encode(correlation_id=0, client_id="x")) for s in part_sends] == \
                [(s.broker, s.dropped, s.request.encode(correlation_id=0, client_id="x")) for s in sends]
            assert {t: part.topics[t] for t in touched.ids if t in part.topics} == \
                {t: full.topics[t] for t in touched.ids if t in full.topics}
        image, _ = propagate_delta(image, delta, options)
    assert checked >= 6


# ---------------------------------------------------------------- an oracle of the 4.1+ rules (hypothesis)

_NAMES = ("a", "b", "c", "d")
_op = st.one_of(
    st.tuples(st.just("remove"), st.sampled_from(_NAMES)),
    st.tuples(st.just("create"), st.sampled_from(_NAMES), st.booleans()),
    st.tuples(st.just("clear"), st.sampled_from(("",) + _NAMES)),
)


@given(st.lists(st.booleans(), min_size=4, max_size=4), st.lists(_op, max_size=10))
@settings(max_examples=200, deadline=None)
def test_clear_elr_follows_the_4_1_rules_in_any_delta(base_elr: list[bool], ops: list[tuple[Any, ...]]) -> None:
    """One delta of removals, creations (a partition with or without an ELR) and ClearElrRecords
    over an image of four topics, replayed by apply_delta, against an oracle written from
    TopicsDelta/TopicDelta 4.1+: names resolve to the latest created id first, then the image's;
    an image topic removed in the delta is skipped; "" covers the image's and the created topics;
    a cleared partition with an ELR loses it and moves its partition epoch by one."""
    ids = iter(uuid.UUID(int=1000 + i) for i in range(100))
    base_records = []
    # oracle state: name -> id of the live topics; id -> [elr?, partition epoch]
    live: dict[str, uuid.UUID] = {}
    parts: dict[uuid.UUID, list[Any]] = {}
    for name, elr in zip(_NAMES, base_elr, strict=True):
        tid = next(ids)
        base_records += [_rec(TOPIC_RECORD, name=name, topic_id=tid), _part_rec(tid, elr)]
        live[name], parts[tid] = tid, [elr, 0]
    image, _ = apply_delta(EMPTY_IMAGE, base_records, offset=len(base_records))
    image_ids = dict(live)
    deleted: set[uuid.UUID] = set()
    created: dict[str, uuid.UUID] = {}
    records: list[MetadataRecord] = []
    refused = False

    def clear_topic(tid: uuid.UUID) -> None:
        if tid not in deleted and parts[tid][0]:
            parts[tid][0] = False
            parts[tid][1] += 1

    for op in ops:
        if op[0] == "remove":
            tid = live.pop(op[1], None)
            if tid is None:
                continue
            records.append(_rec(REMOVE_TOPIC_RECORD, topic_id=tid))
            if tid in image_ids.values():
                deleted.add(tid)
            created.pop(op[1], None)  # KAFKA-19497
        elif op[0] == "create":
            if op[1] in live:
                continue
            tid = next(ids)
            records += [_rec(TOPIC_RECORD, name=op[1], topic_id=tid), _part_rec(tid, op[2])]
            live[op[1]] = created[op[1]] = tid
            parts[tid] = [op[2], 0]
        else:
            records.append(_rec(CLEAR_ELR_RECORD, topic_name=op[1]))
            if op[1] == "":
                for tid in [*image_ids.values(), *created.values()]:
                    clear_topic(tid)
            else:
                found = created.get(op[1], image_ids.get(op[1]))
                if found is None:
                    refused = True
                    break
                clear_topic(found)
    for i, r in enumerate(records):
        records[i] = MetadataRecord(100 + i, r.type, r.version, r.data)
    if refused:
        with pytest.raises(MetadataReplayError, match="Unable to clear elr for topic with name"):
            apply_delta(image, records)
        return
    after, changes = apply_delta(image, records)
    assert after.topic_ids_by_name == live and set(after.topics) == set(live.values())
    assert set(changes.deleted_topics) == deleted
    for tid in live.values():
        p = after.topics[tid].partitions[0]
        assert (p.has_elr, p.partition_epoch) == (parts[tid][0], parts[tid][1]), tid


def _rec(type_id: int, **fields: Any) -> MetadataRecord:
    cls: Any = record_class(type_id)
    return MetadataRecord(0, type_id, 2 if type_id == PARTITION_RECORD else 0, cls(**fields))


def _part_rec(tid: uuid.UUID, elr: bool) -> MetadataRecord:
    return _rec(PARTITION_RECORD, partition_id=0, topic_id=tid, replicas=[1, 2, 3], isr=[1], leader=1, leader_epoch=0,
                partition_epoch=0, eligible_leader_replicas=[2] if elr else None)


def test_the_printed_summary_and_summary_json_name_the_spark_plan(log: Path) -> None:
    """The serial fallback is stated where a user reads the run: a "spark plan:" line and "plan"
    in summary.json (job.ReplayOutcome), absent for the local engine."""
    from ctrlbatch.replay.run.job import ReplayJob, ReplayOutcome, format_summary

    history = open_history(log)
    local = replay_local(history, ReplayOptions())
    rows = len(local.drain())
    plan = "serial: range 0: NotComposable: record type 28 (CLEAR_ELR_RECORD) is not composed"
    spark = ReplayOutcome(ReplayJob(path=str(log)), local.summary, history.stats, rows, 1.0, None, plan=plan)
    assert f"\nspark plan: {plan}\n" in format_summary(spark) and spark.to_dict()["plan"] == plan
    alone = ReplayOutcome(ReplayJob(path=str(log), engine="local"), local.summary, history.stats, rows, 1.0, None)
    assert "spark plan" not in format_summary(alone) and "plan" not in alone.to_dict()


@pytest.mark.parametrize("snapshot", [False, True])
def test_a_generated_log_with_elrs_gives_the_same_rows_on_both_engines(
    spark: Any, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, snapshot: bool
) -> None:
    """A generated 4.1-IV0 history upgraded to 4.4-IV2 (ELRs, ClearElrRecords in one-delta
    transactions, cordons, controller (un)registrations), from offset 0 and from its newest snapshot."""
    import pyarrow.parquet as pq

    from ctrlbatch.replay.generate.generator import generate_log
    from ctrlbatch.replay.spark.engine import HistorySource, replay_spark

    d = tmp_path_factory.getbasetemp() / "elr_generated"
    if not d.exists():
        generate_log(d, brokers=5, topics=6, partitions=80, records=8_000, seed=26, metadata_version=26,
                     upgrade_to=33, snapshots=1, segment_bytes=100_000)
    start = "newest" if snapshot else None
    local = replay_local(open_history(d, from_snapshot=start), ReplayOptions())
    rows = local.drain()
    assert any(p.elr or p.last_known_elr for t in local.image.topics.values() for p in t.partitions.values()) or \
        local.summary.records_by_type["CLEAR_ELR_RECORD"] > 0
    result = replay_spark(spark, HistorySource(str(d), start), ReplayOptions(), requests_dir=tmp_path / "r",
                          unit_bytes=64 << 10)
    assert pq.read_table(tmp_path / "r").to_pylist() == rows
    assert result.summary.to_dict() == local.summary.to_dict()
