"""log_rows (the records table's reading loop) against the shared loop, on sound and damaged logs.

The reference is the shared reading loop itself (History.reader in the JSON form, every batch
through RecordColumns.add): log_rows must give the same rows, raise the same one-line error and
report the same skipped pieces and spans, on the generated logs and on copies damaged anywhere:
random bytes overwritten, with the CRC left wrong (the batch is corrupt) or made right again (the
records' framing, offsets, epochs and values are then what differs), in every partitioning.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import crc32c
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay import ReplayInputError, open_history
from ctrlbatch.replay.log.reading import ReadFrom
from ctrlbatch.replay.log.records import LogBatch
from ctrlbatch.replay.log.segments import scan_batches
from ctrlbatch.replay.tables.json_fused import JSON_FORM
from ctrlbatch.replay.tables.log_rows import log_rows
from ctrlbatch.replay.tables.options import parse_options
from ctrlbatch.replay.tables.plan import Part, plan_parts
from ctrlbatch.replay.tables.record_rows import MAX_TIMESTAMP_MS, RecordColumns, record_batches
from ctrlbatch.replay.tables.schema import RECORDS_ARROW

from .tables_logs import make_logs

_CRC = struct.Struct(">I")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_logs(tmp_path_factory.mktemp("log-rows"))


def _read(path: Path, part: Part, *, skip_corrupt: bool, include_noops: bool, shared: bool) -> tuple[Any, ...]:
    """(rows, error text or None, skipped pieces) of one part, by log_rows or by the shared loop."""
    history = open_history(path, skip_corrupt=skip_corrupt)
    reader = history.reader(ReadFrom(*part.begin), part.stop, form=JSON_FORM)
    seg, pos = part.begin
    drop = (history.segments[seg], pos) if part.overlap else None
    out: list[pa.RecordBatch] = []
    error = None
    try:
        if shared:
            def kept() -> Iterator[LogBatch]:
                first = drop
                for batch in reader:
                    if first is None or (batch.source, batch.position) != first:
                        yield batch
                    first = None

            out.extend(record_batches(kept(), include_noops=include_noops, rows=61))  # streamed, as log_rows
        else:
            out.extend(log_rows(reader, RecordColumns(include_noops=include_noops), 61, drop))
    except ReplayInputError as e:
        error = str(e)
    rows = pa.Table.from_batches(out, schema=RECORDS_ARROW).to_pylist()
    return rows, error, [(c.position, c.reason, c.span) for c in history.stats.corrupt], history.stats.corrupt_count


def _same(path: Path, unit: int, *, skip_corrupt: bool, include_noops: bool) -> None:
    parts = [p for p in plan_parts(parse_options({"path": str(path), "unitBytes": str(unit)})) if p.kind == "log"]
    assert parts
    for part in parts:
        ours = _read(path, part, skip_corrupt=skip_corrupt, include_noops=include_noops, shared=False)
        ref = _read(path, part, skip_corrupt=skip_corrupt, include_noops=include_noops, shared=True)
        assert ours == ref, part


@pytest.mark.parametrize("name", ["3x", "4x", "corrupt"])
@pytest.mark.parametrize("include_noops", [False, True])
def test_log_rows_are_the_shared_loops_rows(logs: dict[str, Path], name: str, include_noops: bool) -> None:
    for unit in (3_000, 1 << 30):
        _same(logs[name], unit, skip_corrupt=name == "corrupt", include_noops=include_noops)
    rows = _read(logs[name], Part(0, "log"), skip_corrupt=True, include_noops=include_noops, shared=False)[0]
    assert len(rows) > 1_000  # the logs are not empty: the equality says something


def _damage(src: Path, dst: Path, hits: list[tuple[int, int, int]], fix_crc: bool) -> None:
    """A copy of src with, for each hit (segment pick, batch pick, byte pick), one byte of a batch
    overwritten; fix_crc: then the batch's CRC made right for its new bytes (when its length
    still fits)."""
    shutil.copytree(src, dst)
    segments = sorted((dst / "__cluster_metadata-0").glob("*.log"))
    for seg_pick, batch_pick, byte_pick in hits:
        seg = segments[seg_pick % len(segments)]
        pointers = list(scan_batches(src / seg.parent.name / seg.name))  # the undamaged batches
        hit = pointers[batch_pick % len(pointers)]
        data = bytearray(seg.read_bytes())
        at = hit.position + byte_pick % hit.length
        data[at] = (data[at] + 1 + byte_pick // hit.length % 255) % 256
        if fix_crc and not hit.position + 17 <= at < hit.position + 21:
            body = bytes(data[hit.position + 21 : hit.position + hit.length])
            data[hit.position + 17 : hit.position + 21] = _CRC.pack(crc32c.crc32c(body))
        seg.write_bytes(bytes(data))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    hits=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 10_000), st.integers(0, 100_000)), min_size=1,
                  max_size=3),
    fix_crc=st.booleans(),
    skip_corrupt=st.booleans(),
    include_noops=st.booleans(),
    unit=st.sampled_from([2_000, 17_000, 1 << 30]),
)
def test_a_damaged_log_gives_the_shared_loops_rows_errors_and_skips(
    logs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory, hits: list[tuple[int, int, int]], fix_crc: bool,
    skip_corrupt: bool, include_noops: bool, unit: int,
) -> None:
    dst = tmp_path_factory.mktemp("damaged") / "log"
    _damage(logs["4x"], dst, hits, fix_crc)
    _same(dst, unit, skip_corrupt=skip_corrupt, include_noops=include_noops)


def test_a_segment_whose_first_batch_is_not_at_its_names_offset_fails_as_in_the_shared_loop(
    logs: dict[str, Path], tmp_path: Path
) -> None:
    dst = tmp_path / "log"
    _damage(logs["3x"], dst, [(0, 0, 7)], fix_crc=True)  # the first batch's base offset + 1 (outside the CRC)
    ours = _read(dst, Part(0, "log"), skip_corrupt=True, include_noops=False, shared=False)
    assert ours == _read(dst, Part(0, "log"), skip_corrupt=True, include_noops=False, shared=True)
    assert ours[1] is not None and "the file name says the segment starts at offset 0" in ours[1]


def test_a_record_damaged_behind_a_right_crc_reads_as_in_the_shared_loop(logs: dict[str, Path], tmp_path: Path) -> None:
    seg = sorted((logs["3x"] / "__cluster_metadata-0").glob("*.log"))[0]
    pointers = list(scan_batches(seg))
    pick = max(range(len(pointers)), key=lambda i: pointers[i].length)  # a batch of several records
    clean = _read(logs["3x"], Part(0, "log"), skip_corrupt=False, include_noops=True, shared=False)
    for byte in (61, 62, 63, 64, 70, pointers[pick].length - 1):  # lengths, deltas, key, value, headers
        dst = tmp_path / f"log{byte}"
        _damage(logs["3x"], dst, [(0, pick, byte)], fix_crc=True)
        ours = _read(dst, Part(0, "log"), skip_corrupt=False, include_noops=True, shared=False)
        assert ours == _read(dst, Part(0, "log"), skip_corrupt=False, include_noops=True, shared=True), byte
        assert ours != clean, byte


def _with_last_delta(batch: bytes, last_delta: int) -> bytes:
    """The batch with another lastOffsetDelta, its CRC made right."""
    data = bytearray(batch)
    data[23:27] = struct.pack(">i", last_delta)
    data[17:21] = _CRC.pack(crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


@pytest.mark.parametrize("include_noops", [False, True])
@pytest.mark.parametrize("skip_corrupt", [False, True])
def test_batches_outside_the_usual_case_read_as_in_the_shared_loop(
    tmp_path: Path, include_noops: bool, skip_corrupt: bool
) -> None:
    """NoOp batches whose offset range is longer than their records, a corrupt batch whose loss
    leaves no gap (a repeated batch) followed later by a gap: the rows, errors and skips are the
    shared loop's (the usual case may not take these batches, nor forget a skip)."""
    from ctrlbatch.replay.generate.writer import encode_batch
    from ctrlbatch.replay.log.records import NOOP_VALUE

    from .tables_logs import LiveLog

    live = LiveLog(tmp_path)
    live.add(0, 4)
    live.append(_with_last_delta(live.batch(5), 1))  # one NoOp record for offsets 5 and 6
    live.append(_with_last_delta(encode_batch(7, 1, 1_007, [NOOP_VALUE, NOOP_VALUE]), 2))  # two for 7..9
    live.add(10, 12)
    repeated = bytearray(live.batch(12))
    repeated[-1] ^= 0xFF  # a corrupt copy of the batch before: skipped, no offset lost
    live.append(bytes(repeated))
    live.add(13, 15)
    live.add(17, 18)  # offset 16 is missing
    ours = _read(live.root, Part(0, "log"), skip_corrupt=skip_corrupt, include_noops=include_noops, shared=False)
    ref = _read(live.root, Part(0, "log"), skip_corrupt=skip_corrupt, include_noops=include_noops, shared=True)
    assert ours == ref
    rows, error, skipped, _count = ours
    if include_noops and skip_corrupt:
        assert [r["offset"] for r in rows] == list(range(16)) + [17, 18]
    if skip_corrupt:
        reasons = [reason.split(":")[0] for _, reason, _ in skipped]
        assert error is None and reasons == ["CRC-32C mismatch", "offsets skip 16..16"]
    else:
        assert error is not None and "CRC-32C mismatch" in error


_MAX_TIMESTAMP_AT = 8 + 4 + 4 + 1 + 4 + 2 + 4 + 8  # a v2 batch's maxTimestamp (kafka-metadata-log-format.md)


@pytest.mark.parametrize("max_timestamp", [2**63 - 1, MAX_TIMESTAMP_MS + 1, MAX_TIMESTAMP_MS, -5])
def test_a_batch_time_after_the_year_9999_is_null_in_both_loops(
    logs: dict[str, Path], tmp_path: Path, max_timestamp: int
) -> None:
    """A CRC-valid batch whose maxTimestamp (ms) is after 9999-12-31T23:59:59.999Z (even past int64
    microseconds) or negative gives a null timestamp, never an overflow; that last millisecond is kept."""
    dst = tmp_path / "log"
    shutil.copytree(logs["4x"], dst)
    seg = sorted((dst / "__cluster_metadata-0").glob("*.log"))[0]
    first = next(iter(scan_batches(seg)))
    data = bytearray(seg.read_bytes())
    struct.pack_into(">q", data, first.position + _MAX_TIMESTAMP_AT, max_timestamp)
    body = bytes(data[first.position + 21 : first.position + first.length])
    data[first.position + 17 : first.position + 21] = _CRC.pack(crc32c.crc32c(body))
    seg.write_bytes(bytes(data))
    ours = _read(dst, Part(0, "log"), skip_corrupt=False, include_noops=True, shared=False)
    assert ours == _read(dst, Part(0, "log"), skip_corrupt=False, include_noops=True, shared=True)
    rows, error = ours[0], ours[1]
    assert error is None and rows
    stamp = rows[0]["timestamp"]
    if 0 <= max_timestamp <= MAX_TIMESTAMP_MS:
        assert stamp is not None and stamp == pa.scalar(max_timestamp * 1000, pa.timestamp("us", tz="UTC")).as_py()
    else:
        assert stamp is None
    assert rows[-1]["timestamp"] is not None  # the other batches keep theirs
