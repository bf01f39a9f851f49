"""The calibration bins of every key, as ``binning.strategy`` defines them.

- ``uniform``: the statistics' own bins b = 0..M−1, edges b/M and (b+1)/M.
- ``equal_mass``: per key (top-label keys of a binary task, class null), the fine cells in score
  order are merged into M bins of about equal weight: cell c goes to bin
  min(M − 1, ⌊M·(W_{<c} + W_c/2)/W⌋), W_{<c} the weight of the cells before it. A bin's edges are
  its first cell's lower and its last cell's upper edge. A bin can only be as fine as a cell, so
  its weight may miss W/M by up to one cell's weight; a bin that no cell's midpoint falls in is
  absent. Per-class keys have no cells and no equal-mass bins.

Output columns: the statistics' key columns, ``bin``, ``bin_lower``, ``bin_upper``, n and the
calibration sums (``BIN_SUMS``), valid rows only. Uniform bins keep the rows without a bin
(regression without σ) under a null ``bin``, so per-key totals such as ``count`` see them.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.rows.binning import bin_lower, bin_upper
from spark_calib.rows.cells import cell_lower, cell_upper
from spark_calib.stats import schema as stats

BIN_LOWER = "bin_lower"
BIN_UPPER = "bin_upper"
BIN_SUMS = (
    stats.SUM_WEIGHT,
    stats.SUM_WEIGHT_CONFIDENCE,
    stats.SUM_WEIGHT_OUTCOME,
    stats.SUM_WEIGHT_CORRECT,
    stats.SUM_WEIGHT_BRIER,
    stats.SUM_WEIGHT_NLL,
    stats.SUM_WEIGHT_COST,
    stats.SUM_WEIGHT_SQ,
    stats.SUM_WEIGHT_CONFIDENCE_SQ,
    stats.SUM_WEIGHT_CONFIDENCE_OUTCOME,
    stats.SUM_WEIGHT_SQ_SPIEGELHALTER,
    stats.SUM_WEIGHT_SQ_OUTCOME,
    stats.SUM_WEIGHT_SQ_CONFIDENCE,
    stats.SUM_WEIGHT_SQ_CONFIDENCE_SQ,
    stats.SUM_WEIGHT_SQ_CONFIDENCE_OUTCOME,
    stats.SUM_WEIGHT_SQ_CORRECT,
    stats.SUM_WEIGHT_SQ_BRIER,
    stats.SUM_WEIGHT_SQ_BRIER_SQ,
    stats.SUM_WEIGHT_SQ_NLL,
    stats.SUM_WEIGHT_SQ_NLL_SQ,
)


def calibration_bins(stats_df: DataFrame, config: Config) -> DataFrame:
    """One row per key and non-empty bin (see the module docstring)."""
    valid = stats_df.where(F.col(stats.REASON).isNull())
    if config.binning.strategy == "equal_mass":
        return _equal_mass(valid, config.binning.n_bins)
    n_bins = config.binning.n_bins
    return (
        valid.groupBy(*stats.KEY_COLUMNS, stats.BIN)
        .agg(*_sums())
        .select(
            *stats.KEY_COLUMNS,
            stats.BIN,
            bin_lower(F.col(stats.BIN), n_bins).alias(BIN_LOWER),
            bin_upper(F.col(stats.BIN), n_bins).alias(BIN_UPPER),
            stats.N,
            *BIN_SUMS,
        )
    )


def _sums() -> list:
    return [F.sum(name).alias(name) for name in (stats.N, *BIN_SUMS)]


def _equal_mass(valid: DataFrame, n_bins: int) -> DataFrame:
    cells = (
        valid.where(F.col(stats.CLASS).isNull() & F.col(stats.CELL).isNotNull())
        .groupBy(*stats.KEY_COLUMNS, stats.CELL)
        .agg(*_sums())
        .where(F.col(stats.SUM_WEIGHT) > 0.0)
    )
    key = Window.partitionBy(*stats.KEY_COLUMNS)
    up = key.orderBy(stats.CELL).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    weight = F.col(stats.SUM_WEIGHT)
    midpoint = (F.sum(weight).over(up) - 0.5 * weight) / F.sum(weight).over(key)
    placed = cells.withColumn(
        stats.BIN, F.least(F.floor(midpoint * F.lit(float(n_bins))), F.lit(n_bins - 1)).cast("int")
    )
    return (
        placed.groupBy(*stats.KEY_COLUMNS, stats.BIN)
        .agg(
            F.min(cell_lower(F.col(stats.CELL))).alias(BIN_LOWER),
            F.max(cell_upper(F.col(stats.CELL))).alias(BIN_UPPER),
            *_sums(),
        )
        .select(*stats.KEY_COLUMNS, stats.BIN, BIN_LOWER, BIN_UPPER, stats.N, *BIN_SUMS)
    )
