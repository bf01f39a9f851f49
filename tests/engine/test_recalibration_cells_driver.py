"""The recalibration cells read on the driver from the statistics already there
(``head_cell_rows``) equal the ones merged in Spark (``collect_cell_rows`` of the cached
statistics): same keys, same rows in the same order, the same sums."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_calib import evaluate
from spark_calib.recalibration.points import collect_cell_rows, head_cell_rows


def _log(spark: SparkSession, n: int = 3_000) -> Any:
    return spark.range(n).select(
        F.greatest(F.lit(0.001), (F.col("id") * 0.618) % 1.0).alias("s"),
        ((F.col("id") * 0.377) % 1.0 < (F.col("id") * 0.618) % 1.0).cast("int").alias("y"),
        (F.col("id") % 3).cast("string").alias("g"),
        F.when(F.col("id") % 3 == 0, "val").otherwise("test").alias("split"),
        (F.col("id") % 2).cast("string").alias("mv"),
        (1.0 + (F.col("id") % 4) / 2.0).alias("w"),
    )


@pytest.mark.parametrize(
    "slices,source,fit",
    [
        ([["g"]], "g", True),  # overall not configured: summed from the first set
        ([[], ["g"]], "overall", False),  # no fit condition: fit is −1
    ],
)
def test_driver_cells_equal_the_spark_cells(
    spark: SparkSession, slices: list[list[str]], source: str, fit: bool
) -> None:
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "model_version": "mv", "weight": "w"},
        "slices": slices,
        "metrics": ["ece"],
        "recalibration": {
            "methods": ["temperature"],
            **({"fit": {"column": "split", "value": "val"}} if fit else {}),
            "min_fit_rows": 10,
        },
    }
    result = evaluate(_log(spark), config)
    try:
        spark_cells = collect_cell_rows(result.stats, source)
        driver_cells = head_cell_rows(result.stats.toArrow(), source)
    finally:
        result.unpersist()
    assert sorted(driver_cells, key=str) == sorted(spark_cells, key=str)
    assert any(key[1] == "overall" for key in spark_cells)
    for key, expected in spark_cells.items():
        got = driver_cells[key]
        for name in ("cell", "bin", "label", "fit"):
            np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))
        assert set(got.fit.tolist()) <= ({0, 1} if fit else {-1})
        assert got.sums.keys() == expected.sums.keys()
        for name, values in expected.sums.items():
            np.testing.assert_allclose(got.sums[name], values, rtol=1e-12, atol=0.0)
