"""Read a regression run's metrics and ``calibration_regression`` tables and draw the interval
calibration diagrams."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import cast

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from spark_calib.config import OutputConfig
from spark_calib_cli.console.worst_slices import (
    KEY_COLUMNS,
    RANK,
    REGRESSION_OVERVIEW_METRICS,
    REGRESSION_RANKING,
    regression_overview,
    worst_slices,
)
from spark_calib_cli.io.partitions import read_optional_partition
from spark_calib_cli.io.tables import REGRESSION_TABLE
from spark_calib_cli.report.regression import write_regression_calibration_diagrams

PANEL_METRICS = tuple(
    REGRESSION_OVERVIEW_METRICS[name] for name in ("miscalibration_area", "rmse", "coverage_0.9")
)
LEVEL_COLUMNS = ("level", "z", "observed", "gap", "n", "weight_sum")


def run_regression_report(
    spark: SparkSession,
    output: OutputConfig,
    metrics: DataFrame,
    run_date: dt.date,
    out_dir: Path,
    *,
    top_slices: int,
    min_slice_rows: int,
) -> list[Path]:
    """Write ``regression_calibration_<model_version>.png`` (overall + the ``top_slices``
    worst slices by miscalibration area with at least ``min_slice_rows`` rows) and return the
    paths; nothing when the run has no ``calibration_regression`` rows (no std column).
    """
    frames = regression_frames(
        spark, output, metrics, run_date, top_slices=top_slices, min_slice_rows=min_slice_rows
    )
    if frames is None:
        return []
    rows, panels = frames
    return write_regression_calibration_diagrams(
        rows, panels, out_dir, run_date=run_date.isoformat()
    )


def regression_frames(
    spark: SparkSession,
    output: OutputConfig,
    metrics: DataFrame,
    run_date: dt.date,
    *,
    top_slices: int,
    min_slice_rows: int,
) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The coverage levels and the panels (the frames of
    ``write_regression_calibration_diagrams``) of the overall slice and the worst slices, or
    None when the run has no ``calibration_regression`` rows."""
    levels = read_optional_partition(spark, output, REGRESSION_TABLE, run_date)
    if levels is None:
        return None
    chosen = worst_slices(
        regression_overview(metrics), top=top_slices, min_rows=min_slice_rows, by=REGRESSION_RANKING
    )
    panels = cast(pd.DataFrame, chosen.select(*KEY_COLUMNS, RANK, "n", *PANEL_METRICS).toPandas())
    on = [levels[key].eqNullSafe(chosen[key]) for key in KEY_COLUMNS]
    rows = cast(
        pd.DataFrame,
        levels.join(chosen.select(*KEY_COLUMNS), on=on, how="left_semi")
        .select(*KEY_COLUMNS, *LEVEL_COLUMNS)
        .toPandas(),
    )
    if rows.empty:
        return None
    return rows, panels
