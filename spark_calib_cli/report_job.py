"""Read a run date's metrics and reliability tables and draw the reliability diagrams."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import cast

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_calib.config import Config
from spark_calib.metrics.reliability import RELIABILITY_COLUMNS
from spark_calib.stats import schema as stats_schema
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.evaluate_job import check_job_config
from spark_calib_cli.ranking import (
    DEFAULT_MIN_SLICE_ROWS,
    KEY_COLUMNS,
    RANK,
    slice_overview,
    worst_slices,
)
from spark_calib_cli.report import write_reliability_diagrams
from spark_calib_cli.tables import METRICS_TABLE, RELIABILITY_TABLE
from spark_calib_cli.write import read_partition, table_location

DEFAULT_REPORT_SLICES = 5
BIN_COLUMNS = RELIABILITY_COLUMNS[len(stats_schema.KEY_COLUMNS) :]


def default_report_dir(run_date: dt.date) -> Path:
    """``calibration_reports/run_date=YYYY-MM-DD`` under the working directory."""
    return Path("calibration_reports") / f"run_date={run_date.isoformat()}"


def run_report(
    spark: SparkSession,
    config: Config,
    run_date: dt.date,
    out_dir: Path,
    *,
    top_slices: int = DEFAULT_REPORT_SLICES,
    min_slice_rows: int = DEFAULT_MIN_SLICE_ROWS,
) -> list[Path]:
    """Write one PNG per model version (overall + the ``top_slices`` worst slices by ECE with at
    least ``min_slice_rows`` rows) and return their paths.

    Only the chosen slices' top-label bins reach the driver, so the cost does not grow with
    the number of slices. Raises ``MissingInputError`` when the tables or the run date's
    partition are missing.
    """
    _, output = check_job_config(config)
    metrics = read_partition(spark, output, METRICS_TABLE, run_date)
    reliability = read_partition(spark, output, RELIABILITY_TABLE, run_date).where(
        F.col("class").isNull()
    )
    chosen = worst_slices(
        slice_overview(metrics, reliability), top=top_slices, min_rows=min_slice_rows
    )
    panels = cast(pd.DataFrame, chosen.select(*KEY_COLUMNS, RANK, "n", "ece", "mce").toPandas())
    if panels.empty:
        raise MissingInputError(
            f"{table_location(output, METRICS_TABLE)!r} has no rows for run_date {run_date}; "
            f"run spark-calib evaluate for that date first"
        )
    # Null-safe keys: model_version is null when the config names no version column.
    on = [reliability[key].eqNullSafe(chosen[key]) for key in KEY_COLUMNS]
    bins = cast(
        pd.DataFrame,
        reliability.join(chosen.select(*KEY_COLUMNS), on=on, how="left_semi")
        .select(*KEY_COLUMNS, *BIN_COLUMNS)
        .toPandas(),
    )
    return write_reliability_diagrams(bins, panels, out_dir, run_date=run_date.isoformat())
