"""The fine cells of a binary score: a fixed, versioned grid finer than the calibration bins.

Grid ``CELL_GRID_VERSION`` = 1 is the union of two partitions of [0, 1]:

- equal-width cells [k/1000, (k+1)/1000), k = 0..999 (the last also holds 1.0), placed by
  ``bin_index`` (exact double edges);
- log-odds cells of width 1/16 on z = logit(s) = log(s) − log(1 − s): cell j = floor(16·z) + 257
  for −16 ≤ z < 16 (j = 1..512), j = 0 below (s < σ(−16) ≈ 1.1e-7, s = 0 included) and j = 513
  at or above (s ≥ σ(16), s = 1 included).

A union cell is the intersection of one cell of each, so its id is the pair:
``cell = 514·k + j``. Both indices grow with s, so ids order the cells by score; at most
1000 + 514 − 1 = 1,513 ids are non-empty per key. The equal-width half keeps every k/1000 edge
(and so resolves mid-range scores to 0.001); the log-odds half resolves the tails, where
warehouse scores (click, fraud: s ≈ 0.01) and saturated confidences live, to 1/16 in log-odds,
which is about 6% of s near 0.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_calib.rows.binning import bin_index

CELL_GRID_VERSION = 1
EQUAL_WIDTH_CELLS = 1000
LOG_ODDS_STEP = 16  # cells per unit of log-odds
LOG_ODDS_LIMIT = 16  # |z| beyond which the two saturated cells start
LOG_ODDS_CELLS = 2 * LOG_ODDS_LIMIT * LOG_ODDS_STEP + 2  # 514, with the two saturated cells
MAX_CELLS_PER_KEY = EQUAL_WIDTH_CELLS + LOG_ODDS_CELLS - 1
# logit(s) is clipped here for the Σw·z sum, so s = 0 and s = 1 stay finite (|logit| of the
# doubles next to 0 and 1 is below 37).
LOGIT_CLIP = 37.0


def logit(score: Column) -> Column:
    """log(s) − log(1 − s), clipped to ±``LOGIT_CLIP`` (s = 0 and s = 1 included)."""
    raw = F.log(score) - F.log1p(-score)
    return (
        F.when(score <= 0.0, F.lit(-LOGIT_CLIP))
        .when(score >= 1.0, F.lit(LOGIT_CLIP))
        .otherwise(F.least(F.greatest(raw, F.lit(-LOGIT_CLIP)), F.lit(LOGIT_CLIP)))
    )


def log_odds_cell(score: Column) -> Column:
    """j ∈ 0..513: the log-odds cell of s (see the module docstring)."""
    z = logit(score)
    inner = F.floor(z * F.lit(float(LOG_ODDS_STEP))).cast("int") + (LOG_ODDS_CELLS // 2)
    return (
        F.when(z < -LOG_ODDS_LIMIT, F.lit(0))
        .when(z >= LOG_ODDS_LIMIT, F.lit(LOG_ODDS_CELLS - 1))
        .otherwise(F.least(F.greatest(inner, F.lit(1)), F.lit(LOG_ODDS_CELLS - 2)))
    )


def cell_index(score: Column) -> Column:
    """The union-grid cell id 514·k + j of s ∈ [0, 1]."""
    return bin_index(score, EQUAL_WIDTH_CELLS) * F.lit(LOG_ODDS_CELLS) + log_odds_cell(score)


def _sigmoid(z: Column) -> Column:
    return 1.0 / (1.0 + F.exp(-z))


def cell_lower(cell: Column) -> Column:
    """The cell's lower edge: max(k/1000, σ((j − 257)/16)) (0 for j = 0)."""
    k = F.floor(cell / F.lit(LOG_ODDS_CELLS))
    j = cell % F.lit(LOG_ODDS_CELLS)
    log_odds = F.when(j == 0, F.lit(0.0)).otherwise(
        _sigmoid((j - (LOG_ODDS_CELLS // 2)).cast("double") / F.lit(float(LOG_ODDS_STEP)))
    )
    return F.greatest(k.cast("double") / F.lit(float(EQUAL_WIDTH_CELLS)), log_odds)


def cell_upper(cell: Column) -> Column:
    """The cell's upper edge: min((k + 1)/1000, σ((j − 256)/16)) (1 for j = 513)."""
    k = F.floor(cell / F.lit(LOG_ODDS_CELLS))
    j = cell % F.lit(LOG_ODDS_CELLS)
    log_odds = F.when(j == LOG_ODDS_CELLS - 1, F.lit(1.0)).otherwise(
        _sigmoid((j - (LOG_ODDS_CELLS // 2 - 1)).cast("double") / F.lit(float(LOG_ODDS_STEP)))
    )
    return F.least((k + 1).cast("double") / F.lit(float(EQUAL_WIDTH_CELLS)), log_odds)
