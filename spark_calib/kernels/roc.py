"""One key's rows of the ``roc`` table: ROC (and precision) points from the score histogram,
thinned to ``roc_points``, per key.

Histogram: the fine cells b of the binary score (``spark_calib.kernels.cell_grid``; ids order
the cells by score) of the key's top-label rows (class null) that have a ``cell``, summed over
every other key. Per row W⁺ and W⁻ as ``spark_calib.kernels.table_sums.label_weights``; per
cell b W⁺_b and W⁻_b; P = Σ W⁺_b, N = Σ W⁻_b, TP_{≥b} = Σ_{b' ≥ b} W⁺_{b'}, FP_{≥b} likewise.

Columns: point (0 = the origin), threshold (the cell's lower edge ``cell_lower``; null at the
origin), fpr = FP_{≥b}/N, tpr = TP_{≥b}/P, precision = TP_{≥b}/(TP_{≥b} + FP_{≥b}) (each null
over 0); one point per non-empty cell, by descending threshold. The m cells are numbered
1..m from the top; with m > roc_points − 1 only points m, m − k, m − 2k, … are kept
(k = ceil((m − 1)/(roc_points − 2)), or k = m when roc_points = 2), and renumbered 1, 2, … in
order, so a key has at most ``roc_points`` rows with the origin, and always the last point
(threshold at the lowest score). The origin has fpr = 0 and tpr = 0 where the first kept
point's are not null (else null) and a null precision. A key without cell rows has no rows.

Spark's sums skip nulls, also in the running sums (``spark_calib.kernels.table_sums``).

Settings (``FinishPlan.setting``): ``roc_points`` (int ≥ 2). Output columns: ``ROC_COLUMNS``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from spark_calib.kernels.arrow_batch import Rows
from spark_calib.kernels.cell_grid import cell_lower
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.table_sums import label_weights, numbers, spark_sums, try_divide
from spark_calib.stats import schema as stats

# plan.setting name: the most rows of a key, the origin included.
ROC_POINTS = "roc_points"

POINT = "point"
THRESHOLD = "threshold"
FPR = "fpr"
TPR = "tpr"
PRECISION = "precision"
ROC_COLUMNS = (*stats.SLICE_KEY_COLUMNS, POINT, THRESHOLD, FPR, TPR, PRECISION)
ROC_ARROW_SCHEMA = pa.schema(
    [
        pa.field(stats.MODEL_VERSION, pa.string()),
        pa.field(stats.SLICE_NAME, pa.string()),
        pa.field(stats.SLICE_VALUE, pa.string()),
        pa.field(POINT, pa.int32()),
        pa.field(THRESHOLD, pa.float64()),
        pa.field(FPR, pa.float64()),
        pa.field(TPR, pa.float64()),
        pa.field(PRECISION, pa.float64()),
    ]
)


def roc_rows(key: tuple[Any, ...], table: Rows, plan: FinishPlan) -> list[tuple[Any, ...]]:
    """The ROC points of one slice key (``ROC_COLUMNS`` order), the origin first."""
    roc_points = plan.setting(ROC_POINTS)
    if roc_points is None:
        raise ValueError(f"the roc table needs the setting {ROC_POINTS!r}")
    rows = label_weights(table, stats.CELL)
    if rows.key.size == 0:
        return []
    cells, group = np.unique(rows.key, return_inverse=True)
    group = group.ravel()
    # Descending cell order: point 1 is the top cell.
    down = cells.size - 1 - group
    m = cells.size
    positive = spark_sums(rows.positive, down, m)
    negative = spark_sums(rows.negative, down, m)
    tp = _running(positive)
    fp = _running(negative)
    p = _total(positive)
    n = _total(negative)
    kept = _kept_points(m, int(roc_points)) - 1
    threshold = cell_lower(cells[::-1][kept])
    fpr = try_divide(fp[kept], n)
    tpr = try_divide(tp[kept], p)
    with np.errstate(invalid="ignore", over="ignore"):
        precision = try_divide(tp[kept], tp[kept] + fp[kept])
    origin = (
        *key,
        0,
        None,
        None if np.isnan(fpr[0]) else 0.0,
        None if np.isnan(tpr[0]) else 0.0,
        None,
    )
    points = zip(
        range(1, kept.size + 1),
        numbers(threshold),
        numbers(fpr),
        numbers(tpr),
        numbers(precision),
        strict=True,
    )
    return [origin] + [(*key, *point) for point in points]


def _kept_points(m: int, roc_points: int) -> np.ndarray:
    """The kept points of 1..m (m the last): those with (m − point) mod k = 0."""
    budget = roc_points - 1
    if m <= budget:
        step = 1
    elif budget > 1:
        step = math.ceil((m - 1) / float(budget - 1))
    else:
        step = m
    points = np.arange(1, m + 1)
    return points[(m - points) % step == 0]


def _running(values: np.ndarray) -> np.ndarray:
    """Spark's running sum from the first entry: nulls skipped, null until the first value."""
    known = ~np.isnan(values)
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.cumsum(np.where(known, values, 0.0))
    return np.where(np.cumsum(known) > 0, total, np.nan)


def _total(values: np.ndarray) -> float:
    """Spark's sum: nulls skipped, null when all are."""
    known = ~np.isnan(values)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.sum(values[known])) if known.any() else math.nan
