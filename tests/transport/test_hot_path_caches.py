"""The channel's per-request caches (issue 26) give what building and decoding afresh would.

- A small answer seen before is not decoded again (channel_state._response_decoder's kept
  bodies): whatever the order, repetition and correlation ids of frames, every frame decodes to
  what decode_response gives, or is refused with a DecodeError as it is, and the kept bodies stay bounded.
- OutboundRequest.encode_parts keeps all of a frame but its correlation id: every call, for any
  correlation id and client id in any order, joins to the frame built afresh (request_head and
  the body with this broker's epoch), and the body's bytes are still views of the shared body.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.batch import ControllerBrokerRequestBatch, RecordingTransport
from ctrlbatch.context import Broker, ControllerContext, EndPoint, SecurityProtocol
from ctrlbatch.requests import (
    DecodeError,
    EncodeError,
    StopReplicaResponse,
    UpdateMetadataResponse,
    decode_response,
    encode_response,
    request_head,
)
from ctrlbatch.transport import channel_state
from ctrlbatch.transport.channel_state import _decode_response

_BODIES = [UpdateMetadataResponse(error_code=e) for e in (0, 11, 77, -1, 256, 1)] + [
    StopReplicaResponse(error_code=0)
]


def _frame(body: Any, api_key: int, version: int, cid: int) -> bytes:
    return encode_response(body, api_key, version, cid)[4:]


@settings(max_examples=200, deadline=None)
@given(
    picks=st.lists(
        st.tuples(st.sampled_from(range(len(_BODIES))), st.integers(0, 2**31 - 9), st.sampled_from(["ok", "cut", "extra"])),
        min_size=1, max_size=30,
    ),
    version=st.integers(0, 8),
)
def test_repeated_small_answers_decode_as_afresh(picks: list[tuple[int, int, str]], version: int) -> None:
    for i, cid, damage in picks:
        body = _BODIES[i]
        api_key = 6 if isinstance(body, UpdateMetadataResponse) else 5
        v = version if api_key == 6 else version % 5
        frame = _frame(body, api_key, v, cid)
        if damage == "cut":
            frame = frame[:-1]
        elif damage == "extra":
            frame += b"\x00"
        try:
            want = decode_response(frame, api_key, v)[1]
        except DecodeError:
            for _ in range(2):  # refused every time: a bad frame is never kept
                with pytest.raises(DecodeError):
                    _decode_response(frame, api_key, v)
            continue
        assert _decode_response(frame, api_key, v) == want
        assert _decode_response(frame, api_key, v) == want  # the second time from the kept bodies


def test_kept_answers_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(channel_state, "_response_decoders", {})
    monkeypatch.setattr(channel_state, "_KNOWN_FRAMES", 3)
    decoded = [
        _decode_response(_frame(UpdateMetadataResponse(error_code=e), 6, 8, 7), 6, 8) for e in range(10)
    ]
    assert [d.error_code for d in decoded] == list(range(10))
    decode = channel_state._response_decoders[(6, 8)]
    kept = next(c.cell_contents for c in decode.__closure__ or () if isinstance(c.cell_contents, dict))
    assert len(kept) == 3
    # a frame past the bound is still decoded correctly, every time
    assert _decode_response(_frame(UpdateMetadataResponse(error_code=9), 6, 8, 1), 6, 8).error_code == 9


def _request(client_epoch: int = 41) -> Any:
    context = ControllerContext()
    endpoint = [EndPoint("127.0.0.1", 9092, "PLAINTEXT", SecurityProtocol.PLAINTEXT)]
    context.set_live_brokers({Broker(1, endpoint): client_epoch, Broker(2, endpoint): client_epoch + 1})
    recorder = RecordingTransport()
    batch = ControllerBrokerRequestBatch(0, context, "3.9-IV0", recorder)
    batch.new_batch()
    batch.add_update_metadata_request_for_brokers([1, 2])
    batch.send_requests_to_brokers(1)
    return recorder.sent[2][0][0]


@settings(max_examples=100, deadline=None)
@given(
    calls=st.lists(st.tuples(st.integers(0, 2**31 - 1), st.sampled_from([None, "", "0", "controller-7", "é"])), min_size=1, max_size=8),
)
def test_encode_parts_joins_to_the_frame_built_afresh(calls: list[tuple[int, str | None]]) -> None:
    request = _request()
    body = request.shared.data
    fresh_body = request.builder.build(request.broker_epoch).encode(request.version)
    for cid, client_id in calls:
        parts = request.encode_parts(cid, client_id)
        head = request_head(request.api_key, request.version, cid, client_id, len(fresh_body))
        assert b"".join(parts) == head + fresh_body
        assert any(isinstance(p, memoryview) and p.obj is body for p in parts)


def test_a_bad_correlation_id_is_named_as_before() -> None:
    request = _request()
    request.encode_parts(1, "0")
    for bad in (-(2**31) - 1, 2**31):
        with pytest.raises(EncodeError, match="CorrelationId"):
            request.encode_parts(bad, "0")
