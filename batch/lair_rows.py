"""The batch's LeaderAndIsr partition states held as rows of references, one row per add.

Rules:
- A LeaderAndIsr add (CCM:421-447) makes one row: the add's leadership and assignment objects
  (frozen: LeaderIsrAndControllerEpoch, ReplicaAssignment), its is_new flag and the leader. The
  batch's per-broker maps hold tp -> row number (an int, which the collector does not track),
  so a state is made only when read: `state(tp, row)` gives exactly the state the add made
  before rows existed (the same maker and values; tests/batch/test_lair_rows.py). An add whose
  inputs are not of those exact types makes its state at once (the attribute reads check it, as
  before) and the row holds that state.
- The leader recovery state is written from LeaderRecoveryState only from IBP 3.2 on (KIP-704):
  `gate`, fixed for the rows' batch (new_batch makes new rows).
- A sticky is_new (CCM:424) is a new row with the same references and is_new set.
- Why: the failover batch made 200,000 LeaderAndIsr states that outlived the adds (tracked
  objects: with the UpdateMetadata ones they made CPython collect the whole 1.2M-object context
  inside the batch); ints cost no collector time. send_requests_to_brokers hands the rows to the
  builders (`LeaderAndIsrStates`, a sequence made when read), which encode each row once per
  send (builders.py) without keeping a state.
"""

from __future__ import annotations

from typing import Any

import attrs

from ctrlbatch.context import TopicPartition
from ctrlbatch.requests import LeaderAndIsrPartitionState

from .lazy_states import LazyStates

LAIR_STATE_FIELDS = (
    "topic_name", "partition_index", "controller_epoch", "leader", "leader_epoch", "isr", "partition_epoch",
    "replicas", "adding_replicas", "removing_replicas", "is_new", "leader_recovery_state",
)
make_lair_state = LeaderAndIsrPartitionState.maker(*LAIR_STATE_FIELDS)
"""The trusted constructor of a LeaderAndIsr partition state (positional, in this order)."""


class LeaderAndIsrRows:
    """Parallel lists, one entry per row: partition, leadership (or a made state), assignment
    (None beside a made state), leader; `new` holds the rows with is_new set."""

    __slots__ = ("tps", "leadership", "assignment", "leaders", "new", "gate")

    def __init__(self, gate: bool = False) -> None:
        self.tps: list[TopicPartition] = []
        self.leadership: list[Any] = []
        self.assignment: list[Any] = []
        self.leaders: list[int] = []
        self.new: set[int] = set()
        self.gate = gate

    def __len__(self) -> int:
        return len(self.leaders)

    def add_state(self, tp: TopicPartition, state: LeaderAndIsrPartitionState) -> int:
        """A row holding a made state."""
        row = len(self.leaders)
        self.tps.append(tp)
        self.leadership.append(state)
        self.assignment.append(None)
        self.leaders.append(state.leader)
        if state.is_new:
            self.new.add(row)
        return row

    def renewed(self, tp: TopicPartition, row: int) -> int:
        """A row like `row` with is_new set (sticky, CCM:424)."""
        assignment = self.assignment[row]
        if assignment is None:
            return self.add_state(tp, attrs.evolve(self.state(tp, row), is_new=True))
        new = len(self.leaders)
        self.tps.append(tp)
        self.leadership.append(self.leadership[row])
        self.assignment.append(assignment)
        self.leaders.append(self.leaders[row])
        self.new.add(new)
        return new

    def state(self, tp: TopicPartition, row: int) -> LeaderAndIsrPartitionState:
        """The state row stands for (for partition tp)."""
        leadership = self.leadership[row]
        assignment = self.assignment[row]
        if assignment is None:
            return leadership  # type: ignore[no-any-return]
        lai = leadership.leader_and_isr
        return make_lair_state(  # type: ignore[no-any-return]
            tp.topic, tp.partition, leadership.controller_epoch, lai.leader, lai.leader_epoch, lai.isr,
            lai.partition_epoch, assignment.replicas, assignment.adding_replicas, assignment.removing_replicas,
            row in self.new, int(lai.leader_recovery_state) if self.gate else 0,
        )


class LeaderAndIsrStates(LazyStates[LeaderAndIsrPartitionState]):
    """One broker's LeaderAndIsr states of a send, in its map's order, made only when read (and
    then kept; a row read twice gives the same object through `made`, shared by the send)."""

    KIND = "LeaderAndIsr"
    __slots__ = ("rows", "keys", "row_numbers", "made", "_states")

    def __init__(
        self, rows: LeaderAndIsrRows, keys: list[TopicPartition], row_numbers: list[int],
        made: dict[int, LeaderAndIsrPartitionState],
    ) -> None:
        self.rows = rows
        self.keys = keys
        self.row_numbers = row_numbers
        self.made = made
        self._states: list[LeaderAndIsrPartitionState] | None = None

    def _all(self) -> list[LeaderAndIsrPartitionState]:
        if self._states is None:
            made = self.made
            state = self.rows.state
            out = []
            for tp, row in zip(self.keys, self.row_numbers, strict=True):
                s = made.get(row)
                if s is None:
                    s = made[row] = state(tp, row)
                out.append(s)
            self._states = out
        return self._states

    def __len__(self) -> int:
        return len(self.row_numbers)
