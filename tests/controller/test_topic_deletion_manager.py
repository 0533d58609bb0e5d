"""Kafka 3.9's TopicDeletionManagerTest (TDMT), every case, with Kafka's mock state machines
(conftest), plus delete.topic.enable=false and the ControllerDeletionClient over the store."""

from __future__ import annotations

from typing import Any

from ctrlbatch.context import PartitionAndReplica, PartitionState, ReplicaState, TopicPartition
from ctrlbatch.controller import ControllerDeletionClient, TopicDeletionManager
from ctrlbatch.controller import znodes as zn

R = ReplicaState
P = PartitionState


def _setup(ck: Any, topics: list[str]) -> tuple[Any, Any, Any, Any, TopicDeletionManager]:
    ctx = ck.init_context([1, 2, 3], topics, 2, 3)
    rsm = ck.MockReplicaStateMachine(ctx)
    rsm.startup()
    psm = ck.MockPartitionStateMachine(ctx, False, True)
    psm.startup()
    client = ck.RecordingDeletionClient()
    manager = TopicDeletionManager(ctx, rsm, psm, client)
    assert manager.is_delete_topic_enabled
    return ctx, rsm, psm, client, manager


def _replicas(ctx: Any, topic: str) -> set[PartitionAndReplica]:
    return ctx.replicas_for_partition(ctx.partitions_for_topic(topic))


def _states_of(ctx: Any, topic: str) -> set[PartitionAndReplica]:
    return {r for r in ctx.replica_states if r.topic == topic}


def test_initialization(ck: Any) -> None:
    ctx, _, _, _, manager = _setup(ck, ["foo", "bar", "baz"])
    manager.init({"foo", "bar"}, {"bar", "baz"})
    assert ctx.topics_queued_for_deletion == {"foo", "bar"}
    assert ctx.topics_ineligible_for_deletion == {"bar"}


def test_basic_deletion(ck: Any) -> None:
    ctx, rsm, psm, client, manager = _setup(ck, ["foo", "bar"])
    manager.init(set(), set())
    foo_partitions, bar_partitions = ctx.partitions_for_topic("foo"), ctx.partitions_for_topic("bar")
    foo_replicas, bar_replicas = _replicas(ctx, "foo"), _replicas(ctx, "bar")
    rsm.clear()
    psm.clear()
    manager.enqueue_topics_for_deletion({"foo", "bar"})
    assert ctx.partitions_in_state(P.NonExistentPartition, "foo") == foo_partitions
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionStarted) == foo_replicas
    assert ctx.partitions_in_state(P.NonExistentPartition, "bar") == bar_partitions
    assert ctx.replicas_in_state("bar", R.ReplicaDeletionStarted) == bar_replicas
    assert client.calls == [("send_metadata_update", frozenset(foo_partitions | bar_partitions))]
    assert ctx.topics_queued_for_deletion == {"foo", "bar"}
    assert ctx.topics_with_deletion_started == {"foo", "bar"}
    assert ctx.topics_ineligible_for_deletion == set()

    manager.complete_replica_deletion(foo_replicas | bar_replicas)
    for topic in ("foo", "bar"):
        assert ctx.partitions_for_topic(topic) == set()
        assert _states_of(ctx, topic) == set()
    assert ctx.topics_queued_for_deletion == set()
    assert ctx.topics_with_deletion_started == set()
    assert ctx.topics_ineligible_for_deletion == set()
    assert psm.state_changes_calls(P.OfflinePartition) == 1
    assert psm.state_changes_calls(P.NonExistentPartition) == 1
    assert rsm.state_changes_calls(R.ReplicaDeletionIneligible) == 1
    assert rsm.state_changes_calls(R.OfflineReplica) == 1
    assert rsm.state_changes_calls(R.ReplicaDeletionStarted) == 1
    assert rsm.state_changes_calls(R.ReplicaDeletionSuccessful) == 1
    # completion: mute, NonExistent, delete, per topic, in order
    assert [c[0] for c in client.calls[1:]] == ["mute_partition_modifications", "delete_topic"] * 2


def test_deletion_with_broker_offline(ck: Any) -> None:
    ctx, rsm, _, client, manager = _setup(ck, ["foo", "bar"])
    manager.init(set(), set())
    foo_partitions = ctx.partitions_for_topic("foo")
    foo_replicas = _replicas(ctx, "foo")
    offline_broker = ctx.live_or_shutting_down_broker(2)
    last_epoch = ctx.live_broker_id_and_epochs[2]
    ctx.remove_live_brokers({2})
    assert ctx.live_broker_ids == {1, 3}
    offline = {r for r in foo_replicas if r.replica == 2}
    online = foo_replicas - offline
    rsm.handle_state_changes(sorted(offline, key=str), R.OfflineReplica)

    manager.enqueue_topics_for_deletion({"foo"})
    assert ctx.partitions_in_state(P.NonExistentPartition, "foo") == foo_partitions
    assert client.calls == [("send_metadata_update", frozenset(foo_partitions))]
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionStarted) == online
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionIneligible) == offline
    assert (ctx.topics_queued_for_deletion, ctx.topics_with_deletion_started, ctx.topics_ineligible_for_deletion) == (
        {"foo"}, {"foo"}, {"foo"})

    manager.complete_replica_deletion(online)
    assert ctx.partitions_in_state(P.NonExistentPartition, "foo") == foo_partitions
    assert (ctx.topics_queued_for_deletion, ctx.topics_with_deletion_started, ctx.topics_ineligible_for_deletion) == (
        {"foo"}, {"foo"}, {"foo"})
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionSuccessful) == online
    assert ctx.replicas_in_state("foo", R.OfflineReplica) == offline

    ctx.add_live_brokers({offline_broker: last_epoch + 1})
    manager.resume_deletion_for_topics({"foo"})
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionSuccessful) == online
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionStarted) == offline

    manager.complete_replica_deletion(offline)
    assert ctx.partitions_for_topic("foo") == set()
    assert _states_of(ctx, "foo") == set()
    assert (ctx.topics_queued_for_deletion, ctx.topics_with_deletion_started, ctx.topics_ineligible_for_deletion) == (
        set(), set(), set())


def test_broker_failure_after_deletion_started(ck: Any) -> None:
    ctx, _, _, _, manager = _setup(ck, ["foo", "bar"])
    manager.init(set(), set())
    foo_partitions = ctx.partitions_for_topic("foo")
    foo_replicas = _replicas(ctx, "foo")
    manager.enqueue_topics_for_deletion({"foo"})
    assert ctx.partitions_in_state(P.NonExistentPartition, "foo") == foo_partitions
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionStarted) == foo_replicas

    offline_broker = ctx.live_or_shutting_down_broker(2)
    last_epoch = ctx.live_broker_id_and_epochs[2]
    ctx.remove_live_brokers({2})
    assert ctx.live_broker_ids == {1, 3}
    offline = {r for r in foo_replicas if r.replica == 2}
    online = foo_replicas - offline

    manager.fail_replica_deletion(offline)
    assert (ctx.topics_queued_for_deletion, ctx.topics_with_deletion_started, ctx.topics_ineligible_for_deletion) == (
        {"foo"}, {"foo"}, {"foo"})
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionIneligible) == offline
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionStarted) == online

    ctx.add_live_brokers({offline_broker: last_epoch + 1})
    manager.resume_deletion_for_topics({"foo"})
    assert (ctx.topics_queued_for_deletion, ctx.topics_with_deletion_started, ctx.topics_ineligible_for_deletion) == (
        {"foo"}, {"foo"}, set())
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionStarted) == online
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionIneligible) == offline

    manager.complete_replica_deletion(online)
    assert (ctx.topics_queued_for_deletion, ctx.topics_with_deletion_started, ctx.topics_ineligible_for_deletion) == (
        {"foo"}, {"foo"}, set())
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionSuccessful) == online
    assert ctx.replicas_in_state("foo", R.ReplicaDeletionStarted) == offline


# ------------------------------------------------------------------ beyond Kafka's cases


def test_delete_topic_disabled_removes_the_requests_instead(ck: Any) -> None:
    ctx = ck.init_context([1, 2, 3], ["foo"], 2, 3)
    rsm, psm, client = ck.MockReplicaStateMachine(ctx), ck.MockPartitionStateMachine(ctx), ck.RecordingDeletionClient()
    manager = TopicDeletionManager(ctx, rsm, psm, client, delete_topic_enable=False)
    ctx.epoch_zk_version = 7
    manager.init({"foo"}, {"foo"})
    assert client.calls == [("delete_topic_deletions", ("foo",), 7)]
    assert ctx.topics_queued_for_deletion == set()
    manager.enqueue_topics_for_deletion({"foo"})
    assert ctx.topics_queued_for_deletion == set()
    assert not manager.is_topic_queued_up_for_deletion("foo")
    assert rsm.state_changes_by_target_state == {} and psm.state_changes_by_target_state == {}


def test_controller_deletion_client_deletes_the_znodes(ck: Any) -> None:
    store = ck.new_store()
    store.create_topic("foo", [[1, 2]])
    store.set_topic_config("foo", {"unclean.leader.election.enable": "true"})
    store.delete_topic("foo")
    from ctrlbatch.context import LeaderAndIsr, LeaderIsrAndControllerEpoch

    store.set_partition_state(TopicPartition("foo", 0), LeaderIsrAndControllerEpoch(LeaderAndIsr(1, [1, 2]), 50))
    ctx = ck.init_context([1, 2], ["foo"], 1, 2)
    muted: list[list[str]] = []
    sent: list[tuple[list[int], set[TopicPartition]]] = []
    client = ControllerDeletionClient(ctx, store, unregister_partition_modifications_handlers=lambda t: muted.append(list(t)),
                                      send_update_metadata_request=lambda b, p: sent.append((list(b), p)))
    client.mute_partition_modifications("foo")
    client.send_metadata_update([TopicPartition("foo", 0)])
    client.delete_topic("foo", 0)
    assert muted == [["foo"]]
    assert sent == [([1, 2], {TopicPartition("foo", 0)})]
    for path in (zn.topic_path("foo"), zn.partition_state_path(TopicPartition("foo", 0)), zn.topic_config_path("foo"),
                 zn.delete_topic_path("foo")):
        assert store.get_data(path) == (None, None)


def test_deletion_end_to_end_with_the_zk_state_machines(ck: Any) -> None:
    """TDM over ZkPartitionStateMachine, ZkReplicaStateMachine and ControllerDeletionClient: the
    requests the brokers get and what the store holds at each step."""
    from ctrlbatch.batch import ControllerBrokerRequestBatch, RecordingTransport
    from ctrlbatch.controller import (
        OfflinePartitionLeaderElectionStrategy,
        ZkPartitionStateMachine,
        ZkReplicaStateMachine,
    )
    from ctrlbatch.requests import StopReplicaRequest

    h = ck.Harness()
    h.live(1, 2, 3)
    partitions = [TopicPartition("foo", p) for p in range(2)]
    for tp in partitions:
        h.assign(tp, [1, 2, 3])
    replicas = [PartitionAndReplica(tp, r) for tp in partitions for r in (1, 2, 3)]
    transport = RecordingTransport()
    psm = ZkPartitionStateMachine(5, h.ctx, h.store, ControllerBrokerRequestBatch(5, h.ctx, "3.9-IV0", transport))
    rsm = ZkReplicaStateMachine(5, h.ctx, h.store, ControllerBrokerRequestBatch(5, h.ctx, "3.9-IV0", transport))
    psm.handle_state_changes(partitions, P.NewPartition)
    rsm.handle_state_changes(replicas, R.NewReplica)
    psm.handle_state_changes(partitions, P.OnlinePartition, OfflinePartitionLeaderElectionStrategy(False))
    rsm.handle_state_changes(replicas, R.OnlineReplica)
    sent_umr: list[set[TopicPartition]] = []
    client = ControllerDeletionClient(
        h.ctx, h.store, unregister_partition_modifications_handlers=lambda topics: None,
        send_update_metadata_request=lambda brokers, parts: sent_umr.append(set(parts)),
    )
    manager = TopicDeletionManager(h.ctx, rsm, psm, client)
    h.store.delete_topic("foo")
    transport.clear()
    manager.enqueue_topics_for_deletion({"foo"})
    assert sent_umr == [set(partitions)]
    assert h.ctx.replicas_in_state("foo", R.ReplicaDeletionStarted) == set(replicas)
    # each broker: StopReplica without delete (Offline), then with delete (Started), leader epoch -2
    for b in (1, 2, 3):
        stops = [r.body for r in transport.requests_for(b) if isinstance(r.body, StopReplicaRequest)]
        states = [(ps.partition_index, ps.leader_epoch, ps.delete_partition)
                  for body in stops for ts in body.topic_states for ps in ts.partition_states]
        assert states == [(0, -2, False), (1, -2, False), (0, -2, True), (1, -2, True)]
    # the ISR shrank in the store but no LeaderAndIsr went out (the topic is queued)
    assert all(r.api_key != 4 for b in (1, 2, 3) for r in transport.requests_for(b))
    for tp in partitions:
        stored = h.store.partition_state(tp)
        assert stored is not None and stored.leader_and_isr.leader == -1 and len(stored.leader_and_isr.isr) == 1
    manager.complete_replica_deletion(replicas)
    assert h.ctx.topics_queued_for_deletion == set() and "foo" not in h.ctx.partitions_being_reassigned
    assert h.ctx.partitions_for_topic("foo") == set() and h.ctx.replica_states == {}
    assert h.store.get_data(zn.topic_path("foo")) == (None, None)
    assert h.store.get_topic_deletions() == []
