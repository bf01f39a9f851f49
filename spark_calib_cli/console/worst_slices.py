"""Pick what a person looks at first: per model version, the overall slice and the worst slices.

"Worst" means the highest top-label ECE among slices with at least ``min_rows`` rows; below
that a histogram ECE is mostly noise (its bias grows like sqrt(n_bins / n)), so a three-row
slice would always win. For regression (no ECE) it means the largest miscalibration area of
the predictive intervals, or the largest RMSE when the log has no std column.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_calib.constants import OVERALL_SLICE_NAME

KEY_COLUMNS = ("model_version", "slice_name", "slice_value")
OVERVIEW_METRICS = ("ece", "mce", "rmsce", "brier", "nll", "accuracy")
DEFAULT_TOP_SLICES = 3
DEFAULT_MIN_SLICE_ROWS = 500
RANK = "rank"
VALUE = "value"
MEAN_CONFIDENCE = "mean_confidence"
MEAN_OUTCOME = "mean_outcome"
RELIABILITY_SLOPE = "reliability_slope"
RELIABILITY_COLUMNS = (MEAN_CONFIDENCE, MEAN_OUTCOME, RELIABILITY_SLOPE)
# Regression: metric name → overview column (a dot in a column name would need quoting).
REGRESSION_OVERVIEW_METRICS = {
    "mse": "mse",
    "rmse": "rmse",
    "mae": "mae",
    "r2": "r2",
    "gaussian_nll": "gaussian_nll",
    "coverage_0.9": "coverage_0_9",
    "miscalibration_area": "miscalibration_area",
}
# Worst first: by miscalibration area; without a std column it is null, then RMSE decides.
REGRESSION_RANKING = ("miscalibration_area", "rmse")


def slice_overview(metrics: DataFrame, reliability: DataFrame) -> DataFrame:
    """One row per model version and slice: the key, ``n``, ``weight_sum``, one double column per
    top-label metric of ``OVERVIEW_METRICS`` (null when the run did not compute it), and from
    the reliability bins b (weights W_b, means c_b of the calibration probability and a_b of the
    outcome): ``mean_confidence`` c̄ = Σ W_b c_b / W, ``mean_outcome`` ā = Σ W_b a_b / W and
    ``reliability_slope`` Σ W_b (c_b − c̄)(a_b − ā) / Σ W_b (c_b − c̄)² (the slope of the
    observed rate on the prediction across bins: below 1 the predictions are too extreme).

    Over-confidence of a top-label view shows as ``mean_confidence`` above ``accuracy``.
    """
    bins = reliability.where(F.col("class").isNull() & (F.col("n") > F.lit(0)))
    weight, c, a = F.col("weight_sum"), F.col("mean_confidence"), F.col("accuracy")
    moments = bins.groupBy(*KEY_COLUMNS).agg(
        F.sum(weight).alias("_w"),
        F.sum(weight * c).alias("_c"),
        F.sum(weight * a).alias("_a"),
        F.sum(weight * c * c).alias("_cc"),
        F.sum(weight * c * a).alias("_ca"),
    )
    w = F.col("_w")
    covariance = F.col("_ca") - F.col("_c") * F.col("_a") / w
    variance = F.col("_cc") - F.col("_c") * F.col("_c") / w
    reliability_values = {
        MEAN_CONFIDENCE: F.col("_c") / w,
        MEAN_OUTCOME: F.col("_a") / w,
        RELIABILITY_SLOPE: F.when(variance > 0.0, covariance / variance),
    }
    confidence = moments.select(
        *KEY_COLUMNS,
        F.inline(
            F.array(
                *[
                    F.struct(F.lit(name).alias("metric"), value.alias(VALUE))
                    for name, value in reliability_values.items()
                ]
            )
        ),
    )
    # A union, not a join: model_version is null without a version column, and null keys
    # never match in an equi-join.
    long = (
        metrics.where(F.col("class").isNull())
        .select(*KEY_COLUMNS, "metric", VALUE, "n", "weight_sum")
        .unionByName(
            confidence.select(
                *KEY_COLUMNS,
                "metric",
                VALUE,
                F.lit(None).cast("long").alias("n"),
                F.lit(None).cast("double").alias("weight_sum"),
            )
        )
    )
    return long.groupBy(*KEY_COLUMNS).agg(
        F.max("n").alias("n"),
        F.max("weight_sum").alias("weight_sum"),
        *[
            F.max(F.when(F.col("metric") == F.lit(name), F.col(VALUE))).alias(name)
            for name in (*OVERVIEW_METRICS, *RELIABILITY_COLUMNS)
        ],
    )


def regression_overview(metrics: DataFrame) -> DataFrame:
    """One row per model version and slice of a regression run: the key, ``n``,
    ``weight_sum`` and one double column per metric of ``REGRESSION_OVERVIEW_METRICS`` (named
    by its value there; null when the run did not compute it)."""
    long = metrics.where(F.col("class").isNull())
    return long.groupBy(*KEY_COLUMNS).agg(
        F.max("n").alias("n"),
        F.max("weight_sum").alias("weight_sum"),
        *[
            F.max(F.when(F.col("metric") == F.lit(name), F.col(VALUE))).alias(column)
            for name, column in REGRESSION_OVERVIEW_METRICS.items()
        ],
    )


def worst_slices(
    overview: DataFrame,
    top: int = DEFAULT_TOP_SLICES,
    min_rows: int = DEFAULT_MIN_SLICE_ROWS,
    by: Sequence[str] = ("ece",),
) -> DataFrame:
    """``overview`` narrowed to each model version's overall slice (``rank`` 0) and its ``top``
    slices with ``n >= min_rows`` (``rank`` 1..top, worst first): the largest value of the
    first column of ``by``, ties and nulls broken by the next ones."""
    order: list[Column] = [F.col(column).desc_nulls_last() for column in by]
    worst_first = Window.partitionBy("model_version").orderBy(
        *order, F.col("slice_name"), F.col("slice_value")
    )
    is_overall = F.col("slice_name") == F.lit(OVERALL_SLICE_NAME)
    ranked = overview.where(~is_overall & (F.col("n") >= F.lit(min_rows))).withColumn(
        RANK, F.row_number().over(worst_first)
    )
    return (
        overview.where(is_overall)
        .withColumn(RANK, F.lit(0))
        .unionByName(ranked.where(F.col(RANK) <= F.lit(top)))
    )
