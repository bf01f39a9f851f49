"""One key's rows of the ``regression_calibration`` table: expected against observed coverage
of the central normal intervals at the 19 levels 0.05, 0.10, …, 0.95, per key.

Per key, over its top-label rows (class null), summed over every other key: n = Σn,
W = Σ sum_weight and, per level l, with z_l = Φ⁻¹((1 + l)/2) and e = y − μ,
coverage(l) = Σw[|e| ≤ z_l σ]/W. The statistics' ``bin`` is the coverage bucket: the number
of levels of L (``coverage_levels`` ∪ the 19 levels, ascending:
``spark_calib.kernels.regression.interval_levels``) whose interval misses y, so
coverage(l_j) = Σ_{bin ≤ j} w / W for l_j the j-th level of L; a row without a bucket (no σ)
covers no level.

Columns, one row per level in ascending order: level, z = z_l, observed = coverage(l) (null
when W = 0), gap = observed − level, n, weight_sum = W. A key without top-label rows has no
rows.

Spark's sums skip nulls (``spark_calib.kernels.table_sums``).

Settings (``FinishPlan.setting``): ``coverage_levels`` (a sequence of floats). Output columns:
``REGRESSION_CALIBRATION_COLUMNS``.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pyarrow as pa

from spark_calib.constants import REGRESSION_CALIBRATION_LEVELS
from spark_calib.kernels.arrow_batch import Rows, floats, ints
from spark_calib.kernels.output_columns import WEIGHT_SUM
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.regression import COVERAGE_LEVELS, interval_levels
from spark_calib.kernels.table_sums import number, top_label_rows, try_divide
from spark_calib.stats import schema as stats

LEVEL = "level"
Z = "z"
OBSERVED = "observed"
GAP = "gap"
REGRESSION_CALIBRATION_COLUMNS = (
    *stats.SLICE_KEY_COLUMNS,
    LEVEL,
    Z,
    OBSERVED,
    GAP,
    stats.N,
    WEIGHT_SUM,
)
_STRINGS = frozenset(stats.SLICE_KEY_COLUMNS)
REGRESSION_CALIBRATION_ARROW_SCHEMA = pa.schema(
    [
        pa.field(
            name,
            pa.string() if name in _STRINGS else pa.int64() if name == stats.N else pa.float64(),
        )
        for name in REGRESSION_CALIBRATION_COLUMNS
    ]
)


def z_value(level: float) -> float:
    """z_l = Φ⁻¹((1 + l)/2), the half-width of the central interval of level l in σ."""
    return NormalDist().inv_cdf((1.0 + level) / 2.0)


def regression_calibration_rows(
    key: tuple[Any, ...], table: Rows, plan: FinishPlan
) -> list[tuple[Any, ...]]:
    """The 19 coverage rows of one slice key (``REGRESSION_CALIBRATION_COLUMNS`` order)."""
    levels = interval_levels(tuple(plan.setting(COVERAGE_LEVELS, ())))
    kept = top_label_rows(table)
    if kept.num_rows == 0:
        return []
    n = int(ints(kept, stats.N, 0).sum())
    weight = floats(kept, stats.SUM_WEIGHT)
    known = ~np.isnan(weight)
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.sum(weight[known])) if known.any() else math.nan
        # A row without a bucket (read as len(L) + 1) is covered at no level: it adds 0.
        bucket = ints(kept, stats.BIN, len(levels) + 1)
        positions = [levels.index(level) for level in REGRESSION_CALIBRATION_LEVELS]
        inside = (bucket[:, None] <= np.array(positions)[None, :]) & known[:, None]
        covered = np.where(inside, weight[:, None], 0.0).sum(axis=0)
    observed = try_divide(covered, total)
    return [
        (
            *key,
            level,
            z_value(level),
            number(observed[i]),
            number(observed[i] - level),
            n,
            number(total),
        )
        for i, level in enumerate(REGRESSION_CALIBRATION_LEVELS)
    ]
