"""Frames on the wire: int32 size, header, body — for requests and responses.

Rules: sans-I/O. Encoding returns the frame as bytes, or as two buffers (size+header, body) so
that a transport can write one shared body to many brokers without copying it. FrameReader
splits a byte stream into frames and never buffers more than one frame of at most
max_frame_size bytes (Kafka's socket.request.max.bytes, 100 MiB by default).
"""

from __future__ import annotations

import functools
import struct

import attrs

from .apis import api, request_header_version, response_header_version
from .errors import DecodeError, EncodeError, UnsupportedVersionError, check_buffer
from .layout import fixed_offset
from .messages import RequestHeader, ResponseHeader
from .model import Message

_SIZE = struct.Struct(">i")  # a frame starts with its size, an int32 (the size itself not counted)
_CORRELATION_ID = struct.Struct(">i")  # RequestHeader's CorrelationId is an int32
_KEY_VERSION = struct.Struct(">hh")  # every request header starts with RequestApiKey, RequestApiVersion (int16s)
DEFAULT_MAX_FRAME_SIZE = 104857600  # Kafka's socket.request.max.bytes default: 100 MiB
_HEADER_TEMPLATES = 1024  # (api key, version, client id) combinations remembered


@functools.lru_cache(maxsize=_HEADER_TEMPLATES)
def _request_header_template(api_key: int, api_version: int, client_id: str | None) -> tuple[bytes, bytes]:
    """A request header's bytes before and after its correlation id, encoded once by the codec:
    only the correlation id changes from one request to the next."""
    hv = request_header_version(api_key, api_version)
    header = RequestHeader(
        request_api_key=api_key, request_api_version=api_version, correlation_id=0, client_id=client_id
    ).encode(hv)
    at = fixed_offset(RequestHeader.SPEC, hv, "CorrelationId")
    assert at is not None  # two int16s precede it in every header version
    return header[:at], header[at + _CORRELATION_ID.size :]


def request_head(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body_size: int
) -> bytes:
    """Size prefix plus request header, for a body of body_size bytes."""
    before, after = _request_header_template(api_key, api_version, client_id)
    try:
        correlation = _CORRELATION_ID.pack(correlation_id)
    except struct.error as e:
        raise EncodeError(f"RequestHeader: field CorrelationId: {correlation_id!r} is not an int32 ({e})") from None
    return b"".join((_SIZE.pack(len(before) + _CORRELATION_ID.size + len(after) + body_size), before, correlation, after))


@functools.lru_cache(maxsize=_HEADER_TEMPLATES)
def request_header_size(api_key: int, api_version: int, client_id: str | None) -> int:
    """The bytes of the request header of (api key, version, client id), sized from its fields
    (RequestHeader's sizer; the correlation id is an int32 whatever its value)."""
    hv = request_header_version(api_key, api_version)
    return RequestHeader(
        request_api_key=api_key, request_api_version=api_version, correlation_id=0, client_id=client_id
    ).encoded_size(hv)


def request_frame_size(api_key: int, api_version: int, client_id: str | None, body_size: int) -> int:
    """The bytes of a request frame with a body of body_size bytes: size prefix, header, body
    (len(encode_request(...)) without encoding it)."""
    return _SIZE.size + request_header_size(api_key, api_version, client_id) + body_size


def encode_request_parts(
    body: Message, api_version: int, correlation_id: int, client_id: str | None, body_bytes: bytes | None = None
) -> tuple[bytes, bytes]:
    """(size prefix + header, body): write both, in order, to send the request."""
    if body.API_KEY is None or body.MESSAGE.type != "request":
        raise UnsupportedVersionError(f"{type(body).__name__} is not a request")
    data = body.encode(api_version) if body_bytes is None else body_bytes
    return request_head(body.API_KEY, api_version, correlation_id, client_id, len(data)), data


def encode_request(body: Message, api_version: int, correlation_id: int, client_id: str | None) -> bytes:
    head, data = encode_request_parts(body, api_version, correlation_id, client_id)
    return head + data


def encode_response(body: Message, api_key: int, api_version: int, correlation_id: int) -> bytes:
    if body.MESSAGE.type != "response" or body.API_KEY != api_key:
        raise UnsupportedVersionError(f"{type(body).__name__} is not a response of api key {api_key}")
    hv = response_header_version(api_key, api_version)
    header = ResponseHeader(correlation_id=correlation_id).encode(hv)
    data = body.encode(api_version)
    return _SIZE.pack(len(header) + len(data)) + header + data


@attrs.frozen
class DecodedRequest:
    header: RequestHeader
    header_version: int
    body: Message


def _prefix_hint(frame: bytes | bytearray | memoryview) -> str:
    """A hint when frame still starts with its own size prefix (a common mistake)."""
    if len(frame) >= _SIZE.size and _SIZE.unpack_from(frame, 0)[0] == len(frame) - _SIZE.size:
        return (
            f" (the frame seems to start with its {_SIZE.size}-byte size prefix, {len(frame) - _SIZE.size}: "
            "pass it without, as FrameReader.feed returns frames)"
        )
    return ""


def _with_hint(e: DecodeError, hint: str) -> DecodeError:
    return DecodeError(e.reason + hint, message=e.message, version=e.version, field=e.field, offset=e.offset)


def decode_request(frame: bytes | bytearray | memoryview) -> DecodedRequest:
    """Decode a request frame without its size prefix: header (version chosen from the body's
    api key and version), then the body, which must end the frame."""
    check_buffer(frame, "frame", message="RequestHeader")
    if len(frame) < _KEY_VERSION.size:
        raise DecodeError("the frame is too short for a request header", message="RequestHeader", offset=0)
    key, version = _KEY_VERSION.unpack_from(frame, 0)
    try:
        a = api(key)
        hv = request_header_version(key, version)
    except UnsupportedVersionError as e:
        raise DecodeError(str(e) + _prefix_hint(frame), message="RequestHeader", field="RequestApiKey", offset=0) from None
    try:
        header, pos = RequestHeader.decode_prefix(frame, hv)  # type: ignore[arg-type]
        body = a.request.decode(memoryview(frame)[pos:], version)
    except DecodeError as e:
        hint = _prefix_hint(frame)
        if not hint:
            raise
        raise _with_hint(e, hint) from None
    return DecodedRequest(header, hv, body)


def decode_response(
    frame: bytes | bytearray | memoryview, api_key: int, api_version: int
) -> tuple[ResponseHeader, Message]:
    """Decode a response frame without its size prefix, for the request it answers."""
    check_buffer(frame, "frame", message="ResponseHeader")
    try:
        a = api(api_key)
        hv = response_header_version(api_key, api_version)
    except UnsupportedVersionError as e:
        raise DecodeError(str(e), message="ResponseHeader", offset=0) from None
    try:
        header, pos = ResponseHeader.decode_prefix(frame, hv)  # type: ignore[arg-type]
        return header, a.response.decode(memoryview(frame)[pos:], api_version)
    except DecodeError as e:
        hint = _prefix_hint(frame)
        if not hint:
            raise
        raise _with_hint(e, hint) from None


class FrameReader:
    """Feed bytes, take whole frames (without their size prefix)."""

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._consumed = 0
        self._error: DecodeError | None = None

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """The whole frames completed by data. A bad size prefix raises DecodeError, after the
        good frames before it have been returned (it then raises on every later call)."""
        check_buffer(data, "data", message="frame")
        if self._error is not None:
            raise self._error
        self._buf += data
        frames: list[bytes] = []
        while True:
            avail = len(self._buf) - self._consumed
            if avail < 4:
                break
            (size,) = _SIZE.unpack_from(self._buf, self._consumed)
            if size < 0 or size > self.max_frame_size:
                self._error = DecodeError(
                    f"invalid frame size {size} (the limit is {self.max_frame_size})", message="frame",
                    offset=self._consumed,
                )
                if frames:
                    break
                raise self._error
            if avail < 4 + size:
                break
            start = self._consumed + 4
            frames.append(bytes(self._buf[start : start + size]))
            self._consumed = start + size
        if self._consumed:
            del self._buf[: self._consumed]
            self._consumed = 0
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buf)
