"""Standard errors and intervals of the metrics table (``uncertainty`` in the config).

- ``analytic``: the ``se`` a family computed from the second-moment sums (the registry's
  ``MetricSpec.se``; null where a metric has no closed form); interval value ± z·se with
  z = Φ⁻¹((1 + level)/2).
- ``jackknife``: the statistics carry a ``bucket`` key g ∈ {0..G−1}
  (``spark_calib.rows.canonical.jackknife_bucket``). θ̂ is the metric of the statistics summed
  over the buckets; θ̂₍₋g₎ the metric of the statistics without bucket g (each key's total
  minus its bucket-g row: ``replicate_stats``). SE² = (G − 1)/G·Σ_g (θ̂₍₋g₎ − θ̄)², θ̄ the
  mean of the replicates; null unless all G replicates have a value. Interval
  θ̂ ± t_{G−1}·SE, centred on the point estimate (TFMA centres on θ̄).
- ``none``: ``se`` and the interval are null.

``n_eff`` = (Σw)²/Σw² of the row's slice key (the top-label items, class null; the class items of
a key carry the same weights) for every method.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.metrics.output import (
    CI_LOWER,
    CI_UPPER,
    METRIC,
    METRICS_COLUMNS,
    N_EFF,
    SE,
    TABLE_COLUMNS,
    VALUE,
)
from spark_calib.metrics.quantiles import normal_quantile, t_quantile
from spark_calib.stats import schema as stats

REPLICATE = "_replicate"
# Separates the replicate index from the model version inside the replicates' model_version.
_SEPARATOR = "\u001f"
_NULL_VERSION = "\u0000"


def collapse_buckets(stats_df: DataFrame) -> DataFrame:
    """The statistics summed over ``bucket`` (which becomes null): the point estimates' input."""
    keys = [name for name in stats.GROUP_COLUMNS if name != stats.BUCKET]
    summed = stats_df.groupBy(*keys).agg(
        *[F.sum(name).alias(name) for name in stats.MEASURE_COLUMNS]
    )
    return summed.select(
        *[
            (F.lit(None).cast("int") if name == stats.BUCKET else F.col(name)).alias(name)
            for name in stats.STATS_COLUMNS
        ]
    )


def replicate_stats(stats_df: DataFrame, buckets: int) -> DataFrame:
    """Leave-one-bucket-out statistics: replicate g holds, per statistics key, the sums over
    every bucket but g; the replicate index is folded into ``model_version``
    (``split_replicates`` unfolds it), so every family computes the replicates as ordinary keys.

    Replicate g of a key is its total over the buckets minus its bucket-g row (one union and
    one aggregation over G·keys + rows rows, not the G − 1 copies of every row that summing
    the kept buckets takes). A key all of whose rows are in bucket g has n = 0 there and no
    replicate-g row, as when the kept buckets are summed. The difference is the sum of the other
    buckets up to rounding (relative 1e-16 of the total), and exact where they hold zeros: a sum
    whose other buckets are all 0 is 0.
    """
    keys = [name for name in stats.GROUP_COLUMNS if name != stats.BUCKET]
    bucketed = stats_df.where(F.col(stats.BUCKET).isNotNull())
    replicate = F.explode(F.sequence(F.lit(0), F.lit(buckets - 1))).alias(REPLICATE)
    totals = collapse_buckets(bucketed).select(*keys, replicate, *stats.MEASURE_COLUMNS)
    removed = bucketed.select(
        *keys,
        F.col(stats.BUCKET).alias(REPLICATE),
        *[(-F.col(name)).alias(name) for name in stats.MEASURE_COLUMNS],
    )
    summed = (
        totals.unionByName(removed)
        .groupBy(*keys, REPLICATE)
        .agg(*[F.sum(name).alias(name) for name in stats.MEASURE_COLUMNS])
        .where(F.col(stats.N) > 0)
    )
    version = F.concat(
        F.col(REPLICATE).cast("string"),
        F.lit(_SEPARATOR),
        F.coalesce(F.col(stats.MODEL_VERSION), F.lit(_NULL_VERSION)),
    )
    return summed.select(
        *[
            version.alias(name)
            if name == stats.MODEL_VERSION
            else (F.lit(None).cast("int").alias(name) if name == stats.BUCKET else F.col(name))
            for name in stats.STATS_COLUMNS
        ]
    )


def split_replicates(metrics: DataFrame) -> DataFrame:
    """Replicate metrics → the real model_version and ``_replicate``."""
    folded = F.col(stats.MODEL_VERSION)
    version = F.substring_index(folded, _SEPARATOR, -1)
    return metrics.select(
        F.substring_index(folded, _SEPARATOR, 1).cast("int").alias(REPLICATE),
        F.when(version != _NULL_VERSION, version).alias(stats.MODEL_VERSION),
        *[name for name in METRICS_COLUMNS if name != stats.MODEL_VERSION],
    )


def with_jackknife_se(
    point: DataFrame, replicates: DataFrame, buckets: int, without_se: Iterable[str]
) -> DataFrame:
    """``point`` with ``se`` replaced by the jackknife SE of ``replicates`` (metric rows of
    ``replicate_stats``); metrics named in ``without_se`` keep a null se."""
    per_key = [*stats.KEY_COLUMNS, METRIC]
    spread = (
        split_replicates(replicates)
        .groupBy(*per_key)
        .agg(
            F.count(VALUE).alias("_defined"),
            F.var_pop(VALUE).alias("_var_pop"),
        )
        .select(
            *[F.col(name).alias(f"_jk_{name}") for name in per_key],
            F.when(
                F.col("_defined") == buckets,
                F.sqrt(F.greatest(F.col("_var_pop"), F.lit(0.0)) * float(buckets - 1)),
            ).alias("_jk_se"),
        )
    )
    on = [F.col(name).eqNullSafe(F.col(f"_jk_{name}")) for name in per_key]
    joined = point.join(spread, on=on, how="left")
    excluded = list(without_se)
    se = F.when(~F.col(METRIC).isin(excluded), F.col("_jk_se")) if excluded else F.col("_jk_se")
    return joined.select(
        *[name for name in METRICS_COLUMNS], F.when(F.col(VALUE).isNotNull(), se).alias(SE)
    )


def critical_value(config: Config) -> float:
    """The interval's multiplier: z for ``analytic``, t_{G−1} for ``jackknife``."""
    uncertainty = config.uncertainty
    if uncertainty.jackknife:
        return t_quantile(uncertainty.level, uncertainty.buckets - 1)
    return normal_quantile(uncertainty.level)


def with_intervals(metrics: DataFrame, stats_df: DataFrame, config: Config) -> DataFrame:
    """``metrics`` (``METRICS_COLUMNS`` and ``se``) → the metrics table (``TABLE_COLUMNS``):
    ci_lower/ci_upper = value ∓ critical_value·se, and n_eff of the slice key."""
    if config.uncertainty.method == "none":
        se: Column = F.lit(None).cast("double")
    else:
        se = F.col(SE)
    q = critical_value(config)
    sizes = (
        stats_df.where(F.col(stats.REASON).isNull() & F.col(stats.CLASS).isNull())
        .groupBy(*stats.SLICE_KEY_COLUMNS)
        .agg(F.sum(stats.SUM_WEIGHT).alias("_w"), F.sum(stats.SUM_WEIGHT_SQ).alias("_w2"))
        .select(
            *[F.col(name).alias(f"_size_{name}") for name in stats.SLICE_KEY_COLUMNS],
            F.try_divide(F.col("_w") * F.col("_w"), F.col("_w2")).alias(N_EFF),
        )
    )
    on = [F.col(name).eqNullSafe(F.col(f"_size_{name}")) for name in stats.SLICE_KEY_COLUMNS]
    with_se = metrics.select(*METRICS_COLUMNS, se.alias(SE))
    joined = with_se.join(sizes, on=on, how="left")
    value, error = F.col(VALUE), F.col(SE)
    return joined.select(
        *METRICS_COLUMNS,
        error.alias(SE),
        (value - q * error).alias(CI_LOWER),
        (value + q * error).alias(CI_UPPER),
        F.col(N_EFF),
    ).select(*TABLE_COLUMNS)
