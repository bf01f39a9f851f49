"""A backfill: every run date of a range evaluated in one scan, written as the daily runs would.

``run_backfill`` is ``spark-calib evaluate --from D1 --run-date D2`` for an input with a
one-day window (``input.window.lookback_days: 1``):

1. one scan of the input rows of [D1, D2] and one aggregation with the day as a key
   (``spark_calib.evaluate_days``), one finishing pass for every day;
2. one write per table replacing the partitions of the run dates with rows (the windows table
   included), crash-safe and idempotent as a daily run's (``write_partitions``);
3. drift and alerts for each of those dates in date order, against the windows a daily run of
   that date would have read, from the statistics just written.

A run date without input rows is reported and left as it is, as a daily run would leave it
(that run stops with "no rows").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, StructField, StructType

from spark_calib import DayEvaluation, evaluate_days, input_col, sum_to_bins
from spark_calib.config import Config, config_hash
from spark_calib.local_data import local_dataframe
from spark_calib.windows import DAY
from spark_calib_cli.commands.backfill_monitoring import batch_monitoring, monitor_dates
from spark_calib_cli.commands.common import check_job_config, run_window
from spark_calib_cli.commands.monitoring import WINDOWS_SCHEMA, MonitorOutcome, monitor_window
from spark_calib_cli.commands.outcome import EvaluateOutcome, recalibration_lines, summary_rows
from spark_calib_cli.commands.window_stats import WindowStats
from spark_calib_cli.console.worst_slices import DEFAULT_TOP_SLICES
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.io.input import describe_input, read_input_days
from spark_calib_cli.io.local_frames import LocalFrame, in_memory
from spark_calib_cli.io.parallel_writes import Write
from spark_calib_cli.io.partitions import (
    RUN_DATE,
    clear_partition,
    table_location,
    write_partitions,
)
from spark_calib_cli.io.tables import (
    ALERTS_TABLE,
    DRIFT_TABLE,
    INVALID_ROWS_TABLE,
    METRICS_TABLE,
    OPTIONAL_TABLES,
    STATS_TABLE,
    WINDOWED_TABLES,
    WINDOWS_TABLE,
    day_run_tables,
    with_day_window,
    with_run_columns,
    write_tables,
)


@dataclass(frozen=True)
class BackfillOutcome:
    """Each run date's outcome with rows, in date order (the last with its console summary),
    and the run dates without input rows."""

    days: tuple[EvaluateOutcome, ...]
    missing: tuple[dt.date, ...]

    @property
    def failed(self) -> bool:
        """Whether a ``fail: true`` rule fired on any date."""
        return any(day.monitoring.failed for day in self.days)


def one_scan_backfill(config: Config) -> bool:
    """Whether ``run_backfill`` can do a range: the input has a window of one day and there is
    no ``slice_search``. (Without a window every date reads the whole input; a wider window
    needs each row in several run dates' windows; the search's lattice is pruned per date.
    The day-by-day runs still do these.)"""
    return (
        config.slice_search is None
        and config.input is not None
        and config.input.window is not None
        and config.input.window.lookback_days == 1
    )


def run_backfill(
    spark: SparkSession,
    config: Config,
    dates: Sequence[dt.date],
    *,
    run_id: str | None = None,
    progress: Callable[[str], None] | None = None,
    top_slices: int = DEFAULT_TOP_SLICES,
    min_slice_rows: int | None = None,
) -> BackfillOutcome:
    """Evaluate the run dates ``dates`` (consecutive, in order) in one scan and replace their
    partitions of every output table; see the module docstring. ``progress`` receives the
    phases (and, on an interactive terminal, each date's drift step).

    Raises ``ConfigError``, ``MissingInputError`` (no table or path, or no rows on any date),
    ``SchemaError``, ``InvalidRowsError`` (for the first date above ``max_invalid_fraction``;
    nothing is written) or ``OutputError``.
    """
    report = progress or _quiet
    step = report if sys.stdout.isatty() else _quiet
    source, _ = check_job_config(config)
    assert one_scan_backfill(config) and source.window is not None
    run_id = run_id or uuid.uuid4().hex
    digest = config_hash(config)
    first, last = dates[0], dates[-1]
    report(f"reading {describe_input(source, last, first)}")
    frame = read_input_days(spark, source, first, last)
    report(f"evaluating {len(dates)} run dates (one scan of the input)")
    statistics = _StatisticsWrite(spark, config, dates, run_id, digest, report)
    try:
        evaluated = evaluate_days(frame, config, source.window.column, statistics.start)
    except Exception:
        # The error is the run's, not the write's: let the write end, then raise it. (An
        # interrupt does not wait here; the interpreter's exit still lets the write end.)
        statistics.wait(quietly=True)
        raise
    try:
        present = [day for day in dates if evaluated.n_rows.get(day, 0) > 0]
        missing = tuple(day for day in dates if day not in present)
        for day in missing:
            report(f"run_date {day}: no input rows, nothing written for it")
        if not present:
            raise MissingInputError(
                f"input {describe_input(source, last, first)} has no rows for any run date "
                f"from {first} to {last}"
            )
        row_day = F.to_date(input_col(source.window.column))
        written, tables = _write_tables(
            spark, config, evaluated, present, row_day, run_id, digest, report, statistics
        )
        outcomes = _monitor_days(
            spark, config, evaluated, present, written, tables, run_id, digest, report, step
        )
        last_written = {table: _day_rows(rows, present[-1]) for table, rows in written.items()}
        summary = summary_rows(
            config,
            last_written,
            top_slices,
            config.min_slice_rows if min_slice_rows is None else min_slice_rows,
        )
        outcomes[-1] = dataclasses.replace(
            outcomes[-1],
            summary=tuple(summary),
            recalibration=recalibration_lines(last_written),
        )
    finally:
        statistics.wait(quietly=True)
        evaluated.unpersist()
    return BackfillOutcome(days=tuple(outcomes), missing=missing)


class _StatisticsWrite:
    """The statistics' one write, started from a thread as soon as ``evaluate_days`` has them
    (``start``), so that it runs while the driver finishes the outputs: the write is the
    JVM's work and the finishing the driver's Python, so they share the cores rather than
    take turns. ``_write_tables`` waits for it before any other table is written, so the
    write order of the daily run stays (the statistics in a group of their own, the metrics
    after them) and a crash inside it leaves every other table as it was."""

    def __init__(
        self,
        spark: SparkSession,
        config: Config,
        dates: Sequence[dt.date],
        run_id: str,
        digest: str,
        report: Callable[[str], None],
    ) -> None:
        self._spark, self._config, self._dates = spark, config, dates
        self._run_id, self._digest, self._report = run_id, digest, report
        self._pool: ThreadPoolExecutor | None = None
        self._future: Future[str] | None = None

    def start(self, stats: DataFrame, n_rows: Mapping[dt.date | None, int]) -> None:
        """Start writing ``stats`` (with ``run_date``) into the partitions of the dates with
        rows; nothing when there are none (the backfill then stops with no rows)."""
        output = self._config.output
        assert output is not None
        present = [day for day in self._dates if n_rows.get(day, 0) > 0]
        if not present:
            return
        rows = with_run_columns(stats, self._run_id, self._digest)
        location = table_location(output, STATS_TABLE)
        self._report(
            f"writing {location} (run_date {present[0]} to {present[-1]}) "
            "while the outputs are finished"
        )
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="write")
        self._future = self._pool.submit(
            write_partitions, self._spark, rows, output, STATS_TABLE, present, set(present)
        )

    def wait(self, *, quietly: bool = False) -> str | None:
        """The statistics table's location once its write has ended (None when none
        started); raises the write's error unless ``quietly``."""
        future, pool = self._future, self._pool
        if future is None or pool is None:
            return None
        pool.shutdown(wait=True)
        if quietly:
            return None if future.exception() else future.result()
        return future.result()


def _write_tables(
    spark: SparkSession,
    config: Config,
    evaluated: DayEvaluation,
    present: Sequence[dt.date],
    day: Column,
    run_id: str,
    digest: str,
    report: Callable[[str], None],
    statistics: _StatisticsWrite,
) -> tuple[dict[str, DataFrame], dict[str, str]]:
    """One write per table for every date of ``present`` (the statistics' write already
    started: it is waited for first); return table → the local frame of each derived table
    written (with ``run_date``), and table → location."""
    assert config.output is not None
    output = config.output
    result = evaluated.result
    outputs = day_run_tables(result, config, run_id, digest, day)
    produced = {table for table, _ in outputs}
    for table in OPTIONAL_TABLES:
        if table in produced:
            continue
        for run_date in present:
            granularity = DAY if table in WINDOWED_TABLES else None
            if clear_partition(spark, output, table, run_date, granularity=granularity) is None:
                break
        else:
            report(f"emptied {table_location(output, table)} ({len(present)} run dates)")
    # The derived tables first, on the driver: reading the first one runs the finishing pass
    # (the kernels of every date), so the progress names that phase before the writes.
    report(f"finishing the outputs of {len(present)} run dates")
    written: dict[str, DataFrame] = {}
    frames: dict[str, tuple[DataFrame, set[dt.date]]] = {}
    for table, rows in outputs:
        if table == STATS_TABLE:
            continue
        if table == INVALID_ROWS_TABLE:
            frames[table] = rows, {d for d in evaluated.invalid_counts if d is not None}
        else:
            local = in_memory(spark, rows)
            frames[table] = local.frame, local.values(RUN_DATE)
            written[table] = local.frame
    frames[WINDOWS_TABLE] = (
        _windows_rows(spark, present, evaluated.n_rows, run_id, digest),
        set(present),
    )
    span = f"run_date {present[0]} to {present[-1]}"

    def write(table: str) -> Write[str]:
        frame, with_rows = frames[table]
        granularity = DAY if table in WINDOWED_TABLES else None
        return (
            f"{table_location(output, table)} ({span})",
            lambda: write_partitions(
                spark, frame, output, table, present, with_rows, granularity=granularity
            ),
        )

    stats_location = statistics.wait()
    assert stats_location is not None
    tables = write_tables(list(frames), write, report)
    # In the order of the outputs, as the console lists them.
    located = {**tables, STATS_TABLE: stats_location}
    order = [table for table, _ in outputs if table in located] + [WINDOWS_TABLE]
    return written, {table: located[table] for table in dict.fromkeys(order)}


def _windows_rows(
    spark: SparkSession,
    present: Sequence[dt.date],
    n_rows: Mapping[dt.date | None, int],
    run_id: str,
    digest: str,
) -> DataFrame:
    """The ``calibration_windows`` row of each date's one-day window, with its ``run_date``."""
    schema = StructType([*WINDOWS_SCHEMA.fields, StructField(RUN_DATE, DateType())])
    rows: list[tuple[object, ...]] = [
        (day, day, 1, [day], [], n_rows[day], run_id, digest, day) for day in present
    ]
    return local_dataframe(spark, rows, schema)


def _monitor_days(
    spark: SparkSession,
    config: Config,
    evaluated: DayEvaluation,
    present: Sequence[dt.date],
    written: Mapping[str, DataFrame],
    tables: Mapping[str, str],
    run_id: str,
    digest: str,
    report: Callable[[str], None],
    step: Callable[[str], None],
) -> list[EvaluateOutcome]:
    """Drift and alerts of each date as its daily run computes them (each against the dates
    before it), then one write of each table for every date; return each date's outcome,
    without a summary. All dates at once (``monitor_dates``), else one by one."""
    assert config.output is not None
    result = evaluated.result
    report(f"drift and alerts of {len(present)} run dates")
    if batch_monitoring(config):
        dates = monitor_dates(spark, config, written[METRICS_TABLE], result.stats, present, digest)
        outcomes = dict(dates.outcomes)
        frames = {DRIFT_TABLE: dates.drift, ALERTS_TABLE: dates.alerts}
    else:
        outcomes, frames = _monitor_one_by_one(
            spark, config, evaluated, present, written, run_id, digest, step
        )
    written_tables = dict(tables)
    span = f"run_date {present[0]} to {present[-1]}"
    for table, local in frames.items():
        report(f"writing {table_location(config.output, table)} ({span})")
        written_tables[table] = write_partitions(
            spark,
            with_run_columns(with_day_window(local.frame), run_id, digest),
            config.output,
            table,
            present,
            local.values(RUN_DATE),
            granularity=DAY,
        )
    return [
        EvaluateOutcome(
            run_id=run_id,
            config_hash=digest,
            run_date=day,
            n_rows=evaluated.n_rows[day],
            invalid_counts=dict(evaluated.invalid_counts.get(day, {})),
            strategy=result.strategy,
            tables=written_tables,
            summary=(),
            monitoring=dataclasses.replace(outcomes[day], tables=written_tables),
            window=run_window(config, day),
            task=config.task,
        )
        for day in present
    ]


def _monitor_one_by_one(
    spark: SparkSession,
    config: Config,
    evaluated: DayEvaluation,
    present: Sequence[dt.date],
    written: Mapping[str, DataFrame],
    run_id: str,
    digest: str,
    step: Callable[[str], None],
) -> tuple[dict[dt.date, MonitorOutcome], dict[str, LocalFrame]]:
    """``monitor_window`` of each date in date order; every date's outcome, and the drift and
    alerts of every date as local frames with ``run_date``."""
    result = evaluated.result
    outcomes: dict[dt.date, MonitorOutcome] = {}
    parts: dict[str, list[DataFrame]] = {DRIFT_TABLE: [], ALERTS_TABLE: []}
    for index, day in enumerate(present, start=1):
        step(f"drift and alerts: run_date {day} ({index} of {len(present)})")
        monitored = monitor_window(
            spark,
            config,
            run_window(config, day),
            _day_rows(result.stats, day),
            _day_rows(written[METRICS_TABLE], day),
            run_id,
            digest,
            _quiet,
            as_of_run_date=True,
            previous_stats=_previous_day(config, result.stats, present, day, run_id),
        )
        outcomes[day] = monitored.outcome
        for table, local in ((DRIFT_TABLE, monitored.drift), (ALERTS_TABLE, monitored.alerts)):
            parts[table].append(local.frame.select(F.lit(day).alias(RUN_DATE), "*"))
    frames = {
        table: in_memory(spark, reduce(DataFrame.unionByName, frames))
        for table, frames in parts.items()
    }
    return outcomes, frames


def _previous_day(
    config: Config,
    stats: DataFrame,
    present: Sequence[dt.date],
    day: dt.date,
    run_id: str,
) -> WindowStats | None:
    """The statistics of the date before ``day`` when this backfill evaluated it (what
    ``read_window_stats`` would read back from the table), else None."""
    before = day - dt.timedelta(days=1)
    if before not in present:
        return None
    summed = sum_to_bins(
        _day_rows(stats, before), keep_cells=config.binning.strategy == "equal_mass"
    )
    return WindowStats(summed, (before,), (), (), ((before, run_id),))


def _day_rows(frame: DataFrame, day: dt.date) -> DataFrame:
    """The rows of ``frame`` for ``day``, without the ``run_date`` column."""
    return frame.where(F.col(RUN_DATE) == F.lit(day)).drop(RUN_DATE)


def _quiet(_: str) -> None:
    return None
