"""Input rows per validity reason, read from a statistics table."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.slicing.values import slice_name
from spark_calib.stats import schema as stats


def row_counts(stats_df: DataFrame, config: Config) -> dict[str | None, int]:
    """Input rows per reason (None = valid). Every slice set partitions the input, so the first
    set's top-label rows count each input row exactly once. One small Spark job."""
    first_slice = slice_name(config.slices[0])
    totals = (
        stats_df.where((F.col(stats.SLICE_NAME) == first_slice) & F.col(stats.CLASS).isNull())
        .groupBy(stats.REASON)
        .agg(F.sum(stats.N).alias(stats.N))
        .collect()
    )
    return {row[stats.REASON]: int(row[stats.N]) for row in totals}
