"""open_history: directories, single files and snapshots, segment order, the snapshot start,
format detection by content, and clear errors for what cannot be a history."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ctrlbatch.replay.generate.writer import encode_batch
from ctrlbatch.replay.log.errors import ReplayInputError
from ctrlbatch.replay.log.records import (
    FEATURE_LEVEL_RECORD,
    NOOP_VALUE,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    TOPIC_RECORD,
)
from ctrlbatch.replay.log.sources import Snapshot, detect_kind, open_history
from ctrlbatch.replay.schema.record_classes import control_class, encode_control, encode_value, record_class

SHARED = Path(os.environ.get("CTRLBATCH_SHARED", Path(__file__).resolve().parents[3] / "shared"))
SAMPLE = SHARED / "samples" / "kraft-single-node"


@pytest.mark.parametrize("where", ["data dir", "metadata dir", "segment"])
def test_the_sample_opens_from_every_level(where: str) -> None:
    path = {
        "data dir": SAMPLE,
        "metadata dir": SAMPLE / "__cluster_metadata-0",
        "segment": SAMPLE / "__cluster_metadata-0" / "00000000000000000000.log",
    }[where]
    h = open_history(path)
    assert h.snapshot is None and h.kind == "log"
    assert [Path(s).name for s in h.segments] == ["00000000000000000000.log"]
    batches = list(h.batches())
    assert len(batches) == 4814 and h.stats.batches == 4814 and h.stats.noops == 4801


def test_the_bootstrap_checkpoint_is_a_snapshot_at_offset_zero() -> None:
    h = open_history(SAMPLE / "bootstrap.checkpoint")
    assert h.snapshot == Snapshot(str(SAMPLE / "bootstrap.checkpoint"), 0, 0)
    assert [b.control for b in h.snapshot_batches()] == [True, False, True]
    assert list(h.batches()) == []


def _topic(name: str) -> bytes:
    cls = record_class(TOPIC_RECORD)
    assert cls is not None
    return encode_value(TOPIC_RECORD, 0, cls(name=name))


def _write_log(directory: Path, base: int, batches: list[bytes]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{base:020d}.log"
    path.write_bytes(b"".join(batches))
    return path


def _snapshot_bytes(epoch: int) -> bytes:
    header = control_class(SNAPSHOT_HEADER)(version=0, last_contained_log_timestamp=5)
    footer = control_class(SNAPSHOT_FOOTER)(version=0)
    fl = record_class(FEATURE_LEVEL_RECORD)(name="metadata.version", feature_level=21)
    return (
        encode_batch(0, epoch, 5, [encode_control(header)], control_types=[SNAPSHOT_HEADER])
        + encode_batch(1, epoch, 5, [encode_value(FEATURE_LEVEL_RECORD, 0, fl)])
        + encode_batch(2, epoch, 5, [encode_control(footer)], control_types=[SNAPSHOT_FOOTER])
    )


def _history_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data" / "__cluster_metadata-0"
    _write_log(d, 0, [encode_batch(i, 1, 100 + i, [_topic(f"t{i}")]) for i in range(4)])
    # one KRaft epoch throughout: a new epoch would begin with a LeaderChange control batch
    _write_log(d, 4, [encode_batch(4, 1, 104, [_topic("t4"), _topic("t5")]), encode_batch(6, 1, 106, [NOOP_VALUE])])
    _write_log(d, 7, [encode_batch(i, 1, 100 + i, [_topic(f"t{i}")]) for i in range(7, 10)])
    (d / "00000000000000000005-0000000002.checkpoint").write_bytes(_snapshot_bytes(2))
    (d / "00000000000000000003-0000000001.checkpoint").write_bytes(_snapshot_bytes(1))
    return d


def test_segments_in_offset_order_and_the_newest_snapshot(tmp_path: Path) -> None:
    d = _history_dir(tmp_path)
    h = open_history(d.parent)
    assert [Path(s).name[:20] for s in h.segments] == [f"{b:020d}" for b in (0, 4, 7)]
    assert [b.base_offset for b in h.batches()] == [0, 1, 2, 3, 4, 6, 7, 8, 9]

    h = open_history(d, from_snapshot="newest")
    assert h.snapshot is not None and (h.snapshot.end_offset, h.snapshot.epoch) == (5, 2)
    assert [Path(s).name[:20] for s in h.segments] == [f"{b:020d}" for b in (4, 7)]
    batches = list(h.batches())
    # the batch 4-5 straddles the snapshot end 5: only offset 5 is kept
    assert [[r.offset for r in b.records] for b in batches][:2] == [[5], []]
    assert [b.base_offset for b in batches] == [4, 6, 7, 8, 9]
    snap = list(h.snapshot_batches())
    assert [len(b.records) for b in snap] == [0, 1, 0]

    h = open_history(d, from_snapshot=d / "00000000000000000003-0000000001.checkpoint")
    assert h.snapshot is not None and h.snapshot.end_offset == 3
    assert [b.base_offset for b in h.batches()] == [3, 4, 6, 7, 8, 9]


def test_a_log_without_its_beginning_needs_a_snapshot(tmp_path: Path) -> None:
    d = _history_dir(tmp_path)
    (d / f"{0:020d}.log").unlink()
    with pytest.raises(ReplayInputError, match="the log starts at offset 4 .*--from-snapshot"):
        open_history(d)
    assert open_history(d, from_snapshot="newest").snapshot is not None


def test_an_incomplete_snapshot_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000003-0000000001.checkpoint"
    path.write_bytes(_snapshot_bytes(1)[:-75])
    with pytest.raises(ReplayInputError, match="no SnapshotFooter"):
        list(open_history(path).snapshot_batches())


def test_format_detection_is_by_content(tmp_path: Path) -> None:
    odd = tmp_path / "history.bin"
    odd.write_bytes(encode_batch(0, 1, 1, [_topic("a")]))
    assert detect_kind(str(odd)) == "log"
    txt = tmp_path / "notes.txt"
    txt.write_text("hello\n")
    with pytest.raises(ReplayInputError, match="not a metadata history"):
        open_history(txt)
    with pytest.raises(ReplayInputError, match="no such file"):
        open_history(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ReplayInputError, match="no .log segment"):
        open_history(empty)
    with pytest.raises(ReplayInputError, match="no <end offset>-<epoch>.checkpoint"):
        open_history(odd, from_snapshot="newest")
    shutil.rmtree(empty)


def test_a_missing_segment_is_named(tmp_path: Path) -> None:
    d = _history_dir(tmp_path)
    (d / f"{4:020d}.log").unlink()
    h = open_history(d)
    with pytest.raises(ReplayInputError, match=rf"{7:020d}.log, byte offset 0: offsets skip 4..6"):
        list(h.batches())
    h = open_history(d, skip_corrupt=True)
    assert [b.base_offset for b in h.batches()] == [0, 1, 2, 3, 7, 8, 9]
    assert [c.reason for c in h.stats.corrupt] == ["offsets skip 4..6: a segment overlaps or is missing"]


def test_trim_batch_keeps_the_offsets_at_or_after_the_start() -> None:
    from ctrlbatch.replay.log.segments import decode_batch
    from ctrlbatch.replay.log.sources import trim_batch

    b = decode_batch(encode_batch(10, 1, 5, [NOOP_VALUE, _topic("a"), NOOP_VALUE, _topic("b")]), source="s", position=0)
    assert trim_batch(b, 14) is None and trim_batch(b, 10) is b
    t = trim_batch(b, 12)
    assert t is not None and [r.offset for r in t.records] == [13] and t.noops == 1 and t.base_offset == 10


@pytest.mark.parametrize("skip_corrupt", [False, True])
def test_a_segment_whose_name_lies_about_its_base_offset_is_named(tmp_path: Path, skip_corrupt: bool) -> None:
    d = _history_dir(tmp_path)
    liar = d / "00000000000000000004.log"
    liar.rename(d / "00000000000000000005.log")  # holds offsets 4..6
    with pytest.raises(ReplayInputError) as e:
        list(open_history(d, skip_corrupt=skip_corrupt).batches())
    assert str(e.value) == (f"{d / '00000000000000000005.log'}, byte offset 0: the file name says the segment starts "
                            "at offset 5, but its first batch starts at 4: the name does not match the segment")


def test_a_snapshot_whose_name_lies_about_its_epoch_or_end_is_named(tmp_path: Path) -> None:
    d = _history_dir(tmp_path)
    wrong_epoch = d / "00000000000000000005-0000000007.checkpoint"
    (d / "00000000000000000005-0000000002.checkpoint").rename(wrong_epoch)
    h = open_history(d, from_snapshot=wrong_epoch)
    with pytest.raises(ReplayInputError, match="the file name says epoch 7, but the snapshot's batch has epoch 2"):
        list(h.snapshot_batches())
    beyond = d / "00000000000000000042-0000000002.checkpoint"
    beyond.write_bytes(_snapshot_bytes(2))
    h = open_history(d, from_snapshot=beyond)
    assert list(h.snapshot_batches())  # its epoch is right
    with pytest.raises(ReplayInputError) as e:
        list(h.batches())
    assert str(e.value) == (f"{beyond}, byte offset 0: the snapshot's name says it ends at offset 42, but the log "
                            "ends at offset 10: the name does not match the log")
