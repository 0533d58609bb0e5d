"""A delta's cause (image/causes.py): each event named from its records, the first of CAUSES when a
delta holds several, the same whatever the records' order; and the rows carry it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctrlbatch.replay.image.causes import CAUSE_NAMES, CAUSES, OTHER, SNAPSHOT, delta_cause
from ctrlbatch.replay.log import records as rec
from ctrlbatch.replay.log.records import MetadataRecord
from ctrlbatch.replay.schema import metadata_classes as mc

T = uuid.UUID(int=7)

# One record per event, with the cause it alone gives.
EXAMPLES: list[tuple[str, int, Any]] = [
    ("metadata.version change", rec.FEATURE_LEVEL_RECORD, mc.FeatureLevelRecord(name="metadata.version", feature_level=21)),
    ("topic deletion", rec.REMOVE_TOPIC_RECORD, mc.RemoveTopicRecord(topic_id=T)),
    ("topic creation", rec.TOPIC_RECORD, mc.TopicRecord(name="t", topic_id=T)),
    ("partition creation", rec.PARTITION_RECORD, mc.PartitionRecord(partition_id=3, topic_id=T)),
    ("broker registration", rec.REGISTER_BROKER_RECORD, mc.RegisterBrokerRecord(broker_id=2)),
    ("broker unregistration", rec.UNREGISTER_BROKER_RECORD, mc.UnregisterBrokerRecord(broker_id=2)),
    ("controlled shutdown", rec.BROKER_REGISTRATION_CHANGE_RECORD,
     mc.BrokerRegistrationChangeRecord(broker_id=2, in_controlled_shutdown=1)),
    ("broker fence", rec.BROKER_REGISTRATION_CHANGE_RECORD, mc.BrokerRegistrationChangeRecord(broker_id=2, fenced=1)),
    ("broker fence", rec.FENCE_BROKER_RECORD, mc.FenceBrokerRecord(id=2)),
    ("broker unfence", rec.BROKER_REGISTRATION_CHANGE_RECORD, mc.BrokerRegistrationChangeRecord(broker_id=2, fenced=-1)),
    ("broker unfence", rec.UNFENCE_BROKER_RECORD, mc.UnfenceBrokerRecord(id=2)),
    ("reassignment", rec.PARTITION_CHANGE_RECORD, mc.PartitionChangeRecord(topic_id=T, adding_replicas=[4])),
    ("reassignment", rec.PARTITION_CHANGE_RECORD, mc.PartitionChangeRecord(topic_id=T, replicas=[1, 2])),
    ("reassignment", rec.PARTITION_CHANGE_RECORD, mc.PartitionChangeRecord(topic_id=T, removing_replicas=[])),
    ("leader election", rec.PARTITION_CHANGE_RECORD, mc.PartitionChangeRecord(topic_id=T, leader=-1)),
    ("ISR change", rec.PARTITION_CHANGE_RECORD, mc.PartitionChangeRecord(topic_id=T, isr=[1])),
    ("ISR change", rec.CLEAR_ELR_RECORD, mc.ClearElrRecord(topic_name="t")),
    (OTHER, rec.FEATURE_LEVEL_RECORD, mc.FeatureLevelRecord(name="kraft.version", feature_level=1)),
    (OTHER, rec.BROKER_REGISTRATION_CHANGE_RECORD, mc.BrokerRegistrationChangeRecord(broker_id=2)),
    (OTHER, rec.CONFIG_RECORD, mc.ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value="1")),
    (OTHER, rec.PRODUCER_IDS_RECORD, mc.ProducerIdsRecord(broker_id=1, next_producer_id=1000)),
]


def _record(offset: int, type_id: int, data: Any) -> MetadataRecord:
    return MetadataRecord(offset, type_id, 0, data)


@pytest.mark.parametrize(("cause", "type_id", "data"), EXAMPLES, ids=[f"{c}-{t}" for c, t, _d in EXAMPLES])
def test_each_event_alone_names_its_cause(cause: str, type_id: int, data: Any) -> None:
    assert delta_cause([_record(5, type_id, data)]) == cause


def test_the_table_names_each_cause_once_and_every_example_is_a_cause() -> None:
    assert len(set(CAUSE_NAMES)) == len(CAUSES) and CAUSE_NAMES[0] == SNAPSHOT and CAUSE_NAMES[-1] == OTHER
    assert {c for c, _t, _d in EXAMPLES} == set(CAUSE_NAMES) - {SNAPSHOT}  # every cause is reachable from records


def test_no_records_is_other_never_snapshot() -> None:
    assert delta_cause([]) == OTHER  # the snapshot's pseudo-delta is named by the engine


@given(st.lists(st.sampled_from(range(len(EXAMPLES))), min_size=1, max_size=8), st.randoms())
def test_the_first_cause_of_the_table_wins_in_any_record_order(picks: list[int], rnd: Any) -> None:
    records = [_record(i, EXAMPLES[k][1], EXAMPLES[k][2]) for i, k in enumerate(picks)]
    expected = min((EXAMPLES[k][0] for k in picks), key=CAUSE_NAMES.index)
    assert delta_cause(records) == expected
    rnd.shuffle(records)
    assert delta_cause(records) == expected
