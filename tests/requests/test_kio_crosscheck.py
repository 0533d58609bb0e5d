"""Cross-check of the ctrlbatch codecs against kio 0.5.0, an independent Kafka codec (PyPI).

For every api key and version kio has (LeaderAndIsr v0-7, StopReplica v0-4, ApiVersions v0-4,
UpdateMetadata v0-8, BrokerRegistration v0-4, BrokerHeartbeat v0-1), requests and responses:

(a) our bytes decode in kio to the same values;
(b) kio's bytes for the same values are byte-identical to ours, decode in ctrlbatch to the same object,
    and re-encode identically.

Values are drawn with ctrlbatch.testing.messages and adjusted to what kio can represent (see the header
of tests/peers/kio_peer.py): no unknown tagged fields, error codes in -1..127. Zero UUIDs stay in (the
adapter maps them to kio's None). Two deterministic large messages check multi-byte compact lengths.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import uuid
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ctrlbatch.requests import (
    APIS,
    ApiVersion,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
    Struct,
    SupportedFeatureKey,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)
from ctrlbatch.requests.wire import uvarint
from ctrlbatch.testing import messages, project


def _load_kio_peer():  # type: ignore[no-untyped-def]
    if "kio_peer" not in sys.modules:
        path = pathlib.Path(__file__).resolve().parents[1] / "peers" / "kio_peer.py"
        spec = importlib.util.spec_from_file_location("kio_peer", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["kio_peer"] = module
        spec.loader.exec_module(module)
    return sys.modules["kio_peer"]


kio_peer = _load_kio_peer()

# What kio 0.5.0 has; pinned here so that a different kio cannot silently shrink the cross-check.
EXPECTED_KIO_VERSIONS = {4: range(0, 8), 5: range(0, 5), 6: range(0, 9), 18: range(0, 5), 62: range(0, 5), 63: range(0, 2)}

CASES = [
    (key, version, kind)
    for key in sorted(EXPECTED_KIO_VERSIONS)
    for version in EXPECTED_KIO_VERSIONS[key]
    for kind in ("request", "response")
]


def _case_id(case: tuple[int, int, str]) -> str:
    key, version, kind = case
    cls = getattr(APIS[key], kind)
    return f"{cls.__name__}-v{version}"


def _classes(key: int, version: int, kind: str) -> tuple[type, type]:
    ours = getattr(APIS[key], kind)
    theirs = (kio_peer.kio_request_class if kind == "request" else kio_peer.kio_response_class)(key, version)
    return ours, theirs


def kio_representable(obj: Any) -> Any:
    """obj without what kio cannot represent: unknown tagged fields (everywhere) are dropped and error
    codes outside kio's ErrorCode enum (-1..127) are folded into it. Recursive over nested structs."""
    changes: dict[str, Any] = {}
    for a in attrs.fields(type(obj)):
        value = getattr(obj, a.name)
        if a.name == "unknown_tagged_fields":
            changes[a.name] = ()
        elif isinstance(value, Struct):
            changes[a.name] = kio_representable(value)
        elif isinstance(value, tuple) and value and isinstance(value[0], Struct):
            changes[a.name] = tuple(kio_representable(v) for v in value)
        elif a.name == "error_code" and not -1 <= value <= 127:
            changes[a.name] = value % 129 - 1
    return attrs.evolve(obj, **changes)


def test_kio_versions_are_the_expected_ones() -> None:
    assert kio_peer.KIO_VERSIONS == EXPECTED_KIO_VERSIONS
    # every kio version is one we ship (we ship more: BrokerRegistration v5, BrokerHeartbeat v2)
    for key, versions in EXPECTED_KIO_VERSIONS.items():
        for kind in ("request", "response"):
            cls = getattr(APIS[key], kind)
            assert cls.MIN_VERSION == versions.start and cls.MAX_VERSION >= versions.stop - 1
    assert len(CASES) == 68


def test_kio_representable_strips_everything_nested() -> None:
    # LiveLeaders / TopicStates / PartitionStates: three levels of unknown tags, all gone
    obj = LeaderAndIsrRequest(
        topic_states=[
            LeaderAndIsrTopicState(
                partition_states=[LeaderAndIsrPartitionState(unknown_tagged_fields=((9, b"x"),))],
                unknown_tagged_fields=((8, b""),),
            )
        ],
        live_leaders=[LeaderAndIsrLiveLeader(unknown_tagged_fields=((7, b"y"),))],
        unknown_tagged_fields=((6, b"z"),),
    )
    clean = kio_representable(obj)
    assert "unknown_tagged_fields" not in repr(clean.to_dict())
    assert clean == LeaderAndIsrRequest(
        topic_states=[LeaderAndIsrTopicState(partition_states=[LeaderAndIsrPartitionState()])],
        live_leaders=[LeaderAndIsrLiveLeader()],
    )


def _crosscheck(cls: type, kcls: type, obj: Any, version: int) -> None:
    expected_obj = project(obj, version)
    expected = expected_obj.to_dict(version)
    assert "unknown_tagged_fields" not in repr(expected)
    ours = obj.encode(version)

    # (a) our bytes, read by kio
    try:
        theirs_view = kio_peer.from_kio(kio_peer.kio_decode(kcls, ours))
    except kio_peer.KioUnsupported:
        assume(False)
    assert theirs_view == expected

    # (b) kio's bytes for the same values: identical to ours, and read back by us exactly
    try:
        kio_bytes = kio_peer.kio_encode(kio_peer.to_kio(kcls, expected))
    except kio_peer.KioUnsupported:
        assume(False)
    assert kio_bytes.hex() == ours.hex()
    back = cls.decode(kio_bytes, version)
    assert back == expected_obj
    assert back.encode(version) == kio_bytes


@pytest.mark.parametrize(("key", "version", "kind"), CASES, ids=[_case_id(c) for c in CASES])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_crosscheck_with_kio(key: int, version: int, kind: str, data: st.DataObject) -> None:
    cls, kcls = _classes(key, version, kind)
    obj = data.draw(messages(cls, version).map(kio_representable), label="obj")
    _crosscheck(cls, kcls, obj, version)


@pytest.mark.parametrize(("key", "version", "kind"), CASES, ids=[_case_id(c) for c in CASES])
def test_crosscheck_defaults_with_kio(key: int, version: int, kind: str) -> None:
    """The all-defaults object (empty arrays, BrokerEpoch -1, IsFenced true...) in both codecs."""
    cls, kcls = _classes(key, version, kind)
    _crosscheck(cls, kcls, cls(), version)


# --- Large, deterministic messages: compact lengths that take 2 varint bytes, long strings.

_LONG = "long-topic-name-" + "\u00e9" * 60 + "-" + "x" * 60  # 16 + 120 + 1 + 60 = 197 UTF-8 bytes


def _replicas(p: int, n: int) -> tuple[int, ...]:
    return tuple(1000 + (p * 7 + i) % 997 for i in range(n))


def _umr_v8() -> UpdateMetadataRequest:
    topics = []
    for t in range(3):
        parts = []
        for p in range(100):
            replicas = _replicas(t * 100 + p, 130 + p % 5)
            parts.append(
                UpdateMetadataPartitionState(
                    partition_index=p,
                    controller_epoch=7,
                    leader=replicas[0],
                    leader_epoch=p * 3 - 1,
                    isr=replicas[: 128 + p % 4],
                    zk_version=-p,
                    replicas=replicas,
                    offline_replicas=replicas[-(p % 3) :] if p % 3 else (),
                )
            )
        topics.append(
            UpdateMetadataTopicState(
                topic_name=f"{_LONG}-{t}",
                topic_id=uuid.UUID(int=(t + 1) * 0x0123456789ABCDEF0123456789ABCDEF % (1 << 128)),
                partition_states=parts,
            )
        )
    brokers = [
        UpdateMetadataBroker(
            id=1000 + b,
            endpoints=[
                UpdateMetadataEndpoint(
                    port=9092 + e,
                    host=f"broker-{b}." + "h" * 140,
                    listener="L" * 130 + str(e),
                    security_protocol=e,
                )
                for e in range(2)
            ],
            rack=None if b % 2 else "rack-" + "r" * 200,
        )
        for b in range(5)
    ]
    return UpdateMetadataRequest(
        controller_id=3000,
        is_k_raft_controller=True,
        type=2,
        controller_epoch=7,
        broker_epoch=1 << 40,
        topic_states=topics,
        live_brokers=brokers,
    )


def _lair_v7() -> LeaderAndIsrRequest:
    topics = []
    for t in range(3):
        parts = []
        for p in range(100):
            replicas = _replicas(t * 100 + p + 1, 130 + p % 7)
            parts.append(
                LeaderAndIsrPartitionState(
                    partition_index=p,
                    controller_epoch=7,
                    leader=replicas[0],
                    leader_epoch=p,
                    isr=replicas[:129],
                    partition_epoch=p * 11,
                    replicas=replicas,
                    adding_replicas=replicas[:130] if p % 2 else (),
                    removing_replicas=replicas[-3:] if p % 3 == 0 else (),
                    is_new=p % 4 == 0,
                    leader_recovery_state=p % 2,
                )
            )
        topics.append(
            LeaderAndIsrTopicState(
                topic_name=f"{_LONG}-{t}",
                topic_id=uuid.UUID(int=(t + 7) * 0xFEDCBA9876543210FEDCBA9876543210 % (1 << 128)),
                partition_states=parts,
            )
        )
    leaders = [
        LeaderAndIsrLiveLeader(broker_id=1000 + b, host_name="leader-" + "z" * 150, port=9092)
        for b in range(4)
    ]
    return LeaderAndIsrRequest(
        controller_id=3000,
        is_k_raft_controller=False,
        controller_epoch=7,
        broker_epoch=-1,
        type=1,
        topic_states=topics,
        live_leaders=leaders,
    )


@pytest.mark.parametrize(
    ("make", "key", "version", "topic_states_at"),
    [
        # UMR v8: ControllerId 4, isKRaftController 1, ControllerEpoch 4, BrokerEpoch 8 -> TopicStates at 17
        (_umr_v8, 6, 8, 17),
        # LAIR v7: ControllerId 4, isKRaftController 1, ControllerEpoch 4, BrokerEpoch 8, Type 1 -> at 18
        (_lair_v7, 4, 7, 18),
    ],
    ids=["UpdateMetadataRequest-v8-large", "LeaderAndIsrRequest-v7-large"],
)
def test_large_message_byte_for_byte(make, key: int, version: int, topic_states_at: int) -> None:  # type: ignore[no-untyped-def]
    obj = make()
    cls, kcls = _classes(key, version, "request")
    ours = obj.encode(version)

    # the first topic's compact name length really is a 2-byte varint (and so are the replica arrays)
    name = obj.topic_states[0].topic_name.encode()
    assert len(name) + 1 > 127 and len(obj.topic_states[0].partition_states[0].replicas) >= 130
    assert ours[topic_states_at] == len(obj.topic_states) + 1
    assert ours[topic_states_at + 1 : topic_states_at + 3] == uvarint(len(name) + 1)
    assert ours[topic_states_at + 1] & 0x80 and len(uvarint(len(name) + 1)) == 2
    assert ours[topic_states_at + 3 : topic_states_at + 3 + len(name)] == name

    d = obj.to_dict(version)
    kio_bytes = kio_peer.kio_encode(kio_peer.to_kio(kcls, d))
    assert len(kio_bytes) == len(ours)
    if kio_bytes != ours:  # report the first difference, not a 500 kB diff
        i = next(i for i, (a, b) in enumerate(zip(kio_bytes, ours, strict=True)) if a != b)
        raise AssertionError(
            f"first difference at byte {i}: kio {kio_bytes[i : i + 16].hex()} ours {ours[i : i + 16].hex()}"
        )
    assert kio_peer.from_kio(kio_peer.kio_decode(kcls, ours)) == d
    back = cls.decode(kio_bytes, version)
    assert back == obj
    assert back.encode(version) == kio_bytes


# --- ApiVersions (catalog from specgen.PAST_SHARED): every tagged field set, and the v0 fallback.


def _api_versions_full() -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=0,
        api_keys=[ApiVersion(api_key=k, min_version=0, max_version=k % 9) for k in range(70)],
        throttle_time_ms=250,
        supported_features=[SupportedFeatureKey(name="metadata.version", min_version=0, max_version=21),
                            SupportedFeatureKey(name="kraft.version", min_version=0, max_version=1)],
        finalized_features_epoch=1 << 40,
        finalized_features=[FinalizedFeatureKey(name="metadata.version", max_version_level=21, min_version_level=1)],
        zk_migration_ready=True,
    )


@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_response_with_every_tagged_field_in_both_codecs(version: int) -> None:
    obj = _api_versions_full()
    data = obj.encode(version)
    # four tagged fields after ThrottleTimeMs, in tag order 0..3
    assert data.endswith(b"\x03\x01\x01")  # tag 3 (ZkMigrationReady), size 1, true: the last bytes
    _crosscheck(ApiVersionsResponse, kio_peer.kio_response_class(18, version), obj, version)
    assert ApiVersionsResponse.decode(data, version).to_dict(version)["finalized_features_epoch"] == 1 << 40


def test_api_versions_v0_fallback_answer_in_both_codecs() -> None:
    """Kafka's answer to an ApiVersions version it does not know: v0, UNSUPPORTED_VERSION (35),
    only ApiVersions' own range (RequestContext.java:153-162, ApiVersionsRequest.java:112-129)."""
    obj = ApiVersionsResponse(error_code=35, api_keys=[ApiVersion(api_key=18, min_version=0, max_version=4)])
    assert obj.encode(0) == bytes.fromhex("0023" "00000001" "0012" "0000" "0004")
    _crosscheck(ApiVersionsResponse, kio_peer.kio_response_class(18, 0), obj, 0)
