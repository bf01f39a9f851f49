"""The slice_value encoding is unambiguous for separators, escapes, nulls and unicode."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_calib import evaluate
from spark_calib.rows import internal_sql as S
from spark_calib.slicing.values import decode_slice_value, slice_name, slice_value_expression

VALUES = [
    ("a,b", "x"),
    ("a", "b,x"),
    ("a\\", ",x"),
    (None, "x"),
    ("\\N", "x"),
    ("", "x"),
    ("é✓", ""),
]


def test_slice_names() -> None:
    assert slice_name([]) == "overall"
    assert slice_name(["country", "device"]) == "country,device"
    assert slice_name(["a,b"]) == "a\\,b"


def test_encoded_values_are_distinct_and_decode_back(spark: SparkSession) -> None:
    rows = [(0.8, 1, g, h) for g, h in VALUES]
    df = spark.createDataFrame(rows, "s double, y int, g string, h string")
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "slices": [["g", "h"]],
        "metrics": ["count"],
    }
    encoded = [r.slice_value for r in evaluate(df, config).metrics.collect()]
    assert len(encoded) == len(VALUES) == len(set(encoded))
    assert {tuple(decode_slice_value(v, 2)) for v in encoded} == set(VALUES)


def test_decode_examples() -> None:
    assert decode_slice_value("", 0) == []
    assert decode_slice_value("", 1) == [""]
    assert decode_slice_value("a\\,b,\\N", 2) == ["a,b", None]
    assert decode_slice_value("\\\\N", 1) == ["\\N"]


def test_the_encoding_as_sql_text_equals_the_encoding_as_columns(spark: SparkSession) -> None:
    """The statistics write slice_value as SQL text, the row passes as Columns: one formula."""
    df = spark.createDataFrame(VALUES, "g string, h string").withColumn("i", F.lit(7))
    as_columns = slice_value_expression([F.col("g"), F.col("h"), F.col("i")])
    as_text = slice_value_expression([S.col("g"), S.col("h"), S.col("i")])
    pairs = df.select(as_columns.alias("c"), F.expr(as_text.text).alias("t")).collect()
    assert [row.c for row in pairs] == [row.t for row in pairs]
    assert {tuple(decode_slice_value(row.t, 3)) for row in pairs} == {
        (g, h, "7") for g, h in VALUES
    }
