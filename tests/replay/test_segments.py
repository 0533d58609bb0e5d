"""Binary input: the real sample decodes completely (CRC-32C verified) with the counts its
SOURCE.txt states; the writer reproduces Kafka's bytes; corrupt batches are named by file and
byte offset, or skipped and counted; mutated bytes never raise anything but ReplayInputError."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.generate.writer import encode_batch, encode_batch_raw
from ctrlbatch.replay.log.errors import ReadStats, ReplayInputError
from ctrlbatch.replay.log.records import (
    LEADER_CHANGE,
    NOOP_VALUE,
    PARTITION_CHANGE_RECORD,
    TOPIC_RECORD,
    LogBatch,
)
from ctrlbatch.replay.log.segments import BatchPointer, decode_batch, read_segment, scan_batches
from ctrlbatch.replay.schema.record_classes import encode_control, encode_value, record_class

SHARED = Path(os.environ.get("CTRLBATCH_SHARED", Path(__file__).resolve().parents[3] / "shared"))
SAMPLE = SHARED / "samples" / "kraft-single-node"
LOG = SAMPLE / "__cluster_metadata-0" / "00000000000000000000.log"

# ../shared/samples/SOURCE.txt and kafka-metadata-records.md section 9.
SAMPLE_RECORDS = {
    "BEGIN_TRANSACTION_RECORD": 1,
    "FEATURE_LEVEL_RECORD": 1,
    "ZK_MIGRATION_STATE_RECORD": 1,
    "END_TRANSACTION_RECORD": 1,
    "REGISTER_CONTROLLER_RECORD": 1,
    "REGISTER_BROKER_RECORD": 2,
    "BROKER_REGISTRATION_CHANGE_RECORD": 3,
    "TOPIC_RECORD": 5,
    "PARTITION_RECORD": 54,
    "CONFIG_RECORD": 3,
    "PRODUCER_IDS_RECORD": 1,
    "PARTITION_CHANGE_RECORD": 54,
}


def test_the_sample_log_decodes_with_the_documented_counts() -> None:
    stats = ReadStats()
    batches = list(read_segment(LOG, stats=stats))
    assert len(batches) == stats.batches == 4814
    assert dict(stats.records) == SAMPLE_RECORDS
    assert stats.noops == 4801
    assert dict(stats.control_records) == {"LEADER_CHANGE": 1}
    assert stats.corrupt == []
    assert (batches[0].base_offset, batches[-1].last_offset) == (0, 4928)
    offsets = [r.offset for b in batches for r in b.records]
    assert offsets == sorted(offsets) and len(offsets) == 127
    assert {b.epoch for b in batches} == {1}
    lc = batches[0].control_records[0]
    assert (lc.type, lc.data.leader_id, [v.voter_id for v in lc.data.voters]) == (LEADER_CHANGE, 1, [1])


def test_sample_records_hold_what_the_dump_shows() -> None:
    by_offset = {r.offset: r for b in read_segment(LOG) for r in b.records}
    reg = by_offset[6]
    assert (reg.version, reg.data.broker_id, reg.data.broker_epoch, reg.data.fenced) == (3, 1, 6, True)
    assert [(e.name, e.host, e.port) for e in reg.data.end_points] == [("PLAINTEXT", "kafka", 9092)]
    assert by_offset[9].data.fenced == -1 and by_offset[4871].data.in_controlled_shutdown == 1
    pcr = by_offset[4872]
    assert (pcr.type, pcr.version, pcr.data.leader, pcr.data.isr) == (PARTITION_CHANGE_RECORD, 1, -1, None)
    assert by_offset[2].data.feature_level == 19


def test_scan_batches_reads_the_same_boundaries() -> None:
    pointers = list(scan_batches(LOG))
    batches = list(read_segment(LOG))
    assert [(p.position, p.base_offset, p.last_offset) for p in pointers] == [
        (b.position, b.base_offset, b.last_offset) for b in batches
    ]
    assert sum(p.length for p in pointers) == LOG.stat().st_size
    assert pointers[1] == BatchPointer(str(LOG), 91, 145, 1, 4)


def test_the_writer_reproduces_the_sample_byte_for_byte() -> None:
    raw = LOG.read_bytes()
    batches = list(read_segment(LOG))
    same = 0
    for i, b in enumerate(batches):
        end = batches[i + 1].position if i + 1 < len(batches) else len(raw)
        if b.control:
            enc = encode_batch(b.base_offset, b.epoch, b.timestamp, [encode_control(c.data) for c in b.control_records],
                               control_types=[c.type for c in b.control_records])
        elif b.records and b.noops:
            continue  # the order of NoOps among other records is not kept
        else:
            values = [encode_value(r.type, r.version, r.data) for r in b.records] or [NOOP_VALUE] * b.noops
            enc = encode_batch(b.base_offset, b.epoch, b.timestamp, values)
        assert enc == raw[b.position:end], b
        same += 1
    assert same >= 4800


def test_the_bootstrap_checkpoint() -> None:
    batches = list(read_segment(SAMPLE / "bootstrap.checkpoint"))
    assert [(b.position, b.control) for b in batches] == [(0, True), (83, False), (174, True)]
    assert batches[1].records[0].data.name == "metadata.version"


def _topic_value(name: str = "orders") -> bytes:
    cls = record_class(TOPIC_RECORD)
    assert cls is not None
    return encode_value(TOPIC_RECORD, 0, cls(name=name))


def _log(tmp_path: Path, *batches: bytes) -> Path:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(batches))
    return path


def test_a_topic_record_value_is_27_bytes_for_a_six_character_name() -> None:
    assert len(_topic_value()) == 27  # kafka-metadata-log-format.md section 1.5


def test_bad_crc_names_file_and_offset_and_can_be_skipped(tmp_path: Path) -> None:
    good = encode_batch(0, 1, 1000, [_topic_value()])
    bad = bytearray(encode_batch(1, 1, 1000, [_topic_value("b")]))
    bad[-3] ^= 0xFF
    last = encode_batch(2, 1, 1000, [NOOP_VALUE])
    path = _log(tmp_path, good, bytes(bad), last)
    with pytest.raises(ReplayInputError, match=rf"{path.name}, byte offset {len(good)}: CRC-32C mismatch") as e:
        list(read_segment(path))
    assert (e.value.source, e.value.position) == (str(path), len(good))
    stats = ReadStats()
    got = list(read_segment(path, skip_corrupt=True, stats=stats))
    assert [b.base_offset for b in got] == [0, 2]
    assert [str(c) for c in stats.corrupt] == [
        f"{path}, byte offset {len(good)}: {e.value.reason} (skipped {len(bad)} bytes)"
    ]
    assert stats.corrupt[0].span == (len(good), len(bad)) and stats.skipped_bytes == len(bad)


def test_truncated_batch_is_named_and_ends_the_file_when_skipping(tmp_path: Path) -> None:
    good = encode_batch(0, 1, 1000, [_topic_value()])
    path = _log(tmp_path, good, encode_batch(1, 1, 1000, [_topic_value()])[:-5])
    with pytest.raises(ReplayInputError, match=rf"byte offset {len(good)}: truncated batch"):
        list(read_segment(path))
    stats = ReadStats()
    assert len(list(read_segment(path, skip_corrupt=True, stats=stats))) == 1
    assert len(stats.corrupt) == 1 and "truncated" in stats.corrupt[0].reason
    remainder = path.stat().st_size - len(good)  # the dropped rest of the file, with its size
    assert stats.corrupt[0].span == (len(good), remainder) and f"(skipped {remainder} bytes)" in str(stats.corrupt[0])


def test_a_length_claiming_2_gb_is_refused_without_reading_it(tmp_path: Path) -> None:
    b = bytearray(encode_batch(0, 1, 1000, [_topic_value()]))
    struct.pack_into(">i", b, 8, 0x7FFF_FFF0)
    path = _log(tmp_path, bytes(b))
    with pytest.raises(ReplayInputError, match="byte offset 8: batch length 2147483632 is over 64 MiB"):
        list(read_segment(path))
    struct.pack_into(">i", b, 8, 5_000_000)
    path.write_bytes(bytes(b))
    with pytest.raises(ReplayInputError, match="truncated batch: its header says 5000012 bytes, only 95 remain"):
        list(read_segment(path))
    with pytest.raises(ReplayInputError, match="truncated batch"):
        list(scan_batches(path))


def _recrc(b: bytearray) -> bytes:
    struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21:])))
    return bytes(b)


def test_unknown_record_type_and_version_are_named(tmp_path: Path) -> None:
    unknown_type = encode_batch(0, 1, 1000, [b"\x01\x06\x00\x00"])
    with pytest.raises(ReplayInputError, match="record at offset 0: .*unknown metadata record type 6"):
        decode_batch(unknown_type, source="x.log", position=0)
    unknown_version = encode_batch(7, 1, 1000, [b"\x01\x05\x09" + _topic_value()[3:]])
    with pytest.raises(ReplayInputError, match="record at offset 7: .*unknown version 9 of PartitionChangeRecord"):
        decode_batch(unknown_version, source="x.log", position=0)
    frame0 = encode_batch(0, 1, 1000, [b"\x00\x14\x00\x00"])
    with pytest.raises(ReplayInputError, match="frame version 0"):
        decode_batch(frame0, source="x.log", position=0)


def test_compressed_and_wrong_magic_batches_are_refused() -> None:
    b = bytearray(encode_batch(0, 1, 1000, [NOOP_VALUE]))
    b[22] |= 4
    with pytest.raises(ReplayInputError, match="zstd-compressed batch"):
        decode_batch(_recrc(b), source="x.log", position=0)
    b = bytearray(encode_batch(0, 1, 1000, [NOOP_VALUE]))
    b[16] = 1
    with pytest.raises(ReplayInputError, match="byte offset 16: record batch magic 1"):
        decode_batch(bytes(b), source="x.log", position=0)


def test_a_record_body_with_trailing_bytes_is_refused() -> None:
    b = encode_batch(3, 1, 1000, [_topic_value() + b"\x00"])
    with pytest.raises(ReplayInputError, match="record at offset 3: .*TopicRecord v0: the body is 24 bytes but the value holds 25"):
        decode_batch(b, source="x.log", position=0)


def test_noops_are_counted_not_kept() -> None:
    b = decode_batch(encode_batch(10, 2, 5, [NOOP_VALUE, _topic_value(), NOOP_VALUE]), source="s", position=0)
    assert (b.noops, [r.offset for r in b.records], b.last_offset, b.epoch, b.timestamp) == (2, [11], 12, 2, 5)


_SEED_BATCHES = [
    encode_batch(0, 1, 1000, [_topic_value(), NOOP_VALUE]),
    encode_batch(2, 1, 1001, [NOOP_VALUE]),
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    which=st.integers(0, len(_SEED_BATCHES) - 1),
    edits=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), min_size=1, max_size=6),
    cut=st.integers(0, 200),
    fix_crc=st.booleans(),
)
def test_mutated_batches_raise_only_replay_input_error(
    tmp_path: Path, which: int, edits: list[tuple[int, int]], cut: int, fix_crc: bool
) -> None:
    b = bytearray(b"".join(_SEED_BATCHES))
    for at, value in edits:
        if at < len(b):
            b[at] = value
    if fix_crc and len(b) > 61:
        length = struct.unpack_from(">i", b, 8)[0]
        if 49 <= length <= len(b) - 12:
            struct.pack_into(">I", b, 17, crc32c.crc32c(bytes(b[21 : 12 + length])))
    data = bytes(b[: max(cut, len(b) - cut)]) if which else bytes(b)
    path = tmp_path / "m.log"
    path.write_bytes(data)
    plain: list[LogBatch] | None = None
    try:
        plain = list(read_segment(path))
    except ReplayInputError as e:
        assert e.source == str(path) and 0 <= e.position <= len(data)
    stats = ReadStats()
    got = list(read_segment(path, skip_corrupt=True, stats=stats))  # never raises when skipping
    assert stats.batches == len(got)
    # never silently dropped: skipping reports something exactly when reading without it fails
    assert bool(stats.corrupt) == (plain is None)
    if plain is not None:
        assert got == plain
    try:
        list(scan_batches(path))
    except ReplayInputError:
        pass


def test_batches_and_errors_unpickle_in_a_fresh_process(tmp_path: Path) -> None:
    """Spark ships LogBatch values and errors between processes that never built the classes."""
    import pickle
    import subprocess
    import sys

    batches = list(read_segment(LOG))[:200]
    err = ReplayInputError("x.log", 17, "CRC-32C mismatch")
    (tmp_path / "b.pickle").write_bytes(pickle.dumps((batches, err)))
    code = (
        "import pickle, sys; b, e = pickle.load(open(sys.argv[1], 'rb')); "
        "print(sum(len(x.records) for x in b), type(b[1].records[1].data).__qualname__, e.position, e.reason); "
        "sys.stdout.flush(); pickle.dump(b, open(sys.argv[1] + '.back', 'wb'))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "b.pickle")], capture_output=True, text=True, check=True)
    n = sum(len(x.records) for x in batches)
    assert out.stdout.split() == [str(n), "FeatureLevelRecord", "17", "CRC-32C", "mismatch"]
    assert pickle.loads((tmp_path / "b.pickle.back").read_bytes()) == batches


def _zz(n: int) -> bytes:
    """A zig-zag varint (small values only)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


@pytest.mark.parametrize(("headers", "extra"), [(3, b""), (1, b"\x02k"), (1_000_000_000, b"\x02k\x02v")])
def test_a_record_claiming_headers_it_does_not_hold_is_refused(headers: int, extra: bytes) -> None:
    """The record's header count must be met by bytes inside the record (Kafka's DefaultRecord
    reads each header and fails past the record's end); it is never quietly accepted."""
    value = _topic_value()
    body = b"\x00" + _zz(0) + _zz(0) + _zz(-1) + _zz(len(value)) + value + _zz(headers) + extra
    batch = encode_batch_raw(4, 1, 1000, 1, _zz(len(body)) + body, control=False)
    with pytest.raises(ReplayInputError, match=r"x.log, byte offset \d+: .*(ends inside a varint|does not end where)"):
        decode_batch(batch, source="x.log", position=0)
    good = b"\x00" + _zz(0) + _zz(0) + _zz(-1) + _zz(len(value)) + value + _zz(1) + b"\x02k\x02v"
    ok = decode_batch(encode_batch_raw(4, 1, 1000, 1, _zz(len(good)) + good, control=False), source="x", position=0)
    assert [r.data.name for r in ok.records] == ["orders"]


def test_skipping_corrupt_input_needs_counters_the_caller_reads(tmp_path: Path) -> None:
    """With skip_corrupt and no ReadStats the skipped batch would be counted nowhere: refused."""
    from ctrlbatch.replay.log.dumplog import read_dump
    from ctrlbatch.replay.log.jsonl import read_jsonl

    path = _log(tmp_path, encode_batch(0, 1, 1000, [_topic_value()]))
    for read in (read_segment, read_jsonl, read_dump):
        with pytest.raises(ValueError, match="stats: a ReadStats is required with skip_corrupt=True"):
            list(read(path, skip_corrupt=True))
    with pytest.raises(TypeError, match="stats: expected a ReadStats, got dict"):
        list(read_segment(path, stats={}))  # type: ignore[arg-type]
    assert len(list(read_segment(path))) == 1
