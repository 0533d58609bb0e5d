"""A ZooKeeper-mode broker's handling of LeaderAndIsr, StopReplica and UpdateMetadata, sans I/O.

Rules (kafka-broker-control-requests.md, cited §):
- ``BrokerState.handle(api_key, version, request)`` returns the response message and changes the
  state; it never does I/O, so the asyncio server (broker_server.py) and tests share it (h11 style).
- Check order per request: authorization (31), broker epoch (77; -1 is never stale, a larger epoch
  is accepted, a KRaft controller's epoch is compared with the registration epoch), controller
  epoch (11, strictly older), then the per-partition rules (§2.3, §4.3).
- Error responses have Kafka's shapes (§1.2): LeaderAndIsr lists every partition with the error
  (v5+: one topic entry per topic state, keyed by its id), StopReplica 77/11 have an empty list,
  UpdateMetadata has only the top-level code.
- Partitions are None (absent), Online (in ``partitions``) or Offline (``offline``: a failed log
  dir, a fault switch). A LeaderAndIsr creates an Online partition before its checks (RM:1968).
- Responses list partitions in request order (Kafka uses hash-map order; nobody may rely on it).
- ``answer_bytes(response)``: about how many bytes a response encodes to, for the answers that repeat
  a topic name per partition (StopReplica, LeaderAndIsr before v5): a request naming a topic once
  for a million partitions gets an answer a million times longer, which the server must budget
  before encoding it (server.py). Other answers are small next to their requests: 0.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import attrs

from ctrlbatch.context import TopicPartition
from ctrlbatch.requests import (
    ZERO_UUID,
    LeaderAndIsrPartitionError,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrTopicError,
    StopReplicaPartitionError,
    StopReplicaRequest,
    StopReplicaResponse,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from ctrlbatch.requests.model import Message

from .errors import Errors
from .metadata_cache import CachedBroker, MetadataCache, alive_brokers

__all__ = ["BrokerState", "HostedPartition", "Prepared", "StopReplicaItem", "answer_bytes", "error_response",
           "stop_replica_items"]

Prepared = dict[int, CachedBroker] | None
"""What ``BrokerState.prepare`` computes from a request alone: an UpdateMetadata's live brokers."""

LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA = 4, 5, 6
CONTROL_APIS = frozenset({LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA})
UNKNOWN_BROKER_EPOCH = -1
NO_EPOCH, EPOCH_DURING_DELETE = -1, -2
FULL = 2


@attrs.define
class HostedPartition:
    """An Online partition: leader epoch -1 and partition epoch 0 when new (Partition:319-320)."""

    topic: str
    partition: int
    leader_epoch: int = -1
    partition_epoch: int = 0
    leader: int | None = None
    controller_epoch: int = 0
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = 0
    log_exists: bool = False
    log_topic_id: uuid.UUID | None = None
    stopped: bool = False


@attrs.frozen
class StopReplicaItem:
    tp: TopicPartition
    leader_epoch: int
    delete: bool


class _Stale(Exception):
    """A check failed: answer with Kafka's error response for this code."""

    def __init__(self, code: int) -> None:
        self.code = code


def _lair_states(req: LeaderAndIsrRequest, version: int) -> tuple[dict[TopicPartition, LeaderAndIsrPartitionState], dict[str, uuid.UUID]]:
    """Partition states by partition (the last wins, as in a map), and the topic ids (LAIReq:136-145, 207-210)."""
    states: dict[TopicPartition, LeaderAndIsrPartitionState] = {}
    ids: dict[str, uuid.UUID] = {}
    if version < 2:
        for s in req.ungrouped_partition_states:
            states[TopicPartition(s.topic_name, s.partition_index)] = s
        return states, ids
    for t in req.topic_states:
        ids[t.topic_name] = t.topic_id if version >= 5 else ZERO_UUID
        for s in t.partition_states:
            states[TopicPartition(t.topic_name, s.partition_index)] = s  # its own name field stays as decoded
    return states, ids


def stop_replica_items(req: StopReplicaRequest, version: int) -> list[StopReplicaItem]:
    """Per-partition states; v0-2 take the request-wide delete flag and epoch -1 (SRReq:168-200)."""
    if version == 0:
        return [StopReplicaItem(TopicPartition(p.topic_name, p.partition_index), NO_EPOCH, req.delete_partitions)
                for p in req.ungrouped_partitions]
    if version <= 2:
        return [StopReplicaItem(TopicPartition(t.name, i), NO_EPOCH, req.delete_partitions)
                for t in req.topics for i in t.partition_indexes]
    return [StopReplicaItem(TopicPartition(t.topic_name, s.partition_index), s.leader_epoch, s.delete_partition)
            for t in req.topic_states for s in t.partition_states]


def _lair_partition_names(req: LeaderAndIsrRequest, version: int) -> list[tuple[str, int]]:
    """(topic, partition) of every partition state, duplicates included: LAIReq.partitionStates(),
    whose v2+ states carry their topic state's name (LAIReq:136-145)."""
    if version < 2:
        return [(s.topic_name, s.partition_index) for s in req.ungrouped_partition_states]
    return [(t.topic_name, s.partition_index) for t in req.topic_states for s in t.partition_states]


def lair_error_response(req: LeaderAndIsrRequest, version: int, code: int) -> LeaderAndIsrResponse:
    """getErrorResponse (LAIReq:147-178): the code at top level and on every partition state of the
    request, one entry each (a partition sent twice is listed twice)."""
    if version < 5:
        return LeaderAndIsrResponse(error_code=code, partition_errors=[
            LeaderAndIsrPartitionError(topic_name=topic, partition_index=p, error_code=code)
            for topic, p in _lair_partition_names(req, version)
        ])
    return LeaderAndIsrResponse(error_code=code, topics=[
        LeaderAndIsrTopicError(topic_id=t.topic_id, partition_errors=[
            LeaderAndIsrPartitionError(partition_index=s.partition_index, error_code=code) for s in t.partition_states
        ]) for t in req.topic_states
    ])


def stop_replica_response(code: int, results: Iterable[tuple[TopicPartition, int]]) -> StopReplicaResponse:
    return StopReplicaResponse(error_code=code, partition_errors=[
        StopReplicaPartitionError(topic_name=tp.topic, partition_index=tp.partition, error_code=c) for tp, c in results
    ])


_ENTRY_BYTES = 16  # a partition error's fixed fields and lengths, rounded up


def answer_bytes(response: Message) -> int:
    """An upper estimate of the encoded answer's size when it repeats topic names (module rules), else 0."""
    if isinstance(response, StopReplicaResponse | LeaderAndIsrResponse) and response.partition_errors:
        sizes: dict[str, int] = {}
        total = 0
        for e in response.partition_errors:
            name = e.topic_name
            n = sizes.get(name)
            if n is None:
                n = sizes[name] = len(name.encode("utf-8", "surrogatepass")) + _ENTRY_BYTES
            total += n
        return total
    return 0


# StopReplica answers these at top level with no partition entries (KafkaApis:321-328, RM:499-504).
_STOP_REPLICA_TOP_LEVEL_ONLY = frozenset({77, 11})


def stop_replica_error_response(req: StopReplicaRequest, version: int, code: int) -> StopReplicaResponse:
    if code in _STOP_REPLICA_TOP_LEVEL_ONLY:
        return StopReplicaResponse(error_code=code)
    return stop_replica_response(code, [(i.tp, code) for i in stop_replica_items(req, version)])


def error_response(api_key: int, version: int, request: Message, code: int) -> Message:
    """The broker's answer with ``code`` and nothing applied: getErrorResponse's shape (§1.2, a handler
    exception or a denial), except StopReplica's 77 and 11, which list no partitions (§1.4, §4.3)."""
    if api_key == LEADER_AND_ISR and isinstance(request, LeaderAndIsrRequest):
        return lair_error_response(request, version, code)
    if api_key == STOP_REPLICA and isinstance(request, StopReplicaRequest):
        return stop_replica_error_response(request, version, code)
    if api_key == UPDATE_METADATA and isinstance(request, UpdateMetadataRequest):
        return UpdateMetadataResponse(error_code=code)
    raise ValueError(f"api key {api_key} with {type(request).__name__} is not a control request of this broker")


class BrokerState:
    """One broker's controller-facing state: epochs, hosted partitions, metadata cache."""

    def __init__(
        self,
        broker_id: int,
        broker_epoch: int,
        *,
        migration_enabled: bool = False,
        kraft_broker_epoch: int = -1,
    ) -> None:
        if broker_id < 0:
            raise ValueError(f"broker_id must be >= 0, got {broker_id}")
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        """The ZooKeeper broker epoch (czxid of /brokers/ids/N)."""
        self.migration_enabled = migration_enabled
        self.kraft_broker_epoch = kraft_broker_epoch
        """The epoch from a KRaft BrokerRegistration (-1 until registered). Only a broker with
        migration enabled has a lifecycle manager to get one."""
        self.controller_epoch = 0
        self.partitions: dict[TopicPartition, HostedPartition] = {}
        self.offline: set[TopicPartition] = set()
        self.cache = MetadataCache()
        self.deny_cluster_action = False
        """Fault switch: an authorizer that denies CLUSTER_ACTION (31)."""
        self.deleted_partitions: list[TopicPartition] = []
        """Partitions UpdateMetadata deleted from the cache, in order (for the coordinators)."""

    def __repr__(self) -> str:
        return (f"BrokerState(id={self.broker_id}, epoch={self.broker_epoch}, controller_epoch={self.controller_epoch}, "
                f"{len(self.partitions)} partitions)")

    # ------------------------------------------------------------------ dispatch

    def prepare(self, api_key: int, version: int, request: Message) -> Prepared:
        """The part of handling that depends on the request alone (an UpdateMetadata's live brokers,
        which replace the cached ones): it runs without the state lock, so that a big request holds
        the lock only while it changes the state. The cached brokers it is equal to are reused
        (metadata_cache.alive_brokers), so a repeated big UpdateMetadata does not build a second copy."""
        if api_key == UPDATE_METADATA and isinstance(request, UpdateMetadataRequest):
            return alive_brokers(request, version, self.cache.alive_brokers)
        return None

    def handle(self, api_key: int, version: int, request: Message, prepared: Prepared = None) -> Message:
        """Apply one decoded control request; returns its response (same api key and version).
        ``prepared``: what ``prepare`` gave for this request, if it was called."""
        if api_key == LEADER_AND_ISR and isinstance(request, LeaderAndIsrRequest):
            return self.leader_and_isr(request, version)
        if api_key == STOP_REPLICA and isinstance(request, StopReplicaRequest):
            return self.stop_replica(request, version)
        if api_key == UPDATE_METADATA and isinstance(request, UpdateMetadataRequest):
            return self.update_metadata(request, version, prepared)
        raise ValueError(f"api key {api_key} with {type(request).__name__} is not a control request of this broker")

    def _check_epochs(self, req: LeaderAndIsrRequest | StopReplicaRequest | UpdateMetadataRequest) -> None:
        """The checks every control request passes first, in Kafka's order (§6): authorization (31),
        broker epoch (77), controller epoch (11, strictly older)."""
        if self.deny_cluster_action:
            raise _Stale(Errors.CLUSTER_AUTHORIZATION_FAILED)
        if self.is_broker_epoch_stale(req.broker_epoch, req.is_k_raft_controller):
            raise _Stale(Errors.STALE_BROKER_EPOCH)
        if req.controller_epoch < self.controller_epoch:
            raise _Stale(Errors.STALE_CONTROLLER_EPOCH)

    def is_broker_epoch_stale(self, request_epoch: int, is_kraft_controller: bool) -> bool:
        """ZkBEM:37-51; a KRaft controller's epoch without a lifecycle manager (migration not
        enabled) raises IllegalStateException, which answers UNKNOWN_SERVER_ERROR (-1)."""
        if request_epoch == UNKNOWN_BROKER_EPOCH:
            return False
        if is_kraft_controller:
            if not self.migration_enabled:
                raise _Stale(Errors.UNKNOWN_SERVER_ERROR)
            return request_epoch < self.kraft_broker_epoch
        return request_epoch < self.broker_epoch

    # ------------------------------------------------------------------ LeaderAndIsr

    def leader_and_isr(self, req: LeaderAndIsrRequest, version: int) -> LeaderAndIsrResponse:
        states, topic_ids = _lair_states(req, version)
        try:
            self._check_epochs(req)
            strays = self._stray_logs(states, topic_ids) if self._is_full_from_kraft(req) else []
        except _Stale as e:
            return lair_error_response(req, version, e.code)
        for tp in strays:
            del self.partitions[tp]
        self.controller_epoch = req.controller_epoch
        results: dict[TopicPartition, int] = {}
        for tp, s in states.items():
            results[tp] = self._become_leader_or_follower(tp, s, topic_ids.get(tp.topic, ZERO_UUID), req.is_k_raft_controller)
        return self._lair_response(version, results, topic_ids, Errors.NONE)

    def _is_full_from_kraft(self, req: LeaderAndIsrRequest) -> bool:
        return self.migration_enabled and req.is_k_raft_controller and req.type == FULL

    def _stray_logs(self, states: dict[TopicPartition, LeaderAndIsrPartitionState], ids: dict[str, uuid.UUID]) -> list[TopicPartition]:
        """Step B (RM:1932-1941, LogManager.findStrayReplicas): local logs absent from a FULL request, or
        present under another topic id (ids compared exactly). A log without a topic id is not allowed
        then: Kafka throws before anything changes, which answers UNKNOWN_SERVER_ERROR (-1)."""
        strays = []
        for tp, p in self.partitions.items():
            if not p.log_exists:
                continue
            if p.log_topic_id is None:
                raise _Stale(Errors.UNKNOWN_SERVER_ERROR)
            if tp not in states or ids.get(tp.topic) != p.log_topic_id:
                strays.append(tp)
        return strays

    def _become_leader_or_follower(
        self, tp: TopicPartition, s: LeaderAndIsrPartitionState, request_id: uuid.UUID, kraft: bool
    ) -> int:
        """Step D and E for one partition: the partition's error code."""
        if tp in self.offline:
            return Errors.KAFKA_STORAGE_ERROR
        p = self.partitions.get(tp)
        if p is None:
            p = self.partitions[tp] = HostedPartition(tp.topic, tp.partition)
        has_id = request_id != ZERO_UUID
        if has_id and p.log_topic_id is not None and p.log_topic_id != request_id:
            return Errors.INCONSISTENT_TOPIC_ID
        req, cur = s.leader_epoch, p.leader_epoch
        if req > cur or (req == cur and kraft):
            if self.broker_id not in s.replicas:
                return Errors.UNKNOWN_TOPIC_OR_PARTITION
            if s.leader == self.broker_id:
                self._make_leader(p, s, request_id)
            else:
                self._make_follower(p, s, request_id)
            return Errors.NONE
        if req < cur:
            return Errors.STALE_CONTROLLER_EPOCH
        if has_id and p.log_exists and p.log_topic_id is None:
            p.log_topic_id = request_id
            return Errors.NONE
        if not has_id and p.log_topic_id is not None and s.leader != self.broker_id:
            return Errors.NONE  # the fetcher forgets the id (downgrade); the log keeps it
        return Errors.STALE_CONTROLLER_EPOCH

    @staticmethod
    def _create_log(p: HostedPartition, request_id: uuid.UUID) -> None:
        """Partition.createLogIfNotExists (3.9.0 Partition.scala): a new log takes the request's topic
        id; an existing log without one is given it (lines 462-463). A zero id is no id (RM:1909-1916)."""
        request_topic_id = None if request_id == ZERO_UUID else request_id
        if not p.log_exists:
            p.log_exists = True
            p.log_topic_id = request_topic_id
        elif p.log_topic_id is None:
            p.log_topic_id = request_topic_id

    def _make_leader(self, p: HostedPartition, s: LeaderAndIsrPartitionState, request_id: uuid.UUID) -> None:
        """Partition.makeLeader (Partition:714-822): ignored when the partition epoch is older."""
        if s.partition_epoch < p.partition_epoch:
            return
        p.controller_epoch = s.controller_epoch
        p.replicas, p.isr = tuple(s.replicas), tuple(s.isr)
        p.adding_replicas, p.removing_replicas = tuple(s.adding_replicas), tuple(s.removing_replicas)
        p.leader_recovery_state = 0
        self._create_log(p, request_id)
        p.leader_epoch, p.partition_epoch, p.leader = s.leader_epoch, s.partition_epoch, self.broker_id
        p.stopped = False

    def _make_follower(self, p: HostedPartition, s: LeaderAndIsrPartitionState, request_id: uuid.UUID) -> None:
        """makeFollowers (RM:2264-2365): only the log when the leader is not alive in the cache."""
        if not self.cache.has_alive_broker(s.leader):
            self._create_log(p, request_id)
            return
        if s.partition_epoch < p.partition_epoch:
            return
        p.controller_epoch = s.controller_epoch
        p.leader, p.leader_epoch, p.partition_epoch = s.leader, s.leader_epoch, s.partition_epoch
        p.replicas, p.isr = tuple(s.replicas), ()
        p.adding_replicas, p.removing_replicas = tuple(s.adding_replicas), tuple(s.removing_replicas)
        p.leader_recovery_state = s.leader_recovery_state
        self._create_log(p, request_id)
        p.stopped = False

    @staticmethod
    def _lair_response(
        version: int, results: dict[TopicPartition, int], topic_ids: dict[str, uuid.UUID], code: int
    ) -> LeaderAndIsrResponse:
        """Step F (RM:2073-2094): v5+ groups by the request's topic id (zero ids collapse)."""
        if version < 5:
            return LeaderAndIsrResponse(error_code=code, partition_errors=[
                LeaderAndIsrPartitionError(topic_name=tp.topic, partition_index=tp.partition, error_code=c)
                for tp, c in results.items()
            ])
        groups: dict[uuid.UUID, list[LeaderAndIsrPartitionError]] = {}
        for tp, c in results.items():
            groups.setdefault(topic_ids.get(tp.topic, ZERO_UUID), []).append(
                LeaderAndIsrPartitionError(partition_index=tp.partition, error_code=c))
        return LeaderAndIsrResponse(error_code=code, topics=[
            LeaderAndIsrTopicError(topic_id=i, partition_errors=errs) for i, errs in groups.items()
        ])

    # ------------------------------------------------------------------ StopReplica

    def stop_replica(self, req: StopReplicaRequest, version: int) -> StopReplicaResponse:
        try:
            self._check_epochs(req)
        except _Stale as e:
            return stop_replica_error_response(req, version, e.code)
        items = stop_replica_items(req, version)
        self.controller_epoch = req.controller_epoch
        results: dict[TopicPartition, int] = {}
        for item in items:
            results[item.tp] = self._stop_partition(item)
        return stop_replica_response(Errors.NONE, results.items())

    def _stop_partition(self, item: StopReplicaItem) -> int:
        """RM:509-549 and stopPartitions (RM:579-626) for one partition."""
        if item.tp in self.offline:
            return Errors.KAFKA_STORAGE_ERROR
        p = self.partitions.get(item.tp)
        if p is not None:
            e = item.leader_epoch
            if not (e in (EPOCH_DURING_DELETE, NO_EPOCH) or e >= p.leader_epoch):
                return Errors.FENCED_LEADER_EPOCH
            p.stopped = True
        if item.delete:
            self.partitions.pop(item.tp, None)  # the log is deleted too (a missing one is a no-op)
        return Errors.NONE

    # ------------------------------------------------------------------ UpdateMetadata

    def update_metadata(self, req: UpdateMetadataRequest, version: int, brokers: Prepared = None) -> UpdateMetadataResponse:
        try:
            self._check_epochs(req)  # 11 is ControllerMovedException here (RM:1878)
        except _Stale as e:
            return UpdateMetadataResponse(error_code=e.code)
        self.deleted_partitions.extend(
            self.cache.update(req, version, migration_enabled=self.migration_enabled, brokers=brokers))
        self.controller_epoch = req.controller_epoch
        return UpdateMetadataResponse(error_code=Errors.NONE)

    # ------------------------------------------------------------------ inspection

    def partition_summary(self) -> dict[TopicPartition, Any]:
        """(leader, leader epoch, partition epoch) per Online partition."""
        return {tp: (p.leader, p.leader_epoch, p.partition_epoch) for tp, p in self.partitions.items()}
