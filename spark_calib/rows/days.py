"""The run day as a key of the statistics: folded into the model-version key, and split back.

A backfill evaluates many days in one scan (``spark_calib.days.evaluate_days``). Every
statistic, kernel and output is keyed by (model_version, slice_name, slice_value[, class]), so
the day travels inside the first key rather than as a new column through all of them: the
day-keyed version is the day as ``yyyy-MM-dd``, then ``|`` and the version when the version is
not null. The date's text has a fixed width of 10, so the split is exact for any version text
(a version containing ``|`` included), and a null version stays distinct from every string.
A row whose day is null gets a null key; it splits back to a null day and a null version.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

DATE_WIDTH = 10
SEPARATOR = "|"


def day_keyed_version(day: Column, model_version: Column) -> Column:
    """``2024-06-30`` for a null version, ``2024-06-30|v2`` for version ``v2``."""
    tail = F.when(model_version.isNotNull(), F.concat(F.lit(SEPARATOR), model_version))
    return F.concat(F.date_format(day, "yyyy-MM-dd"), F.coalesce(tail, F.lit("")))


def key_day(key: Column) -> Column:
    """The DATE of a day-keyed version."""
    return F.to_date(F.substring(key, 1, DATE_WIDTH))


def key_version(key: Column) -> Column:
    """The model version of a day-keyed version (null when it carries none)."""
    return F.when(F.length(key) > DATE_WIDTH, key.substr(F.lit(DATE_WIDTH + 2), F.length(key)))
