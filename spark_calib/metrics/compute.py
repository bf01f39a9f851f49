"""Statistics → the long ``metrics`` table.

Per key (model_version, slice_name, slice_value, class) over the bins b with S_b = Σw(correct −
conf) and W_b = Σw: ECE = Σ_b |S_b| / W; MCE = max_{b: W_b>0} |S_b| / W_b; RMSCE =
sqrt(Σ_{b: W_b>0} S_b²/W_b / W); Brier, NLL and accuracy are Σ(w·term) / W. A value is null
when W = 0. classwise_ece rows carry the class; its macro row (class null) averages them.

Output columns: model_version, slice_name, slice_value, class, metric, value, n, weight_sum.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import ConfigSource, load_config
from spark_calib.metrics.registry import PER_CLASS, TOP_LABEL, MetricSpec, resolve_metrics
from spark_calib.stats import schema as stats

METRIC = "metric"
VALUE = "value"
WEIGHT_SUM = "weight_sum"
METRICS_COLUMNS = (*stats.KEY_COLUMNS, METRIC, VALUE, stats.N, WEIGHT_SUM)


def metrics_from_stats(stats_df: DataFrame, config: ConfigSource) -> DataFrame:
    """The metrics table of ``config.metrics`` computed from a statistics table alone.

    The plan is one chain (statistics → per key → per slice) with no self-union, so every row
    of it reads the statistics once, and a cached statistics table is reused as it is.
    """
    cfg = load_config(config)
    specs = resolve_metrics(cfg.task, cfg.metrics)
    top_specs = [spec for spec in specs if spec.scope == TOP_LABEL]
    class_specs = [spec for spec in specs if spec.scope == PER_CLASS]
    per_key = per_key_sums(stats_df)
    is_top = F.col(stats.CLASS).isNull()
    if not class_specs:
        entries = _entries(top_specs)
        per_key = per_key.where(is_top)
    elif not top_specs:
        entries = _entries(class_specs)
        per_key = per_key.where(~is_top)
    else:
        entries = F.when(is_top, _entries(top_specs)).otherwise(_entries(class_specs))
    slice_keys = (stats.MODEL_VERSION, stats.SLICE_NAME, stats.SLICE_VALUE)
    keyed = per_key.select(*slice_keys, entries.alias("_entries"))
    if class_specs:
        collected = F.flatten(F.collect_list("_entries"))
        keyed = keyed.groupBy(*slice_keys).agg(collected.alias("_entries"))
        macros = [_macro_entry(F.col("_entries"), spec.name) for spec in class_specs]
        keyed = keyed.select(*slice_keys, F.concat("_entries", F.array(*macros)).alias("_entries"))
    return keyed.select(*slice_keys, F.inline("_entries")).select(*METRICS_COLUMNS)


def per_key_sums(stats_df: DataFrame) -> DataFrame:
    """Valid statistics summed over bins per key, with the gap terms the metrics need."""
    weight = F.col(stats.SUM_WEIGHT)
    gap = F.col(stats.SUM_WEIGHT_CORRECT) - F.col(stats.SUM_WEIGHT_CONFIDENCE)
    occupied = weight > 0.0
    return (
        stats_df.where(F.col(stats.REASON).isNull() & F.col(stats.BIN).isNotNull())
        .groupBy(*stats.KEY_COLUMNS)
        .agg(
            F.sum(stats.N).alias("_n"),
            F.sum(weight).alias("_w"),
            F.sum(F.abs(gap)).alias("_abs_gap"),
            F.max(F.when(occupied, F.abs(gap) / weight)).alias("_max_gap"),
            F.sum(F.when(occupied, gap * gap / weight)).alias("_sq_gap"),
            F.sum(stats.SUM_WEIGHT_BRIER).alias("_brier"),
            F.sum(stats.SUM_WEIGHT_NLL).alias("_nll"),
            F.sum(stats.SUM_WEIGHT_CORRECT).alias("_correct"),
        )
    )


def _entries(specs: list[MetricSpec]) -> Column:
    """One output struct per metric for the current key."""
    return F.array(
        *[
            F.struct(
                F.col(stats.CLASS).alias(stats.CLASS),
                F.lit(spec.name).alias(METRIC),
                spec.value().cast("double").alias(VALUE),
                F.col("_n").cast("long").alias(stats.N),
                F.col("_w").cast("double").alias(WEIGHT_SUM),
            )
            for spec in specs
        ]
    )


def _macro_entry(entries: Column, name: str) -> Column:
    """Mean over classes of the per-class values of ``name`` (nulls skipped), with class null."""
    per_class = F.filter(entries, lambda e: (e[METRIC] == name) & e[stats.CLASS].isNotNull())
    defined = F.filter(per_class, lambda e: e[VALUE].isNotNull())
    total = F.aggregate(defined, F.lit(0.0), lambda acc, e: acc + e[VALUE])
    return F.struct(
        F.lit(None).cast("string").alias(stats.CLASS),
        F.lit(name).alias(METRIC),
        F.try_divide(total, F.size(defined).cast("double")).alias(VALUE),
        F.array_max(F.transform(per_class, lambda e: e[stats.N])).alias(stats.N),
        F.array_max(F.transform(per_class, lambda e: e[WEIGHT_SUM])).alias(WEIGHT_SUM),
    )
