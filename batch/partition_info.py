"""The batch's UpdateMetadata partition map (Kafka's updateMetadataRequestPartitionInfoMap),
holding references to the context's data instead of one new state object per partition.

Rules:
- A mapping TopicPartition -> UpdateMetadataPartitionState, as Kafka's map (CCM:466-513): keys
  in first-add order, a later add of a partition replaces its value in place (the order stays).
- What it stores: a state added from the context's leadership (CCM:466-486) with no offline
  replica and its topic not queued for deletion (every partition of a failover) is kept as the
  two values the state is made of, the context's leadership object (frozen) and the replica
  tuple: no object is made per partition. Any other state (offline replicas, leader -2 while
  queued, Kafka's third overload with an explicit state, CCM:492-513) is kept as its state.
  A state read from the map is made from the stored values by the same maker, so it equals the
  state the batch stored before this map existed (tests/batch/test_partition_info.py).
- Why: the failover batch (200,000 partitions) made 200,000 states that outlived the adds; with
  the LeaderAndIsr states they were 400,000 new tracked objects, which made CPython run a full
  collection of the 1.2M-object context inside the batch (benchmarks/failover_gc_bench.py).
- send_requests_to_brokers hands the stored values (`detach`) to `UpdateMetadataStates`,
  a read-only sequence of the states in map order, made only when read (OutboundRequest.body,
  build()); builders.py encodes the body from it state by state without keeping any state.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

from ctrlbatch.context import TopicPartition
from ctrlbatch.requests import UpdateMetadataPartitionState

from .lazy_states import LazyStates

UMR_STATE_FIELDS = (
    "topic_name", "partition_index", "controller_epoch", "leader", "leader_epoch", "isr", "zk_version",
    "replicas", "offline_replicas",
)
make_umr_state = UpdateMetadataPartitionState.maker(*UMR_STATE_FIELDS)
"""The trusted constructor of an UpdateMetadata partition state (positional, in this order)."""


def state_of(tp: TopicPartition, value: Any, replicas: tuple[int, ...] | None) -> UpdateMetadataPartitionState:
    """The state a stored value stands for: the value itself when it is a state, else the
    leadership it references with the stored replicas and no offline replica (CCM:466-486)."""
    if type(value) is UpdateMetadataPartitionState:
        return value
    lai = value.leader_and_isr
    return make_umr_state(  # type: ignore[no-any-return]
        tp.topic, tp.partition, value.controller_epoch, lai.leader, lai.leader_epoch, lai.isr,
        lai.partition_epoch, replicas, (),
    )


class PartitionInfoMap(MutableMapping[TopicPartition, UpdateMetadataPartitionState]):
    """TopicPartition -> UpdateMetadataPartitionState, stored as references (module rules).

    refs: tp -> a state, or the context's leadership whose state has replicas[tp] and no offline
    replica; replicas: tp -> those replicas, or None beside a state. Both always hold the same
    keys in the same order (every write and delete touches both), so they can be zipped. The
    batch writes them directly on its hot path (`put_leadership`'s two lines, inline)."""

    __slots__ = ("refs", "replicas")

    def __init__(self) -> None:
        self.refs: dict[TopicPartition, Any] = {}
        self.replicas: dict[TopicPartition, tuple[int, ...] | None] = {}

    def put_leadership(self, tp: TopicPartition, leadership: Any, replicas: tuple[int, ...]) -> None:
        """Store tp's state from the context's leadership (frozen) and replicas, no offline replica."""
        self.refs[tp] = leadership
        self.replicas[tp] = replicas

    def __getitem__(self, tp: TopicPartition) -> UpdateMetadataPartitionState:
        value = self.refs[tp]
        return state_of(tp, value, self.replicas[tp])

    def __setitem__(self, tp: TopicPartition, state: UpdateMetadataPartitionState) -> None:
        if type(state) is not UpdateMetadataPartitionState:
            raise TypeError(f"value must be an UpdateMetadataPartitionState, not {type(state).__name__}")
        self.refs[tp] = state
        self.replicas[tp] = None

    def __delitem__(self, tp: TopicPartition) -> None:
        del self.refs[tp]
        del self.replicas[tp]

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self.refs)

    def __len__(self) -> int:
        return len(self.refs)

    def __contains__(self, tp: object) -> bool:
        return tp in self.refs

    def clear(self) -> None:
        self.refs.clear()
        self.replicas.clear()

    def detach(self) -> None:
        """Empty the map without clearing the dicts it held (an UpdateMetadataStates made from
        them, held by a sent request's builder, keeps them)."""
        self.refs = {}
        self.replicas = {}

    def __repr__(self) -> str:
        return f"PartitionInfoMap({dict(self.items())!r})"


class UpdateMetadataStates(LazyStates[UpdateMetadataPartitionState]):
    """The states of one UpdateMetadata send, in the map's order, made only when read
    (and then kept). `refs`/`replicas` as in PartitionInfoMap; builders.py encodes from them."""

    KIND = "UpdateMetadata"
    __slots__ = ("refs", "replicas", "_states")

    def __init__(self, refs: dict[TopicPartition, Any], replicas: dict[TopicPartition, tuple[int, ...] | None]) -> None:
        self.refs = refs
        self.replicas = replicas
        self._states: list[UpdateMetadataPartitionState] | None = None

    def _all(self) -> list[UpdateMetadataPartitionState]:
        if self._states is None:
            refs = self.refs
            self._states = [state_of(tp, v, r) for tp, v, r in zip(refs, refs.values(), self.replicas.values(), strict=True)]
        return self._states

    def __len__(self) -> int:
        return len(self.refs)
