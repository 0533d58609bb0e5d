"""The counters of a replay: what was sent, to whom, what was dropped, what was read.

Rules:
- Requests, partition states and bytes are counted per API (by Kafka name), per broker and per
  cause (the delta's event, image/causes.py; in the table's order) from the delivered rows; dropped requests per API; deltas with and without a delivered request;
  records read by type name (metadata records, NO_OP_RECORD from the batches' NoOp counts, and
  control records by their control type name), snapshot batches included.
- The engines count send groups at once (``count_group``: g groups of one API to the same n
  brokers, one request per group to each), equal to ``count_row`` per row (a property test),
  without a dict per row.
- Counting is additive: ``merge`` adds another summary (one per Spark task, say), so both
  engines get the same totals whatever the split. ``to_dict`` is JSON-able with sorted keys
  (broker ids as strings); ``from_dict`` reads it back.
- metadata.version: the feature levels of the metadata.version FeatureLevelRecords read (a set:
  merged by union). Levels above 21 are Kafka 4.x's, which has no ZooKeeper mode: their requests
  use 3.9-IV0's versions, and ``to_dict`` says so.
- KRaft beside ZooKeeper (KRAFT_DEFINITION, the exact definition): every batch read counts its
  bytes as stored (offset and length prefix included; snapshot batches too, as a broker starting
  from the snapshot fetches it). A KRaft broker replicates the whole metadata log, so each broker
  fetched all of them over the replayed span; the brokers are those that registered in the span or
  received a request. Beside it, the bytes of the ZooKeeper-mode requests the replay computed for
  that broker. Text inputs (JSON lines, kafka-dump-log output) have no batch bytes: counted as
  unsized batches, and the KRaft figure is then a lower bound. The KRaft bytes are split in two:
  the batches of NoOp records only (a data batch with no other record), which the active
  controller writes whenever nothing else was written for metadata.max.idle.interval.ms (500 ms
  by default, KRaftConfigs.java:107-108; KIP-835), so an idle cluster's log is almost all NoOps;
  and every other batch (metadata and control records): what the cluster's changes cost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ctrlbatch.batch.versions import leader_and_isr_version, stop_replica_version, update_metadata_version
from ctrlbatch.context.metadata_version import KAFKA_4X_LEVELS, LAST_ZK_LEVEL

from ..image.causes import CAUSE_NAMES, OTHER
from ..log.records import CONTROL_TYPE_NAMES, FEATURE_LEVEL_RECORD, RECORD_TYPE_NAMES, REGISTER_BROKER_RECORD
from .rows import API_NAMES

__all__ = ["KRAFT_DEFINITION", "ReplaySummary", "metadata_version_note"]

KRAFT_DEFINITION = (
    "kraft_fetch_bytes: the bytes of every record batch of the replayed span as stored in the log "
    "(12-byte offset and length prefix included; the snapshot's batches too when the replay starts "
    "from one), the same for every broker: a KRaft broker replicates the whole metadata log. "
    "Fetch request and response framing is not counted. zk_request_bytes: the bytes of the "
    "ZooKeeper-mode controller requests (LeaderAndIsr, UpdateMetadata, StopReplica frames) the "
    "replay computed for that broker. Brokers: those registered in the span or sent a request. "
    "kraft_fetch_bytes = kraft_noop_bytes + kraft_metadata_bytes: kraft_noop_bytes counts the batches "
    "holding only NoOp records, which the active controller writes whenever nothing else was written for "
    "metadata.max.idle.interval.ms (500 ms by default), idle cluster or not; kraft_metadata_bytes counts "
    "every other batch (metadata and control records), what the cluster's changes cost."
)
_ZK_LAST = KAFKA_4X_LEVELS[LAST_ZK_LEVEL].request_version


def metadata_version_note(levels: Any) -> str | None:
    """What the summary says of Kafka 4.x levels (above 21), or None when there are none."""
    newer = sorted(lv for lv in levels if lv > LAST_ZK_LEVEL)
    if not newer:
        return None
    names = ", ".join(f"{lv} ({_level_name(lv)})" for lv in newer)
    return (
        f"metadata.version {names}: Kafka 4.x, which removed ZooKeeper mode, so the requests at "
        f"{'these levels' if len(newer) > 1 else 'this level'} use {_ZK_LAST}'s versions (LeaderAndIsr "
        f"v{leader_and_isr_version(_ZK_LAST)}, UpdateMetadata v{update_metadata_version(_ZK_LAST)}, "
        f"StopReplica v{stop_replica_version(_ZK_LAST)})"
    )


def _level_name(level: int) -> str:
    known = KAFKA_4X_LEVELS.get(level)
    return "unknown" if known is None else known.version

_FIELDS = ("requests", "partitions", "bytes")


def _cause_order(causes: Mapping[str, Any]) -> list[str]:
    """The causes in CAUSES' order (any other name after them, sorted)."""
    rank = {name: i for i, name in enumerate(CAUSE_NAMES)}
    return sorted(causes, key=lambda c: (rank.get(c, len(rank)), c))


def _api_name(api_key: int) -> str:
    return API_NAMES.get(api_key, f"api {api_key}")


@attrs.define(repr=False)
class ReplaySummary:
    """Additive counters; see the module rules."""

    by_api: dict[str, Counter[str]] = attrs.field(factory=dict)
    by_broker: dict[int, Counter[str]] = attrs.field(factory=dict)
    by_cause: dict[str, Counter[str]] = attrs.field(factory=dict)
    dropped: Counter[str] = attrs.field(factory=Counter)
    deltas_with_requests: int = 0
    deltas_without_requests: int = 0
    records_by_type: Counter[str] = attrs.field(factory=Counter)
    metadata_levels: set[int] = attrs.field(factory=set)
    log_bytes: int = 0
    log_batches: int = 0
    noop_bytes: int = 0  # of log_bytes: the batches of NoOp records only
    noop_batches: int = 0
    unsized_batches: int = 0
    registered_brokers: set[int] = attrs.field(factory=set)

    def __repr__(self) -> str:
        total = sum(c["requests"] for c in self.by_api.values())
        return f"ReplaySummary({self.deltas} deltas, {total} requests, {sum(self.dropped.values())} dropped)"

    @property
    def deltas(self) -> int:
        return self.deltas_with_requests + self.deltas_without_requests

    def count_row(self, row: Mapping[str, Any]) -> None:
        """One delivered request (a row of rows.request_row)."""
        for counters in (
            self.by_api.setdefault(_api_name(row["api_key"]), Counter()),
            self.by_broker.setdefault(int(row["broker"]), Counter()),
            self.by_cause.setdefault(row.get("cause", OTHER), Counter()),
        ):
            counters["requests"] += 1
            counters["partitions"] += row["partitions"]
            counters["bytes"] += row["bytes"]

    def count_group(
        self, api_key: int, partitions: int, size: int, brokers: Sequence[int], groups: int = 1, cause: str = OTHER,
    ) -> None:
        """The delivered requests of ``groups`` send groups (rows.SendGroup) of one API and cause to
        the same ``brokers``: one request per group to each broker, ``partitions`` states and
        ``size`` bytes in all (summed over the groups) to each; the same counts as count_row per row."""
        n = len(brokers)
        if not n or not groups:
            return
        for c in (self.by_api.setdefault(_api_name(api_key), Counter()), self.by_cause.setdefault(cause, Counter())):
            c["requests"] += groups * n
            c["partitions"] += partitions * n
            c["bytes"] += size * n
        by_broker = self.by_broker
        for b in brokers:
            counts = by_broker.get(b)
            if counts is None:
                counts = by_broker[b] = Counter()
            counts["requests"] += groups
            counts["partitions"] += partitions
            counts["bytes"] += size

    def count_dropped(self, api_key: int, n: int = 1) -> None:
        self.dropped[_api_name(api_key)] += n

    def count_noop_run(self, run: Any) -> None:
        """The batches of a log.records.NoOpRun, as count_batch counts each, and the deltas of
        no requests they make beyond the one the run itself makes (EngineRun counts that one)."""
        self.log_batches += run.count
        self.log_bytes += run.size
        self.unsized_batches += run.unsized
        self.noop_batches += run.count
        self.noop_bytes += run.size
        self.records_by_type["NO_OP_RECORD"] += run.noops
        self.deltas_without_requests += run.count - 1

    def count_delta(self, delivered: int) -> None:
        """One delta, which delivered ``delivered`` requests."""
        if delivered:
            self.deltas_with_requests += 1
        else:
            self.deltas_without_requests += 1

    def count_batch(self, batch: Any) -> None:
        """The records of one LogBatch (data or control)."""
        noops = batch.noops
        if noops and not batch.records and not batch.control:  # NoOps only: half of a log's batches, counted inline
            size = batch.size
            self.log_batches += 1
            if size:
                self.log_bytes += size
            else:
                self.unsized_batches += 1
            self.noop_batches += 1
            self.noop_bytes += size
            self.records_by_type["NO_OP_RECORD"] += noops
            return
        counts = self.records_by_type
        self.log_batches += 1
        if batch.size:
            self.log_bytes += batch.size
        else:
            self.unsized_batches += 1
        if batch.noops and not batch.records and not batch.control:
            self.noop_batches += 1
            self.noop_bytes += batch.size
        for r in batch.records:
            counts[RECORD_TYPE_NAMES.get(r.type) or f"type {r.type}"] += 1  # the name made only when unknown
            if r.type == FEATURE_LEVEL_RECORD and r.data.name == "metadata.version":
                self.metadata_levels.add(r.data.feature_level)
            elif r.type == REGISTER_BROKER_RECORD:
                self.registered_brokers.add(r.data.broker_id)
        if batch.noops:
            counts["NO_OP_RECORD"] += batch.noops
        for c in batch.control_records:
            counts[CONTROL_TYPE_NAMES.get(c.type, f"control type {c.type}")] += 1

    def merge(self, other: ReplaySummary) -> None:
        for api, c in other.by_api.items():
            self.by_api.setdefault(api, Counter()).update(c)
        for broker, c in other.by_broker.items():
            self.by_broker.setdefault(broker, Counter()).update(c)
        for cause, c in other.by_cause.items():
            self.by_cause.setdefault(cause, Counter()).update(c)
        self.dropped.update(other.dropped)
        self.deltas_with_requests += other.deltas_with_requests
        self.deltas_without_requests += other.deltas_without_requests
        self.records_by_type.update(other.records_by_type)
        self.metadata_levels |= other.metadata_levels
        self.log_bytes += other.log_bytes
        self.log_batches += other.log_batches
        self.noop_bytes += other.noop_bytes
        self.noop_batches += other.noop_batches
        self.unsized_batches += other.unsized_batches
        self.registered_brokers |= other.registered_brokers

    def kraft_by_broker(self) -> dict[int, dict[str, int]]:
        """Per broker: kraft_fetch_bytes, its kraft_noop_bytes and kraft_metadata_bytes, and
        zk_request_bytes (KRAFT_DEFINITION)."""
        brokers = sorted(self.registered_brokers | set(self.by_broker))
        return {
            b: {
                "kraft_fetch_bytes": self.log_bytes, "kraft_noop_bytes": self.noop_bytes,
                "kraft_metadata_bytes": self.log_bytes - self.noop_bytes,
                "zk_request_bytes": int(self.by_broker.get(b, Counter())["bytes"]),
            }
            for b in brokers
        }

    def to_dict(self) -> dict[str, Any]:
        def block(c: Counter[str]) -> dict[str, int]:
            return {f: int(c[f]) for f in _FIELDS}

        totals = Counter[str]()
        for c in self.by_api.values():
            totals.update(c)
        apis = sorted(set(self.by_api) | set(self.dropped))
        return {
            "deltas": {
                "total": self.deltas,
                "with_requests": self.deltas_with_requests,
                "without_requests": self.deltas_without_requests,
            },
            "totals": {**block(totals), "dropped": int(sum(self.dropped.values()))},
            "by_api": {
                api: {**block(self.by_api.get(api, Counter())), "dropped": int(self.dropped[api])} for api in apis
            },
            "by_broker": {str(b): block(c) for b, c in sorted(self.by_broker.items())},
            "by_cause": {cause: block(self.by_cause[cause]) for cause in _cause_order(self.by_cause)},
            "records_by_type": dict(sorted(self.records_by_type.items())),
            "metadata_version": {
                "levels": {str(lv): _level_name(lv) for lv in sorted(self.metadata_levels)},
                "note": metadata_version_note(self.metadata_levels),
            },
            "kraft_vs_zookeeper": {
                "definition": KRAFT_DEFINITION,
                "log_bytes": self.log_bytes,
                "log_batches": self.log_batches,
                "noop_bytes": self.noop_bytes,
                "noop_batches": self.noop_batches,
                "metadata_bytes": self.log_bytes - self.noop_bytes,
                "metadata_batches": self.log_batches - self.noop_batches,
                "unsized_batches": self.unsized_batches,
                "by_broker": {str(b): c for b, c in self.kraft_by_broker().items()},
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplaySummary:
        s = cls()
        for api, block in data["by_api"].items():
            if any(block[f] for f in _FIELDS):
                s.by_api[api] = Counter({f: block[f] for f in _FIELDS})
            if block["dropped"]:
                s.dropped[api] = block["dropped"]
        for broker, block in data["by_broker"].items():
            s.by_broker[int(broker)] = Counter({f: block[f] for f in _FIELDS})
        for cause, block in data.get("by_cause", {}).items():
            s.by_cause[cause] = Counter({f: block[f] for f in _FIELDS})
        s.deltas_with_requests = data["deltas"]["with_requests"]
        s.deltas_without_requests = data["deltas"]["without_requests"]
        s.records_by_type = Counter(data["records_by_type"])
        mv = data.get("metadata_version", {})
        s.metadata_levels = {int(lv) for lv in mv.get("levels", {})}
        kraft = data.get("kraft_vs_zookeeper", {})
        s.log_bytes = kraft.get("log_bytes", 0)
        s.log_batches = kraft.get("log_batches", 0)
        s.noop_bytes = kraft.get("noop_bytes", 0)
        s.noop_batches = kraft.get("noop_batches", 0)
        s.unsized_batches = kraft.get("unsized_batches", 0)
        s.registered_brokers = {int(b) for b in kraft.get("by_broker", {})} - set(s.by_broker)
        return s
