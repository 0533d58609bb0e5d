"""The kraft_metadata data source's options, checked once with a clear error naming each.

Rules of this module: Spark hands a data source its options as strings (case-insensitive keys);
``parse_options`` turns them into ``TableOptions`` or raises ``OptionError`` (a ValueError) naming the option, the
value given and what it takes. OPTIONS is the one table of the options (name, default, what it
takes), which the README and the error messages are written from. The path is ``load(PATH)`` or
``OPTIONS (path '...')`` in SQL; a missing path is refused here, a path that is not a history by
open_history (sources.py) with the reader's one-line message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

__all__ = ["OPTIONS", "OptionError", "TableOptions", "parse_options"]

# name -> (default, what it takes). Keys are compared case-insensitively, as Spark does.
OPTIONS: dict[str, tuple[str | None, str]] = {
    "path": (None, "a __cluster_metadata-0 directory or its parent, a .log segment, a .checkpoint snapshot, "
                   "JSON lines or kafka-dump-log output"),
    "fromSnapshot": (None, "'newest' (the directory's newest <end>-<epoch>.checkpoint) or a .checkpoint path: its "
                           "records first, then the log from its end offset"),
    "skipCorrupt": ("false", "'true' or 'false': skip corrupt batches (as --skip-corrupt) instead of failing"),
    "includeNoOps": ("false", "'true' or 'false': a row for every NO_OP_RECORD too"),
    "unitBytes": (None, "a positive integer: input bytes per partition (default: equal parts of about "
                        "16 MiB, at most 16 of them, at most 64 MiB each)"),
}
_BOOLS = {"true": True, "false": False}
MAX_UNIT_BYTES = 1 << 40


class OptionError(ValueError):
    """A kraft_metadata option (or path) that cannot be used, named in the message."""


@attrs.frozen(slots=True)
class TableOptions:
    """The options, checked (module rules)."""

    path: str
    from_snapshot: str | None = None
    skip_corrupt: bool = False
    include_noops: bool = False
    unit_bytes: int | None = None


def _bool(options: Mapping[str, str], name: str) -> bool:
    text = options.get(name.lower())
    if text is None:
        return False
    value = _BOOLS.get(str(text).strip().lower())
    if value is None:
        raise OptionError(f"kraft_metadata option {name}: expected true or false, got {str(text)[:60]!r}")
    return value


def _unit_bytes(options: Mapping[str, str]) -> int | None:
    text = options.get("unitbytes")
    if text is None:
        return None
    try:
        value = int(str(text).strip())
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_UNIT_BYTES:
        raise OptionError(f"kraft_metadata option unitBytes: expected a positive integer (bytes per partition), "
                         f"got {str(text)[:60]!r}")
    return value


def parse_options(options: Mapping[str, str]) -> TableOptions:
    """``TableOptions`` from Spark's options (a case-insensitive mapping of strings)."""
    options = {str(k).lower(): v for k, v in options.items()}
    path = options.get("path")
    if path is None or not str(path).strip():
        raise OptionError("kraft_metadata: no path: spark.read.format('kraft_metadata').load(PATH), or "
                         "OPTIONS (path '...') in SQL")
    snapshot = options.get("fromsnapshot")
    if snapshot is not None and not str(snapshot).strip():
        raise OptionError("kraft_metadata option fromSnapshot: expected 'newest' or a .checkpoint path, got ''")
    if snapshot is not None and snapshot != "newest":
        snapshot = os.path.abspath(snapshot)
    return TableOptions(
        # absolute paths: the executors of a cluster do not run in the driver's working directory
        os.path.abspath(str(path)), snapshot, _bool(options, "skipCorrupt"), _bool(options, "includeNoOps"),
        _unit_bytes(options),
    )
