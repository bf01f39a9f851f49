"""A backfill's drift and alerts: every run date's at once, each as its daily run computes it.

The daily run of date d compares d's drift values with the previous window's (d − 1) and with
the baseline dates' present on d. Here the dates are a key again, folded into the model
version as in the statistics (``spark_calib.rows.days``), so one ``drift_table`` computes
every date's drift:

- the current values of every date come from the backfill's metrics in one pass;
- the previous values of date d are date d − 1's current values, re-keyed to d, when the
  backfill evaluated d − 1, else they are read from the statistics table as the daily run
  does (the first date of the range, or one after a date without rows);
- the baseline values of date d are those of the baseline dates up to d (``as_of``); dates
  that see the same baseline dates share one sum, and every sum is valued in one pass.

The alerts of every date are then computed in one plan and one job, from the metrics and drift
with ``run_date`` as a column of its own (a rule names a model version, so the date cannot be
folded into it there) carried into each alert row. The result equals the daily runs' row by
row (``tests/jobs/test_backfill.py``). With ``drift.baseline_model_version`` the baseline is
another version of the same date, which a folded key cannot express: ``batch_monitoring``
says so and the backfill then monitors the dates one by one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import fold_run_date, split_run_date
from spark_calib.config import Config
from spark_calib.monitoring import (
    drift_table,
    fired_alerts,
    metric_values,
    needs_noise_model,
    window_values,
)
from spark_calib.windows import previous_window
from spark_calib_cli.commands.common import run_window
from spark_calib_cli.commands.monitoring import (
    MonitorOutcome,
    memo_window_values,
    monitor_outcome,
    presence,
    summed_to_bins,
)
from spark_calib_cli.commands.window_stats import expected_run_dates, read_window_stats
from spark_calib_cli.io.local_frames import LocalFrame, in_memory
from spark_calib_cli.io.partitions import RUN_DATE, table_location
from spark_calib_cli.io.tables import STATS_TABLE

# The last baseline date of the sum a statistics row is copied to.
_AS_OF = "_as_of"


@dataclass(frozen=True)
class DatesMonitoring:
    """Every date's drift and fired alerts (local frames with ``run_date``) and each date's
    outcome (the tables not yet known)."""

    drift: LocalFrame
    alerts: LocalFrame
    outcomes: Mapping[dt.date, MonitorOutcome]


def batch_monitoring(config: Config) -> bool:
    """Whether ``monitor_dates`` can monitor a backfill's dates at once (no
    ``drift.baseline_model_version``)."""
    return config.drift.baseline_model_version is None


def monitor_dates(
    spark: SparkSession,
    config: Config,
    metrics: DataFrame,
    stats_df: DataFrame,
    present: Sequence[dt.date],
    digest: str,
) -> DatesMonitoring:
    """The drift and alerts of every date of ``present`` (consecutive or not, in order), from
    the backfill's ``metrics`` (with ``run_date``) and statistics ``stats_df`` (with
    ``run_date``); see the module docstring."""
    assert config.output is not None and batch_monitoring(config)
    location = table_location(config.output, STATS_TABLE)
    noise = fold_run_date(stats_df) if needs_noise_model(metrics, config) else None
    current = in_memory(spark, metric_values(fold_run_date(metrics), config, noise)).frame
    previous, previous_text = _previous_values(spark, config, current, present, digest, location)
    baseline = _baseline_values(spark, config, present, digest)
    drift = in_memory(spark, split_run_date(drift_table(current, previous, baseline, config)))
    # Every date's alerts in one plan, the date carried as a key (as a daily run's table,
    # with run_date last).
    fired_alerts_of_dates = fired_alerts(metrics, drift.frame, config, (RUN_DATE,))
    alerts = in_memory(
        spark,
        fired_alerts_of_dates.select(
            *[name for name in fired_alerts_of_dates.columns if name != RUN_DATE], RUN_DATE
        ),
    )
    fired = alerts.rows
    outcomes = {
        day: monitor_outcome(
            config, [row for row in fired if row[RUN_DATE] == day], previous_text[day]
        )
        for day in present
    }
    return DatesMonitoring(drift, alerts, outcomes)


def _previous_values(
    spark: SparkSession,
    config: Config,
    current: DataFrame,
    present: Sequence[dt.date],
    digest: str,
    location: str,
) -> tuple[DataFrame | None, dict[dt.date, str]]:
    """The previous window's values of every date, keyed by that date, and each date's
    presence text (``2024-06-29 (1 of 1 run dates)``)."""
    dates = set(present)
    shifted = [day for day in present if day - dt.timedelta(days=1) in dates]
    frames: list[DataFrame] = []
    text: dict[dt.date, str] = {}
    if shifted:
        next_day = split_run_date(current).withColumn(RUN_DATE, F.date_add(F.col(RUN_DATE), 1))
        frames.append(fold_run_date(next_day.where(F.col(RUN_DATE).isin(shifted))))
        for day in shifted:
            before = previous_window(run_window(config, day))
            text[day] = presence(before, (before.end,), ())
    for day in present:
        if day in text:
            continue
        before = previous_window(run_window(config, day))
        earlier = read_window_stats(spark, config, before, digest, summed_to_bins(config))
        text[day] = presence(before, earlier.present, earlier.missing)
        values = memo_window_values(spark, config, location, digest, earlier)
        if values is not None:
            frames.append(_rekeyed(values, F.lit(day)))
    return _union(frames), text


def _baseline_values(
    spark: SparkSession,
    config: Config,
    present: Sequence[dt.date],
    digest: str,
) -> DataFrame | None:
    """The baseline values of every date, keyed by that date: the baseline dates up to it.

    Dates that see the same baseline dates share one sum. The sums are computed together: the
    baseline's statistics are read once, each row is copied to every sum whose last date is
    on or after its run date, and that date is folded into the key as the backfill's day is,
    so one ``window_values`` values every sum, instead of one read and one valuation per
    sum. Each baseline date's rows are first summed to the grain the values read
    (``summed_to_bins``), so a date is copied once per sum in bins, not in fine cells."""
    baseline = config.drift.baseline_dates
    if baseline is None:
        return None
    expected = expected_run_dates(baseline.start, baseline.end, 1)
    groups: dict[tuple[dt.date, ...], list[dt.date]] = {}
    for day in present:
        groups.setdefault(tuple(d for d in expected if d <= day), []).append(day)

    def summed_per_date(rows: DataFrame) -> DataFrame:
        return split_run_date(summed_to_bins(config)(fold_run_date(rows)))

    found = read_window_stats(spark, config, baseline, digest, summed_by=summed_per_date)
    if found.stats is None:
        return None
    # Each sum is named by its last baseline date (as_of) and is valued for its dates.
    sums = {
        seen[-1]: days
        for seen, days in groups.items()
        if seen and any(day in found.present for day in seen)
    }
    if not sums:
        return None
    as_of = F.explode(
        F.array(*[F.when(F.col(RUN_DATE) <= F.lit(last), F.lit(last)) for last in sums])
    )
    copies = found.stats.select("*", as_of.alias(_AS_OF)).where(F.col(_AS_OF).isNotNull())
    keyed = fold_run_date(copies.drop(RUN_DATE).withColumnRenamed(_AS_OF, RUN_DATE))
    values = split_run_date(window_values(summed_to_bins(config)(keyed), config))
    days_of: Column | None = None
    for last, days in sums.items():
        listed = F.array(*[F.lit(day) for day in days])
        is_last = F.col(RUN_DATE) == F.lit(last)
        days_of = F.when(is_last, listed) if days_of is None else days_of.when(is_last, listed)
    assert days_of is not None
    per_day = values.withColumn(RUN_DATE, F.explode(days_of))
    return in_memory(spark, fold_run_date(per_day)).frame


def _rekeyed(frame: DataFrame, day: Column) -> DataFrame:
    """``frame`` (keyed by plain versions) keyed by ``day`` too."""
    return fold_run_date(frame.withColumn(RUN_DATE, day))


def _union(frames: list[DataFrame]) -> DataFrame | None:
    return reduce(DataFrame.unionByName, frames) if frames else None
