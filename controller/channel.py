"""The controller's side of ControllerChannelManager: a ``Channel`` protocol and a recording one.

Rules:
- ``Channel`` is what KafkaController needs from a network layer: ``send`` (never blocks; the
  callback gets the decoded response), ``add_broker`` and ``remove_broker`` (CCM:86-115). It is
  the shape of sim/controller_logic.py's ``Channel`` and of ctrlbatch.transport's channel, so
  either drives a KafkaController.
- ``RecordingChannel`` (for tests and embedding) keeps every send, per broker and in one global
  order, and answers nothing by itself. As Kafka's channel manager does (CCM:86-99), a send to a
  broker that is not registered is dropped and its callback never runs; the drop is recorded in
  ``dropped`` so a test can assert that none happened. ``add_broker`` of a known id is a no-op
  (CCM:101-109); ``remove_broker`` forgets the broker's undelivered requests (CCM:193-209).
- ``deliver_all`` answers the pending requests in send order through a caller's function, so a
  driver decides what each broker replies; responses only enqueue controller events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import attrs

from ctrlbatch.batch.transport import OutboundRequest, RecordingTransport, ResponseCallback
from ctrlbatch.context import Broker

__all__ = ["Channel", "PendingRequest", "RecordingChannel"]


class Channel(Protocol):
    def send(self, broker_id: int, request: OutboundRequest, callback: ResponseCallback | None) -> None: ...

    def add_broker(self, broker: Broker) -> None: ...

    def remove_broker(self, broker_id: int) -> None: ...


@attrs.define(slots=True)
class PendingRequest:
    """One request sent and not yet answered."""

    broker_id: int
    request: OutboundRequest
    callback: ResponseCallback | None


class RecordingChannel(RecordingTransport):
    """A channel that records (see the module rules). ``sent`` is RecordingTransport's per-broker
    record; ``history`` is every accepted send in order; ``pending`` the unanswered ones."""

    def __init__(self) -> None:
        super().__init__()
        self.brokers: dict[int, Broker] = {}
        self.history: list[tuple[int, OutboundRequest]] = []
        self.pending: list[PendingRequest] = []
        self.dropped: list[tuple[int, OutboundRequest]] = []
        self.membership: list[tuple[str, int]] = []

    def __repr__(self) -> str:
        return (
            f"<RecordingChannel {len(self.brokers)} brokers, {len(self.history)} sent, "
            f"{len(self.pending)} pending, {len(self.dropped)} dropped>"
        )

    def add_broker(self, broker: Broker) -> None:
        if not isinstance(broker, Broker):
            raise TypeError(f"add_broker: broker must be a Broker, not {type(broker).__name__}")
        if broker.id not in self.brokers:
            self.brokers[broker.id] = broker
            self.membership.append(("add", broker.id))

    def remove_broker(self, broker_id: int) -> None:
        if self.brokers.pop(broker_id, None) is not None:
            self.membership.append(("remove", broker_id))
            self.pending = [p for p in self.pending if p.broker_id != broker_id]

    def send(self, broker_id: int, request: OutboundRequest, callback: ResponseCallback | None) -> None:
        if broker_id not in self.brokers:
            self.dropped.append((broker_id, request))
            return
        super().send(broker_id, request, callback)
        self.history.append((broker_id, request))
        self.pending.append(PendingRequest(broker_id, request, callback))

    def requests(self, api_key: int | None = None) -> list[tuple[int, OutboundRequest]]:
        """Every accepted send (of one api, if given), in send order."""
        return [(b, r) for b, r in self.history if api_key is None or r.api_key == api_key]

    def deliver_all(self, answer: Callable[[int, OutboundRequest], Any], *, max_rounds: int = 1) -> int:
        """Answer the pending requests in send order: ``answer(broker_id, request)`` gives the
        response (None: no answer, the request is dropped). Requests sent while answering wait for
        the next round. Returns how many were answered."""
        answered = 0
        for _ in range(max_rounds):
            batch, self.pending = self.pending, []
            if not batch:
                break
            for item in batch:
                if item.broker_id not in self.brokers:
                    continue
                response = answer(item.broker_id, item.request)
                if response is not None and item.callback is not None:
                    item.callback(response)
                answered += 1
        return answered

    def clear(self) -> None:
        super().clear()
        self.history.clear()
        self.pending.clear()
        self.dropped.clear()
