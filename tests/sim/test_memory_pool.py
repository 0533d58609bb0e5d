"""MemoryPool: the request-byte budget shared by a server's connections (queued.max.request.bytes)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.sim.memory_pool import UNLIMITED, MemoryPool


def test_a_reservation_that_does_not_fit_waits_and_is_granted_on_release() -> None:
    pool = MemoryPool(100)
    granted: list[str] = []
    assert pool.reserve(60, "a", lambda: granted.append("a"))
    assert not pool.reserve(60, "b", lambda: granted.append("b"))
    assert pool.reserve(30, "c", lambda: granted.append("c"))  # what fits is granted, even past a waiter
    assert (pool.held, pool.waiting, granted) == (90, 1, [])
    pool.release(60)
    assert (pool.held, pool.waiting, granted) == (90, 0, ["b"])


def test_a_frame_bigger_than_the_budget_is_granted_when_nothing_is_held() -> None:
    pool = MemoryPool(100)
    granted: list[str] = []
    assert pool.reserve(10, "a", lambda: None)
    assert not pool.reserve(500, "big", lambda: granted.append("big"))
    pool.release(10)
    assert granted == ["big"] and pool.held == 500
    assert MemoryPool(100).reserve(500, "x", lambda: None)


def test_cancel_lets_the_next_waiter_in() -> None:
    pool = MemoryPool(100)
    granted: list[str] = []
    pool.reserve(50, "a", lambda: None)
    pool.reserve(80, "b", lambda: granted.append("b"))
    pool.reserve(40, "c", lambda: granted.append("c"))
    assert granted == [] and pool.waiting == 1  # c fitted at once (50 + 40 <= 100)
    pool.cancel("b")
    assert pool.waiting == 0 and pool.held == 90


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="capacity must be"):
        MemoryPool(-2)
    pool = MemoryPool(UNLIMITED)
    with pytest.raises(ValueError, match="size must be >= 0"):
        pool.reserve(-1, "a", lambda: None)
    with pytest.raises(ValueError, match="cannot release 5 bytes: 0 are held"):
        pool.release(5)


ops = st.lists(st.tuples(st.sampled_from(["reserve", "release", "cancel"]), st.integers(0, 9), st.integers(0, 150)),
               max_size=60)


@given(capacity=st.integers(1, 200), script=ops)
def test_held_bytes_stay_in_budget_and_every_waiter_is_served_once_all_is_released(capacity: int, script: list) -> None:
    pool = MemoryPool(capacity)
    holding: dict[int, list[int]] = {}  # owner -> sizes granted, not yet released
    waiting: dict[int, int] = {}

    def granted(owner: int) -> None:
        holding.setdefault(owner, []).append(waiting.pop(owner))

    for op, owner, size in script:
        if op == "reserve" and owner not in waiting:
            if pool.reserve(size, owner, lambda o=owner: granted(o)):
                holding.setdefault(owner, []).append(size)
            else:
                waiting[owner] = size
        elif op == "release" and holding.get(owner):
            pool.release(holding[owner].pop())
        elif op == "cancel" and owner in waiting:
            del waiting[owner]
            pool.cancel(owner)
        sizes = [s for held in holding.values() for s in held]
        assert pool.held == sum(sizes)
        # over budget only by one frame bigger than it, alone (empty frames hold nothing)
        assert pool.held <= capacity or len([s for s in sizes if s]) == 1
        assert pool.waiting == len(waiting)
    while any(holding.values()) or waiting:  # releasing everything serves every waiter
        owner = next(o for o, held in holding.items() if held)
        pool.release(holding[owner].pop())
    assert pool.held == 0 and pool.waiting == 0


def test_progress_reservations_never_wait_for_each_other() -> None:
    """Partial frames sharing out the whole budget: one of them takes the overdraft and goes on;
    finish() passes it to the first progress waiter."""
    pool = MemoryPool(100)
    granted: list[str] = []
    assert pool.reserve(60, "a", lambda: granted.append("a"), progress=True)
    assert pool.reserve(40, "b", lambda: granted.append("b"), progress=True)
    assert pool.reserve(50, "a", lambda: granted.append("a"), progress=True) and pool.overdraft == "a"
    assert not pool.reserve(10, "b", lambda: granted.append("b"), progress=True)  # one overdraft at a time
    assert not pool.reserve(5, "c", lambda: granted.append("c"))  # and plain reservations still wait
    pool.release(110)
    pool.finish("a")  # a's frame is decoded: c fits now, and b gets the overdraft only if it needs it
    assert granted == ["b", "c"] and pool.held == 40 + 10 + 5 and pool.overdraft is None
    assert pool.held <= 100


@given(capacity=st.integers(1, 100), script=st.lists(st.tuples(st.integers(0, 4), st.integers(1, 60)), max_size=40))
def test_frames_received_in_progress_chunks_always_complete(capacity: int, script: list[tuple[int, int]]) -> None:
    """Each owner receives a frame of ``size`` in chunks of 10; a finished frame is released and
    finished at once. Every frame completes, and the held bytes never pass capacity + one frame."""
    pool = MemoryPool(capacity)
    left: dict[int, int] = {}
    held: dict[int, int] = {}
    waiting: set[int] = set()

    def step(owner: int) -> None:
        while left.get(owner, 0) > 0 and owner not in waiting:
            chunk = min(10, left[owner])

            def got(o: int = owner, c: int = chunk) -> None:
                waiting.discard(o)
                held[o] = held.get(o, 0) + c
                left[o] -= c
                if left[o] == 0:
                    done(o)
                else:
                    step(o)

            if pool.reserve(chunk, owner, got, progress=True):
                held[owner] = held.get(owner, 0) + chunk
                left[owner] -= chunk
                if left[owner] == 0:
                    done(owner)
            else:
                waiting.add(owner)

    def done(owner: int) -> None:
        pool.release(held.pop(owner))
        pool.finish(owner)

    for owner, size in script:
        if owner not in left or left[owner] == 0:
            left[owner] = size
            step(owner)
        assert pool.held <= capacity + 60
    assert not waiting and pool.held == 0 and all(v == 0 for v in left.values())
