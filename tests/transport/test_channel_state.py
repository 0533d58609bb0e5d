"""The per-broker state machine without sockets: queue order, tries, correlation ids, endings.

Oracle: Kafka 3.9's RequestSendThread.doWork as kafka-controller-channel.md §3 states it (retry
forever after close + back-off; drop after an unexpected api key or a callback exception).
"""

from __future__ import annotations

import logging

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.requests import (
    BrokerHeartbeatResponse,
    DecodeError,
    LeaderAndIsrResponse,
    ResponseHeader,
    StopReplicaResponse,
    UpdateMetadataResponse,
    decode_response,
    encode_response,
    response_header_version,
)
from ctrlbatch.testing import all_versions, messages
from ctrlbatch.transport import ACTIONS, BrokerChannelState, Ending
from ctrlbatch.transport.channel_state import _decode_response, next_correlation_id


@attrs.frozen
class FakeRequest:
    """A Sendable with a label (the state machine never looks inside a request)."""

    label: int
    api_key: int = 6
    version: int = 8

    def encode_parts(self, correlation_id: int, client_id: str | None) -> list[bytes | memoryview]:
        return [b"frame"]


def answer(cid: int, api_key: int = 6, version: int = 8) -> bytes:
    body = UpdateMetadataResponse(error_code=0) if api_key == 6 else BrokerHeartbeatResponse(error_code=0)
    return encode_response(body, api_key, version, cid)[4:]


def test_fifo_with_queue_time_and_kafkas_queue_size():
    s = BrokerChannelState(1)
    for i in range(3):
        s.enqueue(FakeRequest(i), None, now=float(i))
    assert (s.queue_size, s.pending) == (3, 3)
    item = s.take(now=5.0)
    assert item is not None and item.request.label == 0
    assert (s.queue_size, s.pending) == (2, 3)  # QueueSize does not count the item being sent
    assert (s.counters.dequeued, s.counters.queue_time_total_ms, s.counters.queue_time_max_ms) == (1, 5000.0, 5000.0)
    with pytest.raises(RuntimeError, match="still current"):
        s.take(now=5.0)
    s.start_try()
    s.end_try(Ending.ANSWERED)
    assert s.take(now=6.0).request.label == 1
    assert s.counters.queue_time_total_ms == 10000.0


def test_one_try_in_flight_and_a_new_correlation_id_per_try():
    s = BrokerChannelState(1)
    s.enqueue(FakeRequest(0), None, 0.0)
    s.take(0.0)
    assert s.start_try() == 0
    with pytest.raises(RuntimeError, match="already in flight"):
        s.start_try()
    action = s.end_try(Ending.CONNECTION_LOST)
    assert (action.close, action.backoff, action.retry, action.deliver) == (True, True, True, False)
    assert s.current is not None and s.current.request.label == 0  # the same request stays current
    assert s.start_try() == 1
    result = s.on_frame(answer(1))
    assert result.ending is Ending.ANSWERED and isinstance(result.response, UpdateMetadataResponse)
    s.end_try(result.ending)
    assert s.current is None and s.in_flight is None
    assert (s.counters.tries, s.counters.retries, s.counters.answered) == (2, 1, 1)


def test_start_try_needs_a_current_item():
    with pytest.raises(RuntimeError, match="no current item"):
        BrokerChannelState(1).start_try()


def test_correlation_ids_wrap_before_kafkas_reserved_range():
    assert next_correlation_id(-1) == 0
    assert next_correlation_id(2**31 - 10) == 2**31 - 9
    assert next_correlation_id(2**31 - 9) == 0  # 2**31 - 8 .. 2**31 - 1 are SASL's


def _in_flight_state(api_key: int = 6, version: int = 8) -> BrokerChannelState:
    s = BrokerChannelState(3)
    s.enqueue(FakeRequest(0, api_key, version), None, 0.0)
    s.take(0.0)
    s.start_try()
    return s


@pytest.mark.parametrize(
    ("frame", "ending", "detail"),
    [
        (answer(7), Ending.CORRELATION_MISMATCH, "Correlation id for response (7) does not match request (0)"),
        (b"\x00\x00", Ending.UNDECODABLE_RESPONSE, "a 2-byte frame has no header"),
        (b"\x00\x00\x00\x00\x00", Ending.UNDECODABLE_RESPONSE, "UpdateMetadataResponse"),
    ],
)
def test_frames_that_do_not_answer_the_try_are_failed_tries(frame, ending, detail):
    s = _in_flight_state()
    result = s.on_frame(frame)
    assert result.ending is ending
    assert detail in result.detail
    action = s.end_try(result.ending)
    assert action.retry and action.close and action.backoff
    assert s.current is not None


def test_a_frame_with_nothing_in_flight_is_unsolicited():
    s = BrokerChannelState(1)
    assert s.on_frame(answer(0)).ending is Ending.UNSOLICITED_RESPONSE


def test_an_answer_to_a_non_control_request_is_dropped_with_kafkas_message():
    s = _in_flight_state(api_key=63, version=0)  # BrokerHeartbeat
    result = s.on_frame(answer(0, 63, 0))
    assert result.ending is Ending.UNEXPECTED_API_KEY
    assert result.detail == "Unexpected apiKey received: 63"
    action = s.end_try(result.ending)
    assert (action.close, action.retry, action.deliver, action.log_level) == (True, False, False, logging.ERROR)
    assert s.current is None and s.counters.dropped == 1


def test_actions_table_is_kafkas_do_work():
    retried = {e for e, a in ACTIONS.items() if a.retry and a.backoff}
    assert retried == {
        Ending.CONNECT_FAILED, Ending.CONNECTION_LOST, Ending.REQUEST_TIMED_OUT,
        Ending.CORRELATION_MISMATCH, Ending.UNDECODABLE_RESPONSE,
    }
    dropped = {e for e, a in ACTIONS.items() if not a.retry and not a.deliver}
    assert dropped == {Ending.UNEXPECTED_API_KEY, Ending.CALLBACK_FAILED}
    assert all(ACTIONS[e].close for e in retried | dropped)
    assert ACTIONS[Ending.ANSWERED].deliver and not ACTIONS[Ending.ANSWERED].close


def test_abandon_drops_queue_and_current_without_settling_them():
    s = _in_flight_state()
    s.enqueue(FakeRequest(1), None, 0.0)
    assert s.abandon() == 2
    assert (s.pending, s.current, s.in_flight) == (0, None, None)


FAILURES = [e for e, a in ACTIONS.items() if a.retry and e is not Ending.UNSOLICITED_RESPONSE]


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=12),
    script=st.lists(st.sampled_from([*FAILURES, Ending.ANSWERED, Ending.UNEXPECTED_API_KEY]), max_size=80),
    enqueue_points=st.lists(st.integers(min_value=0, max_value=80), max_size=12),
)
def test_every_item_settles_once_in_order_whatever_the_endings(n, script, enqueue_points):
    """Random endings and enqueue times: items settle exactly once, in FIFO order; tries never overlap."""
    s = BrokerChannelState(1)
    labels = iter(range(1000))
    enqueued: list[int] = []
    settled: list[int] = []
    points = sorted(enqueue_points)
    cids: list[int] = []

    def enqueue() -> None:
        label = next(labels)
        enqueued.append(label)
        s.enqueue(FakeRequest(label), None, 0.0)

    for _ in range(n):
        enqueue()
    for step, ending in enumerate(script):
        while points and points[0] <= step:
            points.pop(0)
            enqueue()
        if s.current is None and s.take(0.0) is None:
            continue
        label = s.current.request.label
        cids.append(s.start_try())
        s.end_try(ending)
        if not ACTIONS[ending].retry:
            settled.append(label)
        assert s.in_flight is None
    assert settled == enqueued[: len(settled)]
    assert len(settled) + s.pending == len(enqueued)
    assert cids == list(range(len(cids)))
    assert s.counters.tries == len(cids)
    assert s.counters.answered + s.counters.dropped == len(settled)


def test_any_codec_failure_is_an_undecodable_response_not_a_crash(monkeypatch):
    from ctrlbatch.transport import channel_state

    def broken(frame, api_key, version):
        raise ValueError("codec bug")

    monkeypatch.setattr(channel_state, "_decode_response", broken)
    s = _in_flight_state()
    result = s.on_frame(answer(0))
    assert (result.ending, result.detail) == (Ending.UNDECODABLE_RESPONSE, "ValueError: codec bug")
    assert s.end_try(result.ending).retry


@settings(max_examples=300, deadline=None)
@given(key_version=st.sampled_from([(4, v) for v in range(8)] + [(5, v) for v in range(5)] + [(6, v) for v in range(9)]),
       data=st.binary(max_size=40))
def test_the_hot_path_decoder_agrees_with_decode_response(key_version, data):
    from ctrlbatch.requests import DecodeError, decode_response
    from ctrlbatch.transport.channel_state import _decode_response

    key, version = key_version
    try:
        want = decode_response(data, key, version)[1]
    except DecodeError:
        with pytest.raises(DecodeError):
            _decode_response(data, key, version)
        return
    assert _decode_response(data, key, version) == want


CONTROL_RESPONSES = all_versions([LeaderAndIsrResponse, StopReplicaResponse, UpdateMetadataResponse])


@st.composite
def response_frames(draw: st.DrawFn) -> tuple[bytes, int, int]:
    """A response frame (no size prefix) of a control api key and version, header tags included,
    as written or damaged: cut short, extended, or one byte changed."""
    cls, version = draw(st.sampled_from(CONTROL_RESPONSES))
    api_key = cls.API_KEY
    assert api_key is not None
    hv = response_header_version(api_key, version)
    frame = draw(messages(ResponseHeader, hv)).encode(hv) + draw(messages(cls, version)).encode(version)
    damage = draw(st.sampled_from(["none", "cut", "extend", "change"]))
    if damage == "cut":
        frame = frame[: draw(st.integers(0, len(frame) - 1))]
    elif damage == "extend":
        frame += draw(st.binary(min_size=1, max_size=4))
    elif damage == "change":
        at = draw(st.integers(0, len(frame) - 1))
        frame = frame[:at] + bytes([draw(st.integers(0, 255))]) + frame[at + 1 :]
    return frame, api_key, version


def _outcome(decode, frame: bytes) -> tuple[str, object]:
    try:
        return "decoded", decode(frame)
    except DecodeError as e:
        return "refused", str(e)


@settings(max_examples=200, deadline=None)
@given(case=response_frames())
def test_the_cached_response_decoder_answers_as_the_header_and_body_decoders_do(case):
    """The channel's fast path (header read in place, body decoded at its offset) gives the
    decoded body or the error of decoding header and body on their own, whatever the frame."""
    frame, api_key, version = case
    hv = response_header_version(api_key, version)
    cls = {4: LeaderAndIsrResponse, 5: StopReplicaResponse, 6: UpdateMetadataResponse}[api_key]

    def separately(data: bytes) -> object:
        _, pos = ResponseHeader.decode_prefix(data, hv)
        return cls.decode(memoryview(data)[pos:], version)

    expected = _outcome(separately, frame)
    assert _outcome(lambda data: _decode_response(data, api_key, version), frame) == expected
    if expected[0] == "decoded":
        assert decode_response(frame, api_key, version)[1] == expected[1]


def test_a_malformed_body_is_refused_with_the_offset_in_the_body():
    """The fast path decodes the body at its offset in the frame; an error still counts from the body."""
    s = _in_flight_state()
    result = s.on_frame(b"\x00\x00\x00\x00\x00" + b"\x00")  # header v1, then a 1-byte error code
    assert result.ending is Ending.UNDECODABLE_RESPONSE
    assert "UpdateMetadataResponse" in result.detail and "offset 0" in result.detail
