"""The generator: Kafka's bytes, deterministic per seed, and a semantically valid history.

Validity is checked by folding every record with the rules of kafka-metadata-records.md (the
_Fold below asserts the invariants a controller keeps) and, independently, with the project's
MetadataDelta port (replay/image/image.py, replay/image/deltas.py) which raises on what Kafka would reject."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.generate.cli import configure, run
from ctrlbatch.replay.generate.generator import (
    ELR_FEATURE,
    MAX_RECORDS_PER_BATCH,
    MIN_ISR,
    VOTERS,
    generate_log,
    partition_change_value,
    partition_value,
)
from ctrlbatch.replay.log import records as rec
from ctrlbatch.replay.log.jsonl import read_jsonl
from ctrlbatch.replay.log.records import LogBatch, MetadataRecord
from ctrlbatch.replay.log.segments import read_segment, scan_batches
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.schema.record_classes import decode_value, encode_value, record_class


@attrs.define
class _Part:
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    adding: list[int]
    removing: list[int]
    elr: list[int] = attrs.field(factory=list)
    last_known_elr: list[int] = attrs.field(factory=list)


class _Fold:
    """Replays records as Kafka's MetadataDelta does and asserts the controller's invariants."""

    def __init__(self) -> None:
        self.brokers: dict[int, Any] = {}
        self.topics: dict[uuid.UUID, tuple[str, dict[int, _Part]]] = {}
        self.level = -1
        self.epoch = 0
        self.offset = -1
        self.in_txn = False
        self.elr_enabled = False
        self.min_isr = MIN_ISR
        self.topic_min_isr: dict[str, int] = {}
        self.controllers: set[int] = set()
        self.batch_types: list[int] = []  # the types of the current batch so far
        self.cordoned: dict[int, tuple[uuid.UUID, ...] | None] = {}

    def batch(self, b: LogBatch) -> None:
        assert b.base_offset == self.offset + 1, "offsets are dense"
        assert b.epoch >= self.epoch
        assert b.last_offset - b.base_offset + 1 <= MAX_RECORDS_PER_BATCH
        if b.control:
            for c in b.control_records:
                if c.type == rec.LEADER_CHANGE:
                    assert b.epoch == self.epoch + 1, "a LeaderChange opens the next epoch"
                    assert c.data.leader_id in [v.voter_id for v in c.data.voters]
        else:
            assert b.epoch == self.epoch, "data batches carry the epoch of the last LeaderChange"
        self.epoch = b.epoch
        self.batch_types = []
        for r in b.records:
            self.record(r)
            self.batch_types.append(r.type)
        self.offset = b.last_offset

    def record(self, r: Any) -> None:
        d, t = r.data, r.type
        if t == rec.BEGIN_TRANSACTION_RECORD:
            assert not self.in_txn
            self.in_txn = True
        elif t == rec.END_TRANSACTION_RECORD:
            assert self.in_txn
            self.in_txn = False
        elif t == rec.FEATURE_LEVEL_RECORD and d.name == ELR_FEATURE:  # KIP-966, once the level allows it
            assert self.level >= 23 and d.feature_level == 1 and not self.elr_enabled
            self.elr_enabled = True
        elif t == rec.FEATURE_LEVEL_RECORD:
            assert d.name == "metadata.version" and d.feature_level > self.level
            self.level = d.feature_level
        elif t == rec.REGISTER_BROKER_RECORD:
            assert self.level >= 8 and r.version == (4 if self.level >= 30 else 3 if self.level >= 17 else 2)
            old = self.brokers.get(d.broker_id)
            assert d.broker_epoch == r.offset and d.fenced
            assert old is None or (
                old.broker_epoch < d.broker_epoch and old.incarnation_id != d.incarnation_id
            )
            assert d.cordoned_log_dirs is None  # KAFKA-20441: cordoned dirs come with heartbeats
            if old is not None and self.elr_enabled:  # the unclean-shutdown changes went first
                stale = [(n, p) for n, parts in self.topics.values() for p in parts.values()
                         if d.broker_id in p.isr or d.broker_id in p.elr]
                assert not stale, (d.broker_id, stale)
            self.brokers[d.broker_id] = d
            self.cordoned[d.broker_id] = None
        elif t == rec.BROKER_REGISTRATION_CHANGE_RECORD and r.version == 3:  # KIP-1066: (un)cordon
            b = self.brokers[d.broker_id]
            assert self.level >= 30 and d.broker_epoch == b.broker_epoch and not b.fenced
            assert (d.fenced, d.in_controlled_shutdown, d.log_dirs) == (0, 0, ())
            assert d.cordoned_log_dirs in ((), tuple(b.log_dirs)) and d.cordoned_log_dirs != self.cordoned[d.broker_id]
            self.cordoned[d.broker_id] = d.cordoned_log_dirs
        elif t == rec.BROKER_REGISTRATION_CHANGE_RECORD:
            b = self.brokers[d.broker_id]
            assert d.broker_epoch == b.broker_epoch
            assert d.fenced in (-1, 0, 1) and d.in_controlled_shutdown in (0, 1)
            if d.fenced == -1:
                assert b.fenced
            changes = {"fenced": b.fenced if d.fenced == 0 else d.fenced == 1}
            if d.in_controlled_shutdown:
                assert not b.fenced
                changes["in_controlled_shutdown"] = True
            self.brokers[d.broker_id] = attrs.evolve(b, **changes)
        elif t == rec.TOPIC_RECORD:
            assert d.topic_id not in self.topics
            assert d.name not in [n for n, _ in self.topics.values()]
            self.topics[d.topic_id] = (d.name, {})
        elif t == rec.REMOVE_TOPIC_RECORD:
            del self.topics[d.topic_id]
        elif t == rec.PARTITION_RECORD:
            assert r.version == (2 if self.level >= 23 else 1 if self.level >= 17 else 0)
            parts = self.topics[d.topic_id][1]
            assert d.partition_id == len(parts), "partitions are created in order"
            if r.version >= 1:
                assert len(d.directories) == len(d.replicas)
            assert d.eligible_leader_replicas is None and d.last_known_elr is None  # a new partition has none
            parts[d.partition_id] = _Part(
                list(d.replicas),
                list(d.isr),
                d.leader,
                d.leader_epoch,
                d.partition_epoch,
                list(d.adding_replicas),
                list(d.removing_replicas),
            )
            self.check(parts[d.partition_id], live_leader=True)
        elif t == rec.PARTITION_CHANGE_RECORD:
            assert r.version == (2 if self.level >= 23 else 1 if self.level >= 17 else 0)
            if not self.elr_enabled:
                assert d.eligible_leader_replicas is None and d.last_known_elr is None
            p = self.topics[d.topic_id][1][d.partition_id]
            for name, attr in (("eligible_leader_replicas", "elr"), ("last_known_elr", "last_known_elr")):
                value = getattr(d, name)
                if value is not None:
                    assert list(value) != getattr(p, attr), "written only when it changes"
                    setattr(p, attr, list(value))
            for name, attr in (
                ("isr", "isr"),
                ("replicas", "replicas"),
                ("adding_replicas", "adding"),
                ("removing_replicas", "removing"),
            ):
                value = getattr(d, name)
                if value is not None:
                    setattr(p, attr, list(value))
            if d.leader != -2:
                p.leader = d.leader
                p.leader_epoch += 1
            p.partition_epoch += 1
            self.check(p, live_leader=d.leader != -2)
        elif t == rec.CONFIG_RECORD:  # min.insync.replicas of a live topic, or of the cluster
            assert d.name == "min.insync.replicas" and self.elr_enabled and int(d.value) >= 1
            if d.resource_type == 2:
                assert d.resource_name in [n for n, _ in self.topics.values()]
                self.topic_min_isr[d.resource_name] = int(d.value)
            else:
                assert (d.resource_type, d.resource_name) == (4, "")
                self.min_isr = int(d.value)
        elif t == rec.CLEAR_ELR_RECORD:  # right after the min.insync.replicas change it follows from
            assert self.level >= 23 and r.version == 0 and self.batch_types[-1:] == [rec.CONFIG_RECORD]
            named = [tid for tid, (n, _) in self.topics.items() if n == d.topic_name]
            assert d.topic_name == "" or len(named) == 1
            for tid in named if d.topic_name else list(self.topics):
                for p in self.topics[tid][1].values():
                    if p.elr or p.last_known_elr:  # TopicDelta.maybeClearElr
                        p.elr, p.last_known_elr = [], []
                        p.partition_epoch += 1
        elif t == rec.REGISTER_CONTROLLER_RECORD:
            assert self.level >= 23 and d.controller_id in VOTERS
            self.controllers.add(d.controller_id)
        elif t == rec.UNREGISTER_CONTROLLER_RECORD:
            assert self.level >= 33 and d.controller_id in self.controllers
            self.controllers.discard(d.controller_id)
        elif t != rec.ZK_MIGRATION_STATE_RECORD:
            raise AssertionError(f"unexpected record {r}")

    def check(self, p: _Part, *, live_leader: bool) -> None:
        assert len(set(p.replicas)) == len(p.replicas) and all(b in self.brokers for b in p.replicas)
        assert set(p.isr) <= set(p.replicas) and len(set(p.isr)) == len(p.isr)
        assert p.isr or (self.elr_enabled and p.leader == -1), "an empty ISR only with ELR, leaderless"
        # KIP-966: the ELR and last known ELR are sorted, apart from each other and from the ISR
        assert p.elr == sorted(set(p.elr)) and p.last_known_elr == sorted(set(p.last_known_elr))
        assert not set(p.elr) & set(p.isr) and not set(p.last_known_elr) & set(p.elr)
        assert not set(p.last_known_elr) & set(p.isr)
        assert set(p.adding) <= set(p.replicas) and set(p.removing) <= set(p.replicas)
        assert not set(p.adding) & set(p.removing)
        if p.leader != -1:
            assert p.leader in p.isr
            b = self.brokers[p.leader]
            if live_leader:
                assert not b.fenced and not getattr(b, "in_controlled_shutdown", False), (
                    "a new leader is alive"
                )


def _fold(batches: list[LogBatch]) -> _Fold:
    fold = _Fold()
    for b in batches:
        fold.batch(b)
    assert not fold.in_txn
    return fold


def _digest(directory: str) -> str:
    h = hashlib.sha256()
    for p in sorted(Path(directory).iterdir()):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def test_a_small_log_is_valid_and_has_every_event(tmp_path: Path) -> None:
    result = generate_log(tmp_path, brokers=6, topics=8, partitions=120, records=30_000, seed=7)
    h = open_history(tmp_path)
    batches = list(h.batches())
    fold = _fold(batches)
    assert result.records == sum(b.last_offset - b.base_offset + 1 for b in batches) >= 30_000
    assert result.last_offset == batches[-1].last_offset == result.records - 1
    read = dict(h.stats.records) | {"NO_OP_RECORD": h.stats.noops}
    assert read == {k: v for k, v in result.by_type.items()}
    for name in (
        "REGISTER_BROKER_RECORD",
        "TOPIC_RECORD",
        "PARTITION_RECORD",
        "PARTITION_CHANGE_RECORD",
        "REMOVE_TOPIC_RECORD",
        "BROKER_REGISTRATION_CHANGE_RECORD",
        "FEATURE_LEVEL_RECORD",
    ):
        assert result.by_type[name] > 0, name
    assert h.stats.control_records["LEADER_CHANGE"] >= 2, "KRaft leader changes"
    assert fold.level == 21 and result.by_type["FEATURE_LEVEL_RECORD"] == 2, (
        "bootstrap level, then the upgrade"
    )
    assert abs(h.stats.noops / result.records - 0.5) < 0.05
    changes = [r.data for b in batches for r in b.records if r.type == rec.PARTITION_CHANGE_RECORD]
    assert any(c.adding_replicas for c in changes) and any(c.adding_replicas == () for c in changes), (
        "reassignments"
    )
    assert any(c.leader == -1 for c in changes) or any(c.isr is not None for c in changes)
    icss = [
        r
        for b in batches
        for r in b.records
        if r.type == rec.BROKER_REGISTRATION_CHANGE_RECORD and r.data.in_controlled_shutdown
    ]
    assert icss and all(r.version == 1 for r in icss), "controlled shutdowns"
    first = batches[1].records
    assert [r.type for r in first] == [23, 12, 21, 24] and first[1].data.feature_level == 14, (
        "bootstrap transaction"
    )
    assert any(
        b.records and b.records[0].type == rec.PARTITION_CHANGE_RECORD and len(b.records) > 1 for b in batches
    )


def test_the_project_s_metadata_delta_port_replays_it(tmp_path: Path) -> None:
    from ctrlbatch.replay.image.deltas import group_deltas
    from ctrlbatch.replay.image.image import EMPTY_IMAGE, apply_delta

    generate_log(tmp_path, brokers=5, topics=6, partitions=60, records=15_000, seed=3)
    batches = list(open_history(tmp_path).batches())
    image = EMPTY_IMAGE
    for delta in group_deltas(batches):
        image, _changes = apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)
    fold = _fold(batches)
    assert {t.name for t in image.topics.values()} == {n for n, _ in fold.topics.values()}
    for tid, (_name, parts) in fold.topics.items():
        mine = {
            i: (p.leader, p.leader_epoch, p.partition_epoch, tuple(p.isr), tuple(p.replicas))
            for i, p in parts.items()
        }
        theirs = {
            i: (p.leader, p.leader_epoch, p.partition_epoch, tuple(p.isr), tuple(p.replicas))
            for i, p in image.topics[tid].partitions.items()
        }
        assert mine == theirs
    assert {b: r.fenced for b, r in image.brokers.items()} == {b: d.fenced for b, d in fold.brokers.items()}


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    args: dict[str, Any] = {"brokers": 4, "topics": 5, "partitions": 40, "records": 5_000, "snapshots": 1}
    a = generate_log(tmp_path / "a", seed=11, **args)
    b = generate_log(tmp_path / "b", seed=11, **args)
    c = generate_log(tmp_path / "c", seed=12, **args)
    assert _digest(a.directory) == _digest(b.directory) != _digest(c.directory)


def test_segments_roll_and_are_named_by_base_offset(tmp_path: Path) -> None:
    result = generate_log(
        tmp_path, brokers=4, topics=4, partitions=40, records=8_000, seed=5, segment_bytes=64 << 10
    )
    assert len(result.segments) > 3
    total = 0
    for path in result.segments:
        pointers = list(scan_batches(path))
        assert Path(path).name == f"{pointers[0].base_offset:020d}.log"
        size = Path(path).stat().st_size
        assert size <= 64 << 10 or len(pointers) == 1
        total += len(pointers)
    assert total == result.batches
    assert [b.base_offset for b in open_history(tmp_path).batches()] == sorted(
        p.base_offset for s in result.segments for p in scan_batches(s)
    )


def test_big_topics_are_written_in_transactions_of_full_batches(tmp_path: Path) -> None:
    generate_log(tmp_path, brokers=3, topics=1, partitions=25_000, records=26_000, seed=1, noop_ratio=0.0)
    batches = list(open_history(tmp_path).batches())
    creation = [b for b in batches if any(r.type == rec.PARTITION_RECORD for r in b.records)][:3]
    assert [len(b.records) for b in creation] == [10_000, 10_000, 5_003]
    assert creation[0].records[0].type == rec.BEGIN_TRANSACTION_RECORD
    assert creation[2].records[-1].type == rec.END_TRANSACTION_RECORD
    _fold(batches)


def test_snapshots_hold_the_state_at_their_offset(tmp_path: Path) -> None:
    result = generate_log(tmp_path, brokers=5, topics=5, partitions=50, records=12_000, seed=9, snapshots=2)
    assert len(result.snapshots) == 2
    log = list(open_history(tmp_path).batches())
    for path in result.snapshots:
        h = open_history(tmp_path, from_snapshot=path)
        assert h.snapshot is not None
        snap = _Fold()
        for b in h.snapshot_batches():
            for r in b.records:
                if r.type == rec.REGISTER_BROKER_RECORD:  # a snapshot holds the current registration
                    snap.brokers[r.data.broker_id] = r.data
                elif r.type != rec.PARTITION_RECORD:
                    snap.record(r)
                else:
                    d = r.data
                    snap.topics[d.topic_id][1][d.partition_id] = _Part(
                        list(d.replicas),
                        list(d.isr),
                        d.leader,
                        d.leader_epoch,
                        d.partition_epoch,
                        list(d.adding_replicas),
                        list(d.removing_replicas),
                    )
        upto = _fold([b for b in log if b.last_offset < h.snapshot.end_offset])
        assert snap.topics == upto.topics
        assert {i: (d.broker_epoch, d.fenced) for i, d in snap.brokers.items()} == {
            i: (d.broker_epoch, d.fenced) for i, d in upto.brokers.items()
        }
        assert h.snapshot.epoch == upto.epoch
        after = list(h.batches())
        assert after[0].base_offset == h.snapshot.end_offset


def test_json_lines_form_gives_the_same_batches(tmp_path: Path) -> None:
    generate_log(
        tmp_path / "d", brokers=4, topics=4, partitions=30, records=4_000, seed=2, jsonl=tmp_path / "h.jsonl"
    )
    binary = [attrs.evolve(b, source="", position=0) for b in open_history(tmp_path / "d").batches()]
    text = [attrs.evolve(b, source="", position=0) for b in read_jsonl(tmp_path / "h.jsonl")]
    assert binary == text


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    brokers=st.integers(1, 8),
    topics=st.integers(1, 6),
    extra=st.integers(0, 60),
    records=st.integers(1, 3_000),
    seed=st.integers(0, 2**32),
    rf=st.integers(1, 3),
    noop_ratio=st.sampled_from([0.0, 0.3, 0.9]),
    mv=st.sampled_from([(8, None), (11, 17), (14, 21), (21, None), (21, 29), (23, 33), (30, None)]),
)
def test_any_parameters_give_a_valid_log(
    tmp_path_factory: pytest.TempPathFactory,
    brokers: int,
    topics: int,
    extra: int,
    records: int,
    seed: int,
    rf: int,
    noop_ratio: float,
    mv: tuple[int, int | None],
) -> None:
    out = tmp_path_factory.mktemp("gen")
    result = generate_log(
        out, brokers=brokers, topics=topics, partitions=topics + extra, records=records, seed=seed,
        replication_factor=min(rf, brokers), noop_ratio=noop_ratio, metadata_version=mv[0], upgrade_to=mv[1],
    )  # fmt: skip
    batches = (
        list(read_segment(result.segments[0]))
        if len(result.segments) == 1
        else list(open_history(out).batches())
    )
    fold = _fold(batches)
    assert result.records >= records and len(fold.brokers) == brokers
    for _name, parts in fold.topics.values():
        for p in parts.values():
            assert len(p.replicas) - len(p.adding) <= min(rf, brokers)


_ids = st.lists(st.integers(-1, 2**31 - 1), max_size=5)


@settings(max_examples=200, deadline=None)
@given(
    version=st.integers(0, 2),
    pid=st.integers(0, 2**31 - 1),
    isr=st.none() | _ids,
    leader=st.integers(-2, 2**31 - 1),
    replicas=st.none() | _ids,
    removing=st.none() | _ids,
    adding=st.none() | _ids,
    dirs=st.none() | st.lists(st.binary(min_size=16, max_size=16), max_size=4),
)
def test_the_hand_encoded_partition_change_is_the_codec_s(
    version: int,
    pid: int,
    isr: list[int] | None,
    leader: int,
    replicas: list[int] | None,
    removing: list[int] | None,
    adding: list[int] | None,
    dirs: list[bytes] | None,
) -> None:
    tid = uuid.uuid4()
    fast = partition_change_value(
        version,
        pid,
        tid.bytes,
        isr=isr,
        leader=leader,
        replicas=replicas,
        removing=removing,
        adding=adding,
        directories=dirs,
    )
    cls = record_class(rec.PARTITION_CHANGE_RECORD)
    assert cls is not None
    obj = cls(
        partition_id=pid,
        topic_id=tid,
        isr=isr,
        leader=leader,
        replicas=replicas,
        removing_replicas=removing,
        adding_replicas=adding,
        directories=None if dirs is None or version < 1 else [uuid.UUID(bytes=d) for d in dirs],
    )
    assert fast == encode_value(rec.PARTITION_CHANGE_RECORD, version, obj)
    assert decode_value(fast, 0, len(fast))[2] == obj


@settings(max_examples=200, deadline=None)
@given(
    version=st.integers(0, 2),
    replicas=st.lists(st.integers(0, 2**31 - 1), max_size=5),
    isr=_ids,
    removing=_ids,
    adding=_ids,
    nums=st.tuples(
        st.integers(0, 2**31 - 1),
        st.integers(-1, 2**31 - 1),
        st.integers(-1, 2**31 - 1),
        st.integers(-1, 2**31 - 1),
    ),
)
def test_the_hand_encoded_partition_record_is_the_codec_s(
    version: int,
    replicas: list[int],
    isr: list[int],
    removing: list[int],
    adding: list[int],
    nums: tuple[int, int, int, int],
) -> None:
    pid, leader, le, pe = nums
    tid = uuid.uuid4()
    dirs = [uuid.uuid4() for _ in replicas]
    fast = partition_value(
        version, pid, tid.bytes, replicas, isr, removing, adding, leader, le, pe, [d.bytes for d in dirs]
    )
    cls = record_class(rec.PARTITION_RECORD)
    assert cls is not None
    obj = cls(
        partition_id=pid,
        topic_id=tid,
        replicas=replicas,
        isr=isr,
        removing_replicas=removing,
        adding_replicas=adding,
        leader=leader,
        leader_epoch=le,
        partition_epoch=pe,
        directories=dirs if version >= 1 else (),
    )
    assert fast == encode_value(rec.PARTITION_RECORD, version, obj)


def test_bad_parameters_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="replication_factor: must be between 1 and brokers, got 4"):
        generate_log(tmp_path, brokers=3, replication_factor=4)
    with pytest.raises(ValueError, match="partitions: must be at least one per topic"):
        generate_log(tmp_path, topics=5, partitions=4)
    with pytest.raises(ValueError, match="upgrade_to: must be above metadata_version"):
        generate_log(tmp_path, metadata_version=21)
    generate_log(tmp_path, records=10)
    with pytest.raises(ValueError, match="already holds a log"):
        generate_log(tmp_path, records=10)


def test_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(
        [
            str(tmp_path / "out"),
            "--brokers",
            "3",
            "--topics",
            "2",
            "--partitions",
            "6",
            "--records",
            "500",
            "--seed",
            "4",
            "--metadata-version",
            "3.7-IV4",
            "--no-upgrade",
            "--jsonl",
            str(tmp_path / "h.jsonl"),
            "--quiet",
        ]
    )
    assert run(args) == 0
    out = capsys.readouterr().out
    assert "records" in out and str(tmp_path / "out" / "__cluster_metadata-0") in out
    batches = list(open_history(tmp_path / "out").batches())
    assert batches[1].records[1].data.feature_level == 19
    assert sum(1 for _ in (tmp_path / "h.jsonl").open()) >= 500
    bad = parser.parse_args([str(tmp_path / "x"), "--metadata-version", "3.3-IV0"])
    from ctrlbatch.common import CommandError

    with pytest.raises(CommandError, match="--metadata-version: must be a feature level from 8"):
        run(bad)
    with pytest.raises(CommandError, match="--partitions: must be at least one per topic"):
        run(parser.parse_args([str(tmp_path / "y"), "--topics", "3", "--partitions", "2"]))


def test_the_fold_rejects_what_a_controller_never_writes(tmp_path: Path) -> None:
    """The validity checks above can fail: a leader outside the ISR, a stale broker epoch."""
    generate_log(
        tmp_path, brokers=3, topics=1, partitions=3, records=40, seed=1, noop_ratio=0.0, upgrade_to=None
    )
    fold = _fold(list(open_history(tmp_path).batches()))
    pcr_cls, brcr_cls = (
        record_class(rec.PARTITION_CHANGE_RECORD),
        record_class(rec.BROKER_REGISTRATION_CHANGE_RECORD),
    )
    assert pcr_cls is not None and brcr_cls is not None
    tid = next(iter(fold.topics))
    first = fold.topics[tid][1][0].replicas[0]
    other = next(b for b in fold.brokers if b != first)
    bad = pcr_cls(partition_id=0, topic_id=tid, isr=[first], leader=other)
    with pytest.raises(AssertionError):
        fold.record(MetadataRecord(fold.offset + 1, rec.PARTITION_CHANGE_RECORD, 0, bad))
    stale = brcr_cls(broker_id=1, broker_epoch=fold.brokers[1].broker_epoch - 1, fenced=1)
    with pytest.raises(AssertionError):
        fold.record(MetadataRecord(fold.offset + 2, rec.BROKER_REGISTRATION_CHANGE_RECORD, 0, stale))


def test_fenced_brokers_come_back_with_and_without_a_new_registration(tmp_path: Path) -> None:
    generate_log(tmp_path, brokers=6, topics=4, partitions=40, records=20_000, seed=5)
    epochs: dict[int, int] = {}
    same_epoch_unfences = new_epoch_unfences = 0
    last_unfenced_epoch: dict[int, int] = {}
    for b in open_history(tmp_path).batches():
        for r in b.records:
            if r.type == rec.REGISTER_BROKER_RECORD:
                epochs[r.data.broker_id] = r.data.broker_epoch
            elif r.type == rec.BROKER_REGISTRATION_CHANGE_RECORD and r.data.fenced == -1:
                bid = r.data.broker_id
                if last_unfenced_epoch.get(bid) == epochs[bid]:
                    same_epoch_unfences += 1
                elif bid in last_unfenced_epoch:
                    new_epoch_unfences += 1
                last_unfenced_epoch[bid] = epochs[bid]
    assert same_epoch_unfences > 0 and new_epoch_unfences > 0


def test_a_4x_log_keeps_elrs_as_a_controller_does_and_the_replay_agrees(tmp_path: Path) -> None:
    """From 4.0-IV0 upgraded to 4.4-IV2: ELRs written as PartitionChangeBuilder writes them (the
    fold checks their invariants), last known ELRs from unclean shutdowns, ClearElrRecords after
    min.insync.replicas changes and inside one-delta transactions that remove and create topics,
    cordon changes from 4.3-IV0, controller (un)registrations; the replay's image holds the same
    ELRs as the model's records say, partition by partition, and so does each snapshot."""
    from ctrlbatch.replay.image.deltas import group_deltas
    from ctrlbatch.replay.image.image import EMPTY_IMAGE, apply_delta

    result = generate_log(tmp_path, brokers=5, topics=6, partitions=120, records=12_000, seed=44, metadata_version=22,
                          upgrade_to=33, snapshots=2)
    batches = list(open_history(tmp_path).batches())
    fold = _fold(batches)
    assert fold.elr_enabled and fold.level == 33
    changes = [r for b in batches for r in b.records if r.type == rec.PARTITION_CHANGE_RECORD]
    assert any(r.data.eligible_leader_replicas for r in changes) and any(r.data.last_known_elr for r in changes)
    assert any(r.data.eligible_leader_replicas == () for r in changes)  # an ELR emptied again
    churn = [b for b in batches if {rec.BEGIN_TRANSACTION_RECORD, rec.REMOVE_TOPIC_RECORD, rec.TOPIC_RECORD,
                                    rec.CLEAR_ELR_RECORD} <= {r.type for r in b.records}]
    assert churn, "a ClearElrRecord in one delta with a removed and a created topic"
    cordons = [r for b in batches for r in b.records if r.type == rec.BROKER_REGISTRATION_CHANGE_RECORD
               and r.version == 3]
    assert {r.data.cordoned_log_dirs != () for r in cordons} == {True, False}
    for name in ("REGISTER_CONTROLLER_RECORD", "UNREGISTER_CONTROLLER_RECORD", "CONFIG_RECORD", "CLEAR_ELR_RECORD"):
        assert result.by_type[name] > 0, name
    image = EMPTY_IMAGE
    for delta in group_deltas(batches):
        image, _changes = apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)

    def state(p: Any) -> tuple[Any, ...]:
        return (p.leader, p.leader_epoch, p.partition_epoch, tuple(p.isr), tuple(p.replicas), tuple(p.elr),
                tuple(p.last_known_elr))

    assert set(image.topics) == set(fold.topics)
    for tid, (_name, parts) in fold.topics.items():
        assert {i: state(p) for i, p in parts.items()} == {i: state(p) for i, p in image.topics[tid].partitions.items()}
    assert any(p.elr for t in image.topics.values() for p in t.partitions.values())
    assert {b: r.cordoned_log_dirs for b, r in image.brokers.items()} == fold.cordoned
    for path in result.snapshots:  # a snapshot's PartitionRecords carry the ELRs of that moment
        h = open_history(tmp_path, from_snapshot=path)
        assert h.snapshot is not None
        snap, _ = apply_delta(EMPTY_IMAGE, [r for b in h.snapshot_batches() for r in b.records])
        upto = EMPTY_IMAGE
        for delta in group_deltas([b for b in batches if b.last_offset < h.snapshot.end_offset]):
            upto, _ = apply_delta(upto, delta.records)
        assert snap.topics == upto.topics and snap.brokers == upto.brokers
