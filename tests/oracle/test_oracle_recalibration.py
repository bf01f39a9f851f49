"""Recalibration against independent references, per model version and slice, with weights:
T against SciPy's bounded search on the rows, Platt against scikit-learn's unpenalised logistic
regression, isotonic against scikit-learn's ``IsotonicRegression`` on the same cells, and the
before/after metrics against a NumPy row-by-row recomputation on the evaluated rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession

from spark_calib import evaluate, recalibrate
from spark_calib.recalibration.table import RECALIBRATION_SCHEMA
from tests.support import recalibration_reference as ref
from tests.support.calibration_reference import cell_ids
from tests.support.evaluations import Evaluations

MIN_FIT_ROWS = 200
CONFIG: dict[str, Any] = {
    "task": "binary",
    "columns": {"score": "s", "label": "y", "weight": "w", "model_version": "mv"},
    "slices": [[], ["country"]],
    "metrics": ["ece", "calibration_slope", "calibration_intercept"],
    "recalibration": {
        "methods": ["temperature", "platt", "isotonic"],
        "fit": {"column": "split", "value": "val"},
        "min_fit_rows": MIN_FIT_ROWS,
    },
}
# logit P(y = 1) = slope·logit(s): v2 over-confident (T > 1), v3 under-confident (T < 1).
SLOPES = {"v2": 0.6, "v3": 1.6}


def _log(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = []
    for version, slope in SLOPES.items():
        s = np.where(rng.uniform(size=n) < 0.6, rng.beta(0.8, 12, size=n), rng.beta(2, 2, size=n))
        s = np.clip(s, 1e-9, 1 - 1e-9)
        y = (rng.uniform(size=n) < ref.sigmoid(slope * ref.logit(s) - 0.2)).astype(np.int32)
        country = rng.choice(["BR", "US"], size=n, p=[0.4, 0.6]).astype(object)
        country[:60] = "tiny"  # about 30 fit rows: falls back to overall
        # Every label positive and every score above 0.5: the NLL falls as T → 0.
        country[60:760] = "allpos"
        s[60:760] = rng.uniform(0.55, 0.99, size=700)
        y[60:760] = 1
        frames.append(
            pd.DataFrame(
                {
                    "mv": version,
                    "s": s,
                    "y": y,
                    "w": rng.uniform(0.2, 3.0, size=n),
                    "country": country,
                    "split": rng.choice(["val", "test"], size=n),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def case(evaluations: Evaluations) -> tuple[pd.DataFrame, pd.DataFrame, dict[Any, float]]:
    pdf = _log(21, 20_000)

    def compute(spark: SparkSession) -> tuple[pd.DataFrame, dict[Any, float]]:
        result = evaluate(spark.createDataFrame(pdf), CONFIG)
        assert result.recalibration is not None
        table = result.recalibration.toPandas()
        metrics = {
            (r.model_version, r.slice_value, r.metric): r.value for r in result.metrics.collect()
        }
        return table, metrics

    table, metrics = evaluations.get(("recalibration", "weighted"), compute)
    return pdf, table, metrics


def _groups(pdf: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    found = []
    for version, rows in pdf.groupby("mv"):
        found.append((str(version), "", rows))
        found += [(str(version), str(value), g) for value, g in rows.groupby("country")]
    return found


def _knots(row: pd.Series) -> list[tuple[int, float, float]]:
    if row.knots is None:
        return []
    return [(k["cell"], k["lower"], k["value"]) for k in row.knots]


def _arrays(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return rows["s"].to_numpy(float), rows["y"].to_numpy(float), rows["w"].to_numpy(float)


def _fitted(pdf: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame, pd.DataFrame]]:
    """The groups that fit their own map: (version, value, fit rows, evaluated rows)."""
    return [
        (version, value, rows[rows.split == "val"], rows[rows.split != "val"])
        for version, value, rows in _groups(pdf)
        if value not in ("tiny", "allpos")
    ]


def test_temperature_is_within_1e3_of_the_exact_minimiser_on_the_rows(case: Any) -> None:
    pdf, table, _ = case
    for version, value, fit, _ in _fitted(pdf):
        s, y, w = _arrays(fit)
        temperature = ref.table_row(table, version, value, "temperature").parameters["temperature"]
        exact = ref.exact_temperature(ref.logit(s), y, w)
        assert temperature == pytest.approx(exact, rel=1e-3)
        # On the cells' own pseudo-observations the search is exact.
        assert temperature == pytest.approx(ref.cell_temperature(s, y, w), rel=1e-7)
    # v2 is over-confident, v3 under-confident.
    assert ref.table_row(table, "v2", "", "temperature").parameters["temperature"] > 1.2
    assert ref.table_row(table, "v3", "", "temperature").parameters["temperature"] < 0.8


def test_platt_is_within_1e4_of_unpenalised_logistic_regression(case: Any) -> None:
    pdf, table, _ = case
    for version, value, fit, _ in _fitted(pdf):
        s, y, w = _arrays(fit)
        a, b = ref.platt(ref.logit(s), y, w)
        parameters = ref.table_row(table, version, value, "platt").parameters
        assert parameters["a"] == pytest.approx(a, abs=1e-4)
        assert parameters["b"] == pytest.approx(b, abs=1e-4)


def test_isotonic_equals_scikit_learn_on_the_cells(case: Any) -> None:
    pdf, table, _ = case
    for version, value, fit, _ in _fitted(pdf):
        cells, fitted = ref.isotonic_at_cells(*_arrays(fit))
        knots = ref.table_row(table, version, value, "isotonic").knots
        knot_cells = np.array([k["cell"] for k in knots])
        knot_values = np.array([k["value"] for k in knots])
        at_cells = knot_values[np.searchsorted(knot_cells, cells, side="right") - 1]
        np.testing.assert_allclose(at_cells, fitted, rtol=0, atol=1e-9)
        assert np.all(np.diff(knot_values) > 0)


def test_before_metrics_are_the_evaluated_rows_metrics(case: Any) -> None:
    pdf, table, _ = case
    for version, value, _, evaluated in _fitted(pdf):
        s, y, w = _arrays(evaluated)
        expected = ref.scores(s, y, w)
        row = ref.table_row(table, version, value, "temperature")
        assert row.n_eval == len(evaluated)
        for name, number in expected.items():
            assert row[f"{name}_before"] == pytest.approx(number, rel=1e-9, abs=1e-12)


def test_isotonic_after_metrics_equal_the_row_by_row_recomputation(case: Any) -> None:
    pdf, table, _ = case
    for version, value, _, evaluated in _fitted(pdf):
        s, y, w = _arrays(evaluated)
        row = ref.table_row(table, version, value, "isotonic")
        mapped = ref.isotonic_at_rows(row, s)
        expected = ref.scores(mapped, y, w)
        for name, number in expected.items():
            assert row[f"{name}_after"] == pytest.approx(number, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("method", ["temperature", "platt"])
def test_logistic_after_metrics_are_within_their_bounds_of_the_rows(case: Any, method: str) -> None:
    pdf, table, _ = case
    for version, value, _, evaluated in _fitted(pdf):
        s, y, w = _arrays(evaluated)
        row = ref.table_row(table, version, value, method)
        if method == "temperature":
            a, b = 0.0, 1.0 / row.parameters["temperature"]
        else:
            a, b = row.parameters["a"], row.parameters["b"]
        u = a + b * ref.logit(s)
        expected = {**ref.scores(ref.sigmoid(u), y, w), "nll": ref.logistic_nll(u, y, w)}
        bounds = row.after_bounds
        for name, number in expected.items():
            assert abs(row[f"{name}_after"] - number) <= bounds[name] + 1e-12, name
        # The bounds are small enough to mean something.
        assert bounds["nll"] < 1e-4 and bounds["brier"] < 1e-4 and bounds["ece"] < 0.05
        # Scaling a well-separated over- or under-confident model lowers the held-out NLL.
        assert row.nll_after < row.nll_before


def test_temperature_keeps_accuracy_at_threshold_one_half(case: Any) -> None:
    _, table, _ = case
    rows = table[(table.method == "temperature") & table.parameters.notna()]
    assert (rows.after_bounds.map(lambda b: b["accuracy"]) == 0.0).all()
    np.testing.assert_allclose(rows.accuracy_after, rows.accuracy_before, rtol=1e-12)


def test_a_small_slice_falls_back_to_its_versions_overall_parameters(case: Any) -> None:
    pdf, table, _ = case
    for version in SLOPES:
        tiny = pdf[(pdf.mv == version) & (pdf.country == "tiny")]
        for method in ("temperature", "platt", "isotonic"):
            row = ref.table_row(table, version, "tiny", method)
            overall = ref.table_row(table, version, "", method)
            assert row.fallback and not overall.fallback
            assert row.n_fit == (tiny.split == "val").sum() < MIN_FIT_ROWS
            assert row.parameters == overall.parameters
            assert _knots(row) == _knots(overall)


def test_an_all_positive_slice_takes_the_bound_and_platt_falls_back(case: Any) -> None:
    _, table, _ = case
    for version in SLOPES:
        temperature = ref.table_row(table, version, "allpos", "temperature")
        assert not temperature.fallback
        assert temperature.parameters["temperature"] == 0.05
        platt = ref.table_row(table, version, "allpos", "platt")
        assert platt.fallback
        assert platt.parameters == ref.table_row(table, version, "", "platt").parameters
        isotonic = ref.table_row(table, version, "allpos", "isotonic")
        assert [k["value"] for k in isotonic.knots] == [1.0]


def test_platt_on_all_rows_is_close_to_the_cox_fit_of_the_metrics(spark: SparkSession) -> None:
    """The same regression; the Cox fit merges a cell's labels at one mean logit, Platt keeps
    them apart, so they differ by the cells' approximation only."""
    pdf = _log(22, 8_000)
    config = {**CONFIG, "recalibration": {"methods": ["platt"], "min_fit_rows": 1}}
    result = evaluate(spark.createDataFrame(pdf), config)
    assert result.recalibration is not None
    table = result.recalibration.toPandas()
    metrics = {
        (r.model_version, r.slice_value, r.metric): r.value for r in result.metrics.collect()
    }
    for version, value, _ in _groups(pdf):
        if value == "allpos":
            continue
        row = ref.table_row(table, version, value, "platt")
        assert row.n_fit == row.n_eval
        assert row.parameters["a"] == pytest.approx(
            metrics[(version, value, "calibration_intercept")], abs=2e-4
        )
        assert row.parameters["b"] == pytest.approx(
            metrics[(version, value, "calibration_slope")], abs=2e-4
        )


def test_recalibrate_applies_each_rows_slice_parameters(spark: SparkSession, case: Any) -> None:
    pdf, table, _ = case
    sample = pdf.groupby(["mv", "country"]).head(20).reset_index(drop=True)
    sample.loc[0, "s"] = np.nan
    sdf = spark.createDataFrame(sample)
    recal = spark.createDataFrame(table, RECALIBRATION_SCHEMA)
    for method in ("temperature", "platt", "isotonic"):
        out = recalibrate(sdf, recal, CONFIG, method=method).toPandas()
        assert len(out) == len(sample)
        assert list(out.columns) == [*sample.columns, "calibrated_score"]
        for _, r in out.iterrows():
            if np.isnan(r.s):
                assert r.calibrated_score is None or np.isnan(r.calibrated_score)
                continue
            params = ref.table_row(table, r.mv, r.country, method)
            if params.fallback:
                params = ref.table_row(table, r.mv, "", method)
            z = ref.logit(np.array([r.s]))
            if method == "temperature":
                expected = ref.sigmoid(z / params.parameters["temperature"])[0]
            elif method == "platt":
                expected = ref.sigmoid(params.parameters["a"] + params.parameters["b"] * z)[0]
            else:
                cells = np.array([k["cell"] for k in params.knots])
                values = np.array([k["value"] for k in params.knots])
                at = max(np.searchsorted(cells, cell_ids(np.array([r.s]))[0], side="right") - 1, 0)
                expected = values[at]
            assert r.calibrated_score == pytest.approx(expected, rel=1e-12, abs=1e-15)


def _bins(value: Any) -> list[tuple[int, float, float, float]]:
    return [(b["bin"], b["weight"], b["confidence"], b["outcome"]) for b in value]


def test_reliability_bins_equal_the_row_by_row_bins(case: Any) -> None:
    """Before: the evaluated rows' bins as they are; after isotonic (constant per cell): the
    rows' bins at their step's value, both against a NumPy binning of the rows."""
    pdf, table, _ = case
    for version, value, _, evaluated in _fitted(pdf):
        s, y, w = _arrays(evaluated)
        row = ref.table_row(table, version, value, "isotonic")
        mapped = ref.isotonic_at_rows(row, s)
        for found, expected in (
            (row.reliability_before, ref.reliability(s, y, w)),
            (row.reliability_after, ref.reliability(mapped, y, w)),
        ):
            got = _bins(found)
            assert [b[0] for b in got] == [b[0] for b in expected]
            for (_, *numbers), (_, *reference) in zip(got, expected, strict=True):
                assert numbers == pytest.approx(reference, rel=1e-9, abs=1e-12)
