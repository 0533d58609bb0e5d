"""The invariant checkers catch what they must: loss, reordering, duplicates, bad retries, pipelining.

Hand-made histories (what the controller sent, what a broker read) go straight to
sim/invariants.py, without sockets, so each violation is produced on purpose.
"""

from __future__ import annotations

from ctrlbatch.requests import UpdateMetadataRequest
from ctrlbatch.sim.broker_server import Received, SimulatedBroker
from ctrlbatch.sim.cluster import ClusterConfig, Period, SimCluster
from ctrlbatch.sim.invariants import delivery_violations

BODIES = [UpdateMetadataRequest(controller_id=0, controller_epoch=e, broker_epoch=-1) for e in range(4)]


def history(sent: list[int], read: list[tuple[int, int, int, bool]], removed_at: int | None = None,
            pipelined: int = 0) -> list[str]:
    """sent: body numbers handed to the channel; read: (body, connection, correlation id, answered)."""
    c = SimCluster(ClusterConfig(brokers=1))
    b = SimulatedBroker(0, 1)
    b.server.stats.pipelined = pipelined
    c.brokers[0] = b
    c.periods[0] = [Period([(6, BODIES[i].encode(8)) for i in sent], removed_at)]
    b.received = [Received(n + 1, conn, cid, 6, 8, BODIES[i], answered) for n, (i, conn, cid, answered) in enumerate(read)]
    return delivery_violations(c)


def test_a_clean_history_with_a_retry_passes() -> None:
    assert history([0, 1, 2], [(0, 1, 0, True), (1, 1, 1, False), (1, 2, 2, True), (2, 2, 3, True)]) == []


def test_loss_is_caught() -> None:
    assert any("never answered" in p for p in history([0, 1, 2], [(0, 1, 0, True), (1, 1, 1, True)]))
    assert any("differ" in p for p in history([0, 1, 2], [(0, 1, 0, True), (2, 1, 1, True)]))


def test_reordering_and_duplicates_are_caught() -> None:
    assert any("differ" in p for p in history([0, 1], [(1, 1, 0, True), (0, 1, 1, True)]))
    assert any("differ" in p for p in history([0, 1], [(0, 1, 0, True), (0, 1, 1, True), (1, 1, 2, True)]))


def test_a_bad_retry_is_caught() -> None:
    same_connection = history([0, 1], [(0, 1, 0, False), (0, 1, 1, True), (1, 1, 2, True)])
    assert any("reuses a correlation id or a connection" in p for p in same_connection)
    same_id = history([0, 1], [(0, 1, 5, False), (0, 2, 5, True), (1, 2, 6, True)])
    assert any("reuses a correlation id or a connection" in p for p in same_id)
    other_body = history([0, 1], [(0, 1, 0, False), (1, 2, 1, True)])
    assert any("not its retry" in p for p in other_body)


def test_a_removed_broker_may_miss_the_tail() -> None:
    assert history([0, 1, 2], [(0, 1, 0, True), (1, 1, 1, False)], removed_at=1) == []


def test_pipelining_is_caught() -> None:
    assert any("before the previous reply" in p for p in history([0], [(0, 1, 0, True)], pipelined=1))
