"""Kafka's ``SecurityProtocol`` enum.

Rules:
- The integer value is Kafka's protocol id, the number written on the wire in UpdateMetadata.
- The default listener name of a protocol is the protocol's own name (``ListenerName.forSecurityProtocol``).
- ``SecurityProtocol.of`` takes a member, its id or its name (as a Kafka config writes it) and
  names the valid values when given anything else.
"""

from __future__ import annotations

import enum

__all__ = ["SecurityProtocol"]


class SecurityProtocol(enum.IntEnum):
    """A listener's security protocol, valued by its Kafka id."""

    PLAINTEXT = 0
    SSL = 1
    SASL_PLAINTEXT = 2
    SASL_SSL = 3

    @classmethod
    def of(cls, value: SecurityProtocol | int | str) -> SecurityProtocol:
        """The protocol for a member, a Kafka id (0-3) or a name ("PLAINTEXT", "sasl_ssl")."""
        if isinstance(value, cls):
            return value
        try:
            if isinstance(value, str):
                return cls[value.upper()]
            if isinstance(value, int) and not isinstance(value, bool):
                return cls(value)
        except (KeyError, ValueError):
            pass
        valid = ", ".join(f"{p.name} ({p.value})" for p in cls)
        raise ValueError(f"{value!r} is not a security protocol; valid: {valid}")

    @property
    def default_listener_name(self) -> str:
        """The listener name Kafka assumes when none is configured: the protocol's name."""
        return self.name
