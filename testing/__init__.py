"""ctrlbatch.testing: hypothesis strategies and state machines for users' own invariant tests.

- messages: `messages(cls, version)` draws message objects writable at that version.
- contexts: `controller_contexts()`, `metadata_versions()`, `context_mutations(context)`.
- batch_ops: `batch_ops(context)`, `batch_op_sequences(context)`: replayable add operations.
- state_machine: `BatchStateMachine` (subclass it; `.TestCase` runs it), `BatchModel`,
  `check_sent`, `check_frame`.
"""

from .batch_ops import (
    AddLeaderAndIsr,
    AddStopReplica,
    AddUpdateMetadata,
    BatchOp,
    apply_ops,
    batch_op_sequences,
    batch_ops,
    broker_id_lists,
    leader_and_isr_ops,
    op_partitions,
    stop_replica_ops,
    update_metadata_ops,
)
from .contexts import (
    ChannelContextView,
    ContextMutation,
    context_mutations,
    controller_contexts,
    known_partitions,
    leaderships,
    metadata_versions,
    referenced_broker_ids,
    replica_assignments,
)
from .messages import all_versions, messages, project, struct_of
from .state_machine import BatchModel, BatchStateMachine, check_frame, check_sent, predict_send_failure

__all__ = [
    "AddLeaderAndIsr",
    "AddStopReplica",
    "AddUpdateMetadata",
    "BatchModel",
    "BatchOp",
    "BatchStateMachine",
    "ChannelContextView",
    "ContextMutation",
    "all_versions",
    "apply_ops",
    "batch_op_sequences",
    "batch_ops",
    "broker_id_lists",
    "check_frame",
    "check_sent",
    "context_mutations",
    "controller_contexts",
    "known_partitions",
    "leader_and_isr_ops",
    "leaderships",
    "messages",
    "metadata_versions",
    "op_partitions",
    "predict_send_failure",
    "project",
    "referenced_broker_ids",
    "replica_assignments",
    "stop_replica_ops",
    "struct_of",
    "update_metadata_ops",
]
