"""roc_auc_ovr (exact, extra pass) against scikit-learn's one-vs-rest macro ROC AUC, per slice,
with weights and tied probabilities."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession
from sklearn.metrics import roc_auc_score

from spark_calib import evaluate

K = 4


def test_roc_auc_ovr_matches_sklearn_per_slice(spark: SparkSession) -> None:
    rng = np.random.default_rng(11)
    n = 1200
    # Rounded probabilities give many ties within each class column.
    probs = rng.dirichlet(np.ones(K), n).round(2)
    probs = probs / probs.sum(axis=1, keepdims=True)
    pdf = pd.DataFrame(
        {
            "p": list(probs),
            "y": rng.integers(0, K, n),
            "g": rng.choice(["a", "b", "c"], n),
            "w": rng.random(n),
        }
    )
    config = {
        "task": "multiclass",
        "columns": {"probs": "p", "label": "y", "weight": "w"},
        "slices": [[], ["g"]],
        "metrics": ["roc_auc_ovr"],
    }
    result = evaluate(spark.createDataFrame(pdf), config)
    rows = result.metrics.collect()
    result.unpersist()
    got = {(r.slice_value, r["class"]): r.value for r in rows}
    for value in ["", "a", "b", "c"]:
        part = pdf if value == "" else pdf[pdf.g == value]
        matrix = np.stack(part.p.to_numpy())
        expected_macro = roc_auc_score(
            part.y, matrix, multi_class="ovr", average="macro", sample_weight=part.w
        )
        assert got[(value, None)] == pytest.approx(expected_macro, abs=1e-9)
        for k in range(K):
            expected = roc_auc_score(part.y == k, matrix[:, k], sample_weight=part.w)
            assert got[(value, str(k))] == pytest.approx(expected, abs=1e-9)
    assert len(rows) == 4 * (K + 1)


def test_roc_auc_ovr_skips_a_class_absent_from_the_slice(spark: SparkSession) -> None:
    """Class 2 never occurs: its one-vs-rest AUC is null and the macro averages the others."""
    rows = [
        ([0.7, 0.2, 0.1], 0),
        ([0.2, 0.6, 0.2], 1),
        ([0.5, 0.3, 0.2], 1),
        ([0.3, 0.3, 0.4], 0),
    ]
    df = spark.createDataFrame(rows, "p array<double>, y int")
    config = {
        "task": "multiclass",
        "columns": {"probs": "p", "label": "y"},
        "num_classes": 3,
        "metrics": ["roc_auc_ovr"],
    }
    result = evaluate(df, config)
    got = {r["class"]: r.value for r in result.metrics.collect()}
    result.unpersist()
    # Class 0: positives score 0.7, 0.3; negatives 0.2, 0.5 → pairs won: (0.7>0.2, 0.7>0.5,
    # 0.3>0.2) = 3 of 4. Class 1: positives 0.6, 0.3; negatives 0.2, 0.3 → 0.6 beats both,
    # 0.3 beats 0.2 and ties 0.3 (½) → 3.5 of 4.
    assert got["0"] == pytest.approx(3 / 4, abs=1e-12)
    assert got["1"] == pytest.approx(3.5 / 4, abs=1e-12)
    assert got["2"] is None
    assert got[None] == pytest.approx((3 / 4 + 3.5 / 4) / 2, abs=1e-12)
