"""The demo logs: seeded, and they show what the README promises (v2 over-confident, v3
under-confident, v1 calibrated except on country=BR, device=tablet)."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import evaluate
from spark_calib_cli.console.summary import (
    SummaryRow,
    collect_summary,
    direction,
    positive_class_direction,
)
from spark_calib_cli.demo import logs as demo

BINARY_ROWS = 60_000
MULTICLASS_ROWS = 30_000
SLICES = [[], ["country"], ["device"], ["country", "device"]]
# Well calibrated: the histogram ECE of a calibrated model on ~20k rows is a few thousandths.
CALIBRATED_ECE = 0.02
BROKEN_ECE = 0.08


def headline(rows: list[SummaryRow]) -> dict[tuple[str | None, int], SummaryRow]:
    return {(row.model_version, row.rank): row for row in rows}


def test_same_seed_same_log(spark: SparkSession) -> None:
    first = demo.binary_log(spark, rows=2_000, seed=7)
    again = demo.binary_log(spark, rows=2_000, seed=7)
    other = demo.binary_log(spark, rows=2_000, seed=8)

    # spark.range over fixed partitions returns rows in id order, so lists compare directly.
    assert first.collect() == again.collect()
    assert first.collect() != other.collect()


def test_binary_log_schema(spark: SparkSession) -> None:
    frame = demo.binary_log(spark, rows=10)
    assert frame.schema.simpleString() == (
        "struct<request_id:bigint,event_date:date,model_version:string,country:string,"
        "device:string,score:double,label:int,split:string>"
    )
    # The recalibration split is the request id's parity.
    splits = {(r.request_id % 2, r.split) for r in frame.collect()}
    assert splits == {(0, "val"), (1, "test")}


BINARY_CONFIG = {
    "task": "binary",
    "columns": {"score": "score", "label": "label", "model_version": "model_version"},
    "slices": SLICES,
    "max_invalid_fraction": 0.01,
}


def test_binary_demo_shows_each_kind_of_miscalibration(spark: SparkSession) -> None:
    """The default positive-class view: ECE on the score against the label, and the direction
    from the mean prediction against the base rate (equal here: the sharpened and flattened
    logits keep the mean) and then the reliability slope (v2's scores too extreme: slope
    below 1; v3's too timid: above 1)."""
    log = demo.binary_log(spark, rows=BINARY_ROWS)
    result = evaluate(log, BINARY_CONFIG)
    rows = headline(collect_summary(result.metrics, result.reliability, top=1, min_rows=100))
    result.unpersist()

    assert rows[("v1", 0)].values["ece"] < CALIBRATED_ECE
    worst_v1 = rows[("v1", 1)]
    assert worst_v1.slice_label == "country=BR, device=tablet"
    assert worst_v1.values["ece"] > BROKEN_ECE
    for version, expected in (("v2", "over-confident"), ("v3", "under-confident")):
        values = rows[(version, 0)].values
        assert (
            positive_class_direction(
                values["mean_confidence"], values["mean_outcome"], values["reliability_slope"]
            )
            == expected
        ), (version, values)


def test_binary_demo_top_label_view_shows_each_kind_of_miscalibration(
    spark: SparkSession,
) -> None:
    """binary_view top_label: the mean confidence of the predicted class against the
    accuracy, as for multiclass."""
    log = demo.binary_log(spark, rows=BINARY_ROWS)
    result = evaluate(log, {**BINARY_CONFIG, "binary_view": "top_label"})
    rows = headline(collect_summary(result.metrics, result.reliability, top=1, min_rows=100))
    result.unpersist()

    assert rows[("v1", 0)].values["ece"] < CALIBRATED_ECE
    assert rows[("v1", 1)].slice_label == "country=BR, device=tablet"
    for version, expected in (("v2", "over-confident"), ("v3", "under-confident")):
        values = rows[(version, 0)].values
        assert direction(values["mean_confidence"], values["accuracy"]) == expected


def test_multiclass_demo_shows_each_kind_of_miscalibration(spark: SparkSession) -> None:
    log = demo.multiclass_log(spark, rows=MULTICLASS_ROWS)
    config = {
        "task": "multiclass",
        "columns": {"probs": "probs", "label": "label", "model_version": "model_version"},
        "class_names": list(demo.CLASS_NAMES),
        "slices": [[], ["country", "device"]],
        "metrics": ["ece", "accuracy", "count"],
        "max_invalid_fraction": 0.01,
    }
    result = evaluate(log, config)
    rows = headline(collect_summary(result.metrics, result.reliability, top=1, min_rows=100))
    result.unpersist()

    assert rows[("v1", 0)].values["ece"] < CALIBRATED_ECE
    assert rows[("v1", 1)].slice_label == "country=BR, device=tablet"
    for version, expected in (("v2", "over-confident"), ("v3", "under-confident")):
        values = rows[(version, 0)].values
        assert direction(values["mean_confidence"], values["accuracy"]) == expected


def test_multiclass_probabilities_sum_to_one(spark: SparkSession) -> None:
    log = demo.multiclass_log(spark, rows=1_000).where("probs is not null")
    sums = [row[0] for row in log.selectExpr("aggregate(probs, 0D, (a, p) -> a + p)").collect()]
    assert all(abs(total - 1.0) < 1e-9 for total in sums)


def test_binary_log_degrades_v1_on_mx_from_day_ten(spark: SparkSession) -> None:
    """14 days ending 2024-06-30: from 2024-06-26 (day 10) on, v1 over-predicts on country=MX,
    and only there."""
    assert demo.drift_start(demo.DEFAULT_END_DATE, demo.DEFAULT_DAYS) == dt.date(2024, 6, 26)
    log = demo.binary_log(spark, rows=200_000)
    assert log.agg(F.min("event_date"), F.max("event_date")).first() == (
        dt.date(2024, 6, 17),
        dt.date(2024, 6, 30),
    )
    config = {
        "task": "binary",
        "columns": {"score": "score", "label": "label", "model_version": "model_version"},
        "slices": [["country"]],
        "metrics": ["ece"],
        "max_invalid_fraction": 0.01,
    }
    late = F.col("event_date") >= F.lit(dt.date(2024, 6, 26))

    def ece(rows: DataFrame) -> dict[tuple[str, str], float]:
        result = evaluate(rows, config)
        values = {(r.model_version, r.slice_value): r.value for r in result.metrics.collect()}
        result.unpersist()
        return values

    before, after = ece(log.where(~late)), ece(log.where(late))
    assert before[("v1", "MX")] < CALIBRATED_ECE + 0.02
    assert after[("v1", "MX")] > BROKEN_ECE
    assert after[("v1", "US")] < CALIBRATED_ECE + 0.02
    assert abs(after[("v2", "MX")] - before[("v2", "MX")]) < 0.03
