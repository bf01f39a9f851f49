"""Small derived frames (metrics, reliability, drift, alerts, …), computed once.

A derived table is a few thousand rows computed from the cached statistics, but every action on
its lazy frame (is it empty? write it, read it for the summary, check the alerts) recomputes
the whole plan, each time a few Spark jobs. Collecting it once and continuing on a local frame
over those rows makes each later action one small job or none. Only derived tables go through
here, never row-level data (the input or the invalid rows).

The rows come to the driver as one Arrow table, which becomes the local frame as it is (a local
relation, read by no Python worker: ``spark_calib.local_data``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, Row, SparkSession


@dataclass(frozen=True)
class LocalFrame:
    """The rows of a small frame as Arrow, and a DataFrame over them (same schema)."""

    table: pa.Table
    frame: DataFrame

    @property
    def empty(self) -> bool:
        """Whether the frame has no rows."""
        return self.table.num_rows == 0

    @property
    def rows(self) -> list[Row]:
        """The rows as ``Row`` objects, converted on each call: for the few callers that read
        rows one by one (the alerts). Converting every derived table of a 14-day backfill took
        9 s, most of it for tables whose rows nobody read."""
        return self.frame.collect()

    def values(self, column: str) -> set[Any]:
        """The distinct values of ``column`` (dates as ``datetime.date``)."""
        return set(self.table.column(column).to_pylist())


def in_memory(spark: SparkSession, frame: DataFrame) -> LocalFrame:
    """Collect ``frame`` (one Spark job) and return it as Arrow with a local DataFrame over it."""
    table = frame.toArrow()
    return LocalFrame(table, spark.createDataFrame(table, frame.schema))
