"""``ControllerContext``: the ZooKeeper-mode controller's in-memory view of the cluster.

Rules:
- Mirrors Kafka's ``kafka.controller.ControllerContext`` (CC = core/src/main/scala/kafka/
  controller/ControllerContext.scala, 3.9) for the state the request batch reads (it implements
  ``ControllerChannelContext``), the mutators that set that state up, and the state machines'
  fields (reference kafka-zk-controller.md §6): partition and replica states, the deletion and
  reassignment sets, and ``offline_partition_count``.
- State machines' maps (CC:92-93, 387-423, 546-547): ``put_partition_state`` keeps
  ``offline_partition_count`` as Kafka does (+1 entering Offline, -1 leaving it, only for topics
  whose deletion has not started, CC:403-423); ``put_partition_state_if_not_exists`` counts as a
  move from NonExistent when it stored the state. ``partition_state`` / ``replica_state`` raise
  KeyError for an unknown key (Scala's ``map(key)``). Replica states are indexed per topic
  (topic -> (partition, replica) -> state), so the per-topic queries (``replicas_in_state``,
  ``are_all_replicas_in_state``, ``is_any_replica_in_state``) look at the topic's replicas only,
  as Kafka's do through ``replicasForTopic``; ``remove_topic`` drops a topic's maps in O(its
  size). ``preferred_replica_imbalance_count()`` is computed on demand (one scan) instead of on
  every leadership put, so the replay's hot paths pay nothing for it.
- ``remove_topic`` is Kafka's (CC:320-337): it leaves the topic's partition states, replica
  states and reassignment marks alone. After a completed deletion the partitions are
  NonExistentPartition and the replica states are gone already; a topic whose znode vanished
  otherwise keeps its states, so a re-created topic meets them exactly as in Kafka (invalid
  New transitions logged, Online -> Online elections). ``reset_context`` clears everything.
- Brokers: ``set_live_brokers`` replaces both the live set and the epoch map; ``add_live_brokers``
  adds to both. ``shutting_down_broker_ids`` is a separate mutable set: a shutting-down broker stays
  "live or shutting down" but is no longer "live", and its replicas count as offline.
- Broker order is insertion order: the order of the mapping given to ``set_live_brokers``, brokers
  added later at the end. Like Kafka's set of brokers, two different ``Broker`` values with the same
  id are two entries; ``update_broker_metadata`` swaps one for another.
- Deletion has two steps: "queued" (``queue_topic_deletion``) drives the -2 sentinels, "started"
  (``begin_topic_deletion``) drives deletion events on StopReplica responses.
- Storage is plain dicts and sets with O(1) lookups; getters return the live collections through
  read-only views (``MappingProxyType``, dict key views) and never copy them. Mutating the context
  while iterating a view is the caller's problem, as with any dict.
- Everything is picklable (the context ships to Spark executors); views are built per call and
  never stored.
- Beyond Kafka: ``add_topic`` sets up a topic (id, assignments, leadership) in one call, and the
  ``UpdateMetadataHints`` (``broker_membership_version``, ``update_metadata_view``) let the batch
  read one partition's UpdateMetadata inputs in one call.
- Mutators that take brokers check their arguments (a wrong type names the parameter); the
  per-partition setters do not, since they run once per partition and take frozen values.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from types import MappingProxyType
from typing import TYPE_CHECKING

from .broker import Broker
from .controller_states import (
    PARTITION_VALID_FROM,
    REPLICA_VALID_FROM,
    PartitionAndReplica,
    PartitionState,
    ReplicaState,
)
from .errors import IllegalStateError
from .leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from .replica_assignment import ReplicaAssignment
from .topic_partition import TopicPartition
from .uuids import kafka_uuid_string

if TYPE_CHECKING:
    from .channel_context import UpdateMetadataView

__all__ = ["ControllerContext", "INITIAL_CONTROLLER_EPOCH", "INITIAL_CONTROLLER_EPOCH_ZK_VERSION"]

INITIAL_CONTROLLER_EPOCH = 0
INITIAL_CONTROLLER_EPOCH_ZK_VERSION = 0

_NO_ASSIGNMENTS: Mapping[int, ReplicaAssignment] = MappingProxyType({})


class ControllerContext:
    """The controller's cluster state: brokers, topics, assignments, leadership and deletions."""

    __slots__ = (
        "shutting_down_broker_ids",
        "epoch",
        "epoch_zk_version",
        "_live_brokers",
        "_live_broker_epochs",
        "_all_topics",
        "_topic_ids",
        "_topic_names",
        "_partition_assignments",
        "_partition_leadership_info",
        "_replicas_on_offline_dirs",
        "_topics_to_be_deleted",
        "_topics_with_deletion_started",
        "broker_membership_version",
        "offline_partition_count",
        "_partition_states",
        "_replica_states",
        "_topics_ineligible_for_deletion",
        "_partitions_being_reassigned",
    )

    def __init__(self) -> None:
        self.shutting_down_broker_ids: set[int] = set()
        self.epoch: int = INITIAL_CONTROLLER_EPOCH
        self.epoch_zk_version: int = INITIAL_CONTROLLER_EPOCH_ZK_VERSION
        # A dict used as an insertion-ordered set of brokers.
        self._live_brokers: dict[Broker, None] = {}
        self._live_broker_epochs: dict[int, int] = {}
        self._all_topics: set[str] = set()
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._topic_names: dict[uuid.UUID, str] = {}
        # topic -> partition -> assignment, so per-topic queries need not scan every partition.
        self._partition_assignments: dict[str, dict[int, ReplicaAssignment]] = {}
        self._partition_leadership_info: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self._replicas_on_offline_dirs: dict[int, set[TopicPartition]] = {}
        self._topics_to_be_deleted: set[str] = set()
        self._topics_with_deletion_started: set[str] = set()
        # Bumped on every change of the live-or-shutting-down broker set; lets the batch skip
        # re-adding an unchanged broker set on every LeaderAndIsr add (an optional hint).
        self.broker_membership_version: int = 0
        # The state machines' fields (CC:78, 91-93, 118): empty until a state machine runs.
        self.offline_partition_count: int = 0
        self._partition_states: dict[TopicPartition, PartitionState] = {}
        # topic -> (partition, replica) -> state: int-pair keys hash in C.
        self._replica_states: dict[str, dict[tuple[int, int], ReplicaState]] = {}
        self._topics_ineligible_for_deletion: set[str] = set()
        self._partitions_being_reassigned: set[TopicPartition] = set()

    def __repr__(self) -> str:
        return (
            f"<ControllerContext epoch {self.epoch}: {len(self._live_broker_epochs)} live brokers"
            f" ({len(self.shutting_down_broker_ids)} shutting down), {len(self._all_topics)} topics,"
            f" {sum(map(len, self._partition_assignments.values()))} partitions assigned,"
            f" {len(self._partition_leadership_info)} with leaders,"
            f" {len(self._topics_to_be_deleted)} topics queued for deletion>"
        )

    # ---------------------------------------------------------------- brokers

    def set_live_brokers(self, broker_and_epochs: Mapping[Broker, int]) -> None:
        """Replace the live brokers and their epochs with ``broker_and_epochs``, in its order."""
        _check_brokers(broker_and_epochs, "set_live_brokers")
        self._live_brokers.clear()
        self._live_broker_epochs.clear()
        self.add_live_brokers(broker_and_epochs)

    def add_live_brokers(self, broker_and_epochs: Mapping[Broker, int]) -> None:
        """Add brokers (after the existing ones) and record their epochs."""
        _check_brokers(broker_and_epochs, "add_live_brokers")
        self.broker_membership_version += 1
        for broker, broker_epoch in broker_and_epochs.items():
            self._live_brokers[broker] = None
            self._live_broker_epochs[broker.id] = broker_epoch

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        """Forget the given broker ids: their ``Broker`` entries and their epochs."""
        ids = set(broker_ids)
        self.broker_membership_version += 1
        for broker in [broker for broker in self._live_brokers if broker.id in ids]:
            del self._live_brokers[broker]
        for broker_id in ids:
            self._live_broker_epochs.pop(broker_id, None)

    def update_broker_metadata(self, old_metadata: Broker, new_metadata: Broker) -> None:
        """Swap a broker's registration (endpoints or rack changed); the epoch is untouched."""
        self.broker_membership_version += 1
        self._live_brokers.pop(old_metadata, None)
        self._live_brokers[new_metadata] = None

    @property
    def live_or_shutting_down_broker_ids(self) -> AbstractSet[int]:
        return self._live_broker_epochs.keys()

    @property
    def live_or_shutting_down_brokers(self) -> AbstractSet[Broker]:
        return self._live_brokers.keys()

    @property
    def live_broker_id_and_epochs(self) -> Mapping[int, int]:
        return MappingProxyType(self._live_broker_epochs)

    @property
    def live_broker_ids(self) -> AbstractSet[int]:
        """Live brokers that are not shutting down (a new set: at most a few hundred ids)."""
        return self._live_broker_epochs.keys() - self.shutting_down_broker_ids

    def live_or_shutting_down_broker(self, broker_id: int) -> Broker | None:
        """The first registered ``Broker`` with ``broker_id``, if any."""
        for broker in self._live_brokers:
            if broker.id == broker_id:
                return broker
        return None

    def is_replica_online(
        self, broker_id: int, partition: TopicPartition, include_shutting_down_brokers: bool = False
    ) -> bool:
        """Whether the replica of ``partition`` on ``broker_id`` can serve.

        The broker must be registered and, unless ``include_shutting_down_brokers``, not shutting
        down; and ``partition`` must not sit on one of the broker's offline log directories.
        """
        if broker_id not in self._live_broker_epochs:
            return False
        if not include_shutting_down_brokers and broker_id in self.shutting_down_broker_ids:
            return False
        offline = self._replicas_on_offline_dirs.get(broker_id)
        return offline is None or partition not in offline

    # ------------------------------------------------------ offline log dirs

    def update_metadata_view(self, partition: TopicPartition) -> UpdateMetadataView | None:
        """What an UpdateMetadata partition state is built from, in one call (UpdateMetadataHints,
        which the batch uses): (leadership, replicas, offline replicas, topic queued for
        deletion), or None when the partition has no leadership."""
        info = self._partition_leadership_info.get(partition)
        if info is None:
            return None
        assignment = self._partition_assignments.get(partition.topic, _NO_ASSIGNMENTS).get(partition.partition)
        replicas = () if assignment is None else assignment.replicas
        if self.shutting_down_broker_ids or self._replicas_on_offline_dirs:
            offline = self.offline_replicas(partition, replicas)
        else:  # the common case, inline: offline means not live; no set built when all are live
            live = self._live_broker_epochs
            offline = ()
            for r in replicas:
                if r not in live:
                    offline = tuple([r for r in replicas if r not in live])
                    break
        return info, replicas, offline, partition.topic in self._topics_to_be_deleted

    def offline_replicas(self, partition: TopicPartition, replicas: Iterable[int]) -> tuple[int, ...]:
        """The replicas r of ``partition`` for which ``is_replica_online(r, partition)`` is false,
        in order: one call instead of one per replica (``update_metadata_view`` uses it)."""
        live = self._live_broker_epochs
        if not self.shutting_down_broker_ids and not self._replicas_on_offline_dirs:
            return tuple([r for r in replicas if r not in live])
        online = self.is_replica_online
        return tuple([r for r in replicas if not online(r, partition)])

    def add_replicas_on_offline_dirs(self, broker_id: int, partitions: Iterable[TopicPartition]) -> None:
        """Record that ``broker_id`` reported these partitions on an offline log directory."""
        self._replicas_on_offline_dirs.setdefault(broker_id, set()).update(partitions)

    def remove_replicas_on_offline_dirs(self, broker_id: int, partitions: Iterable[TopicPartition]) -> None:
        """Record that these partitions on ``broker_id`` are back online."""
        offline = self._replicas_on_offline_dirs.get(broker_id)
        if offline is not None:
            offline.difference_update(partitions)

    @property
    def replicas_on_offline_dirs(self) -> Mapping[int, AbstractSet[TopicPartition]]:
        return MappingProxyType(self._replicas_on_offline_dirs)

    # ----------------------------------------------------------------- topics

    def add_topic(
        self,
        topic: str,
        replicas: Sequence[Sequence[int]],
        *,
        topic_id: uuid.UUID | None = None,
        controller_epoch: int | None = None,
        leader_epoch: int = LeaderAndIsr.INITIAL_LEADER_EPOCH,
        partition_epoch: int = LeaderAndIsr.INITIAL_PARTITION_EPOCH,
    ) -> list[TopicPartition]:
        """Add a topic in one call: partition i gets the replica list ``replicas[i]``, and
        leadership as a new topic has it (leader = first replica, ISR = all replicas, the given
        epochs, written by ``controller_epoch``, this context's epoch by default). The topic id
        is ``topic_id`` or a random one. Returns the partitions, in order.

            ctx.add_topic("orders", [[1, 2, 3], [2, 3, 1]])
        """
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"add_topic: topic must be a non-empty str, not {topic!r:.80}")
        if isinstance(replicas, str) or not isinstance(replicas, Sequence):
            raise TypeError(f"add_topic: replicas must be a list of replica lists (one per partition), not {replicas!r:.80}")
        lists = []
        for i, r in enumerate(replicas):
            ids = tuple(r) if isinstance(r, Iterable) and not isinstance(r, str) else None
            if not ids or any(type(b) is not int or b < 0 for b in ids):
                raise ValueError(f"add_topic: replicas[{i}] must be a non-empty list of broker ids (ints >= 0), not {r!r:.80}")
            lists.append(ids)
        epoch = self.epoch if controller_epoch is None else controller_epoch
        self._all_topics.add(topic)
        self.add_topic_id(topic, uuid.uuid4() if topic_id is None else topic_id)
        out = []
        for i, ids in enumerate(lists):
            tp = TopicPartition(topic, i)
            self.update_partition_full_replica_assignment(tp, ReplicaAssignment(ids))
            leadership = LeaderAndIsr(ids[0], ids, leader_epoch, partition_epoch)
            self._partition_leadership_info[tp] = LeaderIsrAndControllerEpoch(leadership, epoch)
            out.append(tp)
        return out

    @property
    def all_topics(self) -> AbstractSet[str]:
        return self._all_topics

    def set_all_topics(self, topics: Iterable[str]) -> None:
        """Replace the topic set. Ids, assignments and leadership are left alone, as in Kafka."""
        self._all_topics.clear()
        self._all_topics.update(topics)

    def add_topic_id(self, topic: str, topic_id: uuid.UUID) -> None:
        """Bind ``topic`` to ``topic_id``; both directions must agree with what is already bound."""
        if topic not in self._all_topics:
            raise IllegalStateError(f"topic {topic} is not contained in all topics.")
        existing_id = self._topic_ids.get(topic)
        if existing_id is not None and existing_id != topic_id:
            raise IllegalStateError(
                f"topic ID map already contained ID for topic {topic} and new ID "
                f"{kafka_uuid_string(topic_id)} did not match existing ID {kafka_uuid_string(existing_id)}"
            )
        existing_name = self._topic_names.get(topic_id)
        if existing_name is not None and existing_name != topic:
            raise IllegalStateError(
                f"topic name map already contained ID {kafka_uuid_string(topic_id)} and new name "
                f"{topic} did not match existing name {existing_name}"
            )
        self._topic_ids[topic] = topic_id
        self._topic_names[topic_id] = topic

    @property
    def topic_ids(self) -> Mapping[str, uuid.UUID]:
        return MappingProxyType(self._topic_ids)

    @property
    def topic_names(self) -> Mapping[uuid.UUID, str]:
        return MappingProxyType(self._topic_names)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self._topic_names.get(topic_id)

    def remove_topic(self, topic: str) -> None:
        """Forget a deleted topic: deletion marks, id, assignments and its partitions' leadership."""
        self._topics_to_be_deleted.discard(topic)
        self._topics_with_deletion_started.discard(topic)
        self._all_topics.discard(topic)
        topic_id = self._topic_ids.pop(topic, None)
        if topic_id is not None:
            self._topic_names.pop(topic_id, None)
        assignments = self._partition_assignments.pop(topic, None)
        if assignments is not None:
            for partition in assignments:
                self._partition_leadership_info.pop(TopicPartition(topic, partition), None)

    # ------------------------------------------------------------ assignments

    def update_partition_full_replica_assignment(
        self, partition: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        self._partition_assignments.setdefault(partition.topic, {})[partition.partition] = assignment

    def partition_full_replica_assignment(self, partition: TopicPartition) -> ReplicaAssignment:
        """The assignment of ``partition``, or ``ReplicaAssignment.EMPTY`` when unknown."""
        assignment = self._assignment(partition)
        return ReplicaAssignment.EMPTY if assignment is None else assignment

    def partition_replica_assignment(self, partition: TopicPartition) -> tuple[int, ...]:
        """The full replica list of ``partition``; empty when unknown."""
        assignment = self._assignment(partition)
        return () if assignment is None else assignment.replicas

    def _assignment(self, partition: TopicPartition) -> ReplicaAssignment | None:
        return self._partition_assignments.get(partition.topic, _NO_ASSIGNMENTS).get(partition.partition)

    def partition_replica_assignment_for_topic(self, topic: str) -> dict[TopicPartition, tuple[int, ...]]:
        return {
            TopicPartition(topic, partition): assignment.replicas
            for partition, assignment in self._partition_assignments.get(topic, _NO_ASSIGNMENTS).items()
        }

    def partition_full_replica_assignment_for_topic(
        self, topic: str
    ) -> dict[TopicPartition, ReplicaAssignment]:
        return {
            TopicPartition(topic, partition): assignment
            for partition, assignment in self._partition_assignments.get(topic, _NO_ASSIGNMENTS).items()
        }

    def partitions_for_topic(self, topic: str) -> set[TopicPartition]:
        return {TopicPartition(topic, partition) for partition in self._partition_assignments.get(topic, ())}

    @property
    def all_partitions(self) -> set[TopicPartition]:
        """Every partition with an assignment (built on each call)."""
        return {
            TopicPartition(topic, partition)
            for topic, assignments in self._partition_assignments.items()
            for partition in assignments
        }

    def partitions_on_broker(self, broker_id: int) -> set[TopicPartition]:
        """Partitions with a replica assigned to ``broker_id`` (a full scan)."""
        return {
            TopicPartition(topic, partition)
            for topic, assignments in self._partition_assignments.items()
            for partition, assignment in assignments.items()
            if broker_id in assignment.replicas
        }

    # ------------------------------------------------------------- leadership

    def put_partition_leadership_info(
        self, partition: TopicPartition, leader_isr_and_controller_epoch: LeaderIsrAndControllerEpoch
    ) -> None:
        self._partition_leadership_info[partition] = leader_isr_and_controller_epoch

    def partition_leadership_info(self, partition: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        return self._partition_leadership_info.get(partition)

    def partition_leader_and_isr(self, partition: TopicPartition) -> LeaderAndIsr | None:
        info = self._partition_leadership_info.get(partition)
        return None if info is None else info.leader_and_isr

    @property
    def partitions_leadership_info(self) -> Mapping[TopicPartition, LeaderIsrAndControllerEpoch]:
        return MappingProxyType(self._partition_leadership_info)

    @property
    def partitions_with_leaders(self) -> set[TopicPartition]:
        """Partitions with cached leadership whose topic is not queued for deletion."""
        queued = self._topics_to_be_deleted
        return {tp for tp in self._partition_leadership_info if tp.topic not in queued}

    @property
    def partition_with_leaders_count(self) -> int:
        return len(self._partition_leadership_info)

    def clear_partition_leadership_info(self) -> None:
        self._partition_leadership_info.clear()

    def leader_epoch(self, partition: TopicPartition) -> int:
        """-2 if the topic is queued for deletion (overriding any real epoch), else the cached epoch, else -1."""
        if partition.topic in self._topics_to_be_deleted:
            return LeaderAndIsr.EPOCH_DURING_DELETE
        info = self._partition_leadership_info.get(partition)
        return LeaderAndIsr.NO_EPOCH if info is None else info.leader_and_isr.leader_epoch

    # --------------------------------------------------------- topic deletion

    def queue_topic_deletion(self, topics: Iterable[str]) -> None:
        """Mark topics as queued for deletion; queuing twice is harmless."""
        self._topics_to_be_deleted.update(topics)

    def begin_topic_deletion(self, topics: Iterable[str]) -> None:
        """Mark topics whose deletion has actually started."""
        self._topics_with_deletion_started.update(topics)

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return topic in self._topics_to_be_deleted

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return topic in self._topics_with_deletion_started

    @property
    def topics_queued_for_deletion(self) -> AbstractSet[str]:
        return self._topics_to_be_deleted

    @property
    def topics_with_deletion_started(self) -> AbstractSet[str]:
        return self._topics_with_deletion_started

    # ------------------------------------------------ topic deletion (TDM's sets)

    @property
    def topics_ineligible_for_deletion(self) -> set[str]:
        """CC:118: queued topics whose deletion is halted (TopicDeletionManager mutates it)."""
        return self._topics_ineligible_for_deletion

    def is_topic_eligible_for_deletion(self, topic: str) -> bool:
        """CC:363-365: queued and not ineligible."""
        return topic in self._topics_to_be_deleted and topic not in self._topics_ineligible_for_deletion

    # ---------------------------------------------------------- reassignments

    @property
    def partitions_being_reassigned(self) -> set[TopicPartition]:
        """CC:91: partitions with a reassignment in progress (the controller mutates it)."""
        return self._partitions_being_reassigned

    # ------------------------------------------------------- partition states

    @property
    def partition_states(self) -> Mapping[TopicPartition, PartitionState]:
        return MappingProxyType(self._partition_states)

    def put_partition_state(self, partition: TopicPartition, target_state: PartitionState) -> None:
        """CC:403-406: store the state and keep ``offline_partition_count``."""
        current = self._partition_states.get(partition, PartitionState.NonExistentPartition)
        self._partition_states[partition] = target_state
        self._update_partition_state_metrics(partition, current, target_state)

    def _update_partition_state_metrics(
        self, partition: TopicPartition, current: PartitionState, target: PartitionState
    ) -> None:
        """CC:408-418: count Offline partitions of topics whose deletion has not started."""
        if partition.topic not in self._topics_with_deletion_started:
            offline = PartitionState.OfflinePartition
            if current is not offline and target is offline:
                self.offline_partition_count += 1
            elif current is offline and target is not offline:
                self.offline_partition_count -= 1

    def put_partition_state_if_not_exists(self, partition: TopicPartition, state: PartitionState) -> None:
        """CC:420-423: store ``state`` unless one is there; a stored one counts as a move from NonExistent."""
        if self._partition_states.setdefault(partition, state) is state:
            self._update_partition_state_metrics(partition, PartitionState.NonExistentPartition, state)

    def partition_state(self, partition: TopicPartition) -> PartitionState:
        """CC:429-431 (KeyError for an unknown partition, as Scala's ``map(key)``)."""
        return self._partition_states[partition]

    def partitions_in_states(
        self, states: Iterable[PartitionState], topic: str | None = None
    ) -> set[TopicPartition]:
        """CC:433-447: partitions in one of ``states``; of ``topic`` only when given (its partitions only)."""
        wanted = frozenset(states)
        if topic is None:
            return {tp for tp, s in self._partition_states.items() if s in wanted}
        partition_states = self._partition_states
        return {tp for tp in self.partitions_for_topic(topic) if partition_states[tp] in wanted}

    def partitions_in_state(self, state: PartitionState, topic: str | None = None) -> set[TopicPartition]:
        return self.partitions_in_states((state,), topic)

    # --------------------------------------------------------- replica states

    @property
    def replica_states(self) -> dict[PartitionAndReplica, ReplicaState]:
        """Every replica state, as one new dict (a copy: O(replicas))."""
        return {
            PartitionAndReplica(TopicPartition(topic, p), r): state
            for topic, states in self._replica_states.items()
            for (p, r), state in states.items()
        }

    def put_replica_state(self, replica: PartitionAndReplica, state: ReplicaState) -> None:
        tp = replica.topic_partition
        states = self._replica_states.get(tp.topic)
        if states is None:
            states = self._replica_states[tp.topic] = {}
        states[(tp.partition, replica.replica)] = state

    def put_replica_state_if_not_exists(self, replica: PartitionAndReplica, state: ReplicaState) -> None:
        tp = replica.topic_partition
        states = self._replica_states.get(tp.topic)
        if states is None:
            states = self._replica_states[tp.topic] = {}
        states.setdefault((tp.partition, replica.replica), state)

    def remove_replica_state(self, replica: PartitionAndReplica) -> None:
        tp = replica.topic_partition
        states = self._replica_states.get(tp.topic)
        if states is not None:
            states.pop((tp.partition, replica.replica), None)

    def replica_state(self, replica: PartitionAndReplica) -> ReplicaState:
        """CC:425-427 (KeyError for an unknown replica)."""
        tp = replica.topic_partition
        try:
            return self._replica_states[tp.topic][(tp.partition, replica.replica)]
        except KeyError:
            raise KeyError(replica) from None

    def replica_state_or_none(self, replica: PartitionAndReplica) -> ReplicaState | None:
        tp = replica.topic_partition
        states = self._replica_states.get(tp.topic)
        return None if states is None else states.get((tp.partition, replica.replica))

    def _topic_replica_states(self, topic: str) -> Iterable[tuple[int, int, ReplicaState]]:
        """(partition, replica, state) for every assigned replica of ``topic``, in assignment
        order (KeyError for a replica without a state, as Kafka's ``replicaStates(replica)``)."""
        states = self._replica_states.get(topic, {})
        for partition, assignment in self._partition_assignments.get(topic, _NO_ASSIGNMENTS).items():
            for r in assignment.replicas:
                try:
                    yield partition, r, states[(partition, r)]
                except KeyError:
                    raise KeyError(PartitionAndReplica(TopicPartition(topic, partition), r)) from None

    def replicas_for_topic(self, topic: str) -> set[PartitionAndReplica]:
        """CC:261-268: every replica of every partition of ``topic``, from the assignments."""
        return {
            PartitionAndReplica(TopicPartition(topic, partition), r)
            for partition, assignment in self._partition_assignments.get(topic, _NO_ASSIGNMENTS).items()
            for r in assignment.replicas
        }

    def replicas_for_partition(self, partitions: Iterable[TopicPartition]) -> set[PartitionAndReplica]:
        """CC:297-302."""
        return {PartitionAndReplica(tp, r) for tp in partitions for r in self.partition_replica_assignment(tp)}

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> set[PartitionAndReplica]:
        """CC:250-260: replicas assigned to any of ``broker_ids`` (one scan of the assignments)."""
        ids = frozenset(broker_ids)
        out: set[PartitionAndReplica] = set()
        for topic, assignments in self._partition_assignments.items():
            for partition, assignment in assignments.items():
                hosted = ids.intersection(assignment.replicas)
                if hosted:
                    tp = TopicPartition(topic, partition)
                    out.update(PartitionAndReplica(tp, b) for b in hosted)
        return out

    def online_and_offline_replicas(self) -> tuple[set[PartitionAndReplica], set[PartitionAndReplica]]:
        """CC:280-295: every assigned replica, split by ``is_replica_online``."""
        online: set[PartitionAndReplica] = set()
        offline: set[PartitionAndReplica] = set()
        is_online = self.is_replica_online
        for topic, assignments in self._partition_assignments.items():
            for partition, assignment in assignments.items():
                tp = TopicPartition(topic, partition)
                for r in assignment.replicas:
                    (online if is_online(r, tp) else offline).add(PartitionAndReplica(tp, r))
        return online, offline

    def replicas_in_state(self, topic: str, state: ReplicaState) -> set[PartitionAndReplica]:
        """CC:371-373: the topic's replicas in ``state`` (KeyError for a replica without a state)."""
        states = self._replica_states.get(topic, {})
        out: set[PartitionAndReplica] = set()
        for partition, assignment in self._partition_assignments.get(topic, _NO_ASSIGNMENTS).items():
            tp = None
            for r in assignment.replicas:
                current = states.get((partition, r))
                if current is None:
                    raise KeyError(PartitionAndReplica(TopicPartition(topic, partition), r))
                if current is state:
                    tp = tp or TopicPartition(topic, partition)
                    out.add(PartitionAndReplica(tp, r))
        return out

    def are_all_replicas_in_state(self, topic: str, state: ReplicaState) -> bool:
        """CC:375-377 (true for a topic without replicas)."""
        return all(s is state for _, _, s in self._topic_replica_states(topic))

    def is_any_replica_in_state(self, topic: str, state: ReplicaState) -> bool:
        """CC:379-381."""
        return any(s is state for _, _, s in self._topic_replica_states(topic))

    def check_valid_partition_state_change(
        self, partitions: Iterable[TopicPartition], target_state: PartitionState
    ) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """CC:387-389, 546-547: (valid, invalid) moves to ``target_state``; every partition needs a state."""
        valid_from = PARTITION_VALID_FROM[target_state]
        states = self._partition_states
        valid: list[TopicPartition] = []
        invalid: list[TopicPartition] = []
        for tp in partitions:
            (valid if states[tp] in valid_from else invalid).append(tp)
        return valid, invalid

    def check_valid_replica_state_change(
        self, replicas: Iterable[PartitionAndReplica], target_state: ReplicaState
    ) -> tuple[list[PartitionAndReplica], list[PartitionAndReplica]]:
        """CC:383-385, 543-544: (valid, invalid) moves to ``target_state``; every replica needs a state."""
        valid_from = REPLICA_VALID_FROM[target_state]
        valid: list[PartitionAndReplica] = []
        invalid: list[PartitionAndReplica] = []
        for r in replicas:
            (valid if self.replica_state(r) in valid_from else invalid).append(r)
        return valid, invalid

    # ------------------------------------------------------ leadership queries

    def partitions_with_offline_leader(self) -> set[TopicPartition]:
        """CC:479-484: cached leader not online, topic not queued for deletion."""
        online = self.is_replica_online
        queued = self._topics_to_be_deleted
        return {
            tp
            for tp, info in self._partition_leadership_info.items()
            if not online(info.leader_and_isr.leader, tp) and tp.topic not in queued
        }

    def partition_leaders_on_broker(self, broker_id: int) -> set[TopicPartition]:
        """CC:486-492: partitions led by ``broker_id`` with more than one replica, topic not queued."""
        queued = self._topics_to_be_deleted
        return {
            tp
            for tp, info in self._partition_leadership_info.items()
            if info.leader_and_isr.leader == broker_id
            and tp.topic not in queued
            and len(self.partition_replica_assignment(tp)) > 1
        }

    def preferred_replica_imbalance_count(self) -> int:
        """CC:79, 502-541, computed on demand: partitions with leadership, topic not queued,
        whose leader is not the preferred replica (the assignment's head). A reassigning
        partition whose head is being added counts only while the head is in the ISR."""
        count = 0
        queued = self._topics_to_be_deleted
        for tp, info in self._partition_leadership_info.items():
            if tp.topic in queued:
                continue
            assignment = self._assignment(tp)
            if assignment is None or not assignment.replicas:
                continue
            head = assignment.replicas[0]
            lai = info.leader_and_isr
            if assignment.is_being_reassigned and head in assignment.adding_replicas:
                balanced = head not in lai.isr
            else:
                balanced = lai.leader == head
            if not balanced:
                count += 1
        return count

    # ------------------------------------------------------------------ reset

    def reset_context(self) -> None:
        """Forget everything, as a controller does when it resigns (CC:304-313)."""
        self._topics_to_be_deleted.clear()
        self._topics_with_deletion_started.clear()
        self._topics_ineligible_for_deletion.clear()
        self._partitions_being_reassigned.clear()
        self._partition_states.clear()
        self._replica_states.clear()
        self.offline_partition_count = 0
        self.shutting_down_broker_ids.clear()
        self.epoch = INITIAL_CONTROLLER_EPOCH
        self.epoch_zk_version = INITIAL_CONTROLLER_EPOCH_ZK_VERSION
        self._all_topics.clear()
        self._topic_ids.clear()
        self._topic_names.clear()
        self._partition_assignments.clear()
        self._partition_leadership_info.clear()
        self._replicas_on_offline_dirs.clear()
        self._live_brokers.clear()
        self._live_broker_epochs.clear()
        self.broker_membership_version += 1


def _check_brokers(broker_and_epochs: object, method: str) -> None:
    """A mapping of Broker to int epoch, or a TypeError naming what is wrong."""
    if not isinstance(broker_and_epochs, Mapping):
        raise TypeError(
            f"{method}: broker_and_epochs must be a mapping of Broker to broker epoch, not "
            f"{type(broker_and_epochs).__name__}"
        )
    for broker, epoch in broker_and_epochs.items():
        if not isinstance(broker, Broker):
            raise TypeError(
                f"{method}: broker_and_epochs must map Broker values to broker epochs; key {broker!r:.80} is a "
                f"{type(broker).__name__} (e.g. {{Broker({broker!r:.20}, [EndPoint('localhost', 9092, 'PLAINTEXT', "
                f"'PLAINTEXT')]): 0}})"
            )
        if type(epoch) is not int:
            raise TypeError(
                f"{method}: the broker epoch of broker {broker.id} must be an int, not {type(epoch).__name__} {epoch!r:.80}"
            )
