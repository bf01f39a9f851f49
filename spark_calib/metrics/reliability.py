"""Statistics → the ``reliability`` table (reliability diagrams), every bin of every key.

For bin b of M (``spark_calib.metrics.bins``): bin_lower and bin_upper (b/M and (b+1)/M for
uniform bins; the cells' edges for equal-mass bins, null for an empty one), n, weight_sum = W_b,
mean_confidence = Σw·c / W_b, accuracy = Σw·o / W_b (the observed rate: of y = 1 for a binary
task's positive-class view, of correct answers for top-label views, of the class for per-class
rows) and gap = accuracy − mean_confidence (positive: under-confident).
Empty bins have n = 0, weight_sum = 0 and null means.

ci_lower and ci_upper: the Wilson interval of the observed rate at ``uncertainty.level`` on the
bin's Kish size ñ = W_b²/Σw² (``n_eff``): with ȳ = accuracy and z = Φ⁻¹((1 + level)/2),
centre = (ȳ + z²/2ñ)/(1 + z²/ñ), half = z/(1 + z²/ñ)·√(ȳ(1 − ȳ)/ñ + z²/4ñ²); it stays inside
[0, 1] and is not degenerate for a bin of all 0s or all 1s. Null for an empty bin, and under
``uncertainty.method: none``.

Output columns: model_version, slice_name, slice_value, class, bin, bin_lower, bin_upper, n,
weight_sum, mean_confidence, accuracy, gap, n_eff, ci_lower, ci_upper.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config, ConfigSource, load_config
from spark_calib.metrics.bins import BIN_LOWER, BIN_UPPER, calibration_bins
from spark_calib.metrics.quantiles import normal_quantile
from spark_calib.rows.binning import bin_lower, bin_upper
from spark_calib.stats import schema as stats

RELIABILITY_COLUMNS = (
    *stats.KEY_COLUMNS,
    "bin",
    "bin_lower",
    "bin_upper",
    "n",
    "weight_sum",
    "mean_confidence",
    "accuracy",
    "gap",
    "n_eff",
    "ci_lower",
    "ci_upper",
)


def reliability_from_stats(stats_df: DataFrame, config: ConfigSource) -> DataFrame:
    """All ``binning.n_bins`` bins per key, filled from the valid statistics."""
    cfg = load_config(config)
    n_bins = cfg.binning.n_bins
    uniform = cfg.binning.strategy == "uniform"
    # Regression bins are coverage buckets, not confidence bins: no reliability diagram.
    classification = F.lit(cfg.task != "regression")
    per_bin = calibration_bins(stats_df.where(classification), cfg).where(
        F.col(stats.BIN).isNotNull()
    )
    # Filling empty bins per key through a map lookup instead of a join keeps null keys
    # (model_version, class) matching without null-safe join conditions.
    by_bin = F.map_from_entries(
        F.collect_list(
            F.struct(
                F.col(stats.BIN),
                F.struct(
                    stats.N,
                    stats.SUM_WEIGHT,
                    stats.SUM_WEIGHT_CONFIDENCE,
                    stats.SUM_WEIGHT_OUTCOME,
                    stats.SUM_WEIGHT_SQ,
                    BIN_LOWER,
                    BIN_UPPER,
                ),
            )
        )
    )
    filled = per_bin.groupBy(*stats.KEY_COLUMNS).agg(by_bin.alias("_by_bin"))
    every_bin = F.transform(
        F.sequence(F.lit(0), F.lit(n_bins - 1)),
        lambda b: F.struct(b.alias("bin"), F.try_element_at(F.col("_by_bin"), b).alias("_s")),
    )
    exploded = filled.select(*stats.KEY_COLUMNS, F.inline(every_bin))
    weight = F.coalesce(F.col("_s." + stats.SUM_WEIGHT), F.lit(0.0))
    # A weight sum that overflowed to ∞ gives no mean (∞/∞ is NaN): null, as for an empty bin.
    divisor = F.when(weight < F.lit(float("inf")), weight)
    mean_confidence = F.try_divide(F.col("_s." + stats.SUM_WEIGHT_CONFIDENCE), divisor)
    accuracy = F.try_divide(F.col("_s." + stats.SUM_WEIGHT_OUTCOME), divisor)
    return exploded.select(
        *stats.KEY_COLUMNS,
        F.col("bin").cast("int").alias("bin"),
        _edge(BIN_LOWER, bin_lower(F.col("bin"), n_bins), uniform).alias("bin_lower"),
        _edge(BIN_UPPER, bin_upper(F.col("bin"), n_bins), uniform).alias("bin_upper"),
        F.coalesce(F.col("_s." + stats.N), F.lit(0)).cast("long").alias("n"),
        weight.alias("weight_sum"),
        mean_confidence.alias("mean_confidence"),
        accuracy.alias("accuracy"),
        (accuracy - mean_confidence).alias("gap"),
        *_wilson(accuracy, weight, F.col("_s." + stats.SUM_WEIGHT_SQ), cfg),
    )


def _wilson(rate: Column, weight: Column, weight_sq: Column, cfg: Config) -> list[Column]:
    """n_eff, ci_lower and ci_upper of a bin (see the module docstring)."""
    n_eff = F.try_divide(weight * weight, weight_sq)
    if cfg.uncertainty.method == "none":
        none = F.lit(None).cast("double")
        return [n_eff.alias("n_eff"), none.alias("ci_lower"), none.alias("ci_upper")]
    z2 = normal_quantile(cfg.uncertainty.level) ** 2
    shrink = 1.0 + z2 / n_eff
    centre = (rate + z2 / (2.0 * n_eff)) / shrink
    spread = F.greatest(rate * (1.0 - rate), F.lit(0.0)) / n_eff + z2 / (4.0 * n_eff * n_eff)
    half = F.lit(z2**0.5) / shrink * F.sqrt(spread)
    return [
        n_eff.alias("n_eff"),
        F.greatest(centre - half, F.lit(0.0)).alias("ci_lower"),
        F.least(centre + half, F.lit(1.0)).alias("ci_upper"),
    ]


def _edge(name: str, uniform_edge: Column, uniform: bool) -> Column:
    """A bin edge: b/M-style for uniform bins, the cells' edge for equal-mass bins (null for
    an equal-mass bin no cell fell in)."""
    return uniform_edge if uniform else F.col("_s." + name)
