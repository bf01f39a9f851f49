"""One key's rows of the ``reliability`` table (reliability diagrams): every bin of every
class row.

For bin b of M (``spark_calib.kernels.calibration.calibration_bins``): bin_lower and
bin_upper (b/M and (b+1)/M for uniform bins; the cells' edges for equal-mass bins, null for an
empty one), n, weight_sum = W_b, mean_confidence = Σw·c / W_b, accuracy = Σw·o / W_b (the
observed rate: of y = 1 for a binary task's positive-class view, of correct answers for
top-label views, of the class for per-class rows) and gap = accuracy − mean_confidence
(positive: under-confident). Empty bins have n = 0, weight_sum = 0 and null means; so does a
bin whose weight sum overflowed to ∞.

ci_lower and ci_upper: the Wilson interval of the observed rate at ``uncertainty.level`` on the
bin's Kish size ñ = W_b²/Σw² (``n_eff``): with ȳ = accuracy and z = Φ⁻¹((1 + level)/2),
centre = (ȳ + z²/2ñ)/(1 + z²/ñ), half = z/(1 + z²/ñ)·√(ȳ(1 − ȳ)/ñ + z²/4ñ²), clipped to
[0, 1]; it is not degenerate for a bin of all 0s or all 1s. Null for an empty bin and under
``uncertainty.method: none``. Regression statistics have no reliability rows (their bins are
coverage buckets).

Output columns: ``RELIABILITY_COLUMNS``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spark_calib.kernels.arrow_batch import Rows
from spark_calib.kernels.calibration import calibration_bins
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.table_sums import numbers
from spark_calib.stats import schema as stats

# plan.setting names: z of the Wilson interval (None: no interval), and whether the task has
# confidence bins at all.
WILSON_Z = "wilson_z"
CONFIDENCE_BINS = "confidence_bins"


def reliability_rows(key: tuple[Any, ...], table: Rows, plan: FinishPlan) -> list[tuple[Any, ...]]:
    """The reliability rows of one slice key (``RELIABILITY_COLUMNS`` order)."""
    if not plan.setting(CONFIDENCE_BINS, True):
        return []
    bins = calibration_bins(table, plan)
    m = plan.n_bins
    n = bins.n[0, :, :m]
    weight = bins.sums[stats.SUM_WEIGHT][0, :, :m]
    finite = np.isfinite(weight) & (weight > 0.0)
    safe = np.where(finite, weight, 1.0)
    mean = np.where(finite, bins.sums[stats.SUM_WEIGHT_CONFIDENCE][0, :, :m] / safe, np.nan)
    rate = np.where(finite, bins.sums[stats.SUM_WEIGHT_OUTCOME][0, :, :m] / safe, np.nan)
    w2 = bins.sums[stats.SUM_WEIGHT_SQ][0, :, :m]
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.where(w2 != 0.0, weight * weight / np.where(w2 != 0.0, w2, 1.0), np.nan)
        n_eff = np.where(n > 0, n_eff, np.nan)
        lower, upper = _wilson(rate, n_eff, plan.setting(WILSON_Z))
    # A class row only has bins when it has rows (as the statistics have).
    present = n.sum(axis=1) > 0
    rows: list[tuple[Any, ...]] = []
    for c, label in enumerate(bins.classes):
        if not present[c]:
            continue
        columns = zip(
            range(m),
            numbers(bins.lower[c, :m]),
            numbers(bins.upper[c, :m]),
            n[c].tolist(),
            np.where(n[c] > 0, weight[c], 0.0).tolist(),
            numbers(mean[c]),
            numbers(rate[c]),
            numbers(rate[c] - mean[c]),
            numbers(n_eff[c]),
            numbers(lower[c]),
            numbers(upper[c]),
            strict=True,
        )
        rows.extend((*key, label, *values) for values in columns)
    return rows


def _wilson(rate: np.ndarray, n_eff: np.ndarray, z: float | None) -> tuple[np.ndarray, np.ndarray]:
    if z is None:
        empty = np.full(rate.shape, np.nan)
        return empty, empty
    z2 = z * z
    shrink = 1.0 + z2 / n_eff
    centre = (rate + z2 / (2.0 * n_eff)) / shrink
    spread = np.maximum(rate * (1.0 - rate), 0.0) / n_eff + z2 / (4.0 * n_eff * n_eff)
    half = z / shrink * np.sqrt(spread)
    return np.maximum(centre - half, 0.0), np.minimum(centre + half, 1.0)
