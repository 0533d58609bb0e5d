"""The kraft_metadata data source's default partition size (plan.unit_bytes_for): equal parts of
about MIN_UNIT bytes, at most PARTS_PER_LOG of them until a part would exceed MAX_UNIT."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.replay.tables.plan import MAX_UNIT, MIN_UNIT, PARTS_PER_LOG, unit_bytes_for


@given(st.integers(0, 1 << 42))
def test_the_default_unit_cuts_a_log_into_equal_parts_of_about_min_unit(total: int) -> None:
    unit = unit_bytes_for(total)
    assert 1 <= unit <= MAX_UNIT
    parts = max(1, -(-total // unit))  # the parts cuts() makes, one past every unit bytes
    wanted = min(PARTS_PER_LOG, max(1, -(-total // MIN_UNIT)))
    if unit < MAX_UNIT:
        assert parts == wanted
        assert total <= parts * unit < total + parts or total == 0  # equal parts (to a byte)
    else:
        assert parts >= PARTS_PER_LOG  # a log over PARTS_PER_LOG * MAX_UNIT bytes: more parts, none over MAX_UNIT
    if total >= MIN_UNIT:
        assert unit * 2 > MIN_UNIT  # never much smaller than MIN_UNIT: a task has a fixed cost


def test_the_default_units_of_some_sizes() -> None:
    assert unit_bytes_for(0) == 1 and unit_bytes_for(1000) == 1000  # one part
    assert unit_bytes_for(58 << 20) == -(-(58 << 20) // 4)  # the bench's 1M-record log: 4 equal parts
    assert unit_bytes_for(580 << 20) == -(-(580 << 20) // 16)
    assert unit_bytes_for(16 * MAX_UNIT + 1) == MAX_UNIT
