"""Codec speed: UpdateMetadata v8 for 200,000 partitions, ours vs kio 0.5.0 vs stdlib json.

The message: replication factor 3, 100 live brokers (one endpoint each), topics of 50
partitions (4,000 topics). Each codec encodes and decodes the same content in this run; the
script prints the times (median, min-max of --repeat runs) and the ratios against the targets
(encode <= 0.25x kio and <= 0.5x json.dumps, decode <= 0.25x kio), of the best runs (the least
disturbed by other load on the machine; the verdict) and of the medians.

Usage: python benchmarks/codec_bench.py [--partitions N] [--repeat R] [--no-kio] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from figures import Figure, write_results

from ctrlbatch.requests import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)

VERSION = 8


def build(partitions: int, brokers: int = 100, per_topic: int = 50, rf: int = 3) -> UpdateMetadataRequest:
    topics = []
    p = 0
    t = 0
    while p < partitions:
        states = []
        for i in range(min(per_topic, partitions - p)):
            replicas = tuple((p + k) % brokers for k in range(rf))
            states.append(
                UpdateMetadataPartitionState(
                    partition_index=i, controller_epoch=7, leader=replicas[0], leader_epoch=3,
                    isr=replicas, zk_version=11, replicas=replicas, offline_replicas=(),
                )
            )
            p += 1
        topics.append(
            UpdateMetadataTopicState(
                topic_name=f"topic-{t:05d}", topic_id=uuid.UUID(int=t + 1), partition_states=tuple(states)
            )
        )
        t += 1
    live = tuple(
        UpdateMetadataBroker(
            id=b,
            endpoints=(UpdateMetadataEndpoint(port=9092, host=f"broker-{b}.kafka.local", listener="PLAINTEXT", security_protocol=0),),
            rack=f"rack-{b % 3}",
        )
        for b in range(brokers)
    )
    return UpdateMetadataRequest(controller_id=1, controller_epoch=7, broker_epoch=42, topic_states=tuple(topics), live_brokers=live)


class Times:
    """The run times of one operation."""

    def __init__(self, times: list[float]) -> None:
        self.times = times
        self.best = min(times)
        self.median = statistics.median(times)

    def __str__(self) -> str:
        return f"{self.median:7.3f} s ({min(self.times):.3f}-{max(self.times):.3f})"


def best(fn: Callable[[], Any], repeat: int) -> tuple[Times, Any]:
    times = []
    result = None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return Times(times), result


def to_kio(msg: UpdateMetadataRequest) -> Any:
    from kio.schema.update_metadata.v8 import request as k

    return k.UpdateMetadataRequest(
        controller_id=msg.controller_id, is_k_raft_controller=False, type_=0, controller_epoch=msg.controller_epoch,
        broker_epoch=msg.broker_epoch,
        topic_states=tuple(
            k.UpdateMetadataTopicState(
                topic_name=t.topic_name, topic_id=t.topic_id,
                partition_states=tuple(
                    k.UpdateMetadataPartitionState(
                        partition_index=s.partition_index, controller_epoch=s.controller_epoch, leader=s.leader,
                        leader_epoch=s.leader_epoch, isr=s.isr, zk_version=s.zk_version, replicas=s.replicas,
                        offline_replicas=s.offline_replicas,
                    )
                    for s in t.partition_states
                ),
            )
            for t in msg.topic_states
        ),
        live_brokers=tuple(
            k.UpdateMetadataBroker(
                id_=b.id, rack=b.rack,
                endpoints=tuple(
                    k.UpdateMetadataEndpoint(port=e.port, host=e.host, listener=e.listener, security_protocol=e.security_protocol)
                    for e in b.endpoints
                ),
            )
            for b in msg.live_brokers
        ),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-kio", action="store_true", help="skip the kio peer")
    ap.add_argument("--json", metavar="PATH", help="also write the headline figures as JSON (benchmarks/figures.py)")
    args = ap.parse_args()

    msg = build(args.partitions)
    enc, raw = best(lambda: msg.encode(VERSION), args.repeat)
    dec, back = best(lambda: UpdateMetadataRequest.decode(raw, VERSION), args.repeat)
    assert back == msg, "decode(encode(m)) != m"
    print(f"UpdateMetadata v{VERSION}: {args.partitions:,} partitions, {len(msg.topic_states):,} topics, "
          f"{len(msg.live_brokers)} brokers, body {len(raw):,} bytes")
    print("median (min-max) of", args.repeat, "runs")
    print(f"  ctrlbatch   encode {enc}   decode {dec}")

    plain = msg.to_dict()
    plain = json.loads(json.dumps(plain, default=str))
    jenc, text = best(lambda: json.dumps(plain), args.repeat)
    jdec, _ = best(lambda: json.loads(text), args.repeat)
    print(f"  json        dumps  {jenc}   loads  {jdec}   (same content as plain dicts)")

    ratios = [("encode / json.dumps", enc, jenc, 0.5)]
    peers = {"encode / json.dumps": "json.dumps", "encode / kio": "kio 0.5.0 encode", "decode / kio": "kio 0.5.0 decode"}
    if not args.no_kio:
        import io

        from kio.schema.update_metadata.v8.request import UpdateMetadataRequest as KioUMR
        from kio.serial import entity_reader, entity_writer

        kmsg = to_kio(msg)
        writer = entity_writer(KioUMR)
        reader = entity_reader(KioUMR)

        def kio_encode() -> bytes:
            buf = io.BytesIO()
            writer(buf, kmsg)
            return buf.getvalue()

        kenc, kraw = best(kio_encode, args.repeat)
        kdec, _ = best(lambda: reader(kraw, 0), args.repeat)
        same = "identical bytes" if kraw == raw else "BYTES DIFFER"
        print(f"  kio 0.5.0   encode {kenc}   decode {kdec}   ({same})")
        ratios = [("encode / kio", enc, kenc, 0.25), *ratios, ("decode / kio", dec, kdec, 0.25)]
    print("ratios, best runs (medians) (target):")
    figures = []
    for name, ours, peer, target in ratios:
        r = ours.best / peer.best
        print(f"  {name:20s} {r:6.3f}x ({ours.median / peer.median:.3f}x)  (<= {target}x: {'met' if r <= target else 'NOT met'})")
        figures.append(Figure(
            what=f"UpdateMetadata v{VERSION}, {args.partitions:,} partitions, {name.split()[0]}, median of {args.repeat}",
            value=ours.median, unit="s", min=min(ours.times), median=ours.median, max=max(ours.times),
            peer=peers[name], peer_value=peer.median, ratio=r, ratio_of="best runs",
            target=f"<= {target}x", met=r <= target,
        ))
    write_results(args.json, "codec_bench", figures, vars(args))


if __name__ == "__main__":
    main()
