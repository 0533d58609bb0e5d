"""How registration events change the controller's cluster view (kafka-broker-registration.md §5).

Rules:
- A table from EventKind to a SimController step. A broker enters the view (onBrokerStartup:
  context, channel, UpdateMetadata) when it is first unfenced, that is once it has registered,
  heartbeated and caught up, not at its registration: a registration alone then costs the
  controller O(1) and a registration that never heartbeats never makes the controller connect
  anywhere. KRaft counts only unfenced brokers as usable; fenced and shutdown-now brokers leave
  the view (onBrokerFailure), as do forgotten ones; a new incarnation of a known id leaves it
  and comes back when unfenced ("bounced"); controlled-shutdown moves leadership away. A
  same-incarnation re-registration of an unfenced broker that is not in the view (say it now
  names a reachable listener) joins it.
- Outbound connections go to loopback addresses only, like the listening side (loopback.py):
  the PLAINTEXT listener's host must be an IP literal in 127.0.0.0/8 or ::1 ("localhost" and
  every other DNS name included would need a resolver). ``allow_remote`` also allows other IP
  addresses and well-formed DNS names. A broker whose registration fails this (or that has no
  PLAINTEXT listener speaking PLAINTEXT, which the channel needs) stays registered and answered
  but out of the view: the controller never connects to it. Each such registration is logged in
  one line, its host quoted (safe_log.quote).
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Callable, Iterable, Mapping

from ctrlbatch.context import Broker, EndPoint, SecurityProtocol

from .controller_logic import SimController
from .controller_state import BrokerEvent, EventKind, Registration
from .safe_log import RateLimiter, quote

__all__ = ["Membership", "apply_event", "broker_of", "unreachable_reason"]

_log = logging.getLogger("ctrlbatch.sim.controller")
_limiter = RateLimiter(burst=20, interval_s=10.0)
INTER_BROKER_LISTENER = "PLAINTEXT"
_HOSTNAME = re.compile(r"(?=.{1,253}\Z)(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?\Z")


def _warn(kind: str, line: str) -> None:
    admitted, suppressed = _limiter.admit(kind)
    if admitted:
        _log.warning("%s%s", line, f" [{suppressed} similar suppressed]" if suppressed else "")


def broker_of(reg: Registration) -> Broker:
    """The controller's Broker value for a registration: its listeners as endpoints, its rack."""
    return Broker(reg.broker_id, tuple(EndPoint(h, p, n, SecurityProtocol(sp)) for n, h, p, sp in reg.listeners), reg.rack)


def _host_problem(host: str, allow_remote: bool) -> str | None:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if allow_remote and _HOSTNAME.match(host):
            return None
        return "is not a loopback IP address" if not allow_remote else "is neither an IP address nor a DNS name"
    if address.is_loopback or allow_remote:
        return None
    return "is not a loopback address"


def unreachable_reason(reg: Registration, allow_remote: bool = False) -> str | None:
    """Why the controller will not connect to this broker, or None if it will."""
    for name, host, port, protocol in reg.listeners:
        if name != INTER_BROKER_LISTENER:
            continue
        if protocol != SecurityProtocol.PLAINTEXT:
            return f"its {name} listener speaks security protocol {protocol}, not PLAINTEXT"
        problem = _host_problem(host, allow_remote)
        if problem is not None:
            return f"its {name} listener's host {quote(host)} {problem}"
        if not 0 < port <= 65535:
            return f"its {name} listener's port {port} is not in 1..65535"
        return None
    return f"it has no {INTER_BROKER_LISTENER} listener"


class Membership:
    """Applies registration events to a SimController (see the module rules)."""

    def __init__(self, controller: SimController, *, allow_remote: bool = False,
                 log: Callable[[str, str], None] | None = None) -> None:
        self.controller = controller
        self.allow_remote = allow_remote
        self._log = log if log is not None else _warn

    def __repr__(self) -> str:
        return f"Membership({self.controller!r}, allow_remote={self.allow_remote})"

    def apply(self, registrations: Mapping[int, Registration], events: Iterable[BrokerEvent]) -> None:
        for e in events:
            STEPS[e.kind](self, registrations.get(e.broker_id), e)

    def _live(self, broker_id: int) -> bool:
        return broker_id in self.controller.ctx.live_or_shutting_down_broker_ids

    def _registered(self, reg: Registration | None, e: BrokerEvent) -> None:
        """JOINED, BOUNCED, UPDATED: say once if the controller will not connect to it."""
        if reg is None:
            return
        reason = unreachable_reason(reg, self.allow_remote)
        if reason is not None:
                self._log("unreachable", f"broker {reg.broker_id} (epoch {reg.epoch}) registered, but the controller "
                                     f"will not connect to it: {reason}")

    def _join_if_reachable(self, reg: Registration | None, e: BrokerEvent) -> None:
        if reg is None or self._live(e.broker_id) or unreachable_reason(reg, self.allow_remote) is not None:
            return
        self.controller.broker_joined(broker_of(reg), reg.epoch)

    def _joined(self, reg: Registration | None, e: BrokerEvent) -> None:
        self._registered(reg, e)

    def _bounced(self, reg: Registration | None, e: BrokerEvent) -> None:
        self.controller.broker_failed(e.broker_id)
        self._registered(reg, e)

    def _updated(self, reg: Registration | None, e: BrokerEvent) -> None:
        self._registered(reg, e)
        if reg is not None and not reg.state.fenced:
            self._join_if_reachable(reg, e)

    def _unfenced(self, reg: Registration | None, e: BrokerEvent) -> None:
        self._join_if_reachable(reg, e)

    def _failed(self, reg: Registration | None, e: BrokerEvent) -> None:
        self.controller.broker_failed(e.broker_id)

    def _forgotten(self, reg: Registration | None, e: BrokerEvent) -> None:
        self.controller.broker_failed(e.broker_id)

    def _controlled_shutdown(self, reg: Registration | None, e: BrokerEvent) -> None:
        if self._live(e.broker_id):
            self.controller.controlled_shutdown(e.broker_id)


STEPS: dict[EventKind, Callable[[Membership, Registration | None, BrokerEvent], None]] = {
    EventKind.JOINED: Membership._joined,
    EventKind.UPDATED: Membership._updated,
    EventKind.BOUNCED: Membership._bounced,
    EventKind.UNFENCED: Membership._unfenced,
    EventKind.FENCED: Membership._failed,
    EventKind.SHUTDOWN_NOW: Membership._failed,
    EventKind.FORGOTTEN: Membership._forgotten,
    EventKind.CONTROLLED_SHUTDOWN: Membership._controlled_shutdown,
}


def apply_event(ctl: SimController, reg: Registration, event: BrokerEvent) -> None:
    """One event, with loopback-only outbound connections."""
    Membership(ctl).apply({reg.broker_id: reg}, [event])
