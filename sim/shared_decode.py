"""SharedDecoder: simulated brokers in one process decode each distinct control-request body once.

Rules:
- The controller sends one UpdateMetadata (and often one LeaderAndIsr) body to many brokers; the
  bodies differ only in the 8 BrokerEpoch bytes. A SharedDecoder keys a small LRU memo by (api key,
  version, body with those bytes zeroed); a hit reuses the immutable decoded message with this
  body's own BrokerEpoch put back. A miss decodes the bytes as ``decode_request`` does. The
  result is the message the bytes decode to either way: this only stands in for N brokers on N
  machines decoding in parallel, so that one process can simulate 50 of them.
- The BrokerEpoch offset is found by encoding a probe message (the fields before it have fixed
  sizes in every version that has it), not assumed; a version without the field is not memoized.
- Errors are those of ``decode_request``: DecodeError for a bad header, version or body.
- Thread-safe: big frames are decoded on handler threads (handler_threads.py) while the loop
  decodes small ones; the memo is touched under a lock, the decoding itself runs outside it.
"""

from __future__ import annotations

import collections
import struct
import threading

import attrs

from ctrlbatch.requests import DecodedRequest, RequestHeader, api, decode_request, request_header_version
from ctrlbatch.requests.errors import UnsupportedVersionError
from ctrlbatch.requests.model import Message

__all__ = ["SharedDecoder", "broker_epoch_offset"]

_KEY_VERSION = struct.Struct(">hh")
_EPOCH = struct.Struct(">q")
_PROBE = 0x0102030405060708
_ZERO = bytes(8)
_offsets: dict[tuple[int, int], int | None] = {}


def broker_epoch_offset(api_key: int, version: int) -> int | None:
    """Where BrokerEpoch starts in a body of this api key and version (None: no such field)."""
    key = (api_key, version)
    if key not in _offsets:
        cls = api(api_key).request
        names = {f.name for f in cls.SPEC.fields if version in f.versions}
        offset = None
        if "BrokerEpoch" in names:
            data = cls(broker_epoch=_PROBE).encode(version)  # type: ignore[call-arg]
            found = data.find(_EPOCH.pack(_PROBE))
            offset = found if found >= 0 else None
        _offsets[key] = offset
    return _offsets[key]


class SharedDecoder:
    """``decode(frame) -> DecodedRequest``, memoizing bodies that differ only in BrokerEpoch."""

    def __init__(self, size: int = 16) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.size = size
        self._memo: collections.OrderedDict[tuple[int, int, bytes], Message] = collections.OrderedDict()
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SharedDecoder({len(self._memo)}/{self.size} bodies, {self.hits} hits, {self.misses} misses)"

    def decode(self, frame: bytes | bytearray) -> DecodedRequest:
        if len(frame) < 4:
            return decode_request(frame)  # raises the usual DecodeError
        key, version = _KEY_VERSION.unpack_from(frame, 0)
        try:
            a = api(key)
            hv = request_header_version(key, version)
            offset = broker_epoch_offset(key, version)
        except UnsupportedVersionError:
            return decode_request(frame)
        header, pos = RequestHeader.decode_prefix(frame, hv)  # type: ignore[arg-type]
        body_bytes = frame[pos:]
        if offset is None or len(body_bytes) < offset + 8:
            return DecodedRequest(header, hv, a.request.decode(body_bytes, version))
        masked = bytes(body_bytes[:offset]) + _ZERO + bytes(body_bytes[offset + 8:])
        memo_key = (key, version, masked)
        (epoch,) = _EPOCH.unpack_from(body_bytes, offset)
        with self._lock:
            body = self._memo.get(memo_key)
            if body is not None:
                self.hits += 1
                self._memo.move_to_end(memo_key)
        if body is None:
            body = a.request.decode(body_bytes, version)
            with self._lock:
                self.misses += 1
                self._memo[memo_key] = body
                if len(self._memo) > self.size:
                    self._memo.popitem(last=False)
        elif body.broker_epoch != epoch:  # type: ignore[attr-defined]
            body = attrs.evolve(body, broker_epoch=epoch)  # type: ignore[misc]
        return DecodedRequest(header, hv, body)

