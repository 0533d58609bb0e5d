"""Kafka's controller invariants over random event histories (hypothesis RuleBasedStateMachine).

A ControllerCluster (testing/controller_cluster.py: an in-memory store, a KafkaController over a
RecordingChannel, simulated 3.9 brokers answering every request) goes through random broker
failures, restarts and bounces, controlled shutdowns (followed by the broker stopping, as a
broker does), topic creations, partition expansions, deletions (answered by StopReplica),
reassignments through the API or the znode (the ISR catching up through AlterPartition or an
ISR-change notification), cancels, preferred and unclean admin elections, znode-triggered
preferred elections, per-topic unclean enables, log-dir failures, auto-rebalance ticks, the
controller's session expiring (it re-elects itself) and controller failovers (a new
KafkaController over the same store).

After every step the cluster settles (all events processed, all responses delivered), then:
- exactly one controller is active, and it is ours;
- every partition of a topic not queued for deletion with a state znode: the leader is -1 or a
  registered broker in the ISR (an unclean election's leader is too: its ISR is [leader]);
  the ISR is non-empty and within the assigned replicas (a leaderless partition may keep one
  last member outside them: Kafka never empties an ISR);
- no partition's leader epoch or znode version (partition epoch) ever falls;
- no send was dropped for a broker the channel did not know, and the channel's brokers are the
  controller's live-or-shutting-down brokers, which are the registered ones;
- every live broker's metadata cache equals the controller's view (ControllerCluster.caches_agree
  states the two Kafka-faithful exceptions: ids of topics the broker holds no partition of, and
  topics queued for deletion whose deletion has not started).
The default run is short (CI); ``CTRLBATCH_LONG_STATE_MACHINE=1`` runs a long one.
"""

from __future__ import annotations

import os
from typing import Any

import attrs
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ctrlbatch.context import LeaderIsrAndControllerEpoch, TopicPartition
from ctrlbatch.controller.alter_partition import (
    AlterPartitionPartitionData,
    AlterPartitionRequest,
    AlterPartitionTopicData,
)
from ctrlbatch.controller.events import ElectionType
from ctrlbatch.controller.znodes import PREFERRED_REPLICA_ELECTION_PATH, REASSIGN_PARTITIONS_PATH
from ctrlbatch.testing.controller_cluster import ControllerCluster

BROKERS = [0, 1, 2, 3]
TOPICS = ["a", "b", "c"]
LONG = os.environ.get("CTRLBATCH_LONG_STATE_MACHINE") == "1"

replica_lists = st.lists(st.sampled_from(BROKERS), min_size=1, max_size=3, unique=True)


class ControllerMachine(RuleBasedStateMachine):
    """See the module docstring."""

    def __init__(self) -> None:
        super().__init__()
        self.c: ControllerCluster
        self.epochs: dict[TopicPartition, tuple[int, int]] = {}

    @initialize(live=st.sets(st.sampled_from(BROKERS), min_size=1), controller=st.sampled_from(BROKERS))
    def start(self, live: set[int], controller: int) -> None:
        self.c = ControllerCluster(sorted(live), controller_id=controller, leader_imbalance_check_interval_seconds=1)

    # ------------------------------------------------------------------ helpers

    def topics(self) -> list[str]:
        return sorted(t for t in TOPICS if self.c.store.path_exists(f"/brokers/topics/{t}"))

    def live_topics(self) -> list[str]:
        return [t for t in self.topics() if not self.c.store.path_exists(f"/admin/delete_topics/{t}")]

    def partitions(self) -> list[TopicPartition]:
        return sorted(self.c.store.get_full_replica_assignment_for_topics(self.live_topics()))

    def dead(self) -> list[int]:
        return [b for b in BROKERS if b not in self.c.brokers]

    def send_alter_partition(self, tp: TopicPartition, isr: list[int]) -> None:
        """The leader's AlterPartition with the epochs it last learnt (the controller's cache)."""
        ctx = self.c.controller.context
        lai = ctx.partition_leader_and_isr(tp)
        topic_id = ctx.topic_ids.get(tp.topic)
        if lai is None or lai.leader not in self.c.brokers or topic_id is None:
            return
        request = AlterPartitionRequest(lai.leader, self.c.broker_epoch(lai.leader), [AlterPartitionTopicData(
            [AlterPartitionPartitionData(tp.partition, lai.leader_epoch, isr, int(lai.leader_recovery_state), lai.partition_epoch)],
            topic_id=topic_id,
        )])
        self.c.controller.alter_partition(request, 3, lambda _r: None)

    def caught_up_isr(self, tp: TopicPartition) -> list[int] | None:
        """The ISR once every live, not shutting-down replica caught up with the leader."""
        ctx = self.c.controller.context
        lai = ctx.partition_leader_and_isr(tp)
        if lai is None or lai.leader < 0:
            return None
        live = ctx.live_broker_ids
        joining = [r for r in ctx.partition_replica_assignment(tp) if r in live and r not in lai.isr]
        return [*lai.isr, *joining] if joining else None

    # ------------------------------------------------------------------ brokers

    @precondition(lambda self: len(self.c.brokers) > 0)
    @rule(data=st.data())
    def stop_broker(self, data: st.DataObject) -> None:
        self.c.stop_broker(data.draw(st.sampled_from(sorted(self.c.brokers))))
        self.c.settle()

    @precondition(lambda self: len(self.c.brokers) < len(BROKERS))
    @rule(data=st.data())
    def start_broker(self, data: st.DataObject) -> None:
        self.c.start_broker(data.draw(st.sampled_from(self.dead())))
        self.c.settle()

    @precondition(lambda self: len(self.c.brokers) > 0)
    @rule(data=st.data())
    def bounce_broker(self, data: st.DataObject) -> None:
        b = data.draw(st.sampled_from(sorted(self.c.brokers)))
        self.c.stop_broker(b)
        self.c.start_broker(b)
        self.c.settle()

    @precondition(lambda self: len(self.c.brokers) > 0)
    @rule(data=st.data())
    def controlled_shutdown_then_stop(self, data: st.DataObject) -> None:
        b = data.draw(st.sampled_from(sorted(self.c.brokers)))
        got: list[Any] = []
        self.c.controller.controlled_shutdown(b, self.c.broker_epoch(b), got.append)
        self.c.settle()
        assert len(got) == 1 and isinstance(got[0], frozenset), got
        ctx = self.c.controller.context
        for tp in got[0]:  # still led by b: no other ISR member could take over
            lai = ctx.partition_leader_and_isr(tp)
            assert lai is not None and lai.leader == b
        self.c.stop_broker(b)
        self.c.settle()

    @precondition(lambda self: len(self.c.brokers) > 0)
    @rule(data=st.data())
    def log_dir_failure(self, data: st.DataObject) -> None:
        b = data.draw(st.sampled_from(sorted(self.c.brokers)))
        hosted = sorted(self.c.brokers[b].partitions)
        if not hosted:
            return
        self.c.brokers[b].offline.add(data.draw(st.sampled_from(hosted)))
        self.c.store.notify_log_dir_event(b)
        self.c.settle()

    # ------------------------------------------------------------------ topics

    @rule(topic=st.sampled_from(TOPICS), assignment=st.lists(replica_lists, min_size=1, max_size=3))
    def create_topic(self, topic: str, assignment: list[list[int]]) -> None:
        if topic in self.topics():
            return
        self.c.store.create_topic(topic, assignment)
        self.c.settle()

    @rule(data=st.data(), replicas=replica_lists)
    def add_partition(self, data: st.DataObject, replicas: list[int]) -> None:
        topics = self.live_topics()
        if not topics:
            return
        topic = data.draw(st.sampled_from(topics))
        count = len(self.c.store.get_full_replica_assignment_for_topics({topic}))
        self.c.store.add_partitions(topic, {count: replicas})
        self.c.settle()

    @rule(data=st.data())
    def delete_topic(self, data: st.DataObject) -> None:
        topics = self.live_topics()
        if topics:
            topic = data.draw(st.sampled_from(topics))
            self.c.store.delete_topic(topic)
            self.c.settle()

    # ------------------------------------------------------------------ reassignment and ISR

    @rule(data=st.data(), replicas=replica_lists, via_api=st.booleans())
    def reassign(self, data: st.DataObject, replicas: list[int], via_api: bool) -> None:
        # Only partitions with a state znode: reassigning one without makes every later failover
        # fail and re-elect forever in Kafka too (test_reassigning_a_partition_without_state_...).
        partitions = [tp for tp in self.partitions() if self.c.state(tp) is not None]
        if not partitions:
            return
        tp = data.draw(st.sampled_from(partitions))
        if via_api:
            self.c.controller.alter_partition_reassignments({tp: replicas}, lambda _r: None)
        elif not self.c.store.path_exists(REASSIGN_PARTITIONS_PATH):
            self.c.store.reassign_partitions({tp: replicas})
        self.c.settle()

    @rule(data=st.data())
    def cancel_reassignment(self, data: st.DataObject) -> None:
        reassigning = sorted(self.c.controller.context.partitions_being_reassigned)
        if reassigning:
            self.c.controller.alter_partition_reassignments({data.draw(st.sampled_from(reassigning)): None}, lambda _r: None)
            self.c.settle()

    @rule(data=st.data(), via_notification=st.booleans())
    def isr_catches_up(self, data: st.DataObject, via_notification: bool) -> None:
        candidates = [tp for tp in self.partitions() if self.caught_up_isr(tp) is not None]
        if not candidates:
            return
        tp = data.draw(st.sampled_from(candidates))
        isr = self.caught_up_isr(tp)
        assert isr is not None
        if via_notification:  # a leader below IBP 2.7-IV2 writes the state znode and notifies
            info = self.c.controller.context.partition_leadership_info(tp)
            assert info is not None
            lai = info.leader_and_isr
            self.c.store.set_partition_state(tp, LeaderIsrAndControllerEpoch(attrs.evolve(lai, isr=isr), info.controller_epoch))
            self.c.store.notify_isr_change([tp])
        else:
            self.send_alter_partition(tp, isr)
        self.c.settle()

    # ------------------------------------------------------------------ elections, time, failover

    @rule(data=st.data(), election_type=st.sampled_from(ElectionType))
    def admin_election(self, data: st.DataObject, election_type: ElectionType) -> None:
        # Partitions never brought online have no leadership; Kafka's handler then fails on
        # Option.get and never answers (test_elect_leaders_for_a_partition_without_state_never_answers).
        ctx = self.c.controller.context
        partitions = [tp for tp in self.partitions() if ctx.partition_leadership_info(tp) is not None]
        if not partitions:
            return
        chosen = data.draw(st.lists(st.sampled_from(partitions), min_size=1, max_size=3, unique=True))
        got: list[Any] = []
        self.c.controller.elect_leaders(chosen, election_type, got.append)
        self.c.settle()
        assert len(got) == 1 and set(got[0]) == set(chosen), got

    @rule(data=st.data())
    def zk_preferred_election(self, data: st.DataObject) -> None:
        ctx = self.c.controller.context  # a partition without leadership fails the event (as admin_election says)
        partitions = [tp for tp in self.partitions() if ctx.partition_leadership_info(tp) is not None]
        if partitions and not self.c.store.path_exists(PREFERRED_REPLICA_ELECTION_PATH):
            self.c.store.elect_preferred_replicas(data.draw(st.lists(st.sampled_from(partitions), min_size=1, max_size=3)))
            self.c.settle()
            assert not self.c.store.path_exists(PREFERRED_REPLICA_ELECTION_PATH)

    @rule(data=st.data())
    def topic_unclean_leader_election_enabled(self, data: st.DataObject) -> None:
        topics = self.live_topics()
        if topics:
            topic = data.draw(st.sampled_from(topics))
            self.c.store.set_topic_config(topic, {"unclean.leader.election.enable": "true"})
            self.c.controller.enable_topic_unclean_leader_election(topic)
            self.c.settle()

    @rule()
    def controller_session_expires(self) -> None:
        epoch = self.c.controller.epoch
        self.c.store.expire_session(self.c.controller.zk_client.session_id)  # type: ignore[attr-defined]
        self.c.settle()
        assert self.c.controller.epoch == epoch + 1

    @rule(ms=st.integers(min_value=500, max_value=6_000))
    def tick(self, ms: int) -> None:
        self.c.tick(ms)

    @rule(new_controller=st.sampled_from(BROKERS))
    def fail_over(self, new_controller: int) -> None:
        self.c.fail_over(new_controller)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def one_active_controller(self) -> None:
        if not hasattr(self, "c"):
            return
        assert self.c.controller.is_active
        assert self.c.store.get_controller_id() == self.c.controller.config.broker_id
        assert self.c.controller.event_manager.is_empty and self.c.channel.pending == []

    @invariant()
    def leaders_live_and_in_isr_within_replicas(self) -> None:
        if not hasattr(self, "c"):
            return
        store = self.c.store
        assignments = store.get_full_replica_assignment_for_topics(self.live_topics())
        for tp, assignment in assignments.items():
            s = store.partition_state(tp)
            if s is None:
                continue
            lai = s.leader_and_isr
            assert lai.isr, (tp, lai)
            if lai.leader == -1:
                # Kafka never shrinks an ISR below one member (RSM:341-348): a leaderless
                # partition may keep a last member that a cancelled reassignment removed
                assert set(lai.isr) <= set(assignment.replicas) or len(lai.isr) == 1, (tp, lai, assignment)
            else:
                assert set(lai.isr) <= set(assignment.replicas), (tp, lai, assignment)
                assert lai.leader in self.c.brokers, (tp, lai, sorted(self.c.brokers))
                assert lai.leader in lai.isr, (tp, lai)
            assert s.controller_epoch <= self.c.controller.epoch

    @invariant()
    def epochs_never_fall(self) -> None:
        if not hasattr(self, "c"):
            return
        existing = set(self.topics())
        for tp in [tp for tp in self.epochs if tp.topic not in existing]:
            del self.epochs[tp]  # deleted: a re-created topic starts again at 0
        for tp in self.c.store.get_full_replica_assignment_for_topics(existing):
            s = self.c.store.partition_state(tp)
            if s is None:
                continue
            now = (s.leader_and_isr.leader_epoch, s.leader_and_isr.partition_epoch)
            before = self.epochs.get(tp)
            if before is not None:
                assert now[0] >= before[0] and now[1] >= before[1], (tp, before, now)
            self.epochs[tp] = now

    @invariant()
    def sends_only_to_live_brokers(self) -> None:
        if not hasattr(self, "c"):
            return
        assert self.c.channel.dropped == []
        registered = set(self.c.store.get_sorted_broker_list())
        assert set(self.c.channel.brokers) == set(self.c.controller.context.live_or_shutting_down_broker_ids) == registered

    @invariant()
    def broker_caches_match_the_controller(self) -> None:
        if not hasattr(self, "c"):
            return
        assert self.c.caches_agree() == []


ControllerMachine.TestCase.settings = settings(
    max_examples=400 if LONG else 30,
    stateful_step_count=100 if LONG else 40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestControllerMachine = ControllerMachine.TestCase
