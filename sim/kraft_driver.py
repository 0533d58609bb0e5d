"""KraftDriver: the KRaft controller in migration mode that drives ZooKeeper-mode brokers (today's SimController).

Rules:
- Membership is the endpoint's: registration events go through membership.Membership (a broker
  joins the controller's view when unfenced; fenced, shut-down and forgotten brokers leave it).
- Decisions are SimController's (controller_logic.py), not a KRaft controller's: what it still
  simplifies is listed there and in the README (leaders chosen "first live ISR replica, else first
  live replica", unclean always allowed, a crashed broker not removed from follower ISRs,
  reassignment assumes the new replicas caught up at once, no preferred or automatic election,
  no partition expansion). The scenarios that need those run in zk mode only.
- Controlled shutdown is KRaft's: the broker asks through its heartbeats (WantShutDown) and the
  endpoint answers ShouldShutDown once it leads nothing (``leads_partitions``, which reads a set
  this driver keeps, so the endpoint's thread never iterates the controller's maps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctrlbatch.context import ControllerContext, MetadataVersion, TopicPartition

from .controller_logic import Channel, SimController
from .controller_state import BrokerEvent, Registration
from .membership import Membership

__all__ = ["KraftDriver"]


class KraftDriver:
    """SimController behind the endpoint's membership events (see the module rules)."""

    name = "kraft"
    busy = False

    def __init__(self, channel: Channel, *, controller_id: int = 3000,
                 metadata_version: MetadataVersion = MetadataVersion.IBP_3_9_IV0) -> None:
        self.controller = SimController(channel, controller_id=controller_id, metadata_version=metadata_version)
        self.membership = Membership(self.controller)
        self.leaders: frozenset[int] = frozenset()
        """Brokers that lead a partition, refreshed after every step (read by the endpoint's thread)."""

    def __repr__(self) -> str:
        return f"KraftDriver({self.controller!r})"

    @property
    def ctx(self) -> ControllerContext:
        return self.controller.ctx

    @property
    def epoch(self) -> int:
        return self.controller.epoch

    @property
    def deletions_pending(self) -> int:
        return self.controller.deletions_pending

    def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def _refresh_leaders(self) -> None:
        self.leaders = frozenset(info.leader_and_isr.leader for info in self.ctx.partitions_leadership_info.values())

    def on_broker_event(self, event: BrokerEvent, reg: Registration | None) -> None:
        self.membership.apply({} if reg is None else {event.broker_id: reg}, [event])
        self._refresh_leaders()

    def live_broker_ids(self) -> list[int]:
        return sorted(self.ctx.live_or_shutting_down_broker_ids)

    def failover(self) -> None:
        self.controller.failover()

    def create_topics(self, assignments: Mapping[str, Sequence[Sequence[int]]]) -> None:
        self.controller.create_topics(assignments)
        self._refresh_leaders()

    def delete_topics(self, topics: Sequence[str]) -> None:
        self.controller.delete_topics(topics)
        self._refresh_leaders()

    def reassign(self, targets: Mapping[TopicPartition, Sequence[int]], callback: Any) -> None:
        for tp, target in targets.items():
            self.controller.reassign(tp, target)
        self._refresh_leaders()
        callback({})
