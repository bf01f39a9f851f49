"""One regression key's statistics rows built in plain NumPy from rows, as the Spark
aggregation would sum them, for the regression kernel tests (no Spark): per (coverage bucket,
bucket), n and Σw, Σw·y, Σw·y², Σw·e², Σw·|e| and Σw·[½ log(2πσ²) + e²/(2σ²)], e = y − μ.
The coverage bucket (``bin``) is the number of levels of L = levels ∪ {0.05, …, 0.95} whose
interval μ ± z_l σ misses y, z_l = Φ⁻¹((1 + l)/2); without σ ``bin`` and the NLL sum are null."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import pyarrow as pa

from spark_calib.stats import schema as stats

CALIBRATION_LEVELS = tuple(round(0.05 * k, 2) for k in range(1, 20))


def all_levels(levels: Sequence[float]) -> list[float]:
    """L, ascending."""
    return sorted(set(levels) | set(CALIBRATION_LEVELS))


def regression_key_table(
    y: np.ndarray,
    mu: np.ndarray,
    weights: np.ndarray | None = None,
    sigma: np.ndarray | None = None,
    *,
    levels: Sequence[float] = (0.5, 0.8, 0.9, 0.95),
    buckets: np.ndarray | None = None,
    slice_value: str = "",
) -> pa.Table:
    """Statistics rows of one regression key (model_version v, slice overall) from its rows."""
    y = np.asarray(y, dtype=float)
    mu = np.asarray(mu, dtype=float)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=float)
    e = y - mu
    g = np.zeros(y.shape, dtype=int) if buckets is None else np.asarray(buckets)
    terms: dict[str, np.ndarray | None] = {
        stats.SUM_WEIGHT: w,
        stats.SUM_WEIGHT_TARGET: w * y,
        stats.SUM_WEIGHT_TARGET_SQ: w * y * y,
        stats.SUM_WEIGHT_SQ_ERROR: w * e * e,
        stats.SUM_WEIGHT_ABS_ERROR: w * np.abs(e),
        stats.SUM_WEIGHT_GAUSSIAN_NLL: None,
    }
    if sigma is None:
        coverage_bin = np.full(y.shape, -1)
    else:
        sd = np.asarray(sigma, dtype=float)
        terms[stats.SUM_WEIGHT_GAUSSIAN_NLL] = w * (
            0.5 * np.log(2.0 * math.pi * sd * sd) + e * e / (2.0 * sd * sd)
        )
        z = [NormalDist().inv_cdf((1.0 + level) / 2.0) for level in all_levels(levels)]
        coverage_bin = sum((np.abs(e) > zl * sd).astype(int) for zl in z)
    groups = sorted(set(zip(np.asarray(coverage_bin).tolist(), g.tolist(), strict=True)))
    columns: dict[str, list] = {name: [] for name in (stats.BIN, stats.BUCKET, stats.N, *terms)}
    for bb, gg in groups:
        rows = (coverage_bin == bb) & (g == gg)
        columns[stats.BIN].append(bb if bb >= 0 else None)
        columns[stats.BUCKET].append(gg if buckets is not None else None)
        columns[stats.N].append(int(rows.sum()))
        for name, values in terms.items():
            columns[name].append(None if values is None else float(values[rows].sum()))
    count = len(groups)
    keys = {
        stats.MODEL_VERSION: pa.array(["v"] * count),
        stats.SLICE_NAME: pa.array(["overall"] * count),
        stats.SLICE_VALUE: pa.array([slice_value] * count),
        stats.CLASS: pa.array([None] * count, type=pa.string()),
    }
    data = {name: pa.array(values, type=_arrow_type(name)) for name, values in columns.items()}
    return pa.table({**keys, **data})


def _arrow_type(name: str) -> pa.DataType:
    if name in (stats.BIN, stats.BUCKET):
        return pa.int32()
    return pa.int64() if name == stats.N else pa.float64()
