"""The one frame encoder of the replay's rows: both engines hash (and keep) their frames here.

Rules of this module:
- A row's frame is exactly ``OutboundRequest.encode(correlation_id=seq,
  client_id=str(controller_id))``: size prefix, request header, body (tests/replay/test_rows.py
  decodes it back). Rows of one send group share the body bytes; only the correlation id (seq)
  and, where the body has one, the broker epoch differ from one broker's frame to the next.
- So a ``FrameEncoder`` encodes the head once per group (``request_head``) and only writes each
  row's correlation id into it, at the place the RequestHeader spec gives
  (``requests.layout.fixed_offset``, after the 4-byte size prefix), never a hard-coded offset.
  The hash is fed the head and the body's shared parts: no per-broker copy of a large body is
  made unless frames are kept. benchmarks/rows_bench.py measures it against the per-send encoder
  it replaced (results/rows_bench.json). ``sha256s`` hashes a group's rows in one call (the
  sequential engine's rows: one Python call per group, not per row; 633k rows in 209k groups
  in the 1M-record replay).
- ``frame_sha256`` is ``FrameEncoder(...).sha256(...)`` without the encoder object, for a
  group of one row (most groups: each LeaderAndIsr body is one broker's; ~2M of them at 10M
  records); tests/replay/test_frame_sha256.py compares it with the hash of the whole frame.
- ``sha256s_shared`` hands the second half of a group's frames to a helper thread (an
  executor the caller owns), on a copy of the head, and hashes the first half itself: hashlib
  releases the GIL while it hashes a buffer over 2 KiB, so the halves run on two cores when two
  are free. A Spark task's write uses it (spark/write.py's rules); the sequential engine never
  does, its floor being one core's.
- The broker epoch's place in the body is the shared body's ``epoch_offset``
  (batch/builders.py SharedBody), the same place the batch patches it.
"""

from __future__ import annotations

import functools
import hashlib
import struct
from collections.abc import Sequence
from concurrent.futures import Executor, wait

from ctrlbatch.requests import request_head, request_header_version
from ctrlbatch.requests.layout import fixed_offset
from ctrlbatch.requests.messages import RequestHeader

__all__ = ["FrameEncoder", "frame_sha256", "frame_size"]

_SIZE = struct.Struct(">i")  # the frame's size prefix (the size itself not counted)
_CORRELATION = struct.Struct(">i")
_BROKER_EPOCH = struct.Struct(">q")  # the brokerEpoch field inside a shared body (batch/builders.py)


@functools.lru_cache(maxsize=1024)
def _head_template(api_key: int, api_version: int, client_id: str) -> tuple[bytes, int]:
    """The size-prefixed request head for an empty body, and the correlation id's byte offset in it."""
    at = fixed_offset(RequestHeader.SPEC, request_header_version(api_key, api_version), "CorrelationId")
    if at is None:  # two int16s precede it in every header version
        raise AssertionError(f"RequestHeader v{request_header_version(api_key, api_version)}: no fixed CorrelationId")
    return request_head(api_key, api_version, 0, client_id, 0), _SIZE.size + at


class FrameEncoder:
    """The frames of one request body sent to one or more brokers (see the module rules)."""

    __slots__ = ("_at", "_head", "_parts", "size")

    def __init__(self, api_key: int, api_version: int, client_id: str, data: bytes, epoch_offset: int | None) -> None:
        template, self._at = _head_template(api_key, api_version, client_id)
        self._head = head = bytearray(template)
        _SIZE.pack_into(head, 0, len(template) - _SIZE.size + len(data))
        body = memoryview(data)
        self._parts = (body,) if epoch_offset is None else (body[:epoch_offset], body[epoch_offset + _BROKER_EPOCH.size :])
        self.size = len(self._head) + len(data)  # bytes of every frame of this body

    def __repr__(self) -> str:
        return f"FrameEncoder({self.size:,} bytes per frame)"

    def sha256(self, correlation_id: int, broker_epoch: int) -> str:
        """The hex SHA-256 of the frame with this correlation id and broker epoch."""
        head = self._head
        _CORRELATION.pack_into(head, self._at, correlation_id)
        h = hashlib.sha256(head)
        parts = self._parts
        h.update(parts[0])
        if len(parts) == 2:
            h.update(_BROKER_EPOCH.pack(broker_epoch))
            h.update(parts[1])
        return h.hexdigest()

    def sha256s(self, correlation_ids: Sequence[int], broker_epochs: Sequence[int]) -> list[str]:
        """``[sha256(c, e) for c, e in zip(correlation_ids, broker_epochs)]`` in one call: one
        Python call per group of rows, not per row (module rules)."""
        return _sha256s(self._head, self._at, self._parts, correlation_ids, broker_epochs)

    def sha256s_shared(self, correlation_ids: Sequence[int], broker_epochs: Sequence[int], helper: Executor) -> list[str]:
        """``sha256s``, its second half hashed by ``helper`` (a one-thread executor), on a head of
        its own, while this thread hashes the first (module rules: a Spark task's idle core)."""
        half = len(correlation_ids) // 2
        if not half:
            return self.sha256s(correlation_ids, broker_epochs)
        later = helper.submit(
            _sha256s, bytearray(self._head), self._at, self._parts, correlation_ids[half:], broker_epochs[half:],
        )
        try:
            out = _sha256s(self._head, self._at, self._parts, correlation_ids[:half], broker_epochs[:half])
        except BaseException:
            wait((later,))  # the helper's half ends before this one's error leaves (its own error, if any, dropped)
            raise
        out += later.result()
        return out

    def frame(self, correlation_id: int, broker_epoch: int) -> bytes:
        """The whole size-prefixed frame."""
        head = self._head
        _CORRELATION.pack_into(head, self._at, correlation_id)
        parts = self._parts
        epoch = (_BROKER_EPOCH.pack(broker_epoch), parts[1]) if len(parts) == 2 else ()
        return b"".join((head, parts[0], *epoch))


def _sha256s(
    head: bytearray, at: int, parts: tuple[memoryview, ...], correlation_ids: Sequence[int],
    broker_epochs: Sequence[int],
) -> list[str]:
    """The frames' hashes of one body (FrameEncoder.sha256s); ``head`` is written into, so two
    threads never share one."""
    put = _CORRELATION.pack_into
    sha = hashlib.sha256
    out: list[str] = []
    ap = out.append
    if len(parts) == 1:
        body = parts[0]
        for c in correlation_ids:
            put(head, at, c)
            h = sha(head)
            h.update(body)
            ap(h.hexdigest())
        return out
    first, rest = parts
    epoch = _BROKER_EPOCH.pack
    for c, e in zip(correlation_ids, broker_epochs, strict=True):
        put(head, at, c)
        h = sha(head)
        h.update(first)
        h.update(epoch(e))
        h.update(rest)
        ap(h.hexdigest())
    return out


def frame_sha256(
    api_key: int, api_version: int, client_id: str, data: bytes, epoch_offset: int | None, correlation_id: int,
    broker_epoch: int,
) -> str:
    """``FrameEncoder(api_key, api_version, client_id, data, epoch_offset).sha256(correlation_id,
    broker_epoch)`` with no encoder made: a one-row group's hash (most groups: every LeaderAndIsr
    body is one broker's), the same bytes hashed in the same pieces."""
    template, at = _head_template(api_key, api_version, client_id)
    head = bytearray(template)
    _SIZE.pack_into(head, 0, len(template) - _SIZE.size + len(data))
    _CORRELATION.pack_into(head, at, correlation_id)
    h = hashlib.sha256(head)
    if epoch_offset is None:
        h.update(data)
    else:
        body = memoryview(data)
        h.update(body[:epoch_offset])
        h.update(_BROKER_EPOCH.pack(broker_epoch))
        h.update(body[epoch_offset + _BROKER_EPOCH.size :])
    return h.hexdigest()


def frame_size(api_key: int, api_version: int, client_id: str, body_size: int) -> int:
    """The bytes of a frame: size prefix, header, body."""
    return len(_head_template(api_key, api_version, client_id)[0]) + body_size
