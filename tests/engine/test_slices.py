"""The slice_value encoding is unambiguous for separators, escapes, nulls and unicode."""

from __future__ import annotations

from pyspark.sql import SparkSession

from spark_calib import evaluate
from spark_calib.slicing.values import decode_slice_value, slice_name

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
