"""ctrlbatch.common: what every layer may import (the domain, the servers and the command line).

Rules: nothing here imports another ctrlbatch package. ``CommandError`` is a failure a person can
act on (the command line turns it into ``ctrlbatch NAME: error: ...`` and exit status 1), and
``os_error_line`` the one line an OS error becomes;
``Progress`` reports long work on standard error; ``HelpFormatter`` is every command's --help.
"""

from .errors import CommandError, os_error_line
from .help import HelpFormatter
from .progress import Progress

__all__ = ["CommandError", "HelpFormatter", "Progress", "os_error_line"]
