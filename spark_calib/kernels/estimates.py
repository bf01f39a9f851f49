"""Metric values of one key as a kernel returns them, and their rows of the metrics table.

A kernel returns ``Estimates``: per output row (class, metric) the value of the point estimate
and of each jackknife replicate (``values[0]`` and ``values[1:]``), n, weight_sum, the analytic
standard error and the error bound. ``table_rows`` turns them into rows of
``TABLE_COLUMNS``:

- a value is null when it is NaN, or when the key's weight sum overflowed to ±∞ (every ratio
  over it is meaningless; ``count`` keeps n);
- ``se``: ``analytic``: the kernel's; ``jackknife``: SE² = (G − 1)/G·Σ_g (θ̂₍₋g₎ − θ̄)², null
  unless all G replicates have a value; ``none``: null. Never for a row with ``noise`` False
  (``count``), nor for a null value;
- ci_lower, ci_upper = value ∓ critical_value·se; n_eff = (Σw)²/Σw² of the key's top-label
  rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from spark_calib.kernels.output_columns import COUNT_METRIC
from spark_calib.kernels.plan import FinishPlan


@dataclass(frozen=True)
class Estimates:
    """``values`` has shape (R, rows); the other arrays and lists have one entry per row."""

    classes: list[Any]
    metrics: list[str]
    values: np.ndarray
    n: np.ndarray
    weight_sum: np.ndarray
    se: np.ndarray
    error_bound: np.ndarray
    noise: np.ndarray


def jackknife_se(replicates: np.ndarray) -> np.ndarray:
    """SE per column of ``replicates`` (G, rows): sqrt((G − 1)·Var_pop), NaN unless every
    replicate is a number."""
    buckets = replicates.shape[0]
    complete = ~np.isnan(replicates).any(axis=0)
    filled = np.where(complete, replicates, 0.0)
    variance = filled.var(axis=0) * (buckets - 1)
    return np.where(complete, np.sqrt(np.maximum(variance, 0.0)), np.nan)


def defined(values: np.ndarray, weight_sum: np.ndarray, metrics: list[str]) -> np.ndarray:
    """``values`` (…, rows) with NaN where the weight sum overflowed (not for ``count``)."""
    overflowed = np.isinf(weight_sum) & np.array([m != COUNT_METRIC for m in metrics], dtype=bool)
    return np.where(overflowed, np.nan, values)


def table_rows(
    key: tuple[Any, ...], estimates: Estimates, plan: FinishPlan, n_eff: float
) -> list[tuple[Any, ...]]:
    """The rows of the metrics table (``TABLE_COLUMNS``) of one slice key's estimates."""
    values = defined(estimates.values, estimates.weight_sum, estimates.metrics)
    point = values[0]
    if plan.method == "none":
        se = np.full(point.shape, np.nan)
    elif plan.jackknife:
        se = jackknife_se(values[1:])
    else:
        se = defined(estimates.se, estimates.weight_sum, estimates.metrics)
    se = np.where(estimates.noise & ~np.isnan(point), se, np.nan)
    half = plan.critical_value * se
    return [
        (
            *key,
            estimates.classes[i],
            estimates.metrics[i],
            float(point[i]),
            int(estimates.n[i]),
            float(estimates.weight_sum[i]),
            float(estimates.error_bound[i]),
            float(se[i]),
            float(point[i] - half[i]),
            float(point[i] + half[i]),
            n_eff,
        )
        for i in range(point.shape[0])
    ]
