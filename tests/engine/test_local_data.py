"""Frames over driver rows (``spark_calib.local_data``) and the CLI's collected derived tables
(``in_memory``): the same rows and schema as ``createDataFrame``, as a local relation that no
Python worker reads."""

from __future__ import annotations

import contextlib
import datetime as dt
import io

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from spark_calib.local_data import local_dataframe
from spark_calib.recalibration.table import RECALIBRATION_SCHEMA
from spark_calib_cli.io.local_frames import in_memory

SCHEMA = (
    "name string, value double, n bigint, bin int, flag boolean, day date, "
    "parameters map<string, double>, knots array<struct<cell: int, lower: double, value: double>>"
)
ROWS = [
    ("a", 0.25, 3, 2, True, dt.date(2024, 6, 1), {"temperature": 1.5}, [(7, 0.1, 0.2)]),
    (None, None, None, None, None, None, None, None),
    Row(
        name="b",
        value=-1e300,
        n=2**40,
        bin=0,
        flag=False,
        day=dt.date(2024, 6, 2),
        parameters={},
        knots=[],
    ),
]


def _physical_plan(frame: DataFrame) -> str:
    """The frame's physical plan as ``explain`` prints it."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        frame.explain()
    return printed.getvalue()


def test_rows_and_schema_equal_create_dataframe(spark: SparkSession) -> None:
    built = local_dataframe(spark, ROWS, SCHEMA)
    expected = spark.createDataFrame(ROWS, SCHEMA)
    assert built.schema == expected.schema
    assert built.collect() == expected.collect()
    assert built.collect()[0]["knots"] == [Row(cell=7, lower=0.1, value=0.2)]


def test_no_rows_give_an_empty_frame_with_the_schema(spark: SparkSession) -> None:
    built = local_dataframe(spark, [], SCHEMA)
    assert built.schema == spark.createDataFrame([], SCHEMA).schema
    assert built.count() == 0


def test_a_struct_type_schema_is_taken_as_it_is(spark: SparkSession) -> None:
    schema = spark.createDataFrame([], RECALIBRATION_SCHEMA).schema
    assert local_dataframe(spark, [], schema).schema == schema


def test_the_frame_is_a_local_relation_not_a_python_rdd(spark: SparkSession) -> None:
    assert "LocalTableScan" in _physical_plan(local_dataframe(spark, ROWS, SCHEMA))
    # What createDataFrame gives for the same rows: an RDD that Python workers unpickle.
    assert "LocalTableScan" not in _physical_plan(spark.createDataFrame(ROWS, SCHEMA))


def test_in_memory_keeps_the_rows_over_a_local_relation(spark: SparkSession) -> None:
    derived = (
        spark.range(5)
        .select(
            F.col("id").cast("string").alias("key"),
            (F.col("id") / 4).alias("value"),
            F.create_map(F.lit("t"), F.col("id").cast("double")).alias("parameters"),
            F.make_date(F.lit(2024), F.lit(6), F.col("id") + 1).alias("day"),
        )
        .where(F.col("id") != 2)
    )
    local = in_memory(spark, derived)
    assert local.frame.schema == derived.schema
    assert sorted(local.rows) == sorted(derived.collect())
    assert sorted(local.frame.collect()) == sorted(local.rows)
    assert "LocalTableScan" in _physical_plan(local.frame)
    assert not local.empty
    assert in_memory(spark, derived.where(F.lit(False))).empty
    # A column's distinct values from the Arrow copy, as Python values (dates as dates).
    assert local.values("day") == {dt.date(2024, 6, d) for d in (1, 2, 4, 5)}
    assert local.values("key") == {"0", "1", "3", "4"}
