"""ctrlbatch.common: what every layer may import (the domain, the servers and the command line).

Rules: nothing here imports another ctrlbatch package. ``CommandError`` is a failure a person can
act on (the command line turns it into ``ctrlbatch NAME: error: ...`` and exit status 1);
``Progress`` reports long work on standard error.
"""

from .errors import CommandError
from .progress import Progress

__all__ = ["CommandError", "Progress"]
