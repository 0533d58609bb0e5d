"""A quiet, loopback-only SparkSession for the replay (embedded ``local[*]`` or any ``--master``).

Rules of this module (pyspark-notes.md Part B):
- The settings live in one table, ``SESSION_CONF``; callers add to it, never rebuild it.
- The environment Spark's Python workers inherit is fixed before the JVM starts:
  PYSPARK_PYTHON is this interpreter (it has ctrlbatch installed, so executors can import it),
  TZ=UTC, and SPARK_LOCAL_IP=127.0.0.1 for the embedded master (a cluster master decides its
  own addresses). Values already in the environment win, so spark-submit and CI can override.
- Under ``spark-submit`` the master comes from spark-submit (``master=None``); we never
  override a master the launcher chose.
- Log4j is told to print errors only, with a properties file written once per process into a
  private directory made for the run (mkdtemp, mode 0700, removed at exit): never a fixed name in
  the shared temp directory, where anybody could plant a symlink or a file of their own.
  Spark's own loggers get a level of their own, so Spark does not print its "Setting default
  log level" banner; the executor's and the task manager's error reports (a stack trace per
  failed task) are off: the driver raises the failure and the command prints it as one line;
  so are the standalone client's give-up report and the transport's outstanding-requests
  error, which repeat what ``session_start``'s line says when a master never answers.
- quiet=True also drops the JVM's own "WARNING: Using incubator modules" line, which log4j
  cannot reach: the JVM's standard error goes through a pipe that forwards every other line.
- A master is checked before a JVM is started for it, and a session that fails to start is one
  line (spark/master.py): ``MasterError`` for a wrong or unreachable master, within seconds.
- ``java_options`` (the replay passes ``REPLAY_JAVA_OPTIONS``) go on the driver JVM's command line
  when this process starts it: the replay's driver JVM only schedules tasks and relays small
  results (the rows and the groups never pass through it: spark/group_spill.py, spark/write.py),
  so the C1-only JIT and the serial collector cost it nothing, while the default tiered JIT and
  G1 burnt about 12 s of CPU per run, start-up mostly, on the cores the Python workers need:
  6 s with them (local[2], the 100k-record generated log, load 6-7: 11.8-12.7 -> 5.7-6.1 s of
  JVM CPU; the 1M-record one, load 2-2.7: 11.6 -> 5.6-5.8 s, the whole run 68.2 -> 59.6-62.8 s
  of CPU, 37.2 -> 34.2-36.1 s; the workers' CPU unchanged). Not the default of ``spark_session``: DataFrame and
  Arrow work in the JVM runs about 2x slower with them (pyspark-notes.md §6.2; tables_bench).
- ``class_archive`` (the replay passes ``CLASS_ARCHIVE``; spark/class_archive.py, its rules): with
  a local master the driver JVM maps an application class-data-sharing archive, written at the
  first run's exit into a private per-user cache, so the classes of Spark's start-up arrive
  parsed and verified. The JVM's CPU per run (local[2], interleaved A/B, the tree's CPU polled from
  /proc): the 100k-record generated log, load 3.3-4.8: 4.9-6.0 -> 2.6-3.4 s (mean 5.3 -> 2.9),
  session ready at 5.5-10.9 -> 2.9-7.0 s from process start, the tree's CPU 13.2 -> 11.3 s; the 1M
  one, load 7.2-10.8: 5.3-5.9 -> 2.9-3.0 s (mean 5.57 -> 2.99), ready at 8.9-11.4 -> 4.1-5.4 s,
  the tree's CPU 59.9 -> 56.9 s (wall at that load told nothing: 103-112 vs 90-120 s); the 1M
  10-topic one, load 4.5-4.7, 2 pairs: JVM 4.97/5.29 -> 3.01/3.04 s, ready at 6.6/7.4 -> 4.1/5.0 s,
  the tree's CPU 42.1/42.1 -> 40.0/39.3 s, wall 66.1/65.6 -> 61.6/56.2 s. The first run
  pays once: ~+12 s of JVM CPU and ~+10 s of wall (recording, then the ~116 MB dump at exit).
  ``CTRLBATCH_SPARK_CLASS_ARCHIVE=off`` turns it off. A stdin EOF is what ends the JVM (as at
  any exit of this process); the dump's exit hook stops the session first, so Python's
  accumulator server does not report the JVM's going away. Tried beside it, no effect beyond the
  noise: -XX:-UsePerfData, -XX:CICompilerCount=1 (JVM CPU 4.1-4.5 s either way for a session and
  two small jobs, load 4.4-5.3). Not worth a thread: starting the JVM before the history is opened
  would overlap ~0.04 s (open_history and the controller 0.02 s, the engine's imports 0.02 s at 1M).
- The driver's log4j file applies whatever the master (the driver is this process's JVM); a
  cluster's executors keep their own logging.
- py4j reports a failed gateway call twice: it raises Py4JNetworkError (which the command turns
  into its one line) and logs the traceback through the root logger (``logging.exception``, so
  Python's default handler prints it). The second copy is dropped by a filter on the root logger
  that matches only records logged by py4j's own files (``Py4JTracebacks``); a SIGTERM that
  breaks the gateway mid-call then ends in the command's one line, as the local engine does.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .class_archive import ClassArchive, after_start, archive_plan
from .master import check_master, session_start

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_MASTER", "REPLAY_JAVA_OPTIONS", "SESSION_CONF", "class_archive_state", "driver_java_options", "spark_session",
    "quiet_log4j_file",
]

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

# The replay's driver JVM: C1-only JIT, serial collector (module rules: why, and why not by default).
REPLAY_JAVA_OPTIONS: tuple[str, ...] = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")

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
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
logger.standalone.name = org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend
logger.standalone.level = off
logger.transport.name = org.apache.spark.network.client.TransportResponseHandler
logger.transport.level = off
"""

_JVM_NOISE = (b"WARNING: Using incubator modules:",)  # lines quiet=True drops from the JVM's stderr
_log4j: Path | None = None
_lock = threading.Lock()
_archive_state = "off"  # what the last JVM this process started did with its class archive


def quiet_log4j_file() -> Path:
    """A log4j2 properties file (errors only, on stderr) in a private directory made for this
    process (mkdtemp: 0700, a fresh random name), removed when the process exits."""
    global _log4j
    with _lock:
        if _log4j is None or not _log4j.is_file():
            directory = tempfile.mkdtemp(prefix="ctrlbatch-spark-")
            atexit.register(shutil.rmtree, directory, True)
            path = Path(directory) / "log4j2.properties"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(_LOG4J)
            _log4j = path
        return _log4j


def _forward(source: int, target: int) -> None:
    with os.fdopen(source, "rb", buffering=0) as pipe:
        for line in iter(pipe.readline, b""):
            if not line.startswith(_JVM_NOISE):
                with contextlib.suppress(OSError):
                    os.write(target, line)


@contextlib.contextmanager
def _jvm_stderr_filtered(enabled: bool) -> Iterator[None]:
    """While the JVM starts, standard error is a pipe that a daemon thread forwards to the real
    one without the _JVM_NOISE lines; the JVM (and its Python workers) keep that pipe for life."""
    if not enabled:
        yield
        return
    read_end, write_end = os.pipe()
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.dup(2)
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        threading.Thread(target=_forward, args=(read_end, target), name="jvm-stderr", daemon=True).start()


def _prepare_environment(local: bool) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("TZ", "UTC")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def _launched_by_spark_submit() -> bool:
    """True inside spark-submit: the JVM already exists and told us how to reach it."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


class Py4JTracebacks(logging.Filter):
    """Drops what py4j logs on the root logger (its duplicate report of an error it raises)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "root" and "py4j" in Path(record.pathname).parts)


def _drop_py4j_tracebacks() -> None:
    root = logging.getLogger()
    if not any(isinstance(f, Py4JTracebacks) for f in root.filters):
        root.addFilter(Py4JTracebacks())


def _check_java_options(java_options: object) -> None:
    if not isinstance(java_options, tuple) or not all(isinstance(o, str) and o.startswith("-") for o in java_options):
        raise ValueError(f"java_options: expected a tuple of JVM options (each starting with '-'), got {java_options!r}")


def driver_java_options(java_options: tuple[str, ...] = ()) -> str:
    """The driver JVM's options: ``java_options``, then errors-only log4j and UTC (module rules)."""
    _check_java_options(java_options)
    return _driver_java_options(java_options)


def _driver_java_options(java_options: tuple[str, ...]) -> str:
    return " ".join((*java_options, f"-Dlog4j2.configurationFile=file:{quiet_log4j_file()}", "-Duser.timezone=UTC"))


def class_archive_state() -> str:
    """What the last driver JVM this process started did with its class archive: 'off', 'used',
    'rejected' (not mapped: deleted for the next run), 'dumping' (written at exit), 'unknown'."""
    return _archive_state


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "ctrlbatch-replay",
    conf: dict[str, str] | None = None,
    quiet: bool = False,
    java_options: tuple[str, ...] = (),
    class_archive: ClassArchive | None = None,
) -> SparkSession:
    """Get (or create) the replay's SparkSession.

    ``master=None`` means: the launcher's master under spark-submit, else ``local[*]``.
    ``conf`` adds or overrides settings (e.g. ``spark.default.parallelism`` in tests).
    ``quiet`` drops the JVM's start-up warning line too (module rules).
    ``java_options``: more options for the driver JVM when this call starts it (module rules).
    ``class_archive``: map (or write) a class-data-sharing archive for that JVM (spark/class_archive.py);
    a local master only.
    """
    global _archive_state
    if master is not None and (not isinstance(master, str) or not master.strip()):
        raise ValueError(f"master must be a Spark master URL such as 'local[2]' or 'spark://host:7077', got {master!r}")
    _check_java_options(java_options)
    submitted = master is None and _launched_by_spark_submit()
    effective = None if submitted else (master or DEFAULT_MASTER)
    local = effective is not None and effective.startswith("local")
    _prepare_environment(local)
    _drop_py4j_tracebacks()

    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if effective is not None and SparkSession.getActiveSession() is None:
        check_master(effective)  # a MasterError in seconds, before any JVM (spark/master.py)
    settings = dict(SESSION_CONF)
    if local:
        settings.update(LOCAL_CONF)
    if not submitted:  # the driver is this process's JVM whatever the master: errors only, in UTC
        settings["spark.driver.extraJavaOptions"] = _driver_java_options(java_options)  # checked above
    settings["spark.executorEnv.PYSPARK_PYTHON"] = os.environ["PYSPARK_PYTHON"]
    settings["spark.executorEnv.TZ"] = "UTC"
    settings.update(conf or {})
    new_jvm = not submitted and SparkContext._gateway is None
    plan = None
    ours = settings.get("spark.driver.extraJavaOptions") == _driver_java_options(java_options)
    if class_archive is not None and local and new_jvm and ours:
        plan = archive_plan(java_options, settings.get("spark.driver.memory", ""), class_archive)
        if plan is not None:
            settings["spark.driver.extraJavaOptions"] = _driver_java_options((*java_options, *plan.options))

    builder = SparkSession.builder.appName(app_name)
    if effective is not None:
        builder = builder.master(effective)
    for key, value in settings.items():
        builder = builder.config(key, value)
    starts_jvm = not submitted and SparkSession.getActiveSession() is None
    with _jvm_stderr_filtered(quiet and starts_jvm), session_start(effective):
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if new_jvm:
        _archive_state = "off" if plan is None else after_start(
            plan, getattr(SparkContext._gateway, "proc", None), session.stop, class_archive or ClassArchive()
        )
    return session
