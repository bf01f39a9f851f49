"""The fine cells of a binary score: a fixed, versioned grid finer than the calibration bins.

Grid ``CELL_GRID_VERSION`` = 2 is the union of two partitions of [0, 1]:

- equal-width cells [k/1000, (k+1)/1000), k = 0..999 (the last also holds 1.0), placed by
  ``bin_index`` (exact double edges);
- log-odds cells of width 1/16 on z = logit(s) = log(s) − log(1 − s), clipped to ±37
  (``logit``): cell j = floor(16·z) + 593 for −37 < z < 37 (j = 1..1184), j = 0 at z = −37
  (s ≤ σ(−37) ≈ 8.5e-17, s = 0 included) and j = 1185 at z = 37 (s ≥ σ(37), s = 1 included).

A union cell is the intersection of one cell of each, so its id is the pair:
``cell = 1186·k + j``. Both indices grow with s, so ids order the cells by score; at most
1000 + 1186 − 1 = 2,185 ids are non-empty per key. The equal-width half keeps every k/1000 edge
(and so resolves mid-range scores to 0.001); the log-odds half resolves the tails, where
warehouse scores (click, fraud: s ≈ 0.01) and saturated confidences live, to 1/16 in log-odds,
which is about 6% of s near 0 (and of 1 − s near 1). Every cell is at most 1/16 wide in the
clipped logit, and the two end cells hold a single clipped value each, so a cell's mean logit
represents its rows to O(1/16²) (grid version 1 stopped at ±16: its end cells were 21 wide in
log-odds and held 30% of a CIFAR ResNet's top-label confidences).
"""

from __future__ import annotations

from typing import TypeVar

from pyspark.sql import Column
from pyspark.sql import functions as F

from spark_calib.constants import LOGIT_CLIP
from spark_calib.kernels.cell_grid import (
    COARSE_EQUAL_WIDTH_STEP,
    COARSE_LOG_ODDS_STEP,
    EQUAL_WIDTH_CELLS,
    LOG_ODDS_CELLS,
    LOG_ODDS_LIMIT,
    LOG_ODDS_STEP,
    MAX_CELLS_PER_KEY,
)
from spark_calib.rows.binning import bin_index
from spark_calib.rows.internal_sql import Sql, functions_for

E = TypeVar("E", Column, Sql)

__all__ = [
    "EQUAL_WIDTH_CELLS",
    "LOG_ODDS_CELLS",
    "LOG_ODDS_LIMIT",
    "LOG_ODDS_STEP",
    "MAX_CELLS_PER_KEY",
    "cell_index",
    "cell_lower",
    "cell_upper",
    "coarse_cell",
    "log_odds_cell",
    "logit",
]


def logit(score: E) -> E:
    """log(s) − log(1 − s), clipped to ±``LOGIT_CLIP`` (s = 0 and s = 1 included)."""
    F = functions_for(score)
    raw = F.log(score) - F.log1p(-score)
    return (
        F.when(score <= 0.0, F.lit(-LOGIT_CLIP))
        .when(score >= 1.0, F.lit(LOGIT_CLIP))
        .otherwise(F.least(F.greatest(raw, F.lit(-LOGIT_CLIP)), F.lit(LOGIT_CLIP)))
    )


def log_odds_cell(score: E) -> E:
    """j ∈ 0..1185: the log-odds cell of s (see the module docstring)."""
    F = functions_for(score)
    z = logit(score)
    inner = F.floor(z * F.lit(float(LOG_ODDS_STEP))).cast("int") + (LOG_ODDS_CELLS // 2)
    return (
        F.when(z <= -LOG_ODDS_LIMIT, F.lit(0))
        .when(z >= LOG_ODDS_LIMIT, F.lit(LOG_ODDS_CELLS - 1))
        .otherwise(F.least(F.greatest(inner, F.lit(1)), F.lit(LOG_ODDS_CELLS - 2)))
    )


def cell_index(score: E) -> E:
    """The union-grid cell id 1186·k + j of s ∈ [0, 1] (a Column or internal SQL, as s)."""
    F = functions_for(score)
    return bin_index(score, EQUAL_WIDTH_CELLS) * F.lit(LOG_ODDS_CELLS) + log_odds_cell(score)


def coarse_cell(cell: Column) -> Column:
    """The coarse cell of a fine cell id, as the id of its first fine cell (the NumPy
    ``spark_calib.kernels.cell_grid.coarse_cell`` gives the formula)."""
    k = F.floor(cell / F.lit(LOG_ODDS_CELLS))
    j = cell % F.lit(LOG_ODDS_CELLS)
    equal_width = F.floor(k / F.lit(COARSE_EQUAL_WIDTH_STEP)) * F.lit(
        COARSE_EQUAL_WIDTH_STEP * LOG_ODDS_CELLS
    )
    log_odds = F.floor(j / F.lit(COARSE_LOG_ODDS_STEP)) * F.lit(COARSE_LOG_ODDS_STEP)
    return (equal_width + log_odds).cast("int")


def _sigmoid(z: Column) -> Column:
    return 1.0 / (1.0 + F.exp(-z))


def cell_lower(cell: Column) -> Column:
    """The cell's lower edge: max(k/1000, σ((j − 593)/16)) (0 for j = 0)."""
    k = F.floor(cell / F.lit(LOG_ODDS_CELLS))
    j = cell % F.lit(LOG_ODDS_CELLS)
    log_odds = F.when(j == 0, F.lit(0.0)).otherwise(
        _sigmoid((j - (LOG_ODDS_CELLS // 2)).cast("double") / F.lit(float(LOG_ODDS_STEP)))
    )
    return F.greatest(k.cast("double") / F.lit(float(EQUAL_WIDTH_CELLS)), log_odds)


def cell_upper(cell: Column) -> Column:
    """The cell's upper edge: min((k + 1)/1000, σ((j − 592)/16)) (1 for j = 1185)."""
    k = F.floor(cell / F.lit(LOG_ODDS_CELLS))
    j = cell % F.lit(LOG_ODDS_CELLS)
    log_odds = F.when(j == LOG_ODDS_CELLS - 1, F.lit(1.0)).otherwise(
        _sigmoid((j - (LOG_ODDS_CELLS // 2 - 1)).cast("double") / F.lit(float(LOG_ODDS_STEP)))
    )
    return F.least((k + 1).cast("double") / F.lit(float(EQUAL_WIDTH_CELLS)), log_odds)
