"""Brokers as the controller sees them: id, ordered endpoints, optional rack.

Rules:
- ``EndPoint`` is one listener of a broker: (host, port, listener name, security protocol); the
  protocol may be given as a member, its id or its name ("PLAINTEXT").
- ``Node`` is Kafka's ``org.apache.kafka.common.Node`` (id, host, port, rack): what a broker looks
  like on one listener, as used for LeaderAndIsr's live leaders.
- ``Broker`` keeps its endpoints in the given order (UpdateMetadata v1+ sends them in that order) and
  refuses two endpoints with the same listener name, as Kafka's ``Broker`` does.
- A lookup for a listener the broker lacks raises ``BrokerEndPointNotAvailableError`` with Kafka's text.
- All values are frozen and hashable, so a ``Broker`` can key the mapping given to ``set_live_brokers``.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from .errors import BrokerEndPointNotAvailableError
from .security_protocol import SecurityProtocol

__all__ = ["Broker", "EndPoint", "Node"]


def _to_protocol(value: SecurityProtocol | int | str) -> SecurityProtocol:
    return SecurityProtocol.of(value)


@attrs.frozen
class EndPoint:
    """One listener of a broker."""

    host: str
    port: int
    listener_name: str
    security_protocol: SecurityProtocol = attrs.field(converter=_to_protocol)

    @classmethod
    def with_default_listener(cls, host: str, port: int, security_protocol: SecurityProtocol | int | str) -> EndPoint:
        """An endpoint whose listener is named after its protocol, as in a default Kafka config."""
        protocol = SecurityProtocol.of(security_protocol)
        return cls(host, port, protocol.default_listener_name, protocol)


@attrs.frozen
class Node:
    """A broker reached through one listener."""

    id: int
    host: str
    port: int
    rack: str | None = None


def _to_endpoints(endpoints: Iterable[EndPoint]) -> tuple[EndPoint, ...]:
    return tuple(endpoints)


@attrs.frozen
class Broker:
    """A registered broker. Equality and hashing cover every field, as for Kafka's case class."""

    id: int
    endpoints: tuple[EndPoint, ...] = attrs.field(converter=_to_endpoints)
    rack: str | None = None

    def __attrs_post_init__(self) -> None:
        names = {endpoint.listener_name for endpoint in self.endpoints}
        if len(names) != len(self.endpoints):
            raise ValueError(
                "There is more than one end point with the same listener name: "
                + ",".join(map(str, self.endpoints))
            )

    def get_end_point(self, listener_name: str) -> EndPoint | None:
        """The endpoint for ``listener_name``, or ``None``. A linear scan: brokers have a handful."""
        for endpoint in self.endpoints:
            if endpoint.listener_name == listener_name:
                return endpoint
        return None

    def end_point(self, listener_name: str) -> EndPoint:
        """The endpoint for ``listener_name``; raises like Kafka's ``Broker.endPoint`` when absent."""
        endpoint = self.get_end_point(listener_name)
        if endpoint is None:
            raise BrokerEndPointNotAvailableError(
                f"End point with listener name {listener_name} not found for broker {self.id}"
            )
        return endpoint

    def get_node(self, listener_name: str) -> Node | None:
        """This broker as a ``Node`` on ``listener_name``, or ``None``."""
        endpoint = self.get_end_point(listener_name)
        if endpoint is None:
            return None
        return Node(self.id, endpoint.host, endpoint.port, self.rack)

    def node(self, listener_name: str) -> Node:
        """This broker as a ``Node`` on ``listener_name``; raises like Kafka's ``Broker.node`` when absent."""
        node = self.get_node(listener_name)
        if node is None:
            raise BrokerEndPointNotAvailableError(
                f"End point with listener name {listener_name} not found for broker {self.id}"
            )
        return node
