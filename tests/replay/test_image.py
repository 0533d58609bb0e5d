"""MetadataDelta semantics of apply_delta (kafka-metadata-records.md §3-7), record by record."""

from __future__ import annotations

import pickle
import uuid
from typing import Any

import pytest

from ctrlbatch.context import MetadataVersion
from ctrlbatch.replay.image.image import (
    EMPTY_IMAGE,
    MetadataImage,
    MetadataReplayError,
    PartitionRegistration,
    apply_delta,
)
from ctrlbatch.replay.log.records import (
    BROKER_REGISTRATION_CHANGE_RECORD,
    CONFIG_RECORD,
    FEATURE_LEVEL_RECORD,
    FENCE_BROKER_RECORD,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    REGISTER_CONTROLLER_RECORD,
    REMOVE_TOPIC_RECORD,
    TOPIC_RECORD,
    UNFENCE_BROKER_RECORD,
    UNREGISTER_BROKER_RECORD,
    MetadataRecord,
)
from ctrlbatch.replay.schema.record_classes import record_class

T = uuid.UUID(int=1)


def rec(offset: int, type_id: int, version: int = 0, **fields: Any) -> MetadataRecord:
    cls = record_class(type_id)
    assert cls is not None
    return MetadataRecord(offset, type_id, version, cls(**fields))


def register(offset: int, broker: int, **fields: Any) -> MetadataRecord:
    cls: Any = record_class(REGISTER_BROKER_RECORD)
    endpoints = (
        cls.BrokerEndpoint(name="SSL", host="s", port=1, security_protocol=1),
        cls.BrokerEndpoint(name="PLAINTEXT", host="p", port=2, security_protocol=0),
    )
    features = (cls.BrokerFeature(name="z", min_supported_version=0, max_supported_version=1),
                cls.BrokerFeature(name="a", min_supported_version=1, max_supported_version=2))
    return rec(offset, REGISTER_BROKER_RECORD, 3, broker_id=broker, broker_epoch=offset, end_points=endpoints,
               features=features, **fields)


def with_topic() -> MetadataImage:
    records = [register(0, 1, fenced=False), rec(1, TOPIC_RECORD, name="t", topic_id=T),
               rec(2, PARTITION_RECORD, partition_id=0, topic_id=T, replicas=[1, 2], isr=[1, 2], leader=1,
                   leader_epoch=4, partition_epoch=9, leader_recovery_state=0)]
    image, _ = apply_delta(EMPTY_IMAGE, records, offset=2, epoch=3)
    return image


def change(offset: int = 10, **fields: Any) -> MetadataRecord:
    return rec(offset, PARTITION_CHANGE_RECORD, 0, partition_id=0, topic_id=T, **fields)


def part(image: MetadataImage) -> PartitionRegistration:
    return image.topics[T].partitions[0]


def test_a_registration_keeps_endpoint_order_sorts_features_and_replaces_the_old_one() -> None:
    image, changes = apply_delta(EMPTY_IMAGE, [register(5, 1)], offset=5, epoch=1)
    reg = image.brokers[1]
    assert [e.listener_name for e in reg.broker.endpoints] == ["SSL", "PLAINTEXT"]
    assert [f[0] for f in reg.features] == ["a", "z"]
    assert (reg.epoch, reg.fenced, reg.in_controlled_shutdown, reg.is_migrating_zk_broker) == (5, True, False, False)
    assert changes.changed_brokers == {1: reg} and changes.cluster_touched and not changes.topics_touched
    again, _ = apply_delta(image, [register(8, 1, fenced=False)])
    assert again.brokers[1].epoch == 8 and not again.brokers[1].fenced
    assert image.brokers[1].epoch == 5  # the old image is untouched


def test_unregistering_removes_the_broker_and_reports_none() -> None:
    image, _ = apply_delta(EMPTY_IMAGE, [register(5, 1)])
    gone, changes = apply_delta(image, [rec(6, UNREGISTER_BROKER_RECORD, broker_id=1, broker_epoch=77)])
    assert gone.brokers == {} and changes.changed_brokers == {1: None}


def test_fence_and_unfence_records_check_the_epoch() -> None:
    image, _ = apply_delta(EMPTY_IMAGE, [register(5, 1)])
    up, _ = apply_delta(image, [rec(6, UNFENCE_BROKER_RECORD, id=1, epoch=5)])
    assert not up.brokers[1].fenced
    down, _ = apply_delta(up, [rec(7, FENCE_BROKER_RECORD, id=1, epoch=5)])
    assert down.brokers[1].fenced
    with pytest.raises(MetadataReplayError, match="Tried to unfence broker 1, but the given epoch, 6"):
        apply_delta(image, [rec(6, UNFENCE_BROKER_RECORD, id=1, epoch=6)])
    with pytest.raises(MetadataReplayError, match="Tried to fence broker 2, but that broker was not registered"):
        apply_delta(image, [rec(6, FENCE_BROKER_RECORD, id=2, epoch=5)])


def test_a_registration_change_counts_only_when_the_registration_changes() -> None:
    image, _ = apply_delta(EMPTY_IMAGE, [register(5, 1, fenced=False)])
    brcr = BROKER_REGISTRATION_CHANGE_RECORD
    _same, changes = apply_delta(image, [rec(6, brcr, 0, broker_id=1, broker_epoch=5, fenced=-1)])
    assert changes.changed_brokers == {} and changes.cluster_touched
    shut, changes = apply_delta(image, [rec(6, brcr, 1, broker_id=1, broker_epoch=5, in_controlled_shutdown=1)])
    assert shut.brokers[1].in_controlled_shutdown and list(changes.changed_brokers) == [1]
    d1, d2 = uuid.UUID(int=9), uuid.UUID(int=3)
    dirs, changes = apply_delta(image, [rec(6, brcr, 2, broker_id=1, broker_epoch=5, log_dirs=[d1, d2])])
    assert dirs.brokers[1].directories == (d2, d1) and list(changes.changed_brokers) == [1]
    _same, changes = apply_delta(dirs, [rec(7, brcr, 2, broker_id=1, broker_epoch=5, log_dirs=[d2, d1])])
    assert changes.changed_brokers == {}  # the same directories in another order: no change
    with pytest.raises(MetadataReplayError, match="unknown value for fenced field: 5"):
        apply_delta(image, [rec(6, brcr, 0, broker_id=1, broker_epoch=5, fenced=5)])


def test_partition_change_merge_rules() -> None:
    image = with_topic()
    isr, _ = apply_delta(image, [change(isr=[1])])
    assert (part(isr).isr, part(isr).leader, part(isr).leader_epoch, part(isr).partition_epoch) == ((1,), 1, 4, 10)
    same_leader, _ = apply_delta(image, [change(leader=1)])  # a forced leader-epoch bump
    assert (part(same_leader).leader, part(same_leader).leader_epoch) == (1, 5)
    offline, _ = apply_delta(image, [change(leader=-1)])
    assert (part(offline).leader, part(offline).leader_epoch, part(offline).isr) == (-1, 5, (1, 2))
    recovering, _ = apply_delta(image, [change(leader=2, leader_recovery_state=1)])
    assert part(recovering).leader_recovery_state == 1
    kept, _ = apply_delta(recovering, [change(11, isr=[2])])
    assert part(kept).leader_recovery_state == 1 and part(kept).partition_epoch == 11
    two, changes = apply_delta(image, [change(isr=[1]), change(11, isr=[1, 2], leader=2)])
    assert (part(two).isr, part(two).leader, part(two).leader_epoch, part(two).partition_epoch) == ((1, 2), 2, 5, 11)
    assert changes.changed_topics[T].previous[0] == part(image)
    assert changes.changed_topics[T].partitions[0] == part(two) and not changes.changed_topics[T].created


def test_partition_changes_need_a_known_partition() -> None:
    with pytest.raises(MetadataReplayError, match=r"offset 10 \(PARTITION_CHANGE_RECORD v0\): partition 0 of topic id"):
        apply_delta(EMPTY_IMAGE, [change(isr=[1])])
    with pytest.raises(MetadataReplayError, match="no topic with id"):
        apply_delta(EMPTY_IMAGE, [rec(3, PARTITION_RECORD, partition_id=0, topic_id=T, replicas=[1], isr=[1])])
    with pytest.raises(MetadataReplayError, match="leaderRecoveryState 7"):
        apply_delta(with_topic(), [change(leader_recovery_state=7)])


def test_removing_a_topic() -> None:
    image = with_topic()
    gone, changes = apply_delta(image, [change(isr=[1]), rec(11, REMOVE_TOPIC_RECORD, topic_id=T)])
    assert gone.topics == {} and gone.topic_ids_by_name == {}
    assert list(changes.deleted_topics) == [T] and changes.deleted_topics[T] is image.topics[T]
    assert changes.changed_topics == {}
    u = uuid.UUID(int=2)
    trace, changes = apply_delta(image, [rec(3, TOPIC_RECORD, name="u", topic_id=u), rec(4, REMOVE_TOPIC_RECORD, topic_id=u)])
    assert trace.topics == image.topics and changes.deleted_topics == {} and changes.changed_topics == {}
    with pytest.raises(MetadataReplayError, match="Unable to delete topic with id"):
        apply_delta(EMPTY_IMAGE, [rec(4, REMOVE_TOPIC_RECORD, topic_id=u)])


def test_a_delete_and_re_create_of_one_name_ends_with_the_new_topic() -> None:
    image = with_topic()
    u = uuid.UUID(int=2)
    new, changes = apply_delta(image, [rec(3, REMOVE_TOPIC_RECORD, topic_id=T), rec(4, TOPIC_RECORD, name="t", topic_id=u)])
    assert new.topic_ids_by_name == {"t": u} and list(new.topics) == [u]
    assert changes.changed_topics[u].created and list(changes.deleted_topics) == [T]


def test_metadata_version_comes_from_the_feature_level_record() -> None:
    assert EMPTY_IMAGE.metadata_version is MetadataVersion.IBP_3_0_IV1
    image, changes = apply_delta(EMPTY_IMAGE, [rec(1, FEATURE_LEVEL_RECORD, name="metadata.version", feature_level=19)])
    assert image.metadata_version is MetadataVersion.IBP_3_7_IV4 and changes.touched
    other, changes = apply_delta(image, [rec(2, FEATURE_LEVEL_RECORD, name="group.version", feature_level=1)])
    assert other.metadata_version is MetadataVersion.IBP_3_7_IV4 and not changes.touched
    with pytest.raises(MetadataReplayError, match="unknown metadata.version feature level 99"):
        apply_delta(EMPTY_IMAGE, [rec(1, FEATURE_LEVEL_RECORD, name="metadata.version", feature_level=99)])


def test_what_touches_topics_or_the_cluster() -> None:
    _i, changes = apply_delta(EMPTY_IMAGE, [rec(1, CONFIG_RECORD, resource_type=4, resource_name="1", name="x", value="y")])
    assert not changes.touched
    ctrl = record_class(REGISTER_CONTROLLER_RECORD)
    assert ctrl is not None
    _i, changes = apply_delta(EMPTY_IMAGE, [MetadataRecord(1, REGISTER_CONTROLLER_RECORD, 0, ctrl(controller_id=1))])
    assert changes.cluster_touched and changes.changed_brokers == {}


def test_an_unknown_record_type_is_an_error() -> None:
    with pytest.raises(MetadataReplayError, match=r"offset 4 \(record type 99 v0\): unknown metadata record type 99"):
        apply_delta(EMPTY_IMAGE, [MetadataRecord(4, 99, 0, None)])


def test_images_pickle_and_keep_provenance() -> None:
    image = with_topic()
    assert (image.offset, image.epoch) == (2, 3)
    assert pickle.loads(pickle.dumps(image)) == image
    assert "1 brokers, 1 topics" in repr(image)
    assert image.with_topics([]).topics == {} and image.with_topics([T]).topic_ids_by_name == {"t": T}


def test_errors_name_the_record_type_survive_pickling_and_take_a_source() -> None:
    with pytest.raises(MetadataReplayError, match=r"offset 3 \(REGISTER_BROKER_RECORD v0\): malformed record data") as info:
        apply_delta(EMPTY_IMAGE, [MetadataRecord(3, REGISTER_BROKER_RECORD, 0, None)])
    e = info.value
    again = pickle.loads(pickle.dumps(e))
    assert str(again) == str(e) and (again.offset, again.record_type) == (3, REGISTER_BROKER_RECORD)
    assert str(e.with_source("/x/y.log")).startswith("/x/y.log: record at offset 3")


def test_a_topic_record_starts_its_topic_empty_even_for_an_id_the_image_has() -> None:
    """TopicsDelta.replay(TopicRecord) builds a TopicDelta over an empty TopicImage: the image's
    partitions of that id are neither the base of a later PartitionChangeRecord nor kept."""
    image = with_topic()
    again = rec(3, TOPIC_RECORD, name="t", topic_id=T)
    with pytest.raises(MetadataReplayError, match="partition 0 of topic id"):
        apply_delta(image, [again, change(isr=[1])])
    new, changes = apply_delta(image, [again, rec(4, PARTITION_RECORD, partition_id=1, topic_id=T, replicas=[1],
                                                  isr=[1], leader=1)])
    assert list(new.topics[T].partitions) == [1]
    assert changes.changed_topics[T].previous == {1: None}


def test_a_delta_of_no_records_moves_only_the_provenance() -> None:
    import attrs

    from ctrlbatch.replay.image.image import EMPTY_IMAGE, MetadataImage, apply_delta

    # The fast path builds the image positionally: it must know every field (add a new one there too).
    assert [f.name for f in attrs.fields(MetadataImage)] == [
        "brokers", "topics", "topic_ids_by_name", "metadata_version", "offset", "epoch"
    ]
    image = attrs.evolve(EMPTY_IMAGE, brokers={1: object()}, offset=4, epoch=2)
    moved, changes = apply_delta(image, (), offset=9, epoch=3)
    assert moved == attrs.evolve(image, offset=9, epoch=3)
    assert moved.brokers is image.brokers and moved.topics is image.topics
    assert not changes.touched and not changes.changed_brokers and not changes.changed_topics
    assert apply_delta(image, ())[0] is image


@pytest.mark.parametrize(
    ("records", "cluster", "topics"),
    [
        (lambda: [register(5, 2)], True, False),
        (lambda: [rec(5, UNREGISTER_BROKER_RECORD, broker_id=1, broker_epoch=0)], True, False),
        (lambda: [rec(5, FENCE_BROKER_RECORD, id=1, epoch=0)], True, False),
        (lambda: [rec(5, TOPIC_RECORD, name="u", topic_id=uuid.UUID(int=2))], False, True),
        (lambda: [change(isr=[1])], False, True),
        (lambda: [rec(5, REMOVE_TOPIC_RECORD, topic_id=T)], False, True),
        (lambda: [rec(5, FEATURE_LEVEL_RECORD, name="metadata.version", feature_level=21)], True, True),
        (lambda: [rec(5, FEATURE_LEVEL_RECORD, name="group.version", feature_level=1)], False, False),
        (lambda: [rec(5, CONFIG_RECORD, resource_type=2, resource_name="t", name="x", value="y")], False, False),
        (lambda: [register(5, 2), change(isr=[1])], True, True),
    ],
    ids=["register", "unregister", "fence", "topic", "partition-change", "remove-topic", "metadata-version",
         "other-feature", "config", "broker-and-partition"],
)
def test_the_delta_marks_the_sub_deltas_its_records_create(records: Any, cluster: bool, topics: bool) -> None:
    """MetadataDelta.replay creates the cluster / topics delta a record belongs to (MD:184-258);
    a metadata.version change creates both (MD:309-322)."""
    _i, changes = apply_delta(with_topic(), records())
    assert (changes.cluster_touched, changes.topics_touched) == (cluster, topics)


def test_every_known_record_type_is_replayed_or_deliberately_ignored() -> None:
    """No type the decoder knows falls through: each has a replay row or is listed as ignored."""
    from ctrlbatch.replay.image import image
    from ctrlbatch.replay.schema.metadata_classes import RECORD_CLASSES

    passed_over = image.IGNORED_TYPES | image.TRANSACTION_TYPES
    assert set(image._REPLAY) | passed_over == set(RECORD_CLASSES)
    assert not set(image._REPLAY) & passed_over


def test_each_replay_row_takes_the_data_of_its_record_type() -> None:
    """The dispatch table's rows pair a type id with a method whose data parameter is that
    type's generated class (what mypy checks through _on, checked here at run time too)."""
    import typing

    from ctrlbatch.replay.image import image
    from ctrlbatch.replay.schema.metadata_classes import RECORD_CLASSES

    for type_id, replay in image._REPLAY.items():
        hints = typing.get_type_hints(replay)
        assert hints["d"] is RECORD_CLASSES[type_id], (type_id, replay)
