"""A partition's replica assignment, including an in-flight reassignment.

Rules:
- ``replicas`` is the full ordered replica list; during a reassignment it contains both the
  ``adding_replicas`` and the ``removing_replicas``.
- All three are tuples of broker ids in their given order.
- The derived lists use Scala's ``Seq.diff`` (multiset difference, order of the left side kept).
- Values pickle as their constructor arguments: a context ships one per partition.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import ClassVar

import attrs

__all__ = ["ReplicaAssignment"]


def _to_ids(ids: Iterable[int]) -> tuple[int, ...]:
    return tuple(ids)


def _diff(left: Sequence[int], right: Sequence[int]) -> tuple[int, ...]:
    """Scala's ``left.diff(right)``: drop one occurrence of ``left``'s items per occurrence in ``right``."""
    pending = Counter(right)
    kept = []
    for item in left:
        if pending[item] > 0:
            pending[item] -= 1
        else:
            kept.append(item)
    return tuple(kept)


def _distinct(items: Iterable[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(items))


@attrs.frozen
class ReplicaAssignment:
    """Replicas of one partition, with the ones being added and removed by a reassignment."""

    EMPTY: ClassVar[ReplicaAssignment]

    replicas: tuple[int, ...] = attrs.field(converter=_to_ids)
    adding_replicas: tuple[int, ...] = attrs.field(default=(), converter=_to_ids)
    removing_replicas: tuple[int, ...] = attrs.field(default=(), converter=_to_ids)

    def __reduce__(self) -> tuple[type[ReplicaAssignment], tuple[tuple[int, ...], ...]]:
        # Constructor arguments pickle smaller and faster than attrs' per-instance state dict.
        return (ReplicaAssignment, (self.replicas, self.adding_replicas, self.removing_replicas))

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        """The replicas before the reassignment started."""
        return _diff(self.replicas, self.adding_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """The replicas once the reassignment completes."""
        return _diff(self.replicas, self.removing_replicas)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    def reassign_to(self, target: Iterable[int]) -> ReplicaAssignment:
        """The assignment while moving from the origin replicas to ``target``."""
        target = tuple(target)
        origin = self.origin_replicas
        full = _distinct(target + origin)
        return ReplicaAssignment(full, _diff(full, origin), _diff(full, target))

    def remove_replica(self, replica: int) -> ReplicaAssignment:
        """This assignment with ``replica`` dropped from all three lists."""
        return ReplicaAssignment(
            tuple(r for r in self.replicas if r != replica),
            tuple(r for r in self.adding_replicas if r != replica),
            tuple(r for r in self.removing_replicas if r != replica),
        )


ReplicaAssignment.EMPTY = ReplicaAssignment(())
