"""Top-label recalibration (task ``top_label``) against independent references, per model version
and slice, with weights: the confidence c is a binary predictor of ``correct``, so T is SciPy's
bounded minimiser of the log-loss of correct under σ(logit(c)/T), Platt is scikit-learn's
unpenalised logistic regression of correct on logit(c), isotonic is scikit-learn's
``IsotonicRegression`` on the confidence's cells, and the before/after metrics are a NumPy
recomputation on the evaluated rows, where a map leaves the prediction (so the accuracy) alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession
from scipy.special import softmax

from spark_calib import evaluate, recalibrate
from spark_calib.recalibration.table import RECALIBRATION_SCHEMA
from tests.support import recalibration_reference as ref
from tests.support.evaluations import Evaluations

CIFAR = Path(__file__).resolve().parents[1] / "data" / "cifar10_lt_resnet110.parquet"
MIN_FIT_ROWS = 200
CONFIG: dict[str, Any] = {
    "task": "top_label",
    "columns": {"confidence": "c", "correct": "ok", "weight": "w", "model_version": "mv"},
    "slices": [[], ["device"]],
    "metrics": ["ece", "accuracy"],
    "recalibration": {
        "methods": ["temperature", "platt", "isotonic"],
        "fit": {"column": "split", "value": "val"},
        "min_fit_rows": MIN_FIT_ROWS,
    },
}
# logit P(correct) = slope·logit(c) + 0.3: v2 over-confident (T > 1), v3 under-confident.
SLOPES = {"v2": 0.5, "v3": 1.7}


def _log(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = []
    for version, slope in SLOPES.items():
        # A 10-class model's top-label confidence: in [0.1, 1], with a saturated share at 1.
        c = 0.1 + 0.9 * rng.beta(3.0, 1.2, size=n)
        c[rng.uniform(size=n) < 0.03] = 1.0
        ok = rng.uniform(size=n) < ref.sigmoid(slope * ref.logit(c) + 0.3)
        device = rng.choice(["phone", "tablet"], size=n, p=[0.7, 0.3]).astype(object)
        device[:50] = "tiny"  # about 25 fit rows: falls back to overall
        frames.append(
            pd.DataFrame(
                {
                    "mv": version,
                    "c": c,
                    "ok": ok,
                    "w": rng.uniform(0.2, 3.0, size=n),
                    "device": device,
                    "split": rng.choice(["val", "test"], size=n),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def case(evaluations: Evaluations) -> tuple[pd.DataFrame, pd.DataFrame]:
    pdf = _log(31, 16_000)

    def compute(spark: SparkSession) -> pd.DataFrame:
        result = evaluate(spark.createDataFrame(pdf), CONFIG)
        assert result.recalibration is not None
        return result.recalibration.toPandas()

    return pdf, evaluations.get(("top-label recalibration", "weighted"), compute)


def _arrays(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return rows["c"].to_numpy(float), rows["ok"].to_numpy(float), rows["w"].to_numpy(float)


def _fitted(pdf: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame, pd.DataFrame]]:
    """The keys that fit their own map: (version, slice value, fit rows, evaluated rows)."""
    found = []
    for version, rows in pdf.groupby("mv"):
        groups = [("", rows), *((str(v), g) for v, g in rows.groupby("device") if v != "tiny")]
        for value, group in groups:
            fit, evaluated = group[group.split == "val"], group[group.split != "val"]
            found.append((str(version), value, fit, evaluated))
    return found


def _expected_scores(p: np.ndarray, ok: np.ndarray, w: np.ndarray) -> dict[str, float]:
    """ECE, NLL and Brier of p as a predictor of correct; accuracy is the rate of correct."""
    return {**ref.scores(p, ok, w), "accuracy": float(np.sum(w * ok) / np.sum(w))}


def test_temperature_is_within_1e3_of_the_exact_minimiser_on_the_rows(case: Any) -> None:
    pdf, table = case
    for version, value, fit, _ in _fitted(pdf):
        c, ok, w = _arrays(fit)
        temperature = ref.table_row(table, version, value, "temperature").parameters["temperature"]
        assert temperature == pytest.approx(ref.exact_temperature(ref.logit(c), ok, w), rel=1e-3)
    assert ref.table_row(table, "v2", "", "temperature").parameters["temperature"] > 1.5
    assert ref.table_row(table, "v3", "", "temperature").parameters["temperature"] < 0.7


def test_platt_is_within_1e4_of_unpenalised_logistic_regression(case: Any) -> None:
    pdf, table = case
    for version, value, fit, _ in _fitted(pdf):
        c, ok, w = _arrays(fit)
        a, b = ref.platt(ref.logit(c), ok, w)
        parameters = ref.table_row(table, version, value, "platt").parameters
        assert parameters["a"] == pytest.approx(a, abs=1e-4)
        assert parameters["b"] == pytest.approx(b, abs=1e-4)


def test_isotonic_equals_scikit_learn_on_the_cells(case: Any) -> None:
    pdf, table = case
    for version, value, fit, _ in _fitted(pdf):
        cells, fitted = ref.isotonic_at_cells(*_arrays(fit))
        knots = ref.table_row(table, version, value, "isotonic").knots
        knot_cells = np.array([k["cell"] for k in knots])
        knot_values = np.array([k["value"] for k in knots])
        at_cells = knot_values[np.searchsorted(knot_cells, cells, side="right") - 1]
        np.testing.assert_allclose(at_cells, fitted, rtol=0, atol=1e-9)


def test_before_metrics_score_the_confidence_against_correct(case: Any) -> None:
    pdf, table = case
    for version, value, _, evaluated in _fitted(pdf):
        expected = _expected_scores(*_arrays(evaluated))
        row = ref.table_row(table, version, value, "temperature")
        assert row.n_eval == len(evaluated)
        for name, number in expected.items():
            assert row[f"{name}_before"] == pytest.approx(number, rel=1e-9, abs=1e-12), name


def test_isotonic_after_metrics_equal_the_row_by_row_recomputation(case: Any) -> None:
    pdf, table = case
    for version, value, _, evaluated in _fitted(pdf):
        c, ok, w = _arrays(evaluated)
        row = ref.table_row(table, version, value, "isotonic")
        mapped = ref.isotonic_at_rows(row, c)
        for name, number in _expected_scores(mapped, ok, w).items():
            assert row[f"{name}_after"] == pytest.approx(number, rel=1e-9, abs=1e-12), name


@pytest.mark.parametrize("method", ["temperature", "platt"])
def test_logistic_after_metrics_are_within_their_bounds_and_keep_accuracy(
    case: Any, method: str
) -> None:
    pdf, table = case
    for version, value, _, evaluated in _fitted(pdf):
        c, ok, w = _arrays(evaluated)
        row = ref.table_row(table, version, value, method)
        if method == "temperature":
            a, b = 0.0, 1.0 / row.parameters["temperature"]
        else:
            a, b = row.parameters["a"], row.parameters["b"]
        u = a + b * ref.logit(c)
        expected = {**_expected_scores(ref.sigmoid(u), ok, w), "nll": ref.logistic_nll(u, ok, w)}
        for name, number in expected.items():
            assert abs(row[f"{name}_after"] - number) <= row.after_bounds[name] + 1e-12, name
        # The prediction is not the map's: accuracy is the same, exactly, with bound 0.
        assert row.after_bounds["accuracy"] == 0.0
        assert row.accuracy_after == row.accuracy_before
        assert row.nll_after < row.nll_before


def test_a_small_slice_falls_back_to_its_versions_overall_map(case: Any) -> None:
    pdf, table = case
    for version in SLOPES:
        tiny = pdf[(pdf.mv == version) & (pdf.device == "tiny")]
        for method in ("temperature", "platt", "isotonic"):
            row = ref.table_row(table, version, "tiny", method)
            assert row.fallback and row.n_fit == (tiny.split == "val").sum() < MIN_FIT_ROWS
            assert row.parameters == ref.table_row(table, version, "", method).parameters


def test_recalibrate_maps_the_confidence(spark: SparkSession, case: Any) -> None:
    pdf, table = case
    sample = pdf.groupby(["mv", "device"]).head(10).reset_index(drop=True)
    recal = spark.createDataFrame(table, RECALIBRATION_SCHEMA)
    out = recalibrate(spark.createDataFrame(sample), recal, CONFIG).toPandas()
    assert list(out.columns) == [*sample.columns, "calibrated_confidence"]
    for _, r in out.iterrows():
        params = ref.table_row(table, r.mv, r.device, "temperature")
        if params.fallback:
            params = ref.table_row(table, r.mv, "", "temperature")
        z = ref.logit(np.array([r.c]))
        expected = ref.sigmoid(z / params.parameters["temperature"])[0]
        assert r.calibrated_confidence == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.slow
def test_cifar10_lt_top_label_temperature_from_the_logits(evaluations: Evaluations) -> None:
    """Real logits (ResNet-110 on CIFAR-10-LT): the top-label confidence max softmax(z) and
    correct = [argmax z = label], fitted on the validation split; T against SciPy on the same
    confidences."""
    data = pd.read_parquet(CIFAR)
    logits = np.stack(data["logits"].to_numpy()).astype(np.float64)
    probs = softmax(logits, axis=1)
    frame = pd.DataFrame(
        {
            "c": probs.max(axis=1),
            "ok": probs.argmax(axis=1) == data["label"].to_numpy(),
            "split": data["split"],
        }
    )
    config = {
        "task": "top_label",
        "columns": {"confidence": "c", "correct": "ok"},
        "metrics": ["ece"],
        "recalibration": {"methods": ["temperature"], "fit": {"column": "split", "value": "val"}},
    }

    def compute(spark: SparkSession) -> pd.DataFrame:
        result = evaluate(spark.createDataFrame(frame), config)
        assert result.recalibration is not None
        return result.recalibration.toPandas()

    row = evaluations.get(("top-label recalibration", "cifar10-lt"), compute).iloc[0]
    val, test = frame[frame.split == "val"], frame[frame.split == "test"]
    ones = np.ones(len(val))
    exact = ref.exact_temperature(ref.logit(val.c.to_numpy()), val.ok.to_numpy(float), ones)
    temperature = row.parameters["temperature"]
    assert temperature == pytest.approx(exact, rel=1e-3)
    c, ok = test.c.to_numpy(), test.ok.to_numpy(float)
    before = _expected_scores(c, ok, np.ones(len(test)))
    assert row.ece_before == pytest.approx(before["ece"], rel=1e-9)
    # The long-tailed model is over-confident: T > 1 and its test ECE falls.
    assert temperature > 1.0 and row.ece_after < row.ece_before / 2
