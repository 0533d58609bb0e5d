"""What the kraft_metadata data source's classes (source.py) call: plain values in and out.

Rules of this module: the data source's classes hold only plain values (source.py's rules), so
this is where they become ctrlbatch's: options (a dict of strings) are checked here
(options.parse_options: an error names the option), partitions cross as tuples of plan.Part's
fields, and stream offsets as the dicts stream.py defines.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs
import pyarrow as pa

from .options import TableOptions, parse_options
from .plan import Part, plan_parts, read_part
from .schema import records_schema

__all__ = ["check_options", "checked", "checked_stream", "follower", "plan", "read", "read_stream", "records_schema"]


def check_options(options: Mapping[str, str]) -> TableOptions:
    return parse_options(options)


def checked(options: Mapping[str, str]) -> dict[str, str]:
    """The options, checked, as the plain dict the reader keeps."""
    parse_options(options)
    return dict(options)


def checked_stream(options: Mapping[str, str]) -> dict[str, str]:
    from .stream import check_stream_options

    check_stream_options(parse_options(options))
    return dict(options)


def plan(options: Mapping[str, str], cores: int | None = None) -> list[tuple[Any, ...]]:
    return [attrs.astuple(p, recurse=False) for p in plan_parts(parse_options(options), cores)]


def read(options: Mapping[str, str], part: tuple[Any, ...]) -> Iterator[pa.RecordBatch]:
    index, kind, begin, stop, overlap = part
    yield from read_part(parse_options(options), Part(index, kind, tuple(begin), None if stop is None else tuple(stop),
                                                      overlap))


def follower(options: Mapping[str, str]) -> Any:
    from .stream import Follower

    return Follower(parse_options(options))


def read_stream(options: Mapping[str, str], part: tuple[Any, ...]) -> Iterator[pa.RecordBatch]:
    from .stream import StreamPart, read_stream_part

    yield from read_stream_part(parse_options(options), StreamPart(*part))
