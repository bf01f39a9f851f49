"""The output tables of a run: their names and the frames written to them.

Every table gets the run's ``run_id`` and ``config_hash`` columns (and, when written, the
``run_date`` partition column). The invalid-rows table keeps the original row as a JSON
string, so its schema is the same for every input and one table can hold several runs. The
recalibration table is windowed like the metrics: ``rollup`` writes a week's maps, fitted on
the week's summed cells.

Four tables are written by every run. The metrics and reliability tables carry the window
they describe (``window_start``, ``window_end``; the ``granularity`` is a partition column next
to ``run_date``, see ``WINDOWED_TABLES``), and so do the monitoring tables (drift, alerts and
windows, written by ``monitor_job``). The optional ones (``OPTIONAL_TABLES``) come from
outputs of ``evaluate`` that exist only when their metric is requested (``confusion_matrix``,
``threshold_metrics``, ``roc_curve``), the task produces them (regression with a std or
variance column) or the config asks for them (``recalibration``); a run without them writes
nothing to those tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib import EvaluationResult, input_col
from spark_calib.config import Config
from spark_calib.windows import TimeWindow
from spark_calib_cli.io.parallel_writes import Write, write_in_groups

METRICS_TABLE = "calibration_metrics"
RELIABILITY_TABLE = "calibration_reliability"
STATS_TABLE = "calibration_stats"
INVALID_ROWS_TABLE = "calibration_invalid_rows"
CONFUSION_TABLE = "calibration_confusion"
THRESHOLDS_TABLE = "calibration_thresholds"
ROC_TABLE = "calibration_roc"
REGRESSION_TABLE = "calibration_regression"
RECALIBRATION_TABLE = "calibration_recalibration"
DRIFT_TABLE = "calibration_drift"
ALERTS_TABLE = "calibration_alerts"
WINDOWS_TABLE = "calibration_windows"

OPTIONAL_TABLES = (
    CONFUSION_TABLE,
    THRESHOLDS_TABLE,
    ROC_TABLE,
    REGRESSION_TABLE,
    RECALIBRATION_TABLE,
)
# Partitioned by run_date and granularity: one partition per window.
WINDOWED_TABLES = frozenset(
    {
        METRICS_TABLE,
        RELIABILITY_TABLE,
        RECALIBRATION_TABLE,
        DRIFT_TABLE,
        ALERTS_TABLE,
        WINDOWS_TABLE,
    }
)

RUN_ID = "run_id"
CONFIG_HASH = "config_hash"
MODEL_VERSION = "model_version"
REASON = "reason"
ROW_JSON = "row_json"
WINDOW_START = "window_start"
WINDOW_END = "window_end"
RUN_DATE = "run_date"


def write_groups(tables: Sequence[str]) -> list[list[str]]:
    """``tables`` (a run's, in ``run_tables``' order, perhaps with the windows table) in the
    groups that are written one after the other (``parallel_writes``): every table but the
    statistics, metrics and windows at once, then the statistics, then the metrics, so that a
    dashboard that sees a run's metrics can also find its other tables, then the windows row.

    The statistics have a group of their own because a swap (a delete and a rename) is not
    atomic: a small table's swap would otherwise fall at the moment the statistics' tasks
    start, when the cores it freed take them, and a crash in the long statistics write would
    be likely to land inside it and leave that table's date without a partition."""
    last = (STATS_TABLE, METRICS_TABLE, WINDOWS_TABLE)
    first = [table for table in tables if table not in last]
    return [group for group in (first, *([t] for t in last if t in tables)) if group]


def write_tables(
    tables: Sequence[str],
    write: Callable[[str], Write[str]],
    report: Callable[[str], None],
) -> dict[str, str]:
    """Write ``tables`` in their ``write_groups`` (``write(table)``: the progress text and the
    call that writes it and returns its location); return table → location in the order of
    ``tables``, the order the console lists them in."""
    groups = write_groups(tables)
    locations = write_in_groups([[write(table) for table in group] for group in groups], report)
    located = dict(zip([table for group in groups for table in group], locations, strict=True))
    return {table: located[table] for table in tables}


def run_tables(
    result: EvaluationResult, config: Config, run_id: str, config_digest: str, window: TimeWindow
) -> list[tuple[str, DataFrame]]:
    """(table name, frame) for each output of this run, in write order.

    The optional tables come after the reliability table and only when ``result`` has them.
    Metrics go last, so a dashboard that sees a run's metrics can also find its other tables.
    """
    frames = [
        (INVALID_ROWS_TABLE, invalid_rows_frame(result.invalid, config)),
        (STATS_TABLE, result.stats),
        (RELIABILITY_TABLE, with_window(result.reliability, window)),
        *[
            (table, with_window(frame, window) if table in WINDOWED_TABLES else frame)
            for table, frame in optional_frames(result)
        ],
        (METRICS_TABLE, with_window(result.metrics, window)),
    ]
    return [(name, with_run_columns(frame, run_id, config_digest)) for name, frame in frames]


def day_run_tables(
    result: EvaluationResult, config: Config, run_id: str, config_digest: str, day: Column
) -> list[tuple[str, DataFrame]]:
    """``run_tables`` of a backfill's ``evaluate_days`` result: every frame has a ``run_date``
    column (for the invalid rows, ``day`` of the input row), and each windowed table's window
    is its run date alone (a daily window)."""
    frames = [
        (INVALID_ROWS_TABLE, invalid_rows_frame(result.invalid, config, day)),
        (STATS_TABLE, result.stats),
        (RELIABILITY_TABLE, with_day_window(result.reliability)),
        *[
            (table, with_day_window(frame) if table in WINDOWED_TABLES else frame)
            for table, frame in optional_frames(result)
        ],
        (METRICS_TABLE, with_day_window(result.metrics)),
    ]
    return [(name, with_run_columns(frame, run_id, config_digest)) for name, frame in frames]


def with_day_window(frame: DataFrame) -> DataFrame:
    """``frame`` plus ``window_start`` and ``window_end``, both its ``run_date``."""
    return frame.select("*", F.col(RUN_DATE).alias(WINDOW_START), F.col(RUN_DATE).alias(WINDOW_END))


def with_window(frame: DataFrame, window: TimeWindow) -> DataFrame:
    """``frame`` plus the DATE columns ``window_start`` and ``window_end``."""
    return frame.select(
        "*",
        F.lit(window.start).alias(WINDOW_START),
        F.lit(window.end).alias(WINDOW_END),
    )


def optional_frames(result: EvaluationResult) -> list[tuple[str, DataFrame]]:
    """(table name, frame) of each optional output that ``result`` holds, in table order."""
    frames = [
        (CONFUSION_TABLE, result.confusion),
        (THRESHOLDS_TABLE, result.thresholds),
        (ROC_TABLE, result.roc),
        (REGRESSION_TABLE, result.regression_calibration),
        (RECALIBRATION_TABLE, result.recalibration),
    ]
    return [(table, frame) for table, frame in frames if frame is not None]


def with_run_columns(frame: DataFrame, run_id: str, config_digest: str) -> DataFrame:
    """``frame`` plus the string columns ``run_id`` and ``config_hash``."""
    return frame.select(
        *[input_col(name) for name in frame.columns],
        F.lit(run_id).alias(RUN_ID),
        F.lit(config_digest).alias(CONFIG_HASH),
    )


def invalid_rows_frame(invalid: DataFrame, config: Config, day: Column | None = None) -> DataFrame:
    """``model_version`` (string), ``reason`` and ``row_json``: the input row as a JSON object;
    with ``day`` (a backfill), ``run_date``: ``day`` of the row.

    The model version is copied out of the JSON so that invalid rows can be counted per version
    with plain SQL; it is null when the config names no model_version column.
    """
    source_columns = [name for name in invalid.columns if name != REASON]
    version_column = config.columns.model_version
    version = (
        input_col(version_column).cast("string")
        if version_column is not None
        else F.lit(None).cast("string")
    )
    return invalid.select(
        version.alias(MODEL_VERSION),
        F.col(REASON),
        F.to_json(F.struct(*[input_col(name) for name in source_columns])).alias(ROW_JSON),
        *([day.alias(RUN_DATE)] if day is not None else []),
    )
