"""The regression demo log: seeded, and it shows what the README promises (v1's σ calibrated
except on country=BR, device=tablet; v2's σ too small, v3's too large)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from spark_calib import evaluate
from spark_calib_cli.console.regression_summary import (
    collect_regression_summary,
    interval_direction,
)
from spark_calib_cli.console.summary import SummaryRow
from spark_calib_cli.demo import logs as demo

ROWS = 60_000
SLICES = [[], ["country"], ["device"], ["country", "device"]]
# A calibrated σ on ~20k rows: the 19 coverages are each within about 0.01 of their level.
CALIBRATED_AREA = 0.02
BROKEN_AREA = 0.1


def headline(rows: list[SummaryRow]) -> dict[tuple[str | None, int], SummaryRow]:
    return {(row.model_version, row.rank): row for row in rows}


def test_same_seed_same_log(spark: SparkSession) -> None:
    first = demo.regression_log(spark, rows=2_000, seed=7)
    again = demo.regression_log(spark, rows=2_000, seed=7)
    other = demo.regression_log(spark, rows=2_000, seed=8)

    assert first.collect() == again.collect()
    assert first.collect() != other.collect()


def test_regression_log_schema(spark: SparkSession) -> None:
    frame = demo.regression_log(spark, rows=10)
    assert frame.schema.simpleString() == (
        "struct<request_id:bigint,event_date:date,model_version:string,country:string,"
        "device:string,prediction:double,target:double,std:double>"
    )


def test_regression_demo_shows_each_kind_of_miscalibration(spark: SparkSession) -> None:
    log = demo.regression_log(spark, rows=ROWS)
    config = {
        "task": "regression",
        "columns": {
            "prediction": "prediction",
            "target": "target",
            "std": "std",
            "model_version": "model_version",
        },
        "slices": SLICES,
        "max_invalid_fraction": 0.01,
    }
    result = evaluate(log, config)
    rows = headline(collect_regression_summary(result.metrics, top=1, min_rows=100))
    result.unpersist()

    assert rows[("v1", 0)].values["miscalibration_area"] < CALIBRATED_AREA
    worst_v1 = rows[("v1", 1)]
    assert worst_v1.slice_label == "country=BR, device=tablet"
    assert worst_v1.values["miscalibration_area"] > BROKEN_AREA
    assert interval_direction(worst_v1.values["coverage_0.9"]) == "over-confident"
    assert interval_direction(rows[("v2", 0)].values["coverage_0.9"]) == "over-confident"
    assert interval_direction(rows[("v3", 0)].values["coverage_0.9"]) == "under-confident"
