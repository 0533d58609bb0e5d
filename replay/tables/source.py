"""The ``kraft_metadata`` PySpark data source: the classes Spark loads, kept free of ctrlbatch.

Rules of this module:
- Spark pickles the data source class to its planning process and its readers and partitions
  to the executors. ``register`` has cloudpickle send this module's classes by value, and every
  value they hold is plain (options as a dict of strings, partitions as tuples), so an executor
  that cannot import ctrlbatch still unpickles them and then fails in one line that says what
  it lacks (``MISSING``), not with a bare ``No module named 'ctrlbatch'`` from inside pickle.
- A ctrlbatch error in ``read()`` (bad input: file, byte offset, reason) is raised without the
  reader's frames and reported by the failing worker without a traceback (``_report_one_line``),
  so the user sees the reader's one line right under Spark's heading.
- The work is done by ``ctrlbatch.replay.tables.table`` (imported where it runs): the options'
  checks, planning, reading, and the stream's offsets.
- Batch reads: ``partitions()`` are byte ranges cut on batch boundaries (plan.py), ``read()``
  yields Arrow record batches. The class registered by ``register(spark)`` is ``for_session``'s:
  it holds the session's default parallelism, which the planner (a process of its own, without a
  SparkContext) cannot ask for, so the default partitioning gives every core one equal part. Streaming reads (``DataSourceStreamReader``): offsets are
  ``{"offset": next log offset, ...}`` (stream.py's rules).
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

__all__ = ["MISSING", "NAME", "KraftMetadataDataSource", "MissingCtrlbatch", "for_session"]

NAME = "kraft_metadata"
MISSING = (
    "kraft_metadata: this Spark Python process cannot import ctrlbatch ({error}): the executors (and the "
    "driver's data source planner) must run a Python that has it: set spark.pyspark.python (or PYSPARK_PYTHON) "
    "to the interpreter of the venv where ctrlbatch is installed, or pip install the ctrlbatch wheel with its "
    "[replay] extra on every executor"
)


class MissingCtrlbatch(RuntimeError):
    """This Spark Python process cannot import ctrlbatch (MISSING says what to do)."""


def _table() -> Any:
    """ctrlbatch.replay.tables.table, or the one-line error saying what this process lacks."""
    try:
        from ctrlbatch.replay.tables import table
    except ImportError as e:
        raise MissingCtrlbatch(MISSING.format(error=e)) from None
    return table


def _one_line(method: Any) -> Any:
    """The method, reporting a ctrlbatch error (an option, bad input, a stream's log that changed,
    a missing ctrlbatch) as its one line: the Python process Spark runs it in (the planner, the
    stream's driver-side runner) reports it and exits (pyspark/sql/worker/utils.py worker_run,
    python_streaming_source_runner.py), as _report_one_line says."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception as e:
            if not type(e).__module__.startswith("ctrlbatch."):
                raise
            error = e
        _report_one_line()
        raise error.with_traceback(None) from None

    call.__name__, call.__doc__ = method.__name__, method.__doc__
    return call


def _guarded(read: Any, *args: Any) -> Generator[Any, None, BaseException | None]:
    """read(*args)'s batches; returns a ctrlbatch error (bad input: file, byte offset, reason)
    instead of raising it, so that the caller raises it without the reading code's frames: the
    worker's report is then one frame and the error's one line, not a traceback through the reader."""
    try:
        yield from read(*args)
    except Exception as e:
        if not type(e).__module__.startswith("ctrlbatch."):
            raise
        return e.with_traceback(None)
    return None


def _report_one_line() -> None:
    """Have this worker report the error about to be raised as its one line, without a
    traceback: pyspark's handle_worker_exception reads SPARK_HIDE_TRACEBACK when it formats the
    error, and the worker exits right after (pyspark/worker.py: ``sys.exit(-1)``), so no other
    task's report changes. Spark then shows "An exception was thrown from the Python worker:"
    and, on the next line, the reader's own (file, byte offset, reason)."""
    os.environ["SPARK_HIDE_TRACEBACK"] = "1"


class KraftMetadataDataSource(DataSource):
    """``spark.read.format("kraft_metadata").load(PATH)``: one row per record of a KRaft metadata
    log; ``spark.readStream`` follows a live ``__cluster_metadata-0``. Options: fromSnapshot,
    skipCorrupt, includeNoOps, unitBytes (ctrlbatch.replay.tables.options.OPTIONS)."""

    cores: int | None = None  # the session's default parallelism (for_session), for the partitioning

    @classmethod
    def name(cls) -> str:
        return NAME

    @_one_line
    def schema(self) -> Any:
        table = _table()
        table.check_options(dict(self.options))
        return table.records_schema()

    @_one_line
    def reader(self, schema: Any) -> DataSourceReader:
        return _Reader(_table().checked(dict(self.options)), self.cores)

    @_one_line
    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return _StreamReader(_table().checked_stream(dict(self.options)))


class _Part(InputPartition):
    """A partition's plain values (plan.Part as a tuple)."""


def for_session(cores: int | None) -> type[KraftMetadataDataSource]:
    """The data source class to register in a session whose default parallelism is cores (None:
    unknown): a subclass holding it, which travels with the class (pickled by value)."""
    if cores is None:
        return KraftMetadataDataSource
    return type(KraftMetadataDataSource.__name__, (KraftMetadataDataSource,),
                {"cores": cores, "__doc__": KraftMetadataDataSource.__doc__})


class _Reader(DataSourceReader):
    def __init__(self, options: dict[str, str], cores: int | None = None) -> None:
        self.options = options
        self.cores = cores

    @_one_line
    def partitions(self) -> Sequence[InputPartition]:
        return [_Part(p) for p in _table().plan(self.options, self.cores)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        error = yield from _guarded(_table().read, self.options, partition.value)
        if error is not None:
            _report_one_line()
            raise error from None


class _StreamReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.follower: Any = None  # the driver's scan position (stream.Follower), made on first use

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "follower": None}  # the scan position stays on the driver

    def _follower(self) -> Any:
        if self.follower is None:
            self.follower = _table().follower(self.options)
        return self.follower

    @_one_line
    def initialOffset(self) -> dict[str, Any]:
        result: dict[str, Any] = self._follower().initial_offset()
        return result

    @_one_line
    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        result: dict[str, Any] = self._follower().latest_offset(start)
        return result

    @_one_line
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return [_Part(p) for p in self._follower().partitions(start, end)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        error = yield from _guarded(_table().read_stream, self.options, partition.value)
        if error is not None:
            _report_one_line()
            raise error from None

    def commit(self, end: dict[str, Any]) -> None:
        return None
