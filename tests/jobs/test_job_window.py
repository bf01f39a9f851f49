"""The input window: rows with run_date − lookback_days < date ≤ run_date."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_calib.config import InputConfig, Window
from spark_calib.errors import SchemaError
from spark_calib_cli.commands.evaluate import run_evaluate
from spark_calib_cli.errors import MissingInputError
from spark_calib_cli.io.input import describe_input, read_input
from tests.support.jobs import RUN_DATE, job_config, log_rows, write_log

LOOKBACK = 3
# Day offsets from the run date: -3 is just outside (run_date − 3, run_date], +1 is the future.
OFFSETS = (-4, -3, -2, -1, 0, 1)
INSIDE = {-2, -1, 0}


def day(offset: int) -> dt.date:
    return RUN_DATE + dt.timedelta(days=offset)


@pytest.fixture(scope="module")
def windowed_log(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One row per offset, with the day as a date, a timestamp late in the day and a string."""
    path = tmp_path_factory.mktemp("window") / "log"
    rows = [
        (
            offset,
            day(offset),
            dt.datetime.combine(day(offset), dt.time(23, 59, 59)),
            day(offset).isoformat(),
            0.8,
            1,
        )
        for offset in OFFSETS
    ]
    ddl = "offset int, d date, ts timestamp, s string, score double, label int"
    spark.createDataFrame(rows, ddl).write.parquet(str(path))
    return path


@pytest.mark.parametrize("column", ["d", "ts", "s"])
def test_window_keeps_the_lookback_days_ending_on_the_run_date(
    spark: SparkSession, windowed_log: Path, column: str
) -> None:
    source = InputConfig(
        path=str(windowed_log), window=Window(column=column, lookback_days=LOOKBACK)
    )

    kept = {row["offset"] for row in read_input(spark, source, RUN_DATE).collect()}

    assert kept == INSIDE


def test_without_window_every_row_is_read(spark: SparkSession, windowed_log: Path) -> None:
    source = InputConfig(path=str(windowed_log))
    assert read_input(spark, source, RUN_DATE).count() == len(OFFSETS)


def test_describe_input_names_the_inclusive_dates(windowed_log: Path) -> None:
    source = InputConfig(path="logs/x", window=Window(column="d", lookback_days=LOOKBACK))
    assert describe_input(source, RUN_DATE) == "parquet path logs/x, d in [2024-06-28, 2024-06-30]"


def test_missing_window_column_is_a_schema_error(spark: SparkSession, windowed_log: Path) -> None:
    source = InputConfig(path=str(windowed_log), window=Window(column="dt", lookback_days=1))
    with pytest.raises(SchemaError, match=r"column 'dt' \(input.window.column\) is not in the"):
        read_input(spark, source, RUN_DATE)


def test_window_column_of_another_type_is_a_schema_error(
    spark: SparkSession, windowed_log: Path
) -> None:
    source = InputConfig(path=str(windowed_log), window=Window(column="offset", lookback_days=1))
    with pytest.raises(SchemaError, match=r"must be a date, a timestamp .* found int"):
        read_input(spark, source, RUN_DATE)


def test_empty_window_is_missing_input_and_writes_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    log, out = tmp_path / "log", tmp_path / "out"
    write_log(spark, log, log_rows(5, day=day(-10)))
    config = job_config(
        {"path": str(log), "window": {"column": "event_date", "lookback_days": 1}},
        {"path": str(out)},
    )
    with pytest.raises(MissingInputError, match=r"has no rows for run_date 2024-06-30"):
        run_evaluate(spark, config, RUN_DATE)
    assert not out.exists()
