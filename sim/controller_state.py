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
- A registration is checked completely before anything changes; only then is it applied.
- Bounded and amortised O(1) per request: ``max_brokers`` bounds the registrations. A new broker
  id beyond it takes the place of a fenced registration out of contact for a whole session
  time-out, if there is one (FORGOTTEN); else of the oldest-contact registration of the source
  (the connection, ``source``) that keeps the most broker ids alive, if that source keeps more than
  one and is not the newcomer's (FORGOTTEN too). Why: fake ids kept alive by heartbeats must not
  lock new brokers out for good, and the controller cannot tell a fake id from a real one by what
  it sends; but a Kafka broker speaks for itself only, over a channel of its own
  (BrokerLifecycleManager's), so ids beyond one per connection are the first to give way. An
  attacker must then hold one connection per id, which max.connections bounds. Otherwise it is
  refused with POLICY_VIOLATION (44), the error Kafka's controller gives an operation that would exceed one of
  its bounds (EventHandlerExceptionInfo maps BoundedListTooLongException to
  PolicyViolationException, EHEI:67-101; no failover, and the broker retries). Kafka itself has no
  such bound. Sessions are kept in two insertion-ordered maps (unfenced, fenced), each oldest
  contact first, as BrokerHeartbeatManager keeps its unfenced list (BHM:453-465); log dirs in an
  index from dir to owner. So neither a registration nor a heartbeat nor the expiry check scans
  every broker (except a controlled-shutdown heartbeat, which needs the lowest active offset).
- A registration's size is bounded as Kafka bounds it: its BrokerRegistrationRecord must fit in
  one raft batch (KafkaRaftClient.MAX_BATCH_SIZE_BYTES, 8 MiB; BatchAccumulator.append throws
  RecordBatchTooLargeException, an ApiException answered as is: RECORD_LIST_TOO_LARGE (18), no
  failover, EHEI:70-73). ``max_registration_bytes`` (that by default) is compared with the
  record's size estimated from the request (listeners, features, log dirs, rack), checked first
  among the semantic checks so that nothing is built for an over-large one.
- Time never goes backwards here: a ``now_ms`` below the latest seen counts as the latest (the
  endpoint's clock is monotonic); that keeps the ordered maps sorted by contact.
"""

from __future__ import annotations

import enum
import uuid
from collections import OrderedDict
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

__all__ = ["BrokerEvent", "ControlState", "ControllerConfig", "ControllerState", "EventKind", "Registration",
           "registration_record_bytes"]

METADATA_VERSION = "metadata.version"
KNOWN_SECURITY_PROTOCOLS = frozenset({0, 1, 2, 3})
DEFAULT_MAX_BROKERS = 10000
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024
"""KafkaRaftClient.MAX_BATCH_SIZE_BYTES: a record larger than this cannot be written (3.9)."""


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
    FORGOTTEN = "forgotten"
    """A fenced registration out of contact for a session was dropped to make room (max_brokers)."""


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
    max_brokers: int = DEFAULT_MAX_BROKERS
    """At most this many registrations (broker ids) are kept; see the module rules."""
    max_registration_bytes: int = MAX_BATCH_SIZE_BYTES
    """A registration whose record would be larger is answered RECORD_LIST_TOO_LARGE (18)."""

    def __attrs_post_init__(self) -> None:
        if not self.cluster_id:
            raise ValueError("cluster_id must not be empty")
        if self.session_timeout_ms <= 0:
            raise ValueError(f"session_timeout_ms must be > 0, got {self.session_timeout_ms}")
        if self.heartbeat_interval_ms <= 0:
            raise ValueError(f"heartbeat_interval_ms must be > 0, got {self.heartbeat_interval_ms}")
        if self.max_brokers < 1:
            raise ValueError(f"max_brokers must be >= 1, got {self.max_brokers}")
        if self.max_registration_bytes < 1:
            raise ValueError(f"max_registration_bytes must be >= 1, got {self.max_registration_bytes}")

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


_RECORD_FIXED = 64  # broker id, epoch, incarnation id, flags, lengths: rounded up
_LISTENER_FIXED = 8  # port, security protocol, lengths
_FEATURE_FIXED = 6  # min and max versions, length


def registration_record_bytes(req: BrokerRegistrationRequest) -> int:
    """About the serialized size of the BrokerRegistrationRecord a registration writes (module rules)."""
    size = _RECORD_FIXED + 16 * len(req.log_dirs) + len((req.rack or "").encode("utf-8", "surrogatepass"))
    size += sum(len(x.name.encode("utf-8", "surrogatepass")) + len(x.host.encode("utf-8", "surrogatepass"))
                + _LISTENER_FIXED for x in req.listeners)
    return size + sum(len(f.name.encode("utf-8", "surrogatepass")) + _FEATURE_FIXED for f in req.features)


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
        self._unfenced: OrderedDict[int, None] = OrderedDict()
        """Broker ids not fenced, oldest contact first (the session expiry order)."""
        self._fenced: OrderedDict[int, None] = OrderedDict()
        """Broker ids fenced: those fenced by session expiry (all out of contact for a session)
        first, then the others, oldest contact first. So if any fenced registration has been out
        of contact for a session, the first one has (the eviction order)."""
        self._dir_owner: dict[uuid.UUID, int] = {}
        self._latest_ms = 0
        self._source_of: dict[int, object] = {}
        """broker id -> the source (connection) that last registered or heartbeated for it."""
        self._ids_of: dict[object, OrderedDict[int, None]] = {}
        """source -> its broker ids, oldest contact first."""
        self._sources_by_count: dict[int, dict[object, None]] = {}
        """n -> the sources keeping n broker ids alive (to find the one with the most in O(1))."""
        self._most = 0

    def __repr__(self) -> str:
        return f"ControllerState({self.config.cluster_id!r}, {len(self.registrations)} brokers, next offset {self.next_offset})"

    def _append(self) -> int:
        offset = self.next_offset
        self.next_offset += 1
        return offset

    def _now(self, now_ms: int) -> int:
        self._latest_ms = max(self._latest_ms, now_ms)
        return self._latest_ms

    @property
    def high_watermark(self) -> int:
        """The offset of the last record written (committed at once here)."""
        return self.next_offset - 1

    # ------------------------------------------------------------------ soft state bookkeeping

    def _queue_of(self, state: ControlState) -> OrderedDict[int, None]:
        return self._fenced if state.fenced else self._unfenced

    def _touch(self, reg: Registration, now_ms: int) -> None:
        """Contact now: the broker moves to the end of its session queue."""
        reg.last_contact_ms = now_ms
        q = self._queue_of(reg.state)
        q[reg.broker_id] = None
        q.move_to_end(reg.broker_id)

    def _set_state(self, reg: Registration, state: ControlState) -> None:
        if state.fenced != reg.state.fenced:
            self._queue_of(reg.state).pop(reg.broker_id, None)
            self._queue_of(state)[reg.broker_id] = None
        reg.state = state

    def _count_moved(self, source: object, old: int, new: int) -> None:
        if old:
            bucket = self._sources_by_count[old]
            del bucket[source]
            if not bucket:
                del self._sources_by_count[old]
                if self._most == old and new < old:
                    self._most = old - 1
        if new:
            self._sources_by_count.setdefault(new, {})[source] = None
            self._most = max(self._most, new)

    def _attribute(self, broker_id: int, source: object) -> None:
        """broker_id was heard from source now (its oldest-contact order there moves to the end)."""
        if source is None:
            return
        was = self._source_of.get(broker_id)
        if was is not None and was != source:
            self._unattribute(broker_id)
        ids = self._ids_of.setdefault(source, OrderedDict())
        if broker_id in ids:
            ids.move_to_end(broker_id)
            return
        ids[broker_id] = None
        self._source_of[broker_id] = source
        self._count_moved(source, len(ids) - 1, len(ids))

    def _unattribute(self, broker_id: int) -> None:
        source = self._source_of.pop(broker_id, None)
        if source is None:
            return
        ids = self._ids_of[source]
        del ids[broker_id]
        self._count_moved(source, len(ids) + 1, len(ids))
        if not ids:
            del self._ids_of[source]

    def _crowded(self, newcomer: object) -> int | None:
        """The oldest-contact id of the source keeping the most ids alive (more than one, not the
        newcomer's source; a tie with it goes to the other): the slot a new id takes when nothing
        fenced is evictable (module rules)."""
        if self._most < 2:
            return None
        for source in self._sources_by_count[self._most]:  # the newcomer's own source at the top gets nothing
            if source != newcomer:
                return next(iter(self._ids_of[source]))
        return None

    def _forget(self, broker_id: int) -> Registration:
        self._unattribute(broker_id)
        reg = self.registrations.pop(broker_id)
        self._fenced.pop(broker_id, None)
        self._unfenced.pop(broker_id, None)
        for d in reg.log_dirs:
            if self._dir_owner.get(d) == broker_id:
                del self._dir_owner[d]
        return reg

    # ------------------------------------------------------------------ registration

    def _check_registration(self, req: BrokerRegistrationRequest, now_ms: int, source: object = None) -> int:
        cfg = self.config
        if registration_record_bytes(req) > cfg.max_registration_bytes:
            return Errors.RECORD_LIST_TOO_LARGE
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
        if existing is None and len(self.registrations) >= cfg.max_brokers and self._evictable(now_ms, source) is None:
            return Errors.POLICY_VIOLATION
        return Errors.NONE

    def _evictable(self, now_ms: int, source: object = None) -> int | None:
        """The registration a new broker id may replace at max_brokers: see the module rules."""
        for broker_id in self._fenced:  # the first only: O(1)
            reg = self.registrations[broker_id]
            if reg.last_contact_ms + self.config.session_timeout_ms < now_ms:
                return broker_id
            break
        return self._crowded(source)

    def _bad_log_dirs(self, req: BrokerRegistrationRequest) -> bool:
        dirs = req.log_dirs
        if not dirs or any(_reserved_dir(d) for d in dirs) or len(set(dirs)) != len(dirs):
            return True
        return any(self._dir_owner.get(d, req.broker_id) != req.broker_id for d in dirs)

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

    def register(self, req: BrokerRegistrationRequest, now_ms: int,
                 source: object = None) -> tuple[BrokerRegistrationResponse, list[BrokerEvent]]:
        """source: where the request came from (the connection), for the max_brokers rule."""
        if self.deny_cluster_action:
            return BrokerRegistrationResponse(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED), []
        if not self.active:
            return BrokerRegistrationResponse(error_code=Errors.NOT_CONTROLLER), []
        now_ms = self._now(now_ms)
        code = self._check_registration(req, now_ms, source)
        if code == Errors.UNKNOWN_SERVER_ERROR:
            self.renounce(now_ms)
        if code != Errors.NONE:
            return BrokerRegistrationResponse(error_code=code), []
        # checked: from here on the registration is applied
        events: list[BrokerEvent] = []
        existing = self.registrations.get(req.broker_id)
        if existing is None and len(self.registrations) >= self.config.max_brokers:
            victim = self._evictable(now_ms, source)
            assert victim is not None  # _check_registration made sure
            gone = self._forget(victim)
            events.append(BrokerEvent(EventKind.FORGOTTEN, gone.broker_id, gone.epoch))
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
        if existing is not None:
            self._forget(req.broker_id)
        self.registrations[req.broker_id] = reg
        for d in record_dirs:
            self._dir_owner[d] = req.broker_id
        self._touch(reg, now_ms)
        self._attribute(req.broker_id, source)
        events.append(BrokerEvent(kind, reg.broker_id, reg.epoch))
        return BrokerRegistrationResponse(error_code=Errors.NONE, broker_epoch=reg.epoch), events

    # ------------------------------------------------------------------ heartbeat

    def _lowest_active_offset(self) -> int | None:
        offsets = [self.registrations[b].metadata_offset for b in self._unfenced
                   if self.registrations[b].state == ControlState.UNFENCED]
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
        self, req: BrokerHeartbeatRequest, now_ms: int, *, received_ms: int | None = None, source: object = None
    ) -> tuple[BrokerHeartbeatResponse, list[BrokerEvent]]:
        """received_ms: when the heartbeat was read, if it then waited in the event queue. Past its
        deadline (half the heartbeat interval) the answer is REQUEST_TIMED_OUT (7) and the broker's
        last contact and metadata offset are refreshed without a state change, so that an overloaded
        controller fences nobody (QC:2241-2246, RCM:1581-1589; a stale epoch refreshes nothing)."""
        if self.deny_cluster_action:
            return BrokerHeartbeatResponse(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED), []
        if not self.active:
            return BrokerHeartbeatResponse(error_code=Errors.NOT_CONTROLLER), []
        now_ms = self._now(now_ms)
        reg = self.registrations.get(req.broker_id)
        if received_ms is not None and now_ms - received_ms > self.config.heartbeat_interval_ms // 2:
            if reg is not None and req.broker_epoch == reg.epoch:
                self._touch(reg, now_ms)
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
            self._set_state(reg, nxt)
        self._touch(reg, now_ms)
        self._attribute(reg.broker_id, source)
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
        now_ms = self._now(now_ms)
        self.leader_epoch += 1
        for r in self.registrations.values():
            r.last_contact_ms = now_ms  # everyone at once: the queues' order stays valid
            r.metadata_offset = -1
            r.controlled_shutdown_offset = -1

    # ------------------------------------------------------------------ session time-out

    def next_expiry_ms(self) -> int | None:
        """When the earliest unfenced session expires, if any is unfenced."""
        for broker_id in self._unfenced:  # the oldest contact: O(1)
            return self.registrations[broker_id].last_contact_ms + self.config.session_timeout_ms
        return None

    def fence_stale_brokers(self, now_ms: int) -> list[BrokerEvent]:
        """Fence every unfenced broker whose session expired, one record each, oldest first."""
        now_ms = self._now(now_ms)
        events = []
        while self._unfenced:
            r = self.registrations[next(iter(self._unfenced))]
            if r.session_valid(now_ms, self.config.session_timeout_ms):
                break
            self._append()
            self._set_state(r, ControlState.FENCED)
            self._fenced.move_to_end(r.broker_id, last=False)  # out of contact for a session: evictable first
            events.append(BrokerEvent(EventKind.FENCED, r.broker_id, r.epoch))
        return events


_EVENT_OF_STATE = {
    ControlState.FENCED: EventKind.FENCED,
    ControlState.UNFENCED: EventKind.UNFENCED,
    ControlState.CONTROLLED_SHUTDOWN: EventKind.CONTROLLED_SHUTDOWN,
    ControlState.SHUTDOWN_NOW: EventKind.SHUTDOWN_NOW,
}
