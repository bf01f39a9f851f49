"""The trend figures of a report: each watched metric over the last N windows of one
granularity, per model version, with the alert rules' thresholds and the alerts that fired.

Watched metrics: those named by alert rules, else ``DEFAULT_TREND_METRICS`` that the run wrote.
Panels: the overall slice and the slice values where an alert on the metric fired in those
windows (at most ``MAX_ALERT_SLICES`` per metric, the ones that fired most). Only those rows
reach the driver.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from spark_calib import slice_name
from spark_calib.config import Config
from spark_calib.constants import OVERALL_SLICE_NAME
from spark_calib.local_data import local_dataframe
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.io.partitions import GRANULARITY, RUN_DATE, read_table
from spark_calib_cli.io.tables import ALERTS_TABLE, METRICS_TABLE, WINDOW_END
from spark_calib_cli.report.trend import write_trend_figures

DEFAULT_TREND_WINDOWS = 14
DEFAULT_TREND_METRICS = ("ece", "accuracy", "rmse")
MAX_ALERT_SLICES = 11
SERIES_KEYS = ("metric", "slice_name", "slice_value")


@dataclass(frozen=True)
class TrendFrames:
    """The frames of ``write_trend_figures``: the watched metrics' points, the rules'
    thresholds and the alerts that fired."""

    points: pd.DataFrame
    thresholds: pd.DataFrame
    fired: pd.DataFrame


def run_trend_report(
    spark: SparkSession,
    config: Config,
    run_date: dt.date,
    granularity: str,
    out_dir: Path,
    *,
    windows: int = DEFAULT_TREND_WINDOWS,
) -> list[Path]:
    """Write ``trend_<metric>.png`` for the last ``windows`` windows of ``granularity`` that
    end on or before ``run_date``; return the paths ([] when there is nothing to draw)."""
    frames = trend_frames(spark, config, run_date, granularity, windows=windows)
    if frames is None:
        return []
    return write_trend_figures(
        frames.points,
        frames.thresholds,
        frames.fired,
        out_dir,
        granularity=granularity,
        run_date=run_date.isoformat(),
    )


def trend_frames(
    spark: SparkSession,
    config: Config,
    run_date: dt.date,
    granularity: str,
    *,
    windows: int = DEFAULT_TREND_WINDOWS,
) -> TrendFrames | None:
    """The trend rows of the last ``windows`` windows of ``granularity`` that end on or
    before ``run_date`` (see the module docstring), or None when there is no such window."""
    assert config.output is not None
    metrics = read_table(spark, config.output, METRICS_TABLE).where(
        (F.col(GRANULARITY) == F.lit(granularity)) & (F.col(RUN_DATE) <= F.lit(run_date))
    )
    ends = [
        row[RUN_DATE]
        for row in metrics.select(RUN_DATE)
        .distinct()
        .orderBy(F.col(RUN_DATE).desc())
        .limit(windows)
        .collect()
    ]
    if not ends:
        return None
    watched = watched_metrics(config)
    metrics = metrics.where(F.col(RUN_DATE).isin(ends) & F.col("metric").isin(watched))
    fired = _fired(spark, config, granularity, ends, watched)
    most_fired = Window.partitionBy("metric").orderBy(F.col("count").desc(), *SERIES_KEYS)
    flagged = (
        fired.groupBy(*SERIES_KEYS)
        .count()
        .withColumn("_rank", F.row_number().over(most_fired))
        .where(F.col("_rank") <= MAX_ALERT_SLICES)
        .drop("count", "_rank")
    )
    overall = F.col("slice_name") == F.lit(OVERALL_SLICE_NAME)
    chosen = metrics.where(F.col("class").isNull()).join(
        flagged, on=list(SERIES_KEYS), how="left_semi"
    )
    points = metrics.where(F.col("class").isNull() & overall).unionByName(chosen)
    # Tables written before the uncertainty columns have no interval: the band is left out.
    interval = [
        F.col(name) if name in points.columns else F.lit(None).cast("double").alias(name)
        for name in ("ci_lower", "ci_upper")
    ]
    point_frame = _pandas(
        points.select(*SERIES_KEYS, "model_version", WINDOW_END, "value", "n", *interval).distinct()
    )
    fired_frame = _pandas(
        fired.select(*SERIES_KEYS, "model_version", WINDOW_END, "rule").distinct()
    )
    return TrendFrames(point_frame, _thresholds(config), fired_frame)


def watched_metrics(config: Config) -> list[str]:
    """The metrics named by alert rules, else ``DEFAULT_TREND_METRICS``."""
    ruled = list(dict.fromkeys(rule.metric for rule in config.alerts))
    return ruled or list(DEFAULT_TREND_METRICS)


def _fired(
    spark: SparkSession, config: Config, granularity: str, ends: list[dt.date], watched: list[str]
) -> DataFrame:
    """The alert rows of those windows on the watched metrics (none when no alerts table)."""
    assert config.output is not None
    try:
        alerts = read_table(spark, config.output, ALERTS_TABLE)
    except MissingInputError:
        schema = "metric string, slice_name string, slice_value string, model_version string, "
        return local_dataframe(spark, [], schema + f"{WINDOW_END} date, rule string")
    return alerts.where(
        (F.col(GRANULARITY) == F.lit(granularity))
        & F.col(RUN_DATE).isin(ends)
        & F.col("metric").isin(watched)
    )


def _thresholds(config: Config) -> pd.DataFrame:
    """The absolute thresholds (max, min) of the alert rules, one row per rule."""
    rows = [
        {
            "metric": rule.metric,
            "slice_name": None if rule.slice is None else slice_name(rule.slice),
            "model_version": rule.model_version,
            "kind": rule.condition,
            "threshold": rule.threshold,
            "rule": rule.label(),
        }
        for rule in config.alerts
        if not rule.on_change
    ]
    columns = ["metric", "slice_name", "model_version", "kind", "threshold", "rule"]
    return pd.DataFrame(rows, columns=columns)


def _pandas(frame: DataFrame) -> pd.DataFrame:
    return cast(pd.DataFrame, frame.toPandas())
