"""Standard errors and intervals of the metrics table (``uncertainty`` in the config).

- ``analytic``: the ``se`` a kernel computes from the second-moment sums (the registry's
  ``MetricSpec.analytic_se``; null where a metric has no closed form); interval value ± z·se
  with z = Φ⁻¹((1 + level)/2).
- ``jackknife``: the statistics carry a ``bucket`` key g ∈ {0..G−1}
  (``spark_calib.rows.canonical.jackknife_bucket``). θ̂ is the metric of the statistics summed
  over the buckets; θ̂₍₋g₎ the metric of the statistics without bucket g (each key's total
  minus its bucket-g sums: ``spark_calib.kernels.replicates``). SE² = (G − 1)/G·Σ_g
  (θ̂₍₋g₎ − θ̄)², θ̄ the mean of the replicates; null unless all G replicates have a value.
  Interval θ̂ ± t_{G−1}·SE, centred on the point estimate (TFMA centres on θ̄). The kernels
  compute the replicates of a key in NumPy from its G bucket rows
  (``spark_calib.kernels.estimates``).
- ``none``: ``se`` and the interval are null.

``n_eff`` = (Σw)²/Σw² of the row's slice key (the top-label items, class null; the class items of
a key carry the same weights) for every method.

``with_intervals`` adds the intervals and n_eff to the exact ranking metrics (the pass over the
rows); the kernels add them to every other metric.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.metrics.output import (
    CI_LOWER,
    CI_UPPER,
    METRICS_COLUMNS,
    N_EFF,
    SE,
    TABLE_COLUMNS,
    VALUE,
)
from spark_calib.metrics.quantiles import normal_quantile, t_quantile
from spark_calib.stats import schema as stats


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
