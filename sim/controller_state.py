"""A KRaft controller's BrokerRegistration and BrokerHeartbeat handling (Kafka 3.9), sans I/O.

Rules (kafka-broker-registration.md, cited §):
- ``register(request, now_ms)`` and ``heartbeat(request, now_ms)`` return (response, events); the
  clock is a parameter, nothing here does I/O or reads time.
- Registration checks in Kafka's order (§3.2): authorization 31, cluster id 104, duplicate live
  incarnation 101, migrating broker not allowed 102, non-migrating broker in pre-migration 102,
  migrating broker without the inter-broker listener 119, log dirs (metadata.version >= 3.7-IV2) 119,
  unknown security protocol -1, features 35. An error response carries epoch -1. A -1 makes the
  controller renounce and be elected again (``renounce``): its heartbeat soft state restarts.
- A metadata log is modelled by ``next_offset``: every record (registration, fence, unfence,
  controlled shutdown) takes the next offset; a new incarnation's epoch is its record's offset.
  The same incarnation keeps its epoch and flags but its record offset moves on (§3.3).
- Heartbeats: unknown broker or an epoch that is not exactly the registered one 77; then the
  state table of §4 (FENCED, UNFENCED, CONTROLLED_SHUTDOWN, SHUTDOWN_NOW); a state change writes
  one record. A heartbeat that waited in the event queue past half the heartbeat interval gets 7
  (REQUEST_TIMED_OUT) and only refreshes the broker's contact. ``fence_stale_brokers(now_ms)``
  fences unfenced brokers whose session expired, oldest contact first (§4.1).
- Events (BrokerEvent) tell the caller what changed in the cluster view (§5's mapping).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable

import attrs

from ctrlbatch.context import MetadataVersion
from ctrlbatch.requests import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)

from .errors import Errors

__all__ = ["BrokerEvent", "ControlState", "ControllerConfig", "ControllerState", "EventKind", "Registration"]

METADATA_VERSION = "metadata.version"
KNOWN_SECURITY_PROTOCOLS = frozenset({0, 1, 2, 3})


class ControlState(enum.Enum):
    """BrokerControlState (BCS:21-49)."""

    FENCED = "FENCED"
    UNFENCED = "UNFENCED"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    SHUTDOWN_NOW = "SHUTDOWN_NOW"

    @property
    def fenced(self) -> bool:
        return self in (ControlState.FENCED, ControlState.SHUTDOWN_NOW)


class EventKind(enum.Enum):
    JOINED = "joined"
    """A new broker id registered."""
    BOUNCED = "bounced"
    """A registered id came back with a new incarnation (and epoch)."""
    UPDATED = "updated"
    """The same incarnation registered again (listeners or rack may differ)."""
    FENCED = "fenced"
    UNFENCED = "unfenced"
    CONTROLLED_SHUTDOWN = "controlled-shutdown"
    SHUTDOWN_NOW = "shutdown-now"


@attrs.frozen
class BrokerEvent:
    kind: EventKind
    broker_id: int
    epoch: int


@attrs.frozen
class ControllerConfig:
    cluster_id: str
    metadata_version: MetadataVersion = MetadataVersion.IBP_3_9_IV0
    migration_enabled: bool = False
    """zookeeper.metadata.migration.enable"""
    pre_migration: bool = False
    """The cluster is in PRE_MIGRATION state (only migrating ZooKeeper brokers may register)."""
    session_timeout_ms: int = 9000
    heartbeat_interval_ms: int = 2000
    """broker.heartbeat.interval.ms: half of it is a heartbeat's deadline in the event queue (CApis:605-606)."""
    inter_broker_listener_name: str = "PLAINTEXT"
    finalized_features: tuple[tuple[str, int], ...] = ()
    """Finalized levels besides metadata.version (kraft.version is 0 in a static 3.9 quorum)."""

    def __attrs_post_init__(self) -> None:
        if not self.cluster_id:
            raise ValueError("cluster_id must not be empty")
        if self.session_timeout_ms <= 0:
            raise ValueError(f"session_timeout_ms must be > 0, got {self.session_timeout_ms}")
        if self.heartbeat_interval_ms <= 0:
            raise ValueError(f"heartbeat_interval_ms must be > 0, got {self.heartbeat_interval_ms}")

    def finalized(self) -> dict[str, int]:
        levels = dict(self.finalized_features)
        levels[METADATA_VERSION] = self.metadata_version.feature_level
        return levels


@attrs.define
class Registration:
    """A BrokerRegistration plus the heartbeat manager's soft state for it."""

    broker_id: int
    epoch: int
    incarnation_id: uuid.UUID
    listeners: tuple[tuple[str, str, int, int], ...]
    """(name, host, port, security protocol), keyed by name (duplicates collapse)."""
    rack: str | None
    features: dict[str, tuple[int, int]]
    is_migrating_zk_broker: bool
    log_dirs: tuple[uuid.UUID, ...]
    record_offset: int
    state: ControlState = ControlState.FENCED
    last_contact_ms: int = 0
    metadata_offset: int = -1
    controlled_shutdown_offset: int = -1

    def session_valid(self, now_ms: int, timeout_ms: int) -> bool:
        """BHM:350-356: unfenced and in contact within the session time-out."""
        return not self.state.fenced and self.last_contact_ms + timeout_ms >= now_ms


def _reserved_dir(d: uuid.UUID) -> bool:
    """DirectoryId reserved ids: most significant 64 bits 0 and least significant < 100."""
    return d.int >> 64 == 0 and (d.int & ((1 << 64) - 1)) < 100


class ControllerState:
    """Registrations, epochs and fencing of one active controller."""

    def __init__(self, config: ControllerConfig, *, leads_partitions: Callable[[int], bool] | None = None) -> None:
        self.config = config
        self.registrations: dict[int, Registration] = {}
        self.next_offset = 1
        """The offset the next metadata record gets (the broker epoch of a new incarnation)."""
        self.leads_partitions = leads_partitions if leads_partitions is not None else (lambda _b: False)
        self.deny_cluster_action = False
        self.active = True
        self.leader_epoch = 1
        """The raft leader epoch: one more each time the controller renounces and is elected again."""

    def __repr__(self) -> str:
        return f"ControllerState({self.config.cluster_id!r}, {len(self.registrations)} brokers, next offset {self.next_offset})"

    def _append(self) -> int:
        offset = self.next_offset
        self.next_offset += 1
        return offset

    @property
    def high_watermark(self) -> int:
        """The offset of the last record written (committed at once here)."""
        return self.next_offset - 1

    # ------------------------------------------------------------------ registration

    def _check_registration(self, req: BrokerRegistrationRequest, now_ms: int) -> int:
        cfg = self.config
        if req.cluster_id != cfg.cluster_id:
            return Errors.INCONSISTENT_CLUSTER_ID
        existing = self.registrations.get(req.broker_id)
        if (existing is not None and existing.session_valid(now_ms, cfg.session_timeout_ms)
                and existing.incarnation_id != req.incarnation_id):
            return Errors.DUPLICATE_BROKER_REGISTRATION
        zk_allowed = cfg.migration_enabled and cfg.metadata_version.is_at_least(MetadataVersion.IBP_3_4_IV0)
        if req.is_migrating_zk_broker and not zk_allowed:
            return Errors.BROKER_ID_NOT_REGISTERED
        if not req.is_migrating_zk_broker and cfg.pre_migration:
            return Errors.BROKER_ID_NOT_REGISTERED
        if req.is_migrating_zk_broker and all(lst.name != cfg.inter_broker_listener_name for lst in req.listeners):
            return Errors.INVALID_REGISTRATION
        if cfg.metadata_version.is_at_least(MetadataVersion.IBP_3_7_IV2) and self._bad_log_dirs(req):
            return Errors.INVALID_REGISTRATION
        if any(lst.security_protocol not in KNOWN_SECURITY_PROTOCOLS for lst in req.listeners):
            return Errors.UNKNOWN_SERVER_ERROR
        if not self._features_supported(req):
            return Errors.UNSUPPORTED_VERSION
        return Errors.NONE

    def _bad_log_dirs(self, req: BrokerRegistrationRequest) -> bool:
        dirs = req.log_dirs
        if not dirs or any(_reserved_dir(d) for d in dirs) or len(set(dirs)) != len(dirs):
            return True
        owned = {d for r in self.registrations.values() if r.broker_id != req.broker_id for d in r.log_dirs}
        return any(d in owned for d in dirs)

    def _features_supported(self, req: BrokerRegistrationRequest) -> bool:
        """ClusterCM:429-456: every finalized level inside the broker's range ([0, 0] when unlisted;
        metadata.version unlisted means [1, 1], MINIMUM_KRAFT_VERSION)."""
        listed = {f.name: (f.min_supported_version, f.max_supported_version) for f in req.features}
        finalized = self.config.finalized()
        for name, (lo, hi) in listed.items():
            level = finalized.get(name, 0)
            if not lo <= level <= hi:
                return False
        if METADATA_VERSION not in listed and finalized[METADATA_VERSION] != 1:
            return False
        return all(level == 0 for name, level in finalized.items() if name not in listed and name != METADATA_VERSION)

    def register(self, req: BrokerRegistrationRequest, now_ms: int) -> tuple[BrokerRegistrationResponse, list[BrokerEvent]]:
        if self.deny_cluster_action:
            return BrokerRegistrationResponse(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED), []
        if not self.active:
            return BrokerRegistrationResponse(error_code=Errors.NOT_CONTROLLER), []
        code = self._check_registration(req, now_ms)
        if code == Errors.UNKNOWN_SERVER_ERROR:
            self.renounce(now_ms)
        if code != Errors.NONE:
            return BrokerRegistrationResponse(error_code=code), []
        existing = self.registrations.get(req.broker_id)
        offset = self._append()
        listeners = {lst.name: (lst.name, lst.host, lst.port, lst.security_protocol) for lst in req.listeners}
        record_dirs = tuple(req.log_dirs) if self.config.metadata_version.is_at_least(MetadataVersion.IBP_3_7_IV2) else ()
        reg = Registration(
            broker_id=req.broker_id, epoch=offset, incarnation_id=req.incarnation_id, listeners=tuple(listeners.values()),
            rack=req.rack, features={f.name: (f.min_supported_version, f.max_supported_version) for f in req.features},
            is_migrating_zk_broker=req.is_migrating_zk_broker, log_dirs=record_dirs, record_offset=offset,
            last_contact_ms=now_ms,
        )
        if existing is None:
            kind = EventKind.JOINED
        elif existing.incarnation_id != req.incarnation_id:
            kind = EventKind.BOUNCED
        else:
            kind = EventKind.UPDATED
            reg.epoch, reg.state = existing.epoch, existing.state
            reg.metadata_offset = existing.metadata_offset
            reg.controlled_shutdown_offset = existing.controlled_shutdown_offset
        self.registrations[req.broker_id] = reg
        return BrokerRegistrationResponse(error_code=Errors.NONE, broker_epoch=reg.epoch), [BrokerEvent(kind, reg.broker_id, reg.epoch)]

    # ------------------------------------------------------------------ heartbeat

    def _lowest_active_offset(self) -> int | None:
        offsets = [r.metadata_offset for r in self.registrations.values() if r.state == ControlState.UNFENCED]
        return min(offsets) if offsets else None

    def _next_state(self, reg: Registration, req: BrokerHeartbeatRequest) -> ControlState:
        """BHM:535-620, as the table of §4 step 3."""
        s = reg.state
        if s == ControlState.FENCED:
            if req.want_shut_down:
                return ControlState.SHUTDOWN_NOW
            if not req.want_fence and req.current_metadata_offset >= reg.record_offset:
                return ControlState.UNFENCED
            return ControlState.FENCED
        if s == ControlState.UNFENCED:
            if req.want_fence:
                return ControlState.SHUTDOWN_NOW if req.want_shut_down else ControlState.FENCED
            if req.want_shut_down:
                return ControlState.CONTROLLED_SHUTDOWN if self.leads_partitions(reg.broker_id) else ControlState.SHUTDOWN_NOW
            return ControlState.UNFENCED
        if s == ControlState.CONTROLLED_SHUTDOWN:
            if self.leads_partitions(reg.broker_id):
                return ControlState.CONTROLLED_SHUTDOWN
            lowest = self._lowest_active_offset()
            if lowest is None or reg.controlled_shutdown_offset <= lowest:
                return ControlState.SHUTDOWN_NOW
            return ControlState.CONTROLLED_SHUTDOWN
        return ControlState.SHUTDOWN_NOW

    def heartbeat(
        self, req: BrokerHeartbeatRequest, now_ms: int, *, received_ms: int | None = None
    ) -> tuple[BrokerHeartbeatResponse, list[BrokerEvent]]:
        """received_ms: when the heartbeat was read, if it then waited in the event queue. Past its
        deadline (half the heartbeat interval) the answer is REQUEST_TIMED_OUT (7) and the broker's
        last contact and metadata offset are refreshed without a state change, so that an overloaded
        controller fences nobody (QC:2241-2246, RCM:1581-1589; a stale epoch refreshes nothing)."""
        if self.deny_cluster_action:
            return BrokerHeartbeatResponse(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED), []
        if not self.active:
            return BrokerHeartbeatResponse(error_code=Errors.NOT_CONTROLLER), []
        reg = self.registrations.get(req.broker_id)
        if received_ms is not None and now_ms - received_ms > self.config.heartbeat_interval_ms // 2:
            if reg is not None and req.broker_epoch == reg.epoch:
                reg.last_contact_ms = now_ms
                reg.metadata_offset = req.current_metadata_offset
            return BrokerHeartbeatResponse(error_code=Errors.REQUEST_TIMED_OUT), []
        if reg is None or req.broker_epoch != reg.epoch:
            return BrokerHeartbeatResponse(error_code=Errors.STALE_BROKER_EPOCH), []
        nxt = self._next_state(reg, req)
        events: list[BrokerEvent] = []
        if nxt != reg.state:
            offset = self._append()
            if nxt == ControlState.CONTROLLED_SHUTDOWN:
                reg.controlled_shutdown_offset = offset
            events.append(BrokerEvent(_EVENT_OF_STATE[nxt], reg.broker_id, reg.epoch))
            reg.state = nxt
        reg.last_contact_ms = now_ms
        reg.metadata_offset = req.current_metadata_offset
        return BrokerHeartbeatResponse(
            error_code=Errors.NONE, is_caught_up=req.current_metadata_offset >= reg.record_offset,
            is_fenced=nxt.fenced, should_shut_down=nxt == ControlState.SHUTDOWN_NOW,
        ), events

    # ------------------------------------------------------------------ failover

    def renounce(self, now_ms: int) -> None:
        """An unexpected error (-1) makes the active controller renounce (QC:551-553). In a one-node
        quorum it is elected again (leader epoch + 1) and rebuilds the heartbeat soft state from the
        registrations (ClusterCM:322-327): fenced and shutdown flags kept, every broker in contact
        now, metadata and controlled-shutdown offsets unknown. Fencing may then take a full session."""
        self.leader_epoch += 1
        for r in self.registrations.values():
            r.last_contact_ms = now_ms
            r.metadata_offset = -1
            r.controlled_shutdown_offset = -1

    # ------------------------------------------------------------------ session time-out

    def next_expiry_ms(self) -> int | None:
        """When the earliest unfenced session expires, if any is unfenced."""
        times = [r.last_contact_ms + self.config.session_timeout_ms for r in self.registrations.values() if not r.state.fenced]
        return min(times) if times else None

    def fence_stale_brokers(self, now_ms: int) -> list[BrokerEvent]:
        """Fence every unfenced broker whose session expired, one record each, oldest first."""
        stale = sorted((r for r in self.registrations.values()
                        if not r.state.fenced and not r.session_valid(now_ms, self.config.session_timeout_ms)),
                       key=lambda r: r.last_contact_ms)
        events = []
        for r in stale:
            self._append()
            r.state = ControlState.FENCED
            events.append(BrokerEvent(EventKind.FENCED, r.broker_id, r.epoch))
        return events


_EVENT_OF_STATE = {
    ControlState.FENCED: EventKind.FENCED,
    ControlState.UNFENCED: EventKind.UNFENCED,
    ControlState.CONTROLLED_SHUTDOWN: EventKind.CONTROLLED_SHUTDOWN,
    ControlState.SHUTDOWN_NOW: EventKind.SHUTDOWN_NOW,
}
