"""Read a binary run's ``calibration_roc`` table and draw the ROC and precision-recall curves
of each model version's overall slice."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import cast

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib.config import OutputConfig
from spark_calib.constants import OVERALL_SLICE_NAME
from spark_calib_cli.console.worst_slices import KEY_COLUMNS, RANK, VALUE
from spark_calib_cli.io.partitions import read_optional_partition
from spark_calib_cli.io.tables import ROC_TABLE
from spark_calib_cli.report.roc import write_roc_curves

AUC_METRICS = ("roc_auc", "roc_auc_binned", "pr_auc", "pr_auc_binned")
POINT_COLUMNS = ("point", "threshold", "fpr", "tpr", "precision")


def run_roc_report(
    spark: SparkSession,
    output: OutputConfig,
    metrics: DataFrame,
    run_date: dt.date,
    out_dir: Path,
) -> list[Path]:
    """Write ``roc_<model_version>.png`` for each model version with ROC points in the run
    date's ``calibration_roc`` partition and return the paths (none without that table)."""
    frames = roc_frames(spark, output, metrics, run_date)
    if frames is None:
        return []
    points, summary = frames
    return write_roc_curves(points, summary, out_dir, run_date=run_date.isoformat())


def roc_frames(
    spark: SparkSession, output: OutputConfig, metrics: DataFrame, run_date: dt.date
) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The overall slices' ROC points of the run date and their summary (the frames of
    ``write_roc_curves``), or None when the run wrote no ``calibration_roc`` rows."""
    points = read_optional_partition(spark, output, ROC_TABLE, run_date)
    if points is None:
        return None
    is_overall = F.col("slice_name") == F.lit(OVERALL_SLICE_NAME)
    overall = cast(
        pd.DataFrame,
        points.where(is_overall).select(*KEY_COLUMNS, *POINT_COLUMNS).toPandas(),
    )
    if overall.empty:
        return None
    return overall, _overall_summary(metrics)


def _overall_summary(metrics: DataFrame) -> pd.DataFrame:
    """Per model version: the overall key, rank 0, n and the AUC metrics (null when absent)."""
    overall = metrics.where(
        (F.col("slice_name") == F.lit(OVERALL_SLICE_NAME)) & F.col("class").isNull()
    )
    summary = overall.groupBy(*KEY_COLUMNS).agg(
        F.max("n").alias("n"),
        *[
            F.max(F.when(F.col("metric") == F.lit(name), F.col(VALUE))).alias(name)
            for name in AUC_METRICS
        ],
    )
    return cast(pd.DataFrame, summary.withColumn(RANK, F.lit(0)).toPandas())
