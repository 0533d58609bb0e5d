"""Exceptions of Kafka's ZooKeeper-mode controller, with Kafka's names.

Rules:
- One class per Kafka exception the controller raises or logs, Kafka's name kept (Java's
  ``...Exception`` suffix, as in the reference, so a log line reads like Kafka's):
  StateChangeFailedException (core/src/main/scala/kafka/common/StateChangeFailedException.scala),
  ControllerMovedException (clients/.../errors/ControllerMovedException.java; raised by a fenced
  write whose /controller_epoch check fails, KZC:2337-2350), StaleBrokerEpochException and
  BrokerNotAvailableException (KC:1355-1410), ZooKeeperClientException (kafka.zookeeper).
- ``KeeperException`` carries the ZooKeeper result ``code`` (a ``Code``) and the ``path``; its
  message is ZooKeeper's "KeeperErrorCode = <name>[ for <path>]" (KeeperException.getMessage).
  ``KeeperException.create(code, path)`` is ZooKeeper's factory; the subclasses Kafka matches
  on (NoNodeException, NodeExistsException, BadVersionException) are real subclasses.
- IllegalStateException is ``ctrlbatch.context.IllegalStateError`` (the batch raises it already);
  IllegalArgumentException is Python's ``ValueError``.
- All derive from ``RuntimeError`` (Kafka's are unchecked), except KeeperException (checked in
  Java, an ``Exception`` here).
"""

from __future__ import annotations

import enum

from ctrlbatch.context import IllegalStateError

__all__ = [
    "BadVersionException",
    "BrokerNotAvailableException",
    "Code",
    "ControllerMovedException",
    "IllegalStateError",
    "KeeperException",
    "NoNodeException",
    "NodeExistsException",
    "StaleBrokerEpochException",
    "StateChangeFailedException",
    "ZooKeeperClientException",
]


class Code(enum.IntEnum):
    """ZooKeeper's KeeperException.Code, with ZooKeeper's numeric values."""

    OK = 0
    SYSTEMERROR = -1
    RUNTIMEINCONSISTENCY = -2
    DATAINCONSISTENCY = -3
    CONNECTIONLOSS = -4
    MARSHALLINGERROR = -5
    UNIMPLEMENTED = -6
    OPERATIONTIMEOUT = -7
    BADARGUMENTS = -8
    UNKNOWNSESSION = -12
    NEWCONFIGNOQUORUM = -13
    RECONFIGINPROGRESS = -14
    APIERROR = -100
    NONODE = -101
    NOAUTH = -102
    BADVERSION = -103
    NOCHILDRENFOREPHEMERALS = -108
    NODEEXISTS = -110
    NOTEMPTY = -111
    SESSIONEXPIRED = -112
    INVALIDCALLBACK = -113
    INVALIDACL = -114
    AUTHFAILED = -115
    SESSIONMOVED = -118
    NOTREADONLY = -119
    EPHEMERALONLOCALSESSION = -120
    NOWATCHER = -121
    REQUESTTIMEOUT = -122
    RECONFIGDISABLED = -123
    SESSIONCLOSEDREQUIRESASLAUTH = -124
    QUOTAEXCEEDED = -125
    THROTTLEDOP = -127


# KeeperException.getCodeMessage (ZooKeeper 3.8): the text after "KeeperErrorCode = ".
_CODE_MESSAGES: dict[Code, str] = {
    Code.OK: "ok",
    Code.SYSTEMERROR: "SystemError",
    Code.RUNTIMEINCONSISTENCY: "RuntimeInconsistency",
    Code.DATAINCONSISTENCY: "DataInconsistency",
    Code.CONNECTIONLOSS: "ConnectionLoss",
    Code.MARSHALLINGERROR: "MarshallingError",
    Code.UNIMPLEMENTED: "Unimplemented",
    Code.OPERATIONTIMEOUT: "OperationTimeout",
    Code.BADARGUMENTS: "BadArguments",
    Code.UNKNOWNSESSION: "Unknown session",
    Code.NEWCONFIGNOQUORUM: "New config has no quorum",
    Code.RECONFIGINPROGRESS: "Another reconfiguration is in progress",
    Code.APIERROR: "APIError",
    Code.NONODE: "NoNode",
    Code.NOAUTH: "NoAuth",
    Code.BADVERSION: "BadVersion",
    Code.NOCHILDRENFOREPHEMERALS: "NoChildrenForEphemerals",
    Code.NODEEXISTS: "NodeExists",
    Code.NOTEMPTY: "Directory not empty",
    Code.SESSIONEXPIRED: "Session expired",
    Code.INVALIDCALLBACK: "Invalid callback",
    Code.INVALIDACL: "InvalidACL",
    Code.AUTHFAILED: "AuthFailed",
    Code.SESSIONMOVED: "Session moved",
    Code.NOTREADONLY: "Not a read-only call",
    Code.EPHEMERALONLOCALSESSION: "Ephemeral node on local session",
    Code.NOWATCHER: "No such watcher",
    Code.REQUESTTIMEOUT: "Request timeout",
    Code.RECONFIGDISABLED: "Reconfig is disabled",
    Code.SESSIONCLOSEDREQUIRESASLAUTH: "Session closed because client failed to authenticate",
    Code.QUOTAEXCEEDED: "Quota has exceeded",
    Code.THROTTLEDOP: "Op throttled due to high load",
}


class StateChangeFailedException(RuntimeError):
    """A partition or replica state change could not be made (logged, or returned as a Left)."""


class ControllerMovedException(RuntimeError):
    """Another controller took over: a fenced write found /controller_epoch at another version."""


class StaleBrokerEpochException(RuntimeError):
    """A request carried a broker epoch older than the registered one."""


class BrokerNotAvailableException(RuntimeError):
    """The broker is not registered (not live or shutting down)."""


class ZooKeeperClientException(RuntimeError):
    """The ZooKeeper client failed (not connected, closed, timed out...)."""


class KeeperException(Exception):
    """A ZooKeeper operation's error result; ``code`` says which."""

    code: Code = Code.SYSTEMERROR

    def __init__(self, code: Code | int | None = None, path: str | None = None) -> None:
        if code is not None:
            self.code = Code(code)
        self.path = path
        text = f"KeeperErrorCode = {_CODE_MESSAGES[self.code]}"
        super().__init__(text if path is None else f"{text} for {path}")

    @staticmethod
    def create(code: Code | int, path: str | None = None) -> KeeperException:
        """ZooKeeper's KeeperException.create: the subclass for ``code`` where one exists."""
        code = Code(code)
        if code is Code.OK:
            raise ValueError("Invalid exception code: KeeperException.create needs an error code, not OK")
        cls = _SUBCLASSES.get(code)
        return KeeperException(code, path) if cls is None else cls(code, path)

    def __reduce__(self) -> tuple[type[KeeperException], tuple[Code, str | None]]:
        return (type(self), (self.code, self.path))


class NoNodeException(KeeperException):
    code = Code.NONODE


class NodeExistsException(KeeperException):
    code = Code.NODEEXISTS


class BadVersionException(KeeperException):
    code = Code.BADVERSION


_SUBCLASSES: dict[Code, type[KeeperException]] = {
    Code.NONODE: NoNodeException,
    Code.NODEEXISTS: NodeExistsException,
    Code.BADVERSION: BadVersionException,
}
