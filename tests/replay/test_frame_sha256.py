"""frames.frame_sha256, a one-row group's hash without a FrameEncoder: for any request kind,
client id, body, broker epoch place and correlation id, the hex SHA-256 of the whole frame
(FrameEncoder.frame, which tests/replay/test_rows.py decodes back) and FrameEncoder.sha256's."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.rows.frames import FrameEncoder, frame_sha256

_apis = st.sampled_from([(4, v) for v in range(8)] + [(5, v) for v in range(5)] + [(6, v) for v in range(9)])


@settings(max_examples=300, deadline=None)
@given(api=_apis, client_id=st.sampled_from(["1", "3000", "é" * 40]), data=st.data(),
       correlation_id=st.integers(0, 2**31 - 1), broker_epoch=st.integers(-(2**63), 2**63 - 1))
def test_frame_sha256_hashes_the_frame(
    api: tuple[int, int], client_id: str, data: st.DataObject, correlation_id: int, broker_epoch: int,
) -> None:
    body = data.draw(st.binary(max_size=300))
    offset = data.draw(st.none() | st.integers(0, len(body) - 8)) if len(body) >= 8 else None
    encoder = FrameEncoder(api[0], api[1], client_id, body, offset)
    got = frame_sha256(api[0], api[1], client_id, body, offset, correlation_id, broker_epoch)
    assert got == hashlib.sha256(encoder.frame(correlation_id, broker_epoch)).hexdigest()
    assert got == encoder.sha256(correlation_id, broker_epoch)
    if offset is not None:  # the broker epoch is written in: another epoch, another frame
        other = broker_epoch + 1 if broker_epoch < 2**63 - 1 else broker_epoch - 1
        assert frame_sha256(api[0], api[1], client_id, body, offset, correlation_id, other) != got
