"""The binned ranking family of one key (roc_auc_binned, pr_auc_binned) from its score histogram.

Histogram: the fine cells b of the binary score s (grid ``CELL_GRID_VERSION``: the union of the
k/1000 and the log-odds 1/16 grids, whose ids order the cells by score), from the key's
top-label statistics rows (class null) that have a cell, summed per cell over every other key
(bin, predicted class, threshold count, true class, recalibration fit). Per row, the positive
weight is W⁺ = Σw·y (``sum_weight_positive``) and the negative weight W⁻ = Σw − W⁺, each exactly
0 when the row's counts say it has no such label (n_positive = 0, or n_positive = n), so that a
cell of one label has no rounding residue on the other side. Per cell b: W⁺_b, W⁻_b, n_b;
P = Σ W⁺_b, N = Σ W⁻_b, TP_{≥b} = Σ_{b' ≥ b} W⁺_{b'}, FP_{≥b} likewise, TP_{>b} = TP_{≥b} − W⁺_b.

- roc_auc_binned = Σ_b W⁻_b (TP_{>b} + ½ W⁺_b) / (P N): the exact AUC of the scores replaced by
  their cell (pairs in one cell count as ties). |error| ≤ ½ Σ_b W⁺_b W⁻_b / (P N).
- pr_auc_binned = Σ_b (W⁺_b / P) · π_b: average precision, π_b the mean precision of cell b's
  positives. A cell whose scores are all equal is one tie, and scikit-learn's average precision
  counts a tie's positives at the precision below it: π_b = TP_{≥b} / (TP_{≥b} + FP_{≥b}). A
  cell of distinct scores is walked with its labels spread evenly (Davis and Goadrich's
  interpolation): with A = TP_{>b}, B = TP_{>b} + FP_{>b}, m = W⁺_b and k = W⁺_b + W⁻_b,
  π_b = ∫₀¹ (A + m·x)/(B + k·x) dx = (A/B)·L + (m/k)·(1 − L), L = ln(1 + k/B)/(k/B) (L = 0 and
  A/B = 0 when B ≤ 0). A cell is a tie when its variance Σw·c²/W − (Σw·c/W)² ≤
  ``TIE_VARIANCE``·(Σw·c/W)², c the calibration probability (s, or 1 − s below ½: the same
  spread within a cell), W = Σw; the rounding of a true tie's sums stays orders of magnitude
  below that. A cell without those sums (null) or without weight counts as a tie.
  |error| ≤ Σ_b (W⁺_b / P)(hi_b − lo_b), hi_b = TP_{≥b}/(TP_{≥b} + FP_{>b}), lo_b = TP_{>b}/
  (TP_{>b} + FP_{≥b}) (1 when FP_{≥b} = 0: no negative at or above the cell; each 0 when its
  denominator is 0): every positive's precision lies in [lo_b, hi_b] whatever the order in the
  cell, and so does either π_b. Cells without positive weight (W⁺_b ≤ 0) add nothing to either
  sum.
- Both are null when P = 0; roc_auc_binned also when N = 0 (NaN here). Each row's
  ``error_bound`` is its bound above, of the point estimate; ``n`` is Σ n_b and ``weight_sum``
  P + N. No analytic standard error (``se`` NaN); the jackknife's replicates are the same
  formulas over the statistics without one bucket. A key without cell rows has no rows.
"""

from __future__ import annotations

import numpy as np

from spark_calib.kernels.arrow_batch import KeyRows, Rows, floats, ints, is_null, select
from spark_calib.kernels.estimates import Estimates
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.replicates import replicated
from spark_calib.registry.metrics import CELLS
from spark_calib.stats import schema as stats

# Relative score variance at or below which a cell counts as one tie (``pr_auc_binned``).
TIE_VARIANCE = 1e-9

# The per-row terms summed per cell (private names of the derived table given to ``replicated``).
_POSITIVE = "_pos"
_NEGATIVE = "_neg"
_WEIGHT = "_w"
_FIRST = "_c"
_SECOND = "_q"
_TERMS = (_POSITIVE, _NEGATIVE, _WEIGHT, _FIRST, _SECOND)

ROC_AUC_BINNED = "roc_auc_binned"
PR_AUC_BINNED = "pr_auc_binned"


def ranking_estimates(table: Rows, plan: FinishPlan) -> Estimates | None:
    """roc_auc_binned and pr_auc_binned (those requested, in the plan's order) of one key's
    valid statistics rows; None when the plan requests neither or the key has no cell rows."""
    names = plan.names(CELLS)
    if not names:
        return None
    histogram = cell_histogram(table, plan)
    if histogram is None:
        return None
    n, terms = histogram
    values, bounds, positive, negative = _auc(terms)
    point_n = int(n[0].sum())
    weight_sum = float(positive[0] + negative[0])
    return Estimates(
        classes=[None] * len(names),
        metrics=list(names),
        values=np.stack([values[name] for name in names], axis=1),
        n=np.full(len(names), point_n, dtype=np.int64),
        weight_sum=np.full(len(names), weight_sum),
        se=np.full(len(names), np.nan),
        error_bound=np.array([bounds[name][0] for name in names], dtype=float),
        noise=np.ones(len(names), dtype=bool),
    )


def cell_histogram(
    table: Rows, plan: FinishPlan
) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """n_b and the per-cell sums W⁺_b, W⁻_b, W_b = Σw, Σw·c, Σw·c², each of shape (R, cells)
    with the cells in ascending id (so score) order: R the point estimate then the G
    leave-one-bucket-out replicates. None when the key has no top-label row with a cell."""
    top = is_null(table, stats.CLASS)
    cell = ints(table, stats.CELL, -1)
    # Cell ids are never negative: -1 is a null cell.
    kept = select(table, top & (cell >= 0))
    if kept.num_rows == 0:
        return None
    n = ints(kept, stats.N, 0)
    # A null n_positive (-1) is neither 0 nor n: the sums are then used as they are.
    positives = ints(kept, stats.N_POSITIVE, -1)
    weight = floats(kept, stats.SUM_WEIGHT)
    positive_weight = floats(kept, stats.SUM_WEIGHT_POSITIVE)
    rows = KeyRows.arrays(
        {
            stats.N: n,
            # A null bucket reads as -1, as ``replicated`` reads it.
            stats.BUCKET: ints(kept, stats.BUCKET, -1),
            _POSITIVE: np.where(positives == 0, 0.0, positive_weight),
            _NEGATIVE: np.where(positives == n, 0.0, weight - positive_weight),
            _WEIGHT: weight,
            _FIRST: floats(kept, stats.SUM_WEIGHT_CONFIDENCE),
            _SECOND: floats(kept, stats.SUM_WEIGHT_CONFIDENCE_SQ),
        }
    )
    cells, index = np.unique(ints(kept, stats.CELL, -1), return_inverse=True)
    return replicated(rows, plan, (index.ravel(),), (cells.size,), _TERMS)


def _div(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator/denominator, NaN where the denominator is 0 (Spark's try_divide)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            denominator != 0.0, numerator / np.where(denominator != 0.0, denominator, 1.0), np.nan
        )


def _or_zero(values: np.ndarray) -> np.ndarray:
    """``values`` with 0 for NaN (a quotient over 0: Spark's coalesce of try_divide)."""
    return np.where(np.isnan(values), 0.0, values)


def _is_tie(weight: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Σw·c²/W − (Σw·c/W)² ≤ ``TIE_VARIANCE``·(Σw·c/W)²; true when W = 0 or a sum is null."""
    mean = _div(first, weight)
    spread = _div(second, weight) - mean * mean
    undefined = np.isnan(mean) | np.isnan(spread)
    with np.errstate(invalid="ignore"):
        return undefined | (spread <= TIE_VARIANCE * mean * mean)


def _cell_precision(
    tie: np.ndarray, tp: np.ndarray, fp: np.ndarray, positives: np.ndarray, negatives: np.ndarray
) -> np.ndarray:
    """π_b (see the module docstring) from TP_{≥b}, FP_{≥b}, W⁺_b and W⁻_b."""
    at_bottom = _div(tp, tp + fp)
    above = (tp - positives) + (fp - negatives)  # B
    size = positives + negatives  # k
    ratio = _div(size, above)
    with np.errstate(invalid="ignore", divide="ignore"):
        mixing = np.where(above > 0.0, _div(np.log1p(ratio), ratio), 0.0)  # L
    before = np.where(above > 0.0, _div(tp - positives, above), 0.0)  # A/B
    walked = before * mixing + _div(positives, size) * (1.0 - mixing)
    return np.where(tie, at_bottom, walked)


def _auc(
    terms: dict[str, np.ndarray],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Per replicate: each metric's value and bound, P and N."""
    positives, negatives = terms[_POSITIVE], terms[_NEGATIVE]
    # Running sums from the top cell down: TP_{≥b}, FP_{≥b}.
    tp = np.cumsum(positives[:, ::-1], axis=1)[:, ::-1]
    fp = np.cumsum(negatives[:, ::-1], axis=1)[:, ::-1]
    tp_above = tp - positives
    tie = _is_tie(terms[_WEIGHT], terms[_FIRST], terms[_SECOND])
    precision = _cell_precision(tie, tp, fp, positives, negatives)
    # Precision with the cell's negatives ranked below (hi) or above (lo) its positives. With
    # no negative at or above the cell, every positive in it has precision 1 (lo = hi = 1).
    hi = _or_zero(_div(tp, tp + fp - negatives))
    lo = np.where(fp == 0.0, 1.0, _or_zero(_div(tp_above, tp_above + fp)))
    with_positives = positives > 0.0
    roc = (negatives * (tp_above + 0.5 * positives)).sum(axis=1)
    ties = (positives * negatives).sum(axis=1)
    ap = np.where(with_positives, positives * precision, 0.0).sum(axis=1)
    ap_gap = np.where(with_positives, positives * (hi - lo), 0.0).sum(axis=1)
    p, n = positives.sum(axis=1), negatives.sum(axis=1)
    both = (p > 0.0) & (n > 0.0)
    pairs = np.where(both, p * n, 1.0)
    safe_p = np.where(p > 0.0, p, 1.0)
    values = {
        ROC_AUC_BINNED: np.where(both, roc / pairs, np.nan),
        PR_AUC_BINNED: np.where(p > 0.0, ap / safe_p, np.nan),
    }
    bounds = {
        ROC_AUC_BINNED: np.where(both, 0.5 * ties / pairs, np.nan),
        PR_AUC_BINNED: np.where(p > 0.0, ap_gap / safe_p, np.nan),
    }
    return values, bounds, p, n
