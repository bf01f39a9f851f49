"""Recalibration in the engine: the fit/eval split as a statistics key (by value and by date
range), no second read of the input, the schema check of the fit column and recalibrate's
errors."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import ConfigError, SchemaError, evaluate, recalibrate

BASE: dict[str, Any] = {
    "task": "binary",
    "columns": {"score": "s", "label": "y", "model_version": "mv"},
    "slices": [["g"]],
    "metrics": ["ece"],
}


def log(spark: SparkSession, n: int = 2_000) -> DataFrame:
    """Scores (id·0.618) mod 1, labels y = [frac(id·0.377) < s]; g = id mod 2; day = the
    first of June plus id mod 10; split = 'val' for every third row."""
    return spark.range(n).select(
        F.greatest(F.lit(0.001), (F.col("id") * 0.618) % 1.0).alias("s"),
        ((F.col("id") * 0.377) % 1.0 < (F.col("id") * 0.618) % 1.0).cast("int").alias("y"),
        (F.col("id") % 2).cast("string").alias("g"),
        F.date_add(F.lit(dt.date(2024, 6, 1)), (F.col("id") % 10).cast("int")).alias("day"),
        F.when(F.col("id") % 3 == 0, "val").otherwise("test").alias("split"),
        F.lit("v1").alias("mv"),
    )


def overall(table: DataFrame, method: str = "temperature") -> Any:
    return table.where(f"slice_name = 'overall' and method = '{method}'").collect()[0]


def test_the_fit_split_is_a_statistics_key_and_outputs_do_not_read_the_input(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "log"
    log(spark).write.parquet(str(path))
    config = {
        **BASE,
        "recalibration": {
            "methods": ["temperature", "isotonic"],
            "fit": {"column": "split", "value": "val"},
            "min_fit_rows": 10,
        },
    }
    result = evaluate(spark.read.parquet(str(path)), config)
    shutil.rmtree(path)
    assert result.recalibration is not None
    row = overall(result.recalibration)
    # ids 0, 3, …, 1998: 667 fit rows.
    assert (row.n_fit, row.n_eval) == (667, 1333)
    assert not row.fallback
    split = {
        r.recalibration_fit: r.n
        for r in result.stats.where("cell is not null")
        .groupBy("recalibration_fit")
        .agg(F.sum("n").alias("n"))
        .collect()
    }
    assert split == {True: 667, False: 1333}
    # Only the configured slice set [g] and the summed overall: g = 0 and g = 1.
    values = {(r.slice_name, r.slice_value) for r in result.recalibration.collect()}
    assert values == {("overall", ""), ("g", "0"), ("g", "1")}
    result.unpersist()


def test_a_date_range_of_the_window_column_picks_the_fit_rows(spark: SparkSession) -> None:
    config = {
        **BASE,
        "input": {"path": "/unused", "window": {"column": "day", "lookback_days": 10}},
        "recalibration": {"fit": {"start": "2024-06-01", "end": "2024-06-03"}, "min_fit_rows": 1},
    }
    result = evaluate(log(spark), config)
    assert result.recalibration is not None
    row = overall(result.recalibration)
    # Days 1–3 of June are ids with id mod 10 in {0, 1, 2}: 600 of 2,000 rows.
    assert (row.n_fit, row.n_eval) == (600, 1400)
    result.unpersist()


def test_without_fit_every_row_is_fitted_and_evaluated(spark: SparkSession) -> None:
    result = evaluate(log(spark), {**BASE, "recalibration": {"min_fit_rows": 1}})
    assert result.recalibration is not None
    row = overall(result.recalibration)
    assert row.n_fit == row.n_eval == 2_000
    assert result.stats.where("recalibration_fit is not null").count() == 0
    result.unpersist()


@pytest.mark.parametrize("slices", [[["g"], []], [["g"], ["g", "h"]]])
def test_overall_counts_each_row_once_wherever_it_is_listed(
    spark: SparkSession, slices: list[list[str]]
) -> None:
    """The overall key is the configured overall set when there is one (listed after g here),
    else the sum of the first set's values: 2,000 rows, 667 of them fit rows (ids 0, 3, …)."""
    config = {
        **BASE,
        "slices": slices,
        "recalibration": {
            "methods": ["temperature"],
            "fit": {"column": "split", "value": "val"},
            "min_fit_rows": 10,
        },
    }
    frame = log(spark).withColumn("h", (F.dayofmonth("day") % 3).cast("string"))
    result = evaluate(frame, config)
    assert result.recalibration is not None
    row = overall(result.recalibration)
    assert (row.n_fit, row.n_eval) == (667, 2_000 - 667)


def test_a_missing_fit_column_is_a_schema_error(spark: SparkSession) -> None:
    config = {**BASE, "recalibration": {"fit": {"column": "splt", "value": "val"}}}
    with pytest.raises(SchemaError, match=r"column 'splt' \(recalibration\.fit\) is not in"):
        evaluate(log(spark, 10), config)


def test_recalibrate_needs_the_section_and_a_listed_method(spark: SparkSession) -> None:
    df = log(spark, 10)
    with pytest.raises(ConfigError, match="recalibrate needs a config with a recalibration"):
        recalibrate(df, df, BASE)
    config = {**BASE, "recalibration": {"methods": ["platt"]}}
    with pytest.raises(ConfigError, match=r"method 'isotonic' is not one of .*\['platt'\]"):
        recalibrate(df, df, config, method="isotonic")
