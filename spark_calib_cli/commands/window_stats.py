"""Read the statistics of a window of run dates from ``calibration_stats`` and sum them.

Windows are summed from runs that each cover their own day (``input.window.lookback_days``
1, or no window). A run date whose statistics were computed with another ``config_hash`` (a
different evaluation config) cannot be added to this config's; it is reported, not summed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import combine_stats
from spark_calib.config import Config, DateRange
from spark_calib.errors import ConfigError
from spark_calib.windows import TimeWindow
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.io.partitions import RUN_DATE, read_table
from spark_calib_cli.io.tables import CONFIG_HASH, RUN_ID, STATS_TABLE


@dataclass(frozen=True)
class WindowStats:
    """The summed statistics of the run dates present (None when there are none), which dates
    of the window are present and missing, the dates skipped for another config, and the
    (run date, run id) pairs summed (what identifies the sum)."""

    stats: DataFrame | None
    present: tuple[dt.date, ...]
    missing: tuple[dt.date, ...]
    other_config: tuple[dt.date, ...]
    runs: tuple[tuple[dt.date, str], ...] = ()


def run_length_days(config: Config) -> int:
    """How many days one run date's statistics cover: ``input.window.lookback_days`` (1 when
    the input has no window)."""
    if config.input is None or config.input.window is None:
        return 1
    return config.input.window.lookback_days


def require_daily_runs(config: Config, what: str) -> None:
    """ConfigError unless every run covers one day, which ``what`` needs to sum run dates.
    Without an input window every run reads the whole input, so sums would count rows once
    per run date."""
    if config.input is None or config.input.window is None:
        raise ConfigError(
            f"{what} sums daily statistics, but without input.window every run reads the whole "
            f"input; set input.window with lookback_days: 1"
        )
    days = run_length_days(config)
    if days != 1:
        raise ConfigError(
            f"{what} sums daily statistics, but each run covers {days} days "
            f"(input.window.lookback_days: {days}); set it to 1"
        )


def read_window_stats(
    spark: SparkSession,
    config: Config,
    dates: TimeWindow | DateRange,
    config_digest: str,
    summed_by: Callable[..., DataFrame] = combine_stats,
    as_of: dt.date | None = None,
) -> WindowStats:
    """The statistics of the window ``dates`` written with ``config_digest``, summed by
    ``summed_by`` (``combine_stats``, or ``sum_to_bins`` when only the bins are needed). One
    small job lists the run dates present.

    The run dates read are those whose runs tile the window: every date when a run covers one
    day, else ``dates.end``, ``dates.end − L``, … for runs of L days (``run_length_days``).
    With ``as_of`` (a backfill's run date), dates after it count as missing, as they were for
    the daily run of ``as_of``, even when the table already has them.
    """
    assert config.output is not None
    expected = expected_run_dates(dates.start, dates.end, run_length_days(config))
    try:
        table = read_table(spark, config.output, STATS_TABLE)
    except MissingInputError:
        return WindowStats(None, (), tuple(expected), ())
    readable = [day for day in expected if as_of is None or day <= as_of]
    in_range = table.where(F.col(RUN_DATE).isin(readable))
    found = in_range.select(RUN_DATE, CONFIG_HASH, RUN_ID).distinct().collect()
    matching = sorted({row[RUN_DATE] for row in found if row[CONFIG_HASH] == config_digest})
    runs = sorted(
        (row[RUN_DATE], row[RUN_ID]) for row in found if row[CONFIG_HASH] == config_digest
    )
    other = sorted({row[RUN_DATE] for row in found} - set(matching))
    missing = [day for day in expected if day not in matching]
    summed = None
    if matching:
        summed = summed_by(in_range.where(F.col(CONFIG_HASH) == F.lit(config_digest)))
    return WindowStats(summed, tuple(matching), tuple(missing), tuple(other), tuple(runs))


def expected_run_dates(start: dt.date, end: dt.date, run_days: int) -> list[dt.date]:
    """The run dates whose runs of ``run_days`` days tile ``start``..``end``, oldest first."""
    count = ((end - start).days + 1) // run_days
    return [end - dt.timedelta(days=run_days * i) for i in reversed(range(count))]
