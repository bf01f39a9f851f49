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
        "ECE",
        "−",
        "noise)",
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


def test_slices_are_ranked_by_ece_beyond_its_noise(spark: SparkSession) -> None:
    """A: 150 rows, ECE 0.30 with lower bound 0.05, one bin at p̄ = 0.5 with n_eff 150, so
    ece_null = √(2/π)·√(0.25/150) = 0.0326 and the excess 0.0174. B: 5,000 rows, ECE 0.12
    with lower bound 0.10, n_eff 5,000: ece_null = √(2/π)·√(0.25/5000) = 0.0056, excess 0.0944.
    B is worse beyond its noise though its ECE is smaller."""
    ddl = METRICS_DDL + ", ci_lower double"
    metrics = [
        ("v1", "overall", "", None, "ece", 0.1, 5150, 5150.0, 0.09),
        ("v1", "country", "A", None, "ece", 0.30, 150, 150.0, 0.05),
        ("v1", "country", "B", None, "ece", 0.12, 5000, 5000.0, 0.10),
    ]
    reliability = [
        ("v1", "country", value, None, 0, 0.0, 1.0, n, float(n), 0.5, 0.5, 0.0, float(n))
        for value, n in (("A", 150), ("B", 5000))
    ]
    rows = collect_summary(
        spark.createDataFrame(metrics, ddl),
        spark.createDataFrame(reliability, RELIABILITY_DDL + ", n_eff double"),
        top=2,
        min_rows=100,
    )
    ranked = {row.slice_label: row for row in rows if row.rank > 0}
    assert (ranked["country=B"].rank, ranked["country=A"].rank) == (1, 2)
    assert ranked["country=A"].values["ece_null"] == pytest.approx(
        (2 / 3.141592653589793) ** 0.5 * (0.25 / 150) ** 0.5
    )
    assert ranked["country=B"].values["ece_excess"] == pytest.approx(
        0.10 - (2 / 3.141592653589793) ** 0.5 * (0.25 / 5000) ** 0.5
    )
