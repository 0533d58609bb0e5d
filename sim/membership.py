"""How registration events change the controller's cluster view (kafka-broker-registration.md §5).

Rules: a table from EventKind to a SimController step. A new broker id (or one unfenced again
after it was fenced and removed) joins; a new incarnation of a known id is a failure then a
startup ("bounced"); fenced and shutdown-now are failures; controlled-shutdown moves leadership
away. A same-incarnation re-registration changes nothing here.
"""

from __future__ import annotations

from collections.abc import Callable

from ctrlbatch.context import Broker, EndPoint, SecurityProtocol

from .controller_logic import SimController
from .controller_state import BrokerEvent, EventKind, Registration

__all__ = ["apply_event", "broker_of"]


def broker_of(reg: Registration) -> Broker:
    """The controller's Broker value for a registration: its listeners as endpoints, its rack."""
    return Broker(reg.broker_id, tuple(EndPoint(h, p, n, SecurityProtocol(sp)) for n, h, p, sp in reg.listeners), reg.rack)


def _join(ctl: SimController, reg: Registration, e: BrokerEvent) -> None:
    ctl.broker_joined(broker_of(reg), e.epoch)


def _unfenced(ctl: SimController, reg: Registration, e: BrokerEvent) -> None:
    if e.broker_id not in ctl.ctx.live_or_shutting_down_broker_ids:
        ctl.broker_joined(broker_of(reg), e.epoch)


def _bounce(ctl: SimController, reg: Registration, e: BrokerEvent) -> None:
    ctl.broker_failed(e.broker_id)
    ctl.broker_joined(broker_of(reg), e.epoch)


def _fail(ctl: SimController, reg: Registration, e: BrokerEvent) -> None:
    ctl.broker_failed(e.broker_id)


def _controlled_shutdown(ctl: SimController, reg: Registration, e: BrokerEvent) -> None:
    ctl.controlled_shutdown(e.broker_id)


def _nothing(ctl: SimController, reg: Registration, e: BrokerEvent) -> None:
    pass


STEPS: dict[EventKind, Callable[[SimController, Registration, BrokerEvent], None]] = {
    EventKind.JOINED: _join,
    EventKind.UNFENCED: _unfenced,
    EventKind.BOUNCED: _bounce,
    EventKind.FENCED: _fail,
    EventKind.SHUTDOWN_NOW: _fail,
    EventKind.CONTROLLED_SHUTDOWN: _controlled_shutdown,
    EventKind.UPDATED: _nothing,
}


def apply_event(ctl: SimController, reg: Registration, event: BrokerEvent) -> None:
    STEPS[event.kind](ctl, reg, event)
