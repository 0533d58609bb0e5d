from __future__ import annotations

import pickle

import pytest

from ctrlbatch.context import Broker, BrokerEndPointNotAvailableError, EndPoint, Node, SecurityProtocol


def test_security_protocol_ids_are_kafkas() -> None:
    assert [(p.name, int(p)) for p in SecurityProtocol] == [
        ("PLAINTEXT", 0),
        ("SSL", 1),
        ("SASL_PLAINTEXT", 2),
        ("SASL_SSL", 3),
    ]


@pytest.mark.parametrize("protocol", list(SecurityProtocol))
def test_default_listener_name_is_the_protocol_name(protocol: SecurityProtocol) -> None:
    assert protocol.default_listener_name == protocol.name


def test_endpoint_converts_protocol_id() -> None:
    endpoint = EndPoint("h", 1, "CLIENT", 1)  # type: ignore[arg-type]
    assert endpoint.security_protocol is SecurityProtocol.SSL


def test_endpoint_rejects_unknown_protocol_id() -> None:
    with pytest.raises(ValueError):
        EndPoint("h", 1, "X", 9)  # type: ignore[arg-type]


def test_endpoint_with_default_listener() -> None:
    endpoint = EndPoint.with_default_listener("h", 9093, SecurityProtocol.SASL_SSL)
    assert endpoint == EndPoint("h", 9093, "SASL_SSL", SecurityProtocol.SASL_SSL)


def two_listener_broker(rack: str | None = "r1") -> Broker:
    return Broker(
        7,
        [
            EndPoint("a.example", 9092, "PLAINTEXT", SecurityProtocol.PLAINTEXT),
            EndPoint("b.example", 9093, "REPLICATION", SecurityProtocol.SSL),
        ],
        rack,
    )


def test_broker_converts_endpoint_list_to_tuple_in_order() -> None:
    broker = two_listener_broker()
    assert isinstance(broker.endpoints, tuple)
    assert [e.listener_name for e in broker.endpoints] == ["PLAINTEXT", "REPLICATION"]


def test_broker_is_hashable_and_compares_every_field() -> None:
    assert hash(two_listener_broker()) == hash(two_listener_broker())
    assert {two_listener_broker(): 1}[two_listener_broker()] == 1
    assert two_listener_broker("r1") != two_listener_broker("r2")
    assert two_listener_broker(None).rack is None


def test_broker_rejects_duplicate_listener_names() -> None:
    endpoints = [
        EndPoint("a", 1, "PLAINTEXT", SecurityProtocol.PLAINTEXT),
        EndPoint("b", 2, "PLAINTEXT", SecurityProtocol.PLAINTEXT),
    ]
    with pytest.raises(ValueError, match="There is more than one end point with the same listener name"):
        Broker(1, endpoints)


def test_node_is_broker_on_listener() -> None:
    broker = two_listener_broker()
    assert broker.node("REPLICATION") == Node(7, "b.example", 9093, "r1")
    assert broker.get_node("PLAINTEXT") == Node(7, "a.example", 9092, "r1")
    assert broker.end_point("PLAINTEXT").port == 9092


def test_missing_listener_gives_none_from_getters() -> None:
    broker = two_listener_broker()
    assert broker.get_node("SSL") is None
    assert broker.get_end_point("SSL") is None


@pytest.mark.parametrize("lookup", ["node", "end_point"])
def test_missing_listener_raises_kafkas_message(lookup: str) -> None:
    broker = two_listener_broker()
    with pytest.raises(BrokerEndPointNotAvailableError) as raised:
        getattr(broker, lookup)("CONTROLLER")
    assert str(raised.value) == "End point with listener name CONTROLLER not found for broker 7"
    assert isinstance(raised.value, RuntimeError)


def test_broker_pickles() -> None:
    broker = two_listener_broker()
    assert pickle.loads(pickle.dumps(broker)) == broker
