"""``register(spark)``: the kraft_metadata data source in a SparkSession, and the public schemas.

Rules of this module:
- ``register`` adds the data source to the session (``spark.dataSource.register``), after
  telling cloudpickle to send source.py's classes by value (source.py's rules: an executor
  without ctrlbatch then fails in one line naming what it lacks). Registering again is harmless.
  The class registered holds the session's default parallelism (``spark.sparkContext.
  defaultParallelism``, when there is a SparkContext), so the default partitioning gives each
  core one equal part (plan.unit_bytes_for).
- PySpark registers an installed package named ``pyspark_*`` by itself (SPARK-45917); ctrlbatch
  is not named so, hence the one call.
- What the executors need: a Python that imports ctrlbatch (with its [replay] extra: crc32c,
  pyarrow). ``spark_session`` (spark_session.py) sets PYSPARK_PYTHON to this interpreter for its
  own sessions; a user's own session must set ``spark.pyspark.python`` (or PYSPARK_PYTHON) to
  such an interpreter, or install the ctrlbatch wheel on every executor.
- ``RECORDS_SCHEMA`` and ``REQUESTS_SCHEMA`` are Spark StructTypes (schema.py), built when this
  module is first imported (ctrlbatch.replay's names load lazily: importing it imports no PySpark).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .schema import records_schema, requests_schema

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["RECORDS_SCHEMA", "REQUESTS_SCHEMA", "register"]


def register(spark: SparkSession) -> None:
    """Register the ``kraft_metadata`` data source in ``spark`` (module rules)."""
    from pyspark import cloudpickle

    from . import source

    cloudpickle.register_pickle_by_value(sys.modules[source.__name__])  # type: ignore[no-untyped-call]
    spark.dataSource.register(source.for_session(_parallelism(spark)))


def _parallelism(spark: SparkSession) -> int | None:
    """The session's default parallelism (its cores on local[N]); None where the session has no
    SparkContext to ask (Spark Connect): the data source then plans without it."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:
        return None


RECORDS_SCHEMA = records_schema()
"""The records table's Spark schema (schema.RECORDS_ARROW's columns)."""
REQUESTS_SCHEMA = requests_schema()
"""The requests DataFrame's Spark schema (rows.REQUEST_SCHEMA's columns and delta_time)."""
