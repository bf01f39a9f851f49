"""The regression kernel in plain NumPy (no Spark): a hand case, scikit-learn's weighted
mse/mae/r2 and SciPy's normal NLL and interval coverage, null rules, metric names, and the
jackknife against a direct leave-one-bucket-out recomputation, on statistics built from rows
by the test itself."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import norm
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score

from spark_calib.kernels.estimates import Estimates, table_rows
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.regression import (
    coverage_metric_name,
    interval_levels,
    regression_estimates,
)
from spark_calib.stats import schema as stats
from tests.support.key_stats_regression import regression_key_table

KEY = ("v", "overall", "")
ALL = ("mse", "rmse", "mae", "r2", "gaussian_nll", "coverage", "miscalibration_area")
LEVELS = (0.5, 0.8, 0.9, 0.95)
CALIBRATION_LEVELS = [k / 20 for k in range(1, 20)]


def _plan(
    names: tuple[str, ...] = ALL,
    method: str = "analytic",
    buckets: int = 0,
    levels: Sequence[float] = LEVELS,
) -> FinishPlan:
    return FinishPlan(
        metrics=(("calibration", ("count",)), ("regression", names)),
        n_bins=15,
        equal_mass=False,
        method=method,
        critical_value=1.959963984540054,
        buckets=buckets,
        settings=(("coverage_levels", tuple(levels)),),
    )


def _estimates(table: pa.Table, plan: FinishPlan | None = None) -> Estimates:
    estimates = regression_estimates(table, plan or _plan())
    assert estimates is not None
    return estimates


def _values(table: pa.Table, plan: FinishPlan | None = None, replicate: int = 0) -> dict:
    estimates = _estimates(table, plan)
    return dict(zip(estimates.metrics, estimates.values[replicate].tolist(), strict=True))


def _rows(seed: int, n: int = 3000) -> tuple[np.ndarray, ...]:
    """μ ~ N(5, 2²), σ ~ U(0.5, 2), y = μ + 1.2σ·t₅ (over-confident σ, heavy tails)."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(5.0, 2.0, n)
    sd = rng.uniform(0.5, 2.0, n)
    y = mu + 1.2 * sd * rng.standard_t(5, n)
    w = rng.uniform(0.2, 3.0, n)
    return y, mu, sd, w


def _coverage(y: np.ndarray, mu: np.ndarray, sd: np.ndarray, w: np.ndarray, level: float) -> float:
    z = norm.ppf((1.0 + level) / 2.0)
    return float(np.sum(w * (np.abs(y - mu) <= z * sd)) / np.sum(w))


def reference(
    y: np.ndarray, mu: np.ndarray, sd: np.ndarray, w: np.ndarray, levels: Sequence[float]
) -> dict[str, float]:
    """scikit-learn's weighted mse/mae/r2, SciPy's −weighted mean log density and the
    weighted share of rows inside the central normal intervals."""
    mse = mean_squared_error(y, mu, sample_weight=w)
    out = {
        "mse": mse,
        "rmse": math.sqrt(mse),
        "mae": mean_absolute_error(y, mu, sample_weight=w),
        "r2": r2_score(y, mu, sample_weight=w),
        "gaussian_nll": -np.average(norm.logpdf(y, loc=mu, scale=sd), weights=w),
        "miscalibration_area": np.mean(
            [abs(_coverage(y, mu, sd, w, lv) - lv) for lv in CALIBRATION_LEVELS]
        ),
    }
    for level in levels:
        out[f"coverage_{level}"] = _coverage(y, mu, sd, w, level)
    return {name: float(value) for name, value in out.items()}


def test_no_regression_metric_gives_none() -> None:
    y, mu, sd, w = _rows(1, 20)
    plan = FinishPlan((("calibration", ("count",)),), 15, False, "analytic", 1.96, 0)
    assert regression_estimates(regression_key_table(y, mu, w, sd), plan) is None


def test_hand_case() -> None:
    # e = (0, 1, 3), w = (1, 1, 2), σ = (1, 1, 2): W = 4, SSE = 0 + 1 + 2·9 = 19,
    # Σw|e| = 0 + 1 + 6 = 7, Σwy = 1 + 2 + 8 = 11, Σwy² = 1 + 4 + 32 = 37.
    y, mu = np.array([1.0, 2.0, 4.0]), np.ones(3)
    w, sd = np.array([1.0, 1.0, 2.0]), np.array([1.0, 1.0, 2.0])
    values = _values(regression_key_table(y, mu, w, sd))
    assert values["mse"] == pytest.approx(19 / 4, rel=1e-15)
    assert values["rmse"] == pytest.approx(math.sqrt(19 / 4), rel=1e-15)
    assert values["mae"] == pytest.approx(7 / 4, rel=1e-15)
    # SST = 37 − 11²/4 = 27/4: r2 = 1 − 19/(27/4) = −49/27.
    assert values["r2"] == pytest.approx(-49 / 27, rel=1e-14)
    half_log = 0.5 * math.log(2 * math.pi)
    nll = half_log + (half_log + 0.5) + 2 * (0.5 * math.log(8 * math.pi) + 9 / 8)
    assert values["gaussian_nll"] == pytest.approx(nll / 4, rel=1e-14)
    # |e| ≤ zσ: row 1 always (e = 0); row 2 when z ≥ 1 (l ≥ 0.6827); row 3 when 2z ≥ 3
    # (l ≥ 0.8664).
    assert values["coverage_0.5"] == 0.25
    assert values["coverage_0.8"] == 0.5
    assert values["coverage_0.9"] == 1.0
    assert values["coverage_0.95"] == 1.0
    # Levels 0.05..0.65 cover 1/4, 0.70..0.85 cover 1/2, 0.90 and 0.95 cover all:
    # Σ|coverage − l| = (0.2 + 0.15 + 0.1 + 0.05 + 0 + 0.05·(1 + … + 8)) + (0.2 + 0.25 + 0.3
    # + 0.35) + (0.1 + 0.05) = 2.3 + 1.1 + 0.15.
    assert values["miscalibration_area"] == pytest.approx(3.55 / 19, rel=1e-14)


@pytest.mark.parametrize("seed", [2, 3])
def test_against_scikit_learn_and_scipy_with_weights(seed: int) -> None:
    y, mu, sd, w = _rows(seed)
    levels = (0.5, 0.8, 0.9, 0.95, 0.99)
    estimates = _estimates(regression_key_table(y, mu, w, sd, levels=levels), _plan(levels=levels))
    expected = reference(y, mu, sd, w, levels)
    assert sorted(estimates.metrics) == sorted(expected)
    for name, value in zip(estimates.metrics, estimates.values[0], strict=True):
        assert value == pytest.approx(expected[name], rel=1e-10), name
    assert (estimates.n == y.size).all()
    np.testing.assert_allclose(estimates.weight_sum, w.sum(), rtol=1e-13)


def test_metric_names_and_order_follow_the_plan_and_the_coverage_levels() -> None:
    y, mu, sd, w = _rows(4, 200)
    levels = (0.99, 0.5, 0.25)
    plan = _plan(("r2", "coverage", "mse"), levels=levels)
    estimates = _estimates(regression_key_table(y, mu, w, sd, levels=levels), plan)
    assert estimates.metrics == ["r2", "coverage_0.99", "coverage_0.5", "coverage_0.25", "mse"]
    assert estimates.classes == [None] * 5
    assert coverage_metric_name(0.9) == "coverage_0.9"
    # 0.25 is not a calibration level: it is a level of its own between 0.2 and 0.3.
    assert interval_levels(levels)[:7] == [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35]
    assert len(interval_levels(levels)) == 20
    expected = reference(y, mu, sd, w, levels)
    assert estimates.values[0, 3] == pytest.approx(expected["coverage_0.25"], rel=1e-12)


def test_coverage_without_requested_levels_gives_no_rows() -> None:
    y, mu, sd, w = _rows(5, 50)
    plan = _plan(("coverage",), levels=())
    assert regression_estimates(regression_key_table(y, mu, w, sd, levels=()), plan) is None


def test_constant_target_has_null_r2() -> None:
    # Dyadic weights and a constant target: SST = Σwy² − (Σwy)²/W is exactly 0.
    rng = np.random.default_rng(6)
    mu = rng.normal(1.5, 1.0, 12)
    w = rng.choice([0.5, 1.0, 2.0], 12)
    values = _values(regression_key_table(np.full(12, 1.5), mu, w, np.ones(12)))
    assert math.isnan(values["r2"])
    assert values["mse"] == pytest.approx(np.average((1.5 - mu) ** 2, weights=w), rel=1e-13)


def test_near_constant_target_within_the_tolerance_has_null_r2() -> None:
    # SST ≈ 1e-14·Σwy², below 1e-12·Σwy²: rounding noise of a constant target.
    y = np.array([1.0, 1.0 + 2e-7])
    values = _values(regression_key_table(y, np.zeros(2), np.ones(2), np.ones(2)))
    assert math.isnan(values["r2"])
    y = np.array([1.0, 1.0 + 2e-5])
    values = _values(regression_key_table(y, np.zeros(2), np.ones(2), np.ones(2)))
    # Above it r2 is defined (to the cancellation of the one-pass SST, about 1e-6 here).
    assert values["r2"] == pytest.approx(r2_score(y, np.zeros(2)), rel=1e-4)


def test_zero_weight_gives_null_values_with_n() -> None:
    y, mu, sd, _ = _rows(7, 5)
    estimates = _estimates(regression_key_table(y, mu, np.zeros(5), sd))
    assert np.isnan(estimates.values).all()
    assert (estimates.n == 5).all() and (estimates.weight_sum == 0.0).all()


def test_without_sigma_nll_is_null_and_rows_cover_nothing() -> None:
    # Spark's rule, mirrored: a row without a coverage bucket counts in W but in no interval,
    # so coverage is 0 and the area the mean level (the config requires σ for these metrics).
    y, mu, _, w = _rows(8, 100)
    table = regression_key_table(y, mu, w)
    assert table.column(stats.BIN).null_count == table.num_rows
    values = _values(table)
    assert math.isnan(values["gaussian_nll"])
    assert values["coverage_0.9"] == 0.0
    assert values["miscalibration_area"] == pytest.approx(0.5, rel=1e-14)
    assert values["mse"] == pytest.approx(mean_squared_error(y, mu, sample_weight=w), rel=1e-12)


def test_class_rows_are_ignored() -> None:
    y, mu, sd, w = _rows(9, 300)
    table = regression_key_table(y, mu, w, sd)
    other = regression_key_table(y[:40], mu[:40] + 1.0, w[:40], sd[:40])
    other = other.set_column(
        other.schema.get_field_index(stats.CLASS),
        stats.CLASS,
        pa.array(["1"] * other.num_rows, pa.string()),
    )
    base = _estimates(table)
    mixed = _estimates(pa.concat_tables([table, other]))
    np.testing.assert_allclose(mixed.values, base.values, rtol=1e-13)
    assert (mixed.n == 300).all()
    only_classes = regression_estimates(other, _plan())
    assert only_classes is None


def test_analytic_has_no_se_and_no_error_bound() -> None:
    y, mu, sd, w = _rows(10, 300)
    estimates = _estimates(regression_key_table(y, mu, w, sd))
    assert np.isnan(estimates.se).all() and np.isnan(estimates.error_bound).all()
    assert estimates.noise.all()
    for row in table_rows(KEY, estimates, _plan(), 1.0):
        assert math.isnan(row[8]) and math.isnan(row[9]), row


def test_jackknife_replicates_are_the_leave_one_bucket_out_metrics() -> None:
    y, mu, sd, w = _rows(11, 2000)
    buckets = np.arange(y.size) % 5
    plan = _plan(method="jackknife", buckets=5)
    estimates = _estimates(regression_key_table(y, mu, w, sd, buckets=buckets), plan)
    assert estimates.values.shape == (6, len(estimates.metrics))
    point = reference(y, mu, sd, w, LEVELS)
    replicates = [
        reference(y[buckets != g], mu[buckets != g], sd[buckets != g], w[buckets != g], LEVELS)
        for g in range(5)
    ]
    for column, name in enumerate(estimates.metrics):
        assert estimates.values[0, column] == pytest.approx(point[name], rel=1e-10), name
        for g in range(5):
            got = estimates.values[1 + g, column]
            assert got == pytest.approx(replicates[g][name], rel=1e-10), (name, g)
    rows = {row[4]: row for row in table_rows(KEY, estimates, plan, 1.0)}
    for name in ("mse", "r2", "coverage_0.9", "miscalibration_area"):
        spread = np.array([replicate[name] for replicate in replicates])
        expected = math.sqrt(4 / 5 * np.sum((spread - spread.mean()) ** 2))
        assert rows[name][9] == pytest.approx(expected, rel=1e-7), name
        assert rows[name][5] == pytest.approx(point[name], rel=1e-10)


def test_jackknife_se_is_null_when_a_replicate_has_no_rows() -> None:
    # Every row in bucket 1: replicate 1 has no statistics, so no value and no se.
    y, mu, sd, w = _rows(12, 100)
    plan = _plan(("mse", "coverage"), method="jackknife", buckets=3)
    table = regression_key_table(y, mu, w, sd, buckets=np.ones(100, dtype=int))
    estimates = _estimates(table, plan)
    assert np.isnan(estimates.values[2]).all()
    assert not np.isnan(estimates.values[[0, 1, 3]]).any()
    for row in table_rows(KEY, estimates, plan, 1.0):
        assert not math.isnan(row[5]) and math.isnan(row[9]), row


def test_overflowed_weight_sum_gives_null_values() -> None:
    y = np.array([1.0, 2.0])
    with np.errstate(over="ignore"):
        table = regression_key_table(y, np.zeros(2), np.array([1e308, 1e308]), np.ones(2))
    estimates = _estimates(table, _plan(("mse", "mae")))
    rows = table_rows(KEY, estimates, _plan(("mse", "mae")), 1.0)
    assert all(math.isinf(row[7]) and math.isnan(row[5]) for row in rows)
