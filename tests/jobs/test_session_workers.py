"""The embedded session: it finishes statistics on the driver up to a bound set by its heap, and
it starts its Python workers with the driver's own interpreter (the kernels' grouped pass needs
its numpy and pyarrow), not ``python3`` from PATH: run in a process whose PATH puts first a
``python3`` that cannot run anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Starts the job's embedded session and runs one Arrow pass in a Python worker.
JOB = """
from spark_calib_cli.io.session import build_session
spark = build_session("local[1]")
frame = spark.range(3)
def same(batches):
    import pyarrow  # noqa: F401
    yield from batches
print("rows", frame.mapInArrow(same, frame.schema).count())
spark.stop()
"""


@pytest.mark.slow
def test_workers_run_the_drivers_python_not_python3_from_path(tmp_path: Path) -> None:
    shims = tmp_path / "bin"
    shims.mkdir()
    for name in ("python3", "python"):
        shim = shims / name
        shim.write_text("#!/bin/sh\necho 'not the driver python' >&2\nexit 3\n")
        shim.chmod(0o755)
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
    }
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        [sys.executable, "-c", JOB],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rows 3" in done.stdout


SETTING = """
from spark_calib_cli.io.session import build_session
spark = build_session("local[1]", conf={"spark.driver.memory": "2g"})
print("driver rows", spark.conf.get("spark.calib.driverMaxRows"))
spark.stop()
"""


@pytest.mark.slow
def test_an_embedded_session_finishes_statistics_on_the_driver_by_its_heap(
    tmp_path: Path,
) -> None:
    # 2 GiB of heap, 300 statistics rows per MiB: the driver path up to 614,400 rows.
    done = subprocess.run(
        [sys.executable, "-c", SETTING],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "driver rows 614400" in done.stdout
