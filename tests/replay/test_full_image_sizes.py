"""full_image's sized states by their arrays' lengths (_by_lengths, _state_size) against the
generated sizer and encoder, on random registrations at every v5+ version."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.replay.image.image import PartitionRegistration
from ctrlbatch.replay.propagate.full_image import _by_lengths, _layout, _state, _state_size

INT32 = st.integers(-(2**31), 2**31 - 1)
IDS = st.lists(st.integers(0, 2**31 - 1), max_size=6).map(tuple)


def test_every_v5_plus_version_sizes_by_lengths() -> None:
    assert all(_by_lengths(v) for v in range(5, 9))  # only int32s and the three int32 arrays
    assert all(_layout(v).state_sizes is not None for v in range(5, 9))


@given(st.integers(5, 8), IDS, IDS, IDS, INT32, INT32, INT32, INT32, st.integers(0, 2**31 - 1))
def test_state_size_is_the_sizers_and_the_encoded_length(
    version: int, replicas: tuple[int, ...], isr: tuple[int, ...], offline: tuple[int, ...],
    leader: int, leader_epoch: int, partition_epoch: int, epoch: int, p: int,
) -> None:
    layout = _layout(version)
    reg = PartitionRegistration(replicas, isr, leader=leader, leader_epoch=leader_epoch, partition_epoch=partition_epoch)
    state = _state("topic", p, reg, epoch, offline)
    size = _state_size(layout, "topic", p, reg, epoch, offline)
    assert size == layout.size_state(state) == len(layout.encode_state(state))
    assert layout.state_sizes is not None and layout.state_sizes[(len(isr), len(replicas), len(offline))] == size
