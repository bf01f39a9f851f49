"""The run day folded into the model-version key and split back (``spark_calib.rows.days``)."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import SparkSession

from spark_calib import fold_run_date, split_run_date

DAY = dt.date(2024, 6, 30)
OTHER = dt.date(2024, 7, 1)


def test_fold_then_split_gives_back_every_key(spark: SparkSession) -> None:
    # A null version, a version with the separator in it and a version that looks like a day.
    rows = [
        (DAY, None, "overall", 1.0),
        (DAY, "v|2", "overall", 2.0),
        (OTHER, "2024-06-30", "country", 3.0),
        (OTHER, "", "country", 4.0),
    ]
    frame = spark.createDataFrame(
        rows, "run_date date, model_version string, slice_name string, value double"
    )
    folded = fold_run_date(frame)
    assert folded.columns == ["model_version", "slice_name", "value"]
    assert sorted(row[0] for row in folded.collect()) == [
        "2024-06-30",
        "2024-06-30|v|2",
        "2024-07-01|",
        "2024-07-01|2024-06-30",
    ]
    back = split_run_date(folded)
    assert back.columns == ["run_date", "model_version", "slice_name", "value"]
    assert sorted(back.collect(), key=lambda row: row["value"]) == sorted(
        frame.collect(), key=lambda row: row["value"]
    )
