"""Exceptions raised by the controller's view of the cluster.

Rules:
- Each class stands for one Kafka exception and keeps Kafka's name with ``Error`` for ``Exception``.
- They derive from ``RuntimeError`` because their Kafka counterparts are unchecked exceptions.
- The batch package reuses ``IllegalStateError``, so it lives here, below everything else.
"""

from __future__ import annotations

__all__ = ["BrokerEndPointNotAvailableError", "IllegalStateError"]


class IllegalStateError(RuntimeError):
    """Java's ``IllegalStateException``: an operation was called in a state that forbids it."""


class BrokerEndPointNotAvailableError(RuntimeError):
    """Kafka's ``BrokerEndPointNotAvailableException``: a broker has no endpoint for a listener."""
