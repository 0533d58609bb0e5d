"""SharedDecoder gives what decode_request gives, for every control-request version, hit or miss."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.requests import (
    DecodeError,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
    decode_request,
    encode_request,
)
from ctrlbatch.sim.shared_decode import SharedDecoder, broker_epoch_offset
from ctrlbatch.testing.messages import messages

CASES = [(cls, v) for cls in (LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest)
         for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)]


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
@settings(max_examples=12, deadline=None)
@given(data=st.data(), epochs=st.lists(st.integers(-(1 << 63), (1 << 63) - 1), min_size=1, max_size=4))
def test_same_result_as_decode_request(cls, version, data, epochs) -> None:  # type: ignore[no-untyped-def]
    body = data.draw(messages(cls, version))
    decoder = SharedDecoder(size=2)
    has_epoch = broker_epoch_offset(cls.API_KEY, version) is not None
    for i, epoch in enumerate(epochs):
        msg = type(body)(**{**{a.name: getattr(body, a.name) for a in type(body).__attrs_attrs__},
                            **({"broker_epoch": epoch} if has_epoch else {})})
        frame = encode_request(msg, version, i, "c")[4:]
        assert decoder.decode(frame) == decode_request(frame)
    if has_epoch:
        assert decoder.misses == 1 and decoder.hits == len(epochs) - 1


def test_offsets_follow_the_versions() -> None:
    assert broker_epoch_offset(4, 1) is None and broker_epoch_offset(4, 2) == 8 and broker_epoch_offset(4, 7) == 9
    assert broker_epoch_offset(6, 4) is None and broker_epoch_offset(6, 5) == 8 and broker_epoch_offset(6, 8) == 9
    assert broker_epoch_offset(5, 0) is None and broker_epoch_offset(5, 1) == 8 and broker_epoch_offset(5, 4) == 9


def test_bad_frames_raise_decode_error_like_decode_request() -> None:
    good = encode_request(UpdateMetadataRequest(controller_id=1, broker_epoch=5), 8, 1, "c")[4:]
    decoder = SharedDecoder()
    decoder.decode(good)
    for bad in (good + b"\x00", good[:-1], good[:2], good[:2] + b"\x00\x09" + good[4:]):
        with pytest.raises(DecodeError):
            decode_request(bad)
        with pytest.raises(DecodeError):
            decoder.decode(bad)
