"""Errors a person can act on: a message, no traceback (``ctrlbatch.cli`` turns them into exit status 1)."""

from __future__ import annotations

import os


class CommandError(Exception):
    """A failure the user can act on: bad input data, an unreadable file, a job that failed.

    The message is printed as ``ctrlbatch NAME: error: MESSAGE`` and the command exits 1. Say
    what failed and where (file, line or byte offset), and what to do if that is not obvious.
    """


def os_error_line(e: OSError) -> str:
    """'<path>: <reason>' (and '-> <second path>' for a rename) for an OS error: one line. An
    error without errno parts (pyarrow's, whose text names the file) keeps its text, bounded."""
    reason = e.strerror or " ".join(str(e).split())[:500] or type(e).__name__
    if e.filename is None:
        return reason
    second = f" -> {e.filename2}" if e.filename2 is not None else ""
    return f"{os.fsdecode(e.filename)}{second}: {reason}"
