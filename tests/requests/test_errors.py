"""One test per error rule: Kafka's exact message texts, the field path and byte offset of each
DecodeError, and the encode-side refusals (UnsupportedVersionError / EncodeError).

Offsets: for a bad length prefix (null where not allowed, too long, more elements than bytes) the
codec reports the offset just past the prefix; for an over-long varint, the offset of its 5th byte.
"""

from __future__ import annotations

import pickle
import uuid
from typing import Any

import pytest

from ctrlbatch.requests import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    DecodeError,
    EncodeError,
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionError,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrTopicState,
    Listener,
    RequestHeader,
    StopReplicaPartitionError,
    StopReplicaRequest,
    StopReplicaResponse,
    StopReplicaTopicV1,
    UnsupportedVersionError,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
    UpdateMetadataTopicState,
)
from ctrlbatch.requests.json_spec import load_json_spec
from ctrlbatch.testing import project

MARK = 0x11223344
MARK_BYTES = MARK.to_bytes(4, "big")
HOST = "hostX"


def lair(version: int) -> LeaderAndIsrRequest:
    """Two partitions in one topic (v2+) or ungrouped (v0-1); the second's ISR is [MARK]."""
    ps = [
        LeaderAndIsrPartitionState(topic_name="t", partition_index=0, isr=(1,), replicas=(1,)),
        LeaderAndIsrPartitionState(topic_name="t", partition_index=1, isr=(MARK,), replicas=(2,)),
    ]
    leaders = [LeaderAndIsrLiveLeader(broker_id=1, host_name=HOST, port=9092)]
    if version < 2:
        return LeaderAndIsrRequest(controller_id=1, ungrouped_partition_states=ps, live_leaders=leaders)
    return LeaderAndIsrRequest(
        controller_id=1, topic_states=[LeaderAndIsrTopicState(topic_name="t", partition_states=ps)],
        live_leaders=leaders,
    )


def decode_error(cls: Any, data: bytes, version: int) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        cls.decode(data, version)
    e = info.value
    assert e.message == cls.MESSAGE.name and e.version == version
    return e


def isr_prefix(version: int) -> tuple[bytes, int, int]:
    """(encoding, start of the second partition's Isr length prefix, prefix width)."""
    raw = lair(version).encode(version)
    assert raw.count(MARK_BYTES) == 1
    flexible = version >= 4
    width = 1 if flexible else 4
    start = raw.index(MARK_BYTES) - width
    assert raw[start : start + width] == (b"\x02" if flexible else b"\x00\x00\x00\x01")
    return raw, start, width


def host_prefix(version: int) -> tuple[bytes, int, int]:
    raw = lair(version).encode(version)
    flexible = version >= 4
    width = 1 if flexible else 2
    start = raw.index(HOST.encode()) - width
    assert raw[start : start + width] == (b"\x06" if flexible else b"\x00\x05")
    return raw, start, width


ISR_PATH = {
    **{v: "LeaderAndIsrRequest.UngroupedPartitionStates[1].Isr" for v in (0, 1)},
    **{v: "LeaderAndIsrRequest.TopicStates[0].PartitionStates[1].Isr" for v in range(2, 8)},
}

# ---------------------------------------------------------------- Kafka's message texts (decode)


@pytest.mark.parametrize("version", [3, 4, 7])
def test_collection_larger_than_remaining_bytes(version: int) -> None:
    raw, start, width = isr_prefix(version)
    huge = b"\xff\xff\xff\xff\x07" if version >= 4 else b"\x7f\xff\xff\xff"
    data = raw[:start] + huge + raw[start + width :]
    e = decode_error(LeaderAndIsrRequest, data, version)
    n = 2**31 - 2 if version >= 4 else 2**31 - 1
    offset = start + len(huge)
    assert e.reason == f"Tried to allocate a collection of size {n}, but there are only {len(data) - offset} bytes remaining."
    assert e.field == "LeaderAndIsrRequest.TopicStates[0].PartitionStates[1].Isr"
    assert e.offset == offset
    assert str(e).startswith(f"LeaderAndIsrRequest v{version}, field {e.field}, at byte offset {offset}: ")


def test_struct_collection_larger_than_remaining_bytes() -> None:
    # UpdateMetadataRequest v0: ControllerId, ControllerEpoch, then UngroupedPartitionStates count.
    data = b"\x00\x00\x00\x01" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x09" + b"\x00" * 8
    e = decode_error(UpdateMetadataRequest, data, 0)
    assert e.reason == "Tried to allocate a collection of size 9, but there are only 8 bytes remaining."
    assert e.field == "UpdateMetadataRequest.UngroupedPartitionStates"
    assert e.offset == 12


@pytest.mark.parametrize("version", range(0, 8))
def test_null_array_for_a_non_nullable_array(version: int) -> None:
    raw, start, width = isr_prefix(version)
    null = b"\x00" if version >= 4 else b"\xff\xff\xff\xff"
    data = raw[:start] + null + raw[start + width :]
    e = decode_error(LeaderAndIsrRequest, data, version)
    assert e.reason == "non-nullable field isr was serialized as null"
    assert e.field == ISR_PATH[version]
    assert e.offset == start + len(null)


def test_compact_null_top_level_array() -> None:
    # LeaderAndIsrResponse v4: ErrorCode, then PartitionErrors as compact null (00).
    e = decode_error(LeaderAndIsrResponse, b"\x00\x00\x00\x00", 4)
    assert e.reason == "non-nullable field partitionErrors was serialized as null"
    assert e.field == "LeaderAndIsrResponse.PartitionErrors"
    assert e.offset == 3


@pytest.mark.parametrize("length", [b"\xff\xff", b"\xff\xfe", b"\x80\x00"])
def test_negative_classic_string_on_a_non_nullable_field(length: bytes) -> None:
    raw, start, width = host_prefix(3)
    data = raw[:start] + length + raw[start + width :]
    e = decode_error(LeaderAndIsrRequest, data, 3)
    assert e.reason == "non-nullable field hostName was serialized as null"
    assert e.field == "LeaderAndIsrRequest.LiveLeaders[0].HostName"
    assert e.offset == start + 2


def test_compact_null_string_on_a_non_nullable_field() -> None:
    raw, start, width = host_prefix(4)
    data = raw[:start] + b"\x00" + raw[start + width :]
    e = decode_error(LeaderAndIsrRequest, data, 4)
    assert e.reason == "non-nullable field hostName was serialized as null"
    assert e.field == "LeaderAndIsrRequest.LiveLeaders[0].HostName"
    assert e.offset == start + 1


@pytest.mark.parametrize("version", [1, 2])
def test_negative_classic_string_on_a_nullable_field_is_null(version: int) -> None:
    # RequestHeader.ClientId is nullable and classic (flexibleVersions "none") even in v2.
    data = b"\x00\x04\x00\x01\x00\x00\x00\x07\xff\xff" + (b"\x00" if version == 2 else b"")
    h = RequestHeader.decode(data, version)
    assert h == RequestHeader(request_api_key=4, request_api_version=1, correlation_id=7, client_id=None)
    assert h.encode(version) == data


def test_nullable_compact_string_zero_is_null() -> None:
    # UpdateMetadataRequest v6 broker with a null Rack (compact 00) decodes to None.
    obj = UpdateMetadataRequest(live_brokers=[UpdateMetadataBroker(id=1, rack=None)])
    raw = obj.encode(6)
    assert UpdateMetadataRequest.decode(raw, 6) == obj


def test_compact_string_one_byte_over_the_limit() -> None:
    raw, start, width = host_prefix(4)
    data = raw[:start] + b"\x81\x80\x02" + raw[start + width :]  # N+1 = 0x8001: N = 0x8000
    e = decode_error(LeaderAndIsrRequest, data, 4)
    assert e.reason == "string field hostName had invalid length 32768"
    assert e.field == "LeaderAndIsrRequest.LiveLeaders[0].HostName"
    assert e.offset == start + 3


def test_classic_string_0x7fff_plus_one_reads_as_negative() -> None:
    # An int16 cannot hold 0x8000: on the wire it is -32768, i.e. null.
    raw, start, width = host_prefix(3)
    data = raw[:start] + b"\x80\x00" + raw[start + width :]
    e = decode_error(LeaderAndIsrRequest, data, 3)
    assert e.reason == "non-nullable field hostName was serialized as null"


def test_string_longer_than_the_data() -> None:
    raw, start, width = host_prefix(3)
    data = raw[:start] + b"\x7f\xff" + raw[start + width :]
    e = decode_error(LeaderAndIsrRequest, data, 3)
    assert e.field == "LeaderAndIsrRequest.LiveLeaders[0].HostName"
    assert e.offset == start + 2
    assert "32767" in e.reason


@pytest.mark.parametrize(
    ("five", "converted"),
    [
        (b"\x80\x80\x80\x80\x80", "0"),
        (b"\xff\xff\xff\xff\xff", "ffffffff"),
        (b"\x81\x80\x80\x80\x81", "10000001"),
        (b"\xff\xff\xff\xff\x8f", "ffffffff"),
    ],
)
def test_uvarint_with_a_fifth_continuation_byte(five: bytes, converted: str) -> None:
    raw, start, width = isr_prefix(4)
    data = raw[:start] + five + raw[start + width :]
    e = decode_error(LeaderAndIsrRequest, data, 4)
    assert e.reason == (
        f"Varint is too long, the most significant bit in the 5th byte is set, converted value: {converted}"
    )
    assert e.field == "LeaderAndIsrRequest.TopicStates[0].PartitionStates[1].Isr"
    assert e.offset == start + 4


def test_five_byte_uvarint_without_continuation_wraps_like_java() -> None:
    # ff ff ff ff 0f = 2**32-1, a Java -1: N+1 = -1 means N = -2, a null array, refused.
    raw, start, width = isr_prefix(4)
    data = raw[:start] + b"\xff\xff\xff\xff\x0f" + raw[start + width :]
    assert decode_error(LeaderAndIsrRequest, data, 4).reason == "non-nullable field isr was serialized as null"


@pytest.mark.parametrize(
    "bad",
    [b"\xff\xfe\xfd\xfc\xfb", b"ab\xc0\x80c", b"a\xed\xa0\x80b", b"abcd\xe2"],
    ids=["invalid-start", "overlong", "surrogate", "truncated-sequence"],
)
@pytest.mark.parametrize("version", [3, 4])
def test_invalid_utf8(version: int, bad: bytes) -> None:
    raw, start, width = host_prefix(version)
    assert len(bad) == len(HOST)
    data = raw[: start + width] + bad + raw[start + width + len(HOST) :]
    e = decode_error(LeaderAndIsrRequest, data, version)
    assert "UTF-8" in e.reason
    assert e.field == "LeaderAndIsrRequest.LiveLeaders[0].HostName"
    assert e.offset in (start, start + width)  # the field, or its bytes


@pytest.mark.parametrize(
    ("cls", "version"),
    [(LeaderAndIsrRequest, 8), (LeaderAndIsrRequest, -1), (StopReplicaResponse, 5), (BrokerHeartbeatRequest, 3)],
)
def test_decode_at_an_unsupported_version(cls: Any, version: int) -> None:
    e = decode_error(cls, b"\x00\x00", version)
    assert e.reason == f"Can't read version {version} of {cls.MESSAGE.name}"
    assert str(e) == f"{cls.MESSAGE.name} v{version}: Can't read version {version} of {cls.MESSAGE.name}"


# ---------------------------------------------------------------- tagged fields (decode)


def umr(version: int) -> bytes:
    raw = UpdateMetadataRequest().encode(version)
    assert raw[-1:] == b"\x00"  # the top-level tagged section, empty
    return raw[:-1]


def test_tag_not_valid_for_this_version() -> None:
    # UpdateMetadataRequest Type is tag 0 from v8; v7 is flexible but has no Type.
    data = umr(7) + b"\x01\x00\x01\x02"
    e = decode_error(UpdateMetadataRequest, data, 7)
    assert e.reason == "Tag 0 is not valid for version 7"
    assert e.field == "UpdateMetadataRequest.<tagged fields>"
    assert len(umr(7)) < e.offset <= len(data)
    assert UpdateMetadataRequest.decode(umr(8) + b"\x01\x00\x01\x02", 8).type == 2


@pytest.mark.parametrize("version", [0, 1])
def test_heartbeat_tag_1_is_not_valid_before_v2(version: int) -> None:
    raw = BrokerHeartbeatRequest().encode(version)[:-1]
    e = decode_error(BrokerHeartbeatRequest, raw + b"\x01\x01\x01\x01", version)
    assert e.reason == f"Tag 1 is not valid for version {version}"


def test_tags_must_be_strictly_ascending() -> None:
    for tags in (b"\x02\x05\x00\x05\x00", b"\x02\x06\x00\x05\x00"):
        e = decode_error(UpdateMetadataRequest, umr(8) + tags, 8)
        assert "strictly ascending" in e.reason
        assert e.field == "UpdateMetadataRequest.<tagged fields>"


def test_known_tag_size_must_match_its_value() -> None:
    for tags in (b"\x01\x00\x02\x02\x00", b"\x01\x00\x00\x02"):
        e = decode_error(UpdateMetadataRequest, umr(8) + tags, 8)
        assert e.field == "UpdateMetadataRequest.Type"


def test_tag_size_beyond_the_data() -> None:
    e = decode_error(UpdateMetadataRequest, umr(8) + b"\x01\x07\x09\x00", 8)
    assert e.field == "UpdateMetadataRequest.<tagged fields>"
    assert "size 9" in e.reason


def test_unknown_tags_are_kept_and_written_back() -> None:
    data = umr(8) + b"\x02\x00\x01\x01\x96\x01\x02\xab\xcd"  # Type=1, unknown tag 150 = ab cd
    obj = UpdateMetadataRequest.decode(data, 8)
    assert obj.type == 1
    assert obj.unknown_tagged_fields == ((150, b"\xab\xcd"),)
    assert obj.encode(8) == data


def test_trailing_bytes_are_an_error() -> None:
    raw = UpdateMetadataResponse(error_code=3).encode(0)
    e = decode_error(UpdateMetadataResponse, raw + b"\x00", 0)
    assert e.offset == len(raw)
    assert "trailing" in e.reason


# ---------------------------------------------------------------- truncation at every cut point


def _truncation_cases() -> list[Any]:
    return [
        pytest.param(lair(1), 1, id="LeaderAndIsrRequest-v1"),
        pytest.param(lair(4), 4, id="LeaderAndIsrRequest-v4"),
        pytest.param(lair(7), 7, id="LeaderAndIsrRequest-v7"),
        pytest.param(
            UpdateMetadataRequest(
                type=2, topic_states=[UpdateMetadataTopicState(
                    topic_name="t", topic_id=uuid.UUID(int=5),
                    partition_states=[UpdateMetadataPartitionState(partition_index=1, isr=(1, 2), offline_replicas=(3,))],
                )],
                live_brokers=[UpdateMetadataBroker(id=1, endpoints=[UpdateMetadataEndpoint(port=1, host="h", listener="L")], rack="r")],
                unknown_tagged_fields=((9, b"zz"),),
            ),
            8, id="UpdateMetadataRequest-v8",
        ),
        pytest.param(StopReplicaRequest(topics=[StopReplicaTopicV1(name="t", partition_indexes=(1, 2))]), 1, id="StopReplicaRequest-v1"),
        pytest.param(
            BrokerRegistrationRequest(
                cluster_id="c", listeners=[Listener(name="n", host="h", port=65535)], rack=None,
                log_dirs=(uuid.UUID(int=1),), cordoned_log_dirs=(uuid.UUID(int=2),),
            ),
            5, id="BrokerRegistrationRequest-v5",
        ),
        pytest.param(BrokerHeartbeatRequest(offline_log_dirs=(uuid.UUID(int=3),)), 1, id="BrokerHeartbeatRequest-v1"),
        pytest.param(RequestHeader(request_api_key=4, client_id="abc"), 2, id="RequestHeader-v2"),
    ]


@pytest.mark.parametrize(("obj", "version"), _truncation_cases())
def test_every_truncation_is_a_decode_error(obj: Any, version: int) -> None:
    cls = type(obj)
    raw = obj.encode(version)
    assert cls.decode(raw, version) == project(obj, version)
    for cut in range(len(raw)):
        e = decode_error(cls, raw[:cut], version)
        assert e.offset is not None and 0 <= e.offset <= cut, (cut, str(e))
        assert e.field.startswith(cls.MESSAGE.name), (cut, str(e))


# ---------------------------------------------------------------- encode refusals


@pytest.mark.parametrize(("cls", "version"), [(LeaderAndIsrRequest, 8), (LeaderAndIsrRequest, -1), (BrokerHeartbeatRequest, 3)])
def test_encode_at_an_unsupported_version(cls: Any, version: int) -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        cls().encode(version)
    assert str(info.value) == f"Can't write version {version} of {cls.MESSAGE.name}"


def test_non_default_non_ignorable_leader_recovery_state() -> None:
    obj = LeaderAndIsrRequest(topic_states=[LeaderAndIsrTopicState(
        partition_states=[LeaderAndIsrPartitionState(leader_recovery_state=1)])])
    with pytest.raises(UnsupportedVersionError) as info:
        obj.encode(5)
    assert str(info.value) == "Attempted to write a non-default leaderRecoveryState at version 5"
    obj.encode(6)


def _shared_message_dir() -> Any:
    import os
    from pathlib import Path

    root = os.environ.get("CTRLBATCH_SHARED")
    return (Path(root) if root else Path(__file__).resolve().parents[3] / "shared") / "kafka" / "message"


def test_update_metadata_type_is_not_ignorable_so_v7_refuses_it() -> None:
    spec = load_json_spec(_shared_message_dir() / "UpdateMetadataRequest.json")
    assert spec.field("Type").ignorable is False
    assert UpdateMetadataRequest.MESSAGE.field("Type").ignorable is False
    for version in range(0, 8):
        with pytest.raises(UnsupportedVersionError) as info:
            UpdateMetadataRequest(type=1).encode(version)
        assert str(info.value) == f"Attempted to write a non-default type at version {version}"
    assert UpdateMetadataRequest(type=1).encode(8).endswith(b"\x01\x00\x01\x01")


def test_non_default_is_kraft_controller_before_it_exists() -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        LeaderAndIsrRequest(is_k_raft_controller=True).encode(6)
    assert str(info.value) == "Attempted to write a non-default isKRaftController at version 6"


def test_ignorable_fields_are_silently_dropped() -> None:
    assert LeaderAndIsrRequest(broker_epoch=5).encode(1) == LeaderAndIsrRequest().encode(1)
    assert LeaderAndIsrRequest(broker_epoch=5).encode(2) != LeaderAndIsrRequest().encode(2)
    ps = LeaderAndIsrPartitionState(topic_name="dropped", is_new=True, adding_replicas=(1,))
    assert LeaderAndIsrRequest(ungrouped_partition_states=[ps]).encode(0) == LeaderAndIsrRequest(
        ungrouped_partition_states=[LeaderAndIsrPartitionState(topic_name="dropped")]).encode(0)
    topic = LeaderAndIsrTopicState(topic_name="t", partition_states=[ps])
    assert LeaderAndIsrRequest(topic_states=[topic]).encode(2) == LeaderAndIsrRequest(
        topic_states=[LeaderAndIsrTopicState(topic_name="t", partition_states=[
            LeaderAndIsrPartitionState(is_new=True)])]).encode(2)
    assert UpdateMetadataRequest(broker_epoch=9).encode(4) == UpdateMetadataRequest().encode(4)


@pytest.mark.parametrize("version", [0, 3])
def test_unknown_tagged_fields_at_a_non_flexible_version(version: int) -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        LeaderAndIsrRequest(unknown_tagged_fields=((7, b"x"),)).encode(version)
    assert str(info.value) == f"Tagged fields were set, but version {version} of this message does not support them."
    nested = LeaderAndIsrRequest(live_leaders=[LeaderAndIsrLiveLeader(unknown_tagged_fields=((7, b"x"),))])
    with pytest.raises(UnsupportedVersionError):
        nested.encode(version)
    assert nested.encode(4)


@pytest.mark.parametrize("version", [3, 4])
def test_string_too_long_to_serialize(version: int) -> None:
    ok = LeaderAndIsrRequest(live_leaders=[LeaderAndIsrLiveLeader(host_name="a" * 0x7FFF)])
    assert LeaderAndIsrRequest.decode(ok.encode(version), version) == ok
    for too_long in ("a" * 0x8000, "é" * 0x4000):
        bad = LeaderAndIsrRequest(live_leaders=[LeaderAndIsrLiveLeader(host_name=too_long)])
        with pytest.raises(EncodeError) as info:
            bad.encode(version)
        assert "'hostName' field is too long to be serialized" in str(info.value)
        assert "LeaderAndIsrRequest.LiveLeaders[0].HostName" in str(info.value)


def test_nullable_string_too_long_to_serialize() -> None:
    with pytest.raises(EncodeError) as info:
        BrokerRegistrationRequest(rack="r" * 0x8000).encode(0)
    assert "'rack' field is too long to be serialized" in str(info.value)
    with pytest.raises(EncodeError) as info:
        RequestHeader(client_id="c" * 0x8000).encode(2)
    assert "'clientId' field is too long to be serialized" in str(info.value)


def test_compact_string_of_127_bytes_or_more_uses_a_multi_byte_length() -> None:
    obj = LeaderAndIsrRequest(live_leaders=[LeaderAndIsrLiveLeader(host_name="h" * 200)])
    raw = obj.encode(4)
    assert b"\xc9\x01" + b"h" * 200 in raw  # uvarint 201
    assert LeaderAndIsrRequest.decode(raw, 4) == obj


@pytest.mark.parametrize(
    ("obj", "version", "path"),
    [
        (LeaderAndIsrResponse(error_code=40000), 4, "LeaderAndIsrResponse.ErrorCode"),
        (LeaderAndIsrResponse(error_code=-40000), 0, "LeaderAndIsrResponse.ErrorCode"),
        (LeaderAndIsrResponse(partition_errors=[LeaderAndIsrPartitionError(), LeaderAndIsrPartitionError(error_code=40000)]),
         2, "LeaderAndIsrResponse.PartitionErrors[1].ErrorCode"),
        (LeaderAndIsrRequest(live_leaders=[LeaderAndIsrLiveLeader(port=2**31)]), 4, "LeaderAndIsrRequest.LiveLeaders[0].Port"),
        (LeaderAndIsrRequest(broker_epoch=2**63), 2, "LeaderAndIsrRequest.BrokerEpoch"),
        (LeaderAndIsrRequest(type=128), 5, "LeaderAndIsrRequest.Type"),
        (BrokerRegistrationRequest(listeners=[Listener(port=-1)]), 0, "BrokerRegistrationRequest.Listeners[0].Port"),
        (BrokerRegistrationRequest(listeners=[Listener(port=65536)]), 4, "BrokerRegistrationRequest.Listeners[0].Port"),
        (UpdateMetadataRequest(type=200), 8, "UpdateMetadataRequest.Type"),
    ],
    ids=["int16-40000", "int16-neg", "nested-int16", "int32", "int64", "int8", "uint16-neg", "uint16-big", "tagged-int8"],
)
def test_out_of_range_int_names_the_field(obj: Any, version: int, path: str) -> None:
    with pytest.raises(EncodeError) as info:
        obj.encode(version)
    assert path in str(info.value)
    assert f"{obj.MESSAGE.name} v{version}" in str(info.value)


@pytest.mark.parametrize(
    ("obj", "version", "path"),
    [
        (LeaderAndIsrRequest(controller_id="1"), 4, "LeaderAndIsrRequest.ControllerId"),
        (LeaderAndIsrRequest(controller_id=1.5), 0, "LeaderAndIsrRequest.ControllerId"),
        (LeaderAndIsrRequest(live_leaders=[LeaderAndIsrLiveLeader(host_name=5)]), 3, "LeaderAndIsrRequest.LiveLeaders[0].HostName"),
        (LeaderAndIsrRequest(topic_states=[LeaderAndIsrTopicState(topic_id="not-a-uuid")]), 5, "LeaderAndIsrRequest.TopicStates[0].TopicId"),
        (StopReplicaResponse(partition_errors=[StopReplicaPartitionError(partition_index="x")]), 2, "StopReplicaResponse.PartitionErrors[0].PartitionIndex"),
        (LeaderAndIsrRequest(topic_states=[LeaderAndIsrTopicState(partition_states=[LeaderAndIsrPartitionState(isr=("a",))])]),
         4, "LeaderAndIsrRequest.TopicStates[0].PartitionStates[0].Isr"),
    ],
    ids=["str-for-int32", "float-for-int32", "int-for-string", "str-for-uuid", "str-for-int32-nested", "str-in-int-array"],
)
def test_wrong_type_names_the_field(obj: Any, version: int, path: str) -> None:
    with pytest.raises(EncodeError) as info:
        obj.encode(version)
    assert path in str(info.value)


def test_null_for_a_non_nullable_field_is_an_encode_error() -> None:
    with pytest.raises(EncodeError) as info:
        StopReplicaResponse(partition_errors=[StopReplicaPartitionError(topic_name=None)]).encode(0)
    assert "non-nullable field topicName was null" in str(info.value)
    with pytest.raises(EncodeError) as info:
        StopReplicaResponse(partition_errors=None).encode(3)
    assert "non-nullable field partitionErrors was null" in str(info.value)


# ---------------------------------------------------------------- the error types themselves


def test_error_hierarchy() -> None:
    assert issubclass(DecodeError, ValueError)
    assert issubclass(EncodeError, ValueError)
    assert not issubclass(UnsupportedVersionError, ValueError)


def test_decode_error_pickles_with_its_attributes() -> None:
    raw, start, width = isr_prefix(4)
    e = decode_error(LeaderAndIsrRequest, raw[:start] + b"\x00" + raw[start + width :], 4)
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is DecodeError
    assert (back.reason, back.message, back.version, back.field, back.offset) == (
        e.reason, e.message, e.version, e.field, e.offset)
    assert str(back) == str(e)
    bare = pickle.loads(pickle.dumps(DecodeError("just a reason")))
    assert (bare.reason, bare.message, bare.version, bare.field, bare.offset) == ("just a reason", "", None, "", None)
    assert str(bare) == "just a reason"


@pytest.mark.parametrize("data", [None, "ab", 3.5, object(), 2, 0], ids=["None", "str", "float", "object", "int-2", "int-0"])
def test_decode_refuses_non_bytes_input(data: Any) -> None:
    # BUG (int cases): bytes(2) is two zero bytes, so an int is silently read as that many zero
    # bytes, and Message.decode's len(data) then raises TypeError instead of DecodeError.
    with pytest.raises(DecodeError):
        UpdateMetadataResponse.decode(data, 0)
