"""The one reading loop: a read resumed anywhere goes on exactly as the whole read does; batch
epochs are checked (a flipped partitionLeaderEpoch, outside the CRC, is reported); with
--skip-corrupt every skipped span is reported with its byte offset and length."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.generate.writer import encode_batch
from ctrlbatch.replay.log.errors import ReadStats, ReplayInputError
from ctrlbatch.replay.log.reading import EpochCheck, ReadFrom
from ctrlbatch.replay.log.records import LEADER_CHANGE, TOPIC_RECORD, LogBatch
from ctrlbatch.replay.log.segments import read_segment, scan_batches
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.schema.record_classes import control_class, encode_control, encode_value, record_class

SAMPLE = Path(__file__).resolve().parents[2].parent / "shared" / "samples" / "kraft-single-node"
_EPOCH_AT = 12  # partitionLeaderEpoch: bytes 12-15 of a batch, outside the CRC-32C


def _topic(name: str) -> bytes:
    cls: Any = record_class(TOPIC_RECORD)
    return encode_value(TOPIC_RECORD, 0, cls(name=name))


def _sample_copy(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(SAMPLE / "__cluster_metadata-0", data / "__cluster_metadata-0")
    return data / "__cluster_metadata-0" / "00000000000000000000.log"


def _set_epoch(segment: Path, position: int, epoch: int) -> None:
    raw = bytearray(segment.read_bytes())
    struct.pack_into(">i", raw, position + _EPOCH_AT, epoch)
    segment.write_bytes(bytes(raw))


def _data_batch_positions(segment: Path) -> list[tuple[int, int]]:
    """(position, length) of the sample's data batches holding records (not NoOp-only)."""
    lengths = {p.position: p.length for p in scan_batches(segment)}
    return [(b.position, lengths[b.position]) for b in read_segment(segment) if b.records]


@pytest.mark.parametrize(("epoch", "reason"), [
    (2, "epoch 2 begins without a LeaderChange control batch (the epoch before it: 1)"),
    (0, "batch epoch 0 is below the epoch 1 before it: epochs never go down along the log"),
])
def test_a_flipped_batch_epoch_in_the_real_sample_is_named_or_skipped(tmp_path: Path, epoch: int, reason: str) -> None:
    segment = _sample_copy(tmp_path)
    position, length = _data_batch_positions(segment)[10]
    _set_epoch(segment, position, epoch)
    with pytest.raises(ReplayInputError) as e:
        list(open_history(segment.parent.parent).batches())
    assert str(e.value).startswith(f"{segment}, byte offset {position}: {reason}")
    history = open_history(segment.parent.parent, skip_corrupt=True)
    batches = list(history.batches())
    assert position not in {b.position for b in batches} and len(batches) == 4814 - 1
    [skipped] = history.stats.corrupt
    assert (skipped.position, skipped.span) == (position, (position, length))
    assert str(skipped) == (
        f"{segment}, byte offset {position}: {skipped.reason} (skipped {length} bytes)"
    ) and skipped.reason.startswith(reason)
    assert history.stats.skipped_bytes == length


def test_a_new_epoch_opens_with_a_leader_change(tmp_path: Path) -> None:
    cls: Any = control_class(LEADER_CHANGE)
    batches = [
        encode_batch(0, 1, 10, [_topic("a")]),
        encode_batch(1, 2, 11, [encode_control(cls(leader_id=2))], control_types=[LEADER_CHANGE]),
        encode_batch(2, 2, 12, [_topic("b")]),
        encode_batch(3, 4, 13, [encode_control(cls(leader_id=3))], control_types=[LEADER_CHANGE]),
        encode_batch(4, 4, 14, [_topic("c")]),
    ]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(batches))
    assert [b.epoch for b in open_history(path).batches()] == [1, 2, 2, 4, 4]
    # the same change without its LeaderChange: the data batch that raises the epoch is refused
    path.write_bytes(batches[0] + encode_batch(1, 2, 11, [_topic("x")]) + batches[2])
    with pytest.raises(ReplayInputError, match=rf"byte offset {len(batches[0])}: epoch 2 begins without a LeaderChange"):
        list(open_history(path).batches())


def test_the_first_batch_read_may_be_of_any_epoch_but_not_negative() -> None:
    first = LogBatch(5, 5, 7, 0, False, (), (), 1, "f", 0)
    assert EpochCheck().problem(first) is None
    assert EpochCheck().problem(LogBatch(5, 5, -3, 0, False, (), (), 1, "f", 0)) == (
        "batch epoch -3 is negative (KRaft epochs start at 0)"
    )
    text = EpochCheck(text=True)  # text inputs without an epoch (-1) are not checked
    assert text.problem(LogBatch(5, 5, -1, 0, False, (), (), 1, "f", 0)) is None and text.epoch == -1


def test_a_bad_length_drops_the_rest_of_the_file_and_says_how_much(tmp_path: Path) -> None:
    good = encode_batch(0, 1, 10, [_topic("a")])
    bad = bytearray(encode_batch(1, 1, 11, [_topic("b")]))
    struct.pack_into(">i", bad, 8, 0x7FFF_FFF0)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(good + bytes(bad) + encode_batch(2, 1, 12, [_topic("c")]))
    history = open_history(path, skip_corrupt=True)
    assert [b.base_offset for b in history.batches()] == [0]
    [skipped] = history.stats.corrupt
    rest = path.stat().st_size - len(good)
    assert skipped.position == len(good) + 8 and skipped.span == (len(good), rest)
    assert str(skipped).endswith(f"(skipped {rest} bytes from byte offset {len(good)})")
    assert history.stats.to_dict()["skipped_bytes"] == rest


def _read_all(history: Any) -> list[tuple[int, int, int]]:
    return [(b.base_offset, b.position, b.epoch) for b in history.batches()]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), cuts=st.lists(st.integers(0, 10**6), max_size=6), flips=st.integers(0, 4))
def test_a_read_resumed_after_any_batch_goes_on_as_the_whole_read(
    tmp_path_factory: pytest.TempPathFactory, seed: int, cuts: list[int], flips: int
) -> None:
    """Reading the log in pieces [a, b), each starting where a whole read's resume() said after
    some batch, yields the same batches, counters and corrupt entries as one read, epoch flips
    included: what a Spark unit reads is what the sequential engine reads there."""
    base = tmp_path_factory.mktemp("log")
    generate_log(base / "data", brokers=3, topics=3, partitions=6, records=600, seed=seed, segment_bytes=4096)
    segments = sorted((base / "data" / "__cluster_metadata-0").glob("*.log"))
    for i in range(flips):  # flip the epoch of some batches (skipped and reported with skip_corrupt)
        seg = segments[(seed + i) % len(segments)]
        pointers = list(scan_batches(seg))
        _set_epoch(seg, pointers[(seed * (i + 3)) % len(pointers)].position, 77 + i)
    whole = open_history(base / "data", skip_corrupt=True)
    expected = _read_all(whole)
    if not flips:
        assert whole.stats.corrupt == []
    stops = sorted({c % (len(expected) + 1) for c in cuts})
    starts: list[ReadFrom] = [ReadFrom()]
    full = open_history(base / "data", skip_corrupt=True)
    walker = full.reader()
    for n, _b in enumerate(walker, start=1):
        if n in stops:
            starts.append(walker.resume())
    joined = open_history(base / "data", skip_corrupt=True)
    batches: list[tuple[int, int, int]] = []
    for a, b in zip(starts, [*starts[1:], None], strict=True):
        batches += [(x.base_offset, x.position, x.epoch) for x in joined.reader(a, None if b is None else b.at)]
    assert batches == expected
    assert joined.stats.to_dict() == whole.stats.to_dict()


def _batch(epoch: int, leader_change: bool, n: int) -> LogBatch:
    from ctrlbatch.replay.log.records import ControlRecord

    controls = (ControlRecord(n, LEADER_CHANGE, None),) if leader_change else ()
    return LogBatch(n, n, epoch, 0, leader_change, (), controls, 0 if leader_change else 1, "f", n)


@given(st.lists(st.tuples(st.integers(0, 6), st.booleans()), max_size=40))
def test_accepted_epochs_never_go_down_and_rise_only_at_a_leader_change(steps: list[tuple[int, bool]]) -> None:
    check = EpochCheck()
    accepted: list[LogBatch] = []
    for n, (epoch, leader) in enumerate(steps):
        batch = _batch(epoch, leader, n)
        if check.problem(batch) is None:
            accepted.append(batch)
    assert accepted[:1] == [_batch(*steps[0], 0)] if steps else accepted == []
    for before, after in zip(accepted, accepted[1:], strict=False):
        assert after.epoch >= before.epoch
        assert after.epoch == before.epoch or after.control
    # a log as KRaft writes it (each epoch opened by its LeaderChange) is accepted whole
    check = EpochCheck()
    epoch = 0
    for n, (rise, _leader) in enumerate(steps):
        if rise > 4:
            epoch += 1
        assert check.problem(_batch(epoch, rise > 4, n)) is None


DUMP_EXCERPT = Path(__file__).resolve().parent / "data" / "dump-excerpt.txt"  # lines 12-13: batch 9; 17-18: the last


@pytest.mark.parametrize(("old", "new", "position", "span"), [
    ("crc: 2 isvalid: true", "crc: 2 isvalid: false", 12, (12, 2)),  # an invalid batch: its line and its record's
    ("lastOffset: 9 count: 1", "lastOffset: 9 count: 2", 14, (12, 2)),  # found short at the next batch line
    ('"featureLevel":19}}', '"featureLevel":19', 7, (5, 5)),  # a bad record drops its whole batch
    ('"NO_OP_RECORD","version":0', '"NO_OP_RECORD","version":"x"', 18, (17, 2)),  # the last batch: up to the end
])
def test_a_dropped_dump_batch_reports_the_lines_it_drops(
    tmp_path: Path, old: str, new: str, position: int, span: tuple[int, int]
) -> None:
    from ctrlbatch.replay.log.dumplog import read_dump

    text = DUMP_EXCERPT.read_text()
    assert text.count(old) == 1 and len(text.splitlines()) == 18
    path = tmp_path / "d.txt"
    path.write_text(text.replace(old, new))
    stats = ReadStats()
    list(read_dump(path, skip_corrupt=True, stats=stats))
    [entry] = stats.corrupt
    assert (entry.position, entry.unit, entry.span) == (position, "line", span)
    first, count = span
    at = "" if first == position else f" from line {first}"
    assert str(entry).endswith(f"(skipped {count} lines{at})") and stats.skipped_bytes == 0


def _replayed(data: Path, skip_corrupt: bool) -> tuple[int, dict[str, Any], ReadStats]:
    from ctrlbatch.replay.run.job import ReplayJob, _summary_dict, execute

    outcome = execute(ReplayJob(str(data), engine="local", skip_corrupt=skip_corrupt, progress=False), None)
    summary = _summary_dict(outcome.summary)
    return outcome.rows, {k: summary[k] for k in ("by_api", "totals", "deltas")}, outcome.stats


@pytest.mark.parametrize("later", [0, 1, 6])
def test_a_repeated_batch_is_skipped_not_applied_again(tmp_path: Path, later: int) -> None:
    """A data batch repeated in the log (right after itself or further on) is reported as skipped
    and the replay's requests are those of the log without it (issue 24: it used to be applied twice)."""
    segment = _sample_copy(tmp_path)
    clean = _replayed(segment.parent.parent, False)
    raw = segment.read_bytes()
    batches = _data_batch_positions(segment)
    assert len(batches) >= 12
    position, length = batches[4]
    insert_at = batches[4 + later][0] + batches[4 + later][1]
    segment.write_bytes(raw[:insert_at] + raw[position:position + length] + raw[insert_at:])
    with pytest.raises(ReplayInputError, match="offsets go backwards: the batch starts at"):
        _replayed(segment.parent.parent, False)
    rows, summary, stats = _replayed(segment.parent.parent, True)
    assert (rows, summary) == clean[:2]
    [skipped] = stats.corrupt
    assert skipped.position == insert_at and skipped.span == (insert_at, length) and "repeated batch" in skipped.reason
    assert stats.batches == clean[2].batches


def test_skipped_pieces_are_counted_but_only_the_first_are_kept() -> None:
    from ctrlbatch.replay.log.errors import CORRUPT_KEPT

    stats = ReadStats()
    for i in range(CORRUPT_KEPT * 30):
        stats.skip_or_raise(ReplayInputError("f", i * 10, f"bad record at {i}"), True, span=(i * 10, 10))
    other = ReadStats()
    other.skip_or_raise(ReplayInputError("g", 3, "truncated batch"), True, span=(3, 7))
    stats.merge(other)
    assert len(stats.corrupt) == CORRUPT_KEPT and stats.corrupt_count == CORRUPT_KEPT * 30 + 1
    assert stats.skipped_bytes == CORRUPT_KEPT * 300 + 7
    assert dict(stats.corrupt.kinds) == {"bad record at #": CORRUPT_KEPT * 30, "truncated batch": 1}
    d = stats.to_dict()
    assert d["corrupt_count"] == CORRUPT_KEPT * 30 + 1 and len(d["corrupt"]) == CORRUPT_KEPT  # type: ignore[arg-type]
    import pickle

    back = pickle.loads(pickle.dumps(stats))
    assert back.corrupt_count == stats.corrupt_count and list(back.corrupt) == list(stats.corrupt)
