"""Exact, tie-aware, weighted ROC AUC and average precision: an extra pass over the input.

Per key, with W⁺_s and W⁻_s the positive and negative weight at distinct score s, P = Σ W⁺,
N = Σ W⁻, and TP(≥s), FP(≥s) the weight at or above s:

- roc_auc = Σ_s W⁻_s (TP(>s) + ½ W⁺_s) / (P N): the Mann–Whitney statistic with ties counted
  ½, equal to the trapezoidal area under scikit-learn's ``roc_curve``; null when P = 0 or N = 0
  (one class present: the ranking of positives above negatives is undefined).
- pr_auc = Σ_s (W⁺_s / P) · TP(≥s) / (TP(≥s) + FP(≥s)): scikit-learn's
  ``average_precision_score``; null when P = 0.

Cost: a second read of the input and a shuffle of one row per key and distinct score (close
to one per input row for continuous scores), then a sort per key. Only when requested.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.metrics.output import METRIC, METRICS_COLUMNS, VALUE, WEIGHT_SUM
from spark_calib.metrics.registry import MetricSpec
from spark_calib.rows import canonical as row
from spark_calib.stats import schema as stats
from spark_calib.stats.aggregate import SLICE_SET, copy_per_slice_set


def exact_ranking_metrics(rows: DataFrame, config: Config, specs: list[MetricSpec]) -> DataFrame:
    """roc_auc and pr_auc rows per key, from canonical rows with ``_score``/``_true_class``."""
    valid = rows.where(F.col(row.REASON).isNull())
    copied = copy_per_slice_set(valid, config)
    slices = [row.slice_key(i) for i in range(len(config.slice_columns()))]
    group = [SLICE_SET, row.MODEL_VERSION, *slices]
    positive = F.col(row.TRUE_CLASS) == 1
    weight = F.col(row.WEIGHT)
    per_score = copied.frame.groupBy(*group, row.SCORE).agg(
        F.count(F.lit(1)).alias("_rows"),
        F.sum(F.when(positive, weight).otherwise(0.0)).alias("_pos"),
        F.sum(F.when(positive, 0.0).otherwise(weight)).alias("_neg"),
    )
    running = (
        Window.partitionBy(*group)
        .orderBy(F.col(row.SCORE).desc())
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    tp = F.sum("_pos").over(running)
    fp = F.sum("_neg").over(running)
    cumulative = per_score.select(*group, "_rows", "_pos", "_neg", tp.alias("_tp"), fp.alias("_fp"))
    positives = F.col("_pos")
    per_key = cumulative.groupBy(*group).agg(
        F.sum("_rows").alias("_rows"),
        F.sum("_pos").alias("_p"),
        F.sum("_neg").alias("_n_neg"),
        F.sum(F.col("_neg") * (F.col("_tp") - positives + 0.5 * positives)).alias("_roc"),
        F.sum(
            F.when(
                positives > 0.0, positives * F.col("_tp") / (F.col("_tp") + F.col("_fp"))
            ).otherwise(0.0)
        ).alias("_ap"),
    )
    p, n = F.col("_p"), F.col("_n_neg")
    values = {
        "roc_auc": F.when((p > 0.0) & (n > 0.0), F.col("_roc") / (p * n)),
        "pr_auc": F.when(p > 0.0, F.col("_ap") / p),
    }
    entries = F.array(
        *[
            F.struct(
                F.lit(None).cast("string").alias(stats.CLASS),
                F.lit(spec.name).alias(METRIC),
                values[spec.name].cast("double").alias(VALUE),
                F.col("_rows").cast("long").alias(stats.N),
                (p + n).cast("double").alias(WEIGHT_SUM),
            )
            for spec in specs
        ]
    )
    return per_key.select(
        F.col(row.MODEL_VERSION).alias(stats.MODEL_VERSION),
        copied.name.alias(stats.SLICE_NAME),
        copied.value.alias(stats.SLICE_VALUE),
        F.inline(entries),
    ).select(*METRICS_COLUMNS)
