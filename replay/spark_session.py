"""A quiet, loopback-only SparkSession for the replay (embedded ``local[*]`` or any ``--master``).

Rules of this module (pyspark-notes.md Part B):
- The settings live in one table, ``SESSION_CONF``; callers add to it, never rebuild it.
- The environment Spark's Python workers inherit is fixed before the JVM starts:
  PYSPARK_PYTHON is this interpreter (it has ctrlbatch installed, so executors can import it),
  TZ=UTC, and SPARK_LOCAL_IP=127.0.0.1 for the embedded master (a cluster master decides its
  own addresses). Values already in the environment win, so spark-submit and CI can override.
- Under ``spark-submit`` the master comes from spark-submit (``master=None``); we never
  override a master the launcher chose.
- Log4j is told to print errors only, with a properties file written once to the temp dir.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_MASTER", "SESSION_CONF", "spark_session", "quiet_log4j_file"]

DEFAULT_MASTER = "local[*]"

SESSION_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",  # no Jetty on :4040
    "spark.ui.showConsoleProgress": "false",  # the CLI shows its own progress
    "spark.sql.shuffle.partitions": "4",  # the default 200 is pure overhead on small jobs
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.adaptive.enabled": "false",  # stable partition counts: the output order follows them
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.python.worker.reuse": "true",
}

# Only for a master we start ourselves: a cluster binds to the addresses it was given.
LOCAL_CONF: dict[str, str] = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.memory": "2g",  # local mode: the executors live in this JVM (the default 1g ran out on 10M records)
}

_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


def quiet_log4j_file() -> Path:
    """A log4j2 properties file (errors only, on stderr), written once into the temp dir."""
    path = Path(tempfile.gettempdir()) / f"ctrlbatch-log4j2-{os.getuid()}.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J)
        tmp.replace(path)
    return path


def _prepare_environment(local: bool) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("TZ", "UTC")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def _launched_by_spark_submit() -> bool:
    """True inside spark-submit: the JVM already exists and told us how to reach it."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "ctrlbatch-replay",
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """Get (or create) the replay's SparkSession.

    ``master=None`` means: the launcher's master under spark-submit, else ``local[*]``.
    ``conf`` adds or overrides settings (e.g. ``spark.default.parallelism`` in tests).
    """
    if master is not None and (not isinstance(master, str) or not master.strip()):
        raise ValueError(f"master must be a Spark master URL such as 'local[2]' or 'spark://host:7077', got {master!r}")
    submitted = master is None and _launched_by_spark_submit()
    effective = None if submitted else (master or DEFAULT_MASTER)
    local = effective is not None and effective.startswith("local")
    _prepare_environment(local)

    from pyspark.sql import SparkSession

    settings = dict(SESSION_CONF)
    if local:
        settings.update(LOCAL_CONF)
        java_opts = f"-Dlog4j2.configurationFile=file:{quiet_log4j_file()} -Duser.timezone=UTC"
        settings["spark.driver.extraJavaOptions"] = java_opts
    settings["spark.executorEnv.PYSPARK_PYTHON"] = os.environ["PYSPARK_PYTHON"]
    settings["spark.executorEnv.TZ"] = "UTC"
    settings.update(conf or {})

    builder = SparkSession.builder.appName(app_name)
    if effective is not None:
        builder = builder.master(effective)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
