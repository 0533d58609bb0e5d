"""``ControllerChannelContext``: the read-only view of the cluster that the request batch consumes.

Rules:
- Exactly the ten members of Kafka's ``ControllerChannelContext`` trait, in snake_case; the batch
  must read cluster state through nothing else, so any object implementing these can feed it.
- Collections are returned as read-only views typed by their abstract interfaces. Implementations
  must not copy on each call (the batch calls some of them once per partition).
- ``live_or_shutting_down_brokers`` iterates in the implementation's broker order; the batch emits
  UpdateMetadata's live-broker list in that order.
- ``UpdateMetadataHints`` is optional and beyond Kafka: two members a context may offer so the
  batch reads less per LeaderAndIsr add (``ControllerContext`` does). The batch checks for it
  once per ``new_batch`` and otherwise derives the same answers from the ten members above.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Protocol, TypeAlias, runtime_checkable

from .broker import Broker
from .leader_and_isr import LeaderIsrAndControllerEpoch
from .topic_partition import TopicPartition

__all__ = ["ChannelContextHints", "ControllerChannelContext", "UpdateMetadataHints", "UpdateMetadataView"]


@runtime_checkable
class ControllerChannelContext(Protocol):
    """What the controller-to-broker batch needs to know about the cluster."""

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        """Whether deletion of ``topic`` has *started* (not merely been queued)."""
        ...

    @property
    def topic_ids(self) -> Mapping[str, uuid.UUID]:
        """Topic name to topic id; a topic may have no id yet."""
        ...

    @property
    def live_broker_id_and_epochs(self) -> Mapping[int, int]:
        """Live-or-shutting-down broker id to broker epoch."""
        ...

    @property
    def live_or_shutting_down_brokers(self) -> AbstractSet[Broker]:
        """Registered brokers, shutting-down ones included, in broker order."""
        ...

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        """Whether ``topic`` is queued for deletion (started or not)."""
        ...

    def is_replica_online(self, broker_id: int, partition: TopicPartition) -> bool:
        """Live, not shutting down, and ``partition`` not on one of the broker's offline log dirs."""
        ...

    def partition_replica_assignment(self, partition: TopicPartition) -> Sequence[int]:
        """The full replica list of ``partition``; empty when unknown."""
        ...

    def leader_epoch(self, partition: TopicPartition) -> int:
        """-2 if the topic is queued for deletion, else the cached leader epoch, else -1."""
        ...

    @property
    def live_or_shutting_down_broker_ids(self) -> AbstractSet[int]:
        """Ids of live brokers, shutting-down ones included."""
        ...

    def partition_leadership_info(self, partition: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        """The cached leadership of ``partition``, if any."""
        ...


UpdateMetadataView: TypeAlias = tuple[LeaderIsrAndControllerEpoch, tuple[int, ...], tuple[int, ...], bool]
"""(leadership, replicas, offline replicas, topic queued for deletion): what an UpdateMetadata
partition state is built from (kafka-controller-batch-semantics.md §6 (a))."""


@runtime_checkable
class UpdateMetadataHints(Protocol):
    """Optional, beyond Kafka: shortcuts for the batch's per-partition UpdateMetadata reads."""

    @property
    def broker_membership_version(self) -> int:
        """Changes whenever the live-or-shutting-down broker set changes (so an unchanged set
        need not be re-added to the UpdateMetadata destinations on every LeaderAndIsr add)."""
        ...

    def update_metadata_view(self, partition: TopicPartition) -> UpdateMetadataView | None:
        """All of an UpdateMetadata partition state's inputs in one call; None without leadership.
        Must equal what the ten ControllerChannelContext members give."""
        ...


class ChannelContextHints:
    """UpdateMetadataHints derived from the ten ControllerChannelContext members, for a context
    that does not offer them (so the batch has one code path whatever the context)."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: ControllerChannelContext) -> None:
        self._ctx = ctx

    @property
    def broker_membership_version(self) -> int:
        """Unknown, so never the same twice: the batch re-reads the broker set on every add."""
        return next(_FRESH)

    def update_metadata_view(self, partition: TopicPartition) -> UpdateMetadataView | None:
        ctx = self._ctx
        info = ctx.partition_leadership_info(partition)
        if info is None:
            return None
        replicas = tuple(ctx.partition_replica_assignment(partition))
        online = ctx.is_replica_online
        offline = tuple([r for r in replicas if not online(r, partition)])
        return info, replicas, offline, ctx.is_topic_queued_up_for_deletion(partition.topic)


_FRESH = itertools.count()
