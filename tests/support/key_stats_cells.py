"""One binary key's fine-cell statistics rows built in plain NumPy from rows, as the Spark
aggregation would sum them, for the ranking kernel tests (no Spark).

The fine-cell grid is written here again from its documented definition (grid version 2,
``docs/metrics.md`` "Fine cells" and the ``spark_calib.rows.cells`` docstring), without
importing it, so that the tests check the kernel against an independent reading:

- equal-width index k ∈ 0..999: k/1000 ≤ s < (k + 1)/1000 with the double edges k/1000, the
  last cell also holding 1.0;
- log-odds index j ∈ 0..1185 of z = log(s) − log(1 − s) clipped to ±37: j = 0 at z = −37 (s = 0
  included), j = 1185 at z = 37 (s = 1 included), else j = ⌊16·z⌋ + 593 (kept in 1..1184);
- cell id = 1186·k + j, increasing with s.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from spark_calib.stats import schema as stats

LOGIT_LIMIT = 37.0
LOG_ODDS_CELLS = 1186

_STRINGS = (
    stats.MODEL_VERSION,
    stats.SLICE_NAME,
    stats.SLICE_VALUE,
    stats.CLASS,
    stats.TRUE_CLASS,
    stats.PREDICTED_CLASS,
)
_INTS = (stats.BIN, stats.CELL, stats.THRESHOLD_BIN, stats.BUCKET)
# The statistics table's valid-row columns (every column but ``reason``) and their types.
SCHEMA = pa.schema(
    [
        pa.field(
            name,
            pa.string()
            if name in _STRINGS
            else pa.int32()
            if name in _INTS
            else pa.bool_()
            if name == stats.RECALIBRATION_FIT
            else pa.int64()
            if name in (stats.N, stats.N_POSITIVE)
            else pa.float64(),
        )
        for name in stats.STATS_COLUMNS
        if name != stats.REASON
    ]
)


def equal_width_index(s: np.ndarray) -> np.ndarray:
    """k with k/1000 ≤ s < (k + 1)/1000 on the double edges, in 0..999."""
    k = np.floor(s * 1000.0).astype(np.int64)
    k = k + (s >= (k + 1) / 1000.0).astype(np.int64) - (s < k / 1000.0).astype(np.int64)
    return np.clip(k, 0, 999)


def log_odds_index(s: np.ndarray) -> np.ndarray:
    """j ∈ 0..1185 of the clipped logit of s."""
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = np.log(s) - np.log1p(-s)
    z = np.where(s <= 0.0, -LOGIT_LIMIT, np.where(s >= 1.0, LOGIT_LIMIT, raw))
    z = np.clip(z, -LOGIT_LIMIT, LOGIT_LIMIT)
    inner = np.clip(np.floor(16.0 * z).astype(np.int64) + 593, 1, 1184)
    return np.where(z <= -LOGIT_LIMIT, 0, np.where(z >= LOGIT_LIMIT, 1185, inner))


def cell_ids(scores: np.ndarray) -> np.ndarray:
    """The union-grid cell id 1186·k + j of each score."""
    s = np.asarray(scores, dtype=float)
    return equal_width_index(s) * LOG_ODDS_CELLS + log_odds_index(s)


def cell_key_table(
    scores: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    buckets: np.ndarray | None = None,
    split: np.ndarray | None = None,
    top_label: bool = False,
    class_label: str | None = None,
    cells: bool = True,
    squares: bool = True,
    key: Sequence[str | None] = ("v", "overall", ""),
) -> pa.Table:
    """Statistics rows of one binary key, one per (cell, bucket, split) group of the rows.

    ``split`` (ints) is a further key that cuts a cell into several rows (here in
    ``threshold_bin``, as a threshold inside a cell would); ``top_label`` takes the calibration
    probability c = max(s, 1 − s) instead of s; ``class_label`` sets ``class`` (a one-vs-rest
    row, which the ranking family must not read); ``cells`` False leaves ``cell`` null;
    ``squares`` False leaves Σw·c² null (statistics written before it). Each row carries n,
    n_positive, Σw, Σw·y, Σw·c, Σw·c², Σw·y (outcome) and Σw²; the other sums are null."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=float)
    w = np.ones_like(s) if weights is None else np.asarray(weights, dtype=float)
    c = np.maximum(s, 1.0 - s) if top_label else s
    cell = cell_ids(s)
    g = np.zeros(s.shape, dtype=np.int64) if buckets is None else np.asarray(buckets)
    t = np.zeros(s.shape, dtype=np.int64) if split is None else np.asarray(split)
    sums = {
        stats.SUM_WEIGHT: w,
        stats.SUM_WEIGHT_POSITIVE: w * y,
        stats.SUM_WEIGHT_OUTCOME: w * y,
        stats.SUM_WEIGHT_CONFIDENCE: w * c,
        stats.SUM_WEIGHT_CONFIDENCE_SQ: w * c * c,
        stats.SUM_WEIGHT_SQ: w * w,
    }
    groups = sorted({(int(a), int(b), int(d)) for a, b, d in zip(cell, g, t, strict=True)})
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    for cell_id, bucket, part in groups:
        rows = (cell == cell_id) & (g == bucket) & (t == part)
        values = {
            stats.MODEL_VERSION: key[0],
            stats.SLICE_NAME: key[1],
            stats.SLICE_VALUE: key[2],
            stats.CLASS: class_label,
            stats.CELL: cell_id if cells else None,
            stats.THRESHOLD_BIN: part if split is not None else None,
            stats.BUCKET: bucket if buckets is not None else None,
            stats.N: int(rows.sum()),
            stats.N_POSITIVE: int(y[rows].sum()),
        }
        for name, terms in sums.items():
            values[name] = float(terms[rows].sum())
        if not squares:
            values[stats.SUM_WEIGHT_CONFIDENCE_SQ] = None
        for name in SCHEMA.names:
            columns[name].append(values.get(name))
    return pa.table(columns, schema=SCHEMA)
