"""The embedded session starts its Python workers with the driver's own interpreter (the
kernels' grouped pass needs its numpy and pyarrow), not ``python3`` from PATH."""

from __future__ import annotations

import sys
from pathlib import Path

from pyspark.sql import SparkSession

from spark_calib_cli.io.session import WORKER_PYTHON, _embedded


def test_the_embedded_session_runs_workers_with_the_drivers_python(tmp_path: Path) -> None:
    builder = _embedded(SparkSession.builder, tmp_path, verbose=False)
    assert builder._options[WORKER_PYTHON] == sys.executable
