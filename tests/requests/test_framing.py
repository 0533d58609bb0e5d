"""Frames on the wire: header versions (kafka-wire-format.md §4), size prefix + header + body for
requests and responses, their inverses, and FrameReader splitting a stream into frames."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.requests import (
    APIS,
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    DecodeError,
    FrameReader,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    RequestHeader,
    ResponseHeader,
    UnsupportedVersionError,
    UpdateMetadataRequest,
    decode_request,
    decode_response,
    encode_request,
    encode_request_parts,
    encode_response,
    request_head,
    request_header_version,
    response_header_version,
)
from ctrlbatch.testing import messages, project

# The wire doc's §4 table: (api key, api version) -> (request header version, response header version).
HEADER_TABLE: dict[tuple[int, int], tuple[int, int]] = {
    **{(4, v): (1, 0) for v in range(0, 4)},
    **{(4, v): (2, 1) for v in range(4, 8)},
    **{(5, v): (1, 0) for v in range(0, 2)},
    **{(5, v): (2, 1) for v in range(2, 5)},
    **{(6, v): (1, 0) for v in range(0, 6)},
    **{(6, v): (2, 1) for v in range(6, 9)},
}


@pytest.mark.parametrize(("key", "version"), sorted(HEADER_TABLE))
def test_header_versions_of_the_control_apis(key: int, version: int) -> None:
    assert (request_header_version(key, version), response_header_version(key, version)) == HEADER_TABLE[(key, version)]


@pytest.mark.parametrize("key", [62, 63])
def test_kraft_apis_always_use_flexible_headers(key: int) -> None:
    a = APIS[key]
    assert a.min_version == 0
    for version in range(a.min_version, a.max_version + 1):
        assert request_header_version(key, version) == 2
        assert response_header_version(key, version) == 1


def test_api_table() -> None:
    assert {k: (a.min_version, a.max_version) for k, a in APIS.items() if k in (4, 5, 6)} == {
        4: (0, 7), 5: (0, 4), 6: (0, 8)}
    assert {62, 63} <= set(APIS)
    for key, a in APIS.items():
        assert a.request.API_KEY == key and a.response.API_KEY == key
        assert a.request.MESSAGE.type == "request" and a.response.MESSAGE.type == "response"


@pytest.mark.parametrize(("key", "version"), [(4, 8), (4, -1), (5, 5), (6, 9), (63, 99), (0, 0), (999, 0)])
def test_header_version_of_unknown_api_or_version(key: int, version: int) -> None:
    with pytest.raises(UnsupportedVersionError):
        request_header_version(key, version)
    with pytest.raises(UnsupportedVersionError):
        response_header_version(key, version)


REQUEST_CASES = [(a.request, v) for a in APIS.values() for v in range(a.min_version, a.max_version + 1)]
RESPONSE_CASES = [(a, v) for a in APIS.values() for v in range(a.min_version, a.max_version + 1)]

client_ids = st.one_of(st.none(), st.text(max_size=10))
correlation_ids = st.integers(-(2**31), 2**31 - 1)


@pytest.mark.parametrize(("cls", "version"), REQUEST_CASES, ids=[f"{c.__name__}-v{v}" for c, v in REQUEST_CASES])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), correlation_id=correlation_ids, client_id=client_ids)
def test_request_frame_roundtrip(cls: Any, version: int, data: st.DataObject, correlation_id: int, client_id: str | None) -> None:
    body = data.draw(messages(cls, version, max_size=2))
    frame = encode_request(body, version, correlation_id, client_id)
    hv = request_header_version(cls.API_KEY, version)
    header = RequestHeader(
        request_api_key=cls.API_KEY, request_api_version=version, correlation_id=correlation_id, client_id=client_id)
    body_bytes = body.encode(version)
    expected_head = struct.pack(">i", len(frame) - 4) + header.encode(hv)
    assert frame == expected_head + body_bytes
    assert encode_request_parts(body, version, correlation_id, client_id) == (expected_head, body_bytes)
    assert request_head(cls.API_KEY, version, correlation_id, client_id, len(body_bytes)) == expected_head

    decoded = decode_request(frame[4:])
    assert decoded.header == header
    assert decoded.header_version == hv
    assert type(decoded.body) is cls
    assert decoded.body == project(body, version)
    assert decode_request(bytearray(frame[4:])).body == decoded.body


@pytest.mark.parametrize(("api", "version"), RESPONSE_CASES, ids=[f"{a.response.__name__}-v{v}" for a, v in RESPONSE_CASES])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), correlation_id=correlation_ids)
def test_response_frame_roundtrip(api: Any, version: int, data: st.DataObject, correlation_id: int) -> None:
    cls = api.response
    body = data.draw(messages(cls, version, max_size=2))
    frame = encode_response(body, api.key, version, correlation_id)
    hv = response_header_version(api.key, version)
    expected = ResponseHeader(correlation_id=correlation_id).encode(hv) + body.encode(version)
    assert frame == struct.pack(">i", len(expected)) + expected
    header, decoded = decode_response(frame[4:], api.key, version)
    assert header == ResponseHeader(correlation_id=correlation_id)
    assert type(decoded) is cls
    assert decoded == project(body, version)


def test_request_frame_bytes_lair_v4() -> None:
    body = LeaderAndIsrRequest(controller_id=1)
    frame = encode_request(body, 4, 7, "1")
    header = bytes.fromhex("0004" "0004" "00000007" "0001" "31" "00")  # v2: classic ClientId, then tags
    assert frame == struct.pack(">i", len(header) + len(body.encode(4))) + header + body.encode(4)
    frame1 = encode_request(body, 3, 7, None)
    assert frame1[4:14] == bytes.fromhex("0004" "0003" "00000007" "ffff")  # v1: null ClientId


def test_api_versions_frames_keep_response_header_v0() -> None:
    """ApiVersions v3+ is flexible, yet its response header stays v0 (no tagged-field byte) and
    its request header is v2 (ApiKeys.java:241-245, Kafka 3.9)."""
    body = ApiVersionsResponse(api_keys=[ApiVersion(api_key=18, min_version=0, max_version=4)])
    frame = encode_response(body, 18, 3, 9)
    assert frame == bytes.fromhex("00000013" "00000009" "0000" "02" "0012" "0000" "0004" "00" "00000000" "00")
    assert (request_header_version(18, 3), response_header_version(18, 3)) == (2, 0)
    req = encode_request(ApiVersionsRequest(client_software_name="a", client_software_version="1"), 3, 5, "c")
    decoded = decode_request(req[4:])
    assert (decoded.header.request_api_key, decoded.body) == (18, ApiVersionsRequest(client_software_name="a", client_software_version="1"))


def test_response_frame_bytes() -> None:
    assert encode_response(LeaderAndIsrResponse(), 4, 3, 9) == bytes.fromhex("0000000a" "00000009" "0000" "00000000")
    assert encode_response(LeaderAndIsrResponse(), 4, 4, 9) == bytes.fromhex("00000009" "00000009" "00" "0000" "01" "00")


@pytest.mark.parametrize("key", [0, 3, 7, 17, 19, 61, 64, -1, 32767])
def test_decode_request_with_an_unknown_api_key(key: int) -> None:
    frame = struct.pack(">hhi", key, 0, 1) + b"\xff\xff" + b"\x00" * 8
    with pytest.raises(DecodeError) as info:
        decode_request(frame)
    assert info.value.message == "RequestHeader"
    assert info.value.field == "RequestApiKey"
    assert info.value.offset == 0


@pytest.mark.parametrize(("key", "version"), [(4, 8), (5, -1), (6, 100), (62, 9)])
def test_decode_request_with_an_unsupported_version(key: int, version: int) -> None:
    with pytest.raises(DecodeError):
        decode_request(struct.pack(">hhi", key, version, 1) + b"\xff\xff\x00")


@pytest.mark.parametrize("frame", [b"", b"\x00", b"\x00\x04\x00"])
def test_decode_request_too_short(frame: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_request(frame)


def test_decode_request_with_a_bad_body_or_header() -> None:
    frame = encode_request(UpdateMetadataRequest(), 8, 1, "c")[4:]
    for cut in range(len(frame)):
        with pytest.raises(DecodeError):
            decode_request(frame[:cut])
    with pytest.raises(DecodeError):
        decode_request(frame + b"\x00")


def test_decode_response_with_an_unknown_api_key_or_version() -> None:
    for key, version in [(0, 0), (18, 0), (4, 8), (63, 5)]:
        with pytest.raises(DecodeError):
            decode_response(b"\x00\x00\x00\x01\x00\x00", key, version)
    frame = encode_response(LeaderAndIsrResponse(), 4, 5, 1)[4:]
    for cut in range(len(frame)):
        with pytest.raises(DecodeError):
            decode_response(frame[:cut], 4, 5)


def test_encode_request_refuses_a_response_body() -> None:
    # BUG: encode_request_parts only refuses bodies whose API_KEY is None (headers); a response
    # class carries its API's key too, so it is framed as a request without complaint.
    with pytest.raises((UnsupportedVersionError, ValueError, TypeError)):
        encode_request(LeaderAndIsrResponse(), 0, 1, "x")


@pytest.mark.parametrize(
    ("body", "key", "version"),
    [(LeaderAndIsrRequest(), 4, 0), (LeaderAndIsrResponse(), 6, 5)],
    ids=["request-body", "other-api-body"],
)
def test_encode_response_refuses_a_body_of_another_kind_or_api(body: Any, key: int, version: int) -> None:
    # BUG: encode_response never checks the body against api_key: a request body, or a response of
    # another API (LeaderAndIsrResponse v5 is flexible, UpdateMetadata v5 gets response header v0),
    # is framed without complaint.
    with pytest.raises((UnsupportedVersionError, ValueError, TypeError)):
        encode_response(body, key, version, 1)


# ---------------------------------------------------------------- FrameReader


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _check_holds_at_most_one_partial_frame(reader: FrameReader, pending: bytes) -> None:
    assert reader.buffered == len(pending)
    if len(pending) >= 4:
        (size,) = struct.unpack_from(">i", pending)
        assert len(pending) < 4 + size


@settings(max_examples=150, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=40), max_size=8),
    cuts=st.lists(st.integers(0, 400), max_size=30),
)
def test_frame_reader_splits_any_chunking(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(_frame(p) for p in payloads)
    points = sorted({min(c, len(stream)) for c in cuts} | {0, len(stream)})
    reader = FrameReader(max_frame_size=64)
    out: list[bytes] = []
    fed = 0
    for a, b in zip(points, points[1:], strict=False):
        out.extend(reader.feed(stream[a:b]))
        fed = b
        consumed = sum(4 + len(p) for p in out)
        _check_holds_at_most_one_partial_frame(reader, stream[consumed:fed])
    assert out == payloads
    assert reader.buffered == 0


@settings(max_examples=60, deadline=None)
@given(payloads=st.lists(st.binary(max_size=20), min_size=1, max_size=5))
def test_frame_reader_byte_by_byte(payloads: list[bytes]) -> None:
    stream = b"".join(_frame(p) for p in payloads)
    reader = FrameReader()
    out: list[bytes] = []
    for i in range(len(stream)):
        got = reader.feed(stream[i : i + 1])
        assert len(got) <= 1
        out.extend(got)
    assert out == payloads


def test_frame_reader_real_frames() -> None:
    frames = [encode_request(LeaderAndIsrRequest(controller_id=i), 7, i, "c") for i in range(5)]
    reader = FrameReader()
    got = reader.feed(b"".join(frames))
    assert [decode_request(f).header.correlation_id for f in got] == list(range(5))


@pytest.mark.parametrize("size", [-1, -(2**31), 65, 2**31 - 1])
def test_frame_reader_rejects_bad_sizes(size: int) -> None:
    reader = FrameReader(max_frame_size=64)
    assert reader.feed(_frame(b"ok")) == [b"ok"]
    with pytest.raises(DecodeError) as info:
        reader.feed(struct.pack(">i", size)[:3])
        reader.feed(struct.pack(">i", size)[3:])  # refused as soon as the size is complete
    assert info.value.offset == 0
    assert str(size) in str(info.value)


def test_frame_reader_rejects_sizes_over_the_default_limit() -> None:
    reader = FrameReader()
    assert reader.max_frame_size == 104857600
    reader.feed(struct.pack(">i", 104857600))  # exactly the limit: waits for the body
    with pytest.raises(DecodeError):
        FrameReader().feed(struct.pack(">i", 104857601))


def test_frame_reader_bad_size_after_good_frames_in_one_chunk() -> None:
    # The good frames before a bad size are not lost: they come back first, then the reader
    # raises on every later call.
    reader = FrameReader(max_frame_size=10)
    assert reader.feed(_frame(b"a") + _frame(b"b") + struct.pack(">i", 11) + b"x" * 11) == [b"a", b"b"]
    with pytest.raises(DecodeError, match="invalid frame size 11"):
        reader.feed(b"")
    with pytest.raises(DecodeError):
        reader.feed(_frame(b"c"))


def test_frame_reader_accepts_a_frame_of_exactly_the_limit_and_empty_frames() -> None:
    reader = FrameReader(max_frame_size=10)
    assert reader.feed(_frame(b"") + _frame(b"0123456789")) == [b"", b"0123456789"]
    assert reader.buffered == 0
