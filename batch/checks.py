"""The batch's checks of its public inputs: one TypeError/ValueError naming the parameter, what it
expects and what it got (issue 8). Rules: each check runs once, at the edge, before anything of
the call is stored; a check on the LeaderAndIsr add's hot path must cost (almost) nothing when
the input is right, so some run only after a cheap test fails (see request_batch.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ctrlbatch.context import MetadataVersion, TopicPartition
from ctrlbatch.context.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from ctrlbatch.context.replica_assignment import ReplicaAssignment


def type_name(value: object) -> str:
    return type(value).__name__


def expect(value: object, cls: type, param: str, what: str) -> None:
    """The edge check: value must be a cls (by type identity, the cheapest test)."""
    if type(value) is not cls and not isinstance(value, cls):
        hint = ""
        if isinstance(value, LeaderAndIsr) and cls is LeaderIsrAndControllerEpoch:
            hint = " (wrap it: LeaderIsrAndControllerEpoch(leader_and_isr, controller_epoch))"
        raise TypeError(f"{param} must be {what}, not {type_name(value)} {value!r:.80}{hint}")


def broker_targets(broker_ids: Iterable[int], param: str = "broker_ids") -> list[int]:
    """The ids >= 0 of broker_ids (CCM:421 and the like), checked to be ints first."""
    if type(broker_ids) is not tuple and type(broker_ids) is not list and (
        isinstance(broker_ids, str | bytes) or not isinstance(broker_ids, Iterable)
    ):
        raise TypeError(f"{param} must be an iterable of int broker ids, not {type_name(broker_ids)} {broker_ids!r:.80}")
    try:
        return [b for b in broker_ids if b >= 0]
    except TypeError:
        bad = [b for b in broker_ids if type(b) is not int][:1] if isinstance(broker_ids, Sequence) else []
        shown = f"{type_name(bad[0])} {bad[0]!r:.80}" if bad else "a value that is not an int"
        raise TypeError(f"{param} must hold int broker ids, not {shown}") from None


def check_lair_inputs(topic_partition: object, leadership: object, assignment: object) -> None:
    """The LeaderAndIsr add's argument types, named when wrong (run when building its state failed)."""
    expect(topic_partition, TopicPartition, "topic_partition", "a TopicPartition")
    expect(leadership, LeaderIsrAndControllerEpoch, "leader_isr_and_controller_epoch", "a LeaderIsrAndControllerEpoch")
    expect(assignment, ReplicaAssignment, "replica_assignment", "a ReplicaAssignment")


def int_tuple(values: Iterable[int], param: str) -> tuple[int, ...]:
    out = tuple(values)
    for v in out:
        if type(v) is not int:
            raise TypeError(f"{param} must hold int broker ids, not {type_name(v)} {v!r:.80}")
    return out


def metadata_version(value: object) -> MetadataVersion | Callable[[], MetadataVersion]:
    """The metadata_version argument: a MetadataVersion, its version string, or a callable."""
    if isinstance(value, MetadataVersion) or callable(value):
        return value
    if isinstance(value, str):
        try:
            return MetadataVersion.from_version_string(value)
        except ValueError:
            raise ValueError(
                f"metadata_version {value!r} is not a metadata version; expected e.g. '3.9-IV0' or '3.9' "
                f"(from {MetadataVersion.VERSIONS[0].version} to {MetadataVersion.LATEST_TESTING.version})"
            ) from None
    raise TypeError(
        f"metadata_version must be a MetadataVersion, a version string such as '3.9-IV0', or a callable "
        f"returning one, not {type_name(value)} {value!r:.80}"
    )
