"""Merge statistics tables: stats(A ∪ B) = stats(A) + stats(B), key by key."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.stats import schema as stats


def combine_stats(*frames: DataFrame) -> DataFrame:
    """Sum statistics tables of disjoint inputs (other days, other shards) into one.

    Extra columns such as ``run_date`` or ``run_id`` are dropped; the result has the statistics
    table's columns, one row per (model_version, slice_name, slice_value, class, bin, reason).
    """
    if not frames:
        raise ValueError("combine_stats needs at least one statistics table")
    union = frames[0].select(*stats.STATS_COLUMNS)
    for frame in frames[1:]:
        union = union.unionByName(frame.select(*stats.STATS_COLUMNS))
    return (
        union.groupBy(*stats.GROUP_COLUMNS)
        .agg(*[F.sum(column).alias(column) for column in (stats.N, *stats.SUM_COLUMNS)])
        .select(*stats.STATS_COLUMNS)
    )
