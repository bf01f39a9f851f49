"""The console summary of a regression run: which slices it picks, and how it prints them."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_calib_cli.console.regression_summary import (
    collect_regression_summary,
    format_regression_summary,
    interval_direction,
)
from spark_calib_cli.console.summary import SummaryRow

METRICS_DDL = (
    "model_version string, slice_name string, slice_value string, class string, "
    "metric string, value double, n long, weight_sum double"
)


def metric_rows(
    version: str | None, name: str, value: str, n: int, rmse: float, area: float | None
) -> list[tuple]:
    """One key's metrics; without ``area`` the key has no std metrics (no std column)."""
    values = {"count": float(n), "mse": rmse**2, "rmse": rmse, "mae": rmse / 2, "r2": 0.5}
    if area is not None:
        values |= {"gaussian_nll": 2.0, "coverage_0.9": 0.9 - area, "miscalibration_area": area}
    return [(version, name, value, None, metric, v, n, float(n)) for metric, v in values.items()]


@pytest.fixture(scope="module")
def with_std(spark: SparkSession) -> DataFrame:
    rows = [
        *metric_rows("v1", "overall", "", 1000, 4.0, 0.01),
        # The worst RMSE but a small area: ranked by area, it comes second.
        *metric_rows("v1", "country", "BR", 600, 9.0, 0.05),
        *metric_rows("v1", "country,device", "BR,tablet", 200, 5.0, 0.20),
        # The largest area, but below min_rows: noise, not a finding.
        *metric_rows("v1", "country", "MX", 10, 3.0, 0.90),
        *metric_rows(None, "overall", "", 50, 1.0, 0.0),
    ]
    return spark.createDataFrame(rows, METRICS_DDL)


def test_worst_slices_by_miscalibration_area(with_std: DataFrame) -> None:
    rows = collect_regression_summary(with_std, top=2, min_rows=100)

    assert [(r.model_version, r.slice_label, r.rank, r.n) for r in rows] == [
        (None, "overall", 0, 50),
        ("v1", "overall", 0, 1000),
        ("v1", "country=BR, device=tablet", 1, 200),
        ("v1", "country=BR", 2, 600),
    ]
    assert {r.ranked_by for r in rows} == {"miscal"}
    assert rows[1].values["rmse"] == 4.0
    assert rows[1].values["coverage_0.9"] == pytest.approx(0.89)


def test_without_std_slices_are_ranked_by_rmse(spark: SparkSession) -> None:
    metrics = spark.createDataFrame(
        [
            *metric_rows("v1", "overall", "", 1000, 4.0, None),
            *metric_rows("v1", "country", "BR", 600, 9.0, None),
            *metric_rows("v1", "country", "US", 400, 2.0, None),
        ],
        METRICS_DDL,
    )

    rows = collect_regression_summary(metrics, top=1, min_rows=100)

    assert [(r.slice_label, r.rank, r.ranked_by) for r in rows] == [
        ("overall", 0, "RMSE"),
        ("country=BR", 1, "RMSE"),
    ]
    assert rows[0].values["gaussian_nll"] is None


def test_format_shows_the_metrics_present_and_the_direction() -> None:
    values = {"mse": 16.0, "rmse": 4.0, "mae": 3.0, "r2": 0.75, "gaussian_nll": 2.5}
    rows = [
        SummaryRow(
            "v2", "overall", "", 0, 12345, {**values, "coverage_0.9": 0.62}, ranked_by="miscal"
        ),
        SummaryRow(
            "v2",
            "device",
            "tablet",
            1,
            99,
            {**values, "coverage_0.9": 0.99, "miscalibration_area": 0.1},
            ranked_by="miscal",
        ),
    ]

    text = format_regression_summary(rows).splitlines()

    assert text[0].split() == [
        "model_version",
        "slice",
        "n",
        "MSE",
        "RMSE",
        "MAE",
        "R2",
        "NLL",
        "cov@0.9",
        "miscal",
    ]
    assert text[1].split() == [
        "v2",
        "overall",
        "12,345",
        "16.0000",
        "4.0000",
        "3.0000",
        "0.7500",
        "2.5000",
        "0.6200",
        "-",
        "over-confident",
    ]
    assert text[2].split()[:5] == ["v2", "device=tablet", "(#1", "by", "miscal)"]
    assert text[2].split()[-1] == "under-confident"


def test_format_leaves_out_metrics_no_row_has() -> None:
    row = SummaryRow("v1", "overall", "", 0, 10, {"mse": 1.0, "rmse": 1.0, "mae": 1.0, "r2": 0.0})

    header = format_regression_summary([row]).splitlines()[0].split()

    assert header == ["model_version", "slice", "n", "MSE", "RMSE", "MAE", "R2"]


@pytest.mark.parametrize(
    ("coverage", "expected"),
    [(0.6, "over-confident"), (0.95, "under-confident"), (0.89, ""), (None, "")],
)
def test_interval_direction(coverage: float | None, expected: str) -> None:
    assert interval_direction(coverage) == expected
