"""spark-submit entry point of the scheduled job: ``spark-submit jobs/evaluate.py --config …``.

The same as ``spark-calib evaluate``; the cluster's spark-submit settings (master, catalog,
resources) make the session. The spark_calib package must be importable on the driver:
install it there, or ship it with ``--py-files`` (see the README).
"""

from __future__ import annotations

import sys

from spark_calib_cli.main import main

if __name__ == "__main__":
    sys.exit(main(["evaluate", *sys.argv[1:]]))
