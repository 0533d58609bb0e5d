"""expand_columns (per-group shared values spread when a chunk is made) gives exactly the rows
expand_rows gives, in any chunking, column order and with or without frames (hypothesis)."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctrlbatch.replay.rows import rows as rows_module
from ctrlbatch.replay.rows.rows import REQUEST_SCHEMA, SendGroup, expand_columns, expand_rows

_PER_BROKER = ["broker", "seq", "sha256", "frame"]  # expand_columns needs them (one value per row)


@st.composite
def send_group(draw: st.DrawFn) -> SendGroup:
    api_key, version = draw(st.sampled_from([(4, 7), (4, 4), (5, 3), (6, 8), (6, 7)]))
    data = draw(st.binary(min_size=0, max_size=40))
    epoch_offset = draw(st.none() | st.integers(0, max(0, len(data) - 8))) if len(data) >= 8 else None
    brokers = tuple(draw(st.lists(st.integers(0, 6), min_size=1, max_size=5)))
    return SendGroup(
        draw(st.integers(0, 10**12)), draw(st.integers(-(2**40), 2**40)), api_key, version,
        draw(st.integers(0, 3)), draw(st.integers(0, 2**31 - 1)), draw(st.none() | st.sampled_from([0, 1, 2])),
        draw(st.integers(0, 10**5)), draw(st.integers(0, 10**9)), data, epoch_offset, brokers,
        tuple(draw(st.integers(-1, 2**40)) for _ in brokers),
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(send_group(), max_size=12), st.booleans(), st.integers(1, 7),
    st.permutations(REQUEST_SCHEMA.names), st.dictionaries(st.integers(0, 6), st.integers(0, 1000), max_size=4),
    st.sampled_from([None, 0, 64]),
)
def test_columns_are_the_rows(
    groups: list[SendGroup], with_frames: bool, chunk: int, names: list[str], start: dict[int, int],
    shared_from: int | None,
) -> None:
    """... also with a helper thread hashing half of each group of at least ``shared_from``
    bytes of frames (None: no helper), as a Spark task's write does."""
    with pytest.MonkeyPatch.context() as mp, ThreadPoolExecutor(1) as helper:
        mp.setattr(rows_module, "ROWS_PER_CHUNK", chunk)
        if shared_from is not None:
            mp.setattr(rows_module, "SHARED_HASH_BYTES", shared_from)
        seq_rows, seq_cols = dict(start), dict(start)
        rows = list(expand_rows(groups, seq_rows, with_frames))
        chunks = list(expand_columns(groups, seq_cols, with_frames, names, None if shared_from is None else helper))
    assert seq_rows == seq_cols
    got: list[dict[str, Any]] = []
    for c in chunks:
        assert list(c) == names and len({len(v) for v in c.values()}) == 1
        assert len(c["broker"]) >= chunk or c is chunks[-1]
        got += [dict(zip(names, values, strict=True)) for values in zip(*c.values(), strict=True)]
    assert got == [{n: r[n] for n in names} for r in rows]


def test_an_unknown_column_name_is_refused() -> None:
    with pytest.raises(ValueError, match="not columns of REQUEST_SCHEMA"):
        list(expand_columns([], {}, False, ["delta_last_offset", "nope"]))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(send_group(), max_size=12), st.booleans(), st.integers(1, 7),
    st.lists(st.sampled_from([n for n in REQUEST_SCHEMA.names if n not in _PER_BROKER]), unique=True),
    st.booleans(), st.data(),
)
def test_columns_of_any_subset_and_sized_groups_are_the_rows(
    groups: list[SendGroup], with_frames: bool, chunk: int, shared: list[str], sized: bool, data: st.DataObject,
) -> None:
    """Chunks transpose each group's shared values (rows.py's hot path): any subset of the
    shared columns (none, one, all) beside the per-broker ones, in any order, sized groups (no
    data) among encoded ones, keep the rows' values."""
    names = data.draw(st.permutations([*shared, *_PER_BROKER]))
    if sized:
        groups = [attrs.evolve(g, data=None, epoch_offset=None) if i % 2 else g for i, g in enumerate(groups)]
        with_frames = False
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rows_module, "ROWS_PER_CHUNK", chunk)
        rows = list(expand_rows(groups, {}, with_frames))
        chunks = list(expand_columns(groups, {}, with_frames, names))
    got: list[dict[str, Any]] = []
    for c in chunks:
        assert list(c) == names and len({len(v) for v in c.values()}) == 1
        got += [dict(zip(names, values, strict=True)) for values in zip(*c.values(), strict=True)]
    assert got == [{n: r[n] for n in names} for r in rows]


@settings(max_examples=60, deadline=None)
@given(send_group(), st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=6))
def test_sha256s_is_sha256_per_row(group: SendGroup, seqs: list[int]) -> None:
    frames = group.frames()
    epochs = [(s * 7919) % 2**40 for s in seqs]
    assert frames.sha256s(seqs, epochs) == [frames.sha256(s, e) for s, e in zip(seqs, epochs, strict=True)]
    assert frames.sha256s(seqs, epochs) == [hashlib.sha256(frames.frame(s, e)).hexdigest() for s, e in zip(seqs, epochs, strict=True)]


@settings(max_examples=60, deadline=None)
@given(send_group(), st.lists(st.integers(0, 2**31 - 1), min_size=0, max_size=9))
def test_sha256s_shared_is_sha256s(group: SendGroup, seqs: list[int]) -> None:
    """Half hashed by a helper thread on a head of its own: the same list, and the encoder's own
    head still gives every frame after it."""
    frames = group.frames()
    epochs = [(s * 7919) % 2**40 for s in seqs]
    with ThreadPoolExecutor(1) as helper:
        for _ in range(3):  # the helper's head is a copy: a reused encoder stays exact
            assert frames.sha256s_shared(seqs, epochs, helper) == frames.sha256s(seqs, epochs)
    assert [frames.sha256(s, e) for s, e in zip(seqs, epochs, strict=True)] == [
        hashlib.sha256(frames.frame(s, e)).hexdigest() for s, e in zip(seqs, epochs, strict=True)
    ]


def test_sha256s_shared_raises_what_a_half_raises() -> None:
    """A failing half (here: epochs that do not match the ids) raises, the helper's half ended."""
    group = SendGroup(1, 2, 6, 8, 0, 5, None, 3, 4, bytes(40), 8, (1, 2, 3), (1, 2, 3))
    with ThreadPoolExecutor(1) as helper:
        with pytest.raises(ValueError, match="zip"):  # the helper's half fails
            group.frames().sha256s_shared([1, 2, 3, 4], [1, 2, 3], helper)
        ended: list[str] = []
        slow = helper.submit(lambda: ended.append("helper"))  # queued first: the helper's half waits behind it
        with pytest.raises(ValueError, match="zip"):  # this thread's half fails: raised once the helper's ended
            group.frames().sha256s_shared([1, 2, 3, 4], [1], helper)
        assert slow.done() and ended == ["helper"]
        assert helper.submit(lambda: 7).result() == 7  # nothing of the failed call is left pending
