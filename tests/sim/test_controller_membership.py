"""Membership: the controller's view is always the unfenced registrations it may connect to.

Random histories of registrations (loopback or not, PLAINTEXT or not, new incarnations or the
same), heartbeats, waits and expiry checks drive ControllerState and Membership; the
SimController's channel records what it is given (as ControllerChannelManagerTest captures the
batch's requests, kafka-controller-channel.md §8).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.context import Broker
from ctrlbatch.requests import BrokerHeartbeatRequest, BrokerRegistrationRequest, Feature, Listener
from ctrlbatch.sim.controller_logic import SimController
from ctrlbatch.sim.controller_state import ControllerConfig, ControllerState, Registration
from ctrlbatch.sim.membership import Membership, unreachable_reason


class RecordingChannel:
    def __init__(self) -> None:
        self.brokers: dict[int, Broker] = {}
        self.added: list[Broker] = []

    def send(self, broker_id: int, request: Any, callback: Any) -> None:
        assert broker_id in self.brokers, f"a request for broker {broker_id}, which is not in the channel"

    def add_broker(self, broker: Broker) -> None:
        self.brokers.setdefault(broker.id, broker)
        self.added.append(broker)

    def remove_broker(self, broker_id: int) -> None:
        del self.brokers[broker_id]


HOSTS = ["127.0.0.1", "127.8.9.10", "::1", "10.0.0.1", "localhost", "example.com", "a\nb", ""]
LISTENERS = [("PLAINTEXT", 0), ("PLAINTEXT", 1), ("SSL", 1), ("INTERNAL", 0)]


def registration(b: int, inc: int, host: str, listener: tuple[str, int]) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=b, cluster_id="c1", incarnation_id=uuid.UUID(int=inc + 1),
        listeners=[Listener(name=listener[0], host=host, port=9000 + b, security_protocol=listener[1])],
        features=[Feature(name="metadata.version", min_supported_version=1, max_supported_version=21)],
        log_dirs=[uuid.UUID(int=((b + 1) << 64) | 500)])


_OPS = st.one_of(
    st.tuples(st.just("register"), st.integers(0, 3), st.integers(0, 1), st.sampled_from(HOSTS), st.sampled_from(LISTENERS)),
    st.tuples(st.just("heartbeat"), st.integers(0, 3), st.booleans(), st.booleans()),
    st.tuples(st.just("wait"), st.integers(0, 300)),
    st.tuples(st.just("fence"),),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_OPS, max_size=40), st.booleans())
def test_the_view_is_the_unfenced_registrations_the_controller_may_connect_to(ops: list[tuple], allow_remote: bool) -> None:  # type: ignore[type-arg]
    channel = RecordingChannel()
    controller = SimController(channel)
    membership = Membership(controller, allow_remote=allow_remote, log=lambda kind, line: None)
    state = ControllerState(ControllerConfig(cluster_id="c1", session_timeout_ms=200, max_brokers=3))
    now = 0
    for op in ops:
        if op[0] == "register":
            _, b, inc, host, listener = op
            _, events = state.register(registration(b, inc, host, listener), now)
        elif op[0] == "heartbeat":
            _, b, fence, shut = op
            reg = state.registrations.get(b)
            _, events = state.heartbeat(BrokerHeartbeatRequest(
                broker_id=b, broker_epoch=reg.epoch if reg else 1, current_metadata_offset=10**6,
                want_fence=fence, want_shut_down=shut), now)
        elif op[0] == "wait":
            now += op[1]
            events = []
        else:
            events = state.fence_stale_brokers(now)
        membership.apply(state.registrations, events)
        want = {b for b, r in state.registrations.items()
                if not r.state.fenced and unreachable_reason(r, allow_remote) is None}
        assert controller.ctx.live_or_shutting_down_broker_ids == want
        assert set(channel.brokers) == want
    for broker in channel.added:
        endpoint = broker.end_point("PLAINTEXT")
        assert endpoint.security_protocol == 0
        if not allow_remote:
            assert endpoint.host in ("127.0.0.1", "127.8.9.10", "::1")


def reg_with(name: str, host: str, port: int = 9092, protocol: int = 0) -> Registration:
    return Registration(broker_id=1, epoch=1, incarnation_id=uuid.UUID(int=1), listeners=((name, host, port, protocol),),
                        rack=None, features={}, is_migrating_zk_broker=False, log_dirs=(), record_offset=1)


@pytest.mark.parametrize(("listener", "allow_remote", "reason"), [
    (("PLAINTEXT", "127.0.0.1"), False, None),
    (("PLAINTEXT", "::1"), False, None),
    (("PLAINTEXT", "localhost"), False, "'localhost' is not a loopback IP address"),
    (("PLAINTEXT", "localhost"), True, None),
    (("PLAINTEXT", "10.0.0.1"), False, "'10.0.0.1' is not a loopback address"),
    (("PLAINTEXT", "10.0.0.1"), True, None),
    (("PLAINTEXT", "kafka-1.example.com"), True, None),
    (("PLAINTEXT", "bad host\n"), True, "'bad host\\n' is neither an IP address nor a DNS name"),
    (("PLAINTEXT", ""), True, "'' is neither an IP address nor a DNS name"),
    (("SSL", "127.0.0.1"), False, "it has no PLAINTEXT listener"),
])
def test_unreachable_reason(listener: tuple[str, str], allow_remote: bool, reason: str | None) -> None:
    got = unreachable_reason(reg_with(*listener), allow_remote)
    assert got == reason or (reason is not None and got is not None and reason in got)


def test_a_port_zero_and_a_plaintext_listener_speaking_ssl_are_unreachable() -> None:
    assert "port 0" in str(unreachable_reason(reg_with("PLAINTEXT", "127.0.0.1", port=0)))
    assert "security protocol 1" in str(unreachable_reason(reg_with("PLAINTEXT", "127.0.0.1", protocol=1)))
