"""The output rows of a replay: one per delivered request, and their Parquet schema.

Rules:
- ``REQUEST_SCHEMA`` is the one schema both engines write (requests/ Parquet): delta (last offset
  of the delta), timestamp (ms, of its last batch), broker, seq (per broker, from 0, over the
  whole replay), api_key, api_version, controller_id, controller_epoch (the header's),
  update_type (the encoded Type field; null where the request has none: StopReplica,
  LeaderAndIsr below v5, UpdateMetadata below v8), partitions (partition states in the
  request), bytes (the whole frame with its 4-byte size prefix), sha256 (hex of that frame),
  dropped (always false: rows are delivered requests; drops are counted in the summary), frame
  (the frame itself, only with --with-frames).
- The frame is ``OutboundRequest.encode(correlation_id=seq, client_id=str(controller_id))``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from .propagator import Send

__all__ = ["API_NAMES", "REQUEST_SCHEMA", "frame_of", "partition_count", "request_row", "update_type_of"]

REQUEST_SCHEMA = pa.schema(
    [
        pa.field("delta", pa.int64(), nullable=False),
        pa.field("timestamp", pa.int64(), nullable=False),
        pa.field("broker", pa.int32(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("api_key", pa.int16(), nullable=False),
        pa.field("api_version", pa.int16(), nullable=False),
        pa.field("controller_id", pa.int32(), nullable=False),
        pa.field("controller_epoch", pa.int32(), nullable=False),
        pa.field("update_type", pa.int8(), nullable=True),
        pa.field("partitions", pa.int32(), nullable=False),
        pa.field("bytes", pa.int64(), nullable=False),
        pa.field("sha256", pa.string(), nullable=False),
        pa.field("dropped", pa.bool_(), nullable=False),
        pa.field("frame", pa.binary(), nullable=True),
    ]
)

API_NAMES = {4: "LeaderAndIsr", 5: "StopReplica", 6: "UpdateMetadata"}
# The first version whose body has the Type field (LeaderAndIsr v5+, UpdateMetadata v8+).
_TYPE_SINCE = {4: 5, 6: 8}
_PARTITIONS: dict[int, Callable[[Any], int]] = {
    4: lambda b: len(b.partition_states),
    6: lambda b: len(b.partition_states),
    5: lambda b: sum(len(states) for _topic, states in b.topic_states),
}


def partition_count(send: Send) -> int:
    """The number of partition states the request carries."""
    return _PARTITIONS[send.request.api_key](send.request.builder)


def update_type_of(send: Send) -> int | None:
    r = send.request
    since = _TYPE_SINCE.get(r.api_key)
    if since is None or r.version < since:
        return None
    builder: Any = r.builder
    return int(builder.update_type)


def frame_of(send: Send, seq: int) -> bytes:
    return send.request.encode(correlation_id=seq, client_id=str(send.request.builder.controller_id))


def request_row(delta: Any, send: Send, seq: int, with_frames: bool = False) -> dict[str, Any]:
    """The row of one delivered request; ``delta`` has last_offset and timestamp (a Delta)."""
    if send.dropped:
        raise ValueError(f"send: a dropped request has no row ({send!r}); count it instead")
    builder = send.request.builder
    # Hash the frame's parts (the body is shared bytes): no per-broker copy of a large body.
    parts = send.request.encode_parts(correlation_id=seq, client_id=str(builder.controller_id))
    digest = hashlib.sha256()
    size = 0
    for part in parts:
        digest.update(part)
        size += len(part)
    return {
        "delta": delta.last_offset,
        "timestamp": delta.timestamp,
        "broker": send.broker,
        "seq": seq,
        "api_key": send.request.api_key,
        "api_version": send.request.version,
        "controller_id": builder.controller_id,
        "controller_epoch": builder.controller_epoch,
        "update_type": update_type_of(send),
        "partitions": partition_count(send),
        "bytes": size,
        "sha256": digest.hexdigest(),
        "dropped": False,
        "frame": b"".join(parts) if with_frames else None,
    }
