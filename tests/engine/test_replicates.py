"""Leave-one-bucket-out statistics (``replicate_stats``), by hand.

G = 3 buckets, one model version v1, overall slice. Key A (bin 1) has a bucket-0 row (n 2,
Σw 3.0, Σw·y 1.0) and a bucket-2 row (n 1, Σw 0.5, Σw·y 0.0); key B (bin 4) only a bucket-1
row (n 1, Σw 1.0, Σw·y 1.0). Replicate g sums the buckets other than g:
  A: g = 0 → bucket 2: n 1, Σw 0.5, Σw·y 0 (exactly: no positive is left);
     g = 1 → both: n 3, Σw 3.5, Σw·y 1; g = 2 → bucket 0: n 2, Σw 3.0, Σw·y 1.
  B: g = 0 and g = 2 → n 1, Σw 1.0, Σw·y 1; g = 1 → no row (all of B is in bucket 1).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from spark_calib import evaluate
from spark_calib.metrics.uncertainty import replicate_stats
from spark_calib.stats import schema as stats

SEPARATOR = "\u001f"


def _row(bin_: int, bucket: int, n: int, weight: float, positive: float) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(stats.STATS_COLUMNS)
    row.update(
        {
            stats.MODEL_VERSION: "v1",
            stats.SLICE_NAME: "overall",
            stats.SLICE_VALUE: "overall",
            stats.BIN: bin_,
            stats.BUCKET: bucket,
            stats.N: n,
            stats.SUM_WEIGHT: weight,
            stats.SUM_WEIGHT_OUTCOME: positive,
        }
    )
    return row


def test_replicates_sum_every_bucket_but_one(spark: SparkSession) -> None:
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "model_version": "v"},
        "uncertainty": {"method": "jackknife", "buckets": 3},
    }
    probe = spark.createDataFrame([("v1", 0.5, 1)], "v string, s double, y int")
    schema = evaluate(probe, config).stats.schema
    rows = [_row(1, 0, 2, 3.0, 1.0), _row(1, 2, 1, 0.5, 0.0), _row(4, 1, 1, 1.0, 1.0)]
    frame = spark.createDataFrame([tuple(r[c] for c in schema.names) for r in rows], schema)

    got = {
        (r.model_version, r.bin): (r.n, r.sum_weight, r.sum_weight_outcome, r.bucket)
        for r in replicate_stats(frame, 3).collect()
    }

    def key(g: int, bin_: int) -> tuple[str, int]:
        return (f"{g}{SEPARATOR}v1", bin_)

    assert got == {
        key(0, 1): (1, 0.5, 0.0, None),
        key(1, 1): (3, 3.5, 1.0, None),
        key(2, 1): (2, 3.0, 1.0, None),
        key(0, 4): (1, 1.0, 1.0, None),
        key(2, 4): (1, 1.0, 1.0, None),
    }
