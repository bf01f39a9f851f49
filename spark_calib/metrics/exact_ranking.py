"""Exact, tie-aware, weighted ROC AUC and average precision: an extra pass over the input.

Per key, with W⁺_s and W⁻_s the positive and negative weight at distinct score s, P = Σ W⁺,
N = Σ W⁻, and TP(≥s), FP(≥s) the weight at or above s:

- roc_auc = Σ_s W⁻_s (TP(>s) + ½ W⁺_s) / (P N): the Mann–Whitney statistic with ties counted
  ½, equal to the trapezoidal area under scikit-learn's ``roc_curve``; null when P = 0 or N = 0
  (one class present: the ranking of positives above negatives is undefined).
- pr_auc = Σ_s (W⁺_s / P) · TP(≥s) / (TP(≥s) + FP(≥s)): scikit-learn's
  ``average_precision_score``; null when P = 0.
- roc_auc_ovr (multiclass): for each class k the roc_auc of (p_k, [y = k]) (rows with
  ``class`` set), and their mean over the classes where it is defined (``class`` null):
  scikit-learn's ``roc_auc_score(multi_class="ovr", average="macro")``.

Cost: a second read of the input and a shuffle of one row per key (and class) and distinct
score, close to one per input row (K per row for roc_auc_ovr) for continuous scores, then a
sort per key. Only when requested.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.metrics.output import FAMILY_COLUMNS, METRIC, VALUE, WEIGHT_SUM
from spark_calib.registry import MetricSpec
from spark_calib.rows import canonical as row
from spark_calib.stats import schema as stats
from spark_calib.stats.aggregate import (
    SLICE_SET,
    class_label,
    copy_per_slice_set,
    slice_set_labels,
)

CLASS_INDEX = "_class"


def exact_ranking_metrics(rows: DataFrame, config: Config, specs: list[MetricSpec]) -> DataFrame:
    """roc_auc, pr_auc and roc_auc_ovr rows per key, from the canonical rows."""
    valid = rows.where(F.col(row.REASON).isNull())
    copied = copy_per_slice_set(valid, config)
    labels = slice_set_labels(config)
    slices = [row.slice_key(i) for i in range(len(config.slice_columns()))]
    key = [SLICE_SET, row.MODEL_VERSION, *slices]
    if config.task == "multiclass":
        per_class = F.transform(
            F.col(row.PROBS),
            lambda p, k: F.struct(
                k.alias(CLASS_INDEX),
                p.alias(row.SCORE),
                (k == F.col(row.LABEL)).alias("_positive"),
            ),
        )
        items = copied.select(*key, row.WEIGHT, F.inline(per_class))
        per_class_key = _areas(items, [*key, CLASS_INDEX])
        value = F.when(
            (F.col("_p") > 0.0) & (F.col("_n_neg") > 0.0),
            F.col("_roc") / (F.col("_p") * F.col("_n_neg")),
        )
        entries = per_class_key.groupBy(*key).agg(
            F.collect_list(
                F.struct(
                    class_label(config, F.col(CLASS_INDEX)).alias(stats.CLASS),
                    value.alias(VALUE),
                )
            ).alias("_classes"),
            F.max("_rows").alias("_rows"),
            F.max(F.col("_p") + F.col("_n_neg")).alias("_w"),
        )
        defined = F.filter(F.col("_classes"), lambda c: c[VALUE].isNotNull())
        macro = F.try_divide(
            F.aggregate(defined, F.lit(0.0), lambda acc, c: acc + c[VALUE]),
            F.size(defined).cast("double"),
        )
        rows_out = F.concat(
            F.transform(F.col("_classes"), lambda c: _entry(c[stats.CLASS], c[VALUE])),
            F.array(_entry(F.lit(None), macro)),
        )
        return _finish(entries, labels.name, labels.value, rows_out)
    items = copied.select(
        *key, row.WEIGHT, row.SCORE, (F.col(row.POSITIVE) == 1.0).alias("_positive")
    )
    per_key = _areas(items, key).withColumn("_w", F.col("_p") + F.col("_n_neg"))
    p, n = F.col("_p"), F.col("_n_neg")
    values = {
        "roc_auc": F.when((p > 0.0) & (n > 0.0), F.col("_roc") / (p * n)),
        "pr_auc": F.when(p > 0.0, F.col("_ap") / p),
    }
    named = [spec for spec in specs if spec.name in values]
    rows_out = F.array(*[_entry(F.lit(None), values[spec.name], spec.name) for spec in named])
    return _finish(per_key, labels.name, labels.value, rows_out)


def _areas(items: DataFrame, key: list[str]) -> DataFrame:
    """Per ``key``: rows, P, N and the unnormalised ROC (``_roc``) and AP (``_ap``) sums from
    one row per distinct score, cumulated from the highest score down."""
    positive = F.col("_positive")
    weight = F.col(row.WEIGHT)
    per_score = items.groupBy(*key, row.SCORE).agg(
        F.count(F.lit(1)).alias("_rows"),
        F.sum(F.when(positive, weight).otherwise(0.0)).alias("_pos"),
        F.sum(F.when(positive, 0.0).otherwise(weight)).alias("_neg"),
    )
    running = (
        Window.partitionBy(*key)
        .orderBy(F.col(row.SCORE).desc())
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    tp, fp = F.sum("_pos").over(running), F.sum("_neg").over(running)
    cumulative = per_score.select(*key, "_rows", "_pos", "_neg", tp.alias("_tp"), fp.alias("_fp"))
    positives = F.col("_pos")
    precision = F.col("_tp") / (F.col("_tp") + F.col("_fp"))
    return cumulative.groupBy(*key).agg(
        F.sum("_rows").alias("_rows"),
        F.sum("_pos").alias("_p"),
        F.sum("_neg").alias("_n_neg"),
        F.sum(F.col("_neg") * (F.col("_tp") - positives + 0.5 * positives)).alias("_roc"),
        F.sum(F.when(positives > 0.0, positives * precision).otherwise(0.0)).alias("_ap"),
    )


def _entry(class_value: Column, value: Column, name: str = "roc_auc_ovr") -> Column:
    return F.struct(
        class_value.cast("string").alias(stats.CLASS),
        F.lit(name).alias(METRIC),
        value.cast("double").alias(VALUE),
        F.col("_rows").cast("long").alias(stats.N),
        F.col("_w").cast("double").alias(WEIGHT_SUM),
    )


def _finish(frame: DataFrame, name: Column, value: Column, entries: Column) -> DataFrame:
    return frame.select(
        F.col(row.MODEL_VERSION).alias(stats.MODEL_VERSION),
        name.alias(stats.SLICE_NAME),
        value.alias(stats.SLICE_VALUE),
        F.inline(entries),
    ).select(*FAMILY_COLUMNS)
