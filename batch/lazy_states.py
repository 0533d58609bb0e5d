"""A read-only sequence of partition states made only when first read: what a send hands the
builders in place of a list of states (lair_rows.LeaderAndIsrStates, partition_info.UpdateMetadataStates).

Rules:
- A subclass says how to make the whole list once (``_all``) and how many states there are
  (``__len__``, without making them); indexing, iteration and equality read the made list, so a
  view equals the list of states the batch used to hand over (and compares equal to any sequence
  of the same states, as a list does); like a list it is unhashable.
- ``KIND`` names the request in the repr, which never makes the states.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

__all__ = ["LazyStates"]

S = TypeVar("S")


class LazyStates(Sequence[S]):
    """The sequence protocol over ``_all()``: see the module rules."""

    __slots__ = ()
    KIND = "partition"

    @abstractmethod
    def _all(self) -> list[S]:
        """Every state, made on the first call and kept."""

    @abstractmethod
    def __len__(self) -> int:
        """How many states, without making them."""

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __iter__(self) -> Iterator[S]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return self._all() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{len(self)} {self.KIND} partition states>"
