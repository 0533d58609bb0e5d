"""ctrlbatch.replay.tables: the metadata history and the replay's requests as Spark tables.

    from ctrlbatch.replay import register, replay_dataframe
    register(spark)                                             # the kraft_metadata data source
    records = spark.read.format("kraft_metadata").load("../shared/samples/kraft-single-node")
    requests = replay_dataframe(spark, "../shared/samples/kraft-single-node")

Modules, one concern each: schema (both tables' schemas), options (the data source's options,
checked), record_rows (batches to Arrow rows), plan (partitions: byte ranges on batch boundaries),
stream (following a live log), source (the DataSource classes Spark loads), table (what they
call), register, requests (replay_dataframe). Names load lazily, as in ctrlbatch.replay.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "RECORDS_SCHEMA": "register",
    "REQUESTS_SCHEMA": "register",
    "RECORDS_ARROW": "schema",
    "REQUESTS_ARROW": "schema",
    "OPTIONS": "options",
    "KraftMetadataDataSource": "source",
    "register": "register",
    "replay_dataframe": "requests",
}

if TYPE_CHECKING:
    from .options import OPTIONS
    from .register import RECORDS_SCHEMA, REQUESTS_SCHEMA, register
    from .requests import replay_dataframe
    from .schema import RECORDS_ARROW, REQUESTS_ARROW
    from .source import KraftMetadataDataSource

__all__ = [
    "KraftMetadataDataSource", "OPTIONS", "RECORDS_ARROW", "RECORDS_SCHEMA", "REQUESTS_ARROW", "REQUESTS_SCHEMA",
    "register", "replay_dataframe",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ctrlbatch.replay.tables' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
