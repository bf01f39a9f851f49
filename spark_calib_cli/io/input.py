"""Read the job's input: a catalog table or a path, narrowed to the run date's window."""

from __future__ import annotations

import datetime as dt

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, StringType, TimestampNTZType, TimestampType

from spark_calib import input_col
from spark_calib.config import InputConfig, Window
from spark_calib.errors import ConfigError, SchemaError
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.io.identifiers import checked_table_name

MISSING_PATH_CONDITIONS = frozenset({"PATH_NOT_FOUND", "UNABLE_TO_INFER_SCHEMA"})
MISSING_FORMAT_CONDITIONS = frozenset({"DATA_SOURCE_NOT_FOUND"})


def read_input(spark: SparkSession, source: InputConfig, run_date: dt.date) -> DataFrame:
    """The input rows of one run: ``source`` filtered by its window, if any (no Spark action).

    Raises ``MissingInputError`` when the table or path does not exist, ``ConfigError`` for an
    unavailable format, and ``SchemaError`` when the window column is missing or not a date.
    """
    frame = _load(spark, source)
    if source.window is None:
        return frame
    return frame.where(window_condition(frame, source.window, run_date))


def read_input_days(
    spark: SparkSession, source: InputConfig, first: dt.date, last: dt.date
) -> DataFrame:
    """The input rows of the run dates ``first`` to ``last`` (a backfill of daily windows):
    ``source`` filtered by its window column to [first, last] (no Spark action)."""
    assert source.window is not None
    frame = _load(spark, source)
    return frame.where(date_range_condition(frame, source.window.column, first, last))


def describe_input(
    source: InputConfig, run_date: dt.date, first_run_date: dt.date | None = None
) -> str:
    """One line naming the input and its window (of the run dates ``first_run_date`` to
    ``run_date``, for a backfill), for progress output."""
    where = f"table {source.table}" if source.table else f"{source.format} path {source.path}"
    if source.window is None:
        return where
    first, last = window_bounds(source.window, first_run_date or run_date)[0], run_date
    return f"{where}, {source.window.column} in [{first}, {last}]"


def window_bounds(window: Window, run_date: dt.date) -> tuple[dt.date, dt.date]:
    """First and last date kept: (run_date − N, run_date] is [run_date − N + 1, run_date]."""
    return run_date - dt.timedelta(days=window.lookback_days - 1), run_date


def window_condition(frame: DataFrame, window: Window, run_date: dt.date) -> Column:
    """True for rows whose window column falls in (run_date − lookback_days, run_date].

    A date column is compared as is, a timestamp by its UTC date, and a string as ISO
    ``yyyy-MM-dd`` text, which orders like the dates and keeps Hive-style string partitions
    (``dt='2024-06-30'``) prunable.
    """
    first, last = window_bounds(window, run_date)
    return date_range_condition(frame, window.column, first, last)


def date_range_condition(frame: DataFrame, name: str, first: dt.date, last: dt.date) -> Column:
    """True for rows whose date column ``name`` falls in [first, last] (``window_condition``'s
    comparison, by the column's type)."""
    types = {field.name: field.dataType for field in frame.schema.fields}
    if name not in types:
        raise SchemaError(
            f"column {name!r} (input.window.column) is not in the input. "
            f"Input columns: {sorted(types)}"
        )
    column = input_col(name)
    data_type = types[name]
    if isinstance(data_type, DateType):
        return column.between(F.lit(first), F.lit(last))
    if isinstance(data_type, TimestampType | TimestampNTZType):
        return F.to_date(column).between(F.lit(first), F.lit(last))
    if isinstance(data_type, StringType):
        return column.between(F.lit(first.isoformat()), F.lit(last.isoformat()))
    raise SchemaError(
        f"column {name!r} (input.window.column) must be a date, a timestamp or a "
        f"yyyy-MM-dd string, found {data_type.simpleString()}"
    )


def _load(spark: SparkSession, source: InputConfig) -> DataFrame:
    if source.table is not None:
        name = checked_table_name(source.table, "input.table")
        if not spark.catalog.tableExists(name):
            raise MissingInputError(f"input table {name!r} does not exist")
        return spark.table(name)
    assert source.path is not None
    try:
        frame = spark.read.format(source.format).options(**source.options).load(source.path)
        # Spark Connect resolves the path lazily, on the first schema look-up; ask for it here
        # so that a missing path is a MissingInputError there too (classic: already resolved).
        frame.schema  # noqa: B018
        return frame
    except AnalysisException as error:
        condition = error.getCondition()
        if condition in MISSING_PATH_CONDITIONS:
            raise MissingInputError(
                f"input path {source.path!r} does not exist or holds no {source.format} files"
            ) from None
        if condition in MISSING_FORMAT_CONDITIONS:
            raise ConfigError(
                f"config key 'input.format': {source.format!r} is not available in this "
                f"Spark session (is its package on the classpath?)"
            ) from None
        raise
