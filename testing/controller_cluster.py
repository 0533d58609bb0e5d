"""ControllerCluster: a KafkaController, an in-memory store and simulated brokers, for tests.

Rules:
- One ``InMemoryKafkaZkClient`` store; brokers register under their own sessions (their epoch is
  the registration's czxid) and stop by expiring that session, as real brokers do. Each live
  broker is a ``sim.broker_state.BrokerState``: it answers the controller's requests as a Kafka
  3.9 ZooKeeper-mode broker does (epoch checks, hosted partitions, a metadata cache) and keeps
  what it learnt, so a test can compare every broker's cache with the controller's view.
- The controller runs over a ``RecordingChannel``; ``settle()`` alternates ``process_events()``
  and answering what was sent until neither does anything (bounded: ``max_rounds``).
- ``fail_over(new_id)`` shuts the active controller down, closes its store session (its
  /controller goes) and starts a new KafkaController on a new session and channel over the same
  store, as another broker taking over.
- ``tick(ms)`` advances the clock and runs the controller's due scheduled task.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ctrlbatch.batch.transport import OutboundRequest
from ctrlbatch.context import Broker, EndPoint, LeaderIsrAndControllerEpoch, TopicPartition
from ctrlbatch.controller.channel import RecordingChannel
from ctrlbatch.controller.config import ControllerConfig
from ctrlbatch.controller.election import ElectionPolicy
from ctrlbatch.controller.kafka_controller import KafkaController
from ctrlbatch.controller.memory_store import InMemoryKafkaZkClient
from ctrlbatch.sim.broker_state import BrokerState
from ctrlbatch.sim.controller_logic import expected_view

__all__ = ["ControllerCluster", "broker_info"]


def broker_info(broker_id: int) -> Broker:
    """A broker with one PLAINTEXT listener on loopback."""
    return Broker(broker_id, [EndPoint("127.0.0.1", 9092 + broker_id, "PLAINTEXT", "PLAINTEXT")])


class ControllerCluster:
    """A store, a controller and simulated brokers (see the module rules)."""

    def __init__(
        self,
        broker_ids: list[int],
        *,
        controller_id: int = 0,
        election_policy: ElectionPolicy | None = None,
        start: bool = True,
        **config: Any,
    ) -> None:
        self.now_ms = 0
        self.store = InMemoryKafkaZkClient(time_ms=lambda: self.now_ms)
        self.brokers: dict[int, BrokerState] = {}
        self.config_overrides = config
        self.election_policy = election_policy
        self.unanswered: Callable[[int, OutboundRequest], bool] = lambda _b, _r: False
        """A test's filter: requests for which it returns True get no answer (a lost response)."""
        for b in broker_ids:
            self.start_broker(b)
        self.controller, self.channel = self._new_controller(controller_id)
        if start:
            self.controller.startup()
            self.settle()

    def _new_controller(self, controller_id: int) -> tuple[KafkaController, RecordingChannel]:
        channel = RecordingChannel()
        config = ControllerConfig(broker_id=controller_id, **self.config_overrides)
        controller = KafkaController(config, self.store.new_client(), channel, clock_ms=lambda: self.now_ms,
                                     election_policy=self.election_policy)
        return controller, channel

    def __repr__(self) -> str:
        return f"<ControllerCluster brokers {sorted(self.brokers)}, {self.controller!r}>"

    # ------------------------------------------------------------------ brokers

    def start_broker(self, broker_id: int) -> int:
        """Register a broker (a new session); returns its epoch."""
        epoch = self.store.register_broker(broker_info(broker_id))
        self.brokers[broker_id] = BrokerState(broker_id, epoch)
        return epoch

    def stop_broker(self, broker_id: int) -> None:
        """The broker dies: its session expires (its registration goes) and its state is lost."""
        self.store.expire_broker(broker_id)
        self.brokers.pop(broker_id, None)

    def broker_epoch(self, broker_id: int) -> int:
        return self.brokers[broker_id].broker_epoch

    # ------------------------------------------------------------------ driving

    def settle(self, max_rounds: int = 200, max_events: int = 10_000) -> int:
        """Process events and answer requests until quiet; returns the rounds used. A round that
        runs ``max_events`` events (a controller re-electing itself forever) fails the test."""
        for rounds in range(1, max_rounds + 1):
            ran = self.controller.process_events(max_events)
            if ran >= max_events:
                raise AssertionError(f"the controller ran {ran} events without its queue emptying: {self!r}")
            answered = self.channel.deliver_all(self._answer)
            if not ran and not answered:
                return rounds
        raise AssertionError(f"the cluster did not settle in {max_rounds} rounds: {self!r}")

    def _answer(self, broker_id: int, request: OutboundRequest) -> Any:
        state = self.brokers.get(broker_id)
        if state is None or self.unanswered(broker_id, request):
            return None
        return state.handle(request.api_key, request.version, request.body)

    def tick(self, ms: int) -> None:
        """Advance the clock by ``ms``, run what is due, settle."""
        self.now_ms += ms
        self.controller.run_scheduled(self.now_ms)
        self.settle()

    def stop_controller(self) -> None:
        """The controller's broker goes away: shut down, its store session closed (/controller goes)."""
        client = self.controller.zk_client
        if isinstance(client, InMemoryKafkaZkClient) and not client.closed:
            self.controller.shutdown()
            client.close()

    def fail_over(self, new_controller_id: int) -> KafkaController:
        """Another broker's controller takes over (see the module rules)."""
        self.stop_controller()
        self.controller, self.channel = self._new_controller(new_controller_id)
        self.controller.startup()
        self.settle()
        return self.controller

    # ------------------------------------------------------------------ reading

    def state(self, tp: TopicPartition) -> LeaderIsrAndControllerEpoch | None:
        """The partition's state znode."""
        return self.store.partition_state(tp)

    def leader_epoch_isr(self, tp: TopicPartition) -> tuple[int, int, tuple[int, ...]] | None:
        s = self.state(tp)
        return None if s is None else (s.leader_and_isr.leader, s.leader_and_isr.leader_epoch, s.leader_and_isr.isr)

    def caches_agree(self) -> list[int]:
        """The live brokers whose metadata cache differs from the controller's view (none when all agree).

        A cached topic id without cached partitions is left out of the comparison: a broker keeps
        a topic's id when a deletion (-2) state arrives for a partition it does not hold (Kafka's
        ZkMetadataCache.removePartitionInfo forgets the id only with the topic's last partition),
        which happens when a deletion's UpdateMetadata is resent after a failover or a restart.
        Topics queued for deletion whose deletion has not started are left out too: brokers learn
        of a deletion only when it starts (TDM:268), so until then they keep the topic's state."""
        ctx = self.controller.context
        want = expected_view(ctx)
        waiting = ctx.topics_queued_for_deletion - ctx.topics_with_deletion_started
        bad = []
        for b, state in self.brokers.items():
            view = state.cache.view()
            parts = {tp: p for tp, p in view.partitions.items() if tp.topic not in waiting}
            held = {tp.topic for tp in parts}
            ids = {t: i for t, i in view.topic_ids.items() if t in held}
            if view.brokers != want.brokers or parts != want.partitions or ids != want.topic_ids:
                bad.append(b)
        return sorted(bad)
