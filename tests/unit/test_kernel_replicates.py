"""Leave-one-bucket-out sums (``spark_calib.kernels.replicates.replicated``), by hand.

G = 3 buckets, one key. Bin 1 has a bucket-0 row (n 2, Σw 3.0, Σw·y 1.0) and a bucket-2 row
(n 1, Σw 0.5, Σw·y 0.0); bin 4 only a bucket-1 row (n 1, Σw 1.0, Σw·y 1.0). Replicate g sums
the buckets other than g:
  bin 1: g = 0 → bucket 2: n 1, Σw 0.5, Σw·y 0 (exactly: no positive is left);
         g = 1 → both: n 3, Σw 3.5, Σw·y 1; g = 2 → bucket 0: n 2, Σw 3.0, Σw·y 1.
  bin 4: g = 0 and g = 2 → n 1, Σw 1.0, Σw·y 1; g = 1 → n 0 and every sum exactly 0.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.replicates import replicated
from spark_calib.stats import schema as stats

PLAN = FinishPlan((), 15, False, "jackknife", 4.3, 3)


def test_replicates_sum_every_bucket_but_one() -> None:
    table = pa.table(
        {
            stats.BIN: pa.array([1, 1, 4], pa.int32()),
            stats.BUCKET: pa.array([0, 2, 1], pa.int32()),
            stats.N: pa.array([2, 1, 1], pa.int64()),
            stats.SUM_WEIGHT: [3.0, 0.5, 1.0],
            stats.SUM_WEIGHT_OUTCOME: [1.0, 0.0, 1.0],
        }
    )
    bins = table.column(stats.BIN).to_numpy()
    n, sums = replicated(table, PLAN, (bins,), (5,), (stats.SUM_WEIGHT, stats.SUM_WEIGHT_OUTCOME))
    # Rows: the point estimate, then g = 0, 1, 2; columns: bins 1 and 4.
    assert n[:, [1, 4]].tolist() == [[3, 1], [1, 1], [3, 0], [2, 1]]
    assert sums[stats.SUM_WEIGHT][:, [1, 4]].tolist() == [
        [3.5, 1.0],
        [0.5, 1.0],
        [3.5, 0.0],
        [3.0, 1.0],
    ]
    assert sums[stats.SUM_WEIGHT_OUTCOME][:, [1, 4]].tolist() == [
        [1.0, 1.0],
        [0.0, 1.0],
        [1.0, 0.0],
        [1.0, 1.0],
    ]
    # The other bins hold nothing in any replicate.
    assert not n[:, [0, 2, 3]].any()


def test_without_the_jackknife_there_is_only_the_point_estimate() -> None:
    table = pa.table(
        {stats.BIN: pa.array([0, 0], pa.int32()), stats.N: [1, 2], stats.SUM_WEIGHT: [0.25, 1.0]}
    )
    plan = FinishPlan((), 15, False, "analytic", 1.96, 0)
    n, sums = replicated(table, plan, (np.array([0, 0]),), (1,), (stats.SUM_WEIGHT,))
    assert n.tolist() == [[3]]
    assert sums[stats.SUM_WEIGHT].tolist() == [[1.25]]
