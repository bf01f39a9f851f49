"""NumPy references for the uncertainty columns, written from docs/uncertainty.md and the
research notes, independently of the engine: Kumar et al.'s debiased L1 ECE (closed form and
their Monte Carlo), the null-expected ECE, the weighted debiased RMSCE, and a brute-force
leave-one-bucket-out jackknife."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.special import erf

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def _bins(s: FloatArray, y: FloatArray, w: FloatArray, bins: IntArray) -> list[tuple[float, ...]]:
    """Per occupied bin: W_b, ȳ_b, p̄_b, n_eff,b."""
    out: list[tuple[float, ...]] = []
    for b in np.unique(bins):
        mask = bins == b
        wb = w[mask]
        total = wb.sum()
        out.append(
            (
                total,
                float(np.sum(wb * y[mask]) / total),
                float(np.sum(wb * s[mask]) / total),
                float(total**2 / np.sum(wb**2)),
            )
        )
    return out


def ece_debiased(s: FloatArray, y: FloatArray, w: FloatArray, bins: IntArray) -> float:
    """2·ECE − Σ π_b·E|d_b + s_b Z|, s_b² = ȳ_b(1 − ȳ_b)/n_eff,b: the limit of Kumar et al.'s
    ``normal_debiased_ce`` (p = 1) as its resamples → ∞."""
    per_bin = _bins(s, y, w, bins)
    total = sum(b[0] for b in per_bin)
    ece = sum(wb * abs(rate - mean) for wb, rate, mean, _ in per_bin) / total
    expected = 0.0
    for wb, rate, mean, n_eff in per_bin:
        d = rate - mean
        sd = math.sqrt(rate * (1 - rate) / n_eff)
        if sd == 0.0:
            expected += wb * abs(d)
        else:
            folded = sd * math.sqrt(2 / math.pi) * math.exp(-(d**2) / (2 * sd**2))
            expected += wb * (folded + d * float(erf(d / (sd * math.sqrt(2)))))
    return 2 * ece - expected / total


def kumar_monte_carlo(
    s: FloatArray, y: FloatArray, bins: IntArray, resamples: int, seed: int
) -> float:
    """Kumar et al.'s ``normal_debiased_ce`` (verified_calibration, power 1), unweighted, as
    they wrote it: resample each bin's label mean from N(ȳ_b, ȳ_b(1 − ȳ_b)/n_b)."""
    rng = np.random.default_rng(seed)
    per_bin = _bins(s, y, np.ones_like(s), bins)
    sizes = np.array([b[0] for b in per_bin])
    rates = np.array([b[1] for b in per_bin])
    means = np.array([b[2] for b in per_bin])
    probs = sizes / sizes.sum()
    ce = float(np.dot(probs, np.abs(rates - means)))
    sd = np.sqrt(rates * (1 - rates) / sizes)
    samples = rng.normal(loc=rates, scale=sd, size=(resamples, len(rates)))
    resampled = np.abs(samples - means) @ probs
    return 2 * ce - float(np.mean(resampled))


def ece_null(s: FloatArray, y: FloatArray, w: FloatArray, bins: IntArray) -> float:
    per_bin = _bins(s, y, w, bins)
    total = sum(b[0] for b in per_bin)
    return (
        sum(
            wb * math.sqrt(2 / math.pi) * math.sqrt(mean * (1 - mean) / n_eff)
            for wb, _, mean, n_eff in per_bin
        )
        / total
    )


def rmsce_debiased(s: FloatArray, y: FloatArray, w: FloatArray, bins: IntArray) -> float:
    per_bin = _bins(s, y, w, bins)
    total = sum(b[0] for b in per_bin)
    sq = sum(
        wb * ((rate - mean) ** 2 - rate * (1 - rate) / (n_eff - 1))
        for wb, rate, mean, n_eff in per_bin
        if n_eff > 1
    )
    return math.sqrt(max(sq / total, 0.0))


def jackknife_se(
    metric: Callable[[NDArray[np.bool_]], float], buckets: IntArray, n_buckets: int
) -> float:
    """SE² = (G − 1)/G·Σ_g (θ₍₋g₎ − θ̄)², θ₍₋g₎ = ``metric`` of the rows outside bucket g."""
    replicates = np.array([metric(buckets != g) for g in range(n_buckets)])
    return float(
        math.sqrt((n_buckets - 1) / n_buckets * np.sum((replicates - replicates.mean()) ** 2))
    )
