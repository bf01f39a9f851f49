"""NumPy references for the positive-class calibration metrics and the fine-cell metrics,
written from their documented definitions (docs/metrics.md), independently of the engine.

Everything takes scores s, labels y ∈ {0, 1} and weights w of one group (one slice value).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from scipy.stats import chi2, norm

FloatArray = NDArray[np.float64]


def mean_prediction(s: FloatArray, w: FloatArray) -> float:
    return float(np.sum(w * s) / np.sum(w))


def mean_label(y: FloatArray, w: FloatArray) -> float:
    return float(np.sum(w * y) / np.sum(w))


def calibration_ratio(s: FloatArray, y: FloatArray, w: FloatArray) -> float | None:
    observed = float(np.sum(w * y))
    return None if observed == 0.0 else float(np.sum(w * s)) / observed


def calibration_in_the_large(s: FloatArray, y: FloatArray, w: FloatArray) -> float:
    return float((np.sum(w * s) - np.sum(w * y)) / np.sum(w))


def normalized_entropy(s: FloatArray, y: FloatArray, w: FloatArray, eps: float = 1e-15) -> float:
    p_y = np.where(y == 1, s, 1.0 - s)
    nll = -np.sum(w * np.log(np.maximum(p_y, eps))) / np.sum(w)
    base = mean_label(y, w)
    return float(nll / (-base * math.log(base) - (1 - base) * math.log(1 - base)))


def spiegelhalter(s: FloatArray, y: FloatArray, w: FloatArray) -> tuple[float, float]:
    """z = Σw(y − s)(1 − 2s) / sqrt(Σw²(1 − 2s)²s(1 − s)); two-sided p = 2·(1 − Φ(|z|))."""
    z = np.sum(w * (y - s) * (1 - 2 * s)) / np.sqrt(np.sum(w**2 * (1 - 2 * s) ** 2 * s * (1 - s)))
    return float(z), float(2 * norm.sf(abs(z)))


def uniform_bins(s: FloatArray, n_bins: int) -> NDArray[np.int64]:
    """Left-closed bins [k/M, (k+1)/M), 1.0 in the last, placed against the double edges."""
    edges = np.arange(n_bins + 1) / n_bins
    return np.clip(np.searchsorted(edges, s, side="right") - 1, 0, n_bins - 1)


def brier_decomposition(
    s: FloatArray, y: FloatArray, w: FloatArray, bins: NDArray[np.int64]
) -> dict[str, float]:
    """Murphy's reliability REL, resolution RES and uncertainty UNC, and Stephenson et al.'s
    within-bin terms WBV − WBC (so Brier = rel − res + unc + within_bin)."""
    total = np.sum(w)
    base = np.sum(w * y) / total
    rel = res = wbv = wbc = 0.0
    for b in np.unique(bins):
        m = bins == b
        wb = np.sum(w[m])
        pb = np.sum(w[m] * s[m]) / wb
        ob = np.sum(w[m] * y[m]) / wb
        rel += wb * (pb - ob) ** 2
        res += wb * (ob - base) ** 2
        wbv += np.sum(w[m] * (s[m] - pb) ** 2)
        wbc += 2 * np.sum(w[m] * (y[m] - ob) * (s[m] - pb))
    return {
        "brier_reliability": float(rel / total),
        "brier_within_bin": float((wbv - wbc) / total),
        "brier_resolution": float(res / total),
        "brier_uncertainty": float(base * (1 - base)),
    }


def ece_from_bins(s: FloatArray, y: FloatArray, w: FloatArray, bins: NDArray[np.int64]) -> float:
    gaps = [abs(np.sum(w[bins == b] * (y[bins == b] - s[bins == b]))) for b in np.unique(bins)]
    return float(np.sum(gaps) / np.sum(w))


# The documented fine-cell grid, version 2: (k, j) with k the k/1000 cell and j the log-odds
# 1/16 cell of the logit clipped to ±37 (0 and 1185 the clipped ends); ids 1186·k + j order the
# cells by score.
def cell_ids(s: FloatArray) -> NDArray[np.int64]:
    k = uniform_bins(s, 1000)
    with np.errstate(divide="ignore"):
        z = np.log(s) - np.log1p(-s)
    z = np.clip(np.nan_to_num(z, nan=0.0, posinf=37.0, neginf=-37.0), -37.0, 37.0)
    j = np.clip(np.floor(16 * z).astype(np.int64) + 593, 1, 1184)
    j = np.where(z <= -37, 0, np.where(z >= 37, 1185, j))
    return k * 1186 + j


def equal_mass_bins(s: FloatArray, w: FloatArray, n_bins: int) -> NDArray[np.int64]:
    """Each cell goes to bin min(M − 1, ⌊M·(W_before + W_cell/2)/W⌋), in cell order."""
    cells = cell_ids(s)
    _, inverse = np.unique(cells, return_inverse=True)
    weight = np.bincount(inverse, weights=w)
    before = np.cumsum(weight) - weight
    cell_bin = np.minimum(np.floor(n_bins * (before + weight / 2) / np.sum(w)), n_bins - 1)
    return cell_bin.astype(np.int64)[inverse]


def exact_equal_mass_ece(s: FloatArray, y: FloatArray, n_bins: int) -> float:
    """Unweighted equal-count ECE on the sorted rows (np.array_split into M parts)."""
    order = np.argsort(s, kind="stable")
    parts = np.array_split(order, n_bins)
    return float(sum(abs(np.sum(y[p] - s[p])) for p in parts) / len(s))


def ks_at_cells(s: FloatArray, y: FloatArray, w: FloatArray) -> tuple[float, float, float]:
    """(KS at the cells' upper edges, its bound max_c Σ_c w|s − y| / W, KS over every row)."""
    total = np.sum(w)
    cells = cell_ids(s)
    _, inverse = np.unique(cells, return_inverse=True)
    per_cell = np.bincount(inverse, weights=w * (s - y))
    at_cells = np.max(np.abs(np.cumsum(per_cell))) / total
    bound = np.max(np.bincount(inverse, weights=w * np.abs(s - y))) / total
    order = np.argsort(s, kind="stable")
    every_row = np.max(np.abs(np.cumsum((w * (s - y))[order]))) / total
    return float(at_cells), float(bound), float(every_row)


def hosmer_lemeshow_cells(s: FloatArray, y: FloatArray, w: FloatArray) -> tuple[float, float]:
    """HL on 10 equal-mass groups of cells (χ² with 8 degrees of freedom)."""
    groups = equal_mass_bins(s, w, 10)
    total = 0.0
    for g in np.unique(groups):
        m = groups == g
        e, o, n = np.sum(w[m] * s[m]), np.sum(w[m] * y[m]), np.sum(w[m])
        total += (o - e) ** 2 / (e * (1 - e / n))
    return float(total), float(chi2.sf(total, 8))
