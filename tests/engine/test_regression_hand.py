"""Hand-computed regression metrics and invalid regression rows (docs/metrics.md).

e = y − μ. Every expected value is arithmetic from the spec's formulas; z_l = Φ⁻¹((1 + l)/2)
comes from the standard library's NormalDist, not from spark_calib."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest
from pyspark.sql import SparkSession

from spark_calib import evaluate
from tests.support.frames import metric_values, overall

INF = math.inf
NAN = math.nan
LEVELS_19 = [k / 20 for k in range(1, 20)]  # 0.05, 0.10, …, 0.95


def regression_config(**columns: str) -> dict:
    return {
        "task": "regression",
        "columns": {"prediction": "mu", "target": "y", **columns},
    }


def test_mse_rmse_mae_r2_weighted(spark: SparkSession) -> None:
    # (μ, y, w): e = 1.0, −0.5, −1.0, 0.0; W = 4.5.
    rows = [(1.0, 2.0, 1.0), (3.0, 2.5, 2.0), (0.0, -1.0, 1.0), (2.0, 2.0, 0.5)]
    df = spark.createDataFrame(rows, "mu double, y double, w double")
    got = overall(evaluate(df, regression_config(weight="w")).metrics)
    w_total = 1.0 + 2.0 + 1.0 + 0.5
    sse = 1.0 * 1.0**2 + 2.0 * 0.5**2 + 1.0 * 1.0**2 + 0.5 * 0.0**2
    assert got["count"] == 4.0
    assert got["mse"] == pytest.approx(sse / w_total, abs=1e-12)
    assert got["rmse"] == pytest.approx(math.sqrt(sse / w_total), abs=1e-12)
    assert got["mae"] == pytest.approx((1.0 + 2.0 * 0.5 + 1.0 + 0.0) / w_total, abs=1e-12)
    sum_wy2 = 1.0 * 2.0**2 + 2.0 * 2.5**2 + 1.0 * (-1.0) ** 2 + 0.5 * 2.0**2
    sum_wy = 1.0 * 2.0 + 2.0 * 2.5 + 1.0 * (-1.0) + 0.5 * 2.0
    sst = sum_wy2 - sum_wy**2 / w_total
    assert got["r2"] == pytest.approx(1 - sse / sst, abs=1e-12)
    # Without std/variance the distributional metrics are not defaults.
    assert not {"gaussian_nll", "miscalibration_area"} & set(got)
    assert not [name for name in got if name.startswith("coverage")]


def test_r2_negative(spark: SparkSession) -> None:
    rows = [(5.0, 1.0), (-3.0, 2.0), (4.0, 3.0)]
    df = spark.createDataFrame(rows, "mu double, y double")
    got = overall(evaluate(df, regression_config()).metrics)
    sse = (1.0 - 5.0) ** 2 + (2.0 + 3.0) ** 2 + (3.0 - 4.0) ** 2
    sst = (1.0 + 4.0 + 9.0) - (1.0 + 2.0 + 3.0) ** 2 / 3
    assert got["r2"] == pytest.approx(1 - sse / sst, abs=1e-12)
    assert got["r2"] == pytest.approx(-20.0, abs=1e-12)
    assert got["mse"] == pytest.approx(sse / 3, abs=1e-12)


def test_r2_null_for_constant_target(spark: SparkSession) -> None:
    rows = [(1.0, 2.0), (2.5, 2.0), (3.0, 2.0)]
    df = spark.createDataFrame(rows, "mu double, y double")
    got = overall(evaluate(df, regression_config()).metrics)
    assert got["r2"] is None
    assert got["mse"] == pytest.approx((1.0 + 0.25 + 1.0) / 3, abs=1e-12)


# (μ, y, σ, w): e = 1, 0, −1.5; |e|/σ = 1, 0, 3; W = 4.
DIST_ROWS = [(0.0, 1.0, 1.0, 1.0), (1.0, 1.0, 2.0, 2.0), (2.0, 0.5, 0.5, 1.0)]
DIST_W = 1.0 + 2.0 + 1.0


def _nll_term(e: float, sigma: float) -> float:
    return 0.5 * math.log(2 * math.pi * sigma**2) + e**2 / (2 * sigma**2)


EXPECTED_GAUSSIAN_NLL = (
    1.0 * _nll_term(1.0, 1.0) + 2.0 * _nll_term(0.0, 2.0) + 1.0 * _nll_term(-1.5, 0.5)
) / DIST_W


def _expected_coverage(level: float) -> float:
    """The row with |e|/σ = 0 is always covered (weight 2), |e|/σ = 1 when z_l ≥ 1, i.e.
    l ≥ 2Φ(1) − 1 ≈ 0.6827 (weight 1); |e|/σ = 3 only for l ≥ 0.9973, never here."""
    return (2.0 + (1.0 if level > 0.6827 else 0.0)) / DIST_W


def _dist_frame(spark: SparkSession, square: bool):  # type: ignore[no-untyped-def]
    rows = [(mu, y, s * s if square else s, w) for mu, y, s, w in DIST_ROWS]
    return spark.createDataFrame(rows, "mu double, y double, u double, w double")


@pytest.mark.parametrize("role", ["std", "variance"])
def test_gaussian_nll_coverage_miscalibration(spark: SparkSession, role: str) -> None:
    df = _dist_frame(spark, square=role == "variance")
    result = evaluate(df, regression_config(weight="w", **{role: "u"}))
    got = overall(result.metrics)
    assert got["gaussian_nll"] == pytest.approx(EXPECTED_GAUSSIAN_NLL, abs=1e-12)
    # Default coverage_levels [0.5, 0.8, 0.9, 0.95]: z = 0.674, 1.28, 1.64, 1.96.
    assert got["coverage_0.5"] == pytest.approx(2.0 / 4, abs=1e-12)
    assert got["coverage_0.8"] == pytest.approx(3.0 / 4, abs=1e-12)
    assert got["coverage_0.9"] == pytest.approx(3.0 / 4, abs=1e-12)
    assert got["coverage_0.95"] == pytest.approx(3.0 / 4, abs=1e-12)
    area = sum(abs(_expected_coverage(level) - level) for level in LEVELS_19) / 19
    assert got["miscalibration_area"] == pytest.approx(area, abs=1e-12)
    assert got["mse"] == pytest.approx((1.0 * 1.0 + 2.0 * 0.0 + 1.0 * 2.25) / DIST_W, abs=1e-12)

    table = sorted(result.regression_calibration.collect(), key=lambda r: r.level)
    assert [r.level for r in table] == pytest.approx(LEVELS_19, abs=1e-12)
    for row in table:
        assert (row.model_version, row.slice_name, row.slice_value) == (None, "overall", "")
        assert row.z == pytest.approx(NormalDist().inv_cdf((1 + row.level) / 2), abs=1e-9)
        assert row.observed == pytest.approx(_expected_coverage(row.level), abs=1e-12)
        assert row.gap == pytest.approx(_expected_coverage(row.level) - row.level, abs=1e-12)
        assert (row.n, row.weight_sum) == (3, DIST_W)


def test_custom_coverage_levels(spark: SparkSession) -> None:
    """coverage_levels [0.25, 0.99]: z = 0.319 and 2.576; metric names from str(level)."""
    df = _dist_frame(spark, square=False)
    config = {**regression_config(weight="w", std="u"), "coverage_levels": [0.25, 0.99]}
    got = overall(evaluate(df, config).metrics)
    assert got["coverage_0.25"] == pytest.approx(2.0 / 4, abs=1e-12)
    assert got["coverage_0.99"] == pytest.approx(3.0 / 4, abs=1e-12)
    assert "coverage_0.5" not in got


def test_gaussian_nll_matches_normal_logpdf(spark: SparkSession) -> None:
    """Unweighted, one row: −log N(y; μ, σ) = ½ log(2πσ²) + (y − μ)²/(2σ²)."""
    df = spark.createDataFrame([(1.0, 4.0, 2.0)], "mu double, y double, u double")
    config = {**regression_config(std="u"), "metrics": ["gaussian_nll"]}
    got = overall(evaluate(df, config).metrics)
    expected = -math.log(
        math.exp(-((4.0 - 1.0) ** 2) / (2 * 2.0**2)) / (2.0 * math.sqrt(2 * math.pi))
    )
    assert got["gaussian_nll"] == pytest.approx(expected, abs=1e-12)


def _reasons(spark: SparkSession, rows: list, ddl: str, config: dict) -> tuple[dict, dict, int]:
    df = spark.createDataFrame(rows, ddl)
    result = evaluate(df, {**config, "max_invalid_fraction": 1.0})
    reasons = {r.id: r.reason for r in result.invalid.collect()}
    return reasons, dict(result.invalid_counts), result.n_rows


def test_invalid_regression_rows_with_std(spark: SparkSession) -> None:
    rows = [
        (1, None, 1.0, 1.0),
        (2, NAN, 1.0, 1.0),
        (3, INF, 1.0, 1.0),
        (4, -INF, 1.0, 1.0),
        (5, 1.0, None, 1.0),
        (6, 1.0, NAN, 1.0),
        (7, 1.0, -INF, 1.0),
        (8, 1.0, 1.0, None),
        (9, 1.0, 1.0, NAN),
        (10, 1.0, 1.0, INF),
        (11, 1.0, 1.0, 0.0),
        (12, 1.0, 1.0, -1.0),
        (13, None, NAN, -1.0),  # first reason wins
        (14, 1.0, NAN, 0.0),
        (15, 1.0, 3.0, 2.0),  # valid
    ]
    config = regression_config(std="u")
    reasons, counts, n_rows = _reasons(spark, rows, "id int, mu double, y double, u double", config)
    assert reasons == {
        1: "null_prediction",
        2: "non_finite_prediction",
        3: "non_finite_prediction",
        4: "non_finite_prediction",
        5: "null_target",
        6: "non_finite_target",
        7: "non_finite_target",
        8: "null_std",
        9: "non_finite_std",
        10: "non_finite_std",
        11: "non_positive_std",
        12: "non_positive_std",
        13: "null_prediction",
        14: "non_finite_target",
    }
    assert counts == {
        "null_prediction": 2,
        "non_finite_prediction": 3,
        "null_target": 1,
        "non_finite_target": 3,
        "null_std": 1,
        "non_finite_std": 2,
        "non_positive_std": 2,
    }
    assert n_rows == 15


def test_invalid_regression_rows_with_variance_and_weight(spark: SparkSession) -> None:
    rows = [
        (1, 1.0, 1.0, None, 1.0),
        (2, 1.0, 1.0, NAN, 1.0),
        (3, 1.0, 1.0, -0.5, 1.0),
        (4, 1.0, 1.0, 0.0, 1.0),
        (5, 1.0, 1.0, 1.0, None),
        (6, 1.0, 1.0, 1.0, -1.0),
        (7, 1.0, 1.0, 1.0, INF),
        (8, 1.0, 1.0, -1.0, None),  # the variance reason comes before the weight reasons
        (9, 1.0, 3.0, 4.0, 0.0),  # valid: a zero weight
        (10, 1.0, 3.0, 4.0, 2.0),  # valid
    ]
    config = regression_config(variance="v", weight="w")
    reasons, counts, n_rows = _reasons(
        spark, rows, "id int, mu double, y double, v double, w double", config
    )
    assert reasons == {
        1: "null_variance",
        2: "non_finite_variance",
        3: "non_positive_variance",
        4: "non_positive_variance",
        5: "null_weight",
        6: "negative_weight",
        7: "non_finite_weight",
        8: "non_positive_variance",
    }
    assert counts == {
        "null_variance": 1,
        "non_finite_variance": 1,
        "non_positive_variance": 3,
        "null_weight": 1,
        "negative_weight": 1,
        "non_finite_weight": 1,
    }
    assert n_rows == 10


def test_invalid_rows_are_left_out_of_the_metrics(spark: SparkSession) -> None:
    """Only the two valid rows count: e = 1 and −2."""
    rows = [(1.0, 2.0), (None, 5.0), (NAN, 5.0), (3.0, 1.0), (1.0, None)]
    df = spark.createDataFrame(rows, "mu double, y double")
    result = evaluate(df, {**regression_config(), "max_invalid_fraction": 1.0})
    got = overall(result.metrics)
    assert got["count"] == 2.0
    assert got["mse"] == pytest.approx((1.0 + 4.0) / 2, abs=1e-12)
    assert got["mae"] == pytest.approx((1.0 + 2.0) / 2, abs=1e-12)
    assert result.n_rows == 5
    assert result.n_invalid == 3


def test_regression_per_model_version_and_slice(spark: SparkSession) -> None:
    # (μ, y, σ, mv, g): |e|/σ = 0.5, 2, 0 for a; 1 for b.
    rows = [
        (0.0, 1.0, 2.0, "a", "x"),
        (1.0, 3.0, 1.0, "a", "x"),
        (5.0, 5.0, 1.0, "a", "y"),
        (2.0, 1.0, 1.0, "b", "x"),
    ]
    df = spark.createDataFrame(rows, "mu double, y double, u double, mv string, g string")
    config = {
        **regression_config(std="u", model_version="mv"),
        "slices": [[], ["g"]],
        "metrics": ["count", "mae", "coverage"],
        "coverage_levels": [0.5],
    }
    result = evaluate(df, config)
    values = metric_values(result.metrics)
    assert values[("a", "overall", "", None, "mae")] == pytest.approx((1 + 2 + 0) / 3, abs=1e-12)
    assert values[("a", "g", "x", None, "mae")] == pytest.approx((1 + 2) / 2, abs=1e-12)
    assert values[("a", "g", "y", None, "mae")] == 0.0
    assert values[("b", "overall", "", None, "mae")] == pytest.approx(1.0, abs=1e-12)
    # z_0.5 ≈ 0.674: covered are |e|/σ = 0.5 and 0.
    assert values[("a", "overall", "", None, "coverage_0.5")] == pytest.approx(2 / 3, abs=1e-12)
    assert values[("a", "g", "x", None, "coverage_0.5")] == pytest.approx(1 / 2, abs=1e-12)
    assert values[("b", "g", "x", None, "coverage_0.5")] == 0.0
    assert values[("a", "g", "x", None, "count")] == 2.0
    calibration = {
        (r.model_version, r.slice_name, r.slice_value): r
        for r in result.regression_calibration.where("abs(level - 0.5) < 1e-9").collect()
    }
    assert set(calibration) == {
        ("a", "overall", ""),
        ("a", "g", "x"),
        ("a", "g", "y"),
        ("b", "overall", ""),
        ("b", "g", "x"),
    }
    assert calibration[("a", "g", "x")].observed == pytest.approx(1 / 2, abs=1e-12)
    assert calibration[("a", "g", "x")].n == 2


def test_regression_all_zero_weights_give_null_values(spark: SparkSession) -> None:
    rows = [(1.0, 2.0, 1.0, 0.0), (0.0, 3.0, 1.0, 0.0)]
    df = spark.createDataFrame(rows, "mu double, y double, u double, w double")
    got = overall(evaluate(df, regression_config(std="u", weight="w")).metrics)
    assert got["count"] == 2.0
    for name in ["mse", "rmse", "mae", "r2", "gaussian_nll", "coverage_0.9"]:
        assert got[name] is None, name
