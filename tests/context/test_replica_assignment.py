from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.context import ReplicaAssignment


def test_one_argument_form_has_no_reassignment() -> None:
    assignment = ReplicaAssignment([3, 1, 2])
    assert assignment.replicas == (3, 1, 2)
    assert assignment.adding_replicas == ()
    assert assignment.removing_replicas == ()
    assert not assignment.is_being_reassigned


def test_empty() -> None:
    assert ReplicaAssignment.EMPTY == ReplicaAssignment(())


def test_origin_and_target_during_reassignment() -> None:
    assignment = ReplicaAssignment([4, 5, 1, 2], adding_replicas=[4, 5], removing_replicas=[1, 2])
    assert assignment.is_being_reassigned
    assert assignment.origin_replicas == (1, 2)
    assert assignment.target_replicas == (4, 5)


def test_reassign_to_matches_kafka() -> None:
    moved = ReplicaAssignment([1, 2, 3]).reassign_to([3, 4, 5])
    assert moved == ReplicaAssignment([3, 4, 5, 1, 2], adding_replicas=[4, 5], removing_replicas=[1, 2])


def test_remove_replica_from_every_list() -> None:
    assignment = ReplicaAssignment([4, 1, 2], adding_replicas=[4], removing_replicas=[2])
    assert assignment.remove_replica(4) == ReplicaAssignment([1, 2], (), [2])


def test_pickles() -> None:
    assignment = ReplicaAssignment([1, 2], [2], [])
    assert pickle.loads(pickle.dumps(assignment)) == assignment


distinct_ids = st.lists(st.integers(0, 20), unique=True, max_size=6)


@given(distinct_ids, distinct_ids.filter(bool))
def test_reassignment_reaches_its_target(origin: list[int], target: list[int]) -> None:
    moved = ReplicaAssignment(origin).reassign_to(target)
    assert moved.target_replicas == tuple(target)
    assert set(moved.origin_replicas) == set(origin)
    assert set(moved.replicas) == set(origin) | set(target)
    assert moved.is_being_reassigned == (set(origin) != set(target))
