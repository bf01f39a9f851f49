"""Read a run date's tables and draw its diagrams: reliability diagrams (and ROC curves when
the run has a ``calibration_roc`` table, before/after recalibration diagrams when it has a
``calibration_recalibration`` table) for classification, interval calibration diagrams for
regression. ``report_command`` is ``spark-calib report``."""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from spark_calib.config import Config, OutputConfig
from spark_calib.windows import window_of
from spark_calib_cli.commands.cli import (
    html_text,
    paths_text,
    progress_printer,
    start_session,
    validated,
)
from spark_calib_cli.commands.common import REGRESSION_TASK, check_job_config, run_window
from spark_calib_cli.commands.html_report import write_html_report
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.exit_codes import ExitCode
from spark_calib_cli.io.partitions import partitions_read_once, read_partition
from spark_calib_cli.io.tables import METRICS_TABLE
from spark_calib_cli.report import write_reliability_diagrams
from spark_calib_cli.report.recalibration_rows import run_recalibration_report
from spark_calib_cli.report.regression_rows import run_regression_report
from spark_calib_cli.report.reliability_rows import no_metric_rows, reliability_frames
from spark_calib_cli.report.rendered import start_drawing_processes
from spark_calib_cli.report.roc_rows import run_roc_report
from spark_calib_cli.report.trend_rows import DEFAULT_TREND_WINDOWS, run_trend_report

DEFAULT_REPORT_SLICES = 5


def default_report_dir(run_date: dt.date) -> Path:
    """``calibration_reports/run_date=YYYY-MM-DD`` under the working directory."""
    return Path("calibration_reports") / f"run_date={run_date.isoformat()}"


def report_command(args: argparse.Namespace) -> int:
    """``spark-calib report``: the diagrams of one run date, as PNG files."""
    config, run_date = validated(args)
    check_job_config(config)
    out_dir = Path(args.out) if args.out else default_report_dir(run_date)
    progress = progress_printer()
    spark = start_session(args, progress)
    try:
        # The diagrams and the page read the same partitions: each is collected once.
        with partitions_read_once():
            progress(f"reading the tables of run_date {run_date}")
            paths = run_report(
                spark,
                config,
                run_date,
                out_dir,
                top_slices=args.slices,
                granularity=args.granularity,
                trend_windows=args.trend,
            )
            html_seconds = 0.0
            if args.html is not None:
                html_seconds = write_html_report(
                    spark,
                    config,
                    run_date,
                    Path(args.html),
                    granularity=args.granularity,
                    trend_windows=args.trend,
                    progress=progress,
                )
    finally:
        spark.stop()
    print(paths_text(paths, out_dir))
    if args.html is not None:
        print(html_text(args.html, html_seconds))
    return int(ExitCode.OK)


def run_report(
    spark: SparkSession,
    config: Config,
    run_date: dt.date,
    out_dir: Path,
    *,
    top_slices: int = DEFAULT_REPORT_SLICES,
    min_slice_rows: int | None = None,
    granularity: str | None = None,
    trend_windows: int = DEFAULT_TREND_WINDOWS,
) -> list[Path]:
    """Write the run date's diagrams, then the trend figures of the last ``trend_windows``
    windows (``report_trend_job``; none when 0), into ``out_dir``; return their paths."""
    check_job_config(config)
    # The figures' rows are read first: the drawing processes start meanwhile.
    start_drawing_processes()
    if granularity is not None and granularity != run_window(config, run_date).granularity:
        # Any day of the week or month names its window, as for rollup.
        run_date = window_of(granularity, run_date).end
    granularity = granularity or run_window(config, run_date).granularity
    tasks = _window_diagram_tasks(
        spark,
        config,
        run_date,
        out_dir,
        top_slices=top_slices,
        min_slice_rows=config.min_slice_rows if min_slice_rows is None else min_slice_rows,
        granularity=granularity,
    )
    if trend_windows > 0:
        tasks.append(
            partial(
                run_trend_report,
                spark,
                config,
                run_date,
                granularity,
                out_dir,
                windows=trend_windows,
            )
        )
    return _concurrently(tasks)


def _concurrently(tasks: list[Callable[[], list[Path]]]) -> list[Path]:
    """Every task's paths, in the tasks' order; the tasks run at once, each in a thread.

    Each figure kind reads its rows (small Spark jobs, the thread waiting on the JVM) and
    then waits for its drawing processes: run one after another, the drawing processes would
    idle while the next kind's rows are read. The first task that fails, in their order,
    raises."""
    with ThreadPoolExecutor(max_workers=len(tasks)) as threads:
        futures = [threads.submit(task) for task in tasks]
        return [path for future in futures for path in future.result()]


def _window_diagram_tasks(
    spark: SparkSession,
    config: Config,
    run_date: dt.date,
    out_dir: Path,
    *,
    top_slices: int,
    min_slice_rows: int,
    granularity: str,
) -> list[Callable[[], list[Path]]]:
    """The tasks that write the run date's diagrams into ``out_dir``, each returning its paths.

    ``granularity`` picks the window ending on ``run_date`` (default: the daily run's, ``day``
    or ``rolling_Nd``); the ROC and regression diagrams exist for daily runs only.

    Classification: ``reliability_<model_version>.png`` (overall + the ``top_slices`` worst
    slices by ECE with at least ``min_slice_rows`` rows), ``recalibration_<model_version>.png``
    when the window has recalibration rows (overall + the worst slices by ECE before, each
    before and after every map), and ``roc_<model_version>.png`` when the run wrote ROC
    points. Regression: ``regression_calibration_<model_version>.png``
    (overall + the worst slices by miscalibration area) when the log has a std column.

    Only the chosen slices' rows reach the driver, so the cost does not grow with the number
    of slices. A task raises ``MissingInputError`` when the tables or the run date's partition
    are missing.
    """
    _, output = check_job_config(config)
    daily = granularity == run_window(config, run_date).granularity
    metrics = read_partition(spark, output, METRICS_TABLE, run_date, granularity=granularity)
    # The first arguments of the reliability and the regression diagrams.
    window = (spark, output, metrics, run_date, out_dir, top_slices, min_slice_rows)
    if config.task == REGRESSION_TASK:
        return [partial(_regression_diagrams, *window, daily=daily)]
    tasks: list[Callable[[], list[Path]]] = [
        partial(
            _reliability_diagrams,
            *window,
            granularity,
            positive_class="positive_class" in config.features(),
        ),
        partial(run_recalibration_report, spark, config, output, run_date, out_dir, granularity),
    ]
    if daily:
        tasks.append(partial(run_roc_report, spark, output, metrics, run_date, out_dir))
    return tasks


def _regression_diagrams(
    spark: SparkSession,
    output: OutputConfig,
    metrics: DataFrame,
    run_date: dt.date,
    out_dir: Path,
    top_slices: int,
    min_slice_rows: int,
    *,
    daily: bool,
) -> list[Path]:
    """Draw the interval calibration diagrams of a daily run (none for a longer window);
    return their paths. Raises ``MissingInputError`` when the run date has no metric rows."""
    if not daily:
        # The interval calibration table is written by daily runs only.
        return []
    if metrics.isEmpty():
        raise _no_rows(output, run_date)
    return run_regression_report(
        spark,
        output,
        metrics,
        run_date,
        out_dir,
        top_slices=top_slices,
        min_slice_rows=min_slice_rows,
    )


def _reliability_diagrams(
    spark: SparkSession,
    output: OutputConfig,
    metrics: DataFrame,
    run_date: dt.date,
    out_dir: Path,
    top_slices: int,
    min_slice_rows: int,
    granularity: str,
    *,
    positive_class: bool,
) -> list[Path]:
    """Draw the overall and worst slices' reliability diagrams of the window; return their
    paths. Raises ``MissingInputError`` when the window has no metric rows."""
    bins, panels = reliability_frames(
        spark, output, metrics, run_date, top_slices, min_slice_rows, granularity
    )
    return write_reliability_diagrams(
        bins, panels, out_dir, run_date=run_date.isoformat(), positive_class=positive_class
    )


def _no_rows(output: OutputConfig, run_date: dt.date) -> MissingInputError:
    return no_metric_rows(output, run_date)
