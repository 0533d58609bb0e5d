"""The (topic, partition) key that every controller structure is indexed by.

Rules:
- Frozen, hashable and ordered by (topic, partition), like Kafka's ``TopicPartition``; the
  comparisons are written out (one tuple comparison in C) since attrs' generated ones cost ten
  times more, which showed when a 200,000-partition controller sorts its partitions.
- ``str()`` is Kafka's ``toString``: ``"<topic>-<partition>"``.
- The hash is cached on first use because hot paths look the same key up many times; attrs
  leaves the cached hash out of the pickled state, so a pickle moved to another process
  (whose string hashes differ) recomputes it.
- Pickles as its constructor arguments (compact when a context holding 200,000 of them ships).
- No validation: a context holds hundreds of thousands of these and Kafka checks nothing either.
"""

from __future__ import annotations

import attrs

__all__ = ["TopicPartition"]


@attrs.frozen(order=False, cache_hash=True)
class TopicPartition:
    """One partition of one topic."""

    topic: str
    partition: int

    def __lt__(self, other: object) -> bool:
        if other.__class__ is not TopicPartition:
            return NotImplemented
        return (self.topic, self.partition) < (other.topic, other.partition)

    def __le__(self, other: object) -> bool:
        if other.__class__ is not TopicPartition:
            return NotImplemented
        return (self.topic, self.partition) <= (other.topic, other.partition)

    def __gt__(self, other: object) -> bool:
        if other.__class__ is not TopicPartition:
            return NotImplemented
        return (self.topic, self.partition) > (other.topic, other.partition)

    def __ge__(self, other: object) -> bool:
        if other.__class__ is not TopicPartition:
            return NotImplemented
        return (self.topic, self.partition) >= (other.topic, other.partition)

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    def __reduce__(self) -> tuple[type[TopicPartition], tuple[str, int]]:
        # Constructor arguments pickle smaller and faster than attrs' per-instance state dict.
        return (TopicPartition, (self.topic, self.partition))
