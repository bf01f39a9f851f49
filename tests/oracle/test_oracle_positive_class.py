"""Binary calibration on the positive class and its moment metrics, per slice and with weights,
against NumPy/SciPy references (tests/support/calibration_reference.py) and scikit-learn."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession
from scipy.special import logsumexp
from sklearn.calibration import calibration_curve

from spark_calib import evaluate
from tests.support import calibration_reference as ref
from tests.support.evaluations import Evaluations

MOMENT_METRICS = (
    "ece",
    "mce",
    "brier",
    "nll",
    "accuracy",
    "mean_prediction",
    "mean_label",
    "calibration_ratio",
    "calibration_in_the_large",
    "normalized_entropy",
    "spiegelhalter_z",
    "spiegelhalter_p",
    "brier_reliability",
    "brier_resolution",
    "brier_uncertainty",
    "brier_within_bin",
)


def _low_base_rate_log(seed: int, n: int) -> pd.DataFrame:
    """Scores ~ Beta(0.6, 25) (mean 0.023); the model over-predicts by 2× on [0.02, 0.08]
    (the warehouse case the issue describes); weights in [0.2, 3]; two slice columns; edge
    scores 0 and 1 included."""
    rng = np.random.default_rng(seed)
    s = rng.beta(0.6, 25, size=n)
    s[:4] = [0.0, 1.0, 0.5, 1e-12]
    truth = np.where((s >= 0.02) & (s <= 0.08), s / 2, s)
    y = (rng.uniform(size=n) < truth).astype(np.int32)
    y[:4] = [0, 1, 1, 0]
    return pd.DataFrame(
        {
            "s": s,
            "y": y,
            "w": rng.uniform(0.2, 3.0, size=n),
            "country": rng.choice(["BR", "MX", "US"], size=n),
        }
    )


CONFIG: dict[str, Any] = {
    "task": "binary",
    "columns": {"score": "s", "label": "y", "weight": "w"},
    "slices": [[], ["country"]],
    "metrics": list(MOMENT_METRICS),
}


def _values(metrics: pd.DataFrame) -> dict[tuple[str, str], float | None]:
    return {
        (row.slice_value, row.metric): (None if pd.isna(row.value) else row.value)
        for row in metrics.itertuples()
    }


@pytest.fixture(scope="module")
def low_base_rate(evaluations: Evaluations) -> tuple[pd.DataFrame, dict[tuple[str, str], Any]]:
    pdf = _low_base_rate_log(7, 20_000)

    def compute(spark: SparkSession) -> dict[tuple[str, str], Any]:
        result = evaluate(spark.createDataFrame(pdf), CONFIG)
        return _values(result.metrics.toPandas())

    return pdf, evaluations.get(("positive_class", "low_base_rate"), compute)


def _groups(pdf: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    return [("", pdf), *[(country, g) for country, g in pdf.groupby("country")]]


def _arrays(group: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        group["s"].to_numpy(float),
        group["y"].to_numpy(float),
        group["w"].to_numpy(float),
    )


def test_moment_metrics_match_the_numpy_reference_per_slice(low_base_rate: Any) -> None:
    pdf, values = low_base_rate
    for slice_value, group in _groups(pdf):
        s, y, w = _arrays(group)
        z, p = ref.spiegelhalter(s, y, w)
        bins = ref.uniform_bins(s, 15)
        expected = {
            "ece": ref.ece_from_bins(s, y, w, bins),
            "mean_prediction": ref.mean_prediction(s, w),
            "mean_label": ref.mean_label(y, w),
            "calibration_ratio": ref.calibration_ratio(s, y, w),
            "calibration_in_the_large": ref.calibration_in_the_large(s, y, w),
            "normalized_entropy": ref.normalized_entropy(s, y, w),
            "spiegelhalter_z": z,
            "brier": float(np.sum(w * (s - y) ** 2) / np.sum(w)),
            **ref.brier_decomposition(s, y, w, bins),
        }
        for metric, value in expected.items():
            assert values[(slice_value, metric)] == pytest.approx(value, rel=1e-9, abs=1e-12), (
                slice_value,
                metric,
            )
        assert values[(slice_value, "spiegelhalter_p")] == pytest.approx(p, rel=1e-10)


def test_the_brier_decomposition_is_exact(low_base_rate: Any) -> None:
    pdf, values = low_base_rate
    for slice_value, _ in _groups(pdf):
        parts = (
            values[(slice_value, "brier_reliability")]
            - values[(slice_value, "brier_resolution")]
            + values[(slice_value, "brier_uncertainty")]
            + values[(slice_value, "brier_within_bin")]
        )
        assert abs(parts - values[(slice_value, "brier")]) <= 1e-12
        # Murphy's reliability is a weighted sum of squares: a calibration error below 0 would
        # break every dashboard rule.
        assert values[(slice_value, "brier_reliability")] >= 0.0


def test_the_low_base_rate_over_prediction_shows_in_the_calibration_ratio(
    low_base_rate: Any,
) -> None:
    pdf, values = low_base_rate
    s, y, w = _arrays(pdf)
    ratio = values[("", "calibration_ratio")]
    assert ratio == pytest.approx(np.sum(w * s) / np.sum(w * y), rel=1e-12)
    # The model over-predicts by about 40%, while the equal-width ECE stays below 0.01.
    assert ratio > 1.25
    assert values[("", "ece")] < 0.01
    assert values[("", "spiegelhalter_p")] < 1e-3


def test_reliability_bins_match_scikit_learns_calibration_curve(spark: SparkSession) -> None:
    """Unweighted, right-closed bins: the reliability table is scikit-learn's curve."""
    pdf = _low_base_rate_log(11, 5_000).iloc[4:]  # no edge scores: sklearn bins 0 and 1 alike
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "binning": {"n_bins": 10, "edges": "right_closed"},
        "metrics": ["ece"],
    }
    reliability = (
        evaluate(spark.createDataFrame(pdf), config)
        .reliability.where("n > 0")
        .orderBy("bin")
        .toPandas()
    )
    prob_true, prob_pred = calibration_curve(pdf["y"], pdf["s"], n_bins=10, strategy="uniform")
    np.testing.assert_allclose(reliability["accuracy"], prob_true, rtol=1e-12)
    np.testing.assert_allclose(reliability["mean_confidence"], prob_pred, rtol=1e-12)


def test_binary_top_label_view_keeps_the_confidence_of_the_predicted_class(
    spark: SparkSession,
) -> None:
    rows = pd.DataFrame({"s": [0.1, 0.2, 0.9, 0.6], "y": [0, 1, 1, 0]})
    base = {"task": "binary", "columns": {"score": "s", "label": "y"}, "metrics": ["ece"]}
    positive = evaluate(spark.createDataFrame(rows), base).metrics.collect()[0].value
    top = (
        evaluate(spark.createDataFrame(rows), {**base, "binary_view": "top_label"})
        .metrics.collect()[0]
        .value
    )
    # Positive class, 15 bins: bins of 0.1, 0.2, 0.6, 0.9 each alone: |0−.1|+|1−.2|+|0−.6|+|1−.9|.
    assert positive == pytest.approx((0.1 + 0.8 + 0.6 + 0.1) / 4, abs=1e-15)
    # Top label: confidences .9 (right), .8 (wrong), .9 (right), .6 (wrong); .9 twice in one bin.
    assert top == pytest.approx((abs(2 - 1.8) + 0.8 + 0.6) / 4, abs=1e-15)


def test_nll_from_logits_is_the_exact_log_softmax(spark: SparkSession) -> None:
    rng = np.random.default_rng(3)
    z = rng.normal(scale=10.0, size=(300, 5))
    y = rng.integers(0, 5, size=300)
    z[0] = [80.0, -80.0, 0.0, 0.0, 0.0]  # p_y = e^−160: far below the ε = 1e-15 of probabilities
    y[0] = 1
    pdf = pd.DataFrame({"z": z.tolist(), "y": y.astype(np.int32)})
    config = {"task": "multiclass", "columns": {"logits": "z", "label": "y"}, "metrics": ["nll"]}
    nll = evaluate(spark.createDataFrame(pdf), config).metrics.collect()[0].value
    expected = float(np.mean(logsumexp(z, axis=1) - z[np.arange(300), y]))
    assert nll == pytest.approx(expected, rel=1e-12)
    neg_log_p = logsumexp(z, axis=1) - z[np.arange(300), y]
    clipped = float(np.mean(np.minimum(neg_log_p, -np.log(1e-15))))
    assert abs(nll - clipped) > 0.1  # the old ε-clipped value was measurably different
