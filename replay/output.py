"""The replay's output directory, written atomically: requests/ (Parquet), summary.json, report.png.

Rules of this module:
- Nothing appears at ``DIR`` until the whole output is complete: everything is written into a
  sibling ``DIR.tmp-XXXX`` that is renamed to ``DIR`` by ``commit()``; any failure (or leaving the
  ``with`` block by an exception) removes the temporary directory and leaves ``DIR`` untouched.
- An existing ``DIR`` is replaced only if it is a previous replay output (it has summary.json)
  or empty; anything else is refused, so a typo never deletes someone's directory.
- requests/ holds Parquet files with the columns of ``rows.REQUEST_SCHEMA``; the local engine
  writes them here through ``ParquetRows`` (streaming, bounded memory), the Spark engine writes
  the directory itself. Either way pyarrow reads it: ``pyarrow.parquet.read_table(DIR/'requests')``.
- report.png is drawn from the Parquet files by a streaming two-pass scan, so it costs the same
  memory for 1,000 rows as for 100 million.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from ctrlbatch.common import CommandError

__all__ = ["OutputDir", "ParquetRows", "write_json", "REPORT_BINS"]

REPORT_BINS = 120  # time buckets across the history in report.png
ROWS_PER_FILE_GROUP = 65_536  # rows buffered before a Parquet row group is written


class OutputDir:
    """``with OutputDir(path) as out: ...; out.commit()`` — the atomic output directory."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
            raise ValueError(f"path must name an output directory, got {path!r}")
        self.path = Path(path).absolute()
        if self.path.exists() and not _replaceable(self.path):
            raise CommandError(
                f"{self.path}: exists and is not a replay output (no summary.json); "
                "choose another --out or remove it"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f"{self.path.name}.tmp-", dir=self.path.parent))
        umask = os.umask(0)
        os.umask(umask)
        self.tmp.chmod(0o777 & ~umask)  # mkdtemp's 0700 would otherwise become DIR's mode
        self.committed = False

    def __repr__(self) -> str:
        return f"OutputDir({str(self.path)!r}, {'committed' if self.committed else 'pending'})"

    @property
    def requests_dir(self) -> Path:
        return self.tmp / "requests"

    @property
    def summary_path(self) -> Path:
        return self.tmp / "summary.json"

    @property
    def report_path(self) -> Path:
        return self.tmp / "report.png"

    def __enter__(self) -> OutputDir:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self.committed:
            self.abort()

    def commit(self) -> Path:
        """Move the finished output to its place (replacing a previous replay output)."""
        if self.committed:
            return self.path
        old: Path | None = None
        if self.path.exists():
            old = Path(tempfile.mkdtemp(prefix=f"{self.path.name}.old-", dir=self.path.parent))
            self.path.rename(old / "previous")
        self.tmp.rename(self.path)
        self.committed = True
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.path

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def _replaceable(path: Path) -> bool:
    return path.is_dir() and ((path / "summary.json").is_file() or not any(path.iterdir()))


def write_json(path: Path, value: Mapping[str, Any]) -> None:
    """Pretty, key-ordered-as-given JSON with a final newline (diff-friendly)."""
    path.write_text(json.dumps(value, indent=2) + "\n")


class ParquetRows:
    """Streams row dicts into one Parquet file of ``directory`` in row groups of bounded size."""

    def __init__(self, directory: Path, schema: Any, name: str = "part-00000.parquet") -> None:
        import pyarrow.parquet as pq

        directory.mkdir(parents=True, exist_ok=True)
        self.schema = schema
        self.count = 0
        self._names = list(schema.names)
        self._buffer: dict[str, list[Any]] = {n: [] for n in self._names}
        self._writer = pq.ParquetWriter(str(directory / name), schema)

    def __repr__(self) -> str:
        return f"ParquetRows({self.count:,} rows)"

    def write(self, rows: Iterable[Mapping[str, Any]]) -> None:
        buffer = self._buffer
        columns = [(n, buffer[n]) for n in self._names]
        for row in rows:
            for name, column in columns:
                column.append(row.get(name))
            self.count += 1
            if len(columns[0][1]) >= ROWS_PER_FILE_GROUP:
                self._flush()

    def write_columns(self, columns: Mapping[str, list[Any]]) -> None:
        """Rows given as one list per column (all of the schema's columns, equal lengths)."""
        import pyarrow as pa

        self._flush()
        table = pa.table({n: columns[n] for n in self._names}, schema=self.schema)
        self._writer.write_table(table)
        self.count += table.num_rows

    def _flush(self) -> None:
        import pyarrow as pa

        if self._buffer[self._names[0]]:
            self._writer.write_table(pa.table(self._buffer, schema=self.schema))
            for column in self._buffer.values():
                column.clear()

    def close(self) -> None:
        self._flush()
        self._writer.close()
