"""``python -m ctrlbatch.cli``: the same as the ``ctrlbatch`` command."""

from . import _entry

_entry()
