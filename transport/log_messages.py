"""Kafka's log lines for the controller channel, so that a port's logs read like Kafka's.

Rules: each function returns one message text (CCM:86-99, 238-312); the caller picks the level.
A node prints like org.apache.kafka.common.Node ("host:port (id: N rack: null)"). A request prints
as its api name, version and the header fields of its builder; Kafka prints the whole builder,
which for 10,000 partitions is megabytes of log.
"""

from __future__ import annotations

from typing import Any

from ctrlbatch.context import Node
from ctrlbatch.requests import APIS

__all__ = [
    "api_name",
    "callback_failed",
    "connect_failed",
    "connected",
    "node_text",
    "not_sending",
    "request_text",
    "send_failed",
]


def api_name(api_key: int) -> str:
    a = APIS.get(api_key)
    return a.name if a is not None else f"api key {api_key}"


def _fields(request: Any) -> tuple[object, object, object]:
    builder = getattr(request, "builder", None)
    return (
        getattr(builder, "controller_id", "?"),
        getattr(builder, "controller_epoch", "?"),
        getattr(request, "broker_epoch", "?"),
    )


def node_text(node: Node) -> str:
    return f"{node.host}:{node.port} (id: {node.id} rack: {'null' if node.rack is None else node.rack})"


def request_text(request: Any) -> str:
    controller_id, controller_epoch, broker_epoch = _fields(request)
    return (
        f"(type={api_name(request.api_key)}Request, version={request.version}, controllerId={controller_id}, "
        f"controllerEpoch={controller_epoch}, brokerEpoch={broker_epoch})"
    )


def not_sending(request: Any, broker_id: int) -> str:
    """WARN for a request to a broker the channel does not know (it is dropped, no callback)."""
    controller_id, controller_epoch, broker_epoch = _fields(request)
    return (
        f"Not sending request {api_name(request.api_key)} with controllerId={controller_id}, "
        f"controllerEpoch={controller_epoch}, brokerEpoch={broker_epoch} to broker {broker_id}, "
        "since it is offline."
    )


def send_failed(controller_id: int, request: Any, node: Node, reason: str) -> str:
    """WARN for a failed try (it is retried after the back-off)."""
    epoch = _fields(request)[1]
    return (
        f"Controller {controller_id} epoch {epoch} fails to send request {request_text(request)} to broker "
        f"{node_text(node)}. Reconnecting to broker. ({reason})"
    )


def connect_failed(controller_id: int, node: Node, reason: str) -> str:
    return f"Controller {controller_id}'s connection to broker {node_text(node)} was unsuccessful ({reason})"


def connected(controller_id: int, node: Node) -> str:
    return f"Controller {controller_id} connected to {node_text(node)} for sending state change requests"


def callback_failed(controller_id: int, node: Node) -> str:
    """ERROR for the outer catch: an unexpected api key or a callback exception (request dropped)."""
    return f"Controller {controller_id} fails to send a request to broker {node_text(node)}"
