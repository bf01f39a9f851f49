"""The kernels' two paths give the same rows: the driver (one ``toArrow()`` of small
statistics) and one grouped Arrow pass on the workers (``applyInArrow``), for analytic and
jackknife uncertainty, uniform and equal-mass bins, per slice and class."""

from __future__ import annotations

import math

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_calib import bin_grain, evaluate, load_config
from spark_calib.errors import ConfigError
from spark_calib.metrics.finish import (
    DRIVER_MAX_ROWS,
    DRIVER_MAX_ROWS_CONF,
    driver_max_rows,
    finish_groups,
    finished_metrics,
    statistics_head,
)
from spark_calib.registry import resolve_metrics

BASE = {
    "task": "binary",
    "columns": {"score": "s", "label": "y", "weight": "w", "model_version": "mv"},
    "slices": [[], ["g"]],
    "metrics": ["ece", "mce", "rmsce", "brier", "count", "ece_debiased", "classwise_ece"],
    # Every 97th score is null: each path leaves those statistics rows out.
    "max_invalid_fraction": 0.05,
}
CASES = {
    "analytic": BASE,
    "jackknife": {**BASE, "uncertainty": {"method": "jackknife", "buckets": 5, "bucket_key": "id"}},
    "equal_mass": {
        **BASE,
        "metrics": ["ece", "mce", "count", "brier_reliability"],
        "binning": {"n_bins": 8, "strategy": "equal_mass"},
    },
}


def _rows(frame):
    return sorted(
        (tuple(row) for row in frame.collect()),
        key=lambda row: tuple("" if v is None else str(v) for v in row[:5]),
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_driver_and_grouped_paths_agree(spark: SparkSession, case: str) -> None:
    df = spark.range(3000).select(
        F.col("id"),
        F.when(F.col("id") % 97 != 0, (F.col("id") * 7919 % 1000) / 999.0).alias("s"),
        (F.col("id") * 104729 % 3 == 0).cast("int").alias("y"),
        (1.0 + F.col("id") % 4 / 2.0).alias("w"),
        (F.col("id") % 3).cast("string").alias("g"),
        (F.col("id") % 2).cast("string").alias("mv"),
    )
    cfg = load_config(CASES[case])
    result = evaluate(df, cfg)
    assert result.invalid_counts == {"null_score": 31}
    specs = [s for s in resolve_metrics(cfg.task, cfg.metrics, cfg.features())]
    source = result.stats if case == "equal_mass" else bin_grain(result.stats, cfg)
    driver = finished_metrics(source, cfg, specs)
    grouped = finished_metrics(source, cfg, specs, driver_max_rows=0)
    plan = grouped._jdf.queryExecution().executedPlan().toString()
    assert "FlatMapGroupsInArrow" in plan, plan
    assert driver.schema == grouped.schema
    left, right = _rows(driver), _rows(grouped)
    assert len(left) == len(right) > 0
    for a, b in zip(left, right, strict=True):
        assert a[:5] == b[:5]
        for x, y in zip(a[5:], b[5:], strict=True):
            if isinstance(x, float) and isinstance(y, float):
                assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=1e-12), (a, b)
            else:
                assert x == y, (a, b)
    # The grouped path's values are the metrics table's.
    assert _rows(result.metrics.where(F.col("metric").isin(*cfg.metrics))) == left
    result.unpersist()


def test_the_session_setting_moves_the_driver_bound(spark: SparkSession) -> None:
    stats = spark.range(10).select(F.col("id"))
    assert driver_max_rows(spark) == DRIVER_MAX_ROWS
    assert statistics_head(stats) is not None
    try:
        spark.conf.set(DRIVER_MAX_ROWS_CONF, "9")
        assert driver_max_rows(spark) == 9
        assert statistics_head(stats) is None  # 10 rows: the grouped pass
        spark.conf.set(DRIVER_MAX_ROWS_CONF, "10")
        head = statistics_head(stats)
        assert head is not None and head.num_rows == 10
        for bad in ("-1", "lots"):
            spark.conf.set(DRIVER_MAX_ROWS_CONF, bad)
            with pytest.raises(
                ConfigError, match=r"spark\.calib\.driverMaxRows must be a whole number"
            ):
                driver_max_rows(spark)
    finally:
        spark.conf.unset(DRIVER_MAX_ROWS_CONF)


def test_the_grouped_pass_has_four_groups_per_shuffle_partition(spark: SparkSession) -> None:
    before = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        spark.conf.set("spark.sql.shuffle.partitions", "3")
        assert finish_groups(spark) == 12
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
