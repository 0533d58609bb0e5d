"""Kafka 4.x histories: the 4.x records read and replayed (ClearElrRecord as 4.1+'s TopicsDelta and
TopicDelta do, UnregisterControllerRecord, RegisterBrokerRecord v4, BrokerRegistrationChangeRecord
v3 with CordonedLogDirs), levels 22-33 replayed with 3.9-IV0's request versions and a note saying so, unknown types and
versions named by file and offset, and generated 4.x logs replayed alike by both engines."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.cli import main
from ctrlbatch.context import MetadataVersion
from ctrlbatch.replay.engine.local import replay_local
from ctrlbatch.replay.generate.generator import generate_log, record_versions
from ctrlbatch.replay.generate.writer import encode_batch_raw, encode_records
from ctrlbatch.replay.image.image import (
    EMPTY_IMAGE,
    MetadataImage,
    MetadataReplayError,
    PartitionRegistration,
    apply_delta,
)
from ctrlbatch.replay.log.errors import ReadStats, ReplayInputError
from ctrlbatch.replay.log.records import (
    BROKER_REGISTRATION_CHANGE_RECORD,
    CLEAR_ELR_RECORD,
    FEATURE_LEVEL_RECORD,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    REMOVE_TOPIC_RECORD,
    TOPIC_RECORD,
    UNREGISTER_CONTROLLER_RECORD,
    MetadataRecord,
)
from ctrlbatch.replay.log.segments import read_segment
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.propagate.propagator import ReplayOptions
from ctrlbatch.replay.schema.record_classes import decode_value, encode_value, record_class
from ctrlbatch.requests.errors import UnsupportedVersionError
from ctrlbatch.requests.wire import uvarint

A, B, C = (uuid.UUID(int=i) for i in (11, 12, 13))
LAIR, UMR, SR = 4, 6, 5


def rec(offset: int, type_id: int, version: int = 0, **fields: Any) -> MetadataRecord:
    cls = record_class(type_id)
    assert cls is not None
    return MetadataRecord(offset, type_id, version, cls(**fields))


def partition(offset: int, topic: uuid.UUID, p: int, *, elr: list[int] | None = None,
              lkelr: list[int] | None = None) -> MetadataRecord:
    return rec(offset, PARTITION_RECORD, 2, partition_id=p, topic_id=topic, replicas=[1, 2, 3], isr=[1],
               leader=1, leader_epoch=3, partition_epoch=5, eligible_leader_replicas=elr, last_known_elr=lkelr)


def three_topics() -> MetadataImage:
    """Topic a: p0 with an ELR, p1 without; b: p0 with only a last known ELR; c: no ELR at all."""
    records = [
        rec(0, TOPIC_RECORD, name="a", topic_id=A), partition(1, A, 0, elr=[2, 3]), partition(2, A, 1),
        rec(3, TOPIC_RECORD, name="b", topic_id=B), partition(4, B, 0, lkelr=[3]),
        rec(5, TOPIC_RECORD, name="c", topic_id=C), partition(6, C, 0),
    ]
    image, _ = apply_delta(EMPTY_IMAGE, records, offset=6, epoch=1)
    return image


def clear(offset: int, name: str) -> MetadataRecord:
    return rec(offset, CLEAR_ELR_RECORD, 0, topic_name=name)


# ---------------------------------------------------------------- ClearElrRecord (4.x TopicsDelta / TopicDelta)


def test_partition_records_v2_keep_the_elr_and_changes_merge_it() -> None:
    image = three_topics()
    assert image.topics[A].partitions[0].elr == (2, 3) and image.topics[A].partitions[1].elr == ()
    assert image.topics[B].partitions[0].last_known_elr == (3,)
    change = rec(7, PARTITION_CHANGE_RECORD, 2, partition_id=1, topic_id=A, eligible_leader_replicas=[2])
    after, _ = apply_delta(image, [change])
    assert after.topics[A].partitions[1].elr == (2,) and after.topics[A].partitions[1].partition_epoch == 6
    untouched = rec(8, PARTITION_CHANGE_RECORD, 2, partition_id=0, topic_id=A, isr=[1, 2])
    kept, _ = apply_delta(image, [untouched])
    assert kept.topics[A].partitions[0].elr == (2, 3)  # null in the change: the ELR stays


def test_clear_elr_of_one_topic_clears_its_partitions_with_an_elr_and_bumps_their_epoch() -> None:
    image = three_topics()
    before = image.topics[A].partitions
    after, changes = apply_delta(image, [clear(7, "a")])
    p0, p1 = after.topics[A].partitions[0], after.topics[A].partitions[1]
    assert (p0.elr, p0.last_known_elr, p0.partition_epoch) == ((), (), before[0].partition_epoch + 1)
    assert (p0.leader, p0.leader_epoch, p0.isr, p0.replicas) == (1, 3, (1,), (1, 2, 3))
    assert p1 == before[1]  # nothing to clear: unchanged
    assert changes.topics_touched and set(changes.changed_topics) == {A}
    assert set(changes.changed_topics[A].partitions) == {0}
    assert changes.changed_topics[A].previous[0] == before[0]
    assert after.topics[B] is image.topics[B]


def test_clear_elr_of_all_topics_makes_every_image_topic_changed() -> None:
    image = three_topics()
    after, changes = apply_delta(image, [clear(7, "")])
    assert set(changes.changed_topics) == {A, B, C}  # getOrCreateTopicDelta for each, even c
    assert set(changes.changed_topics[A].partitions) == {0}
    assert set(changes.changed_topics[B].partitions) == {0}
    assert dict(changes.changed_topics[C].partitions) == {}
    assert after.topics[B].partitions[0].last_known_elr == ()
    assert after.topics[B].partitions[0].partition_epoch == image.topics[B].partitions[0].partition_epoch + 1
    assert after.topics[C].partitions == image.topics[C].partitions


def test_clear_elr_sees_the_changes_of_its_own_delta_and_topics_it_created() -> None:
    image = three_topics()
    d = uuid.UUID(int=14)
    records = [rec(7, PARTITION_CHANGE_RECORD, 2, partition_id=1, topic_id=A, eligible_leader_replicas=[3]),
               rec(8, TOPIC_RECORD, name="d", topic_id=d), partition(9, d, 0, elr=[2]), clear(10, "a"), clear(11, "d")]
    after, changes = apply_delta(image, records)
    assert after.topics[A].partitions[1].elr == () and after.topics[A].partitions[1].partition_epoch == 7
    assert after.topics[d].partitions[0].elr == () and after.topics[d].partitions[0].partition_epoch == 6
    assert changes.changed_topics[d].created
    # An empty name clears the topics created in the same delta too (4.1+, KAFKA-19383).
    after2, changes2 = apply_delta(
        image, [rec(8, TOPIC_RECORD, name="d", topic_id=d), partition(9, d, 0, elr=[2]), clear(10, "")])
    assert after2.topics[d].partitions[0].elr == () and after2.topics[d].partitions[0].partition_epoch == 6
    assert set(changes2.changed_topics) == {A, B, C, d} and changes2.changed_topics[d].created


def test_clear_elr_of_an_unknown_topic_is_refused_naming_it() -> None:
    with pytest.raises(MetadataReplayError, match="Unable to clear elr for topic with name nope: no such topic found"):
        apply_delta(three_topics(), [clear(7, "nope")])


@pytest.mark.parametrize("name", ["c", ""])
def test_clear_elr_after_a_delete_in_the_same_delta_leaves_the_topic_deleted(name: str) -> None:
    """TopicsDelta.maybeReplayClearElrRecord (4.1+, KAFKA-19383): a topic deleted earlier in the delta
    is skipped; Kafka 4.0.0 brought it back through getOrCreateTopicDelta."""
    image = three_topics()
    after, changes = apply_delta(image, [rec(7, REMOVE_TOPIC_RECORD, topic_id=C), clear(8, name)])
    assert C not in after.topics and "c" not in after.topic_ids_by_name
    assert C in changes.deleted_topics and C not in changes.changed_topics


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=6), st.booleans())
@settings(max_examples=60, deadline=None)
def test_clear_elr_leaves_no_elr_and_bumps_exactly_the_partitions_that_had_one(
    flags: list[tuple[bool, bool]], by_name: bool
) -> None:
    records = [rec(0, TOPIC_RECORD, name="t", topic_id=A)]
    records += [partition(i + 1, A, i, elr=[2] if e else None, lkelr=[3] if k else None) for i, (e, k) in enumerate(flags)]
    image, _ = apply_delta(EMPTY_IMAGE, records, offset=len(records))
    after, changes = apply_delta(image, [clear(99, "t" if by_name else "")])
    for p, (e, k) in enumerate(flags):
        old, new = image.topics[A].partitions[p], after.topics[A].partitions[p]
        assert not new.has_elr
        assert new.partition_epoch == old.partition_epoch + (1 if e or k else 0)
        assert (p in changes.changed_topics[A].partitions) == (e or k)
        assert attrs_without_elr(new) == attrs_without_elr(old)


def attrs_without_elr(reg: PartitionRegistration) -> tuple[Any, ...]:
    return (reg.replicas, reg.isr, reg.removing_replicas, reg.adding_replicas, reg.leader,
            reg.leader_recovery_state, reg.leader_epoch)


# ---------------------------------------------------------------- the other 4.x records and levels


def test_unregister_controller_creates_the_cluster_delta_and_changes_no_broker() -> None:
    image = three_topics()
    after, changes = apply_delta(image, [rec(7, UNREGISTER_CONTROLLER_RECORD, controller_id=3000)], offset=7)
    assert changes.cluster_touched and changes.touched and not changes.changed_brokers
    assert after.brokers == image.brokers and after.topics is image.topics


@pytest.mark.parametrize(("level", "expected"), [
    (21, MetadataVersion.IBP_3_9_IV0), (22, MetadataVersion.IBP_3_9_IV0), (23, MetadataVersion.IBP_3_9_IV0),
    (29, MetadataVersion.IBP_3_9_IV0), (33, MetadataVersion.IBP_3_9_IV0), (17, MetadataVersion.IBP_3_7_IV2),
])
def test_levels_above_21_replay_with_the_request_versions_of_3_9_iv0(level: int, expected: MetadataVersion) -> None:
    image, _ = apply_delta(EMPTY_IMAGE, [rec(1, FEATURE_LEVEL_RECORD, name="metadata.version", feature_level=level)])
    assert image.metadata_version is expected


def test_a_level_kafka_4_4_does_not_know_is_refused() -> None:
    with pytest.raises(MetadataReplayError, match="unknown metadata.version feature level 34"):
        apply_delta(EMPTY_IMAGE, [rec(1, FEATURE_LEVEL_RECORD, name="metadata.version", feature_level=34)])


@pytest.mark.parametrize(("type_id", "version", "tag", "fields"), [
    (REGISTER_BROKER_RECORD, 4, 1, {"broker_id": 4, "broker_epoch": 7, "log_dirs": (A,)}),
    (BROKER_REGISTRATION_CHANGE_RECORD, 3, 3, {"broker_id": 4, "broker_epoch": 7, "fenced": -1}),
])
def test_4_3_registrations_carry_their_tagged_nullable_cordoned_log_dirs(
    type_id: int, version: int, tag: int, fields: dict[str, Any]
) -> None:
    """v4 / v3 add only a tagged, nullable CordonedLogDirs ([]uuid, default null; tag 1 and 3 in the
    KIP-1066 change): null is not written (v3/v2's body), a list (even empty) is, under its tag."""
    cls = record_class(type_id)
    assert cls is not None
    plain = encode_value(type_id, version, cls(**fields))
    assert plain[2] == version
    assert plain[3:] == encode_value(type_id, version - 1, cls(**fields))[3:]  # null: v3/v2's body
    for dirs in [(B,), ()]:
        value = encode_value(type_id, version, cls(**fields, cordoned_log_dirs=dirs))
        compact = uvarint(len(dirs) + 1) + b"".join(u.bytes for u in dirs)
        assert bytes((tag,)) + uvarint(len(compact)) + compact in value and len(value) > len(plain)
        got_type, got_version, data = decode_value(value, 0, len(value))
        assert (got_type, got_version) == (type_id, version)
        assert data.cordoned_log_dirs == dirs and data.unknown_tagged_fields == ()
        for name, expected in fields.items():
            assert getattr(data, name) == expected
    assert decode_value(plain, 0, len(plain))[2].cordoned_log_dirs is None
    # A version before the field refuses a non-null value, as Kafka's generated write() does.
    with pytest.raises(UnsupportedVersionError, match=f"non-default cordonedLogDirs at version {version - 1}"):
        encode_value(type_id, version - 1, cls(**fields, cordoned_log_dirs=(B,)))


def _segment(path: Path, values: list[bytes]) -> None:
    """A .log of one data batch holding ``values`` at offsets 0.."""
    path.write_bytes(encode_batch_raw(0, 1, 0, len(values), encode_records(values), control=False))


@pytest.mark.parametrize(("value", "reason"), [
    (b"\x01\x1e\x00\x00", "unknown metadata record type 30"),
    (b"\x01\x00\x05" + b"\x00" * 8, "unknown version 5 of RegisterBrokerRecord"),
    (b"\x01\x1c\x01\x01\x00", "unknown version 1 of ClearElrRecord"),
])
def test_unknown_types_and_versions_are_named_by_file_and_offset_or_counted(tmp_path: Path, value: bytes, reason: str) -> None:
    topic_cls: Any = record_class(TOPIC_RECORD)
    topic = encode_value(TOPIC_RECORD, 0, topic_cls(name="t", topic_id=A))
    log = tmp_path / "00000000000000000000.log"
    _segment(log, [topic, value])
    at = log.read_bytes().rindex(value)
    with pytest.raises(ReplayInputError, match=rf"{log}, byte offset {at}: record at offset 1: {reason}"):
        list(read_segment(log))
    stats = ReadStats()
    assert list(read_segment(log, skip_corrupt=True, stats=stats)) == []
    assert len(stats.corrupt) == 1 and reason in str(stats.corrupt[0])


# ---------------------------------------------------------------- generated 4.x logs


def test_record_versions_by_level_follow_kafka_4x() -> None:
    assert [record_versions(lv) for lv in (16, 17, 21, 22, 23, 29, 30, 33)] == [
        (2, 0), (3, 1), (3, 1), (3, 1), (3, 2), (3, 2), (4, 2), (4, 2)]


def _versions_written(directory: Path) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for batch in open_history(directory).batches():
        for r in batch.records:
            out.setdefault(type(r.data).__name__, set()).add(r.version)
    return out


@pytest.mark.parametrize(("level", "register", "part"), [(22, 3, 1), (23, 3, 2), (29, 3, 2), (30, 4, 2), (33, 4, 2)])
def test_the_generator_writes_the_record_versions_of_each_4x_level(tmp_path: Path, level: int, register: int, part: int) -> None:
    generate_log(tmp_path, brokers=4, topics=3, partitions=30, records=6_000, seed=level, metadata_version=level,
                 upgrade_to=None)
    written = _versions_written(tmp_path)
    assert written["RegisterBrokerRecord"] == {register}
    assert written["PartitionRecord"] == {part} and written["PartitionChangeRecord"] == {part}
    assert ("ClearElrRecord" in written) == (level >= 23)


def test_an_upgrade_from_3_9_to_4_2_changes_the_versions_part_way(tmp_path: Path) -> None:
    result = generate_log(tmp_path, brokers=4, topics=3, partitions=30, records=8_000, seed=5, metadata_version=21,
                          upgrade_to=29)
    assert result.by_type["CLEAR_ELR_RECORD"] > 0
    seen_upgrade = False
    for batch in open_history(tmp_path).batches():
        for r in batch.records:
            if r.type == FEATURE_LEVEL_RECORD and r.data.feature_level == 29:
                seen_upgrade = True
            if r.type in (PARTITION_RECORD, PARTITION_CHANGE_RECORD):
                assert r.version == (2 if seen_upgrade else 1)
            if r.type == CLEAR_ELR_RECORD:
                assert seen_upgrade


@pytest.mark.parametrize(("config", "message"), [
    ({"metadata_version": 34}, "metadata_version: must be a feature level from 8 (3.4-IV0) to 33 (4.4-IV2), got 34"),
    ({"metadata_version": 29, "upgrade_to": 34}, "upgrade_to: must be above metadata_version, at most 33, got 34"),
])
def test_the_generator_names_a_level_past_4_4(tmp_path: Path, config: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        generate_log(tmp_path, records=100, **config)


def test_generate_log_takes_4x_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate-log", str(tmp_path / "g"), "--metadata-version", "4.2-IV1", "--records", "3000",
                 "--quiet"]) == 0
    assert "CLEAR_ELR_RECORD" in capsys.readouterr().out
    features = {(r.data.name, r.data.feature_level) for b in open_history(tmp_path / "g").batches()
                for r in b.records if r.type == FEATURE_LEVEL_RECORD}
    assert features == {("metadata.version", 29), ("eligible.leader.replicas.version", 1)}
    assert main(["generate-log", str(tmp_path / "h"), "--metadata-version", "4.9-IV0", "--quiet"]) == 1
    assert "--metadata-version: unknown metadata.version '4.9-IV0'" in capsys.readouterr().err


@pytest.fixture(scope="module")
def log_4x(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Levels 22 to 33 in one history (4.0-IV0, upgraded to 4.4-IV2), ClearElr events included."""
    d = tmp_path_factory.mktemp("log4x")
    generate_log(d, brokers=5, topics=6, partitions=120, records=12_000, seed=44, metadata_version=22,
                 upgrade_to=33, segment_bytes=150_000)
    return d


def test_a_4x_log_replays_with_3_9_iv0_request_versions_and_says_so(log_4x: Path) -> None:
    result = replay_local(open_history(log_4x), ReplayOptions())
    rows = result.drain()
    versions = {(r["api_key"], r["api_version"]) for r in rows}
    assert versions == {(LAIR, 7), (UMR, 8), (SR, 4)}
    data = result.summary.to_dict()
    assert data["records_by_type"]["CLEAR_ELR_RECORD"] > 0
    assert data["metadata_version"]["levels"] == {"22": "4.0-IV0", "33": "4.4-IV2"}
    note = data["metadata_version"]["note"]
    assert "22 (4.0-IV0), 33 (4.4-IV2)" in note and "removed ZooKeeper mode" in note
    assert "3.9-IV0's versions (LeaderAndIsr v7, UpdateMetadata v8, StopReplica v4)" in note
    assert result.image.metadata_version is MetadataVersion.IBP_3_9_IV0


def test_a_3x_log_has_no_note(sample_dir: Path) -> None:
    result = replay_local(open_history(sample_dir), ReplayOptions())
    result.drain()
    mv = result.summary.to_dict()["metadata_version"]
    assert mv["note"] is None and all(int(lv) <= 21 for lv in mv["levels"])


def test_the_printed_summary_and_summary_json_carry_the_note(log_4x: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", str(log_4x), "--engine", "local", "--quiet", "--out", str(tmp_path / "o")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "metadata.version levels: 22 (4.0-IV0), 33 (4.4-IV2)" in out
    assert "note: metadata.version 22 (4.0-IV0), 33 (4.4-IV2): Kafka 4.x, which removed ZooKeeper mode" in out
    saved = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert saved["summary"]["metadata_version"]["note"].startswith("metadata.version 22 (4.0-IV0), 33 (4.4-IV2)")


@pytest.mark.parametrize("name", ["4.2-IV1", "4.0", "4.0-IV1", "4.4-IV2"])
def test_ibp_with_a_4x_name_gets_one_line_saying_why_not(sample_dir: Path, name: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(sample_dir), "--engine", "local", "--quiet", "--ibp", name]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"--ibp: {name} is a Kafka 4.x metadata.version, and Kafka 4.0 removed ZooKeeper mode" in err


def test_spark_replays_a_4x_log_as_the_sequential_engine_does(spark: Any, log_4x: Path, tmp_path: Path) -> None:
    from ctrlbatch.replay.spark.engine import HistorySource, replay_spark

    history = open_history(log_4x)
    local = replay_local(history, ReplayOptions())
    rows = local.drain()
    result = replay_spark(spark, HistorySource(str(log_4x)), ReplayOptions(), requests_dir=tmp_path / "r",
                          unit_bytes=64 << 10)
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "r").to_pylist() == rows
    assert result.summary.to_dict() == local.summary.to_dict()
    assert result.stats.to_dict() == history.stats.to_dict()


def test_a_record_of_a_type_from_after_4_4_stops_the_replay_or_is_counted(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    result = generate_log(tmp_path, brokers=3, topics=2, partitions=10, records=500, seed=9, metadata_version=33,
                          upgrade_to=None)
    segment = Path(result.segments[-1])
    at = segment.stat().st_size
    future = b"\x01\x1e\x00\x00"  # type 30, which no Kafka up to 4.4 defines; its value starts 6 bytes into its record
    with segment.open("ab") as f:
        f.write(encode_batch_raw(result.last_offset + 1, 1, 0, 1, encode_records([future]), control=False))
    assert main(["replay", str(tmp_path), "--engine", "local", "--quiet"]) == 1
    _out, err = capsys.readouterr()
    assert f"{segment}, byte offset {at + 61 + 6}: record at offset {result.last_offset + 1}: " \
           "unknown metadata record type 30" in err
    assert main(["replay", str(tmp_path), "--engine", "local", "--quiet", "--skip-corrupt"]) == 0
    out, _err = capsys.readouterr()
    assert "1 corrupt skipped" in out and "unknown metadata record type 30" in out


def elr_log(directory: Path) -> Path:
    """A level-23 log by hand: three brokers, topic t (p0 with an ELR, p1 without), topic u (no
    ELR), then ClearElrRecord("t"), then ClearElrRecord("")."""
    from ctrlbatch.replay.generate.writer import encode_batch
    from ctrlbatch.replay.log.records import LEADER_CHANGE
    from ctrlbatch.replay.schema.record_classes import control_class, encode_control

    def value(type_id: int, version: int, **fields: Any) -> bytes:
        cls: Any = record_class(type_id)
        return encode_value(type_id, version, cls(**fields))

    def broker(b: int, epoch: int) -> bytes:
        cls: Any = record_class(REGISTER_BROKER_RECORD)
        ep = cls.BrokerEndpoint(name="PLAINTEXT", host=f"b{b}", port=9092, security_protocol=0)
        return value(REGISTER_BROKER_RECORD, 3, broker_id=b, broker_epoch=epoch, end_points=(ep,), fenced=False,
                     log_dirs=(uuid.UUID(int=100 + b),))

    def part(topic: uuid.UUID, p: int, elr: list[int] | None) -> bytes:
        return value(PARTITION_RECORD, 2, partition_id=p, topic_id=topic, replicas=[1, 2, 3], isr=[1], leader=1,
                     leader_epoch=2, partition_epoch=4, directories=[uuid.UUID(int=101 + i) for i in range(3)],
                     eligible_leader_replicas=elr, last_known_elr=None)

    leader_cls: Any = control_class(LEADER_CHANGE)
    batches = [
        [encode_control(leader_cls(version=0, leader_id=3000, voters=(), granting_voters=()))],
        [value(FEATURE_LEVEL_RECORD, 0, name="metadata.version", feature_level=23)],
        [broker(1, 2), broker(2, 3), broker(3, 4)],
        [value(TOPIC_RECORD, 0, name="t", topic_id=A), part(A, 0, [2, 3]), part(A, 1, None)],
        [value(TOPIC_RECORD, 0, name="u", topic_id=B), part(B, 0, None)],
        [value(CLEAR_ELR_RECORD, 0, topic_name="t")],
        [value(CLEAR_ELR_RECORD, 0, topic_name="")],
    ]
    out, offset = b"", 0
    for i, values in enumerate(batches):
        out += encode_batch(offset, 1, 1000 + i, values, control_types=[LEADER_CHANGE] if i == 0 else None)
        offset += len(values)
    d = directory / "__cluster_metadata-0"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(out)
    return directory


def test_clear_elr_sends_the_cleared_partition_with_its_new_epoch_and_both_engines_agree(
    spark: Any, tmp_path: Path
) -> None:
    from ctrlbatch.replay.spark.engine import HistorySource, replay_spark

    log = elr_log(tmp_path / "log")
    local = replay_local(open_history(log), ReplayOptions())
    rows = local.drain()
    assert local.image.topics[A].partitions[0].partition_epoch == 5 and not local.image.topics[A].partitions[0].has_elr
    assert local.image.topics[A].partitions[1].partition_epoch == 4
    clear_t, clear_all = 10, 11  # the offsets of the two ClearElr records
    by_delta = {d: sorted((r["api_key"], r["broker"], r["partitions"]) for r in rows if r["delta_last_offset"] == d)
                for d in (clear_t, clear_all)}
    # ClearElr("t"): p0 changed (epoch 5): LeaderAndIsr to its three replicas, UpdateMetadata to all.
    assert by_delta[clear_t] == [(LAIR, b, 1) for b in (1, 2, 3)] + [(UMR, b, 1) for b in (1, 2, 3)]
    # ClearElr(""): nothing left to clear, every topic changed all the same: UpdateMetadata to the old brokers.
    assert by_delta[clear_all] == [(UMR, b, 0) for b in (1, 2, 3)]
    result = replay_spark(spark, HistorySource(str(log)), ReplayOptions(), requests_dir=tmp_path / "r")
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "r").to_pylist() == rows
    assert result.summary.to_dict() == local.summary.to_dict()
