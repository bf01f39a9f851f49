"""Small inputs: ``evaluate`` makes one action of its statistics (the aggregation and, in the
same action, the statistics to the driver), and reading its metrics, reliability and stats
starts no further job. Jobs are counted with the status tracker, by job group."""

from __future__ import annotations

import uuid

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_calib import evaluate

CONFIG = {
    "task": "binary",
    "columns": {"score": "s", "label": "y", "model_version": "mv"},
    "slices": [[], ["g"]],
}
# The aggregation, the limit and the cache's materialisation under adaptive execution.
MAX_JOBS = 4


def test_evaluate_of_200_rows_and_its_outputs_launch_at_most_four_jobs(
    spark: SparkSession,
) -> None:
    df = spark.range(200).select(
        ((F.col("id") % 97) / 97.0).alias("s"),
        (F.col("id") % 2).cast("int").alias("y"),
        (F.col("id") % 3).cast("string").alias("g"),
        F.lit("v1").alias("mv"),
    )
    context = spark.sparkContext
    group = f"job-count-{uuid.uuid4()}"
    context.setJobGroup(group, "evaluate of 200 rows")
    try:
        result = evaluate(df, CONFIG)
        metrics = result.metrics.collect()
        reliability = result.reliability.collect()
        stats = result.stats.collect()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    jobs = context.statusTracker().getJobIdsForGroup(group)
    assert len({row.metric for row in metrics}) == 7
    assert len(reliability) == 4 * 15
    assert sum(row.n for row in stats if row.slice_name == "overall") == 200
    assert 0 < len(jobs) <= MAX_JOBS, jobs
    result.unpersist()
