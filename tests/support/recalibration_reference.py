"""Independent references for recalibration: SciPy's bounded scalar search for T,
scikit-learn's unpenalised logistic regression for Platt and ``IsotonicRegression`` for PAV, and
a NumPy row-by-row recomputation of the metrics after a map (the "second pass")."""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.optimize import minimize_scalar
from scipy.special import expit, log_expit
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from tests.support.calibration_reference import cell_ids, uniform_bins

FloatArray = NDArray[np.float64]


def logit(s: FloatArray) -> FloatArray:
    """log(s) − log(1 − s), clipped to ±37 as the engine's cells."""
    with np.errstate(divide="ignore"):
        z = np.log(s) - np.log1p(-s)
    return np.clip(z, -37.0, 37.0)


def exact_temperature(z: FloatArray, y: FloatArray, w: FloatArray) -> float:
    """argmin over T ∈ [0.05, 20] of Σ w·(−log p_y) with p = σ(z/T) (bounded Brent)."""

    def nll(t: float) -> float:
        u = z / t
        return float(-np.sum(w * (y * log_expit(u) + (1 - y) * log_expit(-u))))

    found = minimize_scalar(nll, bounds=(0.05, 20.0), method="bounded", options={"xatol": 1e-12})
    return float(found.x)


def cell_points(s: FloatArray, y: FloatArray, w: FloatArray) -> tuple[FloatArray, ...]:
    """Per non-empty fine cell, in score order: (cell id, mean logit, Σw, Σw·y)."""
    cells, inverse = np.unique(cell_ids(s), return_inverse=True)
    weight = np.bincount(inverse, weights=w)
    mean_z = np.bincount(inverse, weights=w * logit(s)) / weight
    positive = np.bincount(inverse, weights=w * y)
    return cells, mean_z, weight, positive


def cell_temperature(s: FloatArray, y: FloatArray, w: FloatArray) -> float:
    """The same bounded search on the pseudo-observations of the cells split by label (each
    label's weight placed at its own mean logit in the cell)."""
    key = cell_ids(s) * 2 + y.astype(np.int64)
    pairs, inverse = np.unique(key, return_inverse=True)
    weight = np.bincount(inverse, weights=w)
    z = np.bincount(inverse, weights=w * logit(s)) / weight
    return exact_temperature(z, (pairs % 2).astype(float), weight)


def platt(z: FloatArray, y: FloatArray, w: FloatArray) -> tuple[float, float]:
    """(a, b) of scikit-learn's unpenalised weighted logistic regression of y on z."""
    fit = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000)
    fit.fit(z.reshape(-1, 1), y, sample_weight=w)
    return float(fit.intercept_[0]), float(fit.coef_[0][0])


def isotonic_at_cells(s: FloatArray, y: FloatArray, w: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(cell ids, scikit-learn's weighted isotonic fit of the cells' rates on their order)."""
    cells, _, weight, positive = cell_points(s, y, w)
    fitted = IsotonicRegression().fit_transform(
        np.arange(len(cells), dtype=float), positive / weight, sample_weight=weight
    )
    return cells, fitted


def scores(
    p: FloatArray, y: FloatArray, w: FloatArray, threshold: float = 0.5, n_bins: int = 15
) -> dict[str, float]:
    """ECE (15 equal-width left-closed bins), NLL, Brier and accuracy of probabilities p, row
    by row; NLL with p clipped to [1e-15, 1 − 1e-15]."""
    total = np.sum(w)
    bins = uniform_bins(p, n_bins)
    gap = np.bincount(bins, weights=w * (y - p), minlength=n_bins)
    clipped = np.clip(np.where(y == 1, p, 1 - p), 1e-15, None)
    correct = ((p >= threshold).astype(float) == y).astype(float)
    return {
        "ece": float(np.sum(np.abs(gap)) / total),
        "nll": float(-np.sum(w * np.log(clipped)) / total),
        "brier": float(np.sum(w * (p - y) ** 2) / total),
        "accuracy": float(np.sum(w * correct) / total),
    }


def logistic_nll(u: FloatArray, y: FloatArray, w: FloatArray) -> float:
    """Σ w·(−log p_y)/Σw with p = σ(u), exact (no clipping)."""
    return float(-np.sum(w * (y * log_expit(u) + (1 - y) * log_expit(-u))) / np.sum(w))


def sigmoid(u: FloatArray) -> FloatArray:
    """σ(u)."""
    return np.asarray(expit(u), dtype=np.float64)


def reliability(
    p: FloatArray, y: FloatArray, w: FloatArray, n_bins: int = 15
) -> list[tuple[int, float, float, float]]:
    """(bin, Σw, Σw·p/Σw, Σw·y/Σw) of each non-empty equal-width left-closed bin, row by row."""
    bins = uniform_bins(p, n_bins)
    weight = np.bincount(bins, weights=w, minlength=n_bins)
    confidence = np.bincount(bins, weights=w * p, minlength=n_bins)
    outcome = np.bincount(bins, weights=w * y, minlength=n_bins)
    return [
        (int(b), float(weight[b]), float(confidence[b] / weight[b]), float(outcome[b] / weight[b]))
        for b in np.flatnonzero(weight > 0)
    ]


def table_row(table: pd.DataFrame, version: str, value: str, method: str) -> pd.Series:
    """The one row of a recalibration table (as pandas) for a version, slice value and method."""
    match = table[
        (table.model_version == version) & (table.slice_value == value) & (table.method == method)
    ]
    assert len(match) == 1
    return match.iloc[0]


def isotonic_at_rows(row: pd.Series, s: FloatArray) -> FloatArray:
    """The table's isotonic step map at each score: the value of the last knot whose cell is
    at or before the score's fine cell (the first knot's below every knot)."""
    knot_cells = np.array([k["cell"] for k in row.knots])
    knot_values = np.array([k["value"] for k in row.knots])
    index = np.clip(np.searchsorted(knot_cells, cell_ids(s), side="right") - 1, 0, None)
    mapped: FloatArray = knot_values[index]
    return mapped
