"""Statistics → decision metrics (confusion-based) and the ``confusion`` table.

From the confusion cells W_jk (weight of rows with true class j predicted as k), per key
(binary: from ``n_positive``, Σw·y and Σw·y·nll per predicted class, the rest being class 0):
T_k = Σ_j W_kj (true support), P_k = Σ_j W_jk (predicted), TP_k = W_kk, over L = the classes
occurring as a true or a predicted class.

- precision_k = TP_k / P_k, recall_k = TP_k / T_k, f1_k = 2 TP_k / (P_k + T_k), each 0 when
  its denominator is 0 (scikit-learn's default zero_division); ``_macro`` = mean over L,
  ``_weighted`` = Σ T_k m_k / Σ T_k, ``_micro`` from the summed counts.
- balanced_accuracy = mean over k with T_k > 0 of TP_k / T_k; balanced_error_rate = 1 − it.
- class_weighted_error = Σ c_k (T_k − TP_k) / Σ c_k T_k; class_weighted_nll =
  Σ c_k NLL_k / Σ c_k T_k with NLL_k = Σ_{y=k} w·nll; misclassification_cost =
  Σ_jk C_jk W_jk / W.

Per-class rows carry ``class``; every row's ``n`` and ``weight_sum`` are the key's rows and W.
Confusion table columns: model_version, slice_name, slice_value, true_class, predicted_class,
n, weight_sum (cells with n > 0 only).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.metrics.output import FAMILY_COLUMNS, METRIC, VALUE, WEIGHT_SUM
from spark_calib.registry import MetricSpec
from spark_calib.stats import schema as stats

CONFUSION_COLUMNS = (
    *stats.SLICE_KEY_COLUMNS,
    stats.TRUE_CLASS,
    stats.PREDICTED_CLASS,
    stats.N,
    WEIGHT_SUM,
)
AVERAGES = ("macro", "micro", "weighted")


def confusion_from_stats(stats_df: DataFrame, config: Config) -> DataFrame:
    """The confusion cells per key (the ``confusion`` table)."""
    return _cells(stats_df, config).select(*CONFUSION_COLUMNS)


def decision_metrics(stats_df: DataFrame, config: Config, specs: list[MetricSpec]) -> DataFrame:
    """Metric rows of the confusion family for every key (columns of the metrics table)."""
    cells = _cells(stats_df, config).withColumn("_cost", _cell_cost(config))
    true_side = F.struct(
        F.col(stats.TRUE_CLASS).alias("c"),
        F.col(WEIGHT_SUM).alias("t"),
        F.lit(0.0).alias("p"),
        F.when(F.col(stats.TRUE_CLASS) == F.col(stats.PREDICTED_CLASS), F.col(WEIGHT_SUM))
        .otherwise(0.0)
        .alias("tp"),
        F.col(stats.N).alias("n"),
        F.col("_nll").alias("nll"),
        F.col("_cost").alias("cost"),
    )
    predicted_side = F.struct(
        F.col(stats.PREDICTED_CLASS).alias("c"),
        F.lit(0.0).alias("t"),
        F.col(WEIGHT_SUM).alias("p"),
        F.lit(0.0).alias("tp"),
        F.lit(0).cast("long").alias("n"),
        F.lit(0.0).alias("nll"),
        F.lit(0.0).alias("cost"),
    )
    per_class = (
        cells.select(*stats.SLICE_KEY_COLUMNS, F.inline(F.array(true_side, predicted_side)))
        .groupBy(*stats.SLICE_KEY_COLUMNS, "c")
        .agg(*[F.sum(name).alias(name) for name in ("t", "p", "tp", "n", "nll", "cost")])
    )
    weights = _class_weight_map(config)
    per_key = per_class.groupBy(*stats.SLICE_KEY_COLUMNS).agg(
        F.collect_list(F.struct("c", "t", "p", "tp", "n", "nll")).alias("_classes"),
        F.sum("n").alias("_n"),
        F.sum("t").alias("_w"),
        F.sum("cost").alias("_cost"),
        F.sum(F.col("t") * weights(F.col("c"))).alias("_cw_t"),
        F.sum((F.col("t") - F.col("tp")) * weights(F.col("c"))).alias("_cw_err"),
        F.sum(F.col("nll") * weights(F.col("c"))).alias("_cw_nll"),
    )
    entries = [entry for spec in specs for entry in _entries(spec.name)]
    return per_key.select(*stats.SLICE_KEY_COLUMNS, F.inline(F.concat(*entries))).select(
        *FAMILY_COLUMNS
    )


def _cells(stats_df: DataFrame, config: Config) -> DataFrame:
    """One row per key and (true, predicted) class with n, ``weight_sum`` and Σw·nll
    (``_nll``)."""
    valid = (
        F.col(stats.REASON).isNull()
        & F.col(stats.CLASS).isNull()
        & F.col(stats.PREDICTED_CLASS).isNotNull()
    )
    if config.task == "binary":
        return _binary_cells(stats_df.where(valid), _class_labels(config, 2))
    return (
        stats_df.where(valid & F.col(stats.TRUE_CLASS).isNotNull())
        .groupBy(*stats.SLICE_KEY_COLUMNS, stats.TRUE_CLASS, stats.PREDICTED_CLASS)
        .agg(
            F.sum(stats.N).alias(stats.N),
            F.sum(stats.SUM_WEIGHT).alias(WEIGHT_SUM),
            F.sum(stats.SUM_WEIGHT_NLL).alias("_nll"),
        )
    )


def _binary_cells(stats_df: DataFrame, labels: list[str]) -> DataFrame:
    """The binary confusion cells from the label sums per predicted class: the positives are
    (n_positive, Σw·y, Σw·y·nll), the negatives the rest; a side with no row (by the counts) is
    left out, so no rounding residue of W − Σw·y becomes a cell."""
    summed = stats_df.groupBy(*stats.SLICE_KEY_COLUMNS, stats.PREDICTED_CLASS).agg(
        *[
            F.sum(name).alias(name)
            for name in (
                stats.N,
                stats.N_POSITIVE,
                stats.SUM_WEIGHT,
                stats.SUM_WEIGHT_POSITIVE,
                stats.SUM_WEIGHT_NLL,
                stats.SUM_WEIGHT_POSITIVE_NLL,
            )
        ]
    )
    n, n_positive = F.col(stats.N), F.col(stats.N_POSITIVE)
    weight, nll = F.col(stats.SUM_WEIGHT), F.col(stats.SUM_WEIGHT_NLL)
    positive_weight = F.col(stats.SUM_WEIGHT_POSITIVE)
    positive_nll = F.col(stats.SUM_WEIGHT_POSITIVE_NLL)

    def side(label: str, rows: Column, weight_sum: Column, nll_sum: Column) -> Column:
        return F.struct(
            F.lit(label).alias(stats.TRUE_CLASS),
            rows.cast("long").alias(stats.N),
            weight_sum.alias(WEIGHT_SUM),
            nll_sum.alias("_nll"),
        )

    sides = F.array(
        side(labels[0], n - n_positive, weight - positive_weight, nll - positive_nll),
        side(labels[1], n_positive, positive_weight, positive_nll),
    )
    return (
        summed.select(*stats.SLICE_KEY_COLUMNS, stats.PREDICTED_CLASS, F.inline(sides))
        .where(F.col(stats.N) > 0)
        .select(
            *stats.SLICE_KEY_COLUMNS,
            stats.TRUE_CLASS,
            stats.PREDICTED_CLASS,
            stats.N,
            WEIGHT_SUM,
            "_nll",
        )
    )


def _class_labels(config: Config, num_classes: int) -> list[str]:
    """The ``class`` strings of classes 0..K−1."""
    if config.class_names is not None:
        return list(config.class_names)
    return [str(k) for k in range(num_classes)]


def _class_weight_map(config: Config) -> Callable[[Column], Column]:
    """class label → c_k (1.0 for classes not listed)."""
    if not config.class_weights:
        return lambda label: F.lit(1.0)
    labels: dict[str, float] = {}
    for key, weight in config.class_weights.items():
        index = config.class_position(key, None)
        label = config.class_names[index] if config.class_names is not None else str(index)
        labels[label] = float(weight)
    mapping = F.create_map(*[F.lit(x) for pair in labels.items() for x in pair])
    return lambda label: F.coalesce(F.try_element_at(mapping, label), F.lit(1.0))


def _cell_cost(config: Config) -> Column:
    """C[true, predicted] · W_cell, or null without a cost matrix."""
    if config.cost_matrix is None:
        return F.lit(None).cast("double")
    labels = _class_labels(config, len(config.cost_matrix))
    costs = F.create_map(
        *[
            x
            for j, true in enumerate(labels)
            for k, predicted in enumerate(labels)
            for x in (F.lit(f"{true}\u0000{predicted}"), F.lit(float(config.cost_matrix[j][k])))
        ]
    )
    key = F.concat(F.col(stats.TRUE_CLASS), F.lit("\u0000"), F.col(stats.PREDICTED_CLASS))
    return F.try_element_at(costs, key) * F.col(WEIGHT_SUM)


def _ratio(numerator: Column, denominator: Column) -> Column:
    """numerator / denominator, 0 when the denominator is 0 (scikit-learn's zero_division)."""
    return F.when(denominator > 0.0, numerator / denominator).otherwise(F.lit(0.0))


# Per-class value of each per-class metric, from the class's struct (t, p, tp).
_CLASS_VALUES: dict[str, Callable[[Column], Column]] = {
    "precision": lambda c: _ratio(c["tp"], c["p"]),
    "recall": lambda c: _ratio(c["tp"], c["t"]),
    "f1": lambda c: _ratio(2.0 * c["tp"], c["p"] + c["t"]),
}


def _class_value(name: str, c: Column) -> Column:
    return _CLASS_VALUES[name](c)


def _entry(class_label: Column, metric: str, value: Column) -> Column:
    return F.struct(
        class_label.cast("string").alias(stats.CLASS),
        F.lit(metric).alias(METRIC),
        value.cast("double").alias(VALUE),
        F.col("_n").cast("long").alias(stats.N),
        F.col("_w").cast("double").alias(WEIGHT_SUM),
    )


def _sum(classes: Column, value: Callable[[Column], Column]) -> Column:
    return F.aggregate(classes, F.lit(0.0), lambda acc, c: acc + value(c))


def _per_class_entries(name: str) -> list[Column]:
    """Per-class rows of ``name`` plus its macro, micro and weighted averages."""
    classes = F.col("_classes")
    none = F.lit(None).cast("string")
    per_class = F.transform(classes, lambda c: _entry(c["c"], name, _class_value(name, c)))
    size = F.size(classes).cast("double")
    macro = _sum(classes, lambda c: _class_value(name, c)) / size
    support = _sum(classes, lambda c: c["t"])
    weighted = _ratio(_sum(classes, lambda c: c["t"] * _class_value(name, c)), support)
    tp = _sum(classes, lambda c: c["tp"])
    predicted = _sum(classes, lambda c: c["p"])
    micro = _CLASS_VALUES[name](F.struct(tp.alias("tp"), predicted.alias("p"), support.alias("t")))
    averages = F.array(
        _entry(none, f"{name}_macro", macro),
        _entry(none, f"{name}_micro", micro),
        _entry(none, f"{name}_weighted", weighted),
    )
    return [per_class, averages]


def _mean_recall() -> Column:
    classes = F.col("_classes")
    supported = F.filter(classes, lambda c: c["t"] > 0.0)
    return F.try_divide(
        _sum(supported, lambda c: c["tp"] / c["t"]), F.size(supported).cast("double")
    )


# Key-level value of each metric that has one row per key (class null).
_KEY_VALUES: dict[str, Callable[[], Column]] = {
    "balanced_accuracy": _mean_recall,
    "balanced_error_rate": lambda: 1.0 - _mean_recall(),
    "class_weighted_error": lambda: F.try_divide(F.col("_cw_err"), F.col("_cw_t")),
    "class_weighted_nll": lambda: F.try_divide(F.col("_cw_nll"), F.col("_cw_t")),
    "misclassification_cost": lambda: F.try_divide(F.col("_cost"), F.col("_w")),
}


def _entries(name: str) -> list[Column]:
    """Array columns of the metric rows ``name`` produces for the current key."""
    if name in _CLASS_VALUES:
        return _per_class_entries(name)
    return [F.array(_entry(F.lit(None).cast("string"), name, _KEY_VALUES[name]()))]
