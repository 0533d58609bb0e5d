"""Why a delta sent requests: the event its records show, one name per delta (the rows' ``cause``).

Rules:
- The cause is read from the delta's records alone (no image), so both engines, and every Spark
  unit, name a delta the same way; it costs one pass over the record types of a delta that
  sends requests (deltas of NoOps only never get here), and a pass over its partition changes
  only when nothing ranked higher was found.
- A delta may hold several events: a metadata transaction, ``--coalesce``, a broker's fence with
  the leader moves it forces (PartitionChangeRecords beside the BrokerRegistrationChangeRecord,
  as Kafka's controller writes them: ReplicationControlManager.handleBrokerFenced). Its cause is
  the first entry of ``CAUSES`` whose test its records pass: the table is ordered from the events
  that rewrite the most of the cluster (a snapshot, metadata.version, topics, brokers) to the
  ones that touch single partitions, so the name given explains the bulk of the requests.
- The snapshot's pseudo-delta (the replay started from a snapshot: its whole image) has no
  records of its own; the engine names it ``SNAPSHOT``.
- Names are fixed strings (a dictionary-encoded Parquet column, a handful of values); the record
  fields read are the specs' (metadata/*.json): BrokerRegistrationChangeRecord's Fenced (1 fenced,
  -1 unfenced) and InControlledShutdown (1), PartitionChangeRecord's Leader (-2: no change) and
  Replicas, AddingReplicas, RemovingReplicas (null: no change).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from ..log.records import (
    BROKER_REGISTRATION_CHANGE_RECORD,
    CLEAR_ELR_RECORD,
    FEATURE_LEVEL_RECORD,
    FENCE_BROKER_RECORD,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    REMOVE_TOPIC_RECORD,
    TOPIC_RECORD,
    UNFENCE_BROKER_RECORD,
    UNREGISTER_BROKER_RECORD,
)

__all__ = ["CAUSES", "CAUSE_NAMES", "OTHER", "SNAPSHOT", "delta_cause"]

SNAPSHOT = "snapshot"
OTHER = "other"
NO_LEADER_CHANGE = -2  # PartitionChangeRecord.Leader's default


def _any(records: Sequence[Any], type_id: int, test: Callable[[Any], bool]) -> bool:
    return any(r.type == type_id and test(r.data) for r in records)


def _moves_replicas(d: Any) -> bool:
    return d.replicas is not None or d.adding_replicas is not None or d.removing_replicas is not None


_Test = Callable[[Collection[int], Sequence[Any]], bool]

# (name, what it means, test on (the delta's record types, its records)), in the order tried.
CAUSES: tuple[tuple[str, str, _Test], ...] = (
    (SNAPSHOT, "the replay started from a snapshot: every broker is sent its whole image",
     lambda types, records: False),
    ("metadata.version change", "a FeatureLevelRecord for metadata.version (an upgrade or downgrade)",
     lambda types, records: FEATURE_LEVEL_RECORD in types
     and _any(records, FEATURE_LEVEL_RECORD, lambda d: d.name == "metadata.version")),
    ("topic deletion", "a RemoveTopicRecord", lambda types, records: REMOVE_TOPIC_RECORD in types),
    ("topic creation", "a TopicRecord (with its PartitionRecords)", lambda types, records: TOPIC_RECORD in types),
    ("partition creation", "PartitionRecords for an existing topic (partitions added)",
     lambda types, records: PARTITION_RECORD in types),
    ("broker registration", "a RegisterBrokerRecord: a broker started or restarted",
     lambda types, records: REGISTER_BROKER_RECORD in types),
    ("broker unregistration", "an UnregisterBrokerRecord: a broker removed from the cluster",
     lambda types, records: UNREGISTER_BROKER_RECORD in types),
    ("controlled shutdown", "a BrokerRegistrationChangeRecord with InControlledShutdown 1",
     lambda types, records: BROKER_REGISTRATION_CHANGE_RECORD in types
     and _any(records, BROKER_REGISTRATION_CHANGE_RECORD, lambda d: d.in_controlled_shutdown == 1)),
    ("broker fence", "a FenceBrokerRecord, or a BrokerRegistrationChangeRecord with Fenced 1",
     lambda types, records: FENCE_BROKER_RECORD in types or (
         BROKER_REGISTRATION_CHANGE_RECORD in types
         and _any(records, BROKER_REGISTRATION_CHANGE_RECORD, lambda d: d.fenced == 1))),
    ("broker unfence", "an UnfenceBrokerRecord, or a BrokerRegistrationChangeRecord with Fenced -1",
     lambda types, records: UNFENCE_BROKER_RECORD in types or (
         BROKER_REGISTRATION_CHANGE_RECORD in types
         and _any(records, BROKER_REGISTRATION_CHANGE_RECORD, lambda d: d.fenced == -1))),
    ("reassignment", "a PartitionChangeRecord that sets Replicas, AddingReplicas or RemovingReplicas",
     lambda types, records: PARTITION_CHANGE_RECORD in types
     and _any(records, PARTITION_CHANGE_RECORD, _moves_replicas)),
    ("leader election", "a PartitionChangeRecord with a new Leader",
     lambda types, records: PARTITION_CHANGE_RECORD in types
     and _any(records, PARTITION_CHANGE_RECORD, lambda d: d.leader != NO_LEADER_CHANGE)),
    ("ISR change", "any other PartitionChangeRecord (ISR, ELR, directories), or a ClearElrRecord",
     lambda types, records: PARTITION_CHANGE_RECORD in types or CLEAR_ELR_RECORD in types),
    (OTHER, "none of the above (configs, quotas, ACLs, ...)", lambda types, records: True),
)
CAUSE_NAMES: tuple[str, ...] = tuple(name for name, _what, _test in CAUSES)


def delta_cause(records: Sequence[Any]) -> str:
    """The cause of a delta with these records (MetadataRecord values): see the module rules."""
    types = {r.type for r in records}
    return next(name for name, _what, test in CAUSES if test(types, records))
