"""The boundary between the engine and the network: OutboundRequest and the Transport protocol.

Rules: the engine never does I/O. It hands each request to transport.send(broker_id, request,
callback), which must not block (Kafka's sendRequest only enqueues, CCM:384-386). A request
knows its api key, version and body, and encodes its whole frame (size, header, body) on
demand; encode_parts returns the frame as buffers whose body parts are views of bytes shared
with other brokers' requests, so a network transport can writelines() them without copying.
Callbacks receive the decoded response message.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from ctrlbatch.requests import APIS, request_head, request_header_version
from ctrlbatch.requests.model import Message

from .builders import Builder, SharedBody

ResponseCallback = Callable[[Any], None]
_CORRELATION_ID = struct.Struct(">i")
_ID_AT = 8  # the correlation id in a frame: after the size prefix, api key and api version (every header version)


@attrs.define(slots=True, eq=False, repr=False)
class OutboundRequest:
    """One control request to one broker: a builder (shared content) plus this broker's epoch."""

    builder: Builder
    broker_epoch: int
    shared: SharedBody
    _body: Message | None = attrs.field(default=None, repr=False)
    _frame: tuple[str | None, bytes, bytes, list[bytes | memoryview]] | None = attrs.field(default=None, repr=False)

    def __repr__(self) -> str:
        """Short whatever the size: api, version, epoch, body size (the states are in .body)."""
        name = APIS[self.api_key].name if self.api_key in APIS else f"api {self.api_key}"
        return (
            f"<OutboundRequest {name} v{self.version}, broker epoch {self.broker_epoch}, "
            f"{self.shared.size:,} body bytes, {self.builder!r}>"
        )

    @property
    def api_key(self) -> int:
        return self.builder.api_key

    @property
    def version(self) -> int:
        return self.builder.version

    @property
    def body(self) -> Any:
        """The request message, as Kafka's builder builds it (built on first use)."""
        if self._body is None:
            self._body = self.builder.build(self.broker_epoch)
        return self._body

    @property
    def header_version(self) -> int:
        return request_header_version(self.api_key, self.version)

    def body_size(self) -> int:
        return self.shared.size

    def encode_parts(self, correlation_id: int, client_id: str | None) -> list[bytes | memoryview]:
        """The frame as buffers: size prefix and header, then the body (views of shared bytes).
        Everything but the correlation id is made on the first call and kept (a try that is
        retried, and the channel's every try, reuse it): the header around the id and the body's
        pieces, which are the same for every try of this request."""
        kept = self._frame
        if kept is None or kept[0] != client_id:
            head = request_head(self.api_key, self.version, 0, client_id, len(self.shared.data))
            kept = self._frame = (client_id, head[:_ID_AT], head[_ID_AT + 4 :], self.shared.pieces(self.broker_epoch))
        try:
            correlation = _CORRELATION_ID.pack(correlation_id)
        except struct.error:  # request_head names the field in its EncodeError
            return [request_head(self.api_key, self.version, correlation_id, client_id, len(self.shared.data))]
        return [kept[1], correlation, kept[2], *kept[3]]

    def encode(self, correlation_id: int, client_id: str | None) -> bytes:
        """The whole size-prefixed frame."""
        return b"".join(self.encode_parts(correlation_id, client_id))

    def encode_body(self) -> bytes:
        return b"".join(self.shared.pieces(self.broker_epoch))


class Transport(Protocol):
    def send(self, broker_id: int, request: OutboundRequest, callback: ResponseCallback | None) -> None:
        """Queue request for broker_id; never block. callback(response) runs when it is answered."""
        ...


class RecordingTransport:
    """Keeps what was sent, per broker, in send order: .sent[broker_id] = [(request, callback)]."""

    def __init__(self) -> None:
        self.sent: dict[int, list[tuple[OutboundRequest, ResponseCallback | None]]] = {}

    def __repr__(self) -> str:
        counts = ", ".join(f"{b}: {len(items)}" for b, items in self.sent.items())
        total = sum(len(items) for items in self.sent.values())
        return f"<RecordingTransport {total} requests to {len(self.sent)} brokers {{{counts:.200}}}>"

    def send(self, broker_id: int, request: OutboundRequest, callback: ResponseCallback | None) -> None:
        self.sent.setdefault(broker_id, []).append((request, callback))

    def requests_for(self, broker_id: int, api_key: int | None = None) -> list[OutboundRequest]:
        return [r for r, _ in self.sent.get(broker_id, ()) if api_key is None or r.api_key == api_key]

    def clear(self) -> None:
        self.sent.clear()
