"""``spark-calib rollup``: a week, a month or the last N days, summed from the daily statistics.

The rollup never reads the prediction logs. It reads ``calibration_stats`` for the window's run
dates, sums them (``combine_stats``: the statistics of a union are the sums of the statistics),
and recomputes the metrics and reliability tables from the sums, exactly as one run over all
the window's rows would (except the exact ranking metrics, which need the rows; their binned
versions roll up). It writes them, the windows row, drift and alerts to the partition
(run_date = window end, granularity).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import SparkSession

from spark_calib import metrics_from_stats, reliability_from_stats, row_counts
from spark_calib.config import Config, config_hash
from spark_calib.errors import ConfigError
from spark_calib.windows import DAY, TimeWindow, parse_granularity, window_of
from spark_calib_cli.commands.evaluate import check_job_config
from spark_calib_cli.commands.monitoring import (
    MonitorOutcome,
    run_monitoring,
    write_window_row,
    write_window_table,
)
from spark_calib_cli.commands.window_stats import read_window_stats, require_daily_runs
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.io.partitions import read_partition, table_location
from spark_calib_cli.io.tables import (
    METRICS_TABLE,
    RELIABILITY_TABLE,
    STATS_TABLE,
    WINDOWS_TABLE,
)


@dataclass(frozen=True)
class RollupOutcome:
    run_id: str
    config_hash: str
    window: TimeWindow
    present: tuple[dt.date, ...]
    missing: tuple[dt.date, ...]
    n_rows: int
    tables: dict[str, str]
    monitoring: MonitorOutcome


def run_rollup(
    spark: SparkSession,
    config: Config,
    run_date: dt.date,
    granularity: str,
    *,
    run_id: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> RollupOutcome:
    """Roll the daily statistics of the ``granularity`` window (``week``, ``month``,
    ``rolling:N`` or ``rolling_Nd``) containing ``run_date`` up
    into the window's metrics, reliability, windows, drift and alerts partitions.

    Raises ``ConfigError`` when runs do not cover one day each, or when run dates of the window
    were computed with another evaluation config (rerun them); ``MissingInputError`` when no
    day of the window has statistics, or a day is missing and ``rollup.require_all_days`` is
    set.
    """
    report = progress or (lambda _: None)
    _, output = check_job_config(config)
    require_daily_runs(config, "rollup")
    try:
        window = window_of(parse_granularity(granularity), run_date)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if window.granularity == DAY:
        # The daily run writes that partition, with the exact AUCs a rollup cannot compute.
        raise ConfigError("a rollup of one day is the daily run: use spark-calib evaluate")
    run_id = run_id or uuid.uuid4().hex
    digest = config_hash(config)
    report(f"reading the statistics of {window.granularity} {window.label()}")
    found = read_window_stats(spark, config, window, digest)
    if found.other_config:
        dates = ", ".join(day.isoformat() for day in found.other_config)
        raise ConfigError(
            f"run dates {dates} of {window.label()} were evaluated with another config than "
            f"this one (config_hash {digest}); rerun them with spark-calib evaluate first"
        )
    if found.stats is None:
        raise MissingInputError(
            f"no statistics for any day of {window.label()} in "
            f"{table_location(output, STATS_TABLE)}; run spark-calib evaluate first"
        )
    if found.missing and config.rollup.require_all_days:
        dates = ", ".join(day.isoformat() for day in found.missing)
        raise MissingInputError(
            f"{window.granularity} {window.label()} is missing run dates {dates} "
            f"(rollup.require_all_days is set)"
        )
    if found.missing:
        report(f"missing run dates: {', '.join(day.isoformat() for day in found.missing)}")
    summed = found.stats.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        n_rows = sum(row_counts(summed, config).values())
        tables: dict[str, str] = {}
        frames = [
            (RELIABILITY_TABLE, reliability_from_stats(summed, config)),
            (METRICS_TABLE, metrics_from_stats(summed, config)),
        ]
        for table, frame in frames:
            report(
                f"writing {table_location(output, table)} ({window.granularity} {window.label()})"
            )
            tables[table] = write_window_table(spark, config, table, frame, window, run_id, digest)
        tables[WINDOWS_TABLE] = write_window_row(
            spark, config, window, list(found.present), list(found.missing), n_rows, run_id, digest
        )
        metrics = read_partition(
            spark, output, METRICS_TABLE, window.end, granularity=window.granularity
        )
        monitoring = run_monitoring(spark, config, window, summed, metrics, run_id, digest, report)
        tables.update(monitoring.tables)
    finally:
        summed.unpersist()
    return RollupOutcome(
        run_id=run_id,
        config_hash=digest,
        window=window,
        present=found.present,
        missing=found.missing,
        n_rows=n_rows,
        tables=tables,
        monitoring=monitoring,
    )
