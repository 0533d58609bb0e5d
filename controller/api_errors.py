"""Error codes and ``ApiError``: what the controller's request callbacks answer with.

Rules:
- ``Errors`` holds Kafka's codes (clients/src/main/java/org/apache/kafka/common/protocol/
  Errors.java) for the ones the controller's callbacks use, and their default messages.
- ``ApiError(error, message)`` is Kafka's ApiError (requests/ApiError.java): a code and an
  optional message; ``message_or_default`` falls back to the code's default text.
- ``ApiError.from_exception`` is ``ApiError.fromThrowable``: an exception class the table knows
  maps to its code (ControllerMovedException -> NOT_CONTROLLER, ...), anything else is
  UNKNOWN_SERVER_ERROR; the exception's text is the message.
"""

from __future__ import annotations

import enum

import attrs

from .errors import BrokerNotAvailableException, ControllerMovedException, StaleBrokerEpochException

__all__ = ["API_ERROR_NONE", "ApiError", "Errors"]


class Errors(enum.IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    BROKER_NOT_AVAILABLE = 8
    STALE_CONTROLLER_EPOCH = 11
    INVALID_TOPIC_EXCEPTION = 17
    INVALID_REPLICA_ASSIGNMENT = 39
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    FENCED_LEADER_EPOCH = 74
    STALE_BROKER_EPOCH = 77
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    INVALID_UPDATE_VERSION = 95
    UNKNOWN_TOPIC_ID = 100
    INELIGIBLE_REPLICA = 107

    @property
    def default_message(self) -> str | None:
        return _MESSAGES.get(self)


_MESSAGES: dict[Errors, str] = {
    Errors.UNKNOWN_SERVER_ERROR: "The server experienced an unexpected error when processing the request.",
    Errors.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    Errors.BROKER_NOT_AVAILABLE: "The broker is not available.",
    Errors.STALE_CONTROLLER_EPOCH: "The controller moved to another broker.",
    Errors.INVALID_TOPIC_EXCEPTION: "The request attempted to perform an operation on an invalid topic.",
    Errors.INVALID_REPLICA_ASSIGNMENT: "Replica assignment is invalid.",
    Errors.NOT_CONTROLLER: "This is not the correct controller for this cluster.",
    Errors.KAFKA_STORAGE_ERROR: "Disk error when trying to access log file on the disk.",
    Errors.FENCED_LEADER_EPOCH: "The leader epoch in the request is older than the epoch on the broker.",
    Errors.STALE_BROKER_EPOCH: "Broker epoch has changed.",
    Errors.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
    Errors.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    Errors.NO_REASSIGNMENT_IN_PROGRESS: "No partition reassignment is in progress.",
    Errors.INVALID_UPDATE_VERSION: "The given update version was invalid.",
    Errors.UNKNOWN_TOPIC_ID: "This server does not host this topic ID.",
    Errors.INELIGIBLE_REPLICA: "The new ISR contains at least one ineligible replica.",
}

# Exception class -> code, for from_exception (Errors.forException by class).
_EXCEPTION_CODES: dict[type[BaseException], Errors] = {
    ControllerMovedException: Errors.NOT_CONTROLLER,
    StaleBrokerEpochException: Errors.STALE_BROKER_EPOCH,
    BrokerNotAvailableException: Errors.BROKER_NOT_AVAILABLE,
}


@attrs.frozen
class ApiError:
    """A code and an optional message (Kafka's ApiError)."""

    error: Errors = attrs.field(converter=Errors)
    message: str | None = None

    @property
    def message_or_default(self) -> str | None:
        return self.message if self.message is not None else self.error.default_message

    @property
    def is_success(self) -> bool:
        return self.error == Errors.NONE

    @classmethod
    def from_exception(cls, e: BaseException) -> ApiError:
        for klass in type(e).__mro__:
            code = _EXCEPTION_CODES.get(klass)
            if code is not None:
                return cls(code, str(e) or None)
        return cls(Errors.UNKNOWN_SERVER_ERROR, str(e) or None)


API_ERROR_NONE = ApiError(Errors.NONE)
