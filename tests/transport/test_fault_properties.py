"""Hypothesis over random fault schedules on real loopback sockets.

Each example: 1-3 responders, each with a random plan of what it does with its k-th request
(answer, close the connection, delay the answer, never answer, answer with a wrong correlation
id, answer with an undecodable body, answer twice). Invariants (issue 7):
- no request is lost, duplicated or reordered per broker: the callbacks see 1..n exactly once, in order;
- a request is sent again exactly when its try failed (the broker closed, hung, or answered with
  a wrong correlation id or a bad body; or it answered the previous request twice, which the
  next try reads as a mismatch, as Kafka does), and a retry is the same request with the next
  correlation id on a new connection;
- never a second request on a connection before the reply (the responder records violations);
- nothing leaks: no task after shutdown, no socket once the responders are closed.
"""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.transport import AsyncControllerChannel

FAILING = {"close", "hang", "bad_cid", "garbage"}
ACTIONS = ["answer", "answer", "close", "hang", "bad_cid", "garbage", "extra", "delay:0.005", "delay:0.02"]
# request_timeout_ms: 15 times the longest planned delay (20 ms), so that a delayed answer is not
# taken for a hang when this loaded machine pauses the test's loop for a while.
OPTIONS = {"backoff_ms": 5, "request_timeout_ms": 300, "connect_timeout_ms": 2000, "metrics_log_interval_ms": None}

def expected_failures(actions: list[str], tries: int) -> list[bool]:
    """Which of the tries fail under the plan. A second answer to an answered try k-1 is read
    as the answer to try k: a correlation id mismatch (when try k-1 itself failed, its connection
    is gone and so is the extra frame)."""
    fails: list[bool] = []
    for k in range(tries):
        action = actions[k] if k < len(actions) else "answer"
        previous = actions[k - 1] if 0 < k <= len(actions) else "answer"
        fails.append(action in FAILING or (previous == "extra" and not fails[k - 1]))
    return fails


broker_plans = st.lists(
    st.tuples(st.integers(min_value=1, max_value=6), st.lists(st.sampled_from(ACTIONS), max_size=8)),
    min_size=1, max_size=3,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plans=broker_plans)
def test_no_loss_no_reorder_no_pipelining_no_leak_under_random_faults(tt, plans):
    sockets_before = tt.sockets_of(tt.open_fds())

    async def main():
        baseline = asyncio.all_tasks()
        responders = []
        for _, actions in plans:
            r = tt.Responder(dict(enumerate(actions)))
            await r.start()
            responders.append(r)
        brokers = [tt.broker(i + 1, r.port) for i, r in enumerate(responders)]
        requests = tt.make_requests(brokers, max(n for n, _ in plans))
        seen: dict[int, list[int]] = {b.id: [] for b in brokers}
        channel = AsyncControllerChannel(**OPTIONS)
        channel.startup(brokers)
        for (n, _), b in zip(plans, brokers, strict=True):
            for req in requests[b.id][:n]:
                channel.send(b.id, req, lambda resp, b=b.id, e=req.builder.controller_epoch: seen[b].append(e))
        idle = await channel.wait_until_idle(15)
        await channel.shutdown()
        leftover = asyncio.all_tasks() - baseline
        for r in responders:
            await r.stop()
        return idle, seen, responders, leftover

    idle, seen, responders, leftover = asyncio.run(asyncio.wait_for(main(), tt.TEST_TIMEOUT))
    assert idle
    assert leftover == set()
    for (n, actions), r, (bid, epochs) in zip(plans, responders, seen.items(), strict=True):
        assert epochs == list(range(1, n + 1)), f"broker {bid}"
        assert r.violations == []
        got = r.received
        deduped = [x.controller_epoch for i, x in enumerate(got) if i == 0 or got[i - 1].controller_epoch != x.controller_epoch]
        assert deduped == list(range(1, n + 1))
        fails = expected_failures(actions, len(got))
        for k in range(len(got) - 1):
            resent = got[k + 1].controller_epoch == got[k].controller_epoch
            assert resent == fails[k], (k, actions)
            if resent:
                assert got[k + 1].correlation_id == got[k].correlation_id + 1
                assert got[k + 1].conn == got[k].conn + 1
        assert not fails[-1]
    assert tt.sockets_of(tt.open_fds()) == sockets_before


ops = st.lists(
    st.one_of(st.tuples(st.just("send"), st.integers(min_value=1, max_value=4)), st.just(("bounce", 0))),
    min_size=1, max_size=8,
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=ops, delay=st.sampled_from(["answer", "delay:0.005", "delay:0.02"]))
def test_removal_drops_what_was_queued_and_later_requests_use_new_connections(tt, servers, script, delay):
    """The threaded manager under sends and bounces (remove_broker then add_broker) of one broker:
    no callback of a removed period after its removal; the last period's requests all answered,
    in order; a new period never reuses an old connection; never two requests in flight."""
    import threading

    from ctrlbatch.transport import ControllerChannelManager

    r = servers.responder(lambda n: delay)
    b = tt.broker(1, r.port)
    total = sum(k for op, k in script if op == "send")
    requests = tt.make_requests([b], max(total, 1))[1]
    lock = threading.Lock()
    periods: list[dict[str, object]] = [{"sent": [], "seen": [], "removed": False, "late": 0}]
    epoch_period: dict[int, int] = {}
    sent = 0
    with ControllerChannelManager(**OPTIONS) as channel:
        channel.startup([b])
        for op, k in script:
            period = periods[-1]
            if op == "send":
                for _ in range(k):
                    req = requests[sent]
                    sent += 1
                    epoch = req.builder.controller_epoch
                    epoch_period[epoch] = len(periods) - 1
                    period["sent"].append(epoch)

                    def callback(resp, period=period, epoch=epoch):
                        with lock:
                            if period["removed"]:
                                period["late"] += 1
                            period["seen"].append(epoch)

                    channel.send(1, req, callback)
            else:
                channel.remove_broker(1)
                with lock:
                    period["removed"] = True
                channel.add_broker(b)
                periods.append({"sent": [], "seen": [], "removed": False, "late": 0})
        assert channel.wait_until_idle(tt.TEST_TIMEOUT)
    for p in periods[:-1]:
        assert p["late"] == 0
        assert p["seen"] == p["sent"][: len(p["seen"])]
    assert periods[-1]["seen"] == periods[-1]["sent"]
    assert r.violations == []
    last_conn: dict[int, int] = {}
    for x in r.received:
        p = epoch_period[x.controller_epoch]
        assert all(x.conn > c for q, c in last_conn.items() if q < p), "a later period reused a connection"
        last_conn[p] = max(last_conn.get(p, -1), x.conn)
