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
  (supported and finalized features, ZkMigrationReady) keep their defaults and so are not
  written: a client reads them as absent (no features known), which is what a simulated server has.
- A request that does not parse (a truncated header, a bad string, bytes after the body) closes
  the connection (RequestContext.parseRequest's InvalidRequestException): ``answer`` returns None.
- The bytes are the package's generated ApiVersionsRequest/ApiVersionsResponse codec (catalog.py,
  from specgen.PAST_SHARED; checked against kio 0.5.0 for v0-4): this module only holds the rules.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable

from ctrlbatch.requests import (
    APIS,
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    DecodeError,
    decode_request,
    decode_response,
    encode_request,
)
from ctrlbatch.requests import encode_response as _encode_frame

from .errors import Errors

__all__ = ["API_VERSIONS_KEY", "MAX_VERSION", "api_versions_answer", "decode_api_versions_response",
           "encode_api_versions_request", "supported_apis"]

API_VERSIONS_KEY = 18
MIN_VERSION, MAX_VERSION = ApiVersionsRequest.MIN_VERSION, ApiVersionsRequest.MAX_VERSION
FIRST_FLEXIBLE = 3
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
_HEAD = struct.Struct(">hhi")
_VERSION = struct.Struct(">h")


def supported_apis(api_keys: Iterable[int]) -> list[tuple[int, int, int]]:
    """(key, min version, max version) of a listener's apis, ApiVersions included, by key."""
    out = {k: (k, APIS[k].min_version, APIS[k].max_version) for k in api_keys if k in APIS}
    out[API_VERSIONS_KEY] = (API_VERSIONS_KEY, MIN_VERSION, MAX_VERSION)
    return [out[k] for k in sorted(out)]


def encode_response(correlation_id: int, version: int, error_code: int, apis: list[tuple[int, int, int]]) -> bytes:
    """A size-prefixed ApiVersionsResponse of ``version`` (header v0), throttle 0, tagged fields at their defaults."""
    keys = [ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in apis]
    body = ApiVersionsResponse(error_code=error_code, api_keys=keys)
    return _encode_frame(body, API_VERSIONS_KEY, version, correlation_id)


def api_versions_answer(frame: bytes | bytearray | memoryview, api_keys: Iterable[int]) -> bytes | None:
    """The size-prefixed answer to an ApiVersions frame (without its size prefix), or None to close."""
    if len(frame) < _HEAD.size:
        return None
    _, version, correlation_id = _HEAD.unpack_from(frame, 0)
    if not MIN_VERSION <= version <= MAX_VERSION:
        return encode_response(correlation_id, 0, Errors.UNSUPPORTED_VERSION,
                               [(API_VERSIONS_KEY, MIN_VERSION, MAX_VERSION)])
    try:
        request = decode_request(frame).body
    except DecodeError:
        return None
    assert isinstance(request, ApiVersionsRequest)
    names = (request.client_software_name, request.client_software_version)
    if version >= FIRST_FLEXIBLE and not all(_SOFTWARE.fullmatch(n) for n in names):
        return encode_response(correlation_id, version, Errors.INVALID_REQUEST, [])
    return encode_response(correlation_id, version, Errors.NONE, supported_apis(api_keys))


def encode_api_versions_request(version: int, correlation_id: int, client_id: str | None = "sim",
                                software: tuple[str, str] = ("ctrlbatch", "1.0")) -> bytes:
    """A size-prefixed ApiVersionsRequest. A version past MAX_VERSION (a newer client probing a
    server) is v4's bytes under that version number; a server must not parse it (see Rules)."""
    body = ApiVersionsRequest(client_software_name=software[0], client_software_version=software[1])
    if MIN_VERSION <= version <= MAX_VERSION:
        return encode_request(body, version, correlation_id, client_id)
    frame = bytearray(encode_request(body, MAX_VERSION, correlation_id, client_id))
    _VERSION.pack_into(frame, 6, version)  # size prefix (4), api key (2), then the version
    return bytes(frame)


def decode_api_versions_response(frame: bytes | bytearray | memoryview, version: int) -> tuple[int, int, list[tuple[int, int, int]], int]:
    """(correlation id, error code, api keys, throttle ms) of a response frame without its size prefix."""
    header, body = decode_response(frame, API_VERSIONS_KEY, version)
    assert isinstance(body, ApiVersionsResponse)
    apis = [(a.api_key, a.min_version, a.max_version) for a in body.api_keys]
    return header.correlation_id, body.error_code, apis, body.throttle_time_ms
