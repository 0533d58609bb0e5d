"""Full-image UpdateMetadata bodies (replay/propagate/full_image.py): a kept memo against a cold
one and against the batch's own encoding, on the same images.

Reads a log (default: the 1M-record generated log if present, else a generated 200k-record one),
folds it delta by delta, and takes ``--bodies`` images evenly spaced over it, as the replay meets
them at broker unfence/shutdown. Prints, per body, the CPU time of: a warm memo (one TopicPieces
across the images: what the sequential replay does), a cold memo (a fresh TopicPieces per image:
each Spark unit's first body), both encoded and sized (``--digest none``), and the batch's
encoding of the same request from state objects (the peer the pieces replace), with the ratios
and the load average. Every body is checked against the batch's bytes.

    .venv/bin/python benchmarks/full_image_bench.py [LOG] [--bodies 60] [--version 8]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ctrlbatch.batch import UpdateType
from ctrlbatch.replay.engine.skeleton import snapshot_start
from ctrlbatch.replay.generate.generator import generate_log
from ctrlbatch.replay.image.deltas import group_deltas
from ctrlbatch.replay.image.image import MetadataImage, apply_delta
from ctrlbatch.replay.log.sources import open_history
from ctrlbatch.replay.propagate.full_image import TopicPieces, full_image_body

DEFAULT_LOG = Path("/tmp/ctrlbatch-replay-bench/b100-t2000-p50000-r1000000-s1")


def _images(log: Path, bodies: int) -> list[MetadataImage]:
    history = open_history(str(log), from_snapshot=None)
    image, _ = snapshot_start(history)
    deltas = list(group_deltas(history.batches(), 1))
    step = max(1, len(deltas) // bodies)
    images = []
    for i, delta in enumerate(deltas):
        image, _ = apply_delta(image, delta.records, offset=delta.last_offset, epoch=delta.epoch)
        if i % step == step - 1 and image.topics and image.brokers:
            images.append(image)
    return images[-bodies:]


def _body(pieces: TopicPieces, image: MetadataImage, version: int, sized: bool) -> Any:
    return full_image_body(pieces, image, version=version, controller_id=1, header_epoch=image.epoch,
                           update_type=UpdateType.UNKNOWN, first_broker_epoch=7,
                           live=[r.broker for _, r in sorted(image.brokers.items())], sizes_only=sized)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", type=Path)
    ap.add_argument("--bodies", type=int, default=60)
    ap.add_argument("--version", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = args.log or (DEFAULT_LOG if DEFAULT_LOG.exists() else None)
        if log is None:
            log = Path(tmp)
            generate_log(log, brokers=100, topics=2000, partitions=50_000, records=200_000, seed=1)
        images = _images(log, args.bodies)
    n = len(images)
    parts = sum(len(t.partitions) for t in images[-1].topics.values())
    print(f"{log}: {n} images, the last {len(images[-1].topics)} topics, {parts} partitions; v{args.version}")
    clock = time.process_time
    times: dict[str, float] = {}
    for sized in (False, True):
        kind = "sized" if sized else "encoded"
        warm = TopicPieces()
        t_warm = t_cold = t_batch = 0.0
        for image in images:
            t = clock()
            got = _body(warm, image, args.version, sized)
            t_warm += clock() - t
            t = clock()
            cold = _body(TopicPieces(), image, args.version, sized)
            t_cold += clock() - t
            t = clock()
            want = got.builder.encode_body(7) if not sized else got.builder.size_body()
            t_batch += clock() - t
            if sized:
                assert got.body.size == cold.body.size == want
            else:
                assert got.body.data == cold.body.data == want
        times[kind] = t_warm
        print(f"{kind:8} warm memo {1000 * t_warm / n:7.2f} ms/body   cold memo {1000 * t_cold / n:7.2f} ms/body   "
              f"batch {1000 * t_batch / n:7.2f} ms/body   warm/batch {t_warm / t_batch:.3f}  cold/batch {t_cold / t_batch:.3f}")
    print(f"load average {os.getloadavg()[0]:.2f} (2 cores: figures above ~1 are contended)")


if __name__ == "__main__":
    main()
