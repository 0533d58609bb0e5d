"""Every (message, version) round-trips: object -> bytes -> object, and bytes -> object -> bytes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.requests import messages as msgs
from ctrlbatch.testing import all_versions, messages, project

CLASSES = [getattr(msgs, n) for n in msgs.__all__]
CASES = all_versions(CLASSES)


def test_every_shipped_version_is_covered() -> None:
    counts = {c.__name__: c.MAX_VERSION - c.MIN_VERSION + 1 for c in CLASSES}
    assert counts["LeaderAndIsrRequest"] == 8
    assert counts["StopReplicaRequest"] == 5
    assert counts["UpdateMetadataRequest"] == 9
    assert counts["BrokerRegistrationRequest"] == 6
    assert counts["BrokerHeartbeatRequest"] == 3
    assert counts["RequestHeader"] == 3
    assert counts["ResponseHeader"] == 2
    assert len(CASES) == sum(counts.values())


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_roundtrip(cls, version, data) -> None:  # type: ignore[no-untyped-def]
    obj = data.draw(messages(cls, version))
    raw = obj.encode(version)
    back = cls.decode(raw, version)
    assert back == project(obj, version)
    assert back.encode(version) == raw
    assert cls.decode(bytearray(raw), version) == back
    assert cls.decode(memoryview(raw), version) == back
