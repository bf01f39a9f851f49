"""One binary key's statistics rows at the fine-cell grain, built in plain NumPy from rows as
the Spark aggregation would sum them, for the cell-calibration kernel tests (no Spark).

The fine-cell grid is reimplemented here from ``spark_calib.rows.cells``'s documented
definition (grid version 2): cell = 1186·k + j with k the equal-width cell of s among 1000
(left-closed edges k/1000, 1.0 in the last) and j the log-odds cell of z = logit(s) clipped to
±37: j = 0 at z ≤ −37, 1185 at z ≥ 37, else min(max(⌊16z⌋ + 593, 1), 1184).

Rows are grouped by (class null, bin of 15, cell, true_class, bucket): a cell is spread over
several statistics rows (the label and the calibration bin), as in a real table, so a kernel
must sum them. ``decoys`` adds rows the family must not read: one-vs-rest rows (class "1")
with the same cells, and top-label rows without a cell.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from spark_calib.stats import schema as stats

EQUAL_WIDTH = 1000
STEP = 16
LIMIT = 37.0
LOG_ODDS_CELLS = 1186


def equal_width_index(s: np.ndarray, n_bins: int) -> np.ndarray:
    """Left-closed bin of s among ``n_bins`` equal-width bins, corrected at the edges."""
    guess = np.floor(s * n_bins).astype(np.int64)
    above = s >= (guess + 1) / n_bins
    below = s < guess / n_bins
    return np.clip(guess + above - below, 0, n_bins - 1)


def logit(s: np.ndarray) -> np.ndarray:
    """log(s) − log(1 − s) clipped to ±37 (s = 0 and s = 1 included)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = np.log(s) - np.log1p(-s)
    return np.where(s <= 0.0, -LIMIT, np.where(s >= 1.0, LIMIT, np.clip(raw, -LIMIT, LIMIT)))


def cell_ids(s: np.ndarray) -> np.ndarray:
    """The grid-2 cell id of each score."""
    z = logit(s)
    inner = np.clip(np.floor(z * STEP).astype(np.int64) + LOG_ODDS_CELLS // 2, 1, 1184)
    j = np.where(z <= -LIMIT, 0, np.where(z >= LIMIT, LOG_ODDS_CELLS - 1, inner))
    return equal_width_index(s, EQUAL_WIDTH) * LOG_ODDS_CELLS + j


def cell_key_table(
    scores: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    buckets: np.ndarray | None = None,
    decoys: bool = False,
    slice_value: str = "",
) -> pa.Table:
    """Statistics rows (every column of ``STATS_COLUMNS`` but reason) of one binary key
    (model_version v, slice overall) from its rows."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=float)
    w = np.ones_like(s) if weights is None else np.asarray(weights, dtype=float)
    bucket = np.full(s.shape, -1) if buckets is None else np.asarray(buckets, dtype=np.int64)
    keys = {
        stats.BIN: equal_width_index(s, 15),
        stats.CELL: cell_ids(s),
        stats.TRUE_CLASS: y.astype(np.int64),
        stats.BUCKET: bucket,
    }
    parts = [_grouped(keys, s, y, w, klass=None)]
    if decoys:
        parts.append(_grouped(keys, s, y, w, klass="1"))
        no_cell = {**keys, stats.CELL: np.full(s.shape, -1)}
        # Sums unlike any cell's, so that reading these rows would show.
        parts.append(_grouped(no_cell, 1.0 - s, 1.0 - y, 3.0 * w, klass=None))
    columns = {name: [value for part in parts for value in part[name]] for name in parts[0]}
    count = len(columns[stats.N])
    out: dict[str, pa.Array] = {}
    for name in stats.STATS_COLUMNS:
        if name == stats.REASON:
            continue
        if name == stats.MODEL_VERSION:
            out[name] = pa.array(["v"] * count)
        elif name == stats.SLICE_NAME:
            out[name] = pa.array(["overall"] * count)
        elif name == stats.SLICE_VALUE:
            out[name] = pa.array([slice_value] * count)
        elif name in (stats.CLASS, stats.TRUE_CLASS):
            out[name] = pa.array(columns[name], type=pa.string())
        elif name in stats.GROUP_COLUMNS:
            kind = pa.bool_() if name == stats.RECALIBRATION_FIT else pa.int32()
            out[name] = pa.array(columns.get(name, [None] * count), type=kind)
        elif name in (stats.N, stats.N_POSITIVE):
            out[name] = pa.array(columns[name], type=pa.int64())
        else:
            out[name] = pa.array(columns.get(name, [None] * count), type=pa.float64())
    return pa.table(out)


def _grouped(
    keys: dict[str, np.ndarray],
    s: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    klass: str | None,
) -> dict[str, list]:
    """The rows summed per distinct combination of ``keys`` (cell −1: null)."""
    terms = {
        stats.SUM_WEIGHT: w,
        stats.SUM_WEIGHT_CONFIDENCE: w * s,
        stats.SUM_WEIGHT_OUTCOME: w * y,
        stats.SUM_WEIGHT_SQ: w * w,
        stats.SUM_WEIGHT_CONFIDENCE_SQ: w * s * s,
        stats.SUM_WEIGHT_CONFIDENCE_OUTCOME: w * s * y,
        stats.SUM_WEIGHT_LOGIT: w * logit(s),
        stats.SUM_WEIGHT_POSITIVE: w * y,
        stats.SUM_WEIGHT_SQ_OUTCOME: w * w * y,
        stats.SUM_WEIGHT_SQ_CONFIDENCE: w * w * s,
    }
    stacked = np.stack(list(keys.values()), axis=1)
    distinct, inverse = np.unique(stacked, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    out: dict[str, list] = {stats.CLASS: [klass] * len(distinct)}
    for position, name in enumerate(keys):
        column = distinct[:, position]
        if name == stats.TRUE_CLASS:
            out[name] = [str(v) for v in column]
        else:
            out[name] = [None if v < 0 else int(v) for v in column]
    out[stats.N] = np.bincount(inverse, minlength=len(distinct)).tolist()
    positives = np.bincount(inverse, weights=y, minlength=len(distinct))
    out[stats.N_POSITIVE] = np.rint(positives).astype(np.int64).tolist()
    for name, values in terms.items():
        out[name] = np.bincount(inverse, weights=values, minlength=len(distinct)).tolist()
    return out
