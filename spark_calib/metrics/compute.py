"""Statistics → the long ``metrics`` table.

The table is the union of one frame per requested metric family (calibration here; decision,
ranking and regression in their modules), each built from the statistics alone. Calibration,
per key (model_version, slice_name, slice_value, class) over the bins b, with c the calibration
probability and o the outcome of an item (``spark_calib.stats.schema``), S_b = Σw(o − c) and
W_b = Σw: ECE = Σ_b |S_b| / W; MCE = max_{b: W_b>0} |S_b| / W_b; RMSCE =
sqrt(Σ_{b: W_b>0} S_b²/W_b / W); Brier, NLL and accuracy are Σ(w·term) / W; the other
calibration-family values are the registry's expressions of the per-key sums
(``per_key_sums``). A value is null when W = 0. classwise_ece rows carry the class; its macro
row (class null) averages them.

Output columns: model_version, slice_name, slice_value, class, metric, value, n, weight_sum.
"""

from __future__ import annotations

import math

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config, ConfigSource, load_config
from spark_calib.metrics.bins import calibration_bins
from spark_calib.metrics.output import (
    ERROR_BOUND,
    FAMILY_COLUMNS,
    METRIC,
    SE,
    VALUE,
    WEIGHT_SUM,
    defined_values,
)
from spark_calib.metrics.uncertainty import (
    collapse_buckets,
    replicate_stats,
    with_intervals,
    with_jackknife_se,
)
from spark_calib.registry import (
    CALIBRATION,
    CELL_CALIBRATION,
    CELLS,
    CONFUSION,
    PER_CLASS,
    REGRESSION,
    SMOOTH,
    MetricSpec,
    resolve_metrics,
)
from spark_calib.registry.special import erf
from spark_calib.stats import schema as stats


def metrics_from_stats(
    stats_df: DataFrame, config: ConfigSource, *, bin_stats: DataFrame | None = None
) -> DataFrame:
    """The metrics table of ``config.metrics`` computed from a statistics table alone, with the
    standard errors and intervals of ``config.uncertainty`` (``spark_calib.metrics.uncertainty``).

    Exact ranking metrics (``roc_auc``, ``pr_auc``) need the input and are left out here;
    ``evaluate`` adds them. Tables (``confusion_matrix``, …) are separate outputs. A value is
    null when its denominator is 0 or a sum overflowed (``defined_values``).

    ``bin_stats``, when given, is ``stats_df`` summed over the fine cells (``sum_over_cells``;
    a caller that caches both passes it): the families that read no cells use it, the same
    sums in fewer rows.
    """
    cfg = load_config(config)
    bins = stats_df if bin_stats is None else bin_stats
    if not cfg.uncertainty.jackknife:
        return with_intervals(_point_metrics(stats_df, bins, cfg), bins, cfg)
    point = _point_metrics(collapse_buckets(stats_df), collapse_buckets(bins), cfg)
    specs = resolve_metrics(cfg.task, cfg.metrics, cfg.features())
    # smooth_ece collects its node sums to the driver: G replicates would collect G times more.
    replicated = [spec.name for spec in specs if spec.family != SMOOTH and not spec.table]
    # Lazy: the replicates of the fine statistics are computed only if a cell family reads them.
    replicates = _point_metrics(
        replicate_stats(stats_df, cfg.uncertainty.buckets),
        replicate_stats(bins, cfg.uncertainty.buckets),
        cfg.model_copy(update={"metrics": tuple(replicated)}),
    )
    without_se = [spec.name for spec in specs if not spec.noise or spec.family == SMOOTH]
    with_se = with_jackknife_se(point, replicates, cfg.uncertainty.buckets, without_se)
    return with_intervals(with_se, bins, cfg)


def _point_metrics(stats_df: DataFrame, bin_stats: DataFrame, cfg: Config) -> DataFrame:
    """The metrics of ``cfg.metrics`` with the families' analytic ``se``: the cell families
    (and equal-mass bins) from ``stats_df``, the others from ``bin_stats``, the same sums
    summed over the cells."""
    # Imported here: the family modules import this module's helpers.
    from spark_calib.metrics.cells import cell_metrics
    from spark_calib.metrics.decision import decision_metrics
    from spark_calib.metrics.ranking import binned_ranking_metrics
    from spark_calib.metrics.regression import regression_metrics
    from spark_calib.metrics.smooth import smooth_ece_metrics

    specs = [spec for spec in resolve_metrics(cfg.task, cfg.metrics, cfg.features())]
    by_family = {
        family: [spec for spec in specs if spec.family == family and not spec.table]
        for family in (
            CALIBRATION,
            PER_CLASS,
            CONFUSION,
            CELLS,
            CELL_CALIBRATION,
            SMOOTH,
            REGRESSION,
        )
    }
    calibration_source = stats_df if cfg.binning.strategy == "equal_mass" else bin_stats
    frames = []
    if by_family[CALIBRATION] or by_family[PER_CLASS]:
        frames.append(
            _calibration_metrics(
                calibration_source, cfg, by_family[CALIBRATION], by_family[PER_CLASS]
            )
        )
    if by_family[CONFUSION]:
        frames.append(decision_metrics(bin_stats, cfg, by_family[CONFUSION]))
    if by_family[CELLS]:
        frames.append(binned_ranking_metrics(stats_df, cfg, by_family[CELLS]))
    if by_family[CELL_CALIBRATION]:
        frames.append(cell_metrics(stats_df, by_family[CELL_CALIBRATION]))
    if by_family[SMOOTH]:
        frames.append(smooth_ece_metrics(stats_df))
    if by_family[REGRESSION]:
        frames.append(regression_metrics(bin_stats, cfg, by_family[REGRESSION]))
    if not frames:
        return empty_metrics(bin_stats)
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame, allowMissingColumns=True)
    return defined_values(combined)


def empty_metrics(stats_df: DataFrame) -> DataFrame:
    """A metrics table with no rows (the typed schema), for configs that request none."""
    return stats_df.where(F.lit(False)).select(
        *[F.col(name) for name in stats.KEY_COLUMNS],
        F.lit(None).cast("string").alias(METRIC),
        F.lit(None).cast("double").alias(VALUE),
        F.col(stats.N),
        F.lit(None).cast("double").alias(WEIGHT_SUM),
        F.lit(None).cast("double").alias(ERROR_BOUND),
        F.lit(None).cast("double").alias(SE),
    )


def _calibration_metrics(
    stats_df: DataFrame, cfg: Config, top_specs: list[MetricSpec], class_specs: list[MetricSpec]
) -> DataFrame:
    """Top-label and per-class bin metrics as one chain: statistics → per key → per slice."""
    per_key = per_key_sums(calibration_bins(stats_df, cfg))
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
    return keyed.select(*slice_keys, F.inline("_entries")).select(*FAMILY_COLUMNS, SE)


# Per-key sum → the statistics column it totals over the key's bins.
_KEY_TOTALS = {
    "_brier": stats.SUM_WEIGHT_BRIER,
    "_nll": stats.SUM_WEIGHT_NLL,
    "_correct": stats.SUM_WEIGHT_CORRECT,
    "_cost": stats.SUM_WEIGHT_COST,
    "_conf": stats.SUM_WEIGHT_CONFIDENCE,
    "_outcome": stats.SUM_WEIGHT_OUTCOME,
    "_w2": stats.SUM_WEIGHT_SQ,
    "_conf_sq": stats.SUM_WEIGHT_CONFIDENCE_SQ,
    "_conf_outcome": stats.SUM_WEIGHT_CONFIDENCE_OUTCOME,
    "_spiegelhalter_var": stats.SUM_WEIGHT_SQ_SPIEGELHALTER,
    "_w2_outcome": stats.SUM_WEIGHT_SQ_OUTCOME,
    "_w2_conf": stats.SUM_WEIGHT_SQ_CONFIDENCE,
    "_w2_conf_sq": stats.SUM_WEIGHT_SQ_CONFIDENCE_SQ,
    "_w2_conf_outcome": stats.SUM_WEIGHT_SQ_CONFIDENCE_OUTCOME,
    "_w2_correct": stats.SUM_WEIGHT_SQ_CORRECT,
    "_w2_brier": stats.SUM_WEIGHT_SQ_BRIER,
    "_w2_brier_sq": stats.SUM_WEIGHT_SQ_BRIER_SQ,
    "_w2_nll": stats.SUM_WEIGHT_SQ_NLL,
    "_w2_nll_sq": stats.SUM_WEIGHT_SQ_NLL_SQ,
}


def per_key_sums(bins: DataFrame) -> DataFrame:
    """The calibration bins (``calibration_bins``) summed per key, with the gap terms the
    calibration metrics need.

    With C_b = Σ_{i∈b} w·c, O_b = Σ_{i∈b} w·o, W_b = Σ_{i∈b} w and S_b = O_b − C_b over the
    occupied bins: ``_abs_gap`` = Σ|S_b|, ``_max_gap`` = max |S_b|/W_b, ``_sq_gap`` = Σ S_b²/W_b,
    ``_sq_outcome`` = Σ O_b²/W_b; the uncertainty terms ``_signed_q1`` = Σ sign(S_b)·Σ_{i∈b}
    w²(o − c), and, with ȳ_b = O_b/W_b, p̄_b = C_b/W_b, d_b = ȳ_b − p̄_b, the Kish size
    n_eff,b = W_b²/Σ_{i∈b}w² and s_b² = ȳ_b(1 − ȳ_b)/n_eff,b:
    ``_debias_abs`` = Σ W_b·E|d_b + s_b·Z|
    = Σ W_b·[s_b√(2/π)·exp(−d_b²/2s_b²) + d_b·erf(d_b/(s_b√2))]
    (|d_b| when s_b = 0), ``_null_abs`` = Σ W_b·√(2/π)·√(p̄_b(1 − p̄_b)/n_eff,b) and
    ``_sq_debiased`` = Σ_{n_eff,b > 1} W_b·[d_b² − ȳ_b(1 − ȳ_b)/(n_eff,b − 1)]; and the key's
    totals ``_KEY_TOTALS``.
    """
    weight = F.col(stats.SUM_WEIGHT)
    outcome = F.col(stats.SUM_WEIGHT_OUTCOME)
    gap = outcome - F.col(stats.SUM_WEIGHT_CONFIDENCE)
    occupied = weight > 0.0
    q1 = F.col(stats.SUM_WEIGHT_SQ_OUTCOME) - F.col(stats.SUM_WEIGHT_SQ_CONFIDENCE)
    return bins.groupBy(*stats.KEY_COLUMNS).agg(
        F.sum(stats.N).alias("_n"),
        F.sum(weight).alias("_w"),
        F.sum(F.abs(gap)).alias("_abs_gap"),
        F.max(F.when(occupied, F.abs(gap) / weight)).alias("_max_gap"),
        F.sum(F.when(occupied, gap * gap / weight)).alias("_sq_gap"),
        F.sum(F.when(occupied, outcome * outcome / weight)).alias("_sq_outcome"),
        F.sum(F.signum(gap) * q1).alias("_signed_q1"),
        *[F.sum(F.when(occupied, term)).alias(name) for name, term in _bin_noise_terms().items()],
        *[F.sum(column).alias(name) for name, column in _KEY_TOTALS.items()],
    )


def _bin_noise_terms() -> dict[str, Column]:
    """Per occupied bin: W_b·E|d_b + s_b·Z|, W_b·√(2/π)·√(p̄_b(1 − p̄_b)/n_eff,b) and the
    debiased squared gap (see ``per_key_sums``)."""
    weight = F.col(stats.SUM_WEIGHT)
    w2 = F.col(stats.SUM_WEIGHT_SQ)
    rate = F.col(stats.SUM_WEIGHT_OUTCOME) / weight
    mean = F.col(stats.SUM_WEIGHT_CONFIDENCE) / weight
    gap = rate - mean
    # s_b = sqrt(ȳ(1 − ȳ)·Σw²)/W_b, that is sqrt(ȳ(1 − ȳ)/n_eff,b).
    spread = F.sqrt(F.greatest(rate * (1.0 - rate), F.lit(0.0)) * w2) / weight
    folded = spread * F.lit(math.sqrt(2.0 / math.pi)) * F.exp(
        -(gap * gap) / (2.0 * spread * spread)
    ) + gap * erf(gap / (spread * F.lit(math.sqrt(2.0))))
    expected_abs = F.when(spread > 0.0, folded).otherwise(F.abs(gap))
    n_eff = weight * weight / w2
    null = F.lit(math.sqrt(2.0 / math.pi)) * F.sqrt(
        F.greatest(mean * (1.0 - mean), F.lit(0.0)) * w2
    )
    debiased_sq = F.when(
        n_eff > 1.0, weight * (gap * gap - rate * (1.0 - rate) / (n_eff - 1.0))
    ).otherwise(F.lit(0.0))
    return {
        "_debias_abs": weight * expected_abs,
        "_null_abs": null,
        "_sq_debiased": debiased_sq,
    }


def _entries(specs: list[MetricSpec]) -> Column:
    """One output struct per metric for the current key."""
    return F.array(
        *[
            F.struct(
                F.col(stats.CLASS).alias(stats.CLASS),
                F.lit(spec.name).alias(METRIC),
                _value(spec).cast("double").alias(VALUE),
                F.col("_n").cast("long").alias(stats.N),
                F.col("_w").cast("double").alias(WEIGHT_SUM),
                (spec.se() if spec.se is not None else F.lit(None)).cast("double").alias(SE),
            )
            for spec in specs
        ]
    )


def _value(spec: MetricSpec) -> Column:
    assert spec.value is not None, f"{spec.name} has no per-key expression"
    return spec.value()


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
        # The classes' ECEs share their rows, so their standard errors do not combine simply.
        F.lit(None).cast("double").alias(SE),
    )
