"""Hypothesis strategies for controller contexts, metadata versions and context mutations.

Rules:
- ``controller_contexts()`` draws a whole ``ControllerContext``: live brokers (ids >= 0, random
  epochs, one or two endpoints of which one is always a PLAINTEXT listener named "PLAINTEXT",
  optional rack), some of them shutting down, dead brokers that are gone from the live set but
  still named in assignments, ISRs and offline dirs, topics with or without ids, replica
  assignments (some mid-reassignment) over live and dead brokers, leadership for some
  partitions, topics queued for deletion (a subset of them begun) and replicas on offline dirs.
- Every broker keeps its PLAINTEXT listener, so LeaderAndIsr live leaders and UpdateMetadata v0
  can always be built. ``custom_listeners=True`` lets the second listener carry a non-default
  name ("INTERNAL"...), which UpdateMetadata v1-2 refuses; pass False to rule that out.
- Topic ids are unique and never the zero id; every value is small enough to read in a failure
  report, but epochs and ids range over the whole wire type.
- Mutations (``context_mutations(context)``) are frozen attrs values with ``apply(context)``,
  drawn against one context's current state, so a test can print and replay them on a copy.
- ``ChannelContextView(context)`` hides everything but the ten ControllerChannelContext members,
  so a batch fed with it takes its plain-protocol paths instead of ControllerContext's hints.
- Nothing here reads the batch: these are inputs, not expectations (``metadata_versions`` only
  uses the batch's version tables to spread its draws).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import attrs
from hypothesis import strategies as st

from ctrlbatch.batch.versions import leader_and_isr_version, stop_replica_version, update_metadata_version
from ctrlbatch.context import (
    ZERO_UUID,
    Broker,
    ControllerContext,
    EndPoint,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    MetadataVersion,
    ReplicaAssignment,
    SecurityProtocol,
    TopicPartition,
)

__all__ = [
    "BrokerDies",
    "ChannelContextView",
    "BrokerRestarts",
    "BrokerShutsDown",
    "BrokerStarts",
    "BrokerUpdated",
    "ContextMutation",
    "LeadershipChanged",
    "ReplicasOffline",
    "ReplicasOnline",
    "ReplicasReassigned",
    "TopicCreated",
    "TopicDeletionQueued",
    "TopicDeletionStarted",
    "TopicIdAssigned",
    "TopicRemoved",
    "broker_epochs",
    "brokers",
    "context_mutations",
    "controller_contexts",
    "endpoints",
    "known_partitions",
    "leaderships",
    "metadata_versions",
    "referenced_broker_ids",
    "replica_assignments",
    "topic_names",
]

INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1
CUSTOM_LISTENER_NAMES = ("INTERNAL", "REPLICATION", "EXTERNAL")

# ---------------------------------------------------------------------------- scalars

_hosts = st.one_of(
    st.sampled_from(["localhost", "127.0.0.1", "::1", "broker.example.com"]),
    st.text("abcdefghijklmnopqrstuvwxyz0123456789-.", min_size=1, max_size=12),
    st.text(max_size=6),
)
_ports = st.integers(0, 65535)
_racks = st.one_of(st.none(), st.just(""), st.sampled_from(["rack-a", "rack-b", "us-east-1c"]), st.text(max_size=5))
_epochs32 = st.one_of(st.integers(0, 20), st.integers(0, INT32_MAX))

broker_epochs = st.one_of(st.integers(0, 1000), st.integers(0, INT64_MAX))
"""ZooKeeper czxids: non-negative int64."""

topic_names = st.one_of(
    st.sampled_from(["foo", "bar", "baz", "qux", "__consumer_offsets"]),
    st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=10),
)
"""Legal Kafka topic names (``[a-zA-Z0-9._-]``)."""


def metadata_versions(
    min_version: MetadataVersion | None = None,
    max_version: MetadataVersion | None = None,
    *,
    by_wire_versions: bool = True,
) -> st.SearchStrategy[MetadataVersion]:
    """A MetadataVersion (inter.broker.protocol.version), optionally within [min, max].

    With ``by_wire_versions`` (the default) every distinct (LeaderAndIsr, UpdateMetadata,
    StopReplica) version triple is equally likely, then any IBP giving it: 57 IBPs map to only
    12 triples, most of them recent, so a plain uniform draw would rarely reach the old ones.
    """
    lo = MetadataVersion.VERSIONS[0] if min_version is None else min_version
    hi = MetadataVersion.VERSIONS[-1] if max_version is None else max_version
    candidates = [v for v in MetadataVersion.VERSIONS if lo <= v <= hi]
    if not by_wire_versions:
        return st.sampled_from(candidates)
    groups: dict[tuple[int, int, int], list[MetadataVersion]] = {}
    for v in candidates:
        key = (leader_and_isr_version(v), update_metadata_version(v), stop_replica_version(v))
        groups.setdefault(key, []).append(v)
    return st.sampled_from(list(groups.values())).flatmap(st.sampled_from)


# ---------------------------------------------------------------------------- brokers


@st.composite
def endpoints(draw: st.DrawFn, custom_listeners: bool = True) -> tuple[EndPoint, ...]:
    """A PLAINTEXT endpoint named "PLAINTEXT", maybe with a second listener before or after it."""
    plaintext = EndPoint(draw(_hosts), draw(_ports), "PLAINTEXT", SecurityProtocol.PLAINTEXT)
    if not draw(st.booleans()):
        return (plaintext,)
    protocol = draw(st.sampled_from([SecurityProtocol.SSL, SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL]))
    name = protocol.default_listener_name
    if custom_listeners and draw(st.booleans()):
        name = draw(st.sampled_from(CUSTOM_LISTENER_NAMES))
        protocol = draw(st.sampled_from(list(SecurityProtocol)))
    other = EndPoint(draw(_hosts), draw(_ports), name, protocol)
    return (other, plaintext) if draw(st.booleans()) else (plaintext, other)


def brokers(broker_id: int, custom_listeners: bool = True) -> st.SearchStrategy[Broker]:
    """A registration of ``broker_id``: endpoints (PLAINTEXT included) and an optional rack."""
    return st.builds(Broker, st.just(broker_id), endpoints(custom_listeners), _racks)


# ---------------------------------------------------------------------------- partitions


def replica_assignments(pool: Iterable[int], max_replicas: int = 4) -> st.SearchStrategy[ReplicaAssignment]:
    """Distinct replicas drawn from ``pool``; sometimes mid-reassignment (adding/removing set)."""
    ids = sorted(set(pool))
    if not ids:
        return st.just(ReplicaAssignment(()))
    replica_lists = st.lists(st.sampled_from(ids), unique=True, max_size=min(max_replicas, len(ids)))
    plain = replica_lists.map(ReplicaAssignment)
    moving = st.tuples(replica_lists, replica_lists).map(lambda p: ReplicaAssignment(p[0]).reassign_to(p[1]))
    return st.one_of(plain, moving)


@st.composite
def leaderships(
    draw: st.DrawFn, replicas: Iterable[int], pool: Iterable[int] = ()
) -> LeaderIsrAndControllerEpoch:
    """Leadership over ``replicas``: leader a replica, -1 or another pool id; ISR a subset; random epochs."""
    replicas = tuple(replicas)
    others = sorted(set(pool) - set(replicas))
    choices: list[st.SearchStrategy[int]] = [st.just(LeaderAndIsr.NO_LEADER)]
    if replicas:
        choices.insert(0, st.sampled_from(replicas))
    if others:
        choices.append(st.sampled_from(others))
    leader = draw(st.one_of(choices))
    isr = draw(st.lists(st.sampled_from(replicas), unique=True)) if replicas else []
    lai = LeaderAndIsr(
        leader,
        isr,
        leader_epoch=draw(_epochs32),
        partition_epoch=draw(_epochs32),
        leader_recovery_state=draw(st.sampled_from(list(LeaderRecoveryState))),
    )
    return LeaderIsrAndControllerEpoch(lai, draw(_epochs32))


def known_partitions(context: ControllerContext) -> list[TopicPartition]:
    """Partitions the context knows: with an assignment or with leadership (sorted)."""
    return sorted(context.all_partitions | set(context.partitions_leadership_info))


def referenced_broker_ids(context: ControllerContext) -> set[int]:
    """Every broker id the context mentions: live, shutting down, in assignments, ISRs, leaders, offline dirs."""
    ids = set(context.live_or_shutting_down_broker_ids) | set(context.shutting_down_broker_ids)
    ids |= set(context.replicas_on_offline_dirs)
    for tp in context.all_partitions:
        ids.update(context.partition_full_replica_assignment(tp).replicas)
    for info in context.partitions_leadership_info.values():
        ids.update(info.leader_and_isr.isr)
        ids.add(info.leader_and_isr.leader)
    return {i for i in ids if i >= 0}


# ---------------------------------------------------------------------------- contexts


@st.composite
def controller_contexts(
    draw: st.DrawFn,
    max_brokers: int = 6,
    max_topics: int = 4,
    max_partitions: int = 4,
    *,
    min_brokers: int = 0,
    custom_listeners: bool = True,
) -> ControllerContext:
    """A ControllerContext with live, shutting-down and dead brokers, topics, leadership and deletions."""
    id_space = st.integers(0, max(3 * max_brokers, 1))
    live_ids = draw(st.lists(id_space, unique=True, min_size=min_brokers, max_size=max_brokers), label="live")
    dead_ids = draw(st.lists(id_space.filter(lambda i: i not in live_ids), unique=True, max_size=3), label="dead")
    context = ControllerContext()
    context.epoch = draw(_epochs32)
    context.set_live_brokers({draw(brokers(b, custom_listeners)): draw(broker_epochs) for b in live_ids})
    if live_ids:
        context.shutting_down_broker_ids.update(draw(st.sets(st.sampled_from(live_ids))))
    pool = live_ids + dead_ids

    topics = draw(st.lists(topic_names, unique=True, max_size=max_topics), label="topics")
    context.set_all_topics(topics)
    ids = draw(st.lists(st.uuids().filter(lambda u: u != ZERO_UUID), unique=True, min_size=len(topics), max_size=len(topics)))
    for topic, topic_id in zip(topics, ids, strict=True):
        if draw(st.booleans()):
            context.add_topic_id(topic, topic_id)

    partitions: list[TopicPartition] = []
    for topic in topics:
        for p in range(draw(st.integers(0 if max_partitions == 0 else 1, max_partitions))):
            tp = TopicPartition(topic, p)
            partitions.append(tp)
            context.update_partition_full_replica_assignment(tp, draw(replica_assignments(pool)))
    for tp in partitions:
        if draw(st.integers(0, 3)):  # three in four partitions have a leader
            replicas = context.partition_replica_assignment(tp)
            context.put_partition_leadership_info(tp, draw(leaderships(replicas, pool)))

    if topics:
        queued = draw(st.sets(st.sampled_from(topics)), label="queued")
        context.queue_topic_deletion(queued)
        if queued:
            context.begin_topic_deletion(draw(st.sets(st.sampled_from(sorted(queued))), label="begun"))
    if pool and partitions:
        for b in draw(st.sets(st.sampled_from(pool), max_size=2)):
            context.add_replicas_on_offline_dirs(b, draw(st.sets(st.sampled_from(partitions), min_size=1)))
    return context


# ---------------------------------------------------------------------------- plain view


class ChannelContextView:
    """Exactly the ten ``ControllerChannelContext`` members of a live context, nothing more.

    A batch given this sees none of ``ControllerContext``'s optional hints (membership version,
    bulk look-ups), so it takes its plain-protocol code paths; mutations of the wrapped context
    show through at once.
    """

    __slots__ = ("_context",)

    def __init__(self, context: ControllerContext) -> None:
        self._context = context

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return self._context.is_topic_deletion_in_progress(topic)

    @property
    def topic_ids(self) -> Any:
        return self._context.topic_ids

    @property
    def live_broker_id_and_epochs(self) -> Any:
        return self._context.live_broker_id_and_epochs

    @property
    def live_or_shutting_down_brokers(self) -> Any:
        return self._context.live_or_shutting_down_brokers

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return self._context.is_topic_queued_up_for_deletion(topic)

    def is_replica_online(self, broker_id: int, partition: TopicPartition) -> bool:
        return self._context.is_replica_online(broker_id, partition)

    def partition_replica_assignment(self, partition: TopicPartition) -> Any:
        return self._context.partition_replica_assignment(partition)

    def leader_epoch(self, partition: TopicPartition) -> int:
        return self._context.leader_epoch(partition)

    @property
    def live_or_shutting_down_broker_ids(self) -> Any:
        return self._context.live_or_shutting_down_broker_ids

    def partition_leadership_info(self, partition: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        return self._context.partition_leadership_info(partition)


# ---------------------------------------------------------------------------- mutations


@attrs.frozen
class BrokerStarts:
    """A broker registers (new, or a dead one coming back)."""

    broker: Broker
    broker_epoch: int

    def apply(self, context: ControllerContext) -> None:
        context.add_live_brokers({self.broker: self.broker_epoch})


@attrs.frozen
class BrokerDies:
    """A broker's registration goes away; Kafka also drops it from the shutting-down set."""

    broker_id: int
    forget_shutdown: bool = True

    def apply(self, context: ControllerContext) -> None:
        context.remove_live_brokers([self.broker_id])
        if self.forget_shutdown:
            context.shutting_down_broker_ids.discard(self.broker_id)


@attrs.frozen
class BrokerShutsDown:
    """Controlled shutdown begins: still live-or-shutting-down, no longer live."""

    broker_id: int

    def apply(self, context: ControllerContext) -> None:
        context.shutting_down_broker_ids.add(self.broker_id)


@attrs.frozen
class BrokerRestarts:
    """A bounce: the old registration goes and a new one (new epoch) comes."""

    broker: Broker
    broker_epoch: int

    def apply(self, context: ControllerContext) -> None:
        context.remove_live_brokers([self.broker.id])
        context.shutting_down_broker_ids.discard(self.broker.id)
        context.add_live_brokers({self.broker: self.broker_epoch})


@attrs.frozen
class BrokerUpdated:
    """A broker's endpoints or rack change; its epoch stays."""

    old: Broker
    new: Broker

    def apply(self, context: ControllerContext) -> None:
        context.update_broker_metadata(self.old, self.new)


@attrs.frozen
class LeadershipChanged:
    partition: TopicPartition
    leadership: LeaderIsrAndControllerEpoch

    def apply(self, context: ControllerContext) -> None:
        context.put_partition_leadership_info(self.partition, self.leadership)


@attrs.frozen
class ReplicasReassigned:
    partition: TopicPartition
    assignment: ReplicaAssignment

    def apply(self, context: ControllerContext) -> None:
        context.update_partition_full_replica_assignment(self.partition, self.assignment)


@attrs.frozen
class TopicCreated:
    topic: str
    topic_id: uuid.UUID | None
    assignments: tuple[tuple[int, ReplicaAssignment], ...]
    leaderships: tuple[tuple[int, LeaderIsrAndControllerEpoch], ...]

    def apply(self, context: ControllerContext) -> None:
        context.set_all_topics({*context.all_topics, self.topic})
        if self.topic_id is not None:
            context.add_topic_id(self.topic, self.topic_id)
        for p, assignment in self.assignments:
            context.update_partition_full_replica_assignment(TopicPartition(self.topic, p), assignment)
        for p, leadership in self.leaderships:
            context.put_partition_leadership_info(TopicPartition(self.topic, p), leadership)


@attrs.frozen
class TopicIdAssigned:
    topic: str
    topic_id: uuid.UUID

    def apply(self, context: ControllerContext) -> None:
        context.add_topic_id(self.topic, self.topic_id)


@attrs.frozen
class TopicDeletionQueued:
    topic: str

    def apply(self, context: ControllerContext) -> None:
        context.queue_topic_deletion([self.topic])


@attrs.frozen
class TopicDeletionStarted:
    topic: str

    def apply(self, context: ControllerContext) -> None:
        context.begin_topic_deletion([self.topic])


@attrs.frozen
class TopicRemoved:
    """Deletion completed: the topic, its id, assignments and leadership are forgotten."""

    topic: str

    def apply(self, context: ControllerContext) -> None:
        context.remove_topic(self.topic)


@attrs.frozen
class ReplicasOffline:
    broker_id: int
    partitions: tuple[TopicPartition, ...]

    def apply(self, context: ControllerContext) -> None:
        context.add_replicas_on_offline_dirs(self.broker_id, self.partitions)


@attrs.frozen
class ReplicasOnline:
    broker_id: int
    partitions: tuple[TopicPartition, ...]

    def apply(self, context: ControllerContext) -> None:
        context.remove_replicas_on_offline_dirs(self.broker_id, self.partitions)


ContextMutation = (
    BrokerStarts
    | BrokerDies
    | BrokerShutsDown
    | BrokerRestarts
    | BrokerUpdated
    | LeadershipChanged
    | ReplicasReassigned
    | TopicCreated
    | TopicIdAssigned
    | TopicDeletionQueued
    | TopicDeletionStarted
    | TopicRemoved
    | ReplicasOffline
    | ReplicasOnline
)


def context_mutations(
    context: ControllerContext, *, custom_listeners: bool = True, max_brokers: int = 8, max_partitions: int = 4
) -> st.SearchStrategy[ContextMutation]:
    """One mutation that makes sense for ``context`` as it is now (built from a snapshot of it)."""
    live = sorted(context.live_or_shutting_down_broker_ids)
    referenced = referenced_broker_ids(context)
    not_live = sorted((referenced | set(range(max_brokers))) - set(live))
    pool = sorted(referenced | set(live))
    topics = sorted(context.all_topics)
    partitions = known_partitions(context)
    options: list[st.SearchStrategy[Any]] = []

    # Membership changes come twice: they move every UpdateMetadata recipient set.
    if not_live:
        starts = st.sampled_from(not_live).flatmap(
            lambda b: st.builds(BrokerStarts, brokers(b, custom_listeners), broker_epochs)
        )
        options += [starts, starts]
    if live:
        ids = st.sampled_from(live)
        options += [st.builds(BrokerDies, ids, st.booleans())] * 2
        options.append(st.builds(BrokerShutsDown, ids))
        options.append(ids.flatmap(lambda b: st.builds(BrokerRestarts, brokers(b, custom_listeners), broker_epochs)))
        regs = sorted(context.live_or_shutting_down_brokers, key=lambda b: b.id)
        options.append(st.sampled_from(regs).flatmap(
            lambda old: st.builds(BrokerUpdated, st.just(old), brokers(old.id, custom_listeners))
        ))
    targets = partitions + [TopicPartition(t, max_partitions) for t in topics[:1]]
    if targets:
        options.append(st.sampled_from(targets).flatmap(
            lambda tp: st.builds(LeadershipChanged, st.just(tp), leaderships(context.partition_replica_assignment(tp), pool))
        ))
        options.append(st.builds(ReplicasReassigned, st.sampled_from(targets), replica_assignments(pool)))
    if pool and partitions:
        options.append(st.builds(ReplicasOffline, st.sampled_from(pool), st.lists(st.sampled_from(partitions), max_size=3).map(tuple)))
        offline = sorted(context.replicas_on_offline_dirs)
        if offline:
            options.append(st.sampled_from(offline).flatmap(lambda b: st.builds(
                ReplicasOnline, st.just(b),
                st.lists(st.sampled_from(sorted(context.replicas_on_offline_dirs[b]) or partitions), max_size=3).map(tuple),
            )))
    used_ids = set(context.topic_ids.values())
    fresh_ids = st.uuids().filter(lambda u: u != ZERO_UUID and u not in used_ids)
    options.append(_topic_created(
        topic_names.filter(lambda t: t not in context.all_topics), st.one_of(st.none(), fresh_ids), pool, max_partitions
    ))
    without_id = [t for t in topics if t not in context.topic_ids]
    if without_id:
        options.append(st.builds(TopicIdAssigned, st.sampled_from(without_id), fresh_ids))
    if topics:
        options.append(st.builds(TopicDeletionQueued, st.sampled_from(topics)))
        options.append(st.builds(TopicDeletionStarted, st.sampled_from(topics)))
        options.append(st.builds(TopicRemoved, st.sampled_from(topics)))
    return st.one_of(options)


@st.composite
def _topic_created(
    draw: st.DrawFn,
    names: st.SearchStrategy[str],
    ids: st.SearchStrategy[uuid.UUID | None],
    pool: list[int],
    max_partitions: int,
) -> TopicCreated:
    assignments = draw(st.lists(replica_assignments(pool), min_size=1, max_size=max(max_partitions, 1)))
    leaders = tuple(
        (p, draw(leaderships(a.replicas, pool))) for p, a in enumerate(assignments) if draw(st.booleans())
    )
    return TopicCreated(draw(names), draw(ids), tuple(enumerate(assignments)), leaders)
