"""Output rows: the fixed Parquet schema, and each row's fields read back from its own frame."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import pyarrow as pa
import pytest

from ctrlbatch.context import MetadataVersion
from ctrlbatch.replay.image.deltas import Delta
from ctrlbatch.replay.image.image import EMPTY_IMAGE, apply_delta
from ctrlbatch.replay.log.records import (
    FEATURE_LEVEL_RECORD,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    TOPIC_RECORD,
    MetadataRecord,
)
from ctrlbatch.replay.propagate.propagator import ReplayOptions, Send, propagate_delta
from ctrlbatch.replay.rows.rows import REQUEST_SCHEMA, partition_count, request_row
from ctrlbatch.replay.schema.record_classes import record_class
from ctrlbatch.requests import decode_request

T = uuid.UUID(int=7)


def rec(offset: int, type_id: int, version: int = 0, **fields: Any) -> MetadataRecord:
    cls = record_class(type_id)
    assert cls is not None
    return MetadataRecord(offset, type_id, version, cls(**fields))


def sends_and_delta(ibp: MetadataVersion | None = None) -> tuple[Delta, list[Send]]:
    cls = record_class(REGISTER_BROKER_RECORD)
    setup = [rec(0, FEATURE_LEVEL_RECORD, name="metadata.version", feature_level=21)]
    for b in (1, 2, 3):
        ep = cls.BrokerEndpoint(name="PLAINTEXT", host=f"h{b}", port=9092, security_protocol=0)  # type: ignore[union-attr]
        setup.append(rec(b, REGISTER_BROKER_RECORD, 2, broker_id=b, broker_epoch=b * 10, end_points=(ep,), fenced=False))
    setup.append(rec(4, TOPIC_RECORD, name="t", topic_id=T))
    for p in range(3):
        setup.append(rec(5 + p, PARTITION_RECORD, partition_id=p, topic_id=T, replicas=[1, 2], isr=[1, 2], leader=1,
                         leader_epoch=0, partition_epoch=0))
    image, _ = apply_delta(EMPTY_IMAGE, setup, offset=7, epoch=2)
    change = rec(9, PARTITION_CHANGE_RECORD, partition_id=1, topic_id=T, replicas=[2, 3], isr=[2, 3], leader=2)
    delta = Delta(9, 1_700_000_000_123, 2, (change,), 3000)
    _image, sends = propagate_delta(image, delta, ReplayOptions(ibp=ibp))
    return delta, sends


def test_the_schema_has_exactly_the_contract_columns() -> None:
    assert [(f.name, str(f.type), f.nullable) for f in REQUEST_SCHEMA] == [
        ("timestamp", "int64", False), ("broker", "int32", False),
        ("seq", "int64", False), ("api_key", "int16", False), ("api", "string", False), ("api_version", "int16", False),
        ("controller_id", "int32", False), ("controller_epoch", "int32", False), ("update_type", "string", True),
        ("partitions", "int32", False), ("bytes", "int64", False), ("sha256", "string", False),
        ("frame", "binary", True), ("delta_first_offset", "int64", False), ("delta_last_offset", "int64", False),
        ("cause", "string", False),
    ]


@pytest.mark.parametrize("ibp", [None, MetadataVersion.IBP_2_8_IV1])
def test_each_row_describes_its_own_frame(ibp: MetadataVersion | None) -> None:
    delta, sends = sends_and_delta(ibp)
    assert [(s.request.api_key, s.broker) for s in sends] == [(4, 2), (4, 3), (6, 1), (6, 2), (6, 3), (5, 1)]
    rows = [request_row(delta, s, seq, with_frames=True) for seq, s in enumerate(sends, start=40)]
    for row, send in zip(rows, sends, strict=True):
        frame = row["frame"]
        assert row["bytes"] == len(frame) and row["sha256"] == hashlib.sha256(frame).hexdigest()
        d = decode_request(frame[4:])
        assert d.header.correlation_id == row["seq"] and d.header.client_id == "3000" == str(row["controller_id"])
        assert (row["delta_last_offset"], row["timestamp"], row["broker"]) == (9, 1_700_000_000_123, send.broker)
        assert (row["api_key"], row["api_version"]) == (d.header.request_api_key, d.header.request_api_version)
        assert row["api"] == {4: "LeaderAndIsr", 5: "StopReplica", 6: "UpdateMetadata"}[row["api_key"]]
        assert row["controller_epoch"] == d.body.controller_epoch == 2
        states = [s for t in d.body.topic_states for s in t.partition_states]
        assert row["partitions"] == len(states) == partition_count(send)
        has_type = (row["api_key"] == 4 and row["api_version"] >= 5) or (row["api_key"] == 6 and row["api_version"] >= 8)
        assert row["update_type"] == ({0: "UNKNOWN", 1: "INCREMENTAL", 2: "FULL"}[d.body.type] if has_type else None)
        assert "dropped" not in row and "delta" not in row  # every row is delivered; its delta is delta_last_offset
    if ibp is None:
        assert [r["update_type"] for r in rows] == ["INCREMENTAL"] * 5 + [None]
    else:
        assert [r["update_type"] for r in rows] == ["INCREMENTAL", "INCREMENTAL", None, None, None, None]
    table = pa.Table.from_pylist(rows, schema=REQUEST_SCHEMA)
    assert table.num_rows == 6 and table.column("partitions").to_pylist() == [1, 1, 1, 1, 1, 1]
    assert request_row(delta, sends[0], 0)["frame"] is None


def test_a_dropped_request_has_no_row() -> None:
    delta, sends = sends_and_delta()
    dropped = Send(sends[0].broker, sends[0].request, True)
    with pytest.raises(ValueError, match="dropped"):
        request_row(delta, dropped, 0)


def test_the_shared_encoder_gives_each_send_its_own_frame_in_groups() -> None:
    """Both engines' rows come from send groups through one frame encoder: every broker's frame
    is exactly its OutboundRequest's, numbered per broker, and rows keep the schema's order."""
    from ctrlbatch.replay.rows.rows import expand_columns, expand_rows, send_groups

    delta, sends = sends_and_delta()
    groups = list(send_groups(delta, sends))
    assert [len(g.brokers) for g in groups] == [2, 3, 1]  # a shared body (here every one but StopReplica) is one group
    start = {1: 5, 2: 0, 3: 9}
    rows = list(expand_rows(groups, dict(start), True))
    assert all(list(r) == REQUEST_SCHEMA.names for r in rows)
    seq = dict(start)
    for row, send in zip(rows, sends, strict=True):
        assert row["frame"] == send.request.encode(correlation_id=seq[send.broker], client_id="3000")
        assert row["seq"] == seq[send.broker] and row["broker"] == send.broker
        seq[send.broker] += 1
    [columns] = list(expand_columns(groups, dict(start), True))
    assert [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)] == rows
    dropped = [Send(s.broker, s.request, True) for s in sends]
    assert list(send_groups(delta, dropped)) == []
