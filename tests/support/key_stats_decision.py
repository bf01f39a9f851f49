"""One key's statistics rows for the decision kernel, built in plain NumPy from rows as the
Spark aggregation sums them (no Spark): every column of ``STATS_COLUMNS`` but ``reason``.

Top-label rows (class null) are grouped by (predicted_class, bin, bucket) for a binary task,
which sums its label (``n_positive``, Σw·y, Σw·y·nll), and by (true_class, predicted_class,
bin, bucket) otherwise. ``bin`` is only an extra grain (the sums split over it must add up
again). With ``class_rows``, one-vs-rest rows (class k) with the same keys and different sums
are added, which the decision family must ignore.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from spark_calib.stats import schema as stats

_INT_KEYS = (stats.BIN, stats.CELL, stats.THRESHOLD_BIN, stats.BUCKET, stats.RECALIBRATION_FIT)
_STRING_KEYS = (*stats.KEY_COLUMNS, stats.TRUE_CLASS, stats.PREDICTED_CLASS)


def class_labels(num_classes: int, class_names: Sequence[str] | None = None) -> list[str]:
    """The ``class`` strings of classes 0..K−1 (names, else the indices)."""
    return list(class_names) if class_names is not None else [str(k) for k in range(num_classes)]


def decision_key_table(
    true: np.ndarray,
    predicted: np.ndarray,
    weights: np.ndarray | None = None,
    nll: np.ndarray | None = None,
    *,
    binary: bool,
    num_classes: int = 2,
    class_names: Sequence[str] | None = None,
    bins: np.ndarray | None = None,
    buckets: np.ndarray | None = None,
    class_rows: bool = True,
    slice_value: str = "",
) -> pa.Table:
    """Statistics rows of one key (model_version v, slice ``overall``/``slice_value``) from
    rows with class indices ``true`` and ``predicted``, weights (1) and nll terms (0)."""
    y = np.asarray(true, dtype=int)
    k = np.asarray(predicted, dtype=int)
    w = np.ones(y.shape) if weights is None else np.asarray(weights, dtype=float)
    loss = np.zeros(y.shape) if nll is None else np.asarray(nll, dtype=float)
    b = np.zeros(y.shape, dtype=int) if bins is None else np.asarray(bins, dtype=int)
    g = np.zeros(y.shape, dtype=int) if buckets is None else np.asarray(buckets, dtype=int)
    names = class_labels(2 if binary else num_classes, class_names)
    rows: list[dict[str, object]] = []
    true_key = np.full(y.shape, -1) if binary else y
    positive = (y == 1).astype(float)
    groups = sorted(set(zip(true_key, k, b, g, strict=True)))
    for tt, kk, bb, gg in groups:
        inside = (true_key == tt) & (k == kk) & (b == bb) & (g == gg)
        row: dict[str, object] = {
            stats.CLASS: None,
            stats.TRUE_CLASS: None if binary else names[tt],
            stats.PREDICTED_CLASS: names[kk],
            stats.BIN: int(bb),
            stats.BUCKET: int(gg) if buckets is not None else None,
            stats.N: int(inside.sum()),
            stats.SUM_WEIGHT: float(w[inside].sum()),
            stats.SUM_WEIGHT_NLL: float((w * loss)[inside].sum()),
            stats.SUM_WEIGHT_SQ: _sum_of_squares(w[inside]),
        }
        if binary:
            row[stats.N_POSITIVE] = int(positive[inside].sum())
            row[stats.SUM_WEIGHT_POSITIVE] = float((w * positive)[inside].sum())
            row[stats.SUM_WEIGHT_POSITIVE_NLL] = float((w * positive * loss)[inside].sum())
        rows.append(row)
        if class_rows:
            for label in names:
                rows.append(
                    {
                        **row,
                        stats.CLASS: label,
                        stats.TRUE_CLASS: names[tt] if not binary else names[0],
                        stats.SUM_WEIGHT: 3.0 * float(w[inside].sum()) + 1.0,
                        stats.SUM_WEIGHT_NLL: 7.0,
                    }
                )
    return _to_table(rows, slice_value)


def _sum_of_squares(w: np.ndarray) -> float:
    # Weights near 1e308 overflow it to ∞, as Spark's sum would.
    with np.errstate(over="ignore"):
        return float(np.sum(w * w))


def _to_table(rows: list[dict[str, object]], slice_value: str) -> pa.Table:
    columns: dict[str, pa.Array] = {}
    for name in stats.STATS_COLUMNS:
        if name == stats.REASON:
            continue
        values = [row.get(name) for row in rows]
        if name == stats.MODEL_VERSION:
            values = ["v"] * len(rows)
        elif name == stats.SLICE_NAME:
            values = ["overall"] * len(rows)
        elif name == stats.SLICE_VALUE:
            values = [slice_value] * len(rows)
        if name in _STRING_KEYS:
            kind = pa.string()
        elif name in _INT_KEYS:
            kind = pa.int32()
        elif name in (stats.N, stats.N_POSITIVE):
            kind = pa.int64()
        else:
            kind = pa.float64()
        columns[name] = pa.array(values, type=kind)
    return pa.table(columns)
