"""The records table's fused decoders (tables/json_fused.py) give exactly json_fast.to_json_text of
what the fast decoders decode: for every record type and version of the catalog on generated
records, in whole batches read with the JSON form against the decoded form, and for corrupt
bytes the same error or the same rows."""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import attrs
import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.log.errors import ReplayInputError
from ctrlbatch.replay.log.records import CLIENT_QUOTA_RECORD, PARTITION_RECORD, LogBatch
from ctrlbatch.replay.log.segments import decode_batch
from ctrlbatch.replay.schema.metadata_classes import RECORD_CLASSES
from ctrlbatch.replay.schema.record_classes import decode_value, encode_value, record_class
from ctrlbatch.replay.tables import json_fused
from ctrlbatch.replay.tables.json_fast import to_json_text
from ctrlbatch.replay.tables.json_fused import JSON_FORM, json_decoder, json_decoder_source
from ctrlbatch.testing.messages import all_versions, messages

from .test_reading_fast import batch_bytes

VERSIONS = all_versions(list(RECORD_CLASSES.values()))
_dumps = json.JSONEncoder(separators=(",", ":")).encode


@pytest.mark.parametrize(("cls", "version"), VERSIONS, ids=[f"{c.__name__}-v{v}" for c, v in VERSIONS])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fused_json_of_every_record_type_and_version_is_the_json_of_its_decoded_value(
    cls: Any, version: int, data: st.DataObject
) -> None:
    obj = data.draw(messages(cls, version))
    pad = data.draw(st.binary(max_size=3))
    buf = pad + encode_value(cls.API_KEY, version, obj)
    _type, _v, decoded = decode_value(buf, len(pad), len(buf))
    fused = json_decoder(cls.API_KEY, version)
    assert fused is not None
    text, stop = fused(buf, len(pad) + 3)  # every type id and version fits a one-byte frame
    assert stop == len(buf)
    assert text == to_json_text(decoded, version)
    assert json.loads(text) == json.loads(to_json_text(decoded, version))  # and it is JSON


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -0.0, 1e300, 0.1, 5e-324])
def test_a_float_is_spelled_as_the_json_encoder_spells_it(value: float) -> None:
    cls = record_class(CLIENT_QUOTA_RECORD)
    obj = cls(value=value)
    buf = encode_value(CLIENT_QUOTA_RECORD, 0, obj)
    fused = json_decoder(CLIENT_QUOTA_RECORD, 0)
    assert fused is not None
    text, stop = fused(buf, 3)
    assert stop == len(buf)
    assert text == _dumps({"entity": [], "key": "", "value": value, "remove": False})
    assert text == to_json_text(decode_value(buf, 0, len(buf))[2], 0)


@pytest.mark.parametrize("text", ["", "plain", 'q"uote\\back', "tab\tnl\n\x00\x1f", "é€😀", "\ud7ff\ue000"])
def test_a_string_is_escaped_as_the_json_encoder_escapes_it(text: str) -> None:
    cls = record_class(CLIENT_QUOTA_RECORD)
    obj = cls(key=text)
    buf = encode_value(CLIENT_QUOTA_RECORD, 0, obj)
    fused = json_decoder(CLIENT_QUOTA_RECORD, 0)
    assert fused is not None
    assert fused(buf, 3)[0] == to_json_text(decode_value(buf, 0, len(buf))[2], 0)
    assert _dumps(text) in fused(buf, 3)[0]


def test_every_record_type_and_version_has_a_fused_decoder() -> None:
    """None would send its records down the reference path: correct, but not what the table is for."""
    for cls, version in VERSIONS:
        assert json_decoder(cls.API_KEY, version) is not None, (cls.__name__, version)


def test_the_fused_decoders_know_only_the_catalog() -> None:
    assert json_decoder(6, 0) is None and json_decoder_source(6, 0) is None  # no record has type 6
    cls = record_class(CLIENT_QUOTA_RECORD)
    assert json_decoder(CLIENT_QUOTA_RECORD, cls.MAX_VERSION + 1) is None
    assert json_decoder(CLIENT_QUOTA_RECORD, 0) is json_decoder(CLIENT_QUOTA_RECORD, 0)  # memoised


# ------------------------------------------------------------------ whole batches, the reader's form


def as_json(batch: LogBatch) -> LogBatch:
    """The decoded batch with its data records' data as to_json_text (what the JSON form gives)."""
    records = tuple(attrs.evolve(r, data=to_json_text(r.data, r.version)) for r in batch.records)
    return attrs.evolve(batch, records=records)


def outcome(buf: bytes, form: Any) -> Any:
    try:
        return decode_batch(buf, source="b.log", position=100, form=form)
    except ReplayInputError as e:
        return ("error", str(e))


def expected(buf: bytes) -> Any:
    got = outcome(buf, None)
    return got if isinstance(got, tuple) else as_json(got)


@settings(max_examples=200, deadline=None)
@given(batch_bytes())
def test_a_batch_read_in_the_json_form_holds_the_json_of_the_decoded_batch(buf: bytes) -> None:
    first = outcome(buf, JSON_FORM)  # the first reading installs the fused decoders of its (type, version)s
    again = outcome(buf, JSON_FORM)
    want = expected(buf)
    assert not isinstance(want, tuple), want
    assert first == again == want
    assert all(type(r.data) is str for r in again.records)
    assert again.size == want.size


def _with_crc(buf: bytearray) -> bytes:
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


@settings(max_examples=300, deadline=None)
@given(batch_bytes(), st.data())
def test_corrupt_records_give_the_same_error_or_json_in_the_json_form(buf: bytes, data: st.DataObject) -> None:
    mutated = bytearray(buf)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(61, len(buf) - 1))  # the records, after the batch header
        mutated[i] = data.draw(st.integers(0, 255))
    bad = _with_crc(mutated)  # a sound CRC: the records themselves are checked
    outcome(buf, JSON_FORM)
    assert outcome(bad, JSON_FORM) == expected(bad)


INT_ARRAYS = st.lists(st.lists(st.integers(-(1 << 31), (1 << 31) - 1), max_size=5).map(tuple), min_size=1, max_size=30)


@settings(max_examples=100, deadline=None)
@given(INT_ARRAYS, st.integers(1, 8))
def test_an_int_array_text_is_the_same_from_the_cache_and_after_it_is_cleared(
    arrays: list[tuple[int, ...]], limit: int
) -> None:
    """PartitionRecord v0's replicas and isr (int32 arrays): the text of an array seen before
    comes from json_fused's cache; a full cache is cleared; either way, the text is to_json_text's."""
    cls = RECORD_CLASSES[PARTITION_RECORD]
    fused = json_decoder(PARTITION_RECORD, 0)
    assert fused is not None and "_IC.get(" in (json_decoder_source(PARTITION_RECORD, 0) or "")
    saved = json_fused.INTS_CACHE
    json_fused.INTS_CACHE = limit  # the generated code calls _ints_text, which reads the module's limit
    json_fused._INTS.clear()  # (the cache is transparent: only its size is checked here)
    try:
        for replicas, isr in zip(arrays, [*arrays[1:], arrays[0]], strict=True):
            obj = attrs.evolve(cls(), replicas=replicas, isr=isr)
            buf = encode_value(cls.API_KEY, 0, obj)
            text, stop = fused(buf, 3)  # after the one-byte frame, type and version
            assert stop == len(buf)
            assert text == to_json_text(decode_value(buf, 0, len(buf))[2], 0)
            assert len(json_fused._INTS) <= limit
    finally:
        json_fused.INTS_CACHE = saved
