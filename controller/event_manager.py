"""ControllerEventManager: Kafka's single controller event queue, driven by the caller (no thread).

Rules (ControllerEventManager.scala, cited CEM:line):
- One FIFO queue. ``put`` enqueues and returns the ``QueuedEvent`` (CEM:106-110);
  ``clear_and_put`` drains the queue, preempts every drained event in order, then enqueues
  (CEM:112-117): the drained events' callbacks answer NOT_CONTROLLER or ControllerMovedException.
- A QueuedEvent is processed or preempted at most once (CEM:45-61).
- Kafka's event thread takes one event at a time; here the driver calls ``process_events()``
  (or ``process_one()``), which runs events until the queue is empty or ``max_events`` ran, so a
  handler that keeps enqueuing cannot loop forever. Events enqueued while one runs wait their turn.
- While an event runs, ``state`` is its ControllerState, Idle otherwise (CEM:131-148). The
  processor's own errors are caught here and logged ("Uncaught error processing event", CEM:144);
  KafkaController.process catches first (ControllerMovedException -> maybe_resign).
- ``close()`` is CEM:91-102: preempt everything queued; events put afterwards (a late response,
  a watch) are dropped, as Kafka's stopped thread never takes them (no error for the caller).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from .events import ControllerState, state_of

__all__ = ["ControllerEventManager", "ControllerEventProcessor", "QueuedEvent"]

_log = logging.getLogger("ctrlbatch.controller.event_manager")

DEFAULT_MAX_EVENTS = 1_000_000


class ControllerEventProcessor(Protocol):
    def process(self, event: Any) -> None: ...

    def preempt(self, event: Any) -> None: ...


class QueuedEvent:
    """An event and when it was enqueued; spent once processed or preempted."""

    __slots__ = ("event", "enqueue_time_ms", "spent")

    def __init__(self, event: Any, enqueue_time_ms: int) -> None:
        self.event = event
        self.enqueue_time_ms = enqueue_time_ms
        self.spent = False

    def __repr__(self) -> str:
        return f"QueuedEvent(event={self.event!r:.200}, enqueueTimeMs={self.enqueue_time_ms})"

    def process(self, processor: ControllerEventProcessor) -> bool:
        if self.spent:
            return False
        self.spent = True
        processor.process(self.event)
        return True

    def preempt(self, processor: ControllerEventProcessor) -> None:
        if self.spent:
            return
        self.spent = True
        processor.preempt(self.event)


class ControllerEventManager:
    """The queue and its one-at-a-time processing (see the module rules)."""

    def __init__(self, controller_id: int, processor: ControllerEventProcessor, clock_ms: Callable[[], int]) -> None:
        self.controller_id = controller_id
        self.processor = processor
        self.clock_ms = clock_ms
        self._queue: deque[QueuedEvent] = deque()
        self._state = ControllerState.IDLE
        self._closed = False
        self.processed = 0
        """Events processed so far (a counter for drivers and tests)."""

    def __repr__(self) -> str:
        return f"<ControllerEventManager controller {self.controller_id}: {len(self._queue)} queued, state {self._state.name}>"

    @property
    def state(self) -> ControllerState:
        return self._state

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def is_empty(self) -> bool:
        return not self._queue

    def queued_events(self) -> list[Any]:
        """The queued events, oldest first (a copy)."""
        return [q.event for q in self._queue]

    def put(self, event: Any) -> QueuedEvent:
        state_of(event)  # refuses what is no controller event, here rather than when it runs
        queued = QueuedEvent(event, self.clock_ms())
        if self._closed:  # Kafka's queue still takes it, but no thread will ever run it
            queued.spent = True
            _log.debug("[ControllerEventThread controllerId=%d] closed: dropping %.200r", self.controller_id, event)
            return queued
        self._queue.append(queued)
        return queued

    def clear_and_put(self, event: Any) -> QueuedEvent:
        self._preempt_all()
        return self.put(event)

    def _preempt_all(self) -> None:
        drained = list(self._queue)
        self._queue.clear()
        for queued in drained:
            queued.preempt(self.processor)

    def close(self) -> None:
        """Preempt what is queued and accept nothing more (ShutdownEventThread, CEM:91-102)."""
        self._preempt_all()
        self._closed = True

    def process_one(self) -> bool:
        """Process the oldest event, if any; False when the queue was empty."""
        if not self._queue:
            return False
        queued = self._queue.popleft()
        self._state = state_of(queued.event)
        try:
            if queued.process(self.processor):
                self.processed += 1
        except Exception:
            _log.exception("[ControllerEventThread controllerId=%d] Uncaught error processing event %.200r",
                           self.controller_id, queued.event)
        finally:
            self._state = ControllerState.IDLE
        return True

    def process_events(self, max_events: int = DEFAULT_MAX_EVENTS) -> int:
        """Process events until the queue is empty or ``max_events`` ran; returns how many ran."""
        if type(max_events) is not int or max_events < 0:
            raise ValueError(f"max_events must be an int >= 0, not {max_events!r:.80}")
        ran = 0
        while ran < max_events and self.process_one():
            ran += 1
        return ran
