"""Every day of a date range in one scan: ``evaluate_days``.

A backfill needs each day's outputs exactly as a run over that day alone would give them. The
day is made a key of the statistics (folded into the model-version key,
``spark_calib.rows.days``), so one scan and one aggregation give every day's statistics, one
finishing pass gives every day's outputs, and each output row carries its day. Because every
output of a key is a function of that key's statistics alone, a day's rows equal those of
``evaluate`` over that day's input rows.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_calib.config import Config, ConfigSource, load_config
from spark_calib.evaluate import check_invalid_fraction, evaluation
from spark_calib.result import EvaluationResult
from spark_calib.rows.columns import input_col
from spark_calib.rows.days import DATE_WIDTH, day_keyed_version, key_day, key_version
from spark_calib.stats import schema as stats
from spark_calib.stats.counts import VersionCounts

RUN_DATE = "run_date"
# The EvaluationResult fields keyed by model version: each gains the run_date column.
KEYED_FIELDS = (
    "metrics",
    "reliability",
    "stats",
    "confusion",
    "thresholds",
    "roc",
    "regression_calibration",
    "recalibration",
)


@dataclass(frozen=True)
class DayEvaluation:
    """The outputs of ``evaluate_days``.

    Attributes:
        result: the outputs of every day. Each keyed frame (metrics, reliability, stats and
            the optional tables) starts with a ``run_date`` DATE column, then has the columns
            ``evaluate`` gives it. ``invalid`` is as ``evaluate`` gives it (the input rows,
            whose day column says their day), and ``n_rows`` and ``invalid_counts`` are the
            totals of the range.
        n_rows: day → input rows (valid and invalid) of that day; days without rows are absent.
        invalid_counts: day → reason → invalid rows of that day (days without any: absent).
    """

    result: EvaluationResult
    n_rows: Mapping[dt.date | None, int]
    invalid_counts: Mapping[dt.date | None, Mapping[str, int]]

    def days(self) -> list[dt.date]:
        """The days with input rows, in order (a null day excluded)."""
        return sorted(day for day in self.n_rows if day is not None)

    def unpersist(self) -> None:
        """Release the cached statistics (``EvaluationResult.unpersist``)."""
        self.result.unpersist()


def evaluate_days(
    df: DataFrame,
    config: ConfigSource,
    day: str | Column,
    on_statistics: Callable[[DataFrame, Mapping[dt.date | None, int]], None] | None = None,
) -> DayEvaluation:
    """Evaluate each day of ``df`` on its own, in one scan: the outputs of ``evaluate`` over
    each day's rows, every keyed output with a leading ``run_date`` column.

    ``day`` is the input column (a DATE, a TIMESTAMP read as its date in the session time
    zone, or ``yyyy-MM-dd`` text) or a DATE expression; rows whose day is null are evaluated
    as one more day, ``run_date`` null. ``max_invalid_fraction`` applies to each day: the
    first day above it raises ``InvalidRowsError`` naming the day, before any output is
    finished. Call ``unpersist()`` when done with the outputs.

    ``on_statistics`` gets the statistics (the result's ``stats``, computed and cached) and
    the rows of each day (``n_rows``) before any output is finished, after the check: a job
    can write them while the driver finishes the outputs.
    """
    cfg = load_config(config)
    expression = F.to_date(input_col(day)) if isinstance(day, str) else day

    def statistics(stats_df: DataFrame, counts: VersionCounts) -> None:
        if on_statistics is not None:
            on_statistics(split_run_date(stats_df), _counts_by_day(counts)[0])

    result, counts = evaluation(
        df,
        cfg,
        expression,
        check=lambda counts: _check_each_day(counts, cfg),
        on_statistics=statistics,
    )
    rows, invalid = _counts_by_day(counts)
    split: dict[str, Any] = {
        name: split_run_date(frame)
        for name in KEYED_FIELDS
        if (frame := getattr(result, name)) is not None
    }
    return DayEvaluation(
        result=dataclasses.replace(result, **split), n_rows=rows, invalid_counts=invalid
    )


def fold_run_date(frame: DataFrame) -> DataFrame:
    """``frame`` with its ``run_date`` folded into the model-version key (the day-keyed
    version of ``evaluate_days``' statistics), ``run_date`` dropped: the inverse of
    ``split_run_date``. A frame keyed like the outputs is then keyed by day too, so functions
    of keyed frames (drift, for one) work on every day at once."""
    key = day_keyed_version(F.col(RUN_DATE), F.col(stats.MODEL_VERSION))
    return frame.select(
        *[
            key.alias(name) if name == stats.MODEL_VERSION else F.col(name)
            for name in frame.columns
            if name != RUN_DATE
        ]
    )


def split_run_date(frame: DataFrame) -> DataFrame:
    """``run_date`` (first) and the plain model version, split from a day-keyed version."""
    key = F.col(stats.MODEL_VERSION)
    return frame.select(
        key_day(key).alias(RUN_DATE),
        *[
            key_version(key).alias(name) if name == stats.MODEL_VERSION else F.col(name)
            for name in frame.columns
        ],
    )


def _day_of(key: str | None) -> dt.date | None:
    return None if key is None else dt.date.fromisoformat(key[:DATE_WIDTH])


def _counts_by_day(
    counts: VersionCounts,
) -> tuple[dict[dt.date | None, int], dict[dt.date | None, dict[str, int]]]:
    """Day → rows, and day → reason → invalid rows, from (day-keyed version, reason) → rows."""
    rows: dict[dt.date | None, int] = {}
    invalid: dict[dt.date | None, dict[str, int]] = {}
    for (key, reason), n in counts.items():
        day = _day_of(key)
        rows[day] = rows.get(day, 0) + n
        if reason is not None:
            reasons = invalid.setdefault(day, {})
            reasons[reason] = reasons.get(reason, 0) + n
    return rows, invalid


def _check_each_day(counts: VersionCounts, cfg: Config) -> None:
    """``check_invalid_fraction`` of each day, in date order."""
    by_day: dict[dt.date | None, dict[str | None, int]] = {}
    for (key, reason), n in counts.items():
        reasons = by_day.setdefault(_day_of(key), {})
        reasons[reason] = reasons.get(reason, 0) + n
    for day in sorted(by_day, key=lambda d: (d is None, d or dt.date.min)):
        check_invalid_fraction(by_day[day], cfg, scope=f"run_date {day}")
