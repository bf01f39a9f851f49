"""``outputs_from_stats`` (every output of a statistics table from one read of it, as a rollup
writes them) equals the three ``…_from_stats`` functions and ``row_counts`` called one by one,
on the driver path and in the grouped pass: a binary config whose metrics and recalibration
read the fine cells, and one that reads only the bins (and has no recalibration)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import (
    bin_grain,
    evaluate,
    load_config,
    metrics_from_stats,
    outputs_from_stats,
    recalibration_from_stats,
    reliability_from_stats,
    row_counts,
)
from spark_calib.metrics.finish import DRIVER_MAX_ROWS_CONF

TOL = 1e-9
BINARY: dict[str, Any] = {
    "task": "binary",
    "columns": {"score": "s", "label": "y", "weight": "w", "model_version": "mv"},
    "slices": [[], ["g"]],
    "metrics": ["ece", "brier", "count", "roc_auc_binned", "calibration_slope"],
    "recalibration": {"methods": ["temperature", "platt", "isotonic"], "min_fit_rows": 50},
    "max_invalid_fraction": 0.1,
}
# No metric reads the fine cells and no recalibration: the bin grain is read.
BINNED: dict[str, Any] = {**BINARY, "metrics": ["ece", "brier", "count"]}
BINNED.pop("recalibration")


def _input(spark: SparkSession) -> DataFrame:
    score = (F.col("id") * 7919 % 1000) / 999.0
    return spark.range(4000).select(
        # A few null scores: invalid rows, which the row counts must keep apart.
        F.when(F.col("id") % 997 == 0, F.lit(None)).otherwise(score).alias("s"),
        (F.col("id") * 104729 % 3 == 0).cast("int").alias("y"),
        (1.0 + F.col("id") % 4 / 2.0).alias("w"),
        (F.col("id") % 3).cast("string").alias("g"),
        (F.col("id") % 2).cast("string").alias("mv"),
    )


def _rows(frame: DataFrame | None) -> list[tuple[Any, ...]]:
    assert frame is not None
    return sorted(
        (tuple(row) for row in frame.collect()),
        key=lambda row: tuple("" if v is None else str(v) for v in row),
    )


def _same(actual: list[tuple[Any, ...]], expected: list[tuple[Any, ...]]) -> None:
    assert len(actual) == len(expected)
    for left, right in zip(actual, expected, strict=True):
        for a, b in zip(left, right, strict=True):
            if isinstance(b, float) and isinstance(a, float):
                assert (
                    a == b
                    or (math.isnan(a) and math.isnan(b))
                    or abs(a - b) <= TOL * max(1.0, abs(b))
                ), (left, right)
            else:
                assert a == b, (left, right)


@pytest.mark.parametrize("driver_rows", ["200000", "0"], ids=["driver", "grouped"])
@pytest.mark.parametrize("name", ["binary", "binned"])
def test_one_read_gives_what_the_functions_give_one_by_one(
    spark: SparkSession, driver_rows: str, name: str
) -> None:
    cfg = load_config(BINARY if name == "binary" else BINNED)
    stats_df = evaluate(_input(spark), cfg).stats
    binned = bin_grain(stats_df, cfg)
    spark.conf.set(DRIVER_MAX_ROWS_CONF, driver_rows)
    try:
        outputs = outputs_from_stats(stats_df, cfg, bin_stats=binned)
        _same(_rows(outputs.metrics), _rows(metrics_from_stats(stats_df, cfg, bin_stats=binned)))
        _same(_rows(outputs.reliability), _rows(reliability_from_stats(binned, cfg)))
        if name == "binary":
            _same(_rows(outputs.recalibration), _rows(recalibration_from_stats(stats_df, cfg)))
        else:
            assert outputs.recalibration is None
        assert outputs.row_counts == row_counts(stats_df, cfg)
        # 4000 rows, of which ids 0, 997, 1994, 2991 and 3988 have a null score.
        assert sum(outputs.row_counts.values()) == 4000
        assert sum(n for reason, n in outputs.row_counts.items() if reason is not None) == 5
        outputs.unpersist()
    finally:
        spark.conf.unset(DRIVER_MAX_ROWS_CONF)
