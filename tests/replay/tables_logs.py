"""Small logs for the records-table tests: generated 3.x and 4.x logs, a corrupted copy, and a
live log a test writer appends to (tests/replay/test_tables_*.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from ctrlbatch.replay.generate.writer import encode_batch
from ctrlbatch.replay.log.records import NOOP_VALUE
from ctrlbatch.replay.log.segments import scan_batches

# (metadata.version level at bootstrap, upgrade to): 3.6-IV2 -> 3.9-IV0, and Kafka 4.1-IV1 -> 4.3-IV0
KAFKA_3X: dict[str, Any] = {"metadata_version": 14, "upgrade_to": 21}
KAFKA_4X: dict[str, Any] = {"metadata_version": 27, "upgrade_to": 30}


def make_logs(root: Path) -> dict[str, Path]:
    """Generated logs (a few segments each, the 3.x one with two snapshots) and a copy of the 3.x
    log with two corrupt batches (CRC) in different segments."""
    from ctrlbatch.replay.generate.generator import generate_log

    logs = {}
    for name, args in (("3x", KAFKA_3X), ("4x", KAFKA_4X)):
        generate_log(root / name, brokers=4, topics=5, partitions=30, records=3_000, seed=3,
                     segment_bytes=60_000, snapshots=2 if name == "3x" else 0, **args)
        logs[name] = root / name
    corrupt = root / "corrupt"
    shutil.copytree(root / "3x", corrupt)
    segments = sorted((corrupt / "__cluster_metadata-0").glob("*.log"))
    for seg in (segments[0], segments[-1]):
        pointers = [p for p in scan_batches(seg) if p.length > 72]  # not a NoOp batch: records are lost
        hit = pointers[len(pointers) // 2]
        data = bytearray(seg.read_bytes())
        data[hit.position + hit.length - 1] ^= 0xFF  # the last byte: inside the CRC's span
        seg.write_bytes(bytes(data))
    logs["corrupt"] = corrupt
    return logs


class LiveLog:
    """A __cluster_metadata-0 a test appends NoOp batches (one record each, epoch 1) to."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.directory = root / "__cluster_metadata-0"
        self.directory.mkdir(parents=True)
        self.segment = self.segment_path(0)
        self.segment.touch()

    def segment_path(self, base: int) -> Path:
        return self.directory / f"{base:020d}.log"

    @staticmethod
    def batch(offset: int, timestamp: int = 1_000) -> bytes:
        return encode_batch(offset, 1, timestamp + offset, [NOOP_VALUE])

    def append(self, data: bytes) -> None:
        with open(self.segment, "ab") as f:
            f.write(data)

    def add(self, first: int, last: int) -> None:
        self.append(b"".join(self.batch(o) for o in range(first, last + 1)))

    def roll(self, base: int) -> None:
        self.segment = self.segment_path(base)
        self.segment.touch()

    def rewrite_last(self, offset: int, timestamp: int) -> None:
        """The batch of ``offset`` (the segment's last) written again with another timestamp."""
        old = self.batch(offset)
        data = self.segment.read_bytes()
        assert data.endswith(old)
        self.segment.write_bytes(data[: -len(old)] + self.batch(offset, timestamp))

    def delete(self, base: int) -> None:
        os.unlink(self.segment_path(base))
