"""The kernels travel with the job: the function ``applyInArrow`` runs, pickled as Spark
pickles it, works in a Python process where spark_calib cannot be imported (an executor or a
Spark Connect server with pyspark, numpy and pyarrow only)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
from pyspark import cloudpickle

from spark_calib.kernels.finish import finish_group
from spark_calib.kernels.plan import FinishPlan
from spark_calib.metrics.finish import ship_kernels
from tests.support.key_stats import binary_key_table

# Unpickles (function, table) from stdin with every import of spark_calib failing, runs the
# function and writes the result back as an Arrow IPC stream.
WORKER = """
import importlib.abc, pickle, sys
class NoSparkCalib(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "spark_calib" or name.startswith("spark_calib."):
            raise ImportError("spark_calib is not installed on this worker")
        return None
sys.meta_path.insert(0, NoSparkCalib())
for name in [m for m in sys.modules if m == "spark_calib" or m.startswith("spark_calib.")]:
    del sys.modules[name]
import pyarrow as pa
function, table = pickle.loads(sys.stdin.buffer.read())
result = function(table)
sink = pa.BufferOutputStream()
with pa.ipc.new_stream(sink, result.schema) as writer:
    writer.write_table(result)
sys.stdout.buffer.write(sink.getvalue().to_pybytes())
"""


def _run_without_spark_calib(payload: bytes) -> subprocess.CompletedProcess[bytes]:
    # -I: isolated (no user site, no PYTHONPATH, no current directory on sys.path); the
    # editable install's path hook is still there, so the finder above is what blocks it.
    return subprocess.run(
        [sys.executable, "-I", "-c", WORKER], input=payload, capture_output=True, check=False
    )


def test_the_grouped_function_runs_where_spark_calib_cannot_be_imported() -> None:
    rng = np.random.default_rng(5)
    s = rng.uniform(size=500)
    table = binary_key_table(s, (rng.uniform(size=500) < s).astype(float))
    plan = FinishPlan((("calibration", ("ece", "count")),), 15, False, "analytic", 1.96, 0)
    function = finish_group(plan, ("calibration",), ("metrics", "reliability"))
    ship_kernels()
    done = _run_without_spark_calib(cloudpickle.dumps((function, table)))
    assert done.returncode == 0, done.stderr.decode()
    remote = pa.ipc.open_stream(done.stdout).read_all()
    assert remote.equals(function(table))
    tags = remote.column("_output").to_pylist()
    metrics = [
        m
        for m, tag in zip(remote.column("metric").to_pylist(), tags, strict=True)
        if tag == "metrics"
    ]
    assert sorted(metrics) == ["count", "ece"]
    # The reliability table's 15 bins of the key travel in the same table.
    assert tags.count("reliability") == 15


def test_without_shipping_the_worker_fails_to_import_spark_calib() -> None:
    # The control: pickled by reference, the function needs spark_calib on the worker.
    plan = FinishPlan((("calibration", ("count",)),), 15, False, "none", 1.96, 0)
    function = finish_group(plan, ("calibration",), ("metrics",))
    table = binary_key_table(np.array([0.5]), np.array([1.0]))
    payload = cloudpickle.dumps((function, table))
    for name in (
        "spark_calib.kernels",
        "spark_calib.stats.schema",
        "spark_calib.registry.metrics",
        "spark_calib.constants",
    ):
        cloudpickle.unregister_pickle_by_value(sys.modules[name])
    try:
        payload = cloudpickle.dumps((function, table))
    finally:
        ship_kernels()
    done = _run_without_spark_calib(payload)
    assert done.returncode != 0
    assert b"spark_calib is not installed on this worker" in done.stderr
