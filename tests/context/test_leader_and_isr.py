from __future__ import annotations

import pickle

import attrs
import pytest

from ctrlbatch.context import LeaderAndIsr, LeaderIsrAndControllerEpoch, LeaderRecoveryState


def test_constants_are_kafkas() -> None:
    assert LeaderAndIsr.NO_LEADER == -1
    assert LeaderAndIsr.LEADER_DURING_DELETE == -2
    assert LeaderAndIsr.NO_EPOCH == -1
    assert LeaderAndIsr.EPOCH_DURING_DELETE == -2
    assert LeaderAndIsr.INITIAL_LEADER_EPOCH == 0
    assert LeaderAndIsr.INITIAL_PARTITION_EPOCH == 0


def test_constants_are_not_fields() -> None:
    assert [f.name for f in attrs.fields(LeaderAndIsr)] == [
        "leader",
        "isr",
        "leader_epoch",
        "partition_epoch",
        "leader_recovery_state",
    ]


def test_recovery_state_values() -> None:
    assert int(LeaderRecoveryState.RECOVERED) == 0
    assert int(LeaderRecoveryState.RECOVERING) == 1


def test_short_constructor_defaults() -> None:
    lai = LeaderAndIsr(1, [2, 1])
    assert lai.isr == (2, 1)
    assert lai.leader_epoch == LeaderAndIsr.INITIAL_LEADER_EPOCH
    assert lai.partition_epoch == LeaderAndIsr.INITIAL_PARTITION_EPOCH
    assert lai.leader_recovery_state is LeaderRecoveryState.RECOVERED


def test_recovery_state_is_converted_from_int() -> None:
    assert (
        LeaderAndIsr(1, [], leader_recovery_state=1).leader_recovery_state is LeaderRecoveryState.RECOVERING
    )  # type: ignore[arg-type]


def test_during_delete_is_fresh_with_zero_epochs() -> None:
    lai = LeaderAndIsr.during_delete([3, 1, 2])
    assert lai == LeaderAndIsr(-2, (3, 1, 2), 0, 0, LeaderRecoveryState.RECOVERED)


def test_leader_opt() -> None:
    assert LeaderAndIsr(LeaderAndIsr.NO_LEADER, []).leader_opt is None
    assert LeaderAndIsr(4, []).leader_opt == 4


def test_new_helpers_bump_leader_epoch_and_keep_partition_epoch() -> None:
    base = LeaderAndIsr(1, [1, 2], leader_epoch=5, partition_epoch=9)
    assert base.new_leader(2) == LeaderAndIsr(2, [1, 2], 6, 9)
    assert base.new_leader_and_isr(3, [3]) == LeaderAndIsr(3, [3], 6, 9)
    assert base.new_epoch() == LeaderAndIsr(1, [1, 2], 6, 9)
    recovering = base.new_recovering_leader_and_isr(2, [2])
    assert recovering == LeaderAndIsr(2, [2], 6, 9, LeaderRecoveryState.RECOVERING)
    assert base.with_partition_epoch(10).partition_epoch == 10
    assert base.leader_epoch == 5  # the original is untouched


def test_equals_allow_stale_partition_epoch() -> None:
    mine = LeaderAndIsr(1, [1, 2], 3, 4)
    assert mine.equals_allow_stale_partition_epoch(LeaderAndIsr(1, [1, 2], 3, 5))
    assert mine.equals_allow_stale_partition_epoch(mine)
    assert not mine.equals_allow_stale_partition_epoch(LeaderAndIsr(1, [1, 2], 3, 3))
    assert not mine.equals_allow_stale_partition_epoch(LeaderAndIsr(1, [2, 1], 3, 4))
    assert not mine.equals_allow_stale_partition_epoch(None)


def test_values_are_frozen_and_pickle() -> None:
    pair = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, [1]), controller_epoch=7)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        pair.controller_epoch = 8  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(pair)) == pair
    assert pair.leader_and_isr.leader == 1
