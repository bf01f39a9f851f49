"""Metrics of the fine cells against references: binned AUCs (scikit-learn, exact tie-aware
AUC), equal-mass ECE (the exact equal-count ECE and scikit-learn's quantile curve), KS and
Hosmer–Lemeshow (NumPy on the documented grid), Cox slope and intercept (scikit-learn's
unpenalised logistic regression on the rows) and smooth ECE (relplot)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
import relplot
from pyspark.sql import SparkSession
from sklearn.calibration import calibration_curve
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from spark_calib import evaluate
from spark_calib.rows.cells import MAX_CELLS_PER_KEY
from tests.support import calibration_reference as ref
from tests.support.evaluations import Evaluations

CELL_METRICS = (
    "roc_auc_binned",
    "ks_calibration",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "calibration_slope",
    "calibration_intercept",
    "smooth_ece",
)


def _log(seed: int, n: int, *, weighted: bool) -> pd.DataFrame:
    """Scores from a mix of a low-base-rate and a mid-range model; the truth is
    logit P(y=1) = −0.3 + 0.8·logit(s); two countries."""
    rng = np.random.default_rng(seed)
    s = np.where(rng.uniform(size=n) < 0.7, rng.beta(0.6, 25, size=n), rng.beta(2, 3, size=n))
    s = np.clip(s, 1e-9, 1 - 1e-9)
    z = np.log(s) - np.log1p(-s)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(0.3 - 0.8 * z))).astype(np.int32)
    w = rng.uniform(0.2, 3.0, size=n) if weighted else np.ones(n)
    return pd.DataFrame({"s": s, "y": y, "w": w, "country": rng.choice(["BR", "US"], size=n)})


def _evaluate(spark: SparkSession, pdf: pd.DataFrame, **extra: Any) -> dict[tuple[str, str], Any]:
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "weight": "w"},
        "slices": [[], ["country"]],
        "metrics": list(CELL_METRICS),
        **extra,
    }
    rows = evaluate(spark.createDataFrame(pdf), config).metrics.collect()
    return {(r.slice_value, r.metric): (r.value, r.error_bound) for r in rows}


@pytest.fixture(scope="module")
def weighted(evaluations: Evaluations) -> tuple[pd.DataFrame, dict[tuple[str, str], Any]]:
    pdf = _log(5, 40_000, weighted=True)
    return pdf, evaluations.get(("cells", "weighted"), lambda spark: _evaluate(spark, pdf))


@pytest.fixture(scope="module")
def unweighted(evaluations: Evaluations) -> tuple[pd.DataFrame, dict[tuple[str, str], Any]]:
    pdf = _log(6, 20_000, weighted=False)
    return pdf, evaluations.get(("cells", "unweighted"), lambda spark: _evaluate(spark, pdf))


def _groups(pdf: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    return [("", pdf), *[(value, g) for value, g in pdf.groupby("country")]]


def _arrays(group: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return group["s"].to_numpy(float), group["y"].to_numpy(float), group["w"].to_numpy(float)


def test_binned_roc_auc_is_within_1e4_of_the_exact_auc_and_its_bound(weighted: Any) -> None:
    pdf, values = weighted
    for slice_value, group in _groups(pdf):
        s, y, w = _arrays(group)
        value, bound = values[(slice_value, "roc_auc_binned")]
        exact = roc_auc_score(y, s, sample_weight=w)
        assert abs(value - exact) <= 1e-4
        assert abs(value - exact) <= bound


def test_ks_matches_the_cell_reference_and_the_rows_within_its_bound(weighted: Any) -> None:
    pdf, values = weighted
    for slice_value, group in _groups(pdf):
        at_cells, bound, every_row = ref.ks_at_cells(*_arrays(group))
        value, reported_bound = values[(slice_value, "ks_calibration")]
        assert value == pytest.approx(at_cells, rel=1e-9)
        assert reported_bound == pytest.approx(bound, rel=1e-9)
        assert abs(value - every_row) <= bound


def test_hosmer_lemeshow_matches_the_cell_reference(weighted: Any) -> None:
    pdf, values = weighted
    for slice_value, group in _groups(pdf):
        statistic, p_value = ref.hosmer_lemeshow_cells(*_arrays(group))
        assert values[(slice_value, "hosmer_lemeshow")][0] == pytest.approx(statistic, rel=1e-9)
        assert values[(slice_value, "hosmer_lemeshow_p")][0] == pytest.approx(
            p_value, rel=1e-9, abs=1e-300
        )


def test_cox_slope_and_intercept_are_within_1e3_of_the_fit_on_the_rows(weighted: Any) -> None:
    pdf, values = weighted
    for slice_value, group in _groups(pdf):
        s, y, w = _arrays(group)
        z = (np.log(s) - np.log1p(-s)).reshape(-1, 1)
        fit = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(z, y, sample_weight=w)
        assert values[(slice_value, "calibration_slope")][0] == pytest.approx(
            fit.coef_[0][0], abs=1e-3
        )
        assert values[(slice_value, "calibration_intercept")][0] == pytest.approx(
            fit.intercept_[0], abs=1e-3
        )


def test_smooth_ece_is_within_1e4_of_relplot(unweighted: Any) -> None:
    pdf, values = unweighted
    for slice_value, group in _groups(pdf):
        s, y, _ = _arrays(group)
        assert values[(slice_value, "smooth_ece")][0] == pytest.approx(
            relplot.smECE(s, y), abs=1e-4
        )


def test_equal_mass_ece_is_within_5e4_of_the_exact_equal_mass_ece(spark: SparkSession) -> None:
    rng = np.random.default_rng(9)
    n = 100_000
    s = rng.beta(0.6, 25, size=n)
    y = (rng.uniform(size=n) < np.where((s >= 0.02) & (s <= 0.08), s / 2, s)).astype(np.int32)
    pdf = pd.DataFrame({"s": s, "y": y})
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "binning": {"strategy": "equal_mass"},
        "metrics": ["ece"],
    }
    result = evaluate(spark.createDataFrame(pdf), config)
    ece = result.metrics.collect()[0].value
    assert abs(ece - ref.exact_equal_mass_ece(s, y, 15)) <= 5e-4
    # The engine's own rule (cells merged by cumulative weight), computed in NumPy, exactly.
    bins = ref.equal_mass_bins(s, np.ones(n), 15)
    assert ece == pytest.approx(ref.ece_from_bins(s, y, np.ones(n), bins), rel=1e-9)
    # The equal-width ECE hides the over-prediction that equal-mass bins show.
    uniform = ref.ece_from_bins(s, y, np.ones(n), ref.uniform_bins(s, 15))
    assert ece > uniform
    reliability = result.reliability.where("n > 0").orderBy("bin").toPandas()
    assert len(reliability) == 15
    # A bin misses W/M by at most the weight of one cell (its edges are cell edges).
    largest_cell = np.bincount(np.unique(ref.cell_ids(s), return_inverse=True)[1]).max()
    assert (np.abs(reliability["n"] - n / 15) <= largest_cell).all()
    prob_true, prob_pred = calibration_curve(y, s, n_bins=15, strategy="quantile")
    np.testing.assert_allclose(reliability["mean_confidence"], prob_pred, rtol=0.05)
    np.testing.assert_allclose(reliability["accuracy"], prob_true, atol=0.01)


def test_equal_mass_needs_a_positive_class_binary_task() -> None:
    from spark_calib import ConfigError, load_config

    with pytest.raises(ConfigError, match=r"binning\.strategy equal_mass needs task binary"):
        load_config(
            {
                "task": "top_label",
                "columns": {"confidence": "c", "correct": "ok"},
                "binning": {"strategy": "equal_mass"},
            }
        )


def test_cells_stay_fewer_than_the_rows_and_the_grid_bound(spark: SparkSession) -> None:
    pdf = _log(8, 30_000, weighted=False)
    pdf.loc[:9, "country"] = "tiny"  # a slice of 10 rows
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "slices": [["country"]],
        "metrics": ["roc_auc_binned"],
    }
    stats = evaluate(spark.createDataFrame(pdf), config).stats
    per_key = (
        stats.where("cell is not null and class is null")
        .groupBy("slice_value")
        .agg({"cell": "count", "n": "sum"})
        .toPandas()
        .set_index("slice_value")
    )
    assert (per_key["count(cell)"] <= per_key["sum(n)"]).all()
    # The label is summed, not a key: one row per non-empty (cell, calibration bin) pair, so
    # at most the grid's cells plus the 14 a bin edge of the 15 bins can cut in two.
    for value, group in pdf.groupby("country"):
        s = group["s"].to_numpy(float)
        pairs = set(zip(ref.cell_ids(s).tolist(), ref.uniform_bins(s, 15).tolist(), strict=True))
        assert per_key.loc[value, "count(cell)"] == len(pairs), value
    assert per_key["count(cell)"].max() <= MAX_CELLS_PER_KEY + 14
    assert per_key.loc["tiny", "count(cell)"] <= 10


def _row_level_fit(s: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """(a, b) of the weighted logistic regression of y on the clipped logit of s, fitted on
    the rows: 100 plain Newton steps from (0, 1) (no stopping rule)."""
    with np.errstate(divide="ignore"):
        z = np.clip(np.log(s) - np.log1p(-s), -37.0, 37.0)
    theta = np.array([0.0, 1.0])
    design = np.stack([np.ones_like(z), z], axis=1)
    for _ in range(100):
        mu = 1.0 / (1.0 + np.exp(-(design @ theta)))
        gradient = design.T @ (w * (y - mu))
        information = (design * (w * mu * (1.0 - mu))[:, None]).T @ design
        theta = theta + np.linalg.solve(information, gradient)
    return float(theta[0]), float(theta[1])


def test_cox_fit_from_the_cells_is_the_row_level_fit_within_its_bound(weighted: Any) -> None:
    """The second-order fit from the cells' moments lands within its error_bound (and 1e-4) of
    the logistic regression fitted on the rows themselves, per slice."""
    pdf, values = weighted
    for slice_value, group in _groups(pdf):
        a, b = _row_level_fit(*_arrays(group))
        for name, exact in (("calibration_slope", b), ("calibration_intercept", a)):
            value, bound = values[(slice_value, name)][0], values[(slice_value, name)][-1]
            assert bound is not None and bound > 0.0, (slice_value, name)
            assert abs(value - exact) <= min(bound, 1e-4), (slice_value, name, value, exact)
