"""``recalibration.after: rows``: the temperature and Platt maps scored row by row in one more
pass. Their after metrics and bins equal a NumPy recomputation on the evaluated rows at the
table's own parameters to 1e-9 (binary and top-label, weighted, per model version and slice, a
fallback slice and scores at 0 and 1 included); the fit and the before metrics are those of
``after: cells``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession

from spark_calib import evaluate
from tests.support import recalibration_reference as ref
from tests.support.evaluations import Evaluations

SCORES = ("ece", "nll", "brier", "accuracy")
MIN_FIT_ROWS = 150
RECALIBRATION: dict[str, Any] = {
    "methods": ["temperature", "platt", "isotonic"],
    "fit": {"column": "split", "value": "val"},
    "min_fit_rows": MIN_FIT_ROWS,
}
BINARY: dict[str, Any] = {
    "task": "binary",
    "columns": {"score": "s", "label": "y", "weight": "w", "model_version": "mv"},
    "slices": [["country"]],  # overall is not configured: the table still has it
    "metrics": ["ece"],
    "recalibration": RECALIBRATION,
}
TOP_LABEL: dict[str, Any] = {
    "task": "top_label",
    "columns": {"confidence": "s", "correct": "y", "weight": "w", "model_version": "mv"},
    "slices": [[], ["country"]],
    "metrics": ["ece"],
    "recalibration": RECALIBRATION,
}
# logit P(y = 1) = slope·logit(s) + shift: v2 over-confident (T > 1), v3 under-confident.
SLOPES = {"v2": (0.6, -0.2), "v3": (1.6, 0.3)}


def _log(seed: int, n: int, top_label: bool) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = []
    for version, (slope, shift) in SLOPES.items():
        if top_label:
            s = 0.1 + 0.9 * rng.beta(3.0, 1.2, size=n)
            s[rng.uniform(size=n) < 0.03] = 1.0  # saturated: the logit is clipped to 37
        else:
            low, mid = rng.beta(0.8, 12, size=n), rng.beta(2, 2, size=n)
            s = np.where(rng.uniform(size=n) < 0.6, low, mid)
            s[:40] = 0.0  # the clipped ends of the logit
            s[40:80] = 1.0
        y = (rng.uniform(size=n) < ref.sigmoid(slope * ref.logit(s) + shift)).astype(np.int32)
        country = rng.choice(["BR", "US"], size=n, p=[0.4, 0.6]).astype(object)
        country[100:300] = "tiny"  # about 100 fit rows: falls back to overall
        frames.append(
            pd.DataFrame(
                {
                    "mv": version,
                    "s": s,
                    "y": y.astype(bool) if top_label else y,
                    "w": rng.uniform(0.2, 3.0, size=n),
                    "country": country,
                    "split": rng.choice(["val", "test"], size=n),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


CASES = {"binary": (BINARY, 41, False), "top_label": (TOP_LABEL, 43, True)}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(
    request: pytest.FixtureRequest, evaluations: Evaluations
) -> tuple[str, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(task, log, table with ``after: rows``, table with ``after: cells``)."""
    config, seed, top_label = CASES[request.param]
    pdf = _log(seed, 8_000, top_label)

    def compute(spark: SparkSession) -> tuple[pd.DataFrame, pd.DataFrame]:
        frame = spark.createDataFrame(pdf)
        tables = []
        for after in ("rows", "cells"):
            settings = {**config, "recalibration": {**RECALIBRATION, "after": after}}
            result = evaluate(frame, settings)
            assert result.recalibration is not None
            tables.append(result.recalibration.toPandas())
            result.unpersist()
        return tables[0], tables[1]

    rows, cells = evaluations.get(("recalibration rows", request.param), compute)
    return request.param, pdf, rows, cells


def _keys(pdf: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(version, slice value, evaluated rows) of every key: overall ("") and each country."""
    found = []
    for version, rows in pdf.groupby("mv"):
        evaluated = rows[rows.split != "val"]
        found.append((str(version), "", evaluated))
        found += [(str(version), str(value), g) for value, g in evaluated.groupby("country")]
    return found


def _expected(task: str, u: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict[str, float]:
    """The after scores of p = σ(u) row by row: the logistic NLL (no ε); top-label accuracy is
    the rate of correct (the map keeps the prediction)."""
    found = {**ref.scores(ref.sigmoid(u), y, w), "nll": ref.logistic_nll(u, y, w)}
    if task == "top_label":
        found["accuracy"] = float(np.sum(w * y) / np.sum(w))
    return found


def _map(row: pd.Series, method: str) -> tuple[float, float]:
    if method == "temperature":
        return 0.0, 1.0 / row.parameters["temperature"]
    return row.parameters["a"], row.parameters["b"]


@pytest.mark.parametrize("method", ["temperature", "platt"])
def test_after_metrics_and_bins_equal_the_rows_at_the_tables_parameters(
    case: Any, method: str
) -> None:
    task, pdf, table, _ = case
    checked = 0
    for version, value, evaluated in _keys(pdf):
        row = ref.table_row(table, version, value, method)
        a, b = _map(row, method)
        s, y, w = (evaluated[name].to_numpy(float) for name in ("s", "y", "w"))
        u = a + b * ref.logit(s)
        for name, number in _expected(task, u, y, w).items():
            assert row[f"{name}_after"] == pytest.approx(number, rel=1e-9, abs=1e-12), name
        assert row.after_bounds == dict.fromkeys(SCORES, 0.0)
        got = [
            (b["bin"], b["weight"], b["confidence"], b["outcome"]) for b in row.reliability_after
        ]
        expected = ref.reliability(ref.sigmoid(u), y, w)
        assert [bin_[0] for bin_ in got] == [bin_[0] for bin_ in expected]
        for (_, *numbers), (_, *reference) in zip(got, expected, strict=True):
            assert numbers == pytest.approx(reference, rel=1e-9, abs=1e-12)
        checked += 1
    assert checked == 8  # 2 versions × (overall, BR, US, tiny)


def test_the_fallback_slice_is_scored_with_its_versions_overall_map(case: Any) -> None:
    _, _, table, _ = case
    for version in SLOPES:
        for method in ("temperature", "platt"):
            tiny = ref.table_row(table, version, "tiny", method)
            overall = ref.table_row(table, version, "", method)
            assert tiny.fallback and tiny.n_fit < MIN_FIT_ROWS
            assert tiny.parameters == overall.parameters


def test_fit_before_and_isotonic_are_those_of_the_cells(case: Any) -> None:
    """Only the logistic maps' after columns change with ``after``; they move by no more than
    the cells' stated bounds, and they do move (the pass is not the cells' values again)."""
    _, _, rows, cells = case
    assert len(rows) == len(cells) == 2 * 4 * 3
    largest = 0.0
    for _, found in rows.iterrows():
        other = ref.table_row(cells, found.model_version, found.slice_value, found.method)
        assert found.parameters == other.parameters and found.fallback == other.fallback
        assert (found.n_fit, found.n_eval) == (other.n_fit, other.n_eval)
        for name in SCORES:
            assert found[f"{name}_before"] == other[f"{name}_before"]
            if found.method == "isotonic":
                assert found[f"{name}_after"] == pytest.approx(other[f"{name}_after"], abs=1e-12)
            else:
                gap = abs(found[f"{name}_after"] - other[f"{name}_after"])
                assert gap <= other.after_bounds[name] + 1e-12, name
                largest = max(largest, gap)
    assert largest > 1e-7
