"""The invariants of a simulation, checked on a SimCluster after a run (each returns violations as text).

Rules (issue 7, "Invariants"):
- Delivery: per broker and per stay in the channel (a Period), the requests the broker answered are,
  byte for byte, the requests the controller handed to the channel, in order: all of them while the
  broker is still in the channel and the cluster is quiet, a prefix of them after its removal.
  An unanswered try is followed by the same request with a new correlation id on a newer
  connection (a retry), unless the broker was removed first.
- One at a time: no frame ever arrived on a connection before the previous one was answered.
- Convergence: once quiet, every live broker's metadata cache equals the controller's view.
- Removal: no request reached a broker on a connection opened after its removal (SimCluster
  records those as it goes).
- Leaks: nothing but the caller's task is left on the loop.
"""

from __future__ import annotations

import asyncio

from .broker_server import Received
from .cluster import SimCluster

__all__ = ["check_all", "convergence_violations", "delivery_violations", "leaked_tasks"]


def _period_of(rec: Received, boundaries: list[int | None]) -> int:
    for k, b in enumerate(boundaries):
        if b is None or rec.connection <= b:
            return k
    return len(boundaries) - 1


def delivery_violations(cluster: SimCluster) -> list[str]:
    out: list[str] = []
    for broker_id, periods in sorted(cluster.periods.items()):
        broker = cluster.brokers[broker_id]
        if broker.server.stats.pipelined:
            out.append(f"broker {broker_id}: {broker.server.stats.pipelined} requests arrived before the previous reply")
        boundaries = [p.removed_at_connection for p in periods]
        per_period: list[list[Received]] = [[] for _ in periods]
        for rec in broker.received:
            per_period[_period_of(rec, boundaries)].append(rec)
        for k, (period, recs) in enumerate(zip(periods, per_period, strict=True)):
            sent = [body for _key, body in period.sent]
            where = f"broker {broker_id} stay {k}"
            answered = [r.body.encode(r.version) for r in recs if r.answered]
            if answered != sent[: len(answered)]:
                first = next(i for i, (a, s) in enumerate(zip(answered, sent, strict=False)) if a != s) if any(
                    a != s for a, s in zip(answered, sent, strict=False)) else min(len(answered), len(sent))
                out.append(f"{where}: answered requests differ from those sent from #{first} "
                           f"({len(answered)} answered, {len(sent)} sent)")
            if period.removed_at_connection is None and len(answered) != len(sent):
                out.append(f"{where}: {len(sent) - len(answered)} of {len(sent)} requests never answered")
            for a, b in zip(recs, recs[1:], strict=False):
                if a.answered:
                    continue
                if b.body.encode(b.version) != a.body.encode(a.version):
                    out.append(f"{where}: request #{a.ordinal} went unanswered and the next one is not its retry")
                elif b.correlation_id == a.correlation_id or b.connection <= a.connection:
                    out.append(f"{where}: the retry #{b.ordinal} reuses a correlation id or a connection")
    return out


def convergence_violations(cluster: SimCluster) -> list[str]:
    return [f"broker {b}: metadata cache differs from the controller's view"
            for b, ok in sorted(cluster.converged().items()) if not ok]


def leaked_tasks() -> list[str]:
    current = asyncio.current_task()
    return [f"task left running: {t.get_name()} {t.get_coro()!r}" for t in asyncio.all_tasks() if t is not current and not t.done()]


def check_all(cluster: SimCluster) -> list[str]:
    """Delivery, one-at-a-time, convergence and removal; call once the cluster is quiet."""
    return delivery_violations(cluster) + convergence_violations(cluster) + list(cluster.violations)
