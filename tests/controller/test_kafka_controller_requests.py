"""KafkaController handlers, request by request: what each event sends, to whom, in which order."""

from __future__ import annotations

from typing import Any

import attrs

from ctrlbatch.context import Broker, EndPoint, LeaderIsrAndControllerEpoch, TopicPartition
from ctrlbatch.controller.events import BrokerModifications, ControllerState, UpdateMetadataResponseReceived
from ctrlbatch.requests import UpdateMetadataResponse
from ctrlbatch.testing.controller_cluster import ControllerCluster

LAIR, SR, UMR = 4, 5, 6
TP = TopicPartition("t", 0)


def sent(c: ControllerCluster) -> list[tuple[int, int, Any]]:
    return [(b, r.api_key, r.body) for b, r in c.channel.history]


def umr_partitions(body: Any) -> list[tuple[str, int, int]]:
    return [(t.topic_name, s.partition_index, s.leader) for t in body.topic_states for s in t.partition_states]


def test_failover_tells_every_broker_the_live_brokers_before_any_leader_and_isr() -> None:
    """KC:309-314: UpdateMetadata with no partitions to every broker, then the state machines."""
    c = ControllerCluster([0, 1, 2], controller_id=0, auto_leader_rebalance_enable=False)
    c.store.create_topic("t", [[1, 2]])
    c.settle()
    c.fail_over(2)
    history = sent(c)
    first = {b: (api, body) for b, api, body in reversed(history)}  # each broker's first request
    for b in (0, 1, 2):
        api, body = first[b]
        assert api == UMR and umr_partitions(body) == [] and [x.id for x in body.live_brokers] == [0, 1, 2]
        assert body.controller_epoch == 2
    assert {b for b, api, _ in history if api == LAIR} == {1, 2}  # the RSM's OnlineReplica at startup
    assert c.caches_agree() == []


def test_broker_startup_sends_no_partitions_to_the_others_and_all_leaders_to_the_new_one() -> None:
    """KC:576-583 (KAFKA-7537); a topic queued for deletion is left out."""
    c = ControllerCluster([0, 1], controller_id=0)
    c.store.create_topic("t", [[0, 1]])
    c.store.create_topic("gone", [[0]])
    c.settle()
    c.stop_broker(0)
    c.settle()
    c.store.delete_topic("gone")  # stuck: its only replica is down
    c.settle()
    c.channel.clear()
    c.start_broker(2)
    c.settle()
    umrs = [(b, body) for b, api, body in sent(c) if api == UMR]
    assert umrs[0][0] == 1 and umr_partitions(umrs[0][1]) == []
    assert umrs[1][0] == 2 and umr_partitions(umrs[1][1]) == [("t", 0, 1)]


def test_controlled_shutdown_stops_followers_from_the_controllers_own_batch_first() -> None:
    """KC:1394-1404: PSM election for led partitions, then StopReplica(false) from the controller's
    batch, then the RSM's OfflineReplica batch (another StopReplica(false), LeaderAndIsr)."""
    c = ControllerCluster([0, 1, 2], controller_id=0)
    c.store.create_topic("t", [[1, 0, 2], [0, 1, 2]])
    c.settle()
    c.channel.clear()
    got: list[Any] = []
    c.controller.controlled_shutdown(1, c.broker_epoch(1), got.append)
    c.settle()
    assert got == [frozenset()]
    to_1 = [(api, body) for b, api, body in sent(c) if b == 1]
    kinds = [api for api, _ in to_1]
    # PSM batch (LeaderAndIsr to the shutting-down broker too, PSMT:220-223), then our StopReplica
    assert kinds[:3] == [LAIR, UMR, SR]
    stops = [[(t.topic_name, s.partition_index, s.delete_partition) for t in body.topic_states for s in t.partition_states]
             for api, body in to_1 if api == SR]
    assert stops[0] == [("t", 1, False)] and ("t", 1, False) in stops[1]


def test_reassignment_below_ibp_2_7_iv2_completes_through_the_state_znode_watch() -> None:
    """KC:849-852, 1921-1927: without AlterPartition the controller watches the state znode."""
    c = ControllerCluster([0, 1], controller_id=0, inter_broker_protocol_version="2.7-IV1")
    c.store.create_topic("t", [[0]])
    c.settle()
    c.store.reassign_partitions({TP: [1]})
    c.settle()
    s = c.state(TP)
    assert s is not None and s.leader_and_isr.leader_epoch == 1
    # the leader (an old broker) writes the expanded ISR itself: the data watch fires
    c.store.set_partition_state(TP, LeaderIsrAndControllerEpoch(attrs.evolve(s.leader_and_isr, isr=(0, 1)), s.controller_epoch))
    c.settle()
    s = c.state(TP)
    assert s is not None and (s.leader_and_isr.leader, s.leader_and_isr.isr, s.leader_and_isr.leader_epoch) == (1, (1,), 3)
    assert TP not in c.controller.context.partitions_being_reassigned


def test_broker_endpoint_change_sends_update_metadata_without_partitions_to_all() -> None:
    """KC:1668-1681, 648-651."""
    c = ControllerCluster([0, 1], controller_id=0)
    c.store.create_topic("t", [[0, 1]])
    c.settle()
    c.channel.clear()
    moved = Broker(1, [EndPoint("127.0.0.1", 19092, "PLAINTEXT", "PLAINTEXT")])
    c.store.update_broker(moved)
    c.settle()
    assert [(b, api, umr_partitions(body)) for b, api, body in sent(c)] == [(0, UMR, []), (1, UMR, [])]
    assert c.controller.context.live_or_shutting_down_broker(1) == moved
    assert c.brokers[0].cache.alive_brokers[1].endpoints[0][2] == 19092
    c.channel.clear()
    c.controller.put(BrokerModifications(1))  # unchanged registration: nothing is sent
    c.settle()
    assert c.channel.history == []


def test_update_metadata_error_response_is_only_logged() -> None:
    c = ControllerCluster([0], controller_id=0)
    c.channel.clear()
    c.controller.put(UpdateMetadataResponseReceived(UpdateMetadataResponse(error_code=77), 0))
    c.settle()
    assert c.channel.history == [] and c.controller.is_active and c.controller.state is ControllerState.IDLE


def test_storage_error_in_a_leader_and_isr_response_moves_leadership() -> None:
    """KC:1421-1449: KAFKA_STORAGE_ERROR marks the replica offline, the partition elects again."""
    c = ControllerCluster([0, 1, 2], controller_id=0)
    c.brokers[1].offline.add(TP)  # the log dir holding t-0 on broker 1 fails
    c.store.create_topic("t", [[1, 2]])
    c.settle()
    assert c.controller.context.replicas_on_offline_dirs[1] == {TP}
    s = c.state(TP)
    assert s is not None and (s.leader_and_isr.leader, s.leader_and_isr.isr) == (2, (2,))
    c.stop_broker(1)
    c.start_broker(1)  # a restart clears the broker's offline dirs (KC:574)
    c.settle()
    assert c.controller.context.replicas_on_offline_dirs.get(1, set()) == set()


def test_isr_change_notification_refreshes_the_cache_and_completes_a_reassignment() -> None:
    """KC:2147-2176: re-read the notified state znodes, UpdateMetadata for them, complete
    reassignments, delete the notifications."""
    c = ControllerCluster([0, 1], controller_id=0)
    c.store.create_topic("t", [[0]])
    c.settle()
    c.store.reassign_partitions({TP: [1]})
    c.settle()
    s = c.state(TP)
    assert s is not None
    c.store.set_partition_state(TP, LeaderIsrAndControllerEpoch(attrs.evolve(s.leader_and_isr, isr=(0, 1)), s.controller_epoch))
    c.store.notify_isr_change([TP])
    c.settle()
    s = c.state(TP)
    assert s is not None and (s.leader_and_isr.leader, s.leader_and_isr.isr, s.leader_and_isr.leader_epoch) == (1, (1,), 3)
    assert c.store.children("/isr_change_notification") == []
    assert not c.store.reassign_partitions_in_progress() and c.caches_agree() == []
