"""The replay's output directory, written atomically: requests/ (Parquet), summary.json, report.png.

Rules of this module:
- Nothing appears at ``DIR`` until the whole output is complete: everything is written into a
  sibling ``DIR.tmp-XXXX`` that is renamed to ``DIR`` by ``commit()``; any failure (or leaving the
  ``with`` block by an exception, SIGINT or SIGTERM) removes the temporary directory and leaves
  ``DIR`` untouched. commit() and abort() run with SIGINT and SIGTERM blocked, so a signal cannot
  cut a rename or a removal in half; it is delivered when they are done. An ``OutputDir`` that
  goes away neither committed nor aborted removes its ``DIR.tmp-*`` too (weakref.finalize): a
  signal whose handler runs right after the constructor returns, before the caller's ``try`` holds
  the object, would otherwise leave it behind (seen once under load in the SIGTERM test).
- The output is never someone else's data. commit() writes a marker, ``MARKER``, tied to the run
  that wrote it: a run id and, for every file of the output, its size and SHA-256. An existing
  ``DIR`` is replaced only if it is empty or holds such a marker and only files it lists, each of
  the listed size and digest (no symbolic link, no other file or directory): a directory with
  anybody else's summary.json, a previous output with a file added or changed, or a marker
  written by hand (or by an older ctrlbatch, whose marker had no digests) is refused in one line,
  and nothing is deleted. Checking a previous output reads it whole (SHA-256 runs at about
  2 GB/s a core). Nothing outside ``DIR`` is touched but the two siblings ``DIR.tmp-*`` and ``DIR.old-*``
  that live only during the run; a missing parent directory is refused, not created.
- requests/ holds Parquet files with the columns of ``rows.REQUEST_SCHEMA``; the local engine
  writes them here through ``ParquetRows`` (streaming, bounded memory), and so does each Spark
  write task (a file per unit). Either way pyarrow reads it: ``pyarrow.parquet.read_table(DIR/'requests')``.
  Snappy compression and dictionaries, except where they only cost CPU: sha256 and frame never
  repeat (no dictionary), and hex SHA-256 does not shrink under snappy (stored plain). Measured on
  the 200k-record generated log's 294,910 rows: 0.36 s of write CPU instead of 0.41 s (conversion
  from lists included), 20.6 MB instead of 20.0 MB; the columns read back identical.
- report.png is drawn from the Parquet files by a streaming two-pass scan, so it costs the same
  memory for 1,000 rows as for 100 million.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import stat
import tempfile
import uuid
import weakref
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from ctrlbatch.common import CommandError

__all__ = ["OutputDir", "ParquetRows", "write_json", "REPORT_BINS", "MARKER"]

REPORT_BINS = 120  # time buckets across the history in report.png
ROWS_PER_FILE_GROUP = 65_536  # rows buffered before a Parquet row group is written
# Parquet settings (see the rules): no dictionary for columns whose values never repeat, no
# compression for the one that snappy cannot shrink (SHA-256 in hex: 4 bits of entropy a byte).
_UNIQUE_PER_ROW = ("sha256", "frame")
_INCOMPRESSIBLE = ("sha256",)
MARKER = ".ctrlbatch-replay.json"  # written last into every output: what this program wrote
_MARKER_TOOL = "ctrlbatch replay"
_MAX_MARKER_BYTES = 16 << 20  # a marker lists a few thousand files at most; a bigger one is not ours
_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait (blocked, not lost) until the block is done."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _os_refusal(path: Path, what: str, e: OSError) -> CommandError:
    return CommandError(f"{e.filename or path}: {what}: {e.strerror or type(e).__name__}")


class OutputDir:
    """``with OutputDir(path) as out: ...; out.commit()`` — the atomic output directory."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
            raise ValueError(f"path must name an output directory, got {path!r}")
        self.path = Path(path).absolute()
        refusal = foreign_reason(self.path)
        if refusal is not None:
            raise CommandError(f"{self.path}: {refusal}; choose another --out or remove it yourself")
        parent = self.path.parent
        if not parent.is_dir():
            kind = "is not a directory" if parent.exists() else "does not exist"
            raise CommandError(f"{self.path}: cannot write the output here: {parent} {kind}")
        self.committed = False
        tmp: Path | None = None
        try:
            with _signals_deferred():
                tmp = Path(tempfile.mkdtemp(prefix=f"{self.path.name}.tmp-", dir=parent))
                self._remove_tmp = weakref.finalize(self, shutil.rmtree, str(tmp), True)
                umask = os.umask(0)
                os.umask(umask)
                tmp.chmod(0o777 & ~umask)  # mkdtemp's 0700 would otherwise become DIR's mode
        except BaseException as e:  # a signal deferred above arrives here: nobody else knows tmp yet
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(e, OSError):
                raise _os_refusal(parent, "cannot write the output here", e) from None
            raise
        self.tmp = tmp

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
        """Write the marker, then move the finished output to its place (replacing an empty
        directory or a previous output of this program, checked again now)."""
        if self.committed:
            return self.path
        with _signals_deferred():
            try:
                files = {name: _digest(self.tmp / name) for name in sorted(_own_files(self.tmp))}
                doc = {"written_by": _MARKER_TOOL, "run": uuid.uuid4().hex, "files": files}
                (self.tmp / MARKER).write_text(json.dumps(doc) + "\n")
                refusal = foreign_reason(self.path)
                if refusal is not None:
                    raise CommandError(f"{self.path}: {refusal} (it appeared during the run); the output is not written")
                old: Path | None = None
                if self.path.exists() and any(self.path.iterdir()):
                    old = Path(tempfile.mkdtemp(prefix=f"{self.path.name}.old-", dir=self.path.parent))
                    self.path.rename(old / "previous")
                self.tmp.rename(self.path)  # rename(2) replaces an empty directory atomically
                self.committed = True
                self._remove_tmp.detach()
                if old is not None:
                    shutil.rmtree(old, ignore_errors=True)
            except OSError as e:
                raise _os_refusal(self.path, "cannot write the output", e) from None
        return self.path

    def abort(self) -> None:
        with _signals_deferred():
            self._remove_tmp()  # shutil.rmtree(tmp, ignore_errors=True), once


def _own_files(root: Path) -> Iterator[str]:
    """Relative paths (with /) of every file under root; a symlink or special file is not ours."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            mode = os.lstat(full).st_mode
            if stat.S_ISLNK(mode) or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise OSError(0, "holds a symbolic link or special file", full)
            if stat.S_ISREG(mode):
                yield os.path.relpath(full, root).replace(os.sep, "/")


def _digest(path: Path) -> dict[str, Any]:
    """{"bytes": size, "sha256": hex digest} of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
            size += len(block)
    return {"bytes": size, "sha256": h.hexdigest()}


def _unlike(path: Path, name: str, listed: object) -> bool:
    """Does the file differ from what the marker lists for it (size first: cheap)?"""
    if not isinstance(listed, dict) or not isinstance(listed.get("bytes"), int) or not isinstance(listed.get("sha256"), str):
        return True
    full = path / name
    return full.stat().st_size != listed["bytes"] or _digest(full) != listed


def foreign_reason(path: Path) -> str | None:
    """Why ``path`` may not be replaced by an output (None: it does not exist, is empty, or is a
    previous output of this program with exactly the files its marker lists)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there (a parent that is a file is the caller's)
        return None
    except OSError as e:
        return f"cannot be inspected ({e.strerror})"
    if stat.S_ISLNK(mode):
        return "is a symbolic link, not a directory this program wrote"
    if not stat.S_ISDIR(mode):
        return "exists and is not a directory"
    try:
        if not any(path.iterdir()):
            return None
        marker = path / MARKER
        if not marker.is_file() or marker.is_symlink():
            return f"exists and is not a replay output ({MARKER} missing): it holds files this program did not write"
        if marker.stat().st_size > _MAX_MARKER_BYTES:
            return f"exists and its {MARKER} is not this program's"
        doc = json.loads(marker.read_text(encoding="utf-8"))
        listed = doc.get("files") if isinstance(doc, dict) and doc.get("written_by") == _MARKER_TOOL else None
        if not isinstance(listed, dict) or not isinstance(doc.get("run"), str):
            return (f"exists and its {MARKER} is not this program's (it lists no digests of the files a run "
                    "wrote: written by hand or by an older ctrlbatch)")
        found = set(_own_files(path)) - {MARKER}
        extra = sorted(found - set(listed))
        if extra:
            more = f" and {len(extra) - 1} more" if len(extra) > 1 else ""
            return f"holds files this program did not write ({extra[0][:200]!r}{more})"
        changed = sorted(name for name in found if _unlike(path, name, listed[name]))
    except (OSError, ValueError) as e:  # unreadable, a symlink inside, bad JSON
        detail = e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__
        return f"exists and cannot be checked as a replay output ({detail})"
    if changed:
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        return f"holds files that are not what this program wrote ({changed[0][:200]!r}{more} changed since)"
    return None


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
        unique = [n for n in _UNIQUE_PER_ROW if n in self._names]
        self._writer = pq.ParquetWriter(
            str(directory / name), schema,
            use_dictionary=[n for n in self._names if n not in unique],
            compression={n: "none" if n in _INCOMPRESSIBLE else "snappy" for n in self._names},
        )

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
