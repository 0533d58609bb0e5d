"""KIP-455 partition reassignment: KafkaController's two entry points, phases U, A and B, cancel.

Rules (KC = KafkaController.scala 3.9, KC:711-1207 and 1818-1937; reference §5.6):
- Entry points: the /admin/reassign_partitions znode (``process_zk_partition_reassignment``,
  KC:1818-1842) and the AlterPartitionReassignments API (KC:1854-1882, validated by
  ``validate_replicas`` KC:1884-1906; the API's partitions are first removed from the znode's
  reassignment, KC:1877). Both go through ``maybe_build_reassignment`` (KC:1908-1919: None
  cancels, back to the origin replicas) and ``maybe_trigger_partition_reassignment``
  (KC:871-899: queued topic or unknown partition -> UNKNOWN_TOPIC_OR_PARTITION, other errors
  -> UNKNOWN_SERVER_ERROR, ControllerMovedException re-raised).
- ``on_partition_reassignment`` (KC:779-814): mark the topic ineligible for deletion; phase U
  (write the topic znode, cache, stop replicas dropped by a replaced reassignment); if the target
  replicas are not all in the stored ISR, phase A (leader epoch + 1, LeaderAndIsr to origin
  (is_new false) and adding (is_new true) replicas through the controller's own batch, RSM
  NewReplica one call per adding replica); else phase B (B1 adding -> OnlineReplica, B2 cache
  the target, B3 move the leader if needed (Reassign strategy) or bump its epoch, B4-B5 four RSM
  calls for the removed replicas, B6 write the topic znode, B7 drop from the reassignment sets
  (deleting the znode and re-arming its watch when it empties), B8 UpdateMetadata to all, then
  resume the topic's deletion).
- ``update_leader_epoch`` (KC:1252-1289) loops while the write meets BADVERSION; here the loop is
  bounded (MAX_EPOCH_BUMP_ATTEMPTS) and then raises IllegalStateError.
- Below IBP 2.7-IV2 the state znode of each reassigning partition is watched
  (PartitionReassignmentIsrChange); from 2.7-IV2 AlterPartition and ISR notifications complete it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ctrlbatch.context import (
    IllegalStateError,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    PartitionState,
    ReplicaAssignment,
    ReplicaState,
    TopicPartition,
)

from . import znodes
from .api_errors import ApiError, Errors
from .election import ReassignPartitionLeaderElectionStrategy
from .errors import Code, ControllerMovedException, KeeperException, StateChangeFailedException
from .events import ApiPartitionReassignment, PartitionReassignmentIsrChange, ZkPartitionReassignment

if TYPE_CHECKING:
    from .kafka_controller import KafkaController

__all__ = [
    "initialize_partition_reassignments",
    "maybe_complete_reassignment",
    "maybe_resume_reassignments",
    "on_partition_reassignment",
    "process_api_partition_reassignment",
    "process_partition_reassignment_isr_change",
    "process_zk_partition_reassignment",
    "validate_replicas",
]

MAX_EPOCH_BUMP_ATTEMPTS = 1000
_PARTITION_DOES_NOT_EXIST = "The partition does not exist."


def _diff(left: Sequence[int], right: Sequence[int]) -> list[int]:
    """Scala's Seq.diff (multiset difference, left's order)."""
    pending = Counter(right)
    out = []
    for x in left:
        if pending[x] > 0:
            pending[x] -= 1
        else:
            out.append(x)
    return out


def _scala_list(ids: Iterable[int]) -> str:
    return "List(" + ", ".join(map(str, ids)) + ")"


def _scala_set(ids: Iterable[int]) -> str:
    items = sorted(ids)
    return ("Set(" if len(items) <= 4 else "HashSet(") + ", ".join(map(str, items)) + ")"


# ---------------------------------------------------------------------- entry points


def process_zk_partition_reassignment_event(kc: KafkaController, _event: ZkPartitionReassignment) -> None:
    process_zk_partition_reassignment(kc)


def process_zk_partition_reassignment(kc: KafkaController) -> set[TopicPartition]:
    """KC:1818-1842: start the znode's reassignments; returns the partitions started."""
    zk = kc.zk_client
    if not (kc.is_active and zk.register_znode_change_handler_and_check_existence(kc.handlers.partition_reassignment)):
        return set()
    results: dict[TopicPartition, ApiError] = {}
    to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
    for tp, targets in zk.get_partition_reassignment().items():
        built = maybe_build_reassignment(kc, tp, targets)
        if built is None:
            results[tp] = ApiError(Errors.NO_REASSIGNMENT_IN_PROGRESS)
        else:
            to_reassign[tp] = built
    results.update(maybe_trigger_partition_reassignment(kc, to_reassign))
    failed = {tp for tp, e in results.items() if e.error != Errors.NONE}
    if failed:
        kc.logger.warning("%sFailed reassignment through zk with the following errors: %s", kc.log_prefix,
                          {str(tp): results[tp] for tp in sorted(failed)})
        maybe_remove_from_zk_reassignment(kc, lambda tp, _replicas: tp in failed)
    return {tp for tp, e in results.items() if e.error == Errors.NONE}


def process_api_partition_reassignment(kc: KafkaController, event: ApiPartitionReassignment) -> None:
    """KC:1854-1882."""
    if not kc.is_active:
        event.callback(ApiError(Errors.NOT_CONTROLLER))
        return
    results: dict[TopicPartition, ApiError] = {}
    to_reassign: dict[TopicPartition, ReplicaAssignment] = {}
    for tp, targets in event.reassignments.items():
        error = None if targets is None else validate_replicas(kc, tp, targets)
        if error is not None:
            results[tp] = error
            continue
        built = maybe_build_reassignment(kc, tp, targets)
        if built is None:
            results[tp] = ApiError(Errors.NO_REASSIGNMENT_IN_PROGRESS)
        else:
            to_reassign[tp] = built
    maybe_remove_from_zk_reassignment(kc, lambda tp, _replicas: tp in to_reassign)
    results.update(maybe_trigger_partition_reassignment(kc, to_reassign))
    event.callback(results)


def validate_replicas(kc: KafkaController, tp: TopicPartition, replicas: Sequence[int]) -> ApiError | None:
    """KC:1884-1906."""
    replicas = list(replicas)
    if not replicas:
        return ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, "Empty replica list specified in partition reassignment.")
    if len(set(replicas)) != len(replicas):
        return ApiError(Errors.INVALID_REPLICA_ASSIGNMENT,
                        f"Duplicate replica ids in partition reassignment replica list: {_scala_list(replicas)}")
    if any(r < 0 for r in replicas):
        return ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in replica list: {_scala_list(replicas)}")
    ctx = kc.context
    new = ctx.partition_full_replica_assignment(tp).reassign_to(replicas)
    live = ctx.live_broker_ids
    if not set(new.adding_replicas) <= set(live):
        return ApiError(Errors.INVALID_REPLICA_ASSIGNMENT,
                        f"Replica assignment has brokers that are not alive. Replica list: "
                        f"{_scala_list(new.adding_replicas)}, live broker list: {_scala_set(live)}")
    return None


def maybe_build_reassignment(
    kc: KafkaController, tp: TopicPartition, targets: Sequence[int] | None
) -> ReplicaAssignment | None:
    """KC:1908-1919: None cancels an ongoing reassignment (back to the origin replicas)."""
    current = kc.context.partition_full_replica_assignment(tp)
    if current.is_being_reassigned:
        return current.reassign_to(current.origin_replicas if targets is None else targets)
    return None if targets is None else current.reassign_to(targets)


def maybe_trigger_partition_reassignment(
    kc: KafkaController, reassignments: Mapping[TopicPartition, ReplicaAssignment]
) -> dict[TopicPartition, ApiError]:
    """KC:871-899."""
    results: dict[TopicPartition, ApiError] = {}
    for tp, target in reassignments.items():
        if kc.topic_deletion_manager.is_topic_queued_up_for_deletion(tp.topic):
            kc.logger.info("%sSkipping reassignment of %s since the topic is currently being deleted", kc.log_prefix, tp)
            results[tp] = ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, _PARTITION_DOES_NOT_EXIST)
        elif kc.context.partition_replica_assignment(tp):
            try:
                on_partition_reassignment(kc, tp, target)
                results[tp] = ApiError(Errors.NONE)
            except ControllerMovedException:
                kc.logger.info("%sFailed completing reassignment of partition %s because controller has moved to another broker",
                               kc.log_prefix, tp)
                raise
            except Exception:
                kc.logger.error("%sError completing reassignment of partition %s", kc.log_prefix, tp, exc_info=True)
                results[tp] = ApiError(Errors.UNKNOWN_SERVER_ERROR)
        else:
            results[tp] = ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, _PARTITION_DOES_NOT_EXIST)
    return results


def initialize_partition_reassignments(kc: KafkaController) -> None:
    """KC:1010-1017: the znode's reassignments, then API ones not covered by it."""
    resumed = process_zk_partition_reassignment(kc)
    maybe_resume_reassignments(kc, lambda tp, _a: tp not in resumed)


def maybe_resume_reassignments(kc: KafkaController, should_resume: Callable[[TopicPartition, ReplicaAssignment], bool]) -> None:
    """KC:607-613 (over a snapshot: resuming may complete and remove a partition)."""
    ctx = kc.context
    for tp in sorted(ctx.partitions_being_reassigned):
        current = ctx.partition_full_replica_assignment(tp)
        if should_resume(tp, current):
            on_partition_reassignment(kc, tp, current)


def process_partition_reassignment_isr_change(kc: KafkaController, event: PartitionReassignmentIsrChange) -> None:
    """KC:1921-1927."""
    if kc.is_active and event.partition in kc.context.partitions_being_reassigned:
        maybe_complete_reassignment(kc, event.partition)


def maybe_complete_reassignment(kc: KafkaController, tp: TopicPartition) -> None:
    """KC:1929-1937."""
    current = kc.context.partition_full_replica_assignment(tp)
    if is_reassignment_complete(kc, tp, current):
        kc.logger.info("%sTarget replicas %s have all caught up with the leader for reassigning partition %s",
                       kc.log_prefix, _scala_list(current.target_replicas), tp)
        on_partition_reassignment(kc, tp, current)


# ---------------------------------------------------------------------- the phases


def on_partition_reassignment(kc: KafkaController, tp: TopicPartition, target: ReplicaAssignment) -> None:
    """KC:779-814."""
    ctx = kc.context
    rsm = kc.replica_state_machine
    kc.topic_deletion_manager.mark_topic_ineligible_for_deletion({tp.topic}, "topic reassignment in progress")
    update_current_reassignment(kc, tp, target)
    if not is_reassignment_complete(kc, tp, target):
        update_leader_epoch_and_send_request(kc, tp, target)  # A1
        for r in target.adding_replicas:  # A2, one call per replica (KC:1103-1109)
            rsm.handle_state_changes([PartitionAndReplica(tp, r)], ReplicaState.NewReplica)
        return
    rsm.handle_state_changes([PartitionAndReplica(tp, r) for r in target.adding_replicas], ReplicaState.OnlineReplica)  # B1
    completed = ReplicaAssignment(target.target_replicas)
    ctx.update_partition_full_replica_assignment(tp, completed)  # B2
    move_reassigned_partition_leader_if_required(kc, tp, completed)  # B3
    stop_removed_replicas_of_reassigned_partition(kc, tp, target.removing_replicas)  # B4, B5
    update_replica_assignment_for_partition(kc, tp, completed)  # B6
    remove_partition_from_reassigning_partitions(kc, tp, completed)  # B7
    kc.send_update_metadata_request(list(ctx.live_or_shutting_down_broker_ids), [tp])  # B8
    kc.topic_deletion_manager.resume_deletion_for_topics({tp.topic})


def update_current_reassignment(kc: KafkaController, tp: TopicPartition, target: ReplicaAssignment) -> None:
    """KC:831-855 (U1-U3)."""
    ctx = kc.context
    current = ctx.partition_full_replica_assignment(tp)
    if current != target:
        kc.logger.debug("%sUpdating assignment of partition %s from %s to %s", kc.log_prefix, tp, current, target)
        update_replica_assignment_for_partition(kc, tp, target)
        ctx.update_partition_full_replica_assignment(tp, target)
        unneeded = _diff(current.replicas, target.replicas)
        if unneeded:
            stop_removed_replicas_of_reassigned_partition(kc, tp, unneeded)
    if not kc.config.is_alter_partition_supported:
        kc.zk_client.register_znode_change_handler(kc.handlers.partition_reassignment_isr_change(tp))
    ctx.partitions_being_reassigned.add(tp)


def is_reassignment_complete(kc: KafkaController, tp: TopicPartition, assignment: ReplicaAssignment) -> bool:
    """KC:1039-1049: the stored ISR holds every target replica (a missing znode: not complete)."""
    if not assignment.is_being_reassigned:
        return True
    info = kc.zk_client.get_topic_partition_states([tp]).get(tp)
    return info is not None and set(assignment.target_replicas) <= set(info.leader_and_isr.isr)


def move_reassigned_partition_leader_if_required(kc: KafkaController, tp: TopicPartition, new: ReplicaAssignment) -> None:
    """KC:1051-1071."""
    ctx = kc.context
    info = ctx.partition_leadership_info(tp)
    if info is None:
        raise KeyError(f"None.get: no leadership cached for {tp}")  # Scala's Option.get
    leader = info.leader_and_isr.leader
    if leader in new.replicas and ctx.is_replica_online(leader, tp):
        kc.logger.info("%sLeader %d for partition %s being reassigned, is already in the new list of replicas %s and is alive",
                       kc.log_prefix, leader, tp, ",".join(map(str, new.replicas)))
        update_leader_epoch_and_send_request(kc, tp, new)
        return
    kc.logger.info("%sLeader %d for partition %s being reassigned, is not in the new list of replicas %s or is dead. "
                   "Re-electing leader", kc.log_prefix, leader, tp, ",".join(map(str, new.replicas)))
    kc.partition_state_machine.handle_state_changes(
        [tp], PartitionState.OnlinePartition, ReassignPartitionLeaderElectionStrategy()
    )


def stop_removed_replicas_of_reassigned_partition(kc: KafkaController, tp: TopicPartition, removed: Sequence[int]) -> None:
    """KC:1073-1083: Offline, DeletionStarted, DeletionSuccessful, NonExistent (four batches)."""
    replicas = [PartitionAndReplica(tp, r) for r in removed]
    rsm = kc.replica_state_machine
    for state in (ReplicaState.OfflineReplica, ReplicaState.ReplicaDeletionStarted,
                  ReplicaState.ReplicaDeletionSuccessful, ReplicaState.NonExistentReplica):
        rsm.handle_state_changes(replicas, state)


def update_replica_assignment_for_partition(kc: KafkaController, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
    """KC:1085-1101: write the whole topic's assignment with ``tp`` replaced (fenced)."""
    ctx = kc.context
    topic_assignment = ctx.partition_full_replica_assignment_for_topic(tp.topic)
    topic_assignment[tp] = assignment
    response = kc.zk_client.set_topic_assignment_raw(tp.topic, ctx.topic_ids.get(tp.topic), topic_assignment,
                                                     ctx.epoch_zk_version)
    if response.result_code == Code.OK:
        kc.logger.info("%sSuccessfully updated assignment of partition %s to %s", kc.log_prefix, tp, assignment)
    elif response.result_code == Code.NONODE:
        raise IllegalStateError(f"Failed to update assignment for {tp} since the topic has no current assignment")
    else:
        raise RuntimeError(str(response.result_exception)) from response.result_exception


def update_leader_epoch_and_send_request(kc: KafkaController, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
    """KC:1111-1140: bump the leader epoch, LeaderAndIsr to origin (not new) and adding (new) replicas."""
    updated = update_leader_epoch(kc, tp)
    batch = kc.broker_request_batch
    try:
        batch.new_batch()
        batch.add_leader_and_isr_request_for_brokers(assignment.origin_replicas, tp, updated, assignment, False)
        batch.add_leader_and_isr_request_for_brokers(assignment.adding_replicas, tp, updated, assignment, True)
        batch.send_requests_to_brokers(kc.epoch)
    except IllegalStateError as e:
        kc.handle_illegal_state(e)


def update_leader_epoch(kc: KafkaController, tp: TopicPartition) -> LeaderIsrAndControllerEpoch:
    """KC:1252-1289: the same leadership in the next leader epoch, written conditionally."""
    ctx = kc.context
    for _ in range(MAX_EPOCH_BUMP_ATTEMPTS):
        info = kc.zk_client.get_topic_partition_states([tp]).get(tp)
        if info is None:
            raise IllegalStateError(f"Cannot update leader epoch for partition {tp} as leaderAndIsr path is empty. "
                                    "This could mean we somehow tried to reassign a partition that doesn't exist")
        if info.controller_epoch > ctx.epoch:
            raise StateChangeFailedException(
                "Leader and isr path written by another controller. This probably means the current controller with "
                f"epoch {ctx.epoch} went through a soft failure and another controller was elected with epoch "
                f"{info.controller_epoch}. Aborting state change by this controller")
        result = kc.zk_client.update_leader_and_isr({tp: info.leader_and_isr.new_epoch()}, ctx.epoch, ctx.epoch_zk_version)
        written = result.finished_partitions.get(tp)
        if isinstance(written, Exception):
            raise written
        if written is not None:
            updated = LeaderIsrAndControllerEpoch(written, ctx.epoch)
            ctx.put_partition_leadership_info(tp, updated)
            kc.logger.info("%sUpdated leader epoch for partition %s to %d, zkVersion=%d", kc.log_prefix, tp,
                           written.leader_epoch, written.partition_epoch)
            return updated
    raise IllegalStateError(f"Gave up updating the leader epoch of {tp} after {MAX_EPOCH_BUMP_ATTEMPTS} conflicting writes")


def remove_partition_from_reassigning_partitions(kc: KafkaController, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
    """KC:1165-1177."""
    ctx = kc.context
    if tp not in ctx.partitions_being_reassigned:
        raise IllegalStateError("Cannot remove a reassigning partition because it is not present in memory")
    if not kc.config.is_alter_partition_supported:
        kc.zk_client.unregister_znode_change_handler(znodes.partition_state_path(tp))
    replicas = list(assignment.replicas)
    maybe_remove_from_zk_reassignment(kc, lambda p, r: p == tp and list(r) == replicas)
    ctx.partitions_being_reassigned.discard(tp)


def maybe_remove_from_zk_reassignment(kc: KafkaController, should_remove: Callable[[TopicPartition, Sequence[int]], bool]) -> None:
    """KC:1184-1207: removing the last entry deletes the znode and re-arms its watch."""
    zk = kc.zk_client
    if not zk.reassign_partitions_in_progress():
        return
    current = zk.get_partition_reassignment()
    remaining = {tp: r for tp, r in current.items() if not should_remove(tp, r)}
    removing = sorted(tp for tp in current if tp not in remaining)
    kc.logger.info("%sRemoving partitions %s from the list of reassigned partitions in zookeeper", kc.log_prefix,
                   ",".join(map(str, removing)))
    if not remaining:
        kc.logger.info("%sNo more partitions need to be reassigned. Deleting zk path %s", kc.log_prefix,
                       znodes.REASSIGN_PARTITIONS_PATH)
        zk.delete_partition_reassignment(kc.context.epoch_zk_version)
        kc.put(ZkPartitionReassignment())
    else:
        try:
            zk.set_or_create_partition_reassignment(remaining, kc.context.epoch_zk_version)
        except KeeperException as e:
            raise RuntimeError(f"AdminOperationException: {e}") from e


def unregister_partition_reassignment_isr_change_handlers(kc: KafkaController) -> None:
    """KC:1157-1163."""
    if not kc.config.is_alter_partition_supported:
        for tp in kc.context.partitions_being_reassigned:
            kc.zk_client.unregister_znode_change_handler(znodes.partition_state_path(tp))
