"""Statistics → the long ``metrics`` table.

Per key (model_version, slice_name, slice_value, class) over the bins b with S_b = Σw(correct −
conf) and W_b = Σw: ECE = Σ_b |S_b| / W; MCE = max_{b: W_b>0} |S_b| / W_b; RMSCE =
sqrt(Σ_{b: W_b>0} S_b²/W_b / W); Brier, NLL and accuracy are Σ(w·term) / W. A value is null
when W = 0. classwise_ece rows carry the class; its macro row (class null) averages them.

Output columns: model_version, slice_name, slice_value, class, metric, value, n, weight_sum.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.config import ConfigSource, load_config
from spark_calib.metrics.registry import PER_CLASS, TOP_LABEL, MetricSpec, resolve_metrics
from spark_calib.stats import schema as stats

METRIC = "metric"
VALUE = "value"
WEIGHT_SUM = "weight_sum"
METRICS_COLUMNS = (*stats.KEY_COLUMNS, METRIC, VALUE, stats.N, WEIGHT_SUM)


def metrics_from_stats(stats_df: DataFrame, config: ConfigSource) -> DataFrame:
    """The metrics table of ``config.metrics`` computed from a statistics table alone."""
    cfg = load_config(config)
    specs = resolve_metrics(cfg.task, cfg.metrics)
    per_key = per_key_sums(stats_df)
    frames = []
    top_specs = [spec for spec in specs if spec.scope == TOP_LABEL]
    if top_specs:
        frames.append(_long(per_key.where(F.col(stats.CLASS).isNull()), top_specs))
    for spec in (spec for spec in specs if spec.scope == PER_CLASS):
        per_class = _long(per_key.where(F.col(stats.CLASS).isNotNull()), [spec])
        frames += [per_class, _macro(per_class)]
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


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


def _long(per_key: DataFrame, specs: list[MetricSpec]) -> DataFrame:
    entries = F.array(
        *[F.struct(F.lit(spec.name).alias(METRIC), spec.value().alias(VALUE)) for spec in specs]
    )
    return per_key.select(
        *stats.KEY_COLUMNS,
        F.col("_n").alias(stats.N),
        F.col("_w").alias(WEIGHT_SUM),
        F.inline(entries),
    ).select(*METRICS_COLUMNS)


def _macro(per_class: DataFrame) -> DataFrame:
    """Mean over classes of a per-class metric, with class null."""
    group = [stats.MODEL_VERSION, stats.SLICE_NAME, stats.SLICE_VALUE, METRIC]
    return (
        per_class.groupBy(*group)
        .agg(
            F.avg(VALUE).alias(VALUE),
            F.max(stats.N).alias(stats.N),
            F.max(WEIGHT_SUM).alias(WEIGHT_SUM),
        )
        .select(
            stats.MODEL_VERSION,
            stats.SLICE_NAME,
            stats.SLICE_VALUE,
            F.lit(None).cast("string").alias(stats.CLASS),
            METRIC,
            VALUE,
            stats.N,
            WEIGHT_SUM,
        )
    )
