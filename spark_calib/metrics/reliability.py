"""Statistics → the ``reliability`` table (reliability diagrams), every bin of every key.

For bin b of M (``spark_calib.metrics.bins``): bin_lower and bin_upper (b/M and (b+1)/M for
uniform bins; the cells' edges for equal-mass bins, null for an empty one), n, weight_sum = W_b,
mean_confidence = Σw·c / W_b, accuracy = Σw·o / W_b (the observed rate: of y = 1 for a binary
task's positive-class view, of correct answers for top-label views, of the class for per-class
rows) and gap = accuracy − mean_confidence (positive: under-confident).
Empty bins have n = 0, weight_sum = 0 and null means.

Output columns: model_version, slice_name, slice_value, class, bin, bin_lower, bin_upper, n,
weight_sum, mean_confidence, accuracy, gap.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import ConfigSource, load_config
from spark_calib.metrics.bins import BIN_LOWER, BIN_UPPER, calibration_bins
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
    )


def _edge(name: str, uniform_edge: Column, uniform: bool) -> Column:
    """A bin edge: b/M-style for uniform bins, the cells' edge for equal-mass bins (null for
    an equal-mass bin no cell fell in)."""
    return uniform_edge if uniform else F.col("_s." + name)
