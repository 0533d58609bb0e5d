"""The kraft_metadata stream's offsets without Spark: what the driver plans and executors read
over a log a test writer appends to (stream.py's rules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from ctrlbatch.replay.tables.options import parse_options
from ctrlbatch.replay.tables.stream import Follower, StreamError, StreamPart, read_stream_part

from .tables_logs import LiveLog


def follow(live: LiveLog) -> Follower:
    return Follower(parse_options({"path": str(live.root), "includeNoOps": "true"}))


def rows(follower: Follower, start: dict[str, Any], end: dict[str, Any]) -> list[int]:
    out: list[int] = []
    for part in follower.partitions(start, end):
        table = pa.Table.from_batches(list(read_stream_part(follower.options, StreamPart(*part))))
        out += table["offset"].to_pylist()
    return out


def test_complete_batches_only_then_a_new_segment(tmp_path: Path) -> None:
    live = LiveLog(tmp_path)
    f = follow(live)
    start = f.initial_offset()
    assert start == {"offset": 0, "crc": -1, "epoch": -1}
    assert f.latest_offset(start) == start  # an empty segment: nothing yet
    live.add(0, 4)
    half = live.batch(5)
    live.append(half[:20])  # a batch being written
    end = f.latest_offset(start)
    assert end["offset"] == 5 and rows(f, start, end) == [0, 1, 2, 3, 4]
    assert f.latest_offset(end) == end  # still partial
    live.append(half[20:])
    live.roll(6)
    live.add(6, 8)
    end2 = f.latest_offset(end)
    assert end2["offset"] == 9 and rows(f, end, end2) == [5, 6, 7, 8]
    # planning is a pure function of the offsets: a new follower (a restarted driver) plans the same
    again = follow(live)
    assert again.partitions(end, end2) == f.partitions(end, end2)
    assert rows(again, start, end2) == list(range(9))


def test_a_batch_changed_under_an_emitted_offset_stops_the_stream(tmp_path: Path) -> None:
    live = LiveLog(tmp_path)
    f = follow(live)
    live.add(0, 4)
    end = f.latest_offset(f.initial_offset())
    live.rewrite_last(4, timestamp=9_000)  # KAFKA-14704: the tail truncated and written again
    live.add(5, 6)
    with pytest.raises(StreamError) as e:
        f.latest_offset(end)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"{live.segment}, byte offset {4 * len(live.batch(0))}: the batch of offsets 4-4 changed "
                              "after offset 4 was emitted")
    assert "KAFKA-14704" in message
    with pytest.raises(StreamError):
        follow(live).partitions(end, {"offset": 7, "crc": 0, "epoch": 1})  # a restarted driver too


def test_a_shorter_log_stops_the_stream(tmp_path: Path) -> None:
    live = LiveLog(tmp_path)
    f = follow(live)
    live.add(0, 6)
    end = f.latest_offset(f.initial_offset())
    live.segment.write_bytes(b"".join(live.batch(o) for o in range(3)))  # truncated to offsets 0-2
    with pytest.raises(StreamError, match="the log now ends at offset 3, before offset 7 already emitted"):
        follow(live).latest_offset(end)


def test_an_offset_no_longer_on_disk_stops_the_stream(tmp_path: Path) -> None:
    live = LiveLog(tmp_path)
    f = follow(live)
    live.add(0, 2)
    end = f.latest_offset(f.initial_offset())
    live.roll(3)
    live.add(3, 5)
    live.roll(6)
    live.add(6, 8)
    live.delete(0)
    live.delete(3)
    with pytest.raises(StreamError) as e:
        follow(live).latest_offset(end)
    assert str(e.value) == (
        f"{live.directory}: offset 3 is no longer on disk (the oldest segment {live.segment_path(6)} starts at offset "
        "6): the segments holding it were deleted (after a snapshot); restart the stream without its checkpoint")


def test_a_read_that_finds_another_batch_than_planned_fails(tmp_path: Path) -> None:
    live = LiveLog(tmp_path)
    f = follow(live)
    live.add(0, 3)
    start = f.initial_offset()
    end = f.latest_offset(start)
    parts = f.partitions(start, end)
    live.rewrite_last(3, timestamp=7_000)  # changed between planning and reading
    with pytest.raises(StreamError, match="changed after it was planned"):
        list(read_stream_part(f.options, StreamPart(*parts[0])))


def test_streams_refuse_a_snapshot_start_and_files(tmp_path: Path) -> None:
    live = LiveLog(tmp_path)
    with pytest.raises(ValueError, match="kraft_metadata option fromSnapshot: a stream follows the log only"):
        Follower(parse_options({"path": str(live.root), "fromSnapshot": "newest"}))
    with pytest.raises(ValueError, match="is not a directory"):
        Follower(parse_options({"path": str(live.segment)}))


def test_a_missing_segment_stops_the_stream_instead_of_stalling(tmp_path: Path) -> None:
    from ctrlbatch.replay import ReplayInputError

    live = LiveLog(tmp_path)
    f = follow(live)
    live.add(0, 2)
    live.roll(5)  # offsets 3-4 are missing
    live.add(5, 6)
    with pytest.raises(ReplayInputError) as e:
        f.latest_offset(f.initial_offset())
    assert str(e.value) == f"{live.segment_path(5)}, byte offset 0: offsets skip 3..4: a segment overlaps or is missing"


def test_a_trigger_scans_only_the_new_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ctrlbatch.replay.tables import stream

    live = LiveLog(tmp_path)
    f = follow(live)
    live.add(0, 199)
    start = f.initial_offset()
    end = f.latest_offset(start)
    assert len(f.partitions(start, end)) == 1
    read: list[int] = []
    original = stream._headers

    def counting(path: str, position: int, last: bool) -> Any:
        for h in original(path, position, last):
            read.append(h.base_offset)
            yield h

    monkeypatch.setattr(stream, "_headers", counting)
    live.add(200, 202)
    end2 = f.latest_offset(end)
    parts = f.partitions(end, end2)
    # the new batches, then for the partitions the batch before the start (checked) and the range's headers
    assert end2["offset"] == 203 and read == [199, 200, 201, 202] + [199, 200, 201, 202]
    assert rows(f, end, end2) == [200, 201, 202] and parts == f.partitions(end, end2)


def test_a_backlog_is_read_in_parts_of_unit_bytes(tmp_path: Path) -> None:
    live = LiveLog(tmp_path)
    live.add(0, 99)
    live.roll(100)
    live.add(100, 149)
    size = len(live.batch(0))
    f = Follower(parse_options({"path": str(live.root), "includeNoOps": "true", "unitBytes": str(size * 30)}))
    start = f.initial_offset()
    end = f.latest_offset(start)
    parts = [StreamPart(*p) for p in f.partitions(start, end)]
    assert [(p.offset, p.end) for p in parts] == [(0, 30), (30, 60), (60, 90), (90, 120), (120, 150)]
    assert [p.epoch for p in parts] == [-1, 1, 1, 1, 1] and parts[3].segments[0] == str(live.segment_path(0))
    assert parts[4].segments[0] == str(live.segment_path(100)) and parts[4].position == 20 * size
    assert rows(f, start, end) == list(range(150))
