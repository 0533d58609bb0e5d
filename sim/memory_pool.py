"""MemoryPool: the request bytes a server process may hold at once (Kafka's queued.max.request.bytes).

Rules (SocketServer's memory pool, kafka-controller-channel.md §6.2; server.py says what is charged):
- ``take(size)`` always admits (the held bytes may go over the capacity): server.py takes small
  frames so, and what they cost, so that a heartbeat or a registration never waits behind big
  requests (Kafka's pool has no such class; it lets every reservation wait).
- ``reserve(size, owner, on_granted)``: a reservation that fits is granted at once, even while
  bigger ones wait. Waiters are granted in arrival order as memory comes back, each one that fits
  (Kafka retries muted connections in no set order). A reservation larger than the whole budget is
  granted when nothing else is held, so a frame up to socket.request.max.bytes is always served
  eventually. (Kafka's pool is not strict: it lets the held bytes overshoot by one request; this
  one never overshoots through ``reserve`` unless the pool is empty.) A waiting owner's connection
  stops being read meanwhile, so its bytes stay in the kernel's socket buffer: nothing is lost.
- Progress (``reserve(..., progress=True)``, the chunks of frames being received): when such a
  reservation does not fit and no owner holds the overdraft, its owner takes the overdraft and is
  granted anyway; it keeps it, and later progress reservations of its own are granted too, until
  ``finish(owner)`` (its frame is decoded, or its connection closed), which passes the overdraft to
  the first progress waiter. Partial frames that share out the whole budget would otherwise wait
  for each other for ever; so one frame always completes, and the held bytes overshoot the
  capacity by at most one frame (socket.request.max.bytes), as Kafka's pool overshoots by one request.
- ``capacity`` -1 means no budget (Kafka's default for queued.max.request.bytes).
- Sans-I/O and single-threaded: the loop's thread calls it; a grant runs the waiter's callback.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

__all__ = ["UNLIMITED", "MemoryPool"]

UNLIMITED = -1


class MemoryPool:
    """``reserve(size, on_granted)`` is True when granted now; else ``on_granted()`` runs later."""

    def __init__(self, capacity: int = UNLIMITED) -> None:
        if not isinstance(capacity, int) or isinstance(capacity, bool) or (capacity < 0 and capacity != UNLIMITED):
            raise ValueError(f"capacity must be a number of bytes >= 0, or -1 for no budget; got {capacity!r}")
        self.capacity = capacity
        self.held = 0
        self.peak = 0
        self.waits = 0  # reservations that had to wait
        self._waiting: collections.OrderedDict[object, tuple[int, Callable[[], None], bool]] = collections.OrderedDict()
        self.overdraft: object | None = None
        """The owner allowed past the capacity (progress reservations, module rules), if any."""

    def __repr__(self) -> str:
        cap = "unlimited" if self.capacity == UNLIMITED else f"{self.capacity} bytes"
        return f"MemoryPool({self.held} held of {cap}, {len(self._waiting)} waiting)"

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _fits(self, size: int) -> bool:
        return self.capacity == UNLIMITED or self.held + size <= self.capacity or self.held == 0

    def _take(self, size: int) -> None:
        self.held += size
        if self.held > self.peak:
            self.peak = self.held

    def reserve(self, size: int, owner: object, on_granted: Callable[[], None], *, progress: bool = False) -> bool:
        """Reserve ``size`` bytes for ``owner`` (one waiting reservation per owner)."""
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size}")
        if self._fits(size) or (progress and self.overdraft in (None, owner)):
            if not self._fits(size):
                self.overdraft = owner
            self._take(size)
            return True
        if owner in self._waiting:
            raise RuntimeError(f"{owner!r} already waits for {self._waiting[owner][0]} bytes")
        self._waiting[owner] = (size, on_granted, progress)
        self.waits += 1
        return False

    def finish(self, owner: object) -> None:
        """owner's frame is done: it gives up the overdraft, if it had it."""
        if self.overdraft is owner:
            self.overdraft = None
            self._grant()

    def take(self, size: int) -> None:
        """Hold ``size`` bytes now, whatever is held (small frames: see the module rules)."""
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size}")
        self._take(size)

    def release(self, size: int) -> None:
        if not 0 <= size <= self.held:
            raise ValueError(f"cannot release {size} bytes: {self.held} are held")
        self.held -= size
        self._grant()

    def cancel(self, owner: object) -> None:
        """Forget owner's waiting reservation (its connection closed); the next waiter may fit now."""
        waited = self._waiting.pop(owner, None) is not None
        if self.overdraft is owner:
            self.overdraft = None
        elif not waited:
            return
        self._grant()

    def _grant(self) -> None:
        for owner, (size, on_granted, progress) in list(self._waiting.items()):
            if owner not in self._waiting:
                continue
            if self._fits(size):
                del self._waiting[owner]
            elif progress and self.overdraft is None:
                del self._waiting[owner]
                self.overdraft = owner
            else:
                continue
            self._take(size)
            on_granted()
