"""ctrlbatch.replay: a KRaft metadata log in, the controller requests every broker would have received out.

    from ctrlbatch.replay import open_history, replay_local, ReplayOptions
    history = open_history("../shared/samples/kraft-single-node")
    result = replay_local(history, ReplayOptions())
    rows = list(result.rows)          # one dict per delivered request, in send order
    print(result.summary.to_dict()["by_api"])

Modules, one concern each: reading (records, segments, sources, jsonl, dumplog), semantics
(image, deltas, channel_context, propagator), output (rows, summary, output), engines
(local_engine, spark_engine), the generator, the two commands (cli, generate_cli), and the
Spark tables (tables/: the kraft_metadata data source, ``register``, ``replay_dataframe``).
Names are exported lazily so that ``import ctrlbatch.replay`` costs nothing and pulls in neither
pyarrow nor PySpark until a name that needs them is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    # reading the history
    "open_history": "sources",
    "History": "sources",
    "Snapshot": "sources",
    "ReplayInputError": "errors",
    "ReadStats": "errors",
    "LogBatch": "records",
    "MetadataRecord": "records",
    "ControlRecord": "records",
    "record_type_name": "records",
    "record_type_id": "records",
    "read_segment": "segments",
    "scan_batches": "segments",
    "decode_batch": "segments",
    "read_jsonl": "jsonl",
    "write_jsonl": "jsonl",
    "read_dump": "dumplog",
    "generate_log": "generator",
    "GenerateResult": "generator",
    # semantics: the image, deltas and the MigrationPropagator port
    "MetadataImage": "image",
    "BrokerRegistration": "image",
    "PartitionRegistration": "image",
    "TopicImage": "image",
    "DeltaChanges": "image",
    "TopicChange": "image",
    "EMPTY_IMAGE": "image",
    "apply_delta": "image",
    "MetadataReplayError": "image",
    "Delta": "deltas",
    "group_deltas": "deltas",
    "MigrationControllerChannelContext": "channel_context",
    "ReplayOptions": "propagator",
    "Send": "propagator",
    "propagate_delta": "propagator",
    "propagate_image": "propagator",
    # output and engines
    "REQUEST_SCHEMA": "rows",
    "request_row": "rows",
    "ReplaySummary": "summary",
    "replay_local": "local_engine",
    "ReplayResult": "local_engine",
    "snapshot_image": "local_engine",
    # Spark tables: the kraft_metadata data source and the requests as a DataFrame
    "register": "tables.register",
    "RECORDS_SCHEMA": "tables.register",
    "REQUESTS_SCHEMA": "tables.register",
    "replay_dataframe": "tables.requests",
}

# The real names for type checkers (a test checks they are _EXPORTS); at run time __getattr__
# imports each on first use.
if TYPE_CHECKING:
    from .channel_context import MigrationControllerChannelContext
    from .deltas import Delta, group_deltas
    from .dumplog import read_dump
    from .errors import ReadStats, ReplayInputError
    from .generator import GenerateResult, generate_log
    from .image import (
        EMPTY_IMAGE,
        BrokerRegistration,
        DeltaChanges,
        MetadataImage,
        MetadataReplayError,
        PartitionRegistration,
        TopicChange,
        TopicImage,
        apply_delta,
    )
    from .jsonl import read_jsonl, write_jsonl
    from .local_engine import ReplayResult, replay_local, snapshot_image
    from .propagator import ReplayOptions, Send, propagate_delta, propagate_image
    from .records import ControlRecord, LogBatch, MetadataRecord, record_type_id, record_type_name
    from .rows import REQUEST_SCHEMA, request_row
    from .segments import decode_batch, read_segment, scan_batches
    from .sources import History, Snapshot, open_history
    from .summary import ReplaySummary
    from .tables.register import RECORDS_SCHEMA, REQUESTS_SCHEMA, register
    from .tables.requests import replay_dataframe

__all__ = [
    "BrokerRegistration",
    "ControlRecord",
    "Delta",
    "DeltaChanges",
    "EMPTY_IMAGE",
    "GenerateResult",
    "History",
    "LogBatch",
    "MetadataImage",
    "MetadataRecord",
    "MetadataReplayError",
    "MigrationControllerChannelContext",
    "PartitionRegistration",
    "RECORDS_SCHEMA",
    "REQUESTS_SCHEMA",
    "REQUEST_SCHEMA",
    "ReadStats",
    "ReplayInputError",
    "ReplayOptions",
    "ReplayResult",
    "ReplaySummary",
    "Send",
    "Snapshot",
    "TopicChange",
    "TopicImage",
    "apply_delta",
    "decode_batch",
    "generate_log",
    "group_deltas",
    "open_history",
    "propagate_delta",
    "propagate_image",
    "read_dump",
    "read_jsonl",
    "read_segment",
    "record_type_id",
    "record_type_name",
    "register",
    "replay_dataframe",
    "replay_local",
    "request_row",
    "scan_batches",
    "snapshot_image",
    "write_jsonl",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ctrlbatch.replay' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
