"""The regression family of one key: mse, rmse, mae, r2, gaussian_nll, coverage_<l> and
miscalibration_area, from its regression sums and coverage buckets.

Per key, over its top-label rows (class null) with e = y − μ, W = Σw, SSE = Σw·e²:

- mse = SSE/W, rmse = sqrt(mse), mae = Σw|e|/W;
- r2 = 1 − SSE/SST with SST = Σw·y² − (Σw·y)²/W (null when SST ≤ 1e-12·Σw·y², a constant
  target; negative when worse than predicting the mean);
- gaussian_nll = Σw[½ log(2πσ²) + e²/(2σ²)]/W;
- coverage_<l> = Σw[|e| ≤ z_l σ]/W with z_l = Φ⁻¹((1 + l)/2), one row per level of
  ``coverage_levels`` in their order, named with Python's str(l): the statistics' ``bin`` is
  the coverage bucket, the number of levels (of the ascending union L of ``coverage_levels``
  and 0.05, 0.10, …, 0.95) whose interval misses y, so coverage(l_j) = Σ_{bin ≤ j} w/W for
  l_j the j-th level of L (``spark_calib.rows.coverage``); a row without a bucket (no σ)
  covers no level;
- miscalibration_area = Σ_{l = 0.05, …, 0.95} |coverage(l) − l|/19.

A value is NaN (null) when W = 0 or its sums are null (gaussian_nll and coverage without σ).
No analytic standard errors; under the jackknife the replicates are the same formulas over
the statistics without bucket g (``spark_calib.kernels.replicates``). n and W are the key's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spark_calib.constants import REGRESSION_CALIBRATION_LEVELS
from spark_calib.kernels.arrow_batch import Rows, ints, is_null, select
from spark_calib.kernels.estimates import Estimates
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.replicates import replicated
from spark_calib.registry.metrics import METRICS, REGRESSION
from spark_calib.stats import schema as stats

# SST below this fraction of Σ w y² is rounding noise of a constant target.
CONSTANT_TARGET_TOLERANCE = 1e-12
COVERAGE = "coverage"
# plan.setting name: the configured coverage levels (``coverage_levels``).
COVERAGE_LEVELS = "coverage_levels"
REGRESSION_SUMS = (
    stats.SUM_WEIGHT,
    stats.SUM_WEIGHT_TARGET,
    stats.SUM_WEIGHT_TARGET_SQ,
    stats.SUM_WEIGHT_SQ_ERROR,
    stats.SUM_WEIGHT_ABS_ERROR,
    stats.SUM_WEIGHT_GAUSSIAN_NLL,
)

Terms = dict[str, np.ndarray]


def coverage_metric_name(level: float) -> str:
    """``coverage_<level>`` with the level as Python prints it (``coverage_0.95``)."""
    return f"coverage_{level}"


def interval_levels(coverage_levels: tuple[float, ...]) -> list[float]:
    """L: ``coverage_levels`` ∪ the 19 calibration levels, ascending (the coverage buckets'
    levels: ``spark_calib.rows.coverage`` assigns each row's bucket among them)."""
    return sorted(set(coverage_levels) | set(REGRESSION_CALIBRATION_LEVELS))


def regression_estimates(table: Rows, plan: FinishPlan) -> Estimates | None:
    """The regression metrics of one key's valid statistics rows (columns ``class``, ``bin``,
    ``bucket``, ``n`` and ``REGRESSION_SUMS``); None when the plan requests none or the key has
    no top-label row (no rows). Reads the setting ``coverage_levels`` (a tuple of floats)."""
    names = plan.names(REGRESSION)
    if not names:
        return None
    coverage_levels = tuple(plan.setting(COVERAGE_LEVELS, ()))
    levels = interval_levels(coverage_levels)
    top = is_null(table, stats.CLASS)
    kept = select(table, top)
    if kept.num_rows == 0:
        return None
    rows: list[tuple[str, np.ndarray, bool]] = []
    # Sums near the double range overflow to ±∞ as in Spark (table_rows nulls the values).
    with np.errstate(over="ignore", invalid="ignore"):
        terms = _key_terms(kept, plan, levels)
        for name in names:
            noise = METRICS[name].noise if name in METRICS else True
            if name == COVERAGE:
                rows += [
                    (coverage_metric_name(level), _coverage(terms, levels, level), noise)
                    for level in coverage_levels
                ]
            else:
                rows.append((name, VALUES[name](terms, levels), noise))
    if not rows:
        return None
    count = len(rows)
    values = np.stack([value for _, value, _ in rows], axis=1)
    return Estimates(
        classes=[None] * count,
        metrics=[name for name, _, _ in rows],
        values=values,
        n=np.full(count, terms["n"][0], dtype=np.int64),
        weight_sum=np.full(count, terms["w"][0]),
        se=np.full(count, np.nan),
        error_bound=np.full(count, np.nan),
        noise=np.array([noise for _, _, noise in rows], dtype=bool),
    )


def _key_terms(table: Rows, plan: FinishPlan, levels: list[float]) -> Terms:
    """Per replicate: n, the key's sums and the covered weight Σ_{bin ≤ j} w of each level
    l_j of L (shape (R, len(L)))."""
    coverage_buckets = len(levels) + 1
    bins = ints(table, stats.BIN, -1)
    # Bins 0..len(L) are the coverage buckets; the slot after them holds the rows without one.
    slot = np.where((bins < 0) | (bins >= coverage_buckets), coverage_buckets, bins)
    n, sums = replicated(table, plan, (slot,), (coverage_buckets + 1,), REGRESSION_SUMS)
    terms: Terms = {
        "n": n.sum(axis=-1),
        "w": sums[stats.SUM_WEIGHT].sum(axis=-1),
        "y": sums[stats.SUM_WEIGHT_TARGET].sum(axis=-1),
        "yy": sums[stats.SUM_WEIGHT_TARGET_SQ].sum(axis=-1),
        "sse": sums[stats.SUM_WEIGHT_SQ_ERROR].sum(axis=-1),
        "sae": sums[stats.SUM_WEIGHT_ABS_ERROR].sum(axis=-1),
        "gnll": sums[stats.SUM_WEIGHT_GAUSSIAN_NLL].sum(axis=-1),
    }
    terms["covered"] = np.cumsum(sums[stats.SUM_WEIGHT][:, : len(levels)], axis=1)
    return terms


def _div(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator/denominator, NaN where the denominator is 0 (Spark's try_divide)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            denominator != 0.0, numerator / np.where(denominator != 0.0, denominator, 1.0), np.nan
        )


def _coverage(t: Terms, levels: list[float], level: float) -> np.ndarray:
    return _div(t["covered"][:, levels.index(level)], t["w"])


def _r2(t: Terms, levels: list[float]) -> np.ndarray:
    sst = t["yy"] - _div(t["y"] * t["y"], t["w"])
    # A NaN SST compares False: null, as Spark's null SST.
    constant = ~(sst > CONSTANT_TARGET_TOLERANCE * t["yy"])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(constant, np.nan, 1.0 - t["sse"] / np.where(constant, 1.0, sst))


def _miscalibration_area(t: Terms, levels: list[float]) -> np.ndarray:
    gaps = [np.abs(_coverage(t, levels, level) - level) for level in REGRESSION_CALIBRATION_LEVELS]
    # Summed left to right, as the Spark expression it replaces.
    total = gaps[0]
    for gap in gaps[1:]:
        total = total + gap
    return total / float(len(gaps))


VALUES: dict[str, Callable[[Terms, list[float]], np.ndarray]] = {
    "mse": lambda t, levels: _div(t["sse"], t["w"]),
    "rmse": lambda t, levels: np.sqrt(_div(t["sse"], t["w"])),
    "mae": lambda t, levels: _div(t["sae"], t["w"]),
    "r2": _r2,
    "gaussian_nll": lambda t, levels: _div(t["gnll"], t["w"]),
    "miscalibration_area": _miscalibration_area,
}
