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

from pyspark.sql import DataFrame, Row, SparkSession


@dataclass(frozen=True)
class LocalFrame:
    """The rows of a small frame, and a DataFrame over them (same schema)."""

    rows: list[Row]
    frame: DataFrame

    @property
    def empty(self) -> bool:
        """Whether the frame has no rows."""
        return not self.rows


def in_memory(spark: SparkSession, frame: DataFrame) -> LocalFrame:
    """Collect ``frame`` (one Spark job) and return its rows with a local DataFrame over them."""
    local = spark.createDataFrame(frame.toArrow(), frame.schema)
    return LocalFrame(local.collect(), local)
