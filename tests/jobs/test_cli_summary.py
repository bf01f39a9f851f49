"""The console summary: which slices it picks, and how it prints them."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_calib_cli.console.summary import SummaryRow, collect_summary, direction, format_summary
from spark_calib_cli.report.labels import slice_label

METRICS_DDL = (
    "model_version string, slice_name string, slice_value string, class string, "
    "metric string, value double, n long, weight_sum double"
)
RELIABILITY_DDL = (
    "model_version string, slice_name string, slice_value string, class string, bin int, "
    "bin_lower double, bin_upper double, n long, weight_sum double, mean_confidence double, "
    "accuracy double, gap double"
)


def metric_rows(version: str | None, name: str, value: str, n: int, ece: float) -> list[tuple]:
    return [
        (version, name, value, None, "ece", ece, n, float(n)),
        (version, name, value, None, "accuracy", 0.5, n, float(n)),
        (version, name, value, None, "count", float(n), n, float(n)),
        # A per-class row must not leak into the top-label overview.
        (version, name, value, "1", "classwise_ece", 0.99, n, float(n)),
    ]


@pytest.fixture(scope="module")
def tables(spark: SparkSession) -> tuple[DataFrame, DataFrame]:
    metrics = [
        *metric_rows("v1", "overall", "", 1000, 0.01),
        *metric_rows("v1", "country", "BR", 600, 0.30),
        *metric_rows("v1", "country", "US", 390, 0.05),
        # The highest ECE, but below min_rows: noise, not a finding.
        *metric_rows("v1", "country", "MX", 10, 0.90),
        *metric_rows("v1", "country,device", "BR,tablet", 200, 0.40),
        *metric_rows(None, "overall", "", 50, 0.02),
    ]
    reliability = [
        # Mean confidence of v1 overall: (100·0.6 + 300·0.8) / 400 = 0.75; empty bin ignored.
        ("v1", "overall", "", None, 0, 0.0, 0.5, 10, 100.0, 0.6, 0.5, -0.1),
        ("v1", "overall", "", None, 1, 0.5, 1.0, 30, 300.0, 0.8, 0.5, -0.3),
        ("v1", "overall", "", None, 2, 0.5, 1.0, 0, 0.0, None, None, None),
        ("v1", "overall", "", "1", 0, 0.0, 0.5, 10, 100.0, 0.1, 0.5, 0.4),
    ]
    return (
        spark.createDataFrame(metrics, METRICS_DDL),
        spark.createDataFrame(reliability, RELIABILITY_DDL),
    )


def test_overall_then_worst_slices_with_enough_rows(tables: tuple[DataFrame, DataFrame]) -> None:
    rows = collect_summary(*tables, top=2, min_rows=100)

    assert [(r.model_version, r.slice_label, r.rank, r.n) for r in rows] == [
        (None, "overall", 0, 50),
        ("v1", "overall", 0, 1000),
        ("v1", "country=BR, device=tablet", 1, 200),
        ("v1", "country=BR", 2, 600),
    ]
    v1_overall = rows[1].values
    assert v1_overall["ece"] == 0.01
    assert v1_overall["mean_confidence"] == pytest.approx((100 * 0.6 + 300 * 0.8) / 400)
    assert rows[0].values["mean_confidence"] is None


def test_format_summary_aligns_columns_and_names_the_direction() -> None:
    rows = [
        SummaryRow(
            "v2", "overall", "", 0, 12345, {"ece": 0.1, "accuracy": 0.7, "mean_confidence": 0.85}
        ),
        SummaryRow(
            "v2", "device", "tablet", 1, 99, {"ece": 0.25, "accuracy": 0.8, "mean_confidence": 0.5}
        ),
    ]

    text = format_summary(rows).splitlines()

    assert text[0].split() == [
        "model_version",
        "slice",
        "n",
        "ECE",
        "MCE",
        "Brier",
        "NLL",
        "accuracy",
        "mean",
        "conf",
    ]
    assert text[1].split() == [
        "v2",
        "overall",
        "12,345",
        "0.1000",
        "-",
        "-",
        "-",
        "0.7000",
        "0.8500",
        "over-confident",
    ]
    assert text[2].split() == [
        "v2",
        "device=tablet",
        "(#1",
        "by",
        "ECE)",
        "99",
        "0.2500",
        "-",
        "-",
        "-",
        "0.8000",
        "0.5000",
        "under-confident",
    ]
    assert len({line.index("0.") for line in text[1:]}) == 1


@pytest.mark.parametrize(
    ("confidence", "accuracy", "expected"),
    [(0.9, 0.7, "over-confident"), (0.6, 0.7, "under-confident"), (0.71, 0.7, ""), (None, 0.7, "")],
)
def test_direction(confidence: float | None, accuracy: float, expected: str) -> None:
    assert direction(confidence, accuracy) == expected


def test_slice_label_decodes_escapes_and_nulls() -> None:
    assert slice_label("overall", "") == "overall"
    assert slice_label("city,tier", "Paris\\, TX,\\N") == "city=Paris, TX, tier=null"
