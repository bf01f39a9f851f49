"""One key's statistics rows for the table kernels (confusion, roc, thresholds,
regression_calibration), built in plain NumPy from rows as the Spark aggregation sums them
(no Spark): every column of ``STATS_COLUMNS`` but ``reason``, at the full grain.

The keys are written here again from their documented definitions, without importing the
code that assigns them, so the tests read the kernels against an independent reading:

- binary: one top-label row per (predicted_class, bin, cell, threshold_bin, bucket) with the
  label summed (``n_positive``, Σw·y, Σw·y·nll); predicted class 1 when s ≥ ``threshold``;
  ``cell`` = 1186·k + j with k/1000 ≤ s < (k + 1)/1000 (k ≤ 999) and j the log-odds cell of
  the logit clipped to ±37 (j = ⌊16·z⌋ + 593 inside, 0 and 1185 at the clip);
  ``threshold_bin`` = #{t : s ≥ t};
- multiclass: one top-label row per (true_class, predicted_class, bin, bucket);
- regression: one row per (bin, bucket), ``bin`` the coverage bucket #{l ∈ L : |e| > z_l σ}
  with L the 19 levels 0.05..0.95 ∪ ``coverage_levels`` and z_l = Φ⁻¹((1 + l)/2) (scipy), null
  without σ.

``class_rows`` adds one-vs-rest rows (class set) with the same keys and other sums, which the
table kernels must ignore.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import ArrayLike
from scipy.stats import norm

from spark_calib.stats import schema as stats
from tests.support.key_stats_cells import SCHEMA

CALIBRATION_LEVELS = tuple(round(0.05 * k, 2) for k in range(1, 20))


def stats_table(rows: Sequence[dict[str, Any]], slice_value: str = "") -> pa.Table:
    """Statistics rows of one key (model_version v, slice ``overall``/``slice_value``); a
    column a row does not name is null."""
    key = {stats.MODEL_VERSION: "v", stats.SLICE_NAME: "overall", stats.SLICE_VALUE: slice_value}
    columns = {
        field.name: pa.array([{**key, **row}.get(field.name) for row in rows], type=field.type)
        for field in SCHEMA
    }
    return pa.table(columns, schema=SCHEMA)


def cell_ids(scores: np.ndarray) -> np.ndarray:
    """The fine cell id 1186·k + j of each score (see the module docstring)."""
    s = np.asarray(scores, dtype=float)
    k = np.floor(s * 1000.0).astype(np.int64)
    k = k + (s >= (k + 1) / 1000.0) - (s < k / 1000.0)
    k = np.clip(k, 0, 999)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.clip(np.log(s) - np.log1p(-s), -37.0, 37.0)
    z = np.where(s <= 0.0, -37.0, np.where(s >= 1.0, 37.0, z))
    j = np.clip(np.floor(16.0 * z).astype(np.int64) + 593, 1, 1184)
    j = np.where(z <= -37.0, 0, np.where(z >= 37.0, 1185, j))
    return k * 1186 + j


def binary_table(
    scores: ArrayLike,
    labels: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    thresholds: Sequence[float] = (0.5,),
    threshold: float = 0.5,
    class_names: Sequence[str] = ("0", "1"),
    buckets: ArrayLike | None = None,
    class_rows: bool = False,
    n_bins: int = 15,
    slice_value: str = "",
) -> pa.Table:
    """Statistics rows of one binary key from its rows (score, label, weight)."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=float)
    w = np.ones(s.shape) if weights is None else np.asarray(weights, dtype=float)
    g = np.zeros(s.shape, dtype=int) if buckets is None else np.asarray(buckets, dtype=int)
    nll = -np.log(np.clip(np.where(y == 1, s, 1.0 - s), 1e-15, None))
    predicted = (s >= threshold).astype(int)
    b = np.minimum(np.floor(s * n_bins).astype(int), n_bins - 1)
    cell = cell_ids(s)
    reached = (s[:, None] >= np.asarray(thresholds, dtype=float)[None, :]).sum(axis=1)
    keys = list(zip(predicted, b, cell, reached, g, strict=True))
    rows: list[dict[str, Any]] = []
    for kk, bb, cc, tt, gg in sorted(set(keys)):
        inside = np.array([key == (kk, bb, cc, tt, gg) for key in keys])
        row: dict[str, Any] = {
            stats.CLASS: None,
            stats.PREDICTED_CLASS: class_names[kk],
            stats.BIN: int(bb),
            stats.CELL: int(cc),
            stats.THRESHOLD_BIN: int(tt),
            stats.BUCKET: int(gg) if buckets is not None else None,
            stats.N: int(inside.sum()),
            stats.N_POSITIVE: int(y[inside].sum()),
            stats.SUM_WEIGHT: float(w[inside].sum()),
            stats.SUM_WEIGHT_POSITIVE: float((w * y)[inside].sum()),
            stats.SUM_WEIGHT_NLL: float((w * nll)[inside].sum()),
            stats.SUM_WEIGHT_POSITIVE_NLL: float((w * y * nll)[inside].sum()),
            stats.SUM_WEIGHT_CONFIDENCE: float((w * s)[inside].sum()),
            stats.SUM_WEIGHT_CONFIDENCE_SQ: float((w * s * s)[inside].sum()),
        }
        rows.append(row)
        if class_rows:
            rows.append(_class_row(row, class_names[1]))
    return stats_table(rows, slice_value)


def multiclass_table(
    true: ArrayLike,
    predicted: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    class_names: Sequence[str] | None = None,
    bins: ArrayLike | None = None,
    buckets: ArrayLike | None = None,
    class_rows: bool = False,
) -> pa.Table:
    """Statistics rows of one multiclass key from its rows (true, predicted class, weight)."""
    t = np.asarray(true, dtype=int)
    k = np.asarray(predicted, dtype=int)
    w = np.ones(t.shape) if weights is None else np.asarray(weights, dtype=float)
    b = np.zeros(t.shape, dtype=int) if bins is None else np.asarray(bins, dtype=int)
    g = np.zeros(t.shape, dtype=int) if buckets is None else np.asarray(buckets, dtype=int)
    size = int(max(t.max(), k.max())) + 1
    names = list(class_names) if class_names is not None else [str(c) for c in range(size)]
    keys = list(zip(t, k, b, g, strict=True))
    rows: list[dict[str, Any]] = []
    for tt, kk, bb, gg in sorted(set(keys)):
        inside = np.array([key == (tt, kk, bb, gg) for key in keys])
        row: dict[str, Any] = {
            stats.CLASS: None,
            stats.TRUE_CLASS: names[tt],
            stats.PREDICTED_CLASS: names[kk],
            stats.BIN: int(bb),
            stats.BUCKET: int(gg) if buckets is not None else None,
            stats.N: int(inside.sum()),
            stats.SUM_WEIGHT: float(w[inside].sum()),
        }
        rows.append(row)
        if class_rows:
            rows.append(_class_row(row, names[0]))
    return stats_table(rows)


def interval_levels(coverage_levels: Sequence[float]) -> list[float]:
    """L: the 19 calibration levels ∪ ``coverage_levels``, ascending."""
    return sorted(set(CALIBRATION_LEVELS) | {float(level) for level in coverage_levels})


def regression_table(
    errors: ArrayLike,
    sigmas: ArrayLike | None,
    weights: ArrayLike | None = None,
    *,
    coverage_levels: Sequence[float] = (0.5, 0.8, 0.9, 0.95),
    buckets: ArrayLike | None = None,
) -> pa.Table:
    """Statistics rows of one regression key from its rows (error y − μ, σ, weight); without
    ``sigmas`` the rows have no coverage bucket (``bin`` null)."""
    e = np.asarray(errors, dtype=float)
    w = np.ones(e.shape) if weights is None else np.asarray(weights, dtype=float)
    g = np.zeros(e.shape, dtype=int) if buckets is None else np.asarray(buckets, dtype=int)
    if sigmas is None:
        b = np.full(e.shape, -1)
    else:
        z = norm.ppf((1.0 + np.array(interval_levels(coverage_levels))) / 2.0)
        sigma = np.asarray(sigmas, dtype=float)
        b = (np.abs(e)[:, None] > z[None, :] * sigma[:, None]).sum(axis=1)
    keys = list(zip(b, g, strict=True))
    rows: list[dict[str, Any]] = []
    for bb, gg in sorted(set(keys)):
        inside = np.array([key == (bb, gg) for key in keys])
        rows.append(
            {
                stats.CLASS: None,
                stats.BIN: int(bb) if bb >= 0 else None,
                stats.BUCKET: int(gg) if buckets is not None else None,
                stats.N: int(inside.sum()),
                stats.SUM_WEIGHT: float(w[inside].sum()),
                stats.SUM_WEIGHT_SQ_ERROR: float((w * e * e)[inside].sum()),
            }
        )
    return stats_table(rows)


def _class_row(row: dict[str, Any], label: str) -> dict[str, Any]:
    """A one-vs-rest copy of ``row`` (class ``label``) with other sums."""
    other = {
        name: (value * 3 + 1 if isinstance(value, int) else value * 7.0 + 0.5)
        for name, value in row.items()
        if name in stats.MEASURE_COLUMNS and value is not None
    }
    return {**row, **other, stats.CLASS: label}
