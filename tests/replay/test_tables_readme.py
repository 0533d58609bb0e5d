"""The README section proposed for the Spark tables (records table, stream, requests DataFrame):
every ```python block of it runs as written, as tests/test_readme.py runs README.md's (from the
repository's root, each block in a fresh namespace, on the tests' Spark session).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

SECTION = r'''## The metadata log and the requests as Spark tables

Three entry points: the **records table** (the `kraft_metadata` data source: one row per record of
a `__cluster_metadata-0` directory or its parent, a `.log` segment, a `.checkpoint` snapshot, JSON
lines or kafka-dump-log output), the **stream** (the same source following a live log) and the
**requests DataFrame** (`replay_dataframe`). Schemas: `ctrlbatch.replay.RECORDS_SCHEMA`, `REQUESTS_SCHEMA`.

```python
from ctrlbatch.replay import RECORDS_SCHEMA, register
from ctrlbatch.replay.spark_session import spark_session

spark = spark_session("local[2]")   # or your own SparkSession: see below
register(spark)                     # adds the kraft_metadata data source to the session

records = spark.read.format("kraft_metadata").load("../shared/samples/kraft-single-node")
assert records.schema == RECORDS_SCHEMA
records.groupBy("type").count().orderBy("type").show(truncate=False)

# Which broker led partition 0 of topic TestTopicPatient, and when did that change?
spark.sql("CREATE OR REPLACE TEMPORARY VIEW md USING kraft_metadata "
          "OPTIONS (path '../shared/samples/kraft-single-node')")
leaders = spark.sql("""
    WITH topics AS (
      SELECT get_json_object(data, '$.topicId') AS topic_id, get_json_object(data, '$.name') AS topic
      FROM md WHERE type = 'TOPIC_RECORD'),
    changes AS (
      SELECT offset, timestamp, get_json_object(data, '$.topicId') AS topic_id,
             CAST(get_json_object(data, '$.partitionId') AS INT) AS partition,
             CAST(get_json_object(data, '$.leader') AS INT) AS leader
      FROM md
      WHERE type IN ('PARTITION_RECORD', 'PARTITION_CHANGE_RECORD')
        AND get_json_object(data, '$.leader') IS NOT NULL)
    SELECT c.offset, c.timestamp, c.leader
    FROM changes c JOIN topics t USING (topic_id)
    WHERE t.topic = 'TestTopicPatient' AND c.partition = 0
    ORDER BY c.offset""").collect()
print(leaders)   # broker 1 from its creation, then -1 (no leader) at the controlled shutdown
assert [r.leader for r in leaders] == [1, -1]
```

Columns: `offset`, `batch_base_offset`, `batch_last_offset`, `batch_epoch`, `timestamp`, `control`
(LeaderChange, snapshot header/footer, KRaft version/voters are rows too), `type` (Kafka's name),
`type_id`, `version`, `data` (the fields as JSON in kafka-dump-log's names: `get_json_object`, or
`variant_get(parse_json(data), '$.leader', 'int')`), `snapshot`, `file`, `position`. Options:
`fromSnapshot` (`newest` or a path), `skipCorrupt`, `includeNoOps` (default `false`), `unitBytes`
(bytes per partition); a bad value fails naming the option. A corrupt batch fails the job with the
replay's line (`ReplayInputError: <file>, byte offset N: <reason>`) right under Spark's heading.

The stream follows a live log: offsets are log offsets, only complete batches are emitted, new
segments are picked up, a restart from the checkpoint emits nothing twice and skips nothing; a
batch that changed under an emitted offset (KAFKA-14704) or an offset deleted with its segment
stops the query with one line naming the offset, file and byte offset.

```python
import tempfile

from ctrlbatch.replay import register
from ctrlbatch.replay.spark_session import spark_session

spark = spark_session("local[2]")
register(spark)
with tempfile.TemporaryDirectory() as checkpoint:
    query = (spark.readStream.format("kraft_metadata").load("../shared/samples/kraft-single-node")
             .writeStream.format("memory").queryName("md_live")
             .option("checkpointLocation", checkpoint).start())
    query.processAllAvailable()     # then, on a live log, every new batch as it is committed
    query.stop()
assert spark.table("md_live").count() == 128
```

The requests DataFrame runs the replay in Spark tasks as `ctrlbatch replay` does (nothing of the
log or rows reaches the driver): the Parquet output's columns, with the first and last offset of
the delta that caused each request (`delta_first_offset`, `delta_last_offset`, now in the
Parquet output too) and `delta_time`, so requests join the records:

```python
from ctrlbatch.replay import register, replay_dataframe
from ctrlbatch.replay.spark_session import spark_session

spark = spark_session("local[2]")
register(spark)
requests = replay_dataframe(spark, "../shared/samples/kraft-single-node")
requests.groupBy("api_key").count().orderBy("api_key").show()

records = spark.read.format("kraft_metadata").load("../shared/samples/kraft-single-node")
changes = records.where("type = 'PARTITION_CHANGE_RECORD'").select("offset", "data")
caused = changes.join(requests, (changes["offset"] >= requests["delta_first_offset"])
                      & (changes["offset"] <= requests["delta_last_offset"]))
caused.select("offset", "broker", "api_key", "partitions", "delta_time").distinct().orderBy("offset").show(5)
assert caused.count() > 0
```

**Your own SparkSession**: the planner and executors must import ctrlbatch: set
`spark.pyspark.python` to the venv's interpreter, or install the ctrlbatch wheel on every executor
(else the job fails with one line saying so). `replay_dataframe(..., work_dir=...)` needs a
directory every executor can reach, as `--out` does.

```python
import sys

from pyspark.sql import SparkSession

from ctrlbatch.replay import register

spark = (SparkSession.builder.master("local[2]")
         .config("spark.pyspark.python", sys.executable)   # a Python that imports ctrlbatch
         .getOrCreate())
register(spark)
print(spark.read.format("kraft_metadata").load("../shared/samples/kraft-single-node").count())
```
'''


def _blocks() -> list[str]:
    return [m.group(1) for m in _BLOCK.finditer(SECTION)]


def test_the_section_has_the_three_entry_points() -> None:
    blocks = _blocks()
    assert len(blocks) == 4
    assert 'format("kraft_metadata")' in blocks[0] and "readStream" in blocks[1] and "replay_dataframe" in blocks[2]


@pytest.mark.parametrize("index", range(4))
def test_the_sections_examples_run(index: int, spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    exec(compile(_blocks()[index], f"<README section block {index}>", "exec"), {"__name__": "readme_example"})
