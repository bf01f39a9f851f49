"""After a window's metrics are written (a daily run or a rollup): its windows row, its drift
against the previous window and the baseline, and the alert rules that fire.

Everything is computed from the statistics table and the window's metrics frame, so the
previous window and a baseline date range cost a read of their (small) statistics, never a
scan of the prediction logs.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import (
    ArrayType,
    DateType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from spark_calib import sum_to_bins
from spark_calib.config import Config
from spark_calib.local_data import local_dataframe
from spark_calib.monitoring import (
    FAIL,
    MESSAGE,
    RULE,
    drift_table,
    fired_alerts,
    metric_values,
    needs_noise_model,
    window_values,
)
from spark_calib.windows import TimeWindow, previous_window
from spark_calib_cli.commands.window_stats import WindowStats, read_window_stats
from spark_calib_cli.io.local_frames import LocalFrame, in_memory
from spark_calib_cli.io.partitions import table_location, write_partition
from spark_calib_cli.io.tables import (
    ALERTS_TABLE,
    CONFIG_HASH,
    DRIFT_TABLE,
    RUN_ID,
    STATS_TABLE,
    WINDOW_END,
    WINDOW_START,
    WINDOWS_TABLE,
    with_run_columns,
    with_window,
)

# Alert lines printed by a run; the table holds them all.
MAX_PRINTED_ALERTS = 20
WINDOWS_SCHEMA = StructType(
    [
        StructField(WINDOW_START, DateType()),
        StructField(WINDOW_END, DateType()),
        StructField("days_expected", LongType()),
        StructField("days_present", ArrayType(DateType())),
        StructField("days_missing", ArrayType(DateType())),
        StructField("n_rows", LongType()),
        StructField(RUN_ID, StringType()),
        StructField(CONFIG_HASH, StringType()),
    ]
)


@dataclass(frozen=True)
class FiredAlert:
    """One fired alert as printed: its rule, whether the rule fails the run, its message."""

    rule: str
    fail: bool
    message: str


@dataclass(frozen=True)
class MonitorOutcome:
    """The alerts that fired (the first ``MAX_PRINTED_ALERTS``), how many there were, and
    whether a ``fail: true`` rule fired."""

    alerts: tuple[FiredAlert, ...]
    n_alerts: int
    failed: bool
    previous: str
    baseline: str | None
    tables: dict[str, str]


def write_window_row(
    spark: SparkSession,
    config: Config,
    window: TimeWindow,
    present: list[dt.date],
    missing: list[dt.date],
    n_rows: int,
    run_id: str,
    config_digest: str,
) -> str:
    """Write the ``calibration_windows`` row of this window (which days it has, and its rows);
    return the table's location."""
    assert config.output is not None
    row = (
        window.start,
        window.end,
        len(present) + len(missing),
        present,
        missing,
        n_rows,
        run_id,
        config_digest,
    )
    frame = local_dataframe(spark, [row], WINDOWS_SCHEMA)
    return write_partition(
        spark, frame, config.output, WINDOWS_TABLE, window.end, granularity=window.granularity
    )


@dataclass(frozen=True)
class WindowMonitoring:
    """A window's drift and fired alerts (local frames, not yet written) and its outcome."""

    drift: LocalFrame
    alerts: LocalFrame
    outcome: MonitorOutcome


def run_monitoring(
    spark: SparkSession,
    config: Config,
    window: TimeWindow,
    current_stats: DataFrame,
    metrics: DataFrame,
    run_id: str,
    config_digest: str,
    progress: Callable[[str], None],
) -> MonitorOutcome:
    """Write the window's drift and alerts partitions (run_date = ``window.end``) and return
    the alerts. ``current_stats`` are the window's statistics and ``metrics`` its metrics
    table (without run columns)."""
    monitored = monitor_window(
        spark, config, window, current_stats, metrics, run_id, config_digest, progress
    )
    tables = _write_drift_and_alerts(
        spark,
        config,
        window,
        monitored.drift,
        monitored.alerts,
        run_id,
        config_digest,
        progress,
    )
    return dataclasses.replace(monitored.outcome, tables=tables)


def monitor_window(
    spark: SparkSession,
    config: Config,
    window: TimeWindow,
    current_stats: DataFrame,
    metrics: DataFrame,
    run_id: str,
    config_digest: str,
    progress: Callable[[str], None],
    *,
    as_of_run_date: bool = False,
    previous_stats: WindowStats | None = None,
) -> WindowMonitoring:
    """The window's drift against the previous window and the baseline, and the alerts that
    fire, computed but not written (``run_monitoring`` writes them; a backfill writes every
    date's at once). ``as_of_run_date`` (a backfill): baseline dates after the run date are
    not read, as the daily run of that date could not have read them. ``previous_stats``: the
    previous window's statistics when the caller has them (else read from the table)."""
    previous = previous_window(window)
    progress(f"drift: against the previous window {previous.label()} and the baseline")
    earlier = previous_stats or read_window_stats(
        spark, config, previous, config_digest, summed_to_bins(config)
    )
    drift = in_memory(
        spark,
        _drift(
            spark,
            config,
            window,
            current_stats,
            metrics,
            run_id,
            earlier,
            config_digest,
            window.end if as_of_run_date else None,
        ),
    )
    alerts = in_memory(spark, fired_alerts(metrics, drift.frame, config))
    outcome = monitor_outcome(
        config, alerts.rows, presence(previous, earlier.present, earlier.missing)
    )
    return WindowMonitoring(drift, alerts, outcome)


def monitor_outcome(config: Config, alerts: list[Row], previous: str) -> MonitorOutcome:
    """The outcome of a window whose fired alerts are ``alerts`` (the tables not yet known)."""
    rows, count = _printed_alerts(alerts)
    # Failing alerts sort first, so the first row tells whether any failing rule fired.
    failed = bool(rows) and bool(rows[0][FAIL])
    return MonitorOutcome(
        alerts=tuple(FiredAlert(row[RULE], bool(row[FAIL]), row[MESSAGE]) for row in rows),
        n_alerts=count,
        failed=failed,
        previous=previous,
        baseline=config.drift.baseline_label(),
        tables={},
    )


# Drift values of summed statistics, by (output, config hash, (run date, run id) pairs): within
# one session a backfill's next day compares with this day, and every day with the same
# baseline, so each is computed once. The run ids make a rewritten date a different key.
_WINDOW_VALUES: dict[tuple[object, ...], DataFrame] = {}
_WINDOW_VALUES_KEPT = 16


def _drift(
    spark: SparkSession,
    config: Config,
    window: TimeWindow,
    current_stats: DataFrame,
    metrics: DataFrame,
    run_id: str,
    earlier: WindowStats,
    config_digest: str,
    as_of: dt.date | None,
) -> DataFrame:
    """The drift table of the window against the previous window's statistics ``earlier``
    and the baseline dates' (when configured and present). The window's own values are read
    from its ``metrics`` (``metric_values``), not computed again from ``current_stats``,
    which only the noise model reads, when a row needs it."""
    assert config.output is not None
    location = table_location(config.output, STATS_TABLE)
    noise_stats = current_stats if needs_noise_model(metrics, config) else None
    current = in_memory(spark, metric_values(metrics, config, noise_stats)).frame
    _remember((location, config_digest, ((window.end, run_id),)), current)
    baseline_values = None
    if config.drift.baseline_dates is not None:
        baseline = read_window_stats(
            spark,
            config,
            config.drift.baseline_dates,
            config_digest,
            summed_to_bins(config),
            as_of=as_of,
        )
        baseline_values = memo_window_values(spark, config, location, config_digest, baseline)
    previous_values = memo_window_values(spark, config, location, config_digest, earlier)
    return drift_table(current, previous_values, baseline_values, config)


def summed_to_bins(config: Config) -> Callable[..., DataFrame]:
    """``sum_to_bins`` as ``window_values`` reads it: over the fine cells too unless the bins
    are built from them (equal mass)."""
    return partial(sum_to_bins, keep_cells=config.binning.strategy == "equal_mass")


def memo_window_values(
    spark: SparkSession, config: Config, location: str, config_digest: str, window: WindowStats
) -> DataFrame | None:
    """The drift values of ``window``'s statistics, from the session's memo when this exact
    sum (the same runs) was valued before."""
    if window.stats is None:
        return None
    key = (location, config_digest, window.runs)
    if key not in _WINDOW_VALUES:
        _remember(key, in_memory(spark, window_values(window.stats, config)).frame)
    return _WINDOW_VALUES[key]


def _remember(key: tuple[object, ...], values: DataFrame) -> None:
    if len(_WINDOW_VALUES) >= _WINDOW_VALUES_KEPT:
        del _WINDOW_VALUES[next(iter(_WINDOW_VALUES))]
    _WINDOW_VALUES[key] = values


def _write_drift_and_alerts(
    spark: SparkSession,
    config: Config,
    window: TimeWindow,
    drift: LocalFrame,
    alerts: LocalFrame,
    run_id: str,
    config_digest: str,
    progress: Callable[[str], None],
) -> dict[str, str]:
    """Write the window's drift partition and the alerts that fire on its metrics and drift;
    return table → location."""
    assert config.output is not None
    tables: dict[str, str] = {}
    for table, frame in ((DRIFT_TABLE, drift), (ALERTS_TABLE, alerts)):
        progress(
            f"writing {table_location(config.output, table)} "
            f"({window.granularity} {window.label()})"
        )
        tables[table] = write_window_table(
            spark, config, table, frame.frame, window, run_id, config_digest, empty=frame.empty
        )
    return tables


def _printed_alerts(alerts: list[Row]) -> tuple[list[Row], int]:
    """The first ``MAX_PRINTED_ALERTS`` alerts of the window, failing ones first, and how many
    there are in all."""
    ordered = sorted(
        alerts,
        key=lambda row: (
            not row[FAIL],
            row["rule_index"],
            row["model_version"] is not None,
            row["model_version"] or "",
            row["slice_name"],
            row["slice_value"],
        ),
    )
    return ordered[:MAX_PRINTED_ALERTS], len(alerts)


def presence(window: TimeWindow, present: tuple[dt.date, ...], missing: tuple[dt.date, ...]) -> str:
    """``2024-06-16 (no statistics)`` or ``2024-06-17..2024-06-23 (6 of 7 run dates)``."""
    if not present:
        return f"{window.label()} (no statistics)"
    return f"{window.label()} ({len(present)} of {len(present) + len(missing)} run dates)"


def write_window_table(
    spark: SparkSession,
    config: Config,
    table: str,
    frame: DataFrame,
    window: TimeWindow,
    run_id: str,
    config_digest: str,
    *,
    empty: bool,
) -> str:
    """Replace the (window end, granularity) partition of ``table`` with ``frame`` (a local
    frame, ``in_memory``) plus the window and run columns; return the table's location.
    ``empty``: whether ``frame`` has no rows."""
    assert config.output is not None
    rows = with_run_columns(with_window(frame, window), run_id, config_digest)
    return write_partition(
        spark,
        rows,
        config.output,
        table,
        window.end,
        empty=empty,
        granularity=window.granularity,
    )
