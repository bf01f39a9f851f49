"""One key's rows of the ``confusion`` table: the weighted confusion cells (true class j
predicted as k), per key.

Read from the key's top-label statistics rows (class null) that have a ``predicted_class``,
summed over every other key (bin, cell, threshold count, bucket, …):

- multiclass and top-label: the rows that also have a ``true_class``, one cell per
  (true_class, predicted_class) pair that occurs, with n = Σn and weight_sum = Σ sum_weight;
- binary: the label is summed rather than grouped (``n_positive``, ``sum_weight_positive``),
  so per predicted class k, cell (class 1, k) has n = Σ n_positive and weight_sum =
  Σ sum_weight_positive, cell (class 0, k) n = Σn − Σ n_positive and weight_sum =
  Σ sum_weight − Σ sum_weight_positive; a side is kept only when its n > 0 (a null
  n_positive keeps neither), so no rounding residue of W − Σw·y becomes a cell. Classes 0 and
  1 are labelled ``class_names`` (else "0" and "1").

Spark's sums skip nulls (``spark_calib.kernels.table_sums``). Rows are ordered by true class,
then predicted class (as strings).

Settings (``FinishPlan.setting``): ``task`` (str) and ``class_names`` (a sequence of str, or
None). Output columns: ``CONFUSION_COLUMNS``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from spark_calib.kernels.arrow_batch import Rows, codes, floats, ints, label_codes, labels
from spark_calib.kernels.decision import TASK, binary_labels
from spark_calib.kernels.output_columns import WEIGHT_SUM
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.table_sums import count_sums, number, spark_sums, top_label_rows
from spark_calib.stats import schema as stats

CONFUSION_COLUMNS = (
    *stats.SLICE_KEY_COLUMNS,
    stats.TRUE_CLASS,
    stats.PREDICTED_CLASS,
    stats.N,
    WEIGHT_SUM,
)
CONFUSION_ARROW_SCHEMA = pa.schema(
    [
        pa.field(stats.MODEL_VERSION, pa.string()),
        pa.field(stats.SLICE_NAME, pa.string()),
        pa.field(stats.SLICE_VALUE, pa.string()),
        pa.field(stats.TRUE_CLASS, pa.string()),
        pa.field(stats.PREDICTED_CLASS, pa.string()),
        pa.field(stats.N, pa.int64()),
        pa.field(WEIGHT_SUM, pa.float64()),
    ]
)


def confusion_rows(key: tuple[Any, ...], table: Rows, plan: FinishPlan) -> list[tuple[Any, ...]]:
    """The confusion cells of one slice key (``CONFUSION_COLUMNS`` order)."""
    task = plan.setting(TASK)
    if task is None:
        raise ValueError(f"the confusion table needs the setting {TASK!r}")
    cells = _binary_cells(table, plan) if task == "binary" else _cells(table)
    return [(*key, true, predicted, n, number(weight)) for true, predicted, n, weight in cells]


Cell = tuple[str, str, int, float]


def _cells(table: Rows) -> list[Cell]:
    """One cell per (true, predicted) pair of the rows with both set."""
    kept = top_label_rows(table, (stats.TRUE_CLASS, stats.PREDICTED_CLASS))
    pairs = list(
        zip(labels(kept, stats.TRUE_CLASS), labels(kept, stats.PREDICTED_CLASS), strict=True)
    )
    distinct, group = codes(pairs)
    n = count_sums(ints(kept, stats.N, 0), group, len(distinct))
    weight = spark_sums(floats(kept, stats.SUM_WEIGHT), group, len(distinct))
    return [
        (true, predicted, int(n[g]), float(weight[g]))
        for g, (true, predicted) in enumerate(distinct)
    ]


def _binary_cells(table: Rows, plan: FinishPlan) -> list[Cell]:
    """Per predicted class, the negative and positive side with n > 0."""
    kept = top_label_rows(table, (stats.PREDICTED_CLASS,))
    distinct, group = label_codes(kept, stats.PREDICTED_CLASS)
    size = len(distinct)
    n = count_sums(ints(kept, stats.N, 0), group, size)
    # n_positive as a float sum so that a null one stays null (NaN); counts are exact in it.
    n_positive = spark_sums(floats(kept, stats.N_POSITIVE), group, size)
    weight = spark_sums(floats(kept, stats.SUM_WEIGHT), group, size)
    positive_weight = spark_sums(floats(kept, stats.SUM_WEIGHT_POSITIVE), group, size)
    negative_label, positive_label = binary_labels(plan)
    with np.errstate(invalid="ignore", over="ignore"):
        sides = (
            (negative_label, n - n_positive, weight - positive_weight),
            (positive_label, n_positive, positive_weight),
        )
    cells: list[Cell] = []
    for g, predicted in enumerate(distinct):
        for true, side_n, side_weight in sides:
            # NaN (a null n_positive) is not > 0: neither side is kept.
            if side_n[g] > 0:
                cells.append((true, predicted, int(side_n[g]), float(side_weight[g])))
    return sorted(cells, key=lambda cell: (cell[0], cell[1]))
