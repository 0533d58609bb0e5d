"""group_spill: a unit's groups come back from its file exactly, in order; a file is complete or
absent; a file of another SendGroup layout is refused with that said."""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.rows.rows import SendGroup
from ctrlbatch.replay.spark.group_spill import (
    GROUPS_PER_CHUNK,
    read_groups,
    spill_dir,
    spill_path,
    write_groups,
)

_destinations = st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(-1, 2**62)), min_size=1, max_size=4)
groups = st.builds(
    lambda delta, api, version, update_type, data, at, to: SendGroup(
        delta, delta * 3, api, version, 1, 5, update_type, len(to), len(data) + 20, data,
        None if at is None else min(at, len(data)), tuple(b for b, _ in to), tuple(e for _, e in to),
    ),
    st.integers(0, 2**62), st.sampled_from([4, 5, 6]), st.integers(0, 8), st.none() | st.integers(-1, 3),
    st.binary(max_size=300), st.none() | st.integers(0, 64), _destinations,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(groups, max_size=40), st.integers(1, 7))
def test_groups_come_back_exactly_in_order(tmp_path_factory: pytest.TempPathFactory, written: list[SendGroup],
                                           index: int) -> None:
    directory = str(tmp_path_factory.mktemp("spill"))
    assert write_groups(spill_path(directory, index), iter(written)) == len(written)
    back = list(read_groups(spill_path(directory, index)))
    assert back == written
    assert os.listdir(directory) == [os.path.basename(spill_path(directory, index))]  # nothing partial left


def test_many_chunks(tmp_path: Path) -> None:
    one = SendGroup(7, 8, 6, 8, 1, 5, 0, 3, 40, b"x" * 20, 4, (1, 2), (10, 20))
    n = 2 * GROUPS_PER_CHUNK + 5
    path = spill_path(str(tmp_path), 0)
    assert write_groups(path, [one] * n) == n
    assert list(read_groups(path)) == [one] * n


def test_a_failed_writer_leaves_no_file(tmp_path: Path) -> None:
    def failing() -> Iterator[SendGroup]:
        yield SendGroup(7, 8, 6, 8, 1, 5, 0, 3, 40, b"x" * 20, None, (1,), (10,))
        raise ValueError("the unit failed")

    with pytest.raises(ValueError, match="the unit failed"):
        write_groups(spill_path(str(tmp_path), 3), failing())
    assert os.listdir(tmp_path) == []


def test_another_layout_is_refused(tmp_path: Path) -> None:
    path = spill_path(str(tmp_path), 1)
    with open(path, "wb") as f:
        pickle.dump(("delta", "brokers"), f, protocol=5)
    with pytest.raises(RuntimeError, match="another version of ctrlbatch"):
        list(read_groups(path))


def test_spill_dir_is_beside_the_requests(tmp_path: Path) -> None:
    made = Path(spill_dir(tmp_path / "out" / "requests"))  # the parent is made, as the requests directory is
    assert made.parent == tmp_path / "out" and made.name.startswith(".groups-") and made.is_dir()
    assert Path(spill_dir(tmp_path / "out" / "requests")) != made  # each run its own
