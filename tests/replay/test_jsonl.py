"""Text inputs: JSON lines (read and written) and kafka-dump-log output give the same LogBatch
values as the binary log; Kafka's JSON shape is produced exactly as the reference shows; bad
lines are named by file and line, or skipped and counted; mutated lines only ever raise
ReplayInputError."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.log.dumplog import read_dump
from ctrlbatch.replay.log.errors import ReadStats, ReplayInputError
from ctrlbatch.replay.log.jsonl import read_jsonl, write_jsonl
from ctrlbatch.replay.log.records import CONTROL_TYPE_NAMES, RECORD_TYPE_NAMES, LogBatch
from ctrlbatch.replay.log.segments import read_segment, scan_batches
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.schema.json_convert import to_json, uuid_from_json, uuid_to_json

SHARED = Path(os.environ.get("CTRLBATCH_SHARED", Path(__file__).resolve().parents[3] / "shared"))
LOG = SHARED / "samples" / "kraft-single-node" / "__cluster_metadata-0" / "00000000000000000000.log"
EXCERPT = Path(__file__).parent / "data" / "dump-excerpt.txt"


def _same(b: LogBatch) -> LogBatch:
    """A batch without where it was read from (source and position differ between forms)."""
    return attrs.evolve(b, source="", position=0)


def render_dump(path: Path, *, skip_record_metadata: bool = False) -> str:
    """kafka-dump-log --cluster-metadata-decoder output for a binary file, per the reference grammar."""
    out = [f"Dumping {path}", "Log starting offset: 0"]
    pointers = {p.position: p for p in scan_batches(path)}
    for b in read_segment(path):
        p = pointers[b.position]
        count = b.last_offset - b.base_offset + 1
        out.append(
            f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {count} baseSequence: -1 "
            f"lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: {b.epoch} "
            f"isTransactional: false isControl: {str(b.control).lower()} deleteHorizonMs: OptionalLong.empty "
            f"position: {b.position} CreateTime: {b.timestamp} size: {p.length} magic: 2 compresscodec: none "
            f"crc: 1 isvalid: true"
        )
        records = {r.offset: r for r in b.records}
        for offset in range(b.base_offset, b.last_offset + 1):
            meta = (
                ""
                if skip_record_metadata
                else (
                    f"| offset: {offset} CreateTime: {b.timestamp} keySize: -1 valueSize: 4 sequence: -1 headerKeys: []"
                )
            )
            if b.control:  # under --skip-record-metadata a control record line is empty
                c = next(c for c in b.control_records if c.offset == offset)
                out.append(f"{meta} controlType: {CONTROL_TYPE_NAMES[c.type]}({c.type})" if meta else "")
                continue
            r = records.get(offset)
            doc = (
                {"type": "NO_OP_RECORD", "version": 0, "data": {}}
                if r is None
                else {
                    "type": RECORD_TYPE_NAMES[r.type],
                    "version": r.version,
                    "data": to_json(r.data, r.version),
                }
            )
            out.append(f"{meta} payload: {json.dumps(doc, separators=(',', ':'))}")
    return "\n".join(out) + "\n"


def test_the_sample_through_json_lines_gives_equal_batches(tmp_path: Path) -> None:
    batches = list(read_segment(LOG))
    path = tmp_path / "sample.jsonl"
    with path.open("w") as fh:
        assert write_jsonl(batches, fh) == 4929  # offsets 0-4928, NoOps included
    stats = ReadStats()
    back = list(read_jsonl(path, stats=stats))
    assert [_same(b) for b in back] == [_same(b) for b in batches]
    assert stats.noops == 4801 and stats.batches == 4814
    assert back[1].source == f"<jsonl:{path}>" and back[1].position == 2


@pytest.mark.parametrize("skip_record_metadata", [False, True])
def test_the_sample_through_kafka_dump_log_text_gives_equal_batches(
    tmp_path: Path, skip_record_metadata: bool
) -> None:
    batches = list(read_segment(LOG))
    path = tmp_path / "sample.dump.txt"
    path.write_text(render_dump(LOG, skip_record_metadata=skip_record_metadata))
    h = open_history(path)
    back = list(h.batches())
    # the dump does not print the LeaderChangeMessage body: counted, not kept
    assert [_same(b) for b in back] == [attrs.evolve(_same(b), control_records=()) for b in batches]
    assert back[0].control and back[0].control_records == ()
    assert dict(h.stats.control_records) == {}
    assert dict(h.stats.unprinted) == ({} if skip_record_metadata else {"LEADER_CHANGE": 1})
    assert dict(h.stats.records) == {rec: n for rec, n in ReadStats_of(batches).records.items()}


def ReadStats_of(batches: list[LogBatch]) -> ReadStats:  # noqa: N802 - reads like the type it returns
    from ctrlbatch.replay.log.segments import count_batch

    stats = ReadStats()
    for b in batches:
        count_batch(stats, b)
    return stats


def test_json_shape_is_kafkas(tmp_path: Path) -> None:
    batches = list(read_dump(EXCERPT))
    assert [(b.base_offset, b.last_offset, b.control, len(b.records), b.noops) for b in batches] == [
        (0, 0, True, 0, 0),
        (1, 4, False, 4, 0),
        (6, 6, False, 1, 0),
        (9, 9, False, 1, 0),
        (4871, 4872, False, 2, 0),
        (4873, 4873, False, 0, 1),
    ]
    reg = batches[2].records[0]
    assert (reg.data.broker_id, reg.data.rack, reg.data.fenced, len(reg.data.log_dirs)) == (1, None, True, 1)
    # written back, each record is exactly the payload the reference shows
    lines = EXCERPT.read_text().splitlines()
    payloads = [json.loads(ln.split(" payload: ", 1)[1]) for ln in lines if " payload: " in ln]
    buf = io.StringIO()
    write_jsonl(batches, buf)
    ours = [json.loads(ln) for ln in buf.getvalue().splitlines()]
    assert [{k: d[k] for k in ("type", "version", "data")} for d in ours] == payloads
    assert [json.dumps(d["data"], separators=(",", ":")) for d in ours] == [
        ln.split('"data":', 1)[1][:-1] for ln in lines if " payload: " in ln
    ]  # same key order too
    pcr = batches[4].records[1].data
    assert (pcr.leader, pcr.isr, pcr.leader_recovery_state) == (
        -1,
        None,
        -1,
    )  # absent tagged fields: defaults


def test_the_dump_excerpt_holds_the_sample_records() -> None:
    binary = {r.offset: r for b in read_segment(LOG) for r in b.records}
    text = [r for b in read_dump(EXCERPT) for r in b.records]
    assert len(text) == 8 and all(binary[r.offset] == r for r in text)


def test_uuid_text_is_kafkas_url_safe_base64() -> None:
    u = uuid_from_json("_g4of-T3Rq-jr09kDxtjFA", "x")
    assert uuid_to_json(u) == "_g4of-T3Rq-jr09kDxtjFA" and len(u.bytes) == 16


def _jsonl(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "h.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


TOPIC = (
    '{"offset":%d,"type":"TOPIC_RECORD","version":0,"data":{"name":"t","topicId":"_g4of-T3Rq-jr09kDxtjFA"}}'
)


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ('{"offset":1,"type":"TOPIC_RECORD"', "invalid JSON"),
        (
            '{"offset":1,"type":"CLEAR_ALL_RECORD","version":0,"data":{}}',
            "unknown record type 'CLEAR_ALL_RECORD'",
        ),
        ('{"offset":1,"type":6,"version":0,"data":{}}', "unknown metadata record type 6"),
        ('{"offset":1,"type":"TOPIC_RECORD","version":1,"data":{}}', "unknown version 1 of TOPIC_RECORD"),
        (
            '{"offset":1,"type":"TOPIC_RECORD","version":0,"data":{"name":"t"}}',
            r"data.topicId: missing, and it is mandatory",
        ),
        (
            '{"offset":1,"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,"topicId":"_g4of-T3Rq-jr09kDxtjFA","leader":"x"}}',
            "data.leader: expected an int32",
        ),
        (
            '{"offset":0,"type":"NO_OP_RECORD","version":0,"data":{}}',
            "offset 0 is not after the previous record's offset 0",
        ),
        ('{"type":"NO_OP_RECORD","version":0,"data":{}}', "missing 'offset'"),
        ("[1, 2]", "expected a JSON object"),
    ],
)
def test_bad_lines_are_named_by_line_or_counted(tmp_path: Path, bad: str, reason: str) -> None:
    path = _jsonl(tmp_path, TOPIC % 0, bad, TOPIC % 5)
    with pytest.raises(ReplayInputError, match=f"{path.name}, line 2: .*{reason}") as e:
        list(read_jsonl(path))
    assert (e.value.position, e.value.unit) == (2, "line")
    stats = ReadStats()
    got = list(read_jsonl(path, skip_corrupt=True, stats=stats))
    assert [r.offset for b in got for r in b.records] == [0, 5]
    assert len(stats.corrupt) == 1 and stats.corrupt[0].position == 2


def test_batch_keys_group_lines_and_a_missing_one_makes_single_batches(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path,
        '{"offset":3,"type":"NO_OP_RECORD","version":0,"data":{},"batch":3,"epoch":4,"timestamp":99}',
        (TOPIC % 4)[:-1] + ',"batch":3,"epoch":4,"timestamp":99}',
        TOPIC % 5,
        TOPIC % 6,
        '{"offset":7,"type":"LEADER_CHANGE","version":0,"data":{"version":0,"leaderId":2,"voters":[],"grantingVoters":[]}}',
        '{"offset":8,"type":"LEADER_CHANGE","version":0,"data":null}',
    )
    stats = ReadStats()
    got = list(read_jsonl(path, stats=stats))
    assert [(b.base_offset, b.last_offset, b.epoch, b.timestamp, b.noops, b.control) for b in got] == [
        (3, 4, 4, 99, 1, False),
        (5, 5, -1, -1, 0, False),
        (6, 6, -1, -1, 0, False),
        (7, 7, -1, -1, 0, True),
        (8, 8, -1, -1, 0, True),
    ]
    assert got[3].control_records[0].data.leader_id == 2
    assert got[4].control_records == () and stats.unprinted["LEADER_CHANGE"] == 1  # a null body: counted


def _dump_with(tmp_path: Path, old: str, new: str) -> Path:
    text = EXCERPT.read_text()
    assert old in text
    path = tmp_path / "d.txt"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "line", "reason"),
    [
        ("crc: 2 isvalid: true", "crc: 2 isvalid: false", 12, "isvalid: false"),
        (
            'payload: {"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0',
            "payload: Error at 9, skipping. boom",
            13,
            "could not decode",
        ),
        (
            "lastOffset: 9 count: 1",
            "lastOffset: 9 count: 2",
            14,
            "batch at line 12 announces 2 records, 1 follow",
        ),
        ("Log starting offset: 0", "Found 12 invalid bytes at the end of x.log", 2, "Found 12 invalid bytes"),
        ('"featureLevel":19}}', '"featureLevel":19', 7, "invalid JSON payload"),
        ("| offset: 9 ", "| offset: 8 ", 13, "outside its batch"),
    ],
)
def test_bad_dump_lines_are_named(tmp_path: Path, old: str, new: str, line: int, reason: str) -> None:
    path = _dump_with(tmp_path, old, new)
    with pytest.raises(ReplayInputError, match=f"line {line}: .*{reason}"):
        list(read_dump(path))
    stats = ReadStats()
    got = list(read_dump(path, skip_corrupt=True, stats=stats))
    assert len(stats.corrupt) >= 1 and stats.corrupt[0].position == line
    assert len(got) >= 4


def test_a_dump_of_a_checkpoint_is_a_snapshot(tmp_path: Path) -> None:
    text = (
        "Dumping /x/00000000000000000042-0000000003.checkpoint\nSnapshot end offset: 42, epoch: 3\n"
        "baseOffset: 0 lastOffset: 0 count: 1 partitionLeaderEpoch: 3 isControl: true CreateTime: 5 isvalid: true\n"
        '| offset: 0 CreateTime: 5 keySize: 4 valueSize: 11 sequence: -1 headerKeys: [] SnapshotHeader {"version":0,"lastContainedLogTimestamp":5}\n'
        "baseOffset: 1 lastOffset: 1 count: 1 partitionLeaderEpoch: 3 isControl: false CreateTime: 5 isvalid: true\n"
        '| offset: 1 payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":21}}\n'
        "baseOffset: 2 lastOffset: 2 count: 1 partitionLeaderEpoch: 3 isControl: true CreateTime: 5 isvalid: true\n"
        '| offset: 2 SnapshotFooter {"version":0}\n'
    )
    path = tmp_path / "snap.txt"
    path.write_text(text)
    h = open_history(path)
    assert h.snapshot is not None and (h.snapshot.end_offset, h.snapshot.epoch) == (42, 3)
    snap = list(h.snapshot_batches())
    assert [b.control for b in snap] == [True, False, True]
    assert snap[0].control_records[0].data.last_contained_log_timestamp == 5
    assert list(h.batches()) == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    jsonl=st.booleans(),
    edits=st.lists(
        st.tuples(st.integers(0, 4000), st.sampled_from(list('{}[]",:0123456789ax -\n\xff'))), max_size=5
    ),
)
def test_mutated_text_raises_only_replay_input_error(
    tmp_path: Path, jsonl: bool, edits: list[tuple[int, str]]
) -> None:
    if jsonl:
        buf = io.StringIO()
        write_jsonl(read_dump(EXCERPT), buf)
        text = buf.getvalue()
    else:
        text = EXCERPT.read_text()
    chars = list(text)
    for at, ch in edits:
        if at < len(chars):
            chars[at] = ch
    path = tmp_path / ("m.jsonl" if jsonl else "m.txt")
    path.write_text("".join(chars), encoding="utf-8", errors="surrogateescape")
    reader = read_jsonl if jsonl else read_dump
    plain: list[LogBatch] | None = None
    try:
        plain = list(reader(path))
    except ReplayInputError as e:
        assert e.unit == "line" and e.position >= 1
    stats = ReadStats()
    got = list(reader(path, skip_corrupt=True, stats=stats))
    assert stats.batches == len(got)
    # never silently dropped: skipping reports something exactly when reading without it fails
    assert bool(stats.corrupt) == (plain is None)
    if plain is not None:
        assert got == plain


def test_a_short_dump_batch_loses_only_itself_when_skipping(tmp_path: Path) -> None:
    path = _dump_with(tmp_path, "lastOffset: 9 count: 1", "lastOffset: 9 count: 2")
    stats = ReadStats()
    got = list(read_dump(path, skip_corrupt=True, stats=stats))
    assert [b.base_offset for b in got] == [0, 1, 6, 4871, 4873]
    assert [c.position for c in stats.corrupt] == [14]


@pytest.mark.parametrize(
    "bad",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"offset":' + "9" * 5000 + "}",
        '{"offset":1,"type":"TOPIC_RECORD","version":0,"data":' + "[" * 50_000 + "}",
    ],
    ids=["deep nesting", "huge number", "deep data"],
)
def test_hostile_json_is_a_line_error(tmp_path: Path, bad: str) -> None:
    path = _jsonl(tmp_path, TOPIC % 0, bad)
    with pytest.raises(ReplayInputError, match="line 2: invalid JSON"):
        list(read_jsonl(path))
    dump = tmp_path / "d.txt"
    dump.write_text(
        "baseOffset: 0 lastOffset: 0 count: 1 partitionLeaderEpoch: 1 isControl: false CreateTime: 5 isvalid: true\n"
        f"| offset: 0 payload: {bad}\n"
    )
    with pytest.raises(ReplayInputError, match="line 2: invalid JSON payload"):
        list(read_dump(dump))


@pytest.mark.parametrize("form", ["jsonl", "dump"])
def test_an_overlong_line_is_named_and_never_held_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    """A line over MAX_LINE_BYTES (here just above the longest real line; the bad one runs on
    for 10x that) is an error naming its line, read in pieces; with skip_corrupt it is counted
    and the lines after it are read."""
    import ctrlbatch.replay.log.jsonl as jsonl

    limit = max(len(x) + 1 for x in EXCERPT.read_bytes().splitlines())
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", limit)
    if form == "jsonl":
        path = _jsonl(tmp_path, TOPIC % 0, '{"offset":1,' + " " * 10 * limit + "}", TOPIC % 5)
        read, line = read_jsonl, 2
    else:
        lines = EXCERPT.read_text().splitlines()
        lines.insert(2, "x" * 10 * limit)
        path = tmp_path / "d.txt"
        path.write_text("\n".join(lines) + "\n")
        read, line = read_dump, 3
    with pytest.raises(ReplayInputError, match=f"line {line}: the line is longer than {limit} bytes"):
        list(read(path))
    stats = ReadStats()
    got = list(read(path, skip_corrupt=True, stats=stats))
    assert [c.position for c in stats.corrupt] == [line]
    after = [r.offset for b in got for r in b.records]
    assert after and after[-1] == (5 if form == "jsonl" else max(after))
    if form == "dump":
        assert [b.base_offset for b in got] == [b.base_offset for b in read_dump(EXCERPT)]


# ---------------------------------------------------------------- numbers and strings at their limits

INT16 = (-(1 << 15), (1 << 15) - 1)
INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)
OFFSET = (0, INT64[1])
LINE_RANGES = {"offset": OFFSET, "batch": OFFSET, "epoch": INT32, "timestamp": INT64}
NOOP = '{"offset":%d,"type":"NO_OP_RECORD","version":0,"data":{}'


def _line_with(key: str, value: int) -> str:
    fields = {"offset": 1, "batch": 1, "epoch": 3, "timestamp": 5, key: value}
    return json.dumps({"type": "NO_OP_RECORD", "version": 0, "data": {}, **fields})


@pytest.mark.parametrize("key", sorted(LINE_RANGES))
def test_line_numbers_at_their_edges_are_read(tmp_path: Path, key: str) -> None:
    lo, hi = LINE_RANGES[key]
    for value in (lo, hi):
        path = _jsonl(tmp_path, _line_with(key, value))
        (batch,) = list(read_jsonl(path))  # "batch" only groups lines: read is all it can show
        got = {"offset": batch.last_offset, "batch": value, "epoch": batch.epoch, "timestamp": batch.timestamp}[key]
        assert got == value


@pytest.mark.parametrize("key", sorted(LINE_RANGES))
def test_line_numbers_beyond_their_range_name_line_and_field(tmp_path: Path, key: str) -> None:
    lo, hi = LINE_RANGES[key]
    for value in (lo - 1, hi + 1, 10**4000):
        path = _jsonl(tmp_path, TOPIC % 0, _line_with(key, value))
        with pytest.raises(ReplayInputError) as e:
            list(read_jsonl(path))
        text = str(e.value)
        assert text.startswith(f"{path}, line 2: \"{key}\" must be ") and f"({lo}..{hi})" in text, text
        assert "\n" not in text and len(text) < 300 + len(str(path))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(sorted(LINE_RANGES)), value=st.one_of(
    st.integers(-(1 << 70), 1 << 70), st.sampled_from([INT32[0] - 1, INT32[1] + 1, INT64[0] - 1, INT64[1] + 1])))
def test_a_line_number_is_accepted_exactly_in_its_range(tmp_path: Path, key: str, value: int) -> None:
    lo, hi = LINE_RANGES[key]
    path = _jsonl(tmp_path, _line_with(key, value))
    if lo <= value <= hi:
        assert len(list(read_jsonl(path))) == 1
    else:
        with pytest.raises(ReplayInputError, match=f'line 1: "{key}" must be'):
            list(read_jsonl(path))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("leader", INT32[1] + 1, "data.leader: expected an int32"),
        ("leader", INT32[0] - 1, "data.leader: expected an int32"),
        ("partitionId", 10**4000, "data.partitionId: expected an int32 .* got an integer of about"),
    ],
    ids=["int32 max + 1", "int32 min - 1", "4001 digits"],
)
def test_record_numbers_beyond_their_schema_type_are_line_errors(tmp_path: Path, field: str, value: int, message: str) -> None:
    data = {"partitionId": 0, "topicId": "_g4of-T3Rq-jr09kDxtjFA", "leader": 1, field: value}
    line = json.dumps({"offset": 1, "type": "PARTITION_CHANGE_RECORD", "version": 0, "data": data})
    path = _jsonl(tmp_path, TOPIC % 0, line)
    with pytest.raises(ReplayInputError, match=f"line 2: PARTITION_CHANGE_RECORD: {message}") as e:
        list(read_jsonl(path))
    assert len(str(e.value)) < 400


def _topic(name: str) -> str:
    return json.dumps({"offset": 1, "type": "TOPIC_RECORD", "version": 0,
                       "data": {"name": name, "topicId": "_g4of-T3Rq-jr09kDxtjFA"}})


def test_a_topic_name_is_at_most_kafkas_249_characters(tmp_path: Path) -> None:
    (batch,) = list(read_jsonl(_jsonl(tmp_path, _topic("t" * 249))))
    assert batch.records[0].data.name == "t" * 249
    path = _jsonl(tmp_path, _topic("t" * 250))
    with pytest.raises(ReplayInputError, match=r"line 1: TOPIC_RECORD: data.name: a name of 250 characters .* "
                       r"at most 249 \(Kafka's Topic.MAX_NAME_LENGTH") as e:
        list(read_jsonl(path))
    assert len(str(e.value)) < 400, "the message quotes only the start of the name"


def test_a_string_longer_than_kafkas_int16_length_is_refused_with_a_short_message(tmp_path: Path) -> None:
    big = "é" * 20_000  # 40,000 bytes of UTF-8 in 20,000 characters: the limit is in bytes
    line = json.dumps({"offset": 1, "type": "FEATURE_LEVEL_RECORD", "version": 0,
                       "data": {"name": big, "featureLevel": 1}}, ensure_ascii=False)
    path = _jsonl(tmp_path, line)
    with pytest.raises(ReplayInputError, match="data.name: a string of 40,000 bytes; Kafka allows at most 32,767") as e:
        list(read_jsonl(path))
    assert len(str(e.value)) < 400
    ok = json.dumps({"offset": 1, "type": "FEATURE_LEVEL_RECORD", "version": 0,
                     "data": {"name": "x" * 32_767, "featureLevel": 1}})
    assert len(list(read_jsonl(_jsonl(tmp_path, ok)))) == 1


def test_a_60_mb_topic_name_is_refused_at_its_line_within_bounded_memory(tmp_path: Path) -> None:
    """The issue's memory bomb, scaled to 4 MB: refused on its own line with a short message, by
    Kafka's bound on every record string, which a name that long passes first (the benchmark
    replay_abuse_bench.py runs the 60 MB line under a memory cap)."""
    path = _jsonl(tmp_path, TOPIC % 0, _topic("n" * (4 << 20)).replace('"offset": 1', '"offset": 2'))
    with pytest.raises(ReplayInputError, match="line 2: TOPIC_RECORD: data.name: a string of 4,194,304 bytes; "
                       "Kafka allows at most 32,767") as e:
        list(read_jsonl(path))
    assert len(str(e.value)) < 400


@pytest.mark.parametrize(
    ("field", "value"),
    [("partitionLeaderEpoch", 1 << 31), ("CreateTime", -(1 << 63) - 1), ("baseOffset", 1 << 63), ("lastOffset", -1)],
)
def test_dump_batch_numbers_beyond_their_range_name_line_and_field(tmp_path: Path, field: str, value: int) -> None:
    fields = {"baseOffset": 0, "lastOffset": 0, "partitionLeaderEpoch": 1, "CreateTime": 5, field: value}
    dump = tmp_path / "d.txt"
    dump.write_text(
        f"baseOffset: {fields['baseOffset']} lastOffset: {fields['lastOffset']} count: 1 "
        f"partitionLeaderEpoch: {fields['partitionLeaderEpoch']} isControl: false CreateTime: {fields['CreateTime']} "
        "isvalid: true\n| offset: 0 payload: {\"type\":\"NO_OP_RECORD\",\"version\":0,\"data\":{}}\n"
    )
    with pytest.raises(ReplayInputError, match=f'line 1: "{field}" must be '):
        list(read_dump(dump))
