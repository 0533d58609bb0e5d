"""FairQueue: the frame server's run queue, least recently served connection first (issue 24, attack 9)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.sim.fair_queue import NEVER, FairQueue

KEYS = st.integers(0, 5)
# ("push", key, urgent) | ("pop", 0, False) | ("forget", key, False), forgets rarer (a closed connection)
KINDS = ("push",) * 5 + ("pop",) * 4 + ("forget",)
OPS = st.lists(st.tuples(st.sampled_from(KINDS), KEYS, st.booleans()), max_size=200)

def test_a_key_served_long_ago_goes_ahead_of_the_flooders() -> None:
    q: FairQueue[str, int] = FairQueue()
    for i in range(3):
        for k in ("f1", "f2", "f3"):
            q.push(k, i)
    assert [q.pop() for _ in range(3)] == [("f1", 0), ("f2", 0), ("f3", 0)]  # never served: arrival order
    q.push("polite", 0)  # never served: ahead of the flooders, each served once already
    assert q.pop() == ("polite", 0)
    assert [q.pop() for _ in range(3)] == [("f1", 1), ("f2", 1), ("f3", 1)]
    q.push("polite", 1)  # served 4 dispatches ago, before f1, f2 and f3 were last served
    assert q.pop() == ("polite", 1)
    assert [q.pop() for _ in range(3)] == [("f1", 2), ("f2", 2), ("f3", 2)]
    assert q.dispatches == 11 and not q and q.last_served("polite") == 8 and q.last_served("f3") == 11


def test_forget_returns_the_items_and_the_key_starts_afresh() -> None:
    q: FairQueue[str, int] = FairQueue()
    q.push("b", 1)
    q.push("a", 1)
    assert [q.pop(), q.pop()] == [("b", 1), ("a", 1)]
    q.push("a", 2)
    q.push("a", 3)
    q.push("b", 2)
    assert q.forget("a") == [2, 3] and "a" not in q and q.last_served("a") == NEVER
    q.push("a", 4)  # queued again after the forget: never served now (its old heap entry is stale, skipped)
    assert [q.pop(), q.pop()] == [("a", 4), ("b", 2)]  # else b, served before a, would go first
    assert not q and q.forget("zzz") == []
    with pytest.raises(IndexError, match="empty FairQueue"):
        q.pop()


@given(OPS)
def test_order_fifo_per_key_turns_and_no_starvation(ops: list[tuple[str, int, bool]]) -> None:
    q: FairQueue[int, int] = FairQueue()
    pushed: dict[int, list[tuple[int, bool]]] = {}  # key -> (item, urgent) queued, oldest first (the model)
    served: dict[int, int] = {}  # key -> the dispatch that last served it (the model)
    turn: dict[int, int] = {}  # key -> its turn in the queue, set when its head item became head
    head_since: dict[int, tuple[int, set[tuple[int, int]]]] = {}  # key -> (dispatches when its head item became
    # head, the keys known since, each (key, incarnation): a forgotten key queued again is a new one)
    incarnation = dict.fromkeys(range(6), 0)
    serial = 0

    def known() -> set[tuple[int, int]]:
        return {(k, incarnation[k]) for k in pushed}

    def enter(k: int) -> None:
        head_since[k] = (q.dispatches, known())
        # the last service (never: before all), one dispatch per key with a service number earlier if urgent
        turn[k] = served.get(k, NEVER) - (len(served) if pushed[k][0][1] else 0)

    for op, key, urgent in ops:
        if op == "push":
            serial += 1
            pushed.setdefault(key, []).append((serial, urgent))
            if len(pushed[key]) == 1:
                enter(key)
            q.push(key, serial, urgent)
            for _, seen in head_since.values():
                seen.add((key, incarnation[key]))
        elif op == "forget":
            assert q.forget(key) == [item for item, _ in pushed.pop(key, [])]
            served.pop(key, None)
            head_since.pop(key, None)
            incarnation[key] += 1
        elif not any(pushed.values()):
            with pytest.raises(IndexError):
                q.pop()
        else:
            waiting = [k for k, items in pushed.items() if items]
            k, item = q.pop()
            assert item == pushed[k].pop(0)[0]  # FIFO per key
            assert turn[k] == min(turn[w] for w in waiting)  # the key whose turn is first
            # no starvation: from becoming its key's head, an item waits at most two pops per key seen meanwhile
            began, seen = head_since.pop(k)
            assert q.dispatches - began <= 2 * len(seen | {(k, incarnation[k])})
            served[k] = q.dispatches
            if pushed[k]:
                enter(k)
        assert len(q) == sum(len(items) for items in pushed.values())
        assert {k for k in range(6) if k in q} == {k for k, items in pushed.items() if items}


def test_an_urgent_item_goes_ahead_of_every_key_served_in_the_last_round() -> None:
    q: FairQueue[str, int] = FairQueue()
    for k in ("polite", "f1", "f2", "f3"):
        q.push(k, 0)
    assert [q.pop()[0] for _ in range(4)] == ["polite", "f1", "f2", "f3"]  # never served: arrival order
    for i in (1, 2):
        for k in ("f1", "f2", "f3"):
            q.push(k, i)
    assert q.pop() == ("f1", 1)
    q.push("polite", 1, urgent=True)  # served at dispatch 1, not pipelined: counted one round (4 keys) earlier
    assert q.turn("polite", True) == 1 - 4 and q.turn("polite", False) == 1
    q.push("polite", 2)  # and its next, pipelined, goes by its last service alone
    assert q.pop() == ("polite", 1)
    assert [q.pop() for _ in range(3)] == [("f2", 1), ("f3", 1), ("f1", 2)]
    assert q.pop() == ("polite", 2)
    q.push("polite", 3, urgent=True)  # served at 10, urgent: turn 6, ahead of f2 (served at 7) and f3 (8)
    assert [q.pop()[0] for _ in range(3)] == ["polite", "f2", "f3"]
    q.push("polite", 4)  # pipelined: its last service alone (11), behind f1 (9); urgent, it would be 7
    q.push("f1", 3)
    assert [q.pop()[0] for _ in range(2)] == ["f1", "polite"] and not q
