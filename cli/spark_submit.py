"""The script to hand to ``spark-submit``: it runs the ``ctrlbatch`` command in the driver.

``spark-submit --master spark://HOST:7077 "$(python -m ctrlbatch.cli.spark_submit --where)" replay PATH --out DIR``

Rules: absolute imports only (spark-submit runs this file as a script, not as a module); under
spark-submit the replay takes the master spark-submit chose (spark_session never overrides it).
"""

from __future__ import annotations

import sys

from ctrlbatch.cli import main

if __name__ == "__main__":
    if sys.argv[1:] == ["--where"]:
        print(__file__)
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
