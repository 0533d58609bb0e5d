"""MigrationControllerChannelContext: Kafka's ControllerChannelContext read from an image (MCCC)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from ctrlbatch.context import ControllerChannelContext, TopicPartition
from ctrlbatch.replay.image.image import EMPTY_IMAGE, MetadataImage, apply_delta
from ctrlbatch.replay.log.records import (
    BROKER_REGISTRATION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    TOPIC_RECORD,
    MetadataRecord,
)
from ctrlbatch.replay.propagate.channel_context import MigrationControllerChannelContext
from ctrlbatch.replay.schema.record_classes import record_class

T = uuid.UUID(int=3)


def rec(offset: int, type_id: int, version: int = 0, **fields: Any) -> MetadataRecord:
    cls = record_class(type_id)
    assert cls is not None
    return MetadataRecord(offset, type_id, version, cls(**fields))


def image() -> MetadataImage:
    cls: Any = record_class(REGISTER_BROKER_RECORD)
    records = []
    for b in (3, 1, 2):  # registered out of order; broker 2 stays fenced
        ep = cls.BrokerEndpoint(name="PLAINTEXT", host=f"h{b}", port=b, security_protocol=0)
        records.append(rec(b, REGISTER_BROKER_RECORD, 2, broker_id=b, broker_epoch=100 + b, end_points=(ep,),
                           fenced=b == 2, rack="r" if b == 1 else None))
    records.append(rec(4, BROKER_REGISTRATION_CHANGE_RECORD, 1, broker_id=3, broker_epoch=103, in_controlled_shutdown=1))
    records.append(rec(5, TOPIC_RECORD, name="t", topic_id=T))
    records.append(rec(6, PARTITION_RECORD, partition_id=0, topic_id=T, replicas=[2, 4, 3], isr=[2, 3], leader=3,
                       leader_epoch=6, partition_epoch=8, leader_recovery_state=1))
    img, _ = apply_delta(EMPTY_IMAGE, records, offset=6, epoch=11)
    return img


def test_it_implements_the_protocol_with_all_registered_brokers_sorted() -> None:
    ctx = MigrationControllerChannelContext(image())
    assert isinstance(ctx, ControllerChannelContext)
    assert list(ctx.live_or_shutting_down_broker_ids) == [1, 2, 3]  # fenced and shutting-down included
    assert dict(ctx.live_broker_id_and_epochs) == {1: 101, 2: 102, 3: 103}
    assert [(b.id, b.rack) for b in ctx.live_or_shutting_down_brokers] == [(1, "r"), (2, None), (3, None)]
    assert dict(ctx.topic_ids) == {"t": T}


def test_partition_views() -> None:
    ctx = MigrationControllerChannelContext(image())
    tp = TopicPartition("t", 0)
    assert tuple(ctx.partition_replica_assignment(tp)) == (2, 4, 3)
    info = ctx.partition_leadership_info(tp)
    assert info is not None and info.controller_epoch == 11  # the image's KRaft epoch
    reg = ctx.image.topics[T].partitions[0]
    assert ctx.leadership_of(reg) == info  # the same, from the registration itself
    lai = info.leader_and_isr
    assert (lai.leader, lai.isr, lai.leader_epoch, lai.partition_epoch, int(lai.leader_recovery_state)) == (3, (2, 3), 6, 8, 1)
    # online = registered (fenced counts) and a replica
    assert [ctx.is_replica_online(b, tp) for b in (1, 2, 3, 4)] == [False, True, True, False]
    view = ctx.update_metadata_view(tp)
    assert view is not None and view[1:] == ((2, 4, 3), (4,), False)
    assert ctx.leader_epoch(tp) == 6
    assert ctx.leader_epoch(TopicPartition("t", 9)) == -1 and ctx.partition_leadership_info(TopicPartition("t", 9)) is None


def test_a_topic_absent_from_the_image_is_being_deleted() -> None:
    ctx = MigrationControllerChannelContext(image())
    gone = TopicPartition("gone", 0)
    assert ctx.is_topic_queued_up_for_deletion("gone") and ctx.is_topic_deletion_in_progress("gone")
    assert not ctx.is_topic_queued_up_for_deletion("t")
    assert ctx.leader_epoch(gone) == -2
    assert tuple(ctx.partition_replica_assignment(gone)) == () and ctx.partition_leadership_info(gone) is None


def test_it_refuses_what_is_not_an_image() -> None:
    with pytest.raises(TypeError, match="image"):
        MigrationControllerChannelContext({})  # type: ignore[arg-type]
