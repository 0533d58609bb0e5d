"""KraftDecisions: the metadata records Kafka 3.9's KRaft controller writes for each cluster event, sans I/O.

Rules (RCM = ReplicationControlManager.java, PCB = PartitionChangeBuilder.java, PRR =
PartitionReassignmentReplicas.java, CCM = ClusterControlManager.java, QC = QuorumController.java,
all metadata/src/main/java/org/apache/kafka/controller at Kafka 3.9; metadata.version 3.9-IV0, so
BrokerRegistrationChangeRecord for fencing, no ELR, and ZooKeeper migration on):
- ``partition_change`` is PartitionChangeBuilder.build (PCB:446-486): complete a reassignment
  whose adding replicas are all in the target ISR (PCB:425-444, PRR maybeCompleteReassignment:
  drop the removing replicas from replicas and ISR, refused when either would be empty); elect
  (PCB:228-329): PREFERRED takes the first target replica if it is in the target ISR and an
  acceptable leader, else keeps the current leader if valid, else the next valid replica; ONLINE
  and UNCLEAN keep a valid current leader, else take the first valid replica in assignment order;
  UNCLEAN then takes the first acceptable replica, setting ISR [leader] and leader recovery state
  RECOVERING (PCB:337-376); none: leader -1 (NO_LEADER). A changed leader bumps the epoch; so do
  a replica removal (PCB:378-394) and, under migration, every ISR shrink (PCB:396-423: the record
  sets the unchanged leader). An empty target ISR is never written without ELR (PCB:462-469): the
  last ISR member stays, with leader -1. A record that changes nothing is not written.
- A leader is acceptable when its broker is registered, unfenced and not in controlled shutdown
  (CCM:741-745 isActive), except the broker being removed, and the broker being unfenced counts
  as active (RCM:1910-1917).
- Broker events (RCM:1288-1380): fenced (and SHUTDOWN_NOW, QC: processBrokerHeartbeat) and
  unregistered: every partition with the broker in its ISR is rebuilt with it out of the target ISR
  and not acceptable, then BrokerRegistrationChangeRecord(fenced) / UnregisterBrokerRecord;
  unfenced: BrokerRegistrationChangeRecord(unfence), then every leaderless partition is rebuilt
  (the broker acceptable); controlled shutdown: BrokerRegistrationChangeRecord(in controlled
  shutdown) unless already, then as fenced. A (re-)registration writes RegisterBrokerRecord, fenced
  (CCM registerBroker); at 3.9 a new incarnation changes no partition (RCM:1382-1387 returns
  without ELR).
- Topics (RCM:690-710, 1746-1830): a partition's ISR is its active replicas in assignment order,
  its leader the first of them, epochs 0; none active: INVALID_REPLICA_ASSIGNMENT with Kafka's
  message; an assignment naming an unregistered broker, or one twice, is refused as
  validateManualPartitionAssignment does (RCM:1842-1865). Deletion: RemoveTopicRecord (the propagator sends StopReplica and leader -2).
- Reassignment (RCM:2100-2132, PRR): replicas = target + (current - target), adding = target -
  current, removing = current - target, through partition_change (it completes at once if the
  adding replicas are already in the ISR). The ISR grows only by AlterPartition
  (``alter_partition``: the leader's new ISR as the target ISR), which completes a reassignment.
- Elections (RCM:1485-1530): PREFERRED when the leader is not the first replica, UNCLEAN when the
  partition has no leader; else ELECTION_NOT_NEEDED; no record: PREFERRED_LEADER_NOT_AVAILABLE /
  ELIGIBLE_LEADERS_NOT_AVAILABLE. The automatic balance (RCM:1632-1671) is a PREFERRED election for
  every partition whose leader is not its first replica; the unclean check (RCM:1690-1717) an
  UNCLEAN election for every leaderless partition of a topic with unclean.leader.election.enable,
  at most 1000 a run. Broker events elect uncleanly in those topics too (RCM:1940-1942).
Every partition scan is one pass over the image (Kafka keeps brokersToIsrs indexes; the pass is
O(partitions) per event, never quadratic).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from ctrlbatch.replay.image.image import BrokerRegistration, MetadataImage, PartitionRegistration
from ctrlbatch.replay.schema.metadata_classes import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
)

__all__ = [
    "ONLINE", "PREFERRED", "UNCLEAN", "NO_LEADER", "KraftError", "acceptable", "alter_partition", "broker_fenced",
    "broker_in_controlled_shutdown", "broker_unfenced", "broker_unregistered", "create_partitions",
    "elect_leader", "elect_unclean_leaders", "imbalanced", "leaderless", "topic_config", "partition_change", "reassign", "register_broker", "remove_topic",
]

ONLINE, PREFERRED, UNCLEAN = "ONLINE", "PREFERRED", "UNCLEAN"
NO_LEADER = -1
MAX_ELECTIONS = 1000  # RCM MAX_ELECTIONS_PER_IMBALANCE (QC:1951)
TOPIC_RESOURCE = 2
NO_LEADER_CHANGE = -2
RECOVERING = 1
FENCE, UNFENCE = 1, -1  # BrokerRegistrationFencingChange
IN_CONTROLLED_SHUTDOWN = 1
ELECTION_NOT_NEEDED = "ELECTION_NOT_NEEDED"
PREFERRED_LEADER_NOT_AVAILABLE = "PREFERRED_LEADER_NOT_AVAILABLE"
ELIGIBLE_LEADERS_NOT_AVAILABLE = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
Record = Any  # a generated metadata record class


class KraftError(Exception):
    """A request the KRaft controller refuses (error name and Kafka's message)."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(f"{error}: {message}")
        self.error = error


def acceptable(image: MetadataImage, *, remove: int = NO_LEADER, add: int = NO_LEADER) -> Callable[[int], bool]:
    """RCM:1916-1917 over CCM:741-745 isActive."""
    brokers = image.brokers

    def test(r: int) -> bool:
        if r == remove:
            return False
        if r == add:
            return True
        reg = brokers.get(r)
        return reg is not None and not reg.fenced and not reg.in_controlled_shutdown

    return test


def _elect(p: PartitionRegistration, replicas: Sequence[int], isr: Sequence[int], ok: Callable[[int], bool],
           election: str) -> tuple[int, bool]:
    """PCB:228-329 without ELR: (leader, unclean)."""
    def valid(r: int) -> bool:
        return r in isr and ok(r)

    if election == PREFERRED:
        if replicas and valid(replicas[0]):
            return replicas[0], False
        if valid(p.leader):
            return p.leader, False
        return next((r for r in replicas[1:] if valid(r)), NO_LEADER), False
    if valid(p.leader):
        return p.leader, False
    online = next((r for r in replicas if valid(r)), None)
    if online is not None:
        return online, False
    if election == UNCLEAN:
        unclean = next((r for r in replicas if ok(r)), None)
        if unclean is not None:
            return unclean, True
    return NO_LEADER, False


def partition_change(
    p: PartitionRegistration, topic_id: uuid.UUID, partition_id: int, ok: Callable[[int], bool], *,
    target_isr: Sequence[int] | None = None, target_replicas: Sequence[int] | None = None,
    target_adding: Sequence[int] | None = None, target_removing: Sequence[int] | None = None,
    election: str = ONLINE,
) -> PartitionChangeRecord | None:
    """PartitionChangeBuilder.build (see the module rules); None when nothing changes."""
    isr = list(p.isr if target_isr is None else target_isr)
    replicas = list(p.replicas if target_replicas is None else target_replicas)
    adding = list(p.adding_replicas if target_adding is None else target_adding)
    removing = list(p.removing_replicas if target_removing is None else target_removing)
    if adding or removing:  # PCB:425-444, PRR maybeCompleteReassignment
        new_isr, new_replicas = [r for r in isr if r not in removing], [r for r in replicas if r not in removing]
        if new_isr and new_replicas and all(r in new_isr for r in new_replicas):
            isr, replicas, adding, removing = new_isr, new_replicas, [], []
    leader = NO_LEADER_CHANGE
    record_isr: list[int] | None = None
    recovery = -1
    node, unclean = _elect(p, replicas, isr, ok, election)
    if node != p.leader:  # PCB:337-376
        leader = node
        if unclean:
            record_isr = [node]
            if p.leader_recovery_state != RECOVERING:
                recovery = RECOVERING
    if leader == NO_LEADER_CHANGE and not set(p.replicas) <= set(replicas):  # PCB:378-394
        leader = p.leader
    if record_isr is None and isr and isr != list(p.isr):  # PCB:462-469 (no ELR: never empty)
        record_isr = isr
    if leader == NO_LEADER_CHANGE and record_isr is not None and not set(p.isr) <= set(record_isr):
        leader = p.leader  # PCB:396-423, ZooKeeper migration on
    fields: dict[str, Any] = {}
    if replicas and replicas != list(p.replicas):
        fields["replicas"] = replicas
    if removing != list(p.removing_replicas):
        fields["removing_replicas"] = removing
    if adding != list(p.adding_replicas):
        fields["adding_replicas"] = adding
    if record_isr is not None:
        fields["isr"] = record_isr
    if leader != NO_LEADER_CHANGE:
        fields["leader"] = leader
    if recovery != -1:
        fields["leader_recovery_state"] = recovery
    if not fields:
        return None
    return PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id, **fields)


def _partitions(image: MetadataImage) -> Iterator[tuple[uuid.UUID, int, PartitionRegistration]]:
    for tid, topic in image.topics.items():
        for pid, p in topic.partitions.items():
            yield tid, pid, p


def _rebuild(image: MetadataImage, which: Callable[[PartitionRegistration], bool], ok: Callable[[int], bool],
             remove: int = NO_LEADER, unclean: frozenset[str] = frozenset()) -> list[Record]:
    """RCM:1891-1945 generateLeaderAndIsrUpdates: the target ISR without ``remove``; UNCLEAN
    election for the topics whose unclean.leader.election.enable is true (RCM:1940-1942)."""
    out: list[Record] = []
    for tid, pid, p in _partitions(image):
        if which(p):
            election = UNCLEAN if unclean and image.topics[tid].name in unclean else ONLINE
            rec = partition_change(p, tid, pid, ok, target_isr=[r for r in p.isr if r != remove], election=election)
            if rec is not None:
                out.append(rec)
    return out


def broker_fenced(image: MetadataImage, broker_id: int, unclean: frozenset[str] = frozenset()) -> list[Record]:
    """RCM:1288-1305 handleBrokerFenced (also SHUTDOWN_NOW)."""
    reg = image.brokers[broker_id]
    out = _rebuild(image, lambda p: broker_id in p.isr, acceptable(image, remove=broker_id), broker_id, unclean)
    out.append(BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=reg.epoch, fenced=FENCE))
    return out


def broker_unregistered(image: MetadataImage, broker_id: int, unclean: frozenset[str] = frozenset()) -> list[Record]:
    """RCM:1317-1326 handleBrokerUnregistered."""
    reg = image.brokers[broker_id]
    out = _rebuild(image, lambda p: broker_id in p.isr, acceptable(image, remove=broker_id), broker_id, unclean)
    out.append(UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=reg.epoch))
    return out


def broker_unfenced(image: MetadataImage, broker_id: int, unclean: frozenset[str] = frozenset()) -> list[Record]:
    """RCM:1339-1351 handleBrokerUnfenced: the record first, then leaderless partitions."""
    reg = image.brokers[broker_id]
    out: list[Record] = [BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=reg.epoch, fenced=UNFENCE)]
    out += _rebuild(image, lambda p: p.leader == NO_LEADER, acceptable(image, add=broker_id), unclean=unclean)
    return out


def broker_in_controlled_shutdown(image: MetadataImage, broker_id: int, unclean: frozenset[str] = frozenset()) -> list[Record]:
    """RCM:1364-1375 handleBrokerInControlledShutdown."""
    reg = image.brokers[broker_id]
    out: list[Record] = []
    if not reg.in_controlled_shutdown:
        out.append(BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=reg.epoch,
                                                  in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN))
    # the record is not applied yet: the broker is excluded as brokerToRemove
    out += _rebuild(image, lambda p: broker_id in p.isr, acceptable(image, remove=broker_id), broker_id, unclean)
    return out


def register_broker(broker_id: int, epoch: int, incarnation_id: uuid.UUID,
                    listeners: Iterable[tuple[str, str, int, int]], rack: str | None,
                    features: Mapping[str, tuple[int, int]], log_dirs: Sequence[uuid.UUID], *,
                    migrating: bool = True, fenced: bool = True, in_controlled_shutdown: bool = False) -> Record:
    """CCM registerBroker: the registration record (a new incarnation registers fenced)."""
    return RegisterBrokerRecord(
        broker_id=broker_id, is_migrating_zk_broker=migrating, incarnation_id=incarnation_id, broker_epoch=epoch,
        end_points=tuple(RegisterBrokerRecord.BrokerEndpoint(name=n, host=h, port=p, security_protocol=sp)
                         for n, h, p, sp in listeners),
        features=tuple(RegisterBrokerRecord.BrokerFeature(name=n, min_supported_version=lo, max_supported_version=hi)
                       for n, (lo, hi) in sorted(features.items())),
        rack=rack, fenced=fenced, in_controlled_shutdown=in_controlled_shutdown, log_dirs=tuple(log_dirs),
    )


def validate_assignment(image: MetadataImage, replicas: Sequence[int]) -> None:
    """RCM:1842-1865 validateManualPartitionAssignment (the replication factor check aside)."""
    if not replicas:
        raise KraftError("INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes an empty replica list.")
    prev = None
    for b in sorted(replicas):
        if b not in image.brokers:
            raise KraftError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes broker {b}, but "
                             "no such broker is registered.")
        if b == prev:
            raise KraftError("INVALID_REPLICA_ASSIGNMENT", f"The manual partition assignment includes the broker {b} "
                             "more than once.")
        prev = b


def _new_partition(image: MetadataImage, topic_id: uuid.UUID, pid: int, replicas: Sequence[int]) -> Record:
    validate_assignment(image, replicas)
    ok = acceptable(image)
    isr = [r for r in replicas if ok(r)]
    if not isr:
        raise KraftError("INVALID_REPLICA_ASSIGNMENT", "All brokers specified in the manual partition assignment for "
                         f"partition {pid} are fenced or in controlled shutdown.")
    return PartitionRecord(partition_id=pid, topic_id=topic_id, replicas=tuple(replicas), isr=tuple(isr),
                           leader=isr[0], leader_epoch=0, partition_epoch=0)


def create_topic(image: MetadataImage, name: str, topic_id: uuid.UUID, assignment: Sequence[Sequence[int]]) -> list[Record]:
    """RCM:690-710: TopicRecord, then a PartitionRecord per partition."""
    if name in image.topic_ids_by_name:
        raise KraftError("TOPIC_ALREADY_EXISTS", f"Topic '{name}' already exists.")
    return [TopicRecord(name=name, topic_id=topic_id),
            *(_new_partition(image, topic_id, p, r) for p, r in enumerate(assignment))]


def create_partitions(image: MetadataImage, name: str, assignment: Mapping[int, Sequence[int]]) -> list[Record]:
    """RCM:1746-1830: a PartitionRecord for each new partition (consecutive after the existing)."""
    topic = image.topic_by_name(name)
    if topic is None:
        raise KraftError("UNKNOWN_TOPIC_OR_PARTITION", f"No such topic as {name}")
    expected = list(range(len(topic.partitions), len(topic.partitions) + len(assignment)))
    if sorted(assignment) != expected:
        raise KraftError("INVALID_REPLICA_ASSIGNMENT", f"new partitions of {name} must be {expected}")
    return [_new_partition(image, topic.id, p, assignment[p]) for p in expected]


def remove_topic(image: MetadataImage, name: str) -> list[Record]:
    topic = image.topic_by_name(name)
    if topic is None:
        raise KraftError("UNKNOWN_TOPIC_OR_PARTITION", f"No such topic as {name}")
    return [RemoveTopicRecord(topic_id=topic.id)]


def _find(image: MetadataImage, name: str, pid: int) -> tuple[uuid.UUID, PartitionRegistration]:
    topic = image.topic_by_name(name)
    p = None if topic is None else topic.partitions.get(pid)
    if topic is None or p is None:
        raise KraftError("UNKNOWN_TOPIC_OR_PARTITION", f"No such partition as {name}-{pid}")
    return topic.id, p


def reassign(image: MetadataImage, name: str, pid: int, target: Sequence[int]) -> Record | None:
    """RCM:2100-2132 changePartitionReassignment with PRR's replica sets."""
    tid, p = _find(image, name, pid)
    validate_assignment(image, target)
    removing = [r for r in p.replicas if r not in target]
    adding = [r for r in target if r not in p.replicas]
    replicas = [*target, *removing]
    return partition_change(p, tid, pid, acceptable(image), target_replicas=replicas,
                            target_adding=adding, target_removing=removing)


def alter_partition(image: MetadataImage, name: str, pid: int, new_isr: Sequence[int]) -> Record | None:
    """AlterPartition from the leader: the new ISR as the target (it completes a reassignment)."""
    tid, p = _find(image, name, pid)
    return partition_change(p, tid, pid, acceptable(image), target_isr=new_isr)


def elect_leader(image: MetadataImage, name: str, pid: int, unclean: bool) -> Record | str:
    """RCM:1485-1530: the record, or the error's name."""
    tid, p = _find(image, name, pid)
    if (not unclean and p.replicas and p.leader == p.replicas[0]) or (unclean and p.leader != NO_LEADER):
        return ELECTION_NOT_NEEDED
    rec = partition_change(p, tid, pid, acceptable(image), election=UNCLEAN if unclean else PREFERRED)
    if rec is None:
        return ELIGIBLE_LEADERS_NOT_AVAILABLE if unclean else PREFERRED_LEADER_NOT_AVAILABLE
    return rec


def imbalanced(image: MetadataImage) -> list[Record]:
    """RCM:1632-1671: a PREFERRED election for each partition not led by its first replica."""
    ok = acceptable(image)
    out: list[Record] = []
    for tid, pid, p in _partitions(image):
        if p.replicas and p.leader != p.replicas[0]:
            rec = partition_change(p, tid, pid, ok, election=PREFERRED)
            if rec is not None:
                out.append(rec)
    return out


def registration(image: MetadataImage, broker_id: int) -> BrokerRegistration | None:
    return image.brokers.get(broker_id)


def leaderless(image: MetadataImage) -> bool:
    """areSomePartitionsLeaderless (QC:1406-1408)."""
    return any(p.leader == NO_LEADER for _, _, p in _partitions(image))


def elect_unclean_leaders(image: MetadataImage, unclean: frozenset[str], max_elections: int = MAX_ELECTIONS) -> list[Record]:
    """RCM:1690-1717 maybeTriggerUncleanLeaderElectionForLeaderlessPartitions: an UNCLEAN
    election (elect_leader) for each leaderless partition of a topic with unclean election on."""
    out: list[Record] = []
    for tid, pid, p in _partitions(image):
        if len(out) >= max_elections:
            break
        name = image.topics[tid].name
        if p.leader == NO_LEADER and name in unclean:
            result = elect_leader(image, name, pid, True)
            if not isinstance(result, str):
                out.append(result)
    return out


def topic_config(topic: str, name: str, value: str | None) -> Record:
    """A topic's ConfigRecord (resource type 2, TOPIC), as ConfigurationControlManager writes it."""
    return ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=topic, name=name, value=value)
