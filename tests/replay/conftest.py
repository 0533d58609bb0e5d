"""The one session-scoped SparkSession of the replay tests (local[2], UI off, few shuffle partitions).

Every Spark test in tests/replay/ takes the ``spark`` fixture; nobody starts another session.
The C1-only JIT keeps the JVM start and the small test jobs fast (pyspark-notes.md §6).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("TZ", "UTC")

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
SAMPLE = SHARED / "samples" / "kraft-single-node"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from ctrlbatch.replay.spark.session import quiet_log4j_file, spark_session

    session = spark_session(
        "local[2]",
        app_name="ctrlbatch-tests",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "1g",
            "spark.driver.extraJavaOptions": (
                f"-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Duser.timezone=UTC "
                f"-Dlog4j2.configurationFile=file:{quiet_log4j_file()}"
            ),
        },
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    # CI always has ../shared beside the checkout: a missing sample is a broken set-up, not a skip.
    assert SAMPLE.is_dir(), f"the real KRaft sample is not at {SAMPLE} (../shared beside the checkout)"
    return SAMPLE


@pytest.fixture
def refused_record_log(tmp_path: Path) -> tuple[Path, int]:
    """A two-batch log whose second batch removes a topic that does not exist (the replay refuses
    it): its __cluster_metadata-0 directory and the byte offset of the refused batch."""
    import uuid

    from ctrlbatch.replay.generate.writer import encode_batch
    from ctrlbatch.replay.log.records import REMOVE_TOPIC_RECORD, TOPIC_RECORD
    from ctrlbatch.replay.schema.record_classes import encode_value, record_class

    def record(type_id: int, **fields: Any) -> bytes:
        cls: Any = record_class(type_id)
        return encode_value(type_id, 0, cls(**fields))

    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    first = encode_batch(0, 1, 5, [record(TOPIC_RECORD, name="a", topic_id=uuid.UUID(int=1))])
    bad = encode_batch(1, 1, 6, [record(REMOVE_TOPIC_RECORD, topic_id=uuid.UUID(int=2))])
    (directory / "00000000000000000000.log").write_bytes(first + bad)
    return directory, len(first)
