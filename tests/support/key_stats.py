"""One key's statistics rows built in plain NumPy from rows, as the Spark aggregation would
sum them, for the kernel tests (no Spark): per (class, bin, bucket), n and the weighted sums
of a binary positive-class view (c = s, o = y)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from spark_calib.stats import schema as stats
from tests.support.reference import assign_bins


def binary_key_table(
    scores: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    n_bins: int = 15,
    buckets: np.ndarray | None = None,
    eps: float = 1e-15,
) -> pa.Table:
    """Statistics rows of one binary key (model_version v, slice overall) from its rows."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=float)
    w = np.ones_like(s) if weights is None else np.asarray(weights, dtype=float)
    b = assign_bins(s, n_bins)
    g = np.zeros(s.shape, dtype=int) if buckets is None else np.asarray(buckets)
    brier = (s - y) ** 2
    nll = -np.log(np.clip(np.where(y == 1, s, 1.0 - s), eps, None))
    correct = ((s >= 0.5) == (y == 1)).astype(float)
    spiegelhalter = (1 - 2 * s) ** 2 * s * (1 - s)
    terms = {
        stats.SUM_WEIGHT: w,
        stats.SUM_WEIGHT_CONFIDENCE: w * s,
        stats.SUM_WEIGHT_OUTCOME: w * y,
        stats.SUM_WEIGHT_CORRECT: w * correct,
        stats.SUM_WEIGHT_BRIER: w * brier,
        stats.SUM_WEIGHT_NLL: w * nll,
        stats.SUM_WEIGHT_SQ: w * w,
        stats.SUM_WEIGHT_CONFIDENCE_SQ: w * s * s,
        stats.SUM_WEIGHT_CONFIDENCE_OUTCOME: w * s * y,
        stats.SUM_WEIGHT_SQ_SPIEGELHALTER: w * w * spiegelhalter,
        stats.SUM_WEIGHT_SQ_OUTCOME: w * w * y,
        stats.SUM_WEIGHT_SQ_CONFIDENCE: w * w * s,
        stats.SUM_WEIGHT_SQ_CONFIDENCE_SQ: w * w * s * s,
        stats.SUM_WEIGHT_SQ_CONFIDENCE_OUTCOME: w * w * s * y,
        stats.SUM_WEIGHT_SQ_CORRECT: w * w * correct,
        stats.SUM_WEIGHT_SQ_BRIER: w * w * brier,
        stats.SUM_WEIGHT_SQ_BRIER_SQ: w * w * brier * brier,
        stats.SUM_WEIGHT_SQ_NLL: w * w * nll,
        stats.SUM_WEIGHT_SQ_NLL_SQ: w * w * nll * nll,
    }
    groups = sorted({(int(bb), int(gg)) for bb, gg in zip(b, g, strict=True)})
    columns: dict[str, list] = {name: [] for name in (stats.BIN, stats.BUCKET, stats.N, *terms)}
    for bb, gg in groups:
        rows = (b == bb) & (g == gg)
        columns[stats.BIN].append(bb)
        columns[stats.BUCKET].append(gg if buckets is not None else None)
        columns[stats.N].append(int(rows.sum()))
        for name, values in terms.items():
            columns[name].append(float(values[rows].sum()))
    count = len(groups)
    keys = {
        stats.MODEL_VERSION: pa.array(["v"] * count),
        stats.SLICE_NAME: pa.array(["overall"] * count),
        stats.SLICE_VALUE: pa.array([""] * count),
        stats.CLASS: pa.array([None] * count, type=pa.string()),
    }
    data = {
        name: pa.array(values, type=pa.int32() if name in (stats.BIN, stats.BUCKET) else None)
        for name, values in columns.items()
    }
    return pa.table({**keys, **data})
