"""spark-submit entry point of the window rollup: ``spark-submit jobs/rollup.py --config …
--run-date D --granularity week``.

The same as ``spark-calib rollup``: it sums the daily statistics of a week, month or rolling
window into the window's metric, reliability, drift and alert tables. As for
``jobs/evaluate.py``, the spark_calib package must be importable on the driver.
"""

from __future__ import annotations

import sys

from spark_calib_cli.main import main

if __name__ == "__main__":
    sys.exit(main(["rollup", *sys.argv[1:]]))
