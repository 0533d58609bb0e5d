"""ctrlbatch.replay: a KRaft metadata log in, the controller requests every broker would have received out.

    from ctrlbatch.replay import open_history, replay_local, ReplayOptions
    history = open_history("../shared/samples/kraft-single-node")
    result = replay_local(history, ReplayOptions())
    rows = list(result.rows)          # one dict per delivered request, in send order
    print(result.summary.to_dict()["by_api"])

Modules, one concern each: reading (records, segments, sources, jsonl, dumplog), semantics
(image, deltas, channel_context, propagator), output (rows, summary, output), engines
(local_engine, spark_engine), the generator, and the two commands (cli, generate_cli).
Names are exported lazily so that ``import ctrlbatch.replay`` costs nothing and pulls in neither
pyarrow nor PySpark until a name that needs them is used.
"""

from __future__ import annotations

import importlib
from typing import Any

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
    "propagate_changes": "propagator",
    "touched_topics": "propagator",
    "needs_full_image": "propagator",
    "partial_image": "propagator",
    "TouchedTopics": "propagator",
    # output and engines
    "REQUEST_SCHEMA": "rows",
    "request_row": "rows",
    "ReplaySummary": "summary",
    "replay_local": "local_engine",
    "ReplayResult": "local_engine",
    "snapshot_image": "local_engine",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ctrlbatch.replay' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
