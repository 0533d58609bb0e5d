"""kept_groups: a one-pass unit's groups come back exactly, in order, once, whether their body
stayed in memory or went to the task's file; the file goes with ``close``; an OS error of the
file names it."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.common import os_error_line
from ctrlbatch.replay.rows.rows import SendGroup
from ctrlbatch.replay.spark.kept_groups import LARGE_BODY, KeptGroups

_destinations = st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(-1, 2**62)), min_size=1, max_size=4)
groups = st.builds(
    lambda delta, api, data, at, to: SendGroup(
        delta, delta * 3, api, 8, 1, 5, None, len(to), 20 + (0 if data is None else len(data)), data,
        None if at is None or data is None else min(at, len(data)), tuple(b for b, _ in to), tuple(e for _, e in to),
    ),
    st.integers(0, 2**62), st.sampled_from([4, 5, 6]), st.none() | st.binary(max_size=300),
    st.none() | st.integers(0, 64), _destinations,
)


@settings(max_examples=80, deadline=None)
@given(st.lists(groups, max_size=40), st.integers(0, 301), st.integers(0, 9))
def test_groups_come_back_exactly_in_order_once(tmp_path_factory: pytest.TempPathFactory, written: list[SendGroup],
                                                large: int, index: int) -> None:
    directory = str(tmp_path_factory.mktemp("kept"))
    kept = KeptGroups(directory, index, large=large)
    assert kept.keep(iter(written[: len(written) // 2])) == len(written) // 2
    assert kept.keep(iter(written[len(written) // 2 :])) == len(written)  # kept in two calls, as it comes
    to_file = [g.data for g in written if g.data is not None and len(g.data) >= large]
    assert kept.bytes_in_file == sum(map(len, to_file))
    assert os.path.exists(kept.path) == bool(to_file)  # made only when a body goes there
    back = list(kept)
    assert back == written
    assert [type(g.data) for g in back] == [type(g.data) for g in written]  # bytes read back are bytes
    assert len(kept) == 0 and list(kept) == []  # handed over once: the groups are dropped as they go
    kept.close()
    kept.close()
    assert os.listdir(directory) == []


def test_large_bodies_go_to_the_file_and_small_ones_stay(tmp_path: Path) -> None:
    small = SendGroup(1, 2, 6, 8, 1, 5, 0, 2, 40, b"s" * 100, 4, (1, 2), (10, 20))
    body = bytes(range(256)) * (LARGE_BODY // 256 + 1)
    large = SendGroup(1, 2, 6, 8, 1, 5, 0, 100, 40, body, 9, (3,), (30,))
    kept = KeptGroups(str(tmp_path), 3)
    kept.keep([small, large, small, large])
    assert kept.bytes_in_file == 2 * len(body)
    assert repr(kept) == "KeptGroups(4 groups, 2 bodies in the file)"
    assert list(kept) == [small, large, small, large]
    kept.close()
    assert os.listdir(tmp_path) == []


def test_an_error_of_the_file_names_it(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone")
    kept = KeptGroups(gone, 0, large=1)
    with pytest.raises(OSError) as caught:
        kept.keep([SendGroup(1, 2, 6, 8, 1, 5, 0, 1, 40, b"xy", None, (1,), (10,))])
    assert os_error_line(caught.value) == f"{kept.path}: No such file or directory"
    assert kept.path.startswith(gone + os.sep)
    kept.close()


def test_the_replay_error_passes_through(tmp_path: Path) -> None:
    def failing() -> Iterator[SendGroup]:
        yield SendGroup(1, 2, 6, 8, 1, 5, 0, 1, 40, b"x" * 10, None, (1,), (10,))
        raise ValueError("a refused record")

    kept = KeptGroups(str(tmp_path), 0, large=1)
    with pytest.raises(ValueError, match="a refused record"):
        kept.keep(failing())
    kept.close()
    assert os.listdir(tmp_path) == []


def test_a_failed_write_and_a_short_read_name_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error of the file descriptor (no file name of its own) and a body read back short both
    come out as OSErrors naming the kept bodies' file (common.os_error_line: one line)."""
    group = SendGroup(1, 2, 6, 8, 1, 5, 0, 1, 40, b"x" * 64, None, (1,), (10,))
    kept = KeptGroups(str(tmp_path), 0, large=1)

    def full(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as m:
        m.setattr(os, "write", full)  # the module kept_groups calls through, for keep() alone
        with pytest.raises(OSError) as caught:
            kept.keep([group])
    assert os_error_line(caught.value) == f"{kept.path}: No space left on device"
    kept.close()

    kept = KeptGroups(str(tmp_path), 1, large=1)
    kept.keep([group])
    with monkeypatch.context() as m:
        m.setattr(os, "pread", lambda fd, n, at: b"x" * (n - 1))
        with pytest.raises(OSError) as caught:
            list(kept)
    assert os_error_line(caught.value) == f"{kept.path}: 63 bytes read back of a 64-byte body"
    kept.close()
    assert os.listdir(tmp_path) == []
