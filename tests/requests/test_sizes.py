"""Sizes without encoding (gen_sizer.py): for every message and version the project encodes, and
for every struct the batch sizes on its own, the computed size is the encoded length; a frame's
size (size prefix and request header included) is the encoded frame's length."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.requests import APIS, EncodeError, encode_request, request_frame_size
from ctrlbatch.requests import messages as msgs
from ctrlbatch.requests.layout import struct_encoder, struct_sizer
from ctrlbatch.requests.spec import iter_structs
from ctrlbatch.requests.wire import tags_size, uvarint, uvarint_size, write_tags
from ctrlbatch.testing import all_versions, messages
from ctrlbatch.testing.messages import struct_of

CLASSES = [getattr(msgs, n) for n in msgs.__all__]
CASES = all_versions(CLASSES)
STRUCT_CASES = [
    (cls, s.name, v) for cls, v in CASES for s in iter_structs(cls.MESSAGE.fields) if v in s.versions
]
REQUESTS = [(a.request, v) for a in APIS.values() for v in range(a.request.MIN_VERSION, a.request.MAX_VERSION + 1)]
SETTINGS = settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
@SETTINGS
@given(data=st.data())
def test_size_is_the_encoded_length(cls: Any, version: int, data: st.DataObject) -> None:
    obj = data.draw(messages(cls, version, max_size=4))
    assert obj.encoded_size(version) == len(obj.encode(version))


@pytest.mark.parametrize(("cls", "name", "version"), STRUCT_CASES, ids=[f"{c.__name__}.{n}-v{v}" for c, n, v in STRUCT_CASES])
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_struct_size_is_its_encoded_length(cls: Any, name: str, version: int, data: st.DataObject) -> None:
    sub = next(c for c in _struct_classes(cls) if c.__name__ == name)
    obj = data.draw(struct_of(sub, version, cls.is_flexible(version), max_size=4))
    assert struct_sizer(cls, name, version)(obj) == len(struct_encoder(cls, name, version)(obj))


def _struct_classes(cls: Any) -> list[Any]:
    seen: list[Any] = []
    todo = list(cls.STRUCT_TYPES.values())
    while todo:
        c = todo.pop()
        if c not in seen:
            seen.append(c)
            todo.extend(c.STRUCT_TYPES.values())
    return seen


@pytest.mark.parametrize(("cls", "version"), REQUESTS, ids=[f"{c.__name__}-v{v}" for c, v in REQUESTS])
@SETTINGS
@given(data=st.data(), correlation_id=st.integers(-(1 << 31), (1 << 31) - 1),
       client_id=st.one_of(st.none(), st.text(max_size=200)))
def test_frame_size_is_the_frame_length(cls: Any, version: int, data: st.DataObject, correlation_id: int, client_id: str | None) -> None:
    body = data.draw(messages(cls, version))
    frame = encode_request(body, version, correlation_id, client_id)
    assert request_frame_size(cls.API_KEY, version, client_id, body.encoded_size(version)) == len(frame)


@given(st.integers(-(1 << 31), (1 << 32) - 1))
def test_uvarint_size(n: int) -> None:
    assert uvarint_size(n) == len(uvarint(n))


@given(st.lists(st.tuples(st.integers(0, 1 << 20), st.binary(max_size=200)), max_size=4, unique_by=lambda t: t[0]),
       st.lists(st.tuples(st.integers(0, 1 << 20), st.binary(max_size=200)), max_size=3))
def test_tags_size(known: list[tuple[int, bytes]], unknown: list[tuple[int, bytes]]) -> None:
    known.sort()
    out: list[bytes] = []
    try:
        write_tags(out.append, known, tuple(unknown))
    except EncodeError as e:
        with pytest.raises(EncodeError, match=str(e)):
            tags_size([(t, len(v)) for t, v in known], tuple(unknown))
        return
    assert tags_size([(t, len(v)) for t, v in known], tuple(unknown)) == len(b"".join(out))


def test_long_strings_and_arrays_take_wider_prefixes() -> None:
    """Lengths past one varint byte (127+) and a multi-byte UTF-8 string, beyond the strategies' sizes."""
    from ctrlbatch.requests import LeaderAndIsrPartitionState, LeaderAndIsrRequest, LeaderAndIsrTopicState

    state = LeaderAndIsrPartitionState(topic_name="t" * 300, isr=tuple(range(200)), replicas=tuple(range(40)))
    topic = LeaderAndIsrTopicState(topic_name="é" * 100, partition_states=(state,) * 130)
    for v in (1, 4, 7):
        body = LeaderAndIsrRequest(topic_states=(topic,) if v >= 2 else (), ungrouped_partition_states=(state,) * 130 if v < 2 else ())
        assert body.encoded_size(v) == len(body.encode(v))


def test_a_value_the_encoder_refuses_gets_the_encoders_error() -> None:
    from ctrlbatch.requests import LeaderAndIsrPartitionState, LeaderAndIsrRequest

    bad = LeaderAndIsrRequest(ungrouped_partition_states=(LeaderAndIsrPartitionState(topic_name=None),))  # type: ignore[arg-type]
    with pytest.raises(EncodeError) as encoded:
        bad.encode(1)
    with pytest.raises(EncodeError) as sized:
        bad.encoded_size(1)
    assert str(sized.value) == str(encoded.value)
    too_long = LeaderAndIsrRequest(ungrouped_partition_states=(LeaderAndIsrPartitionState(topic_name="x" * 0x8000),))
    with pytest.raises(EncodeError, match="topicName' field is too long"):
        too_long.encoded_size(1)
