"""A key's statistics rows summed into arrays, with the jackknife replicates in front.

``replicated`` accumulates columns of the rows at given positions of an array; the result has
a leading replicate axis of length R: index 0 the point estimate (every row), then, under the
jackknife, replicate g = the total over the bucketed rows minus bucket g's rows (leave one
bucket out, as ``spark_calib.rows.canonical.jackknife_bucket`` assigns them). A replicate's
entry without rows (n = 0) has its sums set to exactly 0, not the rounding residue of
total − bucket.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from spark_calib.kernels.arrow_batch import Rows, floats, ints
from spark_calib.kernels.plan import FinishPlan
from spark_calib.stats.schema import BUCKET, N


def replicated(
    table: Rows,
    plan: FinishPlan,
    place: tuple[np.ndarray, ...],
    shape: tuple[int, ...],
    columns: Sequence[str],
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """n (int64) and each of ``columns`` (float64, null → NaN) of the rows, summed at
    ``place`` (one index array per axis of ``shape``), each of shape (R, *shape)."""
    values = {name: floats(table, name) for name in columns}
    values[N] = ints(table, N, 0).astype(float)
    bucket = ints(table, BUCKET, -1) if plan.jackknife else None
    size = int(np.prod(shape))
    # One flat index per row: bincount sums far faster than np.add.at.
    flat = np.ravel_multi_index(place, shape) if place[0].size else np.zeros(0, dtype=np.int64)
    if bucket is not None:
        inside = bucket >= 0
        bucketed = bucket[inside] * size + flat[inside]
    out: dict[str, np.ndarray] = {}
    for name, column in values.items():
        total = np.bincount(flat, weights=column, minlength=size).reshape(shape)
        if bucket is None:
            out[name] = total[None]
            continue
        per_bucket = np.bincount(
            bucketed, weights=column[inside], minlength=plan.buckets * size
        ).reshape((plan.buckets, *shape))
        out[name] = np.concatenate([total[None], per_bucket.sum(axis=0)[None] - per_bucket])
    n = np.rint(out.pop(N)).astype(np.int64)
    empty = n <= 0
    for name in out:
        out[name] = np.where(empty, 0.0, out[name])
    return n, out
