"""The counters of a replay: what was sent, to whom, what was dropped, what was read.

Rules:
- Requests, partition states and bytes are counted per API (by Kafka name) and per broker from
  the delivered rows; dropped requests per API; deltas with and without a delivered request;
  records read by type name (metadata records, NO_OP_RECORD from the batches' NoOp counts, and
  control records by their control type name), snapshot batches included.
- Counting is additive: ``merge`` adds another summary (one per Spark task, say), so both
  engines get the same totals whatever the split. ``to_dict`` is JSON-able with sorted keys
  (broker ids as strings); ``from_dict`` reads it back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import attrs

from .records import CONTROL_TYPE_NAMES, RECORD_TYPE_NAMES
from .rows import API_NAMES

__all__ = ["ReplaySummary"]

_FIELDS = ("requests", "partitions", "bytes")


def _api_name(api_key: int) -> str:
    return API_NAMES.get(api_key, f"api {api_key}")


@attrs.define(repr=False)
class ReplaySummary:
    """Additive counters; see the module rules."""

    by_api: dict[str, Counter[str]] = attrs.field(factory=dict)
    by_broker: dict[int, Counter[str]] = attrs.field(factory=dict)
    dropped: Counter[str] = attrs.field(factory=Counter)
    deltas_with_requests: int = 0
    deltas_without_requests: int = 0
    records_by_type: Counter[str] = attrs.field(factory=Counter)

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
        ):
            counters["requests"] += 1
            counters["partitions"] += row["partitions"]
            counters["bytes"] += row["bytes"]

    def count_dropped(self, api_key: int, n: int = 1) -> None:
        self.dropped[_api_name(api_key)] += n

    def count_delta(self, delivered: int) -> None:
        """One delta, which delivered ``delivered`` requests."""
        if delivered:
            self.deltas_with_requests += 1
        else:
            self.deltas_without_requests += 1

    def count_batch(self, batch: Any) -> None:
        """The records of one LogBatch (data or control)."""
        counts = self.records_by_type
        for r in batch.records:
            counts[RECORD_TYPE_NAMES.get(r.type, f"type {r.type}")] += 1
        if batch.noops:
            counts["NO_OP_RECORD"] += batch.noops
        for c in batch.control_records:
            counts[CONTROL_TYPE_NAMES.get(c.type, f"control type {c.type}")] += 1

    def merge(self, other: ReplaySummary) -> None:
        for api, c in other.by_api.items():
            self.by_api.setdefault(api, Counter()).update(c)
        for broker, c in other.by_broker.items():
            self.by_broker.setdefault(broker, Counter()).update(c)
        self.dropped.update(other.dropped)
        self.deltas_with_requests += other.deltas_with_requests
        self.deltas_without_requests += other.deltas_without_requests
        self.records_by_type.update(other.records_by_type)

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
            "records_by_type": dict(sorted(self.records_by_type.items())),
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
        s.deltas_with_requests = data["deltas"]["with_requests"]
        s.deltas_without_requests = data["deltas"]["without_requests"]
        s.records_by_type = Counter(data["records_by_type"])
        return s
