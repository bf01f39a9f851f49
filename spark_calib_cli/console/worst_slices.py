"""Pick what a person looks at first: per model version, the overall slice and the worst slices.

"Worst" means the largest ``ece_excess`` among slices with at least ``min_rows`` rows
(``min_slice_rows`` in the config): the lower end of the ECE's interval minus ``ece_null``, the
ECE a perfectly calibrated model would show with the same bins, weights and rows (the ECE
itself when it has no interval). A histogram ECE is biased upward on few rows (by about
√(2/π)·Σ_b π_b·√(p̄_b(1 − p̄_b)/n_eff,b)), so ranking by ECE alone lists the smallest slices
first; the excess is positive only where the slice is miscalibrated beyond its noise. Ties
are broken by the ECE. For regression (no ECE) it means the largest miscalibration area of
the predictive intervals, or the largest RMSE when the log has no std column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_calib.constants import OVERALL_SLICE_NAME

KEY_COLUMNS = ("model_version", "slice_name", "slice_value")
OVERVIEW_METRICS = ("ece", "mce", "rmsce", "brier", "nll", "accuracy")
DEFAULT_TOP_SLICES = 3
DEFAULT_MIN_SLICE_ROWS = 100
RANK = "rank"
VALUE = "value"
MEAN_CONFIDENCE = "mean_confidence"
MEAN_OUTCOME = "mean_outcome"
RELIABILITY_SLOPE = "reliability_slope"
ECE_NULL = "ece_null"
RELIABILITY_COLUMNS = (MEAN_CONFIDENCE, MEAN_OUTCOME, RELIABILITY_SLOPE, ECE_NULL)
ECE_CI_LOWER = "ece_ci_lower"
ECE_EXCESS = "ece_excess"
# Classification: worst first by the excess over noise, then by ECE.
NOISE_AWARE_RANKING = (ECE_EXCESS, "ece")
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
    observed rate on the prediction across bins: below 1 the predictions are too extreme),
    ``ece_null`` = Σ_b W_b·√(2/π)·√(c_b(1 − c_b)/n_eff,b) / W, ``ece_ci_lower`` (the lower end
    of the ECE's interval) and ``ece_excess`` = coalesce(ece_ci_lower, ece) − coalesce(ece_null,
    0) (the ECE itself for tables without the uncertainty columns).

    Over-confidence of a top-label view shows as ``mean_confidence`` above ``accuracy``.
    """
    bins = reliability.where(F.col("class").isNull() & (F.col("n") > F.lit(0)))
    # Tables written before the uncertainty columns have neither n_eff nor ci_lower: there the
    # ranking falls back to the ECE itself.
    n_eff = F.col("n_eff") if "n_eff" in reliability.columns else F.lit(None).cast("double")
    weight, c, a = F.col("weight_sum"), F.col("mean_confidence"), F.col("accuracy")
    moments = bins.groupBy(*KEY_COLUMNS).agg(
        F.sum(weight).alias("_w"),
        F.sum(weight * c).alias("_c"),
        F.sum(weight * a).alias("_a"),
        F.sum(weight * c * c).alias("_cc"),
        F.sum(weight * c * a).alias("_ca"),
        F.sum(weight * F.lit(math.sqrt(2.0 / math.pi)) * F.sqrt(c * (1.0 - c) / n_eff)).alias(
            "_null"
        ),
    )
    w = F.col("_w")
    covariance = F.col("_ca") - F.col("_c") * F.col("_a") / w
    variance = F.col("_cc") - F.col("_c") * F.col("_c") / w
    reliability_values = {
        MEAN_CONFIDENCE: F.col("_c") / w,
        MEAN_OUTCOME: F.col("_a") / w,
        RELIABILITY_SLOPE: F.when(variance > 0.0, covariance / variance),
        ECE_NULL: F.col("_null") / w,
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
    top_label = metrics.where(F.col("class").isNull())
    no_size = [F.lit(None).cast("long").alias("n"), F.lit(None).cast("double").alias("weight_sum")]
    lower = top_label.where(F.col("metric") == F.lit("ece")).select(
        *KEY_COLUMNS,
        F.lit(ECE_CI_LOWER).alias("metric"),
        (F.col("ci_lower") if "ci_lower" in metrics.columns else F.lit(None).cast("double")).alias(
            VALUE
        ),
        *no_size,
    )
    long = (
        top_label.where(F.col("metric") != F.lit(ECE_NULL))
        .select(*KEY_COLUMNS, "metric", VALUE, "n", "weight_sum")
        .unionByName(lower)
        .unionByName(confidence.select(*KEY_COLUMNS, "metric", VALUE, *no_size))
    )
    pivoted = long.groupBy(*KEY_COLUMNS).agg(
        F.max("n").alias("n"),
        F.max("weight_sum").alias("weight_sum"),
        *[
            F.max(F.when(F.col("metric") == F.lit(name), F.col(VALUE))).alias(name)
            for name in (*OVERVIEW_METRICS, *RELIABILITY_COLUMNS, ECE_CI_LOWER)
        ],
    )
    excess = F.coalesce(F.col(ECE_CI_LOWER), F.col("ece")) - F.coalesce(F.col(ECE_NULL), F.lit(0.0))
    return pivoted.withColumn(ECE_EXCESS, excess)


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
    by: Sequence[str] = NOISE_AWARE_RANKING,
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
