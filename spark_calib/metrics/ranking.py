"""Statistics → binary ranking metrics from the score histogram: binned ROC/PR AUC, the
``roc`` curve table, and the ``thresholds`` table.

Histogram: the fine cells b of the score s (``spark_calib.rows.cells``: the union of the
k/1000 and the log-odds 1/16 grids, at most 2,185 non-empty per key); W⁺_b = Σw·y and
W⁻_b = Σw − W⁺_b are the positive and negative weight in cell b (``sum_weight_positive``;
each exactly 0 when ``n_positive`` says the cell has no positive, or only positives),
P = Σ W⁺, N = Σ W⁻, and TP_{≥b} = Σ_{b' ≥ b} W⁺_{b'}, FP_{≥b} likewise, TP_{>b} = TP_{≥b} − W⁺_b.

- roc_auc_binned = Σ_b W⁻_b (TP_{>b} + ½ W⁺_b) / (P N): the exact AUC of the scores replaced by
  their bucket (pairs in one bucket count as ties). |error| ≤ ½ Σ_b W⁺_b W⁻_b / (P N).
- pr_auc_binned = Σ_b (W⁺_b / P) · π_b: average precision, π_b the mean precision of cell b's
  positives. A cell whose scores are all equal is one tie, and scikit-learn's average precision
  counts a tie's positives at the precision below it: π_b = TP_{≥b} / (TP_{≥b} + FP_{≥b}). A
  cell of distinct scores is walked with its labels spread evenly (Davis and Goadrich's
  interpolation): with A = TP_{>b}, B = TP_{>b} + FP_{>b}, m = W⁺_b and k = W⁺_b + W⁻_b,
  π_b = ∫₀¹ (A + m·x)/(B + k·x) dx = (A/B)·L + (m/k)·(1 − L), L = ln(1 + k/B)/(k/B) (L = 0 when
  B = 0). A cell is a tie when its variance Σw·c²/W − (Σw·c/W)² ≤ ``TIE_VARIANCE``·(Σw·c/W)²,
  c the calibration probability (s, or 1 − s below ½: the same spread within a cell); the
  rounding of a true tie's sums stays orders of magnitude below that. Statistics without those
  sums count every cell as a tie. |error| ≤ Σ_b (W⁺_b / P)(hi_b − lo_b), hi_b = TP_{≥b}/
  (TP_{≥b} + FP_{>b}), lo_b = TP_{>b}/(TP_{>b} + FP_{≥b}) (1 when FP_{≥b} = 0: no negative at
  or above the cell): every positive's precision lies in [lo_b, hi_b] whatever the order in
  the cell, and so does either π_b.
- Both are null when P = 0; roc_auc_binned also when N = 0. Each row's ``error_bound`` is its
  bound above.

``roc`` columns: model_version, slice_name, slice_value, point (0 = the origin), threshold
(the cell's lower edge; null at the origin), fpr = FP_{≥b}/N, tpr = TP_{≥b}/P,
precision = TP_{≥b}/(TP_{≥b} + FP_{≥b}); one point per non-empty cell, by descending
threshold. With m > roc_points − 1 cells, only points m, m − k, m − 2k, … are kept
(k = ceil((m − 1) / (roc_points − 2)), or k = m when roc_points = 2), so a key has at most
``roc_points`` rows with the origin, and always the last point (threshold at the lowest score).

``thresholds`` columns: model_version, slice_name, slice_value, threshold, n, weight_sum, tp,
fp, tn, fn (weighted; positive when s ≥ threshold), tpr = tp/(tp + fn), fpr = fp/(fp + tn)
(null when 0/0), precision = tp/(tp + fp) (0 when 0/0), recall = tpr.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.metrics.output import ERROR_BOUND, METRIC, METRICS_COLUMNS, VALUE, WEIGHT_SUM
from spark_calib.registry import MetricSpec
from spark_calib.rows.cells import cell_lower
from spark_calib.stats import schema as stats

ROC_COLUMNS = (*stats.SLICE_KEY_COLUMNS, "point", "threshold", "fpr", "tpr", "precision")
THRESHOLD_COLUMNS = (
    *stats.SLICE_KEY_COLUMNS,
    "threshold",
    stats.N,
    WEIGHT_SUM,
    "tp",
    "fp",
    "tn",
    "fn",
    "tpr",
    "fpr",
    "precision",
    "recall",
)


def label_weights(stats_df: DataFrame, key: str) -> DataFrame:
    """Valid top-label statistics with ``key`` set, with the positive weight W⁺ = Σw·y
    (``_pos``) and the negative weight W⁻ = Σw − W⁺ (``_neg``). Each is exactly 0 when the
    row's counts say it has no such label (n_positive = 0, or n_positive = n), so a cell of
    one label has no rounding residue on the other side."""
    weight = F.col(stats.SUM_WEIGHT)
    positive_weight = F.col(stats.SUM_WEIGHT_POSITIVE)
    n, positives = F.col(stats.N), F.col(stats.N_POSITIVE)
    return stats_df.where(
        F.col(stats.REASON).isNull() & F.col(stats.CLASS).isNull() & F.col(key).isNotNull()
    ).select(
        *stats.SLICE_KEY_COLUMNS,
        F.col(key),
        n,
        F.when(positives == 0, F.lit(0.0)).otherwise(positive_weight).alias("_pos"),
        F.when(positives == n, F.lit(0.0)).otherwise(weight - positive_weight).alias("_neg"),
        weight.alias("_w"),
        F.col(stats.SUM_WEIGHT_CONFIDENCE).alias("_c"),
        F.col(stats.SUM_WEIGHT_CONFIDENCE_SQ).alias("_q"),
    )


# Relative score variance at or below which a cell counts as one tie (``pr_auc_binned``).
TIE_VARIANCE = 1e-9


def _cumulative(stats_df: DataFrame) -> DataFrame:
    """One row per key and non-empty bucket with W⁺_b, W⁻_b, TP_{≥b}, FP_{≥b}, P, N, m and
    whether the bucket's scores are one tie (``_tie``)."""
    buckets = (
        label_weights(stats_df, stats.CELL)
        .groupBy(*stats.SLICE_KEY_COLUMNS, stats.CELL)
        .agg(
            F.sum(stats.N).alias(stats.N),
            F.sum("_pos").alias("_pos"),
            F.sum("_neg").alias("_neg"),
            _is_tie(F.sum("_w"), F.sum("_c"), F.sum("_q")).alias("_tie"),
        )
    )
    key = Window.partitionBy(*stats.SLICE_KEY_COLUMNS)
    down = key.orderBy(F.col(stats.CELL).desc())
    running = down.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    return buckets.select(
        "*",
        F.sum("_pos").over(running).alias("_tp"),
        F.sum("_neg").over(running).alias("_fp"),
        F.sum("_pos").over(key).alias("_p"),
        F.sum("_neg").over(key).alias("_n_neg"),
        F.sum(stats.N).over(key).alias("_rows"),
        F.row_number().over(down).alias("_point"),
        F.count(F.lit(1)).over(key).alias("_m"),
    )


def _is_tie(weight: Column, first: Column, second: Column) -> Column:
    """Σw·c²/W − (Σw·c/W)² ≤ ``TIE_VARIANCE``·(Σw·c/W)², true when a sum is missing."""
    mean = F.try_divide(first, weight)
    spread = F.try_divide(second, weight) - mean * mean
    return F.coalesce(spread <= F.lit(TIE_VARIANCE) * mean * mean, F.lit(True))


def _cell_precision(tie: Column, positives: Column, negatives: Column) -> Column:
    """π_b (see the module docstring) from ``_tp``, ``_fp`` and the cell's W⁺_b, W⁻_b."""
    tp, fp = F.col("_tp"), F.col("_fp")
    at_bottom = F.try_divide(tp, tp + fp)
    above = (tp - positives) + (fp - negatives)  # B
    size = positives + negatives  # k
    ratio = F.try_divide(size, above)
    mixing = F.when(above > 0.0, F.try_divide(F.log1p(ratio), ratio)).otherwise(F.lit(0.0))  # L
    before = F.when(above > 0.0, F.try_divide(tp - positives, above)).otherwise(F.lit(0.0))
    walked = before * mixing + F.try_divide(positives, size) * (1.0 - mixing)
    return F.when(tie, at_bottom).otherwise(walked)


def binned_ranking_metrics(
    stats_df: DataFrame, config: Config, specs: list[MetricSpec]
) -> DataFrame:
    """roc_auc_binned and pr_auc_binned rows per key."""
    cumulative = _cumulative(stats_df)
    positives, negatives = F.col("_pos"), F.col("_neg")
    tp_above = F.col("_tp") - positives
    precision = _cell_precision(F.col("_tie"), positives, negatives)
    # Precision with the cell's negatives ranked below (hi) or above (lo) its positives. With
    # no negative at or above the cell, every positive in it has precision 1 (lo = hi = 1).
    precision_hi = F.try_divide(F.col("_tp"), F.col("_tp") + F.col("_fp") - negatives)
    precision_lo = F.when(F.col("_fp") == 0.0, F.lit(1.0)).otherwise(
        F.try_divide(tp_above, tp_above + F.col("_fp"))
    )
    per_key = cumulative.groupBy(*stats.SLICE_KEY_COLUMNS).agg(
        F.sum(negatives * (tp_above + 0.5 * positives)).alias("_roc"),
        F.sum(positives * negatives).alias("_ties"),
        F.sum(F.when(positives > 0.0, positives * precision).otherwise(0.0)).alias("_ap"),
        F.sum(
            F.when(
                positives > 0.0,
                positives
                * (F.coalesce(precision_hi, F.lit(0.0)) - F.coalesce(precision_lo, F.lit(0.0))),
            ).otherwise(0.0)
        ).alias("_ap_gap"),
        F.first("_p").alias("_p"),
        F.first("_n_neg").alias("_n_neg"),
        F.first("_rows").alias("_rows"),
    )
    p, n = F.col("_p"), F.col("_n_neg")
    values = {
        "roc_auc_binned": F.when((p > 0.0) & (n > 0.0), F.col("_roc") / (p * n)),
        "pr_auc_binned": F.when(p > 0.0, F.col("_ap") / p),
    }
    bounds = {
        "roc_auc_binned": F.when((p > 0.0) & (n > 0.0), 0.5 * F.col("_ties") / (p * n)),
        "pr_auc_binned": F.when(p > 0.0, F.col("_ap_gap") / p),
    }
    entries = F.array(
        *[
            F.struct(
                F.lit(None).cast("string").alias(stats.CLASS),
                F.lit(spec.name).alias(METRIC),
                values[spec.name].cast("double").alias(VALUE),
                F.col("_rows").cast("long").alias(stats.N),
                (p + n).cast("double").alias(WEIGHT_SUM),
                bounds[spec.name].cast("double").alias(ERROR_BOUND),
            )
            for spec in specs
        ]
    )
    return per_key.select(*stats.SLICE_KEY_COLUMNS, F.inline(entries)).select(*METRICS_COLUMNS)


def roc_from_stats(stats_df: DataFrame, config: Config) -> DataFrame:
    """The ``roc`` table: ROC (and precision) points per key, thinned to ``roc_points``."""
    cumulative = _cumulative(stats_df)
    m = F.col("_m")
    budget = config.roc_points - 1
    spread = F.ceil((m - 1) / F.lit(float(budget - 1))) if budget > 1 else m
    step = F.when(m <= budget, F.lit(1)).otherwise(spread)
    kept = cumulative.where((m - F.col("_point")) % step == 0).select(
        *stats.SLICE_KEY_COLUMNS,
        F.col("_point"),
        cell_lower(F.col(stats.CELL)).alias("threshold"),
        F.try_divide(F.col("_fp"), F.col("_n_neg")).alias("fpr"),
        F.try_divide(F.col("_tp"), F.col("_p")).alias("tpr"),
        F.try_divide(F.col("_tp"), F.col("_tp") + F.col("_fp")).alias("precision"),
    )
    order = Window.partitionBy(*stats.SLICE_KEY_COLUMNS).orderBy("_point")
    point = F.struct(
        F.row_number().over(order).cast("int").alias("point"),
        F.col("threshold"),
        F.col("fpr"),
        F.col("tpr"),
        F.col("precision"),
    )
    origin = F.struct(
        F.lit(0).alias("point"),
        F.lit(None).cast("double").alias("threshold"),
        F.when(F.col("fpr").isNotNull(), F.lit(0.0)).alias("fpr"),
        F.when(F.col("tpr").isNotNull(), F.lit(0.0)).alias("tpr"),
        F.lit(None).cast("double").alias("precision"),
    )
    numbered = kept.select(*stats.SLICE_KEY_COLUMNS, point.alias("_p"), "fpr", "tpr")
    first = F.col("_p.point") == 1
    items = F.when(first, F.array(origin, F.col("_p"))).otherwise(F.array(F.col("_p")))
    return numbered.select(*stats.SLICE_KEY_COLUMNS, F.inline(items)).select(*ROC_COLUMNS)


def thresholds_from_stats(stats_df: DataFrame, config: Config) -> DataFrame:
    """The ``thresholds`` table: weighted confusion counts at each configured threshold."""
    rows = label_weights(stats_df, stats.THRESHOLD_BIN)
    ordered = sorted(config.thresholds)
    reached = F.col(stats.THRESHOLD_BIN)
    counts = []
    for j in range(len(ordered)):
        counts.append(F.sum(F.when(reached > j, F.col("_pos")).otherwise(0.0)).alias(f"_tp{j}"))
        counts.append(F.sum(F.when(reached > j, F.col("_neg")).otherwise(0.0)).alias(f"_fp{j}"))
    per_key = rows.groupBy(*stats.SLICE_KEY_COLUMNS).agg(
        F.sum(stats.N).alias(stats.N),
        F.sum("_pos").alias("_p"),
        F.sum("_neg").alias("_n_neg"),
        *counts,
    )
    p, n = F.col("_p"), F.col("_n_neg")
    structs = []
    for j, threshold in enumerate(ordered):
        tp, fp = F.col(f"_tp{j}"), F.col(f"_fp{j}")
        structs.append(
            F.struct(
                F.lit(float(threshold)).alias("threshold"),
                F.col(stats.N).cast("long").alias(stats.N),
                (p + n).alias(WEIGHT_SUM),
                tp.alias("tp"),
                fp.alias("fp"),
                (n - fp).alias("tn"),
                (p - tp).alias("fn"),
                F.try_divide(tp, p).alias("tpr"),
                F.try_divide(fp, n).alias("fpr"),
                F.when(tp + fp > 0.0, tp / (tp + fp)).otherwise(0.0).alias("precision"),
                F.try_divide(tp, p).alias("recall"),
            )
        )
    return per_key.select(*stats.SLICE_KEY_COLUMNS, F.inline(F.array(*structs))).select(
        *THRESHOLD_COLUMNS
    )
