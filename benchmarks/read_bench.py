"""Reading a KRaft log and grouping it into deltas, against the floor of touching every batch.

    python benchmarks/read_bench.py [--records 200000] [--runs 5] [--log DIR] [--json PATH]

The work measured is what both engines do before any request is built: ``group_deltas`` over
``open_history(log).batches()`` (the one reading loop: read, CRC-check, decode every record,
check offsets and epochs, count), fully consumed. Also printed: the reading loop alone. The floor,
measured in the same run on the same log: read the segment bytes in 8 MiB chunks, unpack each
batch's offset and length and CRC-32C its bytes (the ``crc32c`` package), decoding nothing: what
no reader of this log can skip. Figures are CPU seconds (time.process_time), the median of
``--runs`` interleaved runs, per record of the log (NoOps included: they are counted too).

The log is generated (100 brokers, 2,000 topics, 50,000 partitions, seed 1: about half of its
records are NoOps, as in a real controller's log) unless ``--log`` names one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import sys
import tempfile
from pathlib import Path

import crc32c

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import Figure, cpu_timed, write_results  # noqa: E402

from ctrlbatch.replay.generate.generator import generate_log  # noqa: E402
from ctrlbatch.replay.image.deltas import group_deltas  # noqa: E402
from ctrlbatch.replay.log.sources import open_history  # noqa: E402

_PREFIX = struct.Struct(">qi")
_CHUNK = 8 << 20


def floor(segments: list[str]) -> int:
    """Every batch's offset, length and CRC-32C over its bytes, nothing decoded: the batches seen."""
    n = 0
    for path in segments:
        with open(path, "rb") as f:
            buf = b""
            i = 0
            while True:
                if len(buf) - i < 12 or len(buf) - i < _PREFIX.unpack_from(buf, i)[1] + 12:
                    more = f.read(_CHUNK)
                    if not more:
                        break
                    buf, i = buf[i:] + more, 0
                    continue
                _base, length = _PREFIX.unpack_from(buf, i)
                crc32c.crc32c(memoryview(buf)[i + 21 : i + 12 + length])
                i += 12 + length
                n += 1
    return n


def read_only(path: str) -> int:
    return sum(1 for _ in open_history(path).batches())


def read_and_group(path: str) -> int:
    return sum(1 for _ in group_deltas(open_history(path).batches(), 1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--log", default=None, help="an existing __cluster_metadata-0 directory (default: generate one)")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = args.log
        if log is None:
            log = str(Path(tmp) / "data")
            generate_log(log, brokers=100, topics=2000, partitions=50_000, records=args.records, seed=1)
        history = open_history(log)
        segments = list(history.segments)
        batches = read_only(log)
        stats = history.stats
        for _ in history.batches():
            pass
        records = sum(stats.records.values()) + stats.noops + sum(stats.control_records.values())
        assert floor(segments) == batches
        load = os.getloadavg()
        lo, ro, rg = cpu_timed([(floor, segments), (read_only, log), (read_and_group, log)], args.runs)
    fm, rm, gm = (statistics.median(x) for x in (lo, ro, rg))
    us = 1e6 / records
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {records:,} records ({stats.noops:,} NoOps) "
          f"in {batches:,} batches; median of {args.runs} runs, CPU time")
    print(f"  floor (read, lengths, CRC-32C) : {fm:7.3f} s  {fm * us:6.2f} us/record")
    print(f"  reading loop                   : {rm:7.3f} s  {rm * us:6.2f} us/record  {rm / fm:5.1f}x the floor")
    print(f"  reading + group_deltas         : {gm:7.3f} s  {gm * us:6.2f} us/record  {gm / fm:5.1f}x the floor "
          f"({records / gm:,.0f} records/s)")
    figures = [
        Figure(f"reading + group_deltas of a generated log ({records:,} records), records per CPU second, median of {args.runs}",
               records / gm, "records/s", records / max(rg), records / gm, records / min(rg),
               "floor: read + CRC-32C of every batch", records / fm, gm / fm, "time over the floor, medians"),
        Figure(f"the reading loop alone ({records:,} records), records per CPU second, median of {args.runs}",
               records / rm, "records/s", records / max(ro), records / rm, records / min(ro),
               "floor: read + CRC-32C of every batch", records / fm, rm / fm, "time over the floor, medians"),
    ]
    write_results(args.json, "read_bench", figures, vars(args))


if __name__ == "__main__":
    main()
