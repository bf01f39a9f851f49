"""``spark-calib rollup``: a week, a month or the last N days, summed from the daily statistics.

The rollup never reads the prediction logs. It reads ``calibration_stats`` for the window's run
dates, sums them (``combine_stats``: the statistics of a union are the sums of the statistics),
and recomputes the metrics and reliability tables from the sums, exactly as one run over all
the window's rows would (except the exact ranking metrics, which need the rows; their binned
versions roll up). It writes them, the windows row, drift and alerts to the partition
(run_date = window end, granularity).
"""

from __future__ import annotations

import argparse
import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from spark_calib import StatsOutputs, bin_grain, outputs_from_stats
from spark_calib.config import Config, OutputConfig, config_hash
from spark_calib.errors import ConfigError
from spark_calib.windows import DAY, TimeWindow, parse_granularity, window_of
from spark_calib_cli.commands.cli import (
    html_text,
    paths_text,
    progress_printer,
    start_session,
    validated,
)
from spark_calib_cli.commands.common import check_job_config
from spark_calib_cli.commands.html_report import write_html_report
from spark_calib_cli.commands.monitoring import (
    MonitorOutcome,
    run_monitoring,
    write_window_row,
    write_window_table,
)
from spark_calib_cli.commands.report import run_report
from spark_calib_cli.commands.window_stats import (
    WindowStats,
    read_window_stats,
    require_daily_runs,
)
from spark_calib_cli.console.monitoring_text import alerts_text
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.exit_codes import ExitCode
from spark_calib_cli.io.local_frames import in_memory
from spark_calib_cli.io.parallel_writes import Write
from spark_calib_cli.io.partitions import partitions_read_once, read_partition, table_location
from spark_calib_cli.io.tables import (
    METRICS_TABLE,
    RECALIBRATION_TABLE,
    RELIABILITY_TABLE,
    STATS_TABLE,
    WINDOWS_TABLE,
    write_tables,
)


@dataclass(frozen=True)
class RollupOutcome:
    """What one rollup did: its identity, the window and which of its run dates had
    statistics, the rows summed, where it wrote and the monitoring of the window."""

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
    window = _rollup_window(granularity, run_date)
    run_id = run_id or uuid.uuid4().hex
    digest = config_hash(config)
    report(f"reading the statistics of {window.granularity} {window.label()}")
    found = read_window_stats(spark, config, window, digest)
    stats = _checked_stats(found, config, output, window, digest)
    if found.missing:
        report(f"missing run dates: {', '.join(day.isoformat() for day in found.missing)}")
    summed = stats.persist(StorageLevel.MEMORY_AND_DISK)
    # As in evaluate: the outputs that need no fine cells read their cached sum over the cells.
    binned = bin_grain(summed, config)
    if binned is not summed:
        binned = binned.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        n_rows, tables, monitoring = _write_window(
            spark, config, summed, binned, found, window, run_id, digest, report
        )
    finally:
        if binned is not summed:
            binned.unpersist()
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


def _rollup_window(granularity: str, run_date: dt.date) -> TimeWindow:
    """The window of ``granularity`` containing ``run_date``; ``ConfigError`` for an unknown
    granularity or ``day`` (the daily run's partition)."""
    try:
        window = window_of(parse_granularity(granularity), run_date)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    if window.granularity == DAY:
        # The daily run writes that partition, with the exact AUCs a rollup cannot compute.
        raise ConfigError("a rollup of one day is the daily run: use spark-calib evaluate")
    return window


def _checked_stats(
    found: WindowStats, config: Config, output: OutputConfig, window: TimeWindow, digest: str
) -> DataFrame:
    """The window's summed statistics; ``ConfigError`` when run dates were evaluated with
    another config, ``MissingInputError`` when none has statistics or one is missing and
    ``rollup.require_all_days`` is set."""
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
    return found.stats


def _write_window(
    spark: SparkSession,
    config: Config,
    summed: DataFrame,
    binned: DataFrame,
    found: WindowStats,
    window: TimeWindow,
    run_id: str,
    digest: str,
    report: Callable[[str], None],
) -> tuple[int, dict[str, str], MonitorOutcome]:
    """Write every table of the window from its ``summed`` statistics (``binned``: the same
    summed over the fine cells), then its drift and alerts; return its row count, table →
    location and the monitoring outcome."""
    assert config.output is not None
    outputs = outputs_from_stats(summed, config, bin_stats=binned)
    try:
        n_rows = sum(outputs.row_counts.values())
        tables = _write_rollup_tables(
            spark, config, outputs, found, window, n_rows, run_id, digest, report
        )
    finally:
        outputs.unpersist()
    metrics = read_partition(
        spark, config.output, METRICS_TABLE, window.end, granularity=window.granularity
    )
    uniform = config.binning.strategy == "uniform"
    monitoring = run_monitoring(
        spark, config, window, binned if uniform else summed, metrics, run_id, digest, report
    )
    tables.update(monitoring.tables)
    return n_rows, tables, monitoring


def _write_rollup_tables(
    spark: SparkSession,
    config: Config,
    outputs: StatsOutputs,
    found: WindowStats,
    window: TimeWindow,
    n_rows: int,
    run_id: str,
    digest: str,
    report: Callable[[str], None],
) -> dict[str, str]:
    """Write the window's reliability, recalibration (with a binary or top-label
    ``recalibration`` section: the maps fitted on the window's summed cells; a multiclass
    temperature needs the rows' logits, so a rollup writes none) and metrics partitions,
    ``outputs`` recomputed from the summed statistics, and its windows row; return table →
    location."""
    assert config.output is not None
    frames = [
        (RELIABILITY_TABLE, outputs.reliability),
        *(
            [(RECALIBRATION_TABLE, outputs.recalibration)]
            if outputs.recalibration is not None
            else []
        ),
        (METRICS_TABLE, outputs.metrics),
    ]
    output = config.output
    span = f"({window.granularity} {window.label()})"
    computed = dict(frames)

    def write(table: str) -> Write[str]:
        def run() -> str:
            if table == WINDOWS_TABLE:
                return write_window_row(
                    spark,
                    config,
                    window,
                    list(found.present),
                    list(found.missing),
                    n_rows,
                    run_id,
                    digest,
                )
            # Collected once: asking the lazy frame whether it is empty, then writing it, ran
            # its finishing pass twice, and the first run, cut off after one row, broke the
            # pipe of its Python workers (the tracebacks of the demo's week rollup).
            local = in_memory(spark, computed[table])
            return write_window_table(
                spark, config, table, local.frame, window, run_id, digest, empty=local.empty
            )

        return f"{table_location(output, table)} {span}", run

    tables = write_tables([*computed, WINDOWS_TABLE], write, report)
    return tables


def rollup_command(args: argparse.Namespace) -> int:
    """``spark-calib rollup``: a week, month or rolling window from the daily statistics.
    Returns ``ExitCode.ALERT`` when a ``fail: true`` rule fired, else ``ExitCode.OK``."""
    config, run_date = validated(args)
    check_job_config(config)
    progress = progress_printer()
    spark = start_session(args, progress)
    paths: list[Path] = []
    html_seconds = 0.0
    try:
        outcome = run_rollup(spark, config, run_date, args.granularity, progress=progress)
        # The diagrams and the page read the same partitions: each is collected once.
        with partitions_read_once():
            if args.report is not None:
                progress(f"drawing the diagrams into {args.report}")
                paths = run_report(
                    spark,
                    config,
                    outcome.window.end,
                    Path(args.report),
                    granularity=args.granularity,
                )
            if args.html is not None:
                html_seconds = write_html_report(
                    spark,
                    config,
                    outcome.window.end,
                    Path(args.html),
                    granularity=args.granularity,
                    progress=progress,
                )
    finally:
        spark.stop()
    progress("done")
    print(rollup_text(outcome, len(config.alerts)))
    if args.report is not None:
        print(paths_text(paths, args.report))
    if args.html is not None:
        print(html_text(args.html, html_seconds))
    return int(ExitCode.ALERT if outcome.monitoring.failed else ExitCode.OK)


def rollup_text(outcome: RollupOutcome, n_rules: int) -> str:
    """The window, its days, its rows, the tables written and the alerts."""
    window = outcome.window
    present = len(outcome.present)
    expected = present + len(outcome.missing)
    missing = (
        f"; missing {', '.join(day.isoformat() for day in outcome.missing)}"
        if outcome.missing
        else ""
    )
    lines = [
        "",
        f"{window.granularity} {window.label()}  run_id {outcome.run_id}  "
        f"config_hash {outcome.config_hash}",
        f"{present} of {expected} days present{missing}",
        f"{outcome.n_rows:,} input rows (summed from the daily statistics)",
        "",
        alerts_text(outcome.monitoring, n_rules),
        "",
        f"tables (partition run_date={window.end}, granularity={window.granularity}):",
        *[f"  {location}" for location in outcome.tables.values()],
    ]
    return "\n".join(lines)
