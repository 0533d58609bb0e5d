from __future__ import annotations

import base64
import uuid

from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.context import ZERO_UUID, kafka_uuid_string


def test_zero_uuid_is_sixteen_zero_bytes() -> None:
    assert ZERO_UUID.bytes == bytes(16)


def test_kafka_string_of_zero_uuid() -> None:
    # Kafka's Uuid.ZERO_UUID.toString()
    assert kafka_uuid_string(ZERO_UUID) == "AAAAAAAAAAAAAAAAAAAAAA"


def test_kafka_string_is_url_safe_base64_without_padding() -> None:
    value = uuid.UUID(bytes=bytes([0xFB, 0xFF] + [0] * 14))
    text = kafka_uuid_string(value)
    assert text.startswith("-_8")  # '+' and '/' would appear with the standard alphabet
    assert "=" not in text
    assert len(text) == 22


@given(st.uuids())
def test_kafka_string_decodes_back_to_the_same_bytes(value: uuid.UUID) -> None:
    text = kafka_uuid_string(value)
    assert base64.urlsafe_b64decode(text + "==") == value.bytes
