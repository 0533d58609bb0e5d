"""Kafka's ``SecurityProtocol`` enum.

Rules:
- The integer value is Kafka's protocol id, the number written on the wire in UpdateMetadata.
- The default listener name of a protocol is the protocol's own name (``ListenerName.forSecurityProtocol``).
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

    @property
    def default_listener_name(self) -> str:
        """The listener name Kafka assumes when none is configured: the protocol's name."""
        return self.name
