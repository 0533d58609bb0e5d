"""The channel's settings, as keyword options with Kafka's defaults.

Rules: one frozen value checked once at construction; a bad option raises ValueError or
TypeError naming it. Defaults are Kafka 3.9's (kafka-controller-channel.md §2, §3):
controller.socket.timeout.ms 30000 bounds a connect, request.timeout.ms 30000 bounds a try,
the send thread pauses 100 ms between tries, the client id is the controller id as a string.
Only PLAINTEXT is spoken (no TLS or SASL here).
"""

from __future__ import annotations

from typing import Any

import attrs

from ctrlbatch.context import SecurityProtocol

__all__ = ["ChannelOptions"]


def _int_at_least(minimum: int) -> Any:
    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{attribute.name} must be an int, got {value!r}")
        if value < minimum:
            raise ValueError(f"{attribute.name} must be at least {minimum}, got {value}")

    return check


def _optional_int_at_least(minimum: int) -> Any:
    inner = _int_at_least(minimum)

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is not None:
            inner(instance, attribute, value)

    return check


def _protocol(value: Any) -> SecurityProtocol:
    """A SecurityProtocol from itself, its id or its name ("PLAINTEXT")."""
    if isinstance(value, str):
        try:
            return SecurityProtocol[value]
        except KeyError:
            raise ValueError(f"security_protocol: unknown protocol {value!r}") from None
    return SecurityProtocol(value)


def _plaintext(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not SecurityProtocol.PLAINTEXT:
        raise ValueError(f"{attribute.name}: only PLAINTEXT is supported, got {value.name}")


def _one(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value != 1 or isinstance(value, bool):
        raise ValueError(
            f"{attribute.name} must be 1, got {value!r}: Kafka's controller channel keeps one request in flight "
            "per broker (max.in.flight 1, CCM:152-169) and this port does not pipeline"
        )


def _optional_str(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be a str or None, got {value!r}")


def _str(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"{attribute.name} must be a non-empty str, got {value!r}")


@attrs.frozen(kw_only=True)
class ChannelOptions:
    """Keyword options of ControllerChannelManager and AsyncControllerChannel."""

    controller_id: int = attrs.field(default=0, validator=_int_at_least(0))
    # None: the controller id as a string, like Kafka's NetworkClient for the channel.
    client_id: str | None = attrs.field(default=None, validator=_optional_str)
    listener_name: str = attrs.field(default="PLAINTEXT", validator=_str)
    security_protocol: SecurityProtocol = attrs.field(
        default=SecurityProtocol.PLAINTEXT, converter=_protocol, validator=_plaintext
    )
    connect_timeout_ms: int = attrs.field(default=30000, validator=_int_at_least(1))
    request_timeout_ms: int = attrs.field(default=30000, validator=_int_at_least(1))
    backoff_ms: int = attrs.field(default=100, validator=_int_at_least(0))
    # Kafka's value, the only one accepted: it is what keeps the per-broker order across retries.
    max_in_flight: int = attrs.field(default=1, validator=_one)
    # None turns the periodic metrics log line off.
    metrics_log_interval_ms: int | None = attrs.field(default=60000, validator=_optional_int_at_least(1))
    # Kafka's threadNamePrefix: thread and task names become "<prefix>:Controller-...".
    thread_name_prefix: str | None = attrs.field(default=None, validator=_optional_str)

    @property
    def effective_client_id(self) -> str:
        return str(self.controller_id) if self.client_id is None else self.client_id

    def send_thread_name(self, broker_id: int) -> str:
        """Kafka's name for a broker's send thread (CCM:172-175); names our sender task."""
        name = f"Controller-{self.controller_id}-to-broker-{broker_id}-send-thread"
        return name if self.thread_name_prefix is None else f"{self.thread_name_prefix}:{name}"
