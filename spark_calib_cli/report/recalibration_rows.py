"""Read a window's ``calibration_recalibration`` rows and draw the before/after reliability
figures of each model version (``spark_calib_cli.report.recalibration``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import cast

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_calib.config import Config, OutputConfig
from spark_calib_cli.io.partitions import GRANULARITY, read_optional_partition
from spark_calib_cli.io.tables import RECALIBRATION_TABLE
from spark_calib_cli.report.recalibration import (
    DEFAULT_WORST_SLICES,
    write_recalibration_diagrams,
)

# The table's columns the figures read (a table written before the reliability columns
# existed has none to draw).
FIGURE_COLUMNS = (
    "model_version",
    "slice_name",
    "slice_value",
    "method",
    "parameters",
    "knots",
    "n_eval",
    "fallback",
    "ece_before",
    "ece_after",
    "reliability_before",
    "reliability_after",
)


def recalibration_frame(
    spark: SparkSession, output: OutputConfig, run_date: dt.date, granularity: str
) -> pd.DataFrame | None:
    """The window's recalibration rows with ``FIGURE_COLUMNS``, or None when the run wrote
    no recalibration table (or one without the reliability columns)."""
    frame = read_optional_partition(spark, output, RECALIBRATION_TABLE, run_date)
    if frame is None or not set(FIGURE_COLUMNS) <= set(frame.columns):
        return None
    if GRANULARITY in frame.columns:
        frame = frame.where(F.col(GRANULARITY) == F.lit(granularity))
    # The table holds every slice × method: driver-sized, as it was built on the driver.
    rows = cast(pd.DataFrame, frame.select(*FIGURE_COLUMNS).toPandas())
    return None if rows.empty else rows


def run_recalibration_report(
    spark: SparkSession,
    config: Config,
    output: OutputConfig,
    run_date: dt.date,
    out_dir: Path,
    granularity: str,
    *,
    worst: int = DEFAULT_WORST_SLICES,
) -> list[Path]:
    """Write ``recalibration_<model_version>.png`` for each model version of the window's
    recalibration rows and return the paths (none without that table)."""
    rows = recalibration_frame(spark, output, run_date, granularity)
    if rows is None:
        return []
    return write_recalibration_diagrams(
        rows,
        out_dir,
        run_date=run_date.isoformat(),
        n_bins=config.binning.n_bins,
        worst=worst,
        positive_class=config.task == "binary",
    )
