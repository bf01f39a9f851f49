"""Input rows per validity reason, read from a statistics table."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.slicing.values import slice_name
from spark_calib.stats import schema
from spark_calib.stats import schema as stats

# (model_version, reason) → input rows; reason None = valid.
VersionCounts = dict[tuple[str | None, str | None], int]


def row_counts(stats_df: DataFrame, config: Config) -> dict[str | None, int]:
    """Input rows per reason (None = valid). Every slice set partitions the input, so the first
    set's top-label rows count each input row exactly once. One small Spark job."""
    return reason_totals(version_row_counts(stats_df, config))


def version_row_counts(stats_df: DataFrame, config: Config) -> VersionCounts:
    """``row_counts`` per model version: (model_version, reason) → input rows. One small
    Spark job."""
    first_slice = slice_name(config.slices[0])
    totals = (
        stats_df.where((F.col(stats.SLICE_NAME) == first_slice) & F.col(stats.CLASS).isNull())
        .groupBy(stats.MODEL_VERSION, stats.REASON)
        .agg(F.sum(stats.N).alias(stats.N))
        .collect()
    )
    return {(row[stats.MODEL_VERSION], row[stats.REASON]): int(row[stats.N]) for row in totals}


def counts_by_reason(stats: pa.Table, config: Config) -> dict[str | None, int]:
    """``row_counts`` of a statistics table already on the driver (Arrow), with no Spark job:
    the first slice set's top-label rows, n summed per reason."""
    return reason_totals(version_counts_by_reason(stats, config))


def version_counts_by_reason(stats: pa.Table, config: Config) -> VersionCounts:
    """``version_row_counts`` of a statistics table already on the driver, with no Spark job."""
    first = stats.filter(
        pc.and_(
            pc.equal(stats.column(schema.SLICE_NAME), slice_name(config.slices[0])),
            pc.is_null(stats.column(schema.CLASS)),
        )
    )
    totals: VersionCounts = {}
    for version, reason, n in zip(
        first.column(schema.MODEL_VERSION).to_pylist(),
        first.column(schema.REASON).to_pylist(),
        first.column(schema.N).to_pylist(),
        strict=True,
    ):
        totals[version, reason] = totals.get((version, reason), 0) + int(n or 0)
    return totals


def reason_totals(counts: Mapping[tuple[str | None, str | None], int]) -> dict[str | None, int]:
    """(model_version, reason) → rows summed over the versions: reason → rows."""
    totals: dict[str | None, int] = {}
    for (_, reason), n in counts.items():
        totals[reason] = totals.get(reason, 0) + n
    return totals
