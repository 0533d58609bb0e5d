"""ControllerConfig, the events and their ControllerState, the event manager, RecordingChannel."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.context import Broker, EndPoint, MetadataVersion, TopicPartition
from ctrlbatch.controller.api_errors import ApiError, Errors
from ctrlbatch.controller.channel import RecordingChannel
from ctrlbatch.controller.config import ControllerConfig
from ctrlbatch.controller.errors import ControllerMovedException, StaleBrokerEpochException
from ctrlbatch.controller.event_manager import ControllerEventManager
from ctrlbatch.controller.events import (
    EVENT_STATES,
    ApiPartitionReassignment,
    AutoPreferredReplicaLeaderElection,
    BrokerChange,
    ControlledShutdown,
    ControllerState,
    ElectionTrigger,
    ElectionType,
    ListPartitionReassignments,
    ReplicaLeaderElection,
    Startup,
    TopicChange,
    preempt,
    state_of,
)

TP = TopicPartition("t", 0)


# ---------------------------------------------------------------------- config


def test_config_defaults_are_kafkas() -> None:
    c = ControllerConfig(broker_id=1)
    assert (c.auto_leader_rebalance_enable, c.leader_imbalance_per_broker_percentage,
            c.leader_imbalance_check_interval_seconds, c.delete_topic_enable, c.unclean_leader_election_enable) == (
        True, 10, 300, True, False)
    assert c.inter_broker_protocol_version is MetadataVersion.IBP_3_9_IV0
    assert c.uses_topic_id and c.is_alter_partition_supported and c.is_leader_recovery_supported
    assert c.leader_imbalance_check_interval_ms == 300_000


def test_config_capabilities_follow_the_ibp() -> None:
    c = ControllerConfig(broker_id=0, inter_broker_protocol_version="2.7-IV1")
    assert c.is_feature_versioning_supported and not c.is_alter_partition_supported and not c.uses_topic_id
    assert ControllerConfig(broker_id=0, inter_broker_protocol_version="2.7-IV2").is_alter_partition_supported


@pytest.mark.parametrize(("kwargs", "error", "text"), [
    ({"broker_id": -1}, ValueError, "broker.id"),
    ({"broker_id": "1"}, TypeError, "broker.id must be an int"),
    ({"broker_id": 1, "leader_imbalance_check_interval_seconds": 0}, ValueError, "at least 1"),
    ({"broker_id": 1, "delete_topic_enable": 1}, TypeError, "delete.topic.enable must be a bool"),
    ({"broker_id": 1, "inter_broker_protocol_version": "9.9"}, ValueError, "inter.broker.protocol.version"),
    ({"broker_id": 1, "inter_broker_protocol_version": 3.9}, TypeError, "inter.broker.protocol.version"),
])
def test_config_refuses_bad_values_naming_the_property(kwargs: dict[str, Any], error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        ControllerConfig(**kwargs)


def test_config_from_properties_parses_and_refuses_unknown_names() -> None:
    c = ControllerConfig.from_properties({"broker.id": "3", "delete.topic.enable": "false",
                                          "leader.imbalance.per.broker.percentage": "25"})
    assert (c.broker_id, c.delete_topic_enable, c.leader_imbalance_per_broker_percentage) == (3, False, 25)
    with pytest.raises(ValueError, match="unknown controller property 'delete.topics.enable'"):
        ControllerConfig.from_properties({"broker.id": 1, "delete.topics.enable": "true"})
    with pytest.raises(ValueError, match="Expected value to be either true or false"):
        ControllerConfig.from_properties({"broker.id": 1, "delete.topic.enable": "yes"})
    with pytest.raises(ValueError, match="broker.id is required"):
        ControllerConfig.from_properties({})


# ---------------------------------------------------------------------- events


def test_controller_state_values_and_metric_names_are_kafkas() -> None:
    assert [s.value for s in ControllerState] == list(range(18))
    assert ControllerState.BROKER_CHANGE.rate_and_time_metric_name == "LeaderElectionRateAndTimeMs"
    assert ControllerState.ALTER_PARTITION_REASSIGNMENT.rate_and_time_metric_name == "PartitionReassignmentRateAndTimeMs"
    assert ControllerState.CONTROLLER_CHANGE.rate_and_time_metric_name == "ControllerChangeRateAndTimeMs"
    assert ControllerState.IDLE.rate_and_time_metric_name is None
    assert ControllerState.UPDATE_METADATA_RESPONSE_RECEIVED.rate_and_time_metric_name is None


def test_every_event_has_a_state_and_strangers_are_refused() -> None:
    assert state_of(Startup()) is ControllerState.CONTROLLER_CHANGE
    assert state_of(AutoPreferredReplicaLeaderElection()) is ControllerState.AUTO_LEADER_BALANCE
    assert len(EVENT_STATES) == 26
    with pytest.raises(TypeError, match="str is not a controller event"):
        state_of("Startup")


def test_preempt_answers_callbacks_as_kafka_does() -> None:
    got: list[Any] = []
    preempt(ControlledShutdown(1, 5, got.append))
    preempt(ApiPartitionReassignment({TP: [1]}, got.append))
    preempt(ListPartitionReassignments(None, got.append))
    preempt(ReplicaLeaderElection(frozenset({TP}), ElectionType.PREFERRED, ElectionTrigger.ADMIN_CLIENT_TRIGGERED, got.append))
    preempt(ReplicaLeaderElection(None, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED, got.append))
    preempt(BrokerChange())
    assert isinstance(got[0], ControllerMovedException) and str(got[0]) == "Controller moved to another broker"
    assert got[1] == ApiError(Errors.NOT_CONTROLLER) == got[2]
    assert got[3] == {TP: ApiError(Errors.NOT_CONTROLLER)}
    assert got[4] == {}
    assert len(got) == 5


def test_api_error_from_exception_maps_known_classes() -> None:
    assert ApiError.from_exception(ControllerMovedException("x")) == ApiError(Errors.NOT_CONTROLLER, "x")
    assert ApiError.from_exception(StaleBrokerEpochException("y")).error is Errors.STALE_BROKER_EPOCH
    assert ApiError.from_exception(ValueError("z")).error is Errors.UNKNOWN_SERVER_ERROR
    assert ApiError(Errors.ELECTION_NOT_NEEDED).message_or_default == "Leader election not needed for topic partition."


# ---------------------------------------------------------------------- event manager


class _Processor:
    def __init__(self) -> None:
        self.processed: list[Any] = []
        self.preempted: list[Any] = []
        self.manager: ControllerEventManager | None = None
        self.states: list[ControllerState] = []

    def process(self, event: Any) -> None:
        assert self.manager is not None
        self.states.append(self.manager.state)
        self.processed.append(event)
        if isinstance(event, TopicChange):
            raise RuntimeError("boom")
        if isinstance(event, Startup):
            self.manager.put(BrokerChange())  # enqueued while processing: runs after the rest

    def preempt(self, event: Any) -> None:
        self.preempted.append(event)


def _manager() -> tuple[ControllerEventManager, _Processor]:
    p = _Processor()
    m = ControllerEventManager(7, p, lambda: 42)
    p.manager = m
    return m, p


def test_events_run_in_fifo_order_one_at_a_time_and_errors_do_not_stop_the_queue() -> None:
    m, p = _manager()
    m.put(Startup())
    m.put(TopicChange())
    m.put(AutoPreferredReplicaLeaderElection())
    assert m.process_events() == 4
    assert p.processed == [Startup(), TopicChange(), AutoPreferredReplicaLeaderElection(), BrokerChange()]
    assert p.states == [ControllerState.CONTROLLER_CHANGE, ControllerState.TOPIC_CHANGE,
                        ControllerState.AUTO_LEADER_BALANCE, ControllerState.BROKER_CHANGE]
    assert m.state is ControllerState.IDLE and m.is_empty


def test_clear_and_put_preempts_the_queued_events_once() -> None:
    m, p = _manager()
    first = m.put(BrokerChange())
    m.put(TopicChange())
    m.clear_and_put(Startup())
    assert p.preempted == [BrokerChange(), TopicChange()]
    assert first.process(p) is False  # spent: neither processed nor preempted again
    m.process_events()
    assert p.processed == [Startup(), BrokerChange()]


def test_process_events_is_bounded_and_close_refuses_more() -> None:
    m, p = _manager()
    for _ in range(5):
        m.put(BrokerChange())
    assert m.process_events(max_events=2) == 2 and len(m) == 3
    m.close()
    assert len(p.preempted) == 3
    late = m.put(BrokerChange())  # a late response after shutdown: dropped, never run
    assert late.spent and m.is_empty and m.process_events() == 0
    with pytest.raises(TypeError, match="not a controller event"):
        ControllerEventManager(1, p, lambda: 0).put(object())


@given(st.lists(st.sampled_from([BrokerChange(), TopicChange(), Startup()]), max_size=20), st.integers(0, 20))
def test_every_queued_event_is_processed_or_preempted_exactly_once(events: list[Any], cut: int) -> None:
    m, p = _manager()
    p.process = p.processed.append  # type: ignore[method-assign,assignment]
    for e in events:
        m.put(e)
    m.process_events(max_events=cut)
    m.clear_and_put(AutoPreferredReplicaLeaderElection())
    m.process_events()
    assert p.processed[: min(cut, len(events))] + p.preempted + [AutoPreferredReplicaLeaderElection()] == [
        *events, AutoPreferredReplicaLeaderElection()]


# ---------------------------------------------------------------------- channel


def _broker(i: int) -> Broker:
    return Broker(i, [EndPoint("127.0.0.1", 9092 + i, "PLAINTEXT", "PLAINTEXT")])


def test_recording_channel_drops_sends_to_unknown_brokers_and_forgets_removed_ones() -> None:
    ch = RecordingChannel()
    ch.add_broker(_broker(1))
    ch.add_broker(_broker(1))
    sentinel: Any = object()
    ch.send(1, sentinel, None)
    ch.send(2, sentinel, None)
    assert ch.history == [(1, sentinel)] and ch.dropped == [(2, sentinel)]
    ch.remove_broker(1)
    assert ch.pending == [] and ch.membership == [("add", 1), ("remove", 1)]
    with pytest.raises(TypeError, match="must be a Broker"):
        ch.add_broker(1)  # type: ignore[arg-type]


def test_recording_channel_delivers_answers_in_send_order() -> None:
    ch = RecordingChannel()
    ch.add_broker(_broker(1))
    ch.add_broker(_broker(2))
    got: list[Any] = []
    ch.send(2, "a", got.append)  # type: ignore[arg-type]
    ch.send(1, "b", got.append)  # type: ignore[arg-type]
    assert ch.deliver_all(lambda b, r: (b, r)) == 2
    assert got == [(2, "a"), (1, "b")] and ch.pending == []
