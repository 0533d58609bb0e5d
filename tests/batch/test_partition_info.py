"""PartitionInfoMap (the batch's UpdateMetadata partition map held as references) against a plain
dict of the states the batch made before it, and the UpdateMetadata bodies encoded from it.

Properties: after any sequence of writes (a state from the leadership and replicas, an explicit
state, a delete, a detach), the map reads as the dict of states made with the same maker, in the
same order; its two inner dicts keep the same keys in the same order; it pickles to an equal map;
UpdateMetadataStates lists the same states; and a body encoded from UpdateMetadataStates (every
version, topics in runs or interleaved) is the bytes of the same builder given a list of states,
and of build(epoch).encode(version).
"""

from __future__ import annotations

import pickle
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctrlbatch.batch.builders import UpdateMetadataBuilder
from ctrlbatch.batch.partition_info import PartitionInfoMap, UpdateMetadataStates, make_umr_state
from ctrlbatch.batch.request_batch import live_brokers
from ctrlbatch.context import Broker, EndPoint, SecurityProtocol, TopicPartition
from ctrlbatch.context.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from ctrlbatch.requests import UpdateMetadataRequest

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_ids = st.lists(st.integers(0, 300), max_size=5).map(tuple)
_tps = st.builds(TopicPartition, st.sampled_from(["a", "b", "topic-c", "é"]), st.integers(0, 3))
_leaderships = st.builds(
    LeaderIsrAndControllerEpoch,
    st.builds(LeaderAndIsr, st.integers(-2, 300), _ids, st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1)),
    st.integers(0, 2**31 - 1),
)
_explicit = st.builds(
    make_umr_state, st.just(""), st.just(0), st.integers(0, 9), st.integers(-2, 9), st.integers(0, 9), _ids,
    st.integers(0, 9), _ids, _ids,
)
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("lead"), _tps, _leaderships, _ids),
        st.tuples(st.just("set"), _tps, _explicit),
        st.tuples(st.just("del"), _tps),
    ),
    max_size=25,
)


def _from_leadership(tp: TopicPartition, info: Any, replicas: tuple[int, ...]) -> Any:
    """The state the batch made before PartitionInfoMap (CCM:466-486, no offline replica, not queued)."""
    lai = info.leader_and_isr
    return make_umr_state(
        tp.topic, tp.partition, info.controller_epoch, lai.leader, lai.leader_epoch, lai.isr, lai.partition_epoch,
        replicas, (),
    )


def _apply(ops: list[tuple[Any, ...]]) -> tuple[PartitionInfoMap, dict[TopicPartition, Any]]:
    m = PartitionInfoMap()
    want: dict[TopicPartition, Any] = {}
    for op in ops:
        if op[0] == "lead":
            _, tp, info, replicas = op
            m.put_leadership(tp, info, replicas)
            want[tp] = _from_leadership(tp, info, replicas)
        elif op[0] == "set":
            _, tp, state = op
            m[tp] = state
            want[tp] = state
        elif op[1] in want:
            del m[op[1]]
            del want[op[1]]
    return m, want


@SETTINGS
@given(_ops)
def test_the_map_reads_as_the_dict_of_states(ops: list[tuple[Any, ...]]) -> None:
    m, want = _apply(ops)
    assert list(m.items()) == list(want.items())
    assert list(m.refs) == list(m.replicas) == list(want)
    assert m == want and len(m) == len(want)
    assert all((tp in m) for tp in want)
    assert pickle.loads(pickle.dumps(m)) == m
    states = UpdateMetadataStates(m.refs, m.replicas)
    assert list(states) == list(want.values()) and len(states) == len(want)
    assert states == list(want.values())
    refs = m.refs
    m.detach()
    assert len(m) == 0 and m == {} and list(states) == list(want.values()) and refs is states.refs


def test_a_missing_partition_and_a_wrong_value_are_refused() -> None:
    m = PartitionInfoMap()
    tp = TopicPartition("a", 0)
    try:
        m[tp]
    except KeyError:
        pass
    else:
        raise AssertionError("a missing partition must raise KeyError")
    try:
        m[tp] = "not a state"  # type: ignore[assignment]
    except TypeError as e:
        assert "UpdateMetadataPartitionState" in str(e)
    else:
        raise AssertionError("a value that is not a state must raise TypeError")
    assert tp not in m


@SETTINGS
@given(_ops, st.integers(0, 8), st.integers(-1, 2**40), st.sampled_from([0, 1, 2]), st.booleans())
def test_bodies_from_references_are_the_bodies_from_states(
    ops: list[tuple[Any, ...]], version: int, broker_epoch: int, update_type: int, kraft: bool
) -> None:
    m, want = _apply(ops)
    live = live_brokers(
        tuple(Broker(b, (EndPoint(f"h{b}", 9092, "PLAINTEXT", SecurityProtocol.PLAINTEXT),), None) for b in range(3)),
        version,
    )
    topic_ids = {"a": uuid.UUID(int=7), "topic-c": uuid.UUID(int=2**100)}  # "b" and "é" have none
    args = (version, 3, 9)
    lazy = UpdateMetadataBuilder(*args, UpdateMetadataStates(m.refs, m.replicas), live, topic_ids, kraft, update_type)  # type: ignore[arg-type]
    plain = UpdateMetadataBuilder(*args, list(want.values()), live, topic_ids, kraft, update_type)
    body = lazy.encode_body(broker_epoch)
    assert body == plain.encode_body(broker_epoch) == plain.build(broker_epoch).encode(version)
    assert lazy.build(broker_epoch) == plain.build(broker_epoch)
    assert UpdateMetadataRequest.decode(body, version).encode(version) == body
