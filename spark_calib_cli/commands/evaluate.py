"""The scheduled job: read the run date's input, evaluate it once, write the output tables."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from spark_calib import EvaluationResult, evaluate
from spark_calib.config import Config, InputConfig, OutputConfig, config_hash
from spark_calib.errors import ConfigError
from spark_calib.windows import TimeWindow, rolling
from spark_calib_cli.commands.monitoring import MonitorOutcome, run_monitoring, write_window_row
from spark_calib_cli.commands.window_stats import require_daily_runs, run_length_days
from spark_calib_cli.console.regression_summary import collect_regression_summary
from spark_calib_cli.console.summary import SummaryRow, collect_summary
from spark_calib_cli.console.worst_slices import DEFAULT_MIN_SLICE_ROWS, DEFAULT_TOP_SLICES
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.io.identifiers import checked_identifier, checked_table_name
from spark_calib_cli.io.input import describe_input, read_input
from spark_calib_cli.io.partitions import (
    clear_partition,
    read_partition,
    table_location,
    write_partition,
)
from spark_calib_cli.io.tables import (
    INVALID_ROWS_TABLE,
    METRICS_TABLE,
    OPTIONAL_TABLES,
    RELIABILITY_TABLE,
    STATS_TABLE,
    WINDOWED_TABLES,
    WINDOWS_TABLE,
    run_tables,
)

REGRESSION_TASK = "regression"


@dataclass(frozen=True)
class EvaluateOutcome:
    """What one run did: its identity, the rows it saw, where it wrote, and the summary rows
    (regression rows when ``task`` is ``regression``)."""

    run_id: str
    config_hash: str
    run_date: dt.date
    n_rows: int
    invalid_counts: Mapping[str, int]
    strategy: str
    tables: Mapping[str, str]
    summary: tuple[SummaryRow, ...]
    monitoring: MonitorOutcome
    window: TimeWindow
    task: str = "binary"


def check_job_config(config: Config) -> tuple[InputConfig, OutputConfig]:
    """The config's ``input`` and ``output`` sections, or ``ConfigError`` when the job cannot
    run with them. Needs no Spark, so the CLI calls it before starting a session."""
    if config.input is None:
        raise ConfigError("missing required config key 'input' (the job reads a table or path)")
    if config.output is None:
        raise ConfigError("missing required config key 'output' (a database or a path)")
    if config.input.table is not None:
        checked_table_name(config.input.table, "input.table")
    if config.output.database is not None:
        checked_identifier(config.output.database, "output.database")
    if config.drift.baseline_dates is not None:
        require_daily_runs(config, "drift.baseline_dates")
    return config.input, config.output


def run_evaluate(
    spark: SparkSession,
    config: Config,
    run_date: dt.date,
    *,
    run_id: str | None = None,
    progress: Callable[[str], None] | None = None,
    top_slices: int = DEFAULT_TOP_SLICES,
    min_slice_rows: int = DEFAULT_MIN_SLICE_ROWS,
) -> EvaluateOutcome:
    """Evaluate the ``run_date`` window of the configured input and replace the run date's
    partition of every output table. An optional table (``tables.OPTIONAL_TABLES``) that this
    run does not produce but that exists at the output gets an empty partition for the date.

    ``progress`` receives one line per step. Raises ``ConfigError``, ``MissingInputError``
    (no table or path, or no rows in the window), ``SchemaError``, ``InvalidRowsError`` (then
    nothing is written) or ``OutputError``.
    """
    report = progress or _quiet
    source, output = check_job_config(config)
    run_id = run_id or uuid.uuid4().hex
    digest = config_hash(config)
    report(f"reading {describe_input(source, run_date)}")
    frame = read_input(spark, source, run_date)
    report("evaluating (one scan of the input)")
    result = evaluate(frame, config)
    try:
        if result.n_rows == 0:
            raise MissingInputError(
                f"input {describe_input(source, run_date)} has no rows for run_date {run_date}"
            )
        window = run_window(config, run_date)
        outputs = run_tables(result, config, run_id, digest, window)
        produced = {table for table, _ in outputs}
        for table in OPTIONAL_TABLES:
            if table not in produced and clear_partition(spark, output, table, run_date):
                report(f"emptied {table_location(output, table)} (run_date={run_date})")
        tables: dict[str, str] = {}
        for table, rows in outputs:
            report(f"writing {table_location(output, table)} (run_date={run_date})")
            tables[table] = write_partition(
                spark,
                rows,
                output,
                table,
                run_date,
                empty=_is_empty(table, rows, result),
                granularity=window.granularity if table in WINDOWED_TABLES else None,
            )
        tables[WINDOWS_TABLE] = write_window_row(
            spark, config, window, [run_date], [], result.n_rows, run_id, digest
        )
        # Read back what was written: cheaper than recomputing the metrics from the statistics
        # (and the exact AUCs from the input), and the summary then shows what the tables hold.
        granularity = window.granularity
        metrics = read_partition(spark, output, METRICS_TABLE, run_date, granularity=granularity)
        monitoring = run_monitoring(
            spark, config, window, result.stats, metrics, run_id, digest, report
        )
        tables.update(monitoring.tables)
        if config.task == REGRESSION_TASK:
            summary = collect_regression_summary(metrics, top=top_slices, min_rows=min_slice_rows)
        else:
            summary = collect_summary(
                metrics,
                read_partition(spark, output, RELIABILITY_TABLE, run_date, granularity=granularity),
                top=top_slices,
                min_rows=min_slice_rows,
            )
    finally:
        result.unpersist()
    return EvaluateOutcome(
        run_id=run_id,
        config_hash=digest,
        run_date=run_date,
        n_rows=result.n_rows,
        invalid_counts=dict(result.invalid_counts),
        strategy=result.strategy,
        tables=tables,
        summary=tuple(summary),
        monitoring=monitoring,
        window=window,
        task=config.task,
    )


def run_window(config: Config, run_date: dt.date) -> TimeWindow:
    """The dates a daily run covers: ``day``, or ``rolling_Nd`` with a lookback of N days."""
    days = run_length_days(config)
    return TimeWindow(rolling(days), run_date - dt.timedelta(days=days - 1), run_date)


def _is_empty(table: str, rows: DataFrame, result: EvaluationResult) -> bool:
    """Whether ``rows`` (the frame of ``table``) has none. The scan's counts answer for the
    invalid rows and the statistics (which count invalid rows too); a derived table is asked
    with a small Spark job, since it can be empty with valid rows (a regression run has no
    reliability bins)."""
    if table == INVALID_ROWS_TABLE:
        return result.n_invalid == 0
    if table == STATS_TABLE:
        return result.n_rows == 0
    return rows.isEmpty()


def _quiet(_: str) -> None:
    return None
