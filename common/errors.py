"""Errors a person can act on: a message, no traceback (``ctrlbatch.cli`` turns them into exit status 1)."""

from __future__ import annotations


class CommandError(Exception):
    """A failure the user can act on: bad input data, an unreadable file, a job that failed.

    The message is printed as ``ctrlbatch NAME: error: MESSAGE`` and the command exits 1. Say
    what failed and where (file, line or byte offset), and what to do if that is not obvious.
    """
