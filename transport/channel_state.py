"""One broker's send queue as a pure state machine (sans-I/O): what to send next, and what to do
when a try ends.

Rules (Kafka 3.9 RequestSendThread, kafka-controller-channel.md §3, §4, §5):
- One unbounded FIFO queue. take() moves the head out of the queue (recording its queue time) and
  makes it the current item, which is tried until a try settles it; the items behind it wait, so
  the order per broker is kept (head-of-line blocking).
- At most one try in flight. Each try gets the next correlation id of this broker's client: from 0,
  skipping the range Kafka reserves for SASL at the top of int32 (NetworkClient.nextCorrelationId).
- How a try ends is an Ending; ACTIONS says, as data, whether the connection is closed, whether
  to back off, whether the same item is tried again and whether the callback runs.
- on_frame() matches a response by correlation id and decodes it with the in-flight request's api
  key and version. A mismatch or an undecodable frame is a failed try (retried, like Kafka's
  CorrelationIdMismatchException and SchemaException out of poll). An api key other than
  LeaderAndIsr, StopReplica or UpdateMetadata drops the item without a callback (CCM:275-276).
- Decoding a response is the hot path's biggest part (issue 14), so each (api key, version) gets
  one decoder, made on first use: the header is read in place when it is the correlation id
  (already checked) alone or followed by an empty tagged-field section (a 0 byte), and the body
  is decoded from the frame at its offset by the message's own generated decoder (no view, no
  copy, no second lookup). Any other header, a body error or trailing bytes go through the header
  and body decoders separately, as before, so a malformed response gets the same DecodeError
  (offsets counted from the body's first byte). Decoding an UpdateMetadata v8 answer went from
  8.2 to 3.8 us (timeit, load 2.5), from 24% to 8% of the channel thread's py-spy samples; with
  the sender changes of async_channel.py the channel's CPU per round trip with 50 brokers fell
  from 55 to 39-46 us, 0.51x -> 0.75-0.79x the minimal asyncio client (channel_bench.py, load 3-7).
  A small answer seen before (its bytes after the correlation id) is not decoded again: its
  kept body is returned (bounded, see _KNOWN_FRAMES; issue 26).
- abandon() (broker removed, channel shut down) clears the queue and the current item: no
  callback runs for them.
- No clock and no I/O here: callers pass `now` (seconds) and carry out the actions.
"""

from __future__ import annotations

import enum
import logging
import struct
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from ctrlbatch.requests import (
    DecodeError,
    ResponseHeader,
    UnsupportedVersionError,
    api,
    response_header_version,
)

__all__ = [
    "ACTIONS",
    "CONTROL_API_KEYS",
    "Action",
    "BrokerChannelState",
    "BrokerCounters",
    "Ending",
    "QueueItem",
    "Sendable",
    "TryResult",
    "next_correlation_id",
]

# LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA: the only answers the send thread accepts.
CONTROL_API_KEYS = frozenset({4, 5, 6})
# SaslClientAuthenticator reserves [MAX_INT - 7, MAX_INT]; NetworkClient wraps to 0 before them.
_MIN_RESERVED_CORRELATION_ID = 2**31 - 1 - 7
_CORRELATION = struct.Struct(">i")
_response_decoders: dict[tuple[int, int], Callable[[bytes], Any]] = {}
# Small answers repeat byte for byte (an UpdateMetadata answer is its error code: nearly always
# NONE), so each (api key, version) keeps the bodies of the first _KNOWN_FRAMES distinct small
# frames (header tags and body, up to _KNOWN_FRAME_BYTES) it decoded, under those bytes. A body
# is a frozen value of tuples and ints (its unknown tagged fields too), a function of the bytes
# at that version, so the kept one equals a fresh decoding; only well-formed frames are kept.
_KNOWN_FRAME_BYTES = 64
_KNOWN_FRAMES = 256


def _decode_response(frame: bytes, api_key: int, version: int) -> Any:
    """The body of a response frame (header included, size prefix not), fully decoded and checked
    (decode_response's decoders and DecodeErrors); the decoder of (api_key, version) is made once."""
    key = (api_key, version)
    decode = _response_decoders.get(key)
    if decode is None:
        decode = _response_decoders[key] = _response_decoder(api_key, version)
    return decode(frame)


def _response_decoder(api_key: int, version: int) -> Callable[[bytes], Any]:
    """A decoder of the responses of (api_key, version), fast for a well-formed frame (see the
    module rules): the header is read in place when it has no tagged fields, the body is decoded
    from the frame at its offset; anything else goes to _decode_checked, which words the error."""
    cls = api(api_key).response
    header_version = response_header_version(api_key, version)
    decode_body = cls.decode_prefix
    # The header is the correlation id (checked by on_frame), then in v1 the tagged fields.
    body_at = 4 if header_version == 0 else 5
    known: dict[bytes, Any] = {}  # small frames' bytes after the correlation id -> their body

    def decode(frame: bytes) -> Any:
        small = len(frame) <= _KNOWN_FRAME_BYTES
        if small:
            after_id = frame[4:]
            body = known.get(after_id)
            if body is not None:
                return body
        if body_at == 4 or frame[4:5] == b"\x00":
            try:
                body, end = decode_body(frame, version, body_at)
            except DecodeError:
                pass
            else:
                if end == len(frame):
                    if small and len(known) < _KNOWN_FRAMES:
                        known[after_id] = body
                    return body
        return _decode_checked(frame, cls, header_version, version)

    return decode


def _decode_checked(frame: bytes, cls: Any, header_version: int, version: int) -> Any:
    """decode_response(frame, api_key, version)'s body: the same decoders, the same DecodeErrors,
    with offsets in the body counted from its first byte."""
    _, pos = ResponseHeader.decode_prefix(frame, header_version)
    return cls.decode(memoryview(frame)[pos:], version)


class Sendable(Protocol):
    """What the channel needs of a request (ctrlbatch.batch.OutboundRequest has it)."""

    @property
    def api_key(self) -> int: ...

    @property
    def version(self) -> int: ...

    def encode_parts(self, correlation_id: int, client_id: str | None) -> list[bytes | memoryview]: ...


class Ending(enum.Enum):
    """How one try (or the wait for a connection) ended."""

    # Members are singletons: identity hashing keeps ACTIONS[ending] (twice per round trip) off
    # Enum's Python-level __hash__.
    __hash__ = object.__hash__

    ANSWERED = "answered"
    CONNECT_FAILED = "connect failed"
    CONNECTION_LOST = "connection lost"
    REQUEST_TIMED_OUT = "request timed out"
    CORRELATION_MISMATCH = "correlation id mismatch"
    UNDECODABLE_RESPONSE = "undecodable response"
    UNSOLICITED_RESPONSE = "response with no request in flight"
    UNEXPECTED_API_KEY = "unexpected api key"
    CALLBACK_FAILED = "callback raised"


@attrs.frozen
class Action:
    """What the I/O layer does after an Ending."""

    close: bool  # close the connection (a later try reconnects)
    backoff: bool  # pause backoff_ms before the next try
    retry: bool  # the same item stays current and is tried again
    deliver: bool  # hand the response to the callback
    log_level: int


_RETRY = Action(close=True, backoff=True, retry=True, deliver=False, log_level=logging.WARNING)
_DROP = Action(close=True, backoff=False, retry=False, deliver=False, log_level=logging.ERROR)

# CCM:238-294: the inner catch retries after close + 100 ms; the outer catch closes and drops.
ACTIONS: dict[Ending, Action] = {
    Ending.ANSWERED: Action(close=False, backoff=False, retry=False, deliver=True, log_level=logging.DEBUG),
    Ending.CONNECT_FAILED: _RETRY,
    Ending.CONNECTION_LOST: _RETRY,
    Ending.REQUEST_TIMED_OUT: _RETRY,
    Ending.CORRELATION_MISMATCH: _RETRY,
    Ending.UNDECODABLE_RESPONSE: _RETRY,
    # Bytes while nothing is in flight: the next poll would fail the next try, so close now.
    Ending.UNSOLICITED_RESPONSE: Action(
        close=True, backoff=False, retry=True, deliver=False, log_level=logging.WARNING
    ),
    Ending.UNEXPECTED_API_KEY: _DROP,
    Ending.CALLBACK_FAILED: _DROP,
}


def next_correlation_id(current: int) -> int:
    """The id after `current`, wrapping to 0 before Kafka's reserved SASL ids."""
    following = current + 1
    return 0 if following >= _MIN_RESERVED_CORRELATION_ID else following


@attrs.define(eq=False)
class QueueItem:
    """A queued request: Kafka's QueueItem(apiKey, builder, callback, enqueueTimeMs).

    Slotted but not frozen, like TryResult: one is made per request (per answer), and a frozen
    class's __init__ sets each field through object.__setattr__ (5% of the channel thread's
    py-spy samples with 50 brokers, issue 26). Nothing changes one after it is made."""

    request: Sendable
    callback: Callable[[Any], None] | None
    enqueue_time: float


@attrs.define(slots=True)
class BrokerCounters:
    """Plain counters for one broker; a snapshot is BrokerMetrics (metrics.py)."""

    dequeued: int = 0  # RequestRateAndQueueTimeMs count
    queue_time_total_ms: float = 0.0
    queue_time_max_ms: float = 0.0
    tries: int = 0
    answered: int = 0
    retries: int = 0
    dropped: int = 0  # settled without a callback (callback error, unexpected api key)
    bytes_sent: int = 0
    bytes_received: int = 0


@attrs.define(eq=False)
class TryResult:
    """What on_frame found: the ending, and the response when it was answered (never changed)."""

    ending: Ending
    response: Any = None
    detail: str = ""


@attrs.define(slots=True, eq=False)
class BrokerChannelState:
    """The queue, the current item and the in-flight try of one broker."""

    broker_id: int
    queue: deque[QueueItem] = attrs.field(factory=deque)
    current: QueueItem | None = None
    in_flight: int | None = None  # correlation id of the try awaiting its response
    counters: BrokerCounters = attrs.field(factory=BrokerCounters)
    _last_correlation_id: int = -1

    @property
    def queue_size(self) -> int:
        """Kafka's QueueSize gauge: the queued items; the one being sent is not counted."""
        return len(self.queue)

    @property
    def pending(self) -> int:
        """Items not settled yet: queued plus the current one."""
        return len(self.queue) + (self.current is not None)

    def enqueue(self, request: Sendable, callback: Callable[[Any], None] | None, now: float) -> None:
        self.queue.append(QueueItem(request, callback, now))

    def take(self, now: float) -> QueueItem | None:
        """Make the queue head current (recording its queue time), or None when the queue is empty."""
        if self.current is not None:
            raise RuntimeError(f"broker {self.broker_id}: take() while an item is still current")
        if not self.queue:
            return None
        item = self.current = self.queue.popleft()
        waited_ms = max(0.0, (now - item.enqueue_time) * 1000.0)
        c = self.counters
        c.dequeued += 1
        c.queue_time_total_ms += waited_ms
        if waited_ms > c.queue_time_max_ms:
            c.queue_time_max_ms = waited_ms
        return item

    def start_try(self) -> int:
        """The correlation id of a new try of the current item; never two tries in flight."""
        if self.current is None:
            raise RuntimeError(f"broker {self.broker_id}: start_try() with no current item")
        if self.in_flight is not None:
            raise RuntimeError(f"broker {self.broker_id}: a try is already in flight ({self.in_flight})")
        cid = self._last_correlation_id = next_correlation_id(self._last_correlation_id)
        self.in_flight = cid
        self.counters.tries += 1
        return cid

    def on_frame(self, frame: bytes) -> TryResult:
        """Classify a response frame (without its size prefix) against the try in flight."""
        size = len(frame)
        self.counters.bytes_received += size + 4
        item = self.current
        expected = self.in_flight
        if expected is None or item is None:
            return TryResult(Ending.UNSOLICITED_RESPONSE, detail=f"{size} bytes")
        if size < 4:
            return TryResult(Ending.UNDECODABLE_RESPONSE, detail=f"a {size}-byte frame has no header")
        (cid,) = _CORRELATION.unpack_from(frame, 0)
        if cid != expected:
            return TryResult(
                Ending.CORRELATION_MISMATCH,
                detail=f"Correlation id for response ({cid}) does not match request ({expected})",
            )
        request = item.request
        api_key = request.api_key
        try:
            response = _decode_response(frame, api_key, request.version)
        except (DecodeError, UnsupportedVersionError) as e:
            return TryResult(Ending.UNDECODABLE_RESPONSE, detail=str(e))
        except Exception as e:  # a codec failure of another kind: still a bad frame, never a crash
            return TryResult(Ending.UNDECODABLE_RESPONSE, detail=f"{type(e).__name__}: {e}")
        if api_key not in CONTROL_API_KEYS:
            return TryResult(Ending.UNEXPECTED_API_KEY, detail=f"Unexpected apiKey received: {api_key}")
        return TryResult(Ending.ANSWERED, response)

    def end_try(self, ending: Ending) -> Action:
        """Settle the try (or connect attempt) that ended so; returns what to do next."""
        action = ACTIONS[ending]
        self.in_flight = None
        c = self.counters
        if ending is Ending.ANSWERED:
            c.answered += 1
        elif action.retry:
            c.retries += ending is not Ending.UNSOLICITED_RESPONSE
        else:
            c.dropped += 1
        if not action.retry:
            self.current = None
        return action

    def abandon(self) -> int:
        """Drop the queue, the current item and the try in flight; returns how many items."""
        dropped = self.pending
        self.queue.clear()
        self.current = None
        self.in_flight = None
        return dropped
