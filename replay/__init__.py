"""ctrlbatch.replay: a KRaft metadata log in, the controller requests every broker would have received out.

    from ctrlbatch.replay import open_history, replay_local, ReplayOptions
    history = open_history("../shared/samples/kraft-single-node")
    result = replay_local(history, ReplayOptions())
    rows = list(result.rows)          # one dict per delivered request, in send order
    print(result.summary.to_dict()["by_api"])

Sub-packages, one stage of the pipeline each, in layer order (a stage imports only earlier ones;
tests/test_import_graph.py checks it): schema (the record catalog, classes, codec), log (reading a
history into batches), image (the image, deltas, the record-semantics table), propagate (the
MigrationPropagator port), rows (request rows, the summary), output (the output directory,
report), engine (the replay skeleton, the local engine), spark (the Spark engine), run (one run
from options to output, the command), tables (the kraft_metadata data source, ``register``,
``replay_dataframe``), generate (synthetic logs, ``generate-log``).
Names are exported lazily so that ``import ctrlbatch.replay`` costs nothing and pulls in neither
pyarrow nor PySpark until a name that needs them is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    # reading the history
    "open_history": "log.sources",
    "History": "log.sources",
    "Snapshot": "log.sources",
    "ReplayInputError": "log.errors",
    "ReadStats": "log.errors",
    "LogBatch": "log.records",
    "MetadataRecord": "log.records",
    "ControlRecord": "log.records",
    "record_type_name": "log.records",
    "record_type_id": "log.records",
    "read_segment": "log.segments",
    "scan_batches": "log.segments",
    "decode_batch": "log.segments",
    "read_jsonl": "log.jsonl",
    "write_jsonl": "log.jsonl",
    "read_dump": "log.dumplog",
    "generate_log": "generate.generator",
    "GenerateResult": "generate.generator",
    # semantics: the image, deltas and the MigrationPropagator port
    "MetadataImage": "image.image",
    "BrokerRegistration": "image.image",
    "PartitionRegistration": "image.image",
    "TopicImage": "image.image",
    "DeltaChanges": "image.image",
    "TopicChange": "image.image",
    "EMPTY_IMAGE": "image.image",
    "apply_delta": "image.image",
    "MetadataReplayError": "image.image",
    "Delta": "image.deltas",
    "group_deltas": "image.deltas",
    "MigrationControllerChannelContext": "propagate.channel_context",
    "ReplayOptions": "propagate.propagator",
    "Send": "propagate.propagator",
    "propagate_delta": "propagate.propagator",
    "propagate_image": "propagate.propagator",
    # output and engines
    "REQUEST_SCHEMA": "rows.rows",
    "request_row": "rows.rows",
    "ReplaySummary": "rows.summary",
    "replay_local": "engine.local",
    "ReplayResult": "engine.local",
    "snapshot_image": "engine.local",
    # Spark tables: the kraft_metadata data source and the requests as a DataFrame
    "register": "tables.register",
    "RECORDS_SCHEMA": "tables.register",
    "REQUESTS_SCHEMA": "tables.register",
    "replay_dataframe": "tables.requests",
}

# The real names for type checkers (a test checks they are _EXPORTS); at run time __getattr__
# imports each on first use.
if TYPE_CHECKING:
    from .engine.local import ReplayResult, replay_local, snapshot_image
    from .generate.generator import GenerateResult, generate_log
    from .image.deltas import Delta, group_deltas
    from .image.image import (
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
    from .log.dumplog import read_dump
    from .log.errors import ReadStats, ReplayInputError
    from .log.jsonl import read_jsonl, write_jsonl
    from .log.records import ControlRecord, LogBatch, MetadataRecord, record_type_id, record_type_name
    from .log.segments import decode_batch, read_segment, scan_batches
    from .log.sources import History, Snapshot, open_history
    from .propagate.channel_context import MigrationControllerChannelContext
    from .propagate.propagator import ReplayOptions, Send, propagate_delta, propagate_image
    from .rows.rows import REQUEST_SCHEMA, request_row
    from .rows.summary import ReplaySummary
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
