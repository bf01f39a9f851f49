"""The scheduled job: read the run date's input, evaluate it once, write the output tables.

``run_evaluate`` is the job on an existing session; ``evaluate_command`` is
``spark-calib evaluate``, one run or a backfill of several run dates, and its console text.
"""

from __future__ import annotations

import argparse
import datetime as dt
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from spark_calib import EvaluationResult, evaluate
from spark_calib.config import Config, InputConfig, OutputConfig, config_hash
from spark_calib.errors import ConfigError
from spark_calib.windows import TimeWindow
from spark_calib_cli.commands.backfill import one_scan_backfill, run_backfill
from spark_calib_cli.commands.cli import (
    html_text,
    paths_text,
    progress_printer,
    start_session,
    validated,
)
from spark_calib_cli.commands.common import REGRESSION_TASK, check_job_config, run_window
from spark_calib_cli.commands.html_report import write_html_report
from spark_calib_cli.commands.monitoring import MonitorOutcome, run_monitoring, write_window_row
from spark_calib_cli.commands.outcome import EvaluateOutcome, recalibration_lines, summary_rows
from spark_calib_cli.commands.report import run_report
from spark_calib_cli.commands.run_date import parse_run_date
from spark_calib_cli.commands.search import search_lines, write_search
from spark_calib_cli.console.monitoring_text import alerts_text
from spark_calib_cli.console.recalibration_text import (
    format_recalibration,
)
from spark_calib_cli.console.regression_summary import (
    format_regression_summary,
)
from spark_calib_cli.console.summary import format_summary
from spark_calib_cli.console.worst_slices import DEFAULT_TOP_SLICES
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.exit_codes import ExitCode
from spark_calib_cli.io.input import describe_input, read_input
from spark_calib_cli.io.local_frames import in_memory
from spark_calib_cli.io.parallel_writes import Write
from spark_calib_cli.io.partitions import (
    clear_partition,
    partitions_read_once,
    table_location,
    write_partition,
)
from spark_calib_cli.io.tables import (
    INVALID_ROWS_TABLE,
    METRICS_TABLE,
    OPTIONAL_TABLES,
    STATS_TABLE,
    WINDOWED_TABLES,
    WINDOWS_TABLE,
    run_tables,
    write_tables,
)


def run_evaluate(
    spark: SparkSession,
    config: Config,
    run_date: dt.date,
    *,
    run_id: str | None = None,
    progress: Callable[[str], None] | None = None,
    top_slices: int = DEFAULT_TOP_SLICES,
    min_slice_rows: int | None = None,
) -> EvaluateOutcome:
    """Evaluate the ``run_date`` window of the configured input and replace the run date's
    partition of every output table. An optional table (``tables.OPTIONAL_TABLES``) that this
    run does not produce but that exists at the output gets an empty partition for the date.

    ``progress`` receives one line per step. Raises ``ConfigError``, ``MissingInputError``
    (no table or path, or no rows in the window), ``SchemaError``, ``InvalidRowsError`` (then
    nothing is written) or ``OutputError``.
    """
    report = progress or _quiet
    source, _ = check_job_config(config)
    run_id = run_id or uuid.uuid4().hex
    digest = config_hash(config)
    result = _evaluated_input(spark, config, source, run_date, report)
    try:
        _require_rows(result, source, run_date)
        window = run_window(config, run_date)
        tables, written = _write_run_tables(spark, config, result, window, run_id, digest, report)
        searched = None
        if result.slice_search is not None:
            searched = write_search(
                spark, config, run_date, result.slice_search, run_id, digest, report
            )
            tables.update(searched.tables)
        monitoring = _monitor_and_summarize(
            spark, config, result, window, written, run_id, digest, report
        )
        summary = summary_rows(
            config,
            written,
            top_slices,
            config.min_slice_rows if min_slice_rows is None else min_slice_rows,
        )
        tables.update(monitoring.tables)
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
        recalibration=recalibration_lines(written),
        search="" if searched is None else search_lines(searched),
    )


def _evaluated_input(
    spark: SparkSession,
    config: Config,
    source: InputConfig,
    run_date: dt.date,
    report: Callable[[str], None],
) -> EvaluationResult:
    """Read the run date's input and evaluate it in one scan."""
    report(f"reading {describe_input(source, run_date)}")
    frame = read_input(spark, source, run_date)
    report("evaluating (one scan of the input)")
    if config.slice_search is not None:
        search = config.slice_search
        report(f"then searching {len(search.columns)} columns up to {search.max_level} at a time")
    return evaluate(frame, config)


def _require_rows(result: EvaluationResult, source: InputConfig, run_date: dt.date) -> None:
    """``MissingInputError`` when the run date's input has no rows."""
    if result.n_rows == 0:
        raise MissingInputError(
            f"input {describe_input(source, run_date)} has no rows for run_date {run_date}"
        )


def _write_run_tables(
    spark: SparkSession,
    config: Config,
    result: EvaluationResult,
    window: TimeWindow,
    run_id: str,
    digest: str,
    report: Callable[[str], None],
) -> tuple[dict[str, str], dict[str, DataFrame]]:
    """Empty the optional tables this run does not produce, replace the run date's partition
    of every table it does, and write its windows row; return table → location, and table →
    the local frame of each derived table written (``in_memory``: computed once)."""
    assert config.output is not None
    output, run_date = config.output, window.end
    outputs = run_tables(result, config, run_id, digest, window)
    _clear_unproduced(spark, output, {table for table, _ in outputs}, window, report)
    collected: dict[str, DataFrame] = {}
    frames = dict(outputs)

    def write(table: str) -> Write[str]:
        def run() -> str:
            if table == WINDOWS_TABLE:
                return write_window_row(
                    spark, config, window, [run_date], [], result.n_rows, run_id, digest
                )
            if table in (INVALID_ROWS_TABLE, STATS_TABLE):
                frame, empty = frames[table], _scan_says_empty(table, result)
            else:
                local = in_memory(spark, frames[table])
                frame, empty = local.frame, local.empty
                collected[table] = frame
            granularity = window.granularity if table in WINDOWED_TABLES else None
            return write_partition(
                spark, frame, output, table, run_date, empty=empty, granularity=granularity
            )

        return f"{table_location(output, table)} (run_date={run_date})", run

    tables = write_tables([*frames, WINDOWS_TABLE], write, report)
    written = {table: collected[table] for table in frames if table in collected}
    return tables, written


def _clear_unproduced(
    spark: SparkSession,
    output: OutputConfig,
    produced: set[str],
    window: TimeWindow,
    report: Callable[[str], None],
) -> None:
    """Empty the run date's partition (the window's, for a windowed table) of every optional
    table not in ``produced`` that exists at the output."""
    run_date = window.end
    for table in OPTIONAL_TABLES:
        granularity = window.granularity if table in WINDOWED_TABLES else None
        if table not in produced and clear_partition(
            spark, output, table, run_date, granularity=granularity
        ):
            report(f"emptied {table_location(output, table)} (run_date={run_date})")


def _monitor_and_summarize(
    spark: SparkSession,
    config: Config,
    result: EvaluationResult,
    window: TimeWindow,
    written: Mapping[str, DataFrame],
    run_id: str,
    digest: str,
    report: Callable[[str], None],
) -> MonitorOutcome:
    """Write the drift and alerts of the run's window, from the metrics just written (the
    local frame: no recomputation, no read-back)."""
    return run_monitoring(
        spark, config, window, result.stats, written[METRICS_TABLE], run_id, digest, report
    )


def _scan_says_empty(table: str, result: EvaluationResult) -> bool:
    """Whether the invalid rows or the statistics (which count invalid rows too) are empty,
    from the scan's counts."""
    if table == INVALID_ROWS_TABLE:
        return result.n_invalid == 0
    return result.n_rows == 0


def _quiet(_: str) -> None:
    return None


def evaluate_command(args: argparse.Namespace) -> int:
    """``spark-calib evaluate``: one run of the scheduled job, or one per date from
    ``--from`` to ``--run-date`` (a backfill) in one Spark session. Returns
    ``ExitCode.ALERT`` when a ``fail: true`` rule fired on any date, else ``ExitCode.OK``."""
    config, run_date = validated(args)
    check_job_config(config)
    dates = _run_dates(args.from_date, run_date)
    progress = progress_printer()
    spark = start_session(args, progress)
    paths: list[Path] = []
    html_seconds = 0.0
    try:
        if len(dates) > 1 and one_scan_backfill(config):
            outcome, failed = _backfill(spark, config, dates, progress)
        else:
            outcome, failed = _evaluate_dates(spark, config, dates, run_date, progress)
        # The diagrams and the page read the same partitions: each is collected once.
        with partitions_read_once():
            if args.report is not None:
                # Same session: the diagrams cost no second Spark start-up.
                progress(f"drawing the diagrams into {args.report}")
                paths = run_report(spark, config, run_date, Path(args.report))
            if args.html is not None:
                html_seconds = write_html_report(
                    spark, config, run_date, Path(args.html), progress=progress
                )
    finally:
        spark.stop()
    progress("done")
    print(_outcome_text(outcome))
    print(alerts_text(outcome.monitoring, len(config.alerts)))
    if args.report is not None:
        print(paths_text(paths, args.report))
    if args.html is not None:
        print(html_text(args.html, html_seconds))
    return int(ExitCode.ALERT if failed else ExitCode.OK)


def _run_dates(first_text: str | None, last: dt.date) -> list[dt.date]:
    """The dates from ``--from`` to ``--run-date``, or the run date alone."""
    first = last if first_text is None else parse_run_date(first_text)
    if first > last:
        raise ConfigError(f"--from {first} is after --run-date {last}")
    return [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]


def _evaluate_dates(
    spark: SparkSession,
    config: Config,
    dates: Sequence[dt.date],
    run_date: dt.date,
    progress: Callable[[str], None],
) -> tuple[EvaluateOutcome, bool]:
    """Run the job for each date in order, printing the rows and alerts of every date but
    ``run_date``; return the last outcome and whether a failing rule fired on any date."""
    failed = False
    for day in dates:
        outcome = run_evaluate(spark, config, day, progress=progress)
        failed = failed or outcome.monitoring.failed
        if day != run_date:
            print(f"run_date {day}: {outcome.n_rows:,} input rows")
            print(alerts_text(outcome.monitoring, len(config.alerts)), flush=True)
    return outcome, failed


def _backfill(
    spark: SparkSession,
    config: Config,
    dates: Sequence[dt.date],
    progress: Callable[[str], None],
) -> tuple[EvaluateOutcome, bool]:
    """Every date in one scan (``run_backfill``), printing the rows and alerts of every date
    with rows but the last, and the dates without rows; return the last date's outcome and
    whether a failing rule fired on any date."""
    backfill = run_backfill(spark, config, dates, progress=progress)
    for day in backfill.missing:
        print(f"run_date {day}: no input rows (not written)")
    for outcome in backfill.days[:-1]:
        print(f"run_date {outcome.run_date}: {outcome.n_rows:,} input rows")
        print(alerts_text(outcome.monitoring, len(config.alerts)), flush=True)
    return backfill.days[-1], backfill.failed


def _outcome_text(outcome: EvaluateOutcome) -> str:
    """The run's identity, its rows, the summary table and the tables written."""
    invalid = sum(outcome.invalid_counts.values())
    reasons = ", ".join(f"{reason}={n:,}" for reason, n in sorted(outcome.invalid_counts.items()))
    lines = [
        "",
        f"run_date {outcome.run_date}  run_id {outcome.run_id}  config_hash {outcome.config_hash}",
        f"{outcome.n_rows:,} input rows, {invalid:,} invalid"
        + (f" ({reasons})" if reasons else ""),
        "",
        (
            format_regression_summary(outcome.summary)
            if outcome.task == REGRESSION_TASK
            else format_summary(outcome.summary)
        ),
        "",
        *([format_recalibration(outcome.recalibration), ""] if outcome.recalibration else []),
        *([f"slice search:\n{outcome.search}", ""] if outcome.search else []),
        f"tables (partition run_date={outcome.run_date}):",
        *[f"  {location}" for location in outcome.tables.values()],
    ]
    return "\n".join(lines)
