"""The fine-cell grid's sizes and its cell edges as numbers (``spark_calib.rows.cells``
assigns the cells to rows with Column expressions; the kernels read their edges here).

A cell id is 1186·k + j: k ∈ 0..999 the equal-width cell [k/1000, (k+1)/1000), j ∈ 0..1185 the
log-odds cell of width 1/16 on the clipped logit, j = 0 and j = 1185 the two end cells.
"""

from __future__ import annotations

import numpy as np

from spark_calib.constants import LOGIT_CLIP

EQUAL_WIDTH_CELLS = 1000
LOG_ODDS_STEP = 16  # cells per unit of log-odds
LOG_ODDS_LIMIT = int(LOGIT_CLIP)  # |z| of the two end cells, which hold the clipped logits
LOG_ODDS_CELLS = 2 * LOG_ODDS_LIMIT * LOG_ODDS_STEP + 2  # 1186, with the two end cells
MAX_CELLS_PER_KEY = EQUAL_WIDTH_CELLS + LOG_ODDS_CELLS - 1


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def cell_lower(cell: np.ndarray) -> np.ndarray:
    """The cell's lower edge: max(k/1000, σ((j − 593)/16)) (0 for j = 0)."""
    k, j = np.divmod(np.asarray(cell, dtype=np.int64), LOG_ODDS_CELLS)
    shifted = (j - LOG_ODDS_CELLS // 2).astype(float) / float(LOG_ODDS_STEP)
    log_odds = np.where(j == 0, 0.0, _sigmoid(shifted))
    return np.maximum(k.astype(float) / float(EQUAL_WIDTH_CELLS), log_odds)


def cell_upper(cell: np.ndarray) -> np.ndarray:
    """The cell's upper edge: min((k + 1)/1000, σ((j − 592)/16)) (1 for j = 1185)."""
    k, j = np.divmod(np.asarray(cell, dtype=np.int64), LOG_ODDS_CELLS)
    shifted = (j - (LOG_ODDS_CELLS // 2 - 1)).astype(float) / float(LOG_ODDS_STEP)
    log_odds = np.where(j == LOG_ODDS_CELLS - 1, 1.0, _sigmoid(shifted))
    return np.minimum((k + 1).astype(float) / float(EQUAL_WIDTH_CELLS), log_odds)


# The coarse cells of the slice search's first pass at a level (``coarse_cell``).
COARSE_EQUAL_WIDTH_STEP = 10  # equal-width cells per coarse one: 100 coarse, 0.01 wide
COARSE_LOG_ODDS_STEP = 4  # log-odds cells per coarse one: 1/4 wide in log-odds


def coarse_cell(cell: np.ndarray) -> np.ndarray:
    """The coarse cell holding a fine cell 1186·k + j, as the id of its first fine cell:
    1186·⌊k/10⌋·10 + ⌊j/4⌋·4. A coarse cell is the intersection of a 0.01-wide equal-width cell
    and a 1/4-wide log-odds one, so it is a union of fine cells contiguous in score order, and
    its id orders the coarse cells by score as fine ids do."""
    k, j = np.divmod(np.asarray(cell, dtype=np.int64), LOG_ODDS_CELLS)
    return (k // COARSE_EQUAL_WIDTH_STEP) * COARSE_EQUAL_WIDTH_STEP * LOG_ODDS_CELLS + (
        j // COARSE_LOG_ODDS_STEP
    ) * COARSE_LOG_ODDS_STEP
