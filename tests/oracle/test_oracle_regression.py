"""Oracle tests of task regression (docs/metrics.md) against scikit-learn, SciPy and NumPy.

Weighted logs with prediction μ, target y and a predictive σ (or σ²), per model version and
per slice [[], [g], [g, h]]. Expected values come from ``tests/support/reference_sklearn.py``:
mse/rmse/mae/r2 from scikit-learn (r2 null when SST = 0: slice g = k has a constant target),
gaussian_nll = −weighted mean of scipy.stats.norm.logpdf, coverage_<l> with
z = norm.ppf((1 + l) / 2), the 19-level regression_calibration table and miscalibration_area.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession

from spark_calib import evaluate
from tests.support import reference as ref
from tests.support import reference_sklearn as sk
from tests.support.evaluations import Evaluations

ATOL = 1e-9
N_ROWS = 2000
SLICES = [[], ["g"], ["g", "h"]]
DDL = "mu double, y double, sd double, var double, mv string, g string, h string, w double"
CALIBRATION_KEY = ("model_version", "slice_name", "slice_value", "level")
DEFAULT_LEVELS = [0.5, 0.8, 0.9, 0.95]


def regression_log(seed: int, n: int = N_ROWS) -> pd.DataFrame:
    """μ ~ N(5, 2²), σ ~ U(0.5, 2), y = μ + 1.2 σ t₅-noise (over-confident σ, heavy tails).
    Slice g = k (v1 only) has the constant target 1.5 and dyadic weights, so SST is exactly 0
    there (r2 null). Slice g = o (v2) has only rows of weight 0 (every value null)."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(5.0, 2.0, size=n)
    sd = rng.uniform(0.5, 2.0, size=n)
    y = mu + 1.2 * sd * rng.standard_t(5, size=n)
    w = rng.uniform(0.2, 3.0, size=n)
    w[20:40] = 0.0
    pdf = pd.DataFrame(
        {
            "mu": mu,
            "y": y,
            "sd": sd,
            "var": sd**2,
            "mv": rng.choice(["v1", "v2"], size=n),
            "g": rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2]),
            "h": rng.choice(["x", "y"], size=n),
            "w": w,
        }
    )
    m = 12
    sd_k = rng.uniform(0.5, 2.0, size=m)
    const = pd.DataFrame(
        {
            "mu": rng.normal(1.5, 1.0, size=m),
            "y": 1.5,
            "sd": sd_k,
            "var": sd_k**2,
            "mv": "v1",
            "g": "k",
            "h": rng.choice(["x", "y"], size=m),
            "w": rng.choice([0.5, 1.0, 2.0], size=m),
        }
    )
    weightless = pdf.iloc[:5].assign(g="o", mv="v2", w=0.0)
    return pd.concat([pdf, const, weightless], ignore_index=True)


@dataclass(frozen=True)
class Case:
    make: Callable[[], pd.DataFrame]
    config: dict[str, Any]
    sigma: str | None  # "sd", "var" or None
    levels: list[float]


CASES: dict[str, Case] = {
    # The regression defaults with σ: count, mse, rmse, mae, r2, gaussian_nll, coverage
    # (default levels) and miscalibration_area.
    "std_defaults": Case(
        lambda: regression_log(61),
        {
            "task": "regression",
            "columns": {
                "prediction": "mu",
                "target": "y",
                "std": "sd",
                "weight": "w",
                "model_version": "mv",
            },
            "slices": SLICES,
        },
        "sd",
        DEFAULT_LEVELS,
    ),
    # Variance instead of σ, one coverage level, no model_version column, explicit metrics,
    # GROUPING SETS.
    "variance_099": Case(
        lambda: regression_log(62),
        {
            "task": "regression",
            "columns": {"prediction": "mu", "target": "y", "variance": "var", "weight": "w"},
            "slices": SLICES,
            "coverage_levels": [0.99],
            "slice_strategy": "grouping_sets",
            "metrics": [
                "count",
                "mse",
                "rmse",
                "mae",
                "r2",
                "gaussian_nll",
                "coverage",
                "miscalibration_area",
            ],
        },
        "var",
        [0.99],
    ),
    # No σ, unweighted: the defaults are count, mse, rmse, mae, r2 only.
    "no_std": Case(
        lambda: regression_log(63),
        {
            "task": "regression",
            "columns": {"prediction": "mu", "target": "y", "model_version": "mv"},
            "slices": SLICES,
        },
        None,
        [],
    ),
}


@dataclass(frozen=True)
class Evaluated:
    pdf: pd.DataFrame
    case: Case
    metrics: ref.Table
    calibration: list[dict[str, Any]] | None
    result: Any


def run_case(spark: SparkSession, case: Case) -> Evaluated:
    """Evaluate a case and collect its metrics and regression calibration tables."""
    pdf = case.make()
    result = evaluate(spark.createDataFrame(pdf, DDL), case.config)
    metrics = ref.table_from_rows((r.asDict() for r in result.metrics.collect()), ref.METRIC_KEY)
    cal = getattr(result, "regression_calibration", None)
    collected = Evaluated(
        pdf,
        case,
        metrics,
        None if cal is None else [r.asDict() for r in cal.collect()],
        result,
    )
    result.unpersist()
    return collected


def evaluated(evaluations: Evaluations, name: str) -> Evaluated:
    """CASES[name] evaluated once per session."""
    return evaluations.get(("oracle_regression", name), lambda spark: run_case(spark, CASES[name]))


def groups(ev: Evaluated):
    """(key, y, μ, σ or None, w) per model version × slice group."""
    cols = ev.case.config["columns"]
    for key, gdf in sk.iter_groups(ev.pdf, SLICES, cols.get("model_version")):
        w = sk.weights_of(gdf, cols.get("weight"))
        sigma = None
        if ev.case.sigma == "sd":
            sigma = gdf["sd"].to_numpy(np.float64)
        elif ev.case.sigma == "var":
            sigma = np.sqrt(gdf["var"].to_numpy(np.float64))
        yield key, gdf["y"].to_numpy(np.float64), gdf["mu"].to_numpy(np.float64), sigma, w


def assert_no_diff(problems: list[str]) -> None:
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", list(CASES))
def test_regression_metrics_match_sklearn_scipy(evaluations: Evaluations, name: str) -> None:
    """Exactly the expected metric rows (class null) per model version × slice, with n and
    weight_sum: count, mse, rmse, mae, r2 (scikit-learn, weighted; null when SST = 0), and with
    σ gaussian_nll (−weighted mean of norm.logpdf), coverage_<l> (metric name with Python's
    str(l)) and miscalibration_area."""
    ev = evaluated(evaluations, name)
    want: ref.Table = {}
    for key, y, mu, sigma, w in groups(ev):
        common = {"n": len(y), "weight_sum": float(w.sum())}
        for metric, v in sk.regression_metrics(y, mu, w, sigma, ev.case.levels).items():
            want[(*key, None, metric)] = {"value": v, **common}
    assert_no_diff(ref.diff_tables(ev.metrics, want, atol=ATOL))


def test_constant_target_slice_has_null_r2(evaluations: Evaluations) -> None:
    """The data premise of the null-r2 check: slice g = k exists and its r2 row is null."""
    ev = evaluated(evaluations, "std_defaults")
    rows = [v for k, v in ev.metrics.items() if k[1] == "g" and k[2] == "k" and k[4] == "r2"]
    assert len(rows) == 1
    assert rows[0]["value"] is None


@pytest.mark.parametrize("name", ["std_defaults", "variance_099"])
def test_regression_calibration_table(evaluations: Evaluations, name: str) -> None:
    """19 rows per key, levels 0.05..0.95: z = norm.ppf((1 + l) / 2), observed = weighted
    share of |y − μ| ≤ z σ, gap = observed − level, n, weight_sum."""
    ev = evaluated(evaluations, name)
    assert ev.calibration is not None, "regression with σ but regression_calibration is None"
    problems: list[str] = []
    got: ref.Table = {}
    for row in ev.calibration:
        k = round(row["level"] * 20)
        if abs(row["level"] - k / 20) > 1e-12 or not 1 <= k <= 19:
            problems.append(f"unexpected level {row['level']!r} in {row}")
            continue
        key = (row["model_version"], row["slice_name"], row["slice_value"], k)
        if key in got:
            problems.append(f"duplicate key {key}")
        got[key] = {c: v for c, v in row.items() if c not in CALIBRATION_KEY}
        got[key]["level"] = row["level"]
    want: ref.Table = {}
    for key, y, mu, sigma, w in groups(ev):
        assert sigma is not None
        for k, fields in sk.regression_calibration_rows(y, mu, sigma, w).items():
            want[(*key, k)] = fields
    assert_no_diff(problems + ref.diff_tables(got, want, atol=ATOL))


def test_no_std_has_no_calibration_table(evaluations: Evaluations) -> None:
    """Without std/variance there is no regression_calibration table."""
    ev = evaluated(evaluations, "no_std")
    assert hasattr(ev.result, "regression_calibration")
    assert ev.calibration is None


@pytest.mark.xfail(
    strict=True,
    reason="known precision issue: SST = Σ w y² − (Σ w y)² / W cancels catastrophically for "
    "targets far from 0 (y ≈ 1e5 ± 1: r2 off by ~4e-6 from r2_score)",
)
def test_r2_target_far_from_zero(spark: SparkSession) -> None:
    """r2 of targets 1e5 + N(0, 1) (a typical offset: prices, timestamps) equals scikit-learn's
    two-pass r2_score to 1e-9."""
    rng = np.random.default_rng(65)
    n = 2000
    y = 1e5 + rng.normal(size=n)
    pdf = pd.DataFrame(
        {"mu": y + 0.5 * rng.normal(size=n), "y": y, "w": rng.uniform(0.2, 3.0, size=n)}
    )
    config = {
        "task": "regression",
        "columns": {"prediction": "mu", "target": "y", "weight": "w"},
        "metrics": ["r2"],
    }
    result = evaluate(spark.createDataFrame(pdf, "mu double, y double, w double"), config)
    (row,) = result.metrics.collect()
    want = sk.regression_metrics(pdf["y"].to_numpy(), pdf["mu"].to_numpy(), pdf["w"].to_numpy())
    assert row.value is not None
    assert abs(row.value - want["r2"]) <= ATOL, (row.value, want["r2"])
