"""One key's rows of the ``thresholds`` table: weighted confusion counts at each configured
threshold, per key.

The statistics' ``threshold_bin`` of a row is the number of thresholds t_0 < t_1 < … (the
configured ones, ascending) with s ≥ t_j, so the row is predicted positive at t_j exactly when
threshold_bin > j. From the key's top-label rows (class null) that have a ``threshold_bin``,
with their W⁺ and W⁻ (``spark_calib.kernels.table_sums.label_weights``), summed over every
other key: P = Σ W⁺, N = Σ W⁻ and, per threshold t_j, tp = Σ_{threshold_bin > j} W⁺ and
fp = Σ_{threshold_bin > j} W⁻.

Columns, one row per threshold in ascending order: threshold, n (the rows' Σn),
weight_sum = P + N, tp, fp, tn = N − fp, fn = P − tp, tpr = tp/P and fpr = fp/N (null over 0),
precision = tp/(tp + fp) (0 unless tp + fp > 0), recall = tpr. A key without threshold rows
has no rows.

Spark's sums skip nulls (``spark_calib.kernels.table_sums``).

Settings (``FinishPlan.setting``): ``thresholds`` (a sequence of floats). Output columns:
``THRESHOLD_COLUMNS``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from spark_calib.kernels.arrow_batch import Rows
from spark_calib.kernels.output_columns import WEIGHT_SUM
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.table_sums import label_weights, number, spark_sums, try_divide
from spark_calib.stats import schema as stats

# plan.setting name: the configured thresholds (any order).
THRESHOLDS = "thresholds"

THRESHOLD = "threshold"
THRESHOLD_COLUMNS = (
    *stats.SLICE_KEY_COLUMNS,
    THRESHOLD,
    stats.N,
    WEIGHT_SUM,
    "tp",
    "fp",
    "tn",
    "fn",
    "tpr",
    "fpr",
    "precision",
    "recall",
)
_STRINGS = frozenset(stats.SLICE_KEY_COLUMNS)
THRESHOLD_ARROW_SCHEMA = pa.schema(
    [
        pa.field(
            name,
            pa.string() if name in _STRINGS else pa.int64() if name == stats.N else pa.float64(),
        )
        for name in THRESHOLD_COLUMNS
    ]
)


def threshold_rows(key: tuple[Any, ...], table: Rows, plan: FinishPlan) -> list[tuple[Any, ...]]:
    """The rows of one slice key at each configured threshold (``THRESHOLD_COLUMNS`` order)."""
    configured = plan.setting(THRESHOLDS)
    if configured is None:
        raise ValueError(f"the thresholds table needs the setting {THRESHOLDS!r}")
    ordered = sorted(float(t) for t in configured)
    rows = label_weights(table, stats.THRESHOLD_BIN)
    if rows.key.size == 0:
        return []
    n = int(rows.n.sum())
    single = np.zeros(rows.key.size, dtype=np.int64)
    p = float(spark_sums(rows.positive, single, 1)[0])
    negatives = float(spark_sums(rows.negative, single, 1)[0])
    # Row × threshold: predicted positive at t_j when threshold_bin > j; otherwise 0, not null.
    above = rows.key[:, None] > np.arange(len(ordered))[None, :]
    tp = _column_sums(np.where(above, rows.positive[:, None], 0.0))
    fp = _column_sums(np.where(above, rows.negative[:, None], 0.0))
    with np.errstate(invalid="ignore", over="ignore"):
        predicted = tp + fp
        precision = np.where(predicted > 0.0, tp / np.where(predicted > 0.0, predicted, 1.0), 0.0)
        tn = negatives - fp
        fn = p - tp
        weight_sum = p + negatives
    tpr = try_divide(tp, p)
    fpr = try_divide(fp, negatives)
    return [
        (
            *key,
            threshold,
            n,
            number(weight_sum),
            number(tp[j]),
            number(fp[j]),
            number(tn[j]),
            number(fn[j]),
            number(tpr[j]),
            number(fpr[j]),
            number(precision[j]),
            number(tpr[j]),
        )
        for j, threshold in enumerate(ordered)
    ]


def _column_sums(values: np.ndarray) -> np.ndarray:
    """Spark's sum down each column: nulls (NaN) skipped, null when a column has no value."""
    known = ~np.isnan(values)
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.where(known, values, 0.0).sum(axis=0)
    return np.where(known.any(axis=0), total, math.nan)
