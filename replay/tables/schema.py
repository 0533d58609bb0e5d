"""The two tables' schemas, public: the metadata records and the replay's requests.

Rules of this module:
- ``RECORDS_SCHEMA`` is the ``kraft_metadata`` data source's: one row per record of the log (or
  snapshot), data and control records alike (LeaderChange, SnapshotHeader/Footer, KRaftVersion,
  KRaftVoters; kafka-metadata-log-format.md sections 4 and 8), NoOps only with includeNoOps
  (kafka-dump-log prints them as NO_OP_RECORD). ``type`` is Kafka's name (MetadataRecordType /
  ControlRecordType, as kafka-dump-log prints it), ``data`` the record's fields as JSON in the
  shape kafka-dump-log --cluster-metadata-decoder prints (json_convert.to_json: the generated
  JsonConverter's camelCase keys), so ``parse_json(data)`` / ``variant_get`` and
  ``get_json_object`` work on it. ``timestamp`` is the batch's maxTimestamp (every KRaft record of
  a batch carries the batch time: writer.py's rules), null where the input does not say (JSON
  lines without "timestamp", a negative time) or says a time after the year 9999 (a damaged batch:
  record_rows.MAX_TIMESTAMP_MS). ``snapshot`` marks records read from a .checkpoint, whose offsets
  restart at 0 (kafka-metadata-log-format.md section 5); ``file`` and ``position`` say where the
  record's batch is (a byte offset, or a line for JSON lines and kafka-dump-log text).
- ``REQUESTS_SCHEMA`` is ``replay_dataframe``'s: the Parquet output's columns (rows.REQUEST_SCHEMA,
  ``delta_first_offset`` and ``delta_last_offset`` included) and ``delta_time``, the delta's
  timestamp as a TIMESTAMP, so requests join the records table on offsets or on time.
- The Arrow twin of each (``RECORDS_ARROW``) is what ``read()`` yields; PySpark checks the batches
  against the declared schema exactly (SMALLINT = int16, TIMESTAMP = timestamp[us, UTC]).
- Spark's types are imported only here and only when asked for (``records_schema()``), so the
  module costs nothing to a process that only builds Arrow batches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..rows.rows import REQUEST_SCHEMA

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = ["RECORDS_ARROW", "RECORDS_DDL", "REQUESTS_ARROW", "REQUESTS_DDL", "records_schema", "requests_schema"]

TIMESTAMP = pa.timestamp("us", tz="UTC")

RECORDS_ARROW = pa.schema(
    [
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("batch_base_offset", pa.int64(), nullable=False),
        pa.field("batch_last_offset", pa.int64(), nullable=False),
        pa.field("batch_epoch", pa.int32(), nullable=False),
        pa.field("timestamp", TIMESTAMP, nullable=True),
        pa.field("control", pa.bool_(), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("type_id", pa.int16(), nullable=False),
        pa.field("version", pa.int16(), nullable=False),
        pa.field("data", pa.string(), nullable=False),
        pa.field("snapshot", pa.bool_(), nullable=False),
        pa.field("file", pa.string(), nullable=False),
        pa.field("position", pa.int64(), nullable=False),
    ]
)

_DDL_TYPES = {
    pa.int64(): "BIGINT", pa.int32(): "INT", pa.int16(): "SMALLINT", pa.int8(): "TINYINT", pa.bool_(): "BOOLEAN",
    pa.string(): "STRING", pa.binary(): "BINARY", TIMESTAMP: "TIMESTAMP",
}


def _ddl(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name} {_DDL_TYPES[f.type]}{'' if f.nullable else ' NOT NULL'}" for f in schema)


RECORDS_DDL = _ddl(RECORDS_ARROW)
"""The records table's schema as Spark DDL (what the data source declares)."""

REQUESTS_ARROW = pa.schema([*REQUEST_SCHEMA, pa.field("delta_time", TIMESTAMP, nullable=False)])
REQUESTS_DDL = _ddl(REQUESTS_ARROW)
"""The requests DataFrame's schema as Spark DDL."""


def _struct(schema: pa.Schema, all_nullable: bool = False) -> StructType:
    """The Spark StructType of an Arrow schema of the types above (no JVM needed)."""
    from pyspark.sql import types as t

    spark_types: dict[Any, Any] = {
        pa.int64(): t.LongType(), pa.int32(): t.IntegerType(), pa.int16(): t.ShortType(), pa.int8(): t.ByteType(),
        pa.bool_(): t.BooleanType(), pa.string(): t.StringType(), pa.binary(): t.BinaryType(),
        TIMESTAMP: t.TimestampType(),
    }
    return t.StructType([t.StructField(f.name, spark_types[f.type], f.nullable or all_nullable) for f in schema])


def records_schema() -> StructType:
    """RECORDS_SCHEMA: the records table's Spark schema."""
    return _struct(RECORDS_ARROW)


def requests_schema() -> StructType:
    """REQUESTS_SCHEMA: the requests DataFrame's Spark schema (every column nullable: Spark reads
    Parquet columns so, whatever the file says)."""
    return _struct(REQUESTS_ARROW, all_nullable=True)
