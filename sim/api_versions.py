"""ApiVersions (api key 18), answered by both simulated servers on every listener (Kafka 3.9).

Rules (kafka-controller-channel.md §6.2; Kafka 3.9 sources cited):
- Versions 0-4 (ApiVersionsRequest.json: flexible from 3, which adds ClientSoftwareName and
  ClientSoftwareVersion; request header v2 from version 3, v1 before). The response always has
  response header v0 (ApiKeys.java:241-245: the client must read it before it knows the version).
- An unsupported version is not parsed: it is answered as v0 with UNSUPPORTED_VERSION (35) and,
  as ApiKeys, only ApiVersions' own range 0-4 (RequestContext.java:111-116, :153-162;
  ApiVersionsRequest.java:112-129, KIP-511). The only UNSUPPORTED_VERSION answer of this layer.
- From version 3, a ClientSoftwareName or ClientSoftwareVersion that does not match
  ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` is answered INVALID_REQUEST (42) at the request's
  version with no ApiKeys (ApiVersionsRequest.isValid; KafkaApis.scala:1982-2000).
- Otherwise error NONE, throttle 0 and ApiKeys: the listener's enabled apis with the versions
  this package decodes (requests.APIS), plus ApiVersions 0-4, by key. The tagged fields of v3+
  (supported and finalized features, ZkMigrationReady) are not written: a client reads them as
  absent (no features known), which is what a simulated server has.
- A request that does not parse (a truncated header, a bad string, bytes after the body) closes
  the connection (RequestContext.parseRequest's InvalidRequestException): ``answer`` returns None.
- Hand-written codec (the package's catalog has no ApiVersions; tests check it against kio 0.5.0).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable

from ctrlbatch.requests import APIS

from .errors import Errors

__all__ = ["API_VERSIONS_KEY", "MAX_VERSION", "api_versions_answer", "decode_api_versions_response",
           "encode_api_versions_request", "supported_apis"]

API_VERSIONS_KEY = 18
MIN_VERSION, MAX_VERSION = 0, 4
FIRST_FLEXIBLE = 3
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
_HEAD = struct.Struct(">hhi")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ENTRY = struct.Struct(">hhh")


class _Malformed(Exception):
    pass


def _uvarint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    for _ in range(5):
        if pos >= len(buf):
            raise _Malformed("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    raise _Malformed("varint longer than 5 bytes")


def _skip_tags(buf: bytes | bytearray | memoryview, pos: int) -> int:
    count, pos = _uvarint(buf, pos)
    for _ in range(count):
        _, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise _Malformed("truncated tagged field")
    return pos


def _compact_string(buf: bytes | bytearray | memoryview, pos: int) -> tuple[str, int]:
    n, pos = _uvarint(buf, pos)
    if n == 0:
        raise _Malformed("null string in a non-nullable field")
    end = pos + n - 1
    if end > len(buf):
        raise _Malformed("truncated string")
    try:
        return bytes(buf[pos:end]).decode("utf-8"), end
    except UnicodeDecodeError:
        raise _Malformed("a string is not UTF-8") from None


def _uv(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def supported_apis(api_keys: Iterable[int]) -> list[tuple[int, int, int]]:
    """(key, min version, max version) of a listener's apis, ApiVersions included, by key."""
    out = {k: (k, APIS[k].min_version, APIS[k].max_version) for k in api_keys if k in APIS}
    out[API_VERSIONS_KEY] = (API_VERSIONS_KEY, MIN_VERSION, MAX_VERSION)
    return [out[k] for k in sorted(out)]


def encode_response(correlation_id: int, version: int, error_code: int, apis: list[tuple[int, int, int]]) -> bytes:
    """A size-prefixed ApiVersionsResponse of ``version`` (header v0), throttle 0, no tagged fields."""
    parts = [_I32.pack(correlation_id), _I16.pack(error_code)]
    if version >= FIRST_FLEXIBLE:
        parts.append(_uv(len(apis) + 1))
        parts.extend(_ENTRY.pack(*a) + b"\x00" for a in apis)
    else:
        parts.append(_I32.pack(len(apis)))
        parts.extend(_ENTRY.pack(*a) for a in apis)
    if version >= 1:
        parts.append(_I32.pack(0))
    if version >= FIRST_FLEXIBLE:
        parts.append(b"\x00")
    body = b"".join(parts)
    return _I32.pack(len(body)) + body


def _parse(frame: bytes | bytearray | memoryview) -> tuple[int, int, str, str]:
    """(version, correlation id, client software name, version) of a supported-version request."""
    if len(frame) < _HEAD.size + 2:
        raise _Malformed("the frame is too short for a request header")
    _, version, correlation_id = _HEAD.unpack_from(frame, 0)
    pos = _HEAD.size
    (n,) = _I16.unpack_from(frame, pos)
    pos += 2 + max(n, 0)  # client_id: int16 length, -1 null, never compact
    if n < -1 or pos > len(frame):
        raise _Malformed("bad client id")
    name = software = ""
    if version >= FIRST_FLEXIBLE:
        pos = _skip_tags(frame, pos)
        name, pos = _compact_string(frame, pos)
        software, pos = _compact_string(frame, pos)
        pos = _skip_tags(frame, pos)
    if pos != len(frame):
        raise _Malformed(f"{len(frame) - pos} bytes after the request")
    return version, correlation_id, name, software


def api_versions_answer(frame: bytes | bytearray | memoryview, api_keys: Iterable[int]) -> bytes | None:
    """The size-prefixed answer to an ApiVersions frame (without its size prefix), or None to close."""
    if len(frame) < _HEAD.size:
        return None
    _, version, correlation_id = _HEAD.unpack_from(frame, 0)
    if not MIN_VERSION <= version <= MAX_VERSION:
        return encode_response(correlation_id, 0, Errors.UNSUPPORTED_VERSION,
                               [(API_VERSIONS_KEY, MIN_VERSION, MAX_VERSION)])
    try:
        version, correlation_id, name, software = _parse(frame)
    except (_Malformed, struct.error):
        return None
    if version >= FIRST_FLEXIBLE and not (_SOFTWARE.fullmatch(name) and _SOFTWARE.fullmatch(software)):
        return encode_response(correlation_id, version, Errors.INVALID_REQUEST, [])
    return encode_response(correlation_id, version, Errors.NONE, supported_apis(api_keys))


def encode_api_versions_request(version: int, correlation_id: int, client_id: str | None = "sim",
                                software: tuple[str, str] = ("ctrlbatch", "1.0")) -> bytes:
    """A size-prefixed ApiVersionsRequest (any version number: a client probing a server)."""
    cid = b"\xff\xff" if client_id is None else _I16.pack(len(client_id.encode())) + client_id.encode()
    parts = [_HEAD.pack(API_VERSIONS_KEY, version, correlation_id), cid]
    if version >= FIRST_FLEXIBLE:
        parts.append(b"\x00")  # header tagged fields
        for s in software:
            raw = s.encode()
            parts.append(_uv(len(raw) + 1) + raw)
        parts.append(b"\x00")
    body = b"".join(parts)
    return _I32.pack(len(body)) + body


def decode_api_versions_response(frame: bytes | bytearray | memoryview, version: int) -> tuple[int, int, list[tuple[int, int, int]], int]:
    """(correlation id, error code, api keys, throttle ms) of a response frame without its size prefix."""
    (correlation_id,) = _I32.unpack_from(frame, 0)
    (error,) = _I16.unpack_from(frame, 4)
    pos = 6
    if version >= FIRST_FLEXIBLE:
        n, pos = _uvarint(frame, pos)
        n -= 1
    else:
        (n,) = _I32.unpack_from(frame, pos)
        pos += 4
    apis = []
    for _ in range(max(n, 0)):
        apis.append(_ENTRY.unpack_from(frame, pos))
        pos += _ENTRY.size
        if version >= FIRST_FLEXIBLE:
            pos = _skip_tags(frame, pos)
    throttle = 0
    if version >= 1:
        (throttle,) = _I32.unpack_from(frame, pos)
        pos += 4
    if version >= FIRST_FLEXIBLE:
        pos = _skip_tags(frame, pos)
    if pos != len(frame):
        raise ValueError(f"{len(frame) - pos} bytes after the ApiVersions response")
    return correlation_id, error, apis, throttle
