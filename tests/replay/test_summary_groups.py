"""ReplaySummary.count_group (the engines count a send group at once) gives the counts that
count_row gives row by row."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.replay.rows.summary import ReplaySummary

_groups = st.lists(
    st.tuples(
        st.sampled_from([4, 5, 6, 99]), st.integers(0, 10**6), st.integers(0, 10**9),
        st.lists(st.integers(0, 30), max_size=8), st.sampled_from(["topic creation", "ISR change", "other"]),
    ),
    max_size=12,
)


@given(_groups)
def test_count_group_equals_count_row_per_row(groups: list[tuple[int, int, int, list[int], str]]) -> None:
    by_group, by_row = ReplaySummary(), ReplaySummary()
    for api_key, partitions, size, brokers, cause in groups:
        by_group.count_group(api_key, partitions, size, brokers, cause=cause)
        for b in brokers:
            by_row.count_row({"api_key": api_key, "partitions": partitions, "bytes": size, "broker": b, "cause": cause})
    assert by_group.to_dict() == by_row.to_dict()
    assert by_group.by_api == by_row.by_api and by_group.by_broker == by_row.by_broker
    assert by_group.by_cause == by_row.by_cause
    assert sum(c["bytes"] for c in by_group.by_cause.values()) == sum(c["bytes"] for c in by_group.by_api.values())


@given(_groups, st.integers(1, 5))
def test_count_group_of_several_groups_equals_each_group(
    groups: list[tuple[int, int, int, list[int], str]], times: int,
) -> None:
    """count_group(..., groups=g) with summed partitions and bytes counts what g calls count."""
    summed, each = ReplaySummary(), ReplaySummary()
    for api_key, partitions, size, brokers, cause in groups:
        summed.count_group(api_key, partitions * times, size * times, brokers, times, cause)
        for _ in range(times):
            each.count_group(api_key, partitions, size, brokers, cause=cause)
    assert summed.to_dict() == each.to_dict() and summed.by_broker == each.by_broker
