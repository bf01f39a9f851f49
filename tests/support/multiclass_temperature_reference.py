"""Independent references for multiclass temperature scaling, row by row in NumPy/SciPy: the
exact minimiser of the weighted NLL of softmax(z/T) (SciPy's bounded scalar search), the
top-label metrics of the scaled probabilities, and the exact Newton step at a temperature."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax, logsumexp

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def weighted_nll(z: FloatArray, y: IntArray, w: FloatArray, temperature: float) -> float:
    """Σ w·(logsumexp(z/T) − z_y/T)."""
    u = z / temperature
    return float(np.sum(w * (logsumexp(u, axis=1) - u[np.arange(len(y)), y])))


def exact_temperature(z: FloatArray, y: IntArray, w: FloatArray) -> float:
    """argmin over T ∈ [0.05, 20] of the weighted NLL (bounded Brent, xatol 1e-12)."""
    found = minimize_scalar(
        lambda t: weighted_nll(z, y, w, t),
        bounds=(0.05, 20.0),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return float(found.x)


def scaled_scores(
    z: FloatArray, y: IntArray, w: FloatArray, temperature: float, n_bins: int, edges: str
) -> dict[str, float]:
    """ECE (top-label, ``n_bins`` equal-width bins with ``edges``), NLL, Brier and accuracy of
    softmax(z/T), weighted."""
    log_p = log_softmax(z / temperature, axis=1)
    p = np.exp(log_p)
    rows = np.arange(len(y))
    confidence = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(float)
    if edges == "left_closed":
        bins = np.floor(confidence * n_bins)
    else:
        bins = np.ceil(confidence * n_bins) - 1
    bins = np.clip(bins, 0, n_bins - 1).astype(int)
    gap = np.bincount(bins, w * (correct - confidence), minlength=n_bins)
    onehot = np.zeros_like(p)
    onehot[rows, y] = 1.0
    total = w.sum()
    return {
        "ece": float(np.abs(gap).sum() / total),
        "nll": float(np.sum(-w * log_p[rows, y]) / total),
        "brier": float(np.sum(w * ((p - onehot) ** 2).sum(axis=1)) / total),
        "accuracy": float(np.sum(w * correct) / total),
    }


def scaled_bins(
    z: FloatArray, y: IntArray, w: FloatArray, temperature: float, n_bins: int
) -> list[tuple[int, float, float, float]]:
    """(bin, Σw, mean confidence, accuracy) of the non-empty left-closed top-label bins of
    softmax(z/T), weighted."""
    p = np.exp(log_softmax(z / temperature, axis=1))
    confidence = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(float)
    bins = np.clip(np.floor(confidence * n_bins), 0, n_bins - 1).astype(int)
    weight = np.bincount(bins, w, minlength=n_bins)
    mean = np.bincount(bins, w * confidence, minlength=n_bins)
    hits = np.bincount(bins, w * correct, minlength=n_bins)
    return [
        (int(b), float(weight[b]), float(mean[b] / weight[b]), float(hits[b] / weight[b]))
        for b in np.flatnonzero(weight > 0)
    ]
