"""One binary key's statistics rows at the fine-cell grain, built in plain NumPy from rows as
the Spark aggregation would sum them, for the smooth ECE kernel tests (no Spark): per
(cell, bin, bucket), n and the sums Σw, Σw·s, Σw·y, Σw·s², Σw·s·y (c = s, o = y)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from spark_calib.stats import schema as stats
from tests.support.reference import assign_bins

EQUAL_WIDTH_CELLS = 1000
LOG_ODDS_CELLS = 1186
LOGIT_CLIP = 37.0


def cell_ids(scores: np.ndarray) -> np.ndarray:
    """The union-grid cell id 1186·k + j of each score (``spark_calib.rows.cells``): k its
    equal-width cell of 1/1000, j its log-odds cell of 1/16 (0 and 1185 the clipped ends)."""
    s = np.asarray(scores, dtype=float)
    k = assign_bins(s, EQUAL_WIDTH_CELLS)
    with np.errstate(divide="ignore"):
        z = np.clip(np.log(s) - np.log1p(-s), -LOGIT_CLIP, LOGIT_CLIP)
    inner = np.clip(np.floor(z * 16.0).astype(np.int64) + LOG_ODDS_CELLS // 2, 1, 1184)
    j = np.where(z <= -LOGIT_CLIP, 0, np.where(z >= LOGIT_CLIP, LOG_ODDS_CELLS - 1, inner))
    return k * LOG_ODDS_CELLS + j


def binary_cell_table(
    scores: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    buckets: np.ndarray | None = None,
    n_bins: int = 15,
    class_label: str | None = None,
    slice_value: str = "",
) -> pa.Table:
    """Statistics rows of one binary key (model_version v, slice overall) from its rows, one
    per (cell, confidence bin, bucket); ``class_label`` sets ``class`` on every row."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=float)
    w = np.ones_like(s) if weights is None else np.asarray(weights, dtype=float)
    cell = cell_ids(s)
    b = assign_bins(s, n_bins)
    g = np.zeros(s.shape, dtype=int) if buckets is None else np.asarray(buckets)
    terms = {
        stats.SUM_WEIGHT: w,
        stats.SUM_WEIGHT_CONFIDENCE: w * s,
        stats.SUM_WEIGHT_OUTCOME: w * y,
        stats.SUM_WEIGHT_SQ: w * w,
        stats.SUM_WEIGHT_CONFIDENCE_SQ: w * s * s,
        stats.SUM_WEIGHT_CONFIDENCE_OUTCOME: w * s * y,
    }
    groups = sorted(set(zip(cell.tolist(), b.tolist(), g.tolist(), strict=True)))
    names = (stats.CELL, stats.BIN, stats.BUCKET, stats.N, *terms)
    columns: dict[str, list] = {name: [] for name in names}
    for cc, bb, gg in groups:
        rows = (cell == cc) & (b == bb) & (g == gg)
        columns[stats.CELL].append(cc)
        columns[stats.BIN].append(bb)
        columns[stats.BUCKET].append(gg if buckets is not None else None)
        columns[stats.N].append(int(rows.sum()))
        for name, values in terms.items():
            columns[name].append(float(values[rows].sum()))
    count = len(groups)
    keys = {
        stats.MODEL_VERSION: pa.array(["v"] * count),
        stats.SLICE_NAME: pa.array(["overall"] * count),
        stats.SLICE_VALUE: pa.array([slice_value] * count),
        stats.CLASS: pa.array([class_label] * count, type=pa.string()),
    }
    integers = (stats.CELL, stats.BIN, stats.BUCKET)
    data = {
        name: pa.array(values, type=pa.int32() if name in integers else None)
        for name, values in columns.items()
    }
    return pa.table({**keys, **data})
