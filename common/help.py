"""The help formatter of every ``ctrlbatch`` command: each option's default, where it says something.

Rules: a default is shown unless it is None, False, "" or SUPPRESS, or the help already names its
default. Identity checks, not ``in (None, False)``: 0 == False in Python, and a default of 0 is a
value (``generate-log --seed``'s). The description and epilog keep their line breaks, so a
command can list its scenarios or examples one per line.
"""

from __future__ import annotations

import argparse

__all__ = ["HelpFormatter"]


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if default is None or default is False or default is argparse.SUPPRESS or default == "" or "default" in text:
            return text
        return super()._get_help_string(action) or text
