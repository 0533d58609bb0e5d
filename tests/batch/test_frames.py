"""Framing at the edge (requests/framing.py): the clear errors for a wrong argument type and for a
frame that still carries its size prefix, and the header templates that the batch's frames use
(the cached header bytes must equal the codec's generic encoding for every api, version and
correlation id)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.requests import (
    APIS,
    DecodeError,
    EncodeError,
    FrameReader,
    RequestHeader,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_head,
    request_header_version,
)


@pytest.mark.parametrize("bad", ["abc", None, 12, [1, 2]])
def test_non_bytes_say_what_they_expect(bad):
    what = type(bad).__name__
    with pytest.raises(DecodeError, match=f"frame must be bytes, bytearray or memoryview, not {what}") as info:
        decode_request(bad)
    assert isinstance(info.value, TypeError)
    with pytest.raises(TypeError, match=f"frame must be bytes, bytearray or memoryview, not {what}"):
        decode_response(bad, 6, 8)
    with pytest.raises(TypeError, match=f"data must be bytes, bytearray or memoryview, not {what}"):
        FrameReader().feed(bad)


def test_size_prefix_hint_on_requests():
    frame = encode_request(UpdateMetadataRequest(controller_id=3), 8, 5, "c")
    with pytest.raises(DecodeError) as info:
        decode_request(frame)
    assert str(info.value) == (
        "RequestHeader, field RequestApiKey, at byte offset 0: Unsupported API key 0 (the frame seems to start "
        f"with its 4-byte size prefix, {len(frame) - 4}: pass it without, as FrameReader.feed returns frames)"
    )
    assert decode_request(frame[4:]).body == UpdateMetadataRequest(controller_id=3)


def test_size_prefix_hint_on_responses():
    frame = encode_response(UpdateMetadataResponse(error_code=7), 6, 8, 9)
    with pytest.raises(DecodeError, match="the frame seems to start with its 4-byte size prefix"):
        decode_response(frame, 6, 8)
    assert decode_response(frame[4:], 6, 8)[1] == UpdateMetadataResponse(error_code=7)


def test_no_hint_without_a_prefix():
    with pytest.raises(DecodeError) as info:
        decode_request(b"\x00\x63\x00\x00rest")
    assert "size prefix" not in str(info.value) and "Unsupported API key 99" in str(info.value)


API_VERSIONS = [(key, v) for key, a in APIS.items() for v in range(a.min_version, a.max_version + 1)]


@settings(deadline=None)  # a first header template compiles the header codec
@given(
    api_version=st.sampled_from(API_VERSIONS),
    correlation_id=st.integers(-(1 << 31), (1 << 31) - 1),
    client_id=st.one_of(st.none(), st.text(max_size=20)),
    body_size=st.integers(0, 1 << 20),
)
def test_request_head_equals_the_generic_encoding(api_version, correlation_id, client_id, body_size):
    key, version = api_version
    hv = request_header_version(key, version)
    header = RequestHeader(
        request_api_key=key, request_api_version=version, correlation_id=correlation_id, client_id=client_id
    ).encode(hv)
    assert request_head(key, version, correlation_id, client_id, body_size) == struct.pack(">i", len(header) + body_size) + header


@pytest.mark.parametrize("bad", [1 << 31, "7", None])
def test_request_head_correlation_id_checked(bad):
    with pytest.raises(EncodeError, match=f"RequestHeader: field CorrelationId: {bad!r} is not an int32"):
        request_head(6, 8, bad, "c", 0)
