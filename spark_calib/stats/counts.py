"""Input rows per validity reason, read from a statistics table."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.slicing.values import slice_name
from spark_calib.stats import schema
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


def counts_by_reason(stats: pa.Table, config: Config) -> dict[str | None, int]:
    """``row_counts`` of a statistics table already on the driver (Arrow), with no Spark job:
    the first slice set's top-label rows, n summed per reason."""
    first = stats.filter(
        pc.and_(
            pc.equal(stats.column(schema.SLICE_NAME), slice_name(config.slices[0])),
            pc.is_null(stats.column(schema.CLASS)),
        )
    )
    totals: dict[str | None, int] = {}
    for reason, n in zip(
        first.column(schema.REASON).to_pylist(), first.column(schema.N).to_pylist(), strict=True
    ):
        totals[reason] = totals.get(reason, 0) + int(n or 0)
    return totals
