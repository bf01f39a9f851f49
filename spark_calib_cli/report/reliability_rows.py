"""Read a classification run's metrics and reliability tables and pick the bins of the
reliability diagrams: each model version's overall slice and its worst slices by ECE."""

from __future__ import annotations

import datetime as dt
from typing import cast

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import RELIABILITY_COLUMNS
from spark_calib.config import OutputConfig
from spark_calib.stats import schema as stats_schema
from spark_calib_cli.console.worst_slices import KEY_COLUMNS, RANK, slice_overview, worst_slices
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.io.partitions import read_partition, table_location
from spark_calib_cli.io.tables import METRICS_TABLE, RELIABILITY_TABLE

BIN_COLUMNS = RELIABILITY_COLUMNS[len(stats_schema.KEY_COLUMNS) :]


def reliability_frames(
    spark: SparkSession,
    output: OutputConfig,
    metrics: DataFrame,
    run_date: dt.date,
    top_slices: int,
    min_slice_rows: int,
    granularity: str,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The top-label bins and the panels (the frames of ``write_reliability_diagrams``) of
    each model version's overall slice and ``top_slices`` worst slices by ECE. Raises
    ``MissingInputError`` when the window has no metric rows."""
    reliability = read_partition(
        spark, output, RELIABILITY_TABLE, run_date, granularity=granularity
    ).where(F.col("class").isNull())
    chosen = worst_slices(
        slice_overview(metrics, reliability), top=top_slices, min_rows=min_slice_rows
    )
    panels = cast(pd.DataFrame, chosen.select(*KEY_COLUMNS, RANK, "n", "ece", "mce").toPandas())
    if panels.empty:
        raise no_metric_rows(output, run_date)
    return _chosen_bins(reliability, chosen), panels


def _chosen_bins(reliability: DataFrame, chosen: DataFrame) -> pd.DataFrame:
    """The reliability bins of the ``chosen`` slices only, as pandas."""
    # Null-safe keys: model_version is null when the config names no version column.
    on = [reliability[key].eqNullSafe(chosen[key]) for key in KEY_COLUMNS]
    return cast(
        pd.DataFrame,
        reliability.join(chosen.select(*KEY_COLUMNS), on=on, how="left_semi")
        .select(*KEY_COLUMNS, *BIN_COLUMNS)
        .toPandas(),
    )


def no_metric_rows(output: OutputConfig, run_date: dt.date) -> MissingInputError:
    """The error of a report on a run date without metric rows."""
    return MissingInputError(
        f"{table_location(output, METRICS_TABLE)!r} has no rows for run_date {run_date}; "
        f"run spark-calib evaluate for that date first"
    )
