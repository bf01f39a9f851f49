"""The sampling noise of a window's metrics, from its per-bin statistics.

For a key (model_version, slice, class) with bins b, n_b rows, weight W_b, W = Σ W_b, and bin
accuracy a_b = Σw·correct / W_b (the observed frequency of class k for a class-k row):

- ``accuracy`` and ``error_rate``: SE² = p(1 − p) / n, with p = Σw·correct / W and n = Σ n_b
  (the binomial variance of a proportion: the two-proportion test on these is the Wald test);
- ``ece`` (top-label) and ``classwise_ece`` (per class; not the macro row):
  SE² = Σ_b (W_b / W)² · a_b (1 − a_b) / n_b,
  the variance of Σ_b (W_b/W)·|a_b − conf_b| when each bin's accuracy is a binomial proportion
  and the bins' mean confidences are held fixed (the delta method with d|g|/dg = ±1). Near a
  zero gap |g| varies less than g, so the estimate is conservative there.

n counts rows, not weights, so with unequal weights SE is that of unweighted rows. The other
metrics have no noise model here: their ``std_error`` is null.

Output columns: model_version, slice_name, slice_value, class, metric, std_error.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.metrics.output import METRIC
from spark_calib.stats import schema as stats

STD_ERROR = "std_error"
PROPORTION_METRICS = ("accuracy", "error_rate")
TOP_LABEL_ECE = "ece"
CLASSWISE_ECE = "classwise_ece"
NOISE_METRICS = (*PROPORTION_METRICS, TOP_LABEL_ECE, CLASSWISE_ECE)
NOISE_COLUMNS = (*stats.KEY_COLUMNS, METRIC, STD_ERROR)


def standard_errors(stats_df: DataFrame) -> DataFrame:
    """One row per key and metric of ``NOISE_METRICS`` that the key has: the top-label keys
    (class null) get accuracy, error_rate and ece, the class keys classwise_ece."""
    per_bin = (
        stats_df.where(F.col(stats.REASON).isNull())
        .groupBy(*stats.KEY_COLUMNS, stats.BIN)
        .agg(
            F.sum(stats.N).alias("_n_b"),
            F.sum(stats.SUM_WEIGHT).alias("_w_b"),
            F.sum(stats.SUM_WEIGHT_OUTCOME).alias("_c_b"),
            F.sum(stats.SUM_WEIGHT_CORRECT).alias("_correct_b"),
        )
    )
    accuracy_b = F.least(F.greatest(F.try_divide("_c_b", "_w_b"), F.lit(0.0)), F.lit(1.0))
    binomial_b = F.try_divide(accuracy_b * (1.0 - accuracy_b), F.col("_n_b"))
    per_key = per_bin.groupBy(*stats.KEY_COLUMNS).agg(
        F.sum("_n_b").alias("_n"),
        F.sum("_w_b").alias("_w"),
        F.sum("_correct_b").alias("_c"),
        # Σ W_b² a_b(1 − a_b)/n_b; divided by W² below.
        F.sum(F.when(F.col("_n_b") > 0, F.col("_w_b") * F.col("_w_b") * binomial_b)).alias(
            "_ece_var_w2"
        ),
    )
    accuracy = F.try_divide(F.col("_c"), F.col("_w"))
    proportion_se = F.sqrt(F.try_divide(accuracy * (1.0 - accuracy), F.col("_n")))
    ece_se = F.sqrt(F.try_divide(F.col("_ece_var_w2"), F.col("_w") * F.col("_w")))
    top_label = F.array(
        *[
            F.struct(F.lit(name).alias(METRIC), proportion_se.alias(STD_ERROR))
            for name in PROPORTION_METRICS
        ],
        F.struct(F.lit(TOP_LABEL_ECE).alias(METRIC), ece_se.alias(STD_ERROR)),
    )
    per_class = F.array(F.struct(F.lit(CLASSWISE_ECE).alias(METRIC), ece_se.alias(STD_ERROR)))
    entries = F.when(F.col(stats.CLASS).isNull(), top_label).otherwise(per_class)
    return per_key.select(*stats.KEY_COLUMNS, F.inline(entries)).select(*NOISE_COLUMNS)
