"""Oracle tests of the decision metrics (docs/metrics.md) against scikit-learn and NumPy.

Binary and 4-class logs (probability arrays; one case with class_names and string labels),
weighted, per model version and per slice [[], [g], [g, h]]. Every expected value comes from
``tests/support/reference_sklearn.py`` on the same seeded pandas rows, never from the engine: the
metrics rows (error rates, precision/recall/f1 per class and averaged, ll, costs, class-weighted
error and nll) and the ``confusion`` table are compared key by key to 1e-9, with no missing or
extra rows.
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
K = 4
SLICES = [[], ["g"], ["g", "h"]]
NAMES = ["cat", "dog", "bird", "fish"]
DECISION_METRICS = [
    "count",
    "accuracy",
    "nll",
    "error_rate",
    "balanced_accuracy",
    "balanced_error_rate",
    "precision",
    "recall",
    "f1",
    "ll",
    "misclassification_cost",
    "expected_misclassification_cost",
    "class_weighted_error",
    "class_weighted_nll",
    "confusion_matrix",
]
PER_CLASS = ("precision", "recall", "f1")
BINARY_DDL = "s double, y int, mv string, g string, h string, w double"
MULTICLASS_DDL = "p array<double>, y int, mv string, g string, h string, w double"
NAMED_DDL = "p array<double>, y string, mv string, g string, h string, w double"
CONFUSION_KEY = ("model_version", "slice_name", "slice_value", "true_class", "predicted_class")


def _cost(seed: int, k: int) -> list[list[float]]:
    """A random K×K cost matrix (non-zero diagonal too: the metric must not assume 0)."""
    return np.random.default_rng(seed).uniform(0.0, 4.0, size=(k, k)).round(3).tolist()


def _context(rng: np.random.Generator, n: int) -> dict[str, Any]:
    w = rng.uniform(0.2, 3.0, size=n)
    w[20:40] = 0.0  # zero weights are valid: they count in n, not in any weighted sum
    return {
        "mv": rng.choice(["v1", "v2"], size=n),
        "g": rng.choice(["a", "b", "c", "r"], size=n, p=[0.5, 0.3, 0.19, 0.01]),
        "h": rng.choice(["x", "y"], size=n),
        "w": w,
    }


def binary_log(seed: int, n: int = N_ROWS) -> pd.DataFrame:
    """s uniform in [0, 1] with y ~ Bernoulli(s^1.2); rows with s = 0 and y = 1 or s = 1 and
    y = 0 (ll clipped at ε), s exactly 0.5, a slice g = "z" whose positives all weigh 0
    (class 1 is in L by n > 0 but T_1 = 0) and a slice g = "o" whose rows all weigh 0 (null
    values)."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.0, 1.0, size=n)
    y = (rng.uniform(size=n) < s**1.2).astype(np.int32)
    s[:5], y[:5] = 0.0, 1
    s[5:10], y[5:10] = 1.0, 0
    s[10:20] = 0.5
    pdf = pd.DataFrame({"s": s, "y": y, **_context(rng, n)})
    tiny = pd.DataFrame(
        {
            "s": [0.9, 0.2, 0.7, 0.1, 0.3, 0.6, 0.8, 0.4, 0.6, 0.1],
            "y": np.array([1, 1, 0, 0, 0, 0, 1, 1, 0, 0], dtype=np.int32),
            "mv": "v1",
            "g": ["z"] * 6 + ["o"] * 4,
            "h": ["x", "x", "x", "y", "y", "y", "x", "y", "x", "y"],
            "w": [0.0, 0.0, 1.0, 2.0, 1.5, 0.5, 0.0, 0.0, 0.0, 0.0],
        }
    )
    return pd.concat([pdf, tiny], ignore_index=True)


def multiclass_log(seed: int, n: int = N_ROWS) -> pd.DataFrame:
    """K = 4 Dirichlet probabilities (class 3 rarely predicted), y drawn from tempered
    probabilities; rows with ties (first argmax) and with p_y = 0 (ll clipped at ε); a rare
    slice value g = "r" where some classes are missing; a slice g = "o" of weight 0."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet([2.0, 1.5, 1.0, 0.4], size=n)
    truth = p**0.7 / (p**0.7).sum(axis=1, keepdims=True)
    y = (truth.cumsum(axis=1) < rng.uniform(size=(n, 1))).sum(axis=1).clip(0, K - 1)
    p[:5] = [0.25, 0.25, 0.25, 0.25]
    p[5:10] = [0.125, 0.375, 0.375, 0.125]
    p[10:15], y[10:15] = [0.5, 0.5, 0.0, 0.0], 3
    pdf = pd.DataFrame({"p": p.tolist(), "y": y.astype(np.int32), **_context(rng, n)})
    pdf.loc[15:19, ["g", "w"]] = ["o", 0.0]
    return pdf


def named_log(seed: int) -> pd.DataFrame:
    pdf = multiclass_log(seed)
    pdf["y"] = [NAMES[k] for k in pdf["y"]]
    return pdf


def top_label_log(seed: int, n: int = 600) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.1, 1.0, size=n)
    return pd.DataFrame(
        {"c": c, "ok": rng.uniform(size=n) < c, **_context(rng, n)},
    )


@dataclass(frozen=True)
class Case:
    make: Callable[[], pd.DataFrame]
    ddl: str
    config: dict[str, Any]


CASES: dict[str, Case] = {
    "binary": Case(
        lambda: binary_log(41),
        BINARY_DDL,
        {
            "task": "binary",
            "columns": {"score": "s", "label": "y", "weight": "w", "model_version": "mv"},
            "slices": SLICES,
            "metrics": DECISION_METRICS,
            "cost_matrix": _cost(1, 2),
            "class_weights": {1: 3.5},
        },
    ),
    # Unweighted, no model_version, class names, a non-default threshold, class_weights keyed
    # by a name and by an index string.
    "binary_named": Case(
        lambda: binary_log(42),
        BINARY_DDL,
        {
            "task": "binary",
            "columns": {"score": "s", "label": "y"},
            "slices": SLICES,
            "metrics": DECISION_METRICS,
            "class_names": ["neg", "pos"],
            "threshold": 0.35,
            "cost_matrix": _cost(2, 2),
            "class_weights": {"pos": 2.0, "0": 0.5},
        },
    ),
    # class_weights keyed by int and by index string, one class weighing 0.
    "multiclass": Case(
        lambda: multiclass_log(43),
        MULTICLASS_DDL,
        {
            "task": "multiclass",
            "columns": {"probs": "p", "label": "y", "weight": "w", "model_version": "mv"},
            "num_classes": K,
            "slices": SLICES,
            "metrics": DECISION_METRICS,
            "cost_matrix": _cost(3, K),
            "class_weights": {0: 0.5, "2": 3.0, 1: 0.0},
        },
    ),
    # String labels mapped by class_names, class rows labelled by name, nll_eps = 1e-7, one
    # GROUPING SETS aggregation instead of the finest-grain re-aggregation.
    "multiclass_named": Case(
        lambda: named_log(44),
        NAMED_DDL,
        {
            "task": "multiclass",
            "columns": {"probs": "p", "label": "y", "weight": "w", "model_version": "mv"},
            "class_names": NAMES,
            "slices": SLICES,
            "metrics": DECISION_METRICS,
            "nll_eps": 1e-7,
            "slice_strategy": "grouping_sets",
            "cost_matrix": _cost(4, K),
            "class_weights": {"dog": 2.0, "fish": 0.25},
        },
    ),
}


@dataclass(frozen=True)
class Evaluated:
    pdf: pd.DataFrame
    config: dict[str, Any]
    metrics: ref.Table
    confusion: ref.Table | None
    result: Any


def run_case(spark: SparkSession, case: Case) -> Evaluated:
    """Evaluate a case and collect its metrics and confusion tables."""
    pdf = case.make()
    result = evaluate(spark.createDataFrame(pdf, case.ddl), case.config)
    metrics = ref.table_from_rows((r.asDict() for r in result.metrics.collect()), ref.METRIC_KEY)
    confusion = getattr(result, "confusion", None)
    table = (
        None
        if confusion is None
        else ref.table_from_rows((r.asDict() for r in confusion.collect()), CONFUSION_KEY)
    )
    result.unpersist()
    return Evaluated(pdf, case.config, metrics, table, result)


def evaluated(evaluations: Evaluations, name: str) -> Evaluated:
    """CASES[name] evaluated once per session, its metrics and confusion tables collected."""
    return evaluations.get(("oracle_decision", name), lambda spark: run_case(spark, CASES[name]))


def _group_inputs(
    gdf: pd.DataFrame, config: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(y index, probabilities n×K, predicted index, weights, class labels) of one group."""
    cols = config["columns"]
    w = sk.weights_of(gdf, cols.get("weight"))
    names = config.get("class_names")
    if config["task"] == "binary":
        s = gdf[cols["score"]].to_numpy(np.float64)
        p = sk.binary_probs(s)
        pred = (s >= config.get("threshold", 0.5)).astype(np.int64)
        y = gdf[cols["label"]].to_numpy().astype(np.int64)
        labels = list(names) if names else ["0", "1"]
    else:
        p = np.stack(gdf[cols["probs"]].to_numpy()).astype(np.float64)
        pred = np.argmax(p, axis=1)  # first argmax on ties
        raw = gdf[cols["label"]].to_numpy()
        y = np.array([names.index(v) for v in raw]) if names else raw.astype(np.int64)
        labels = list(names) if names else [str(k) for k in range(p.shape[1])]
    return y, p, pred, w, labels


def _base(metric: str) -> str:
    """The requested name a metric row belongs to (precision_macro → precision)."""
    head = metric.split("_")[0]
    return head if head in PER_CLASS else metric


def expected(ev: Evaluated) -> tuple[ref.Table, ref.Table, set[tuple]]:
    """The expected metrics rows (for the requested names), the confusion cells, and the
    keys whose weights are all 0 (precision/recall/f1 rows not compared there)."""
    config = ev.config
    requested = config["metrics"]
    metrics: ref.Table = {}
    confusion: ref.Table = {}
    weightless: set[tuple] = set()
    for key, gdf in sk.iter_groups(
        ev.pdf, config["slices"], config["columns"].get("model_version")
    ):
        y, p, pred, w, labels = _group_inputs(gdf, config)
        cw = sk.class_weight_vector(config["class_weights"], len(labels), config.get("class_names"))
        values = sk.decision_metrics(
            y,
            p,
            pred,
            w,
            labels,
            eps=config.get("nll_eps", sk.DEFAULT_EPS),
            cost_matrix=np.array(config["cost_matrix"]),
            class_weights=cw,
        )
        common = {"n": len(gdf), "weight_sum": float(w.sum())}
        if w.sum() == 0:
            weightless.add(key)
        for (cls, metric), value in values.items():
            if _base(metric) in requested:
                metrics[(*key, cls, metric)] = {"value": value, **common}
        for (true_label, pred_label), cell in sk.confusion_cells(y, pred, w, labels).items():
            confusion[(*key, true_label, pred_label)] = cell
    return metrics, confusion, weightless


def expected_of(evaluations: Evaluations, name: str) -> tuple[ref.Table, ref.Table, set[tuple]]:
    """expected(...) of CASES[name], computed once."""
    ev = evaluated(evaluations, name)
    return evaluations.get(("oracle_decision", name, "expected"), lambda _: expected(ev))


def assert_no_diff(problems: list[str]) -> None:
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", list(CASES))
def test_decision_metrics_match_sklearn(evaluations: Evaluations, name: str) -> None:
    """error_rate, balanced_accuracy/error_rate, precision/recall/f1 per class in L and their
    macro/micro/weighted rows, ll (clipped at nll_eps), misclassification costs and the
    class-weighted error and nll per model version × slice equal scikit-learn / NumPy, with
    the group's n and weight_sum, and no missing or extra rows. In a slice whose weights are
    all 0 every value is null (count aside)."""
    ev = evaluated(evaluations, name)
    want, _, weightless = expected_of(evaluations, name)
    if ev.config["columns"].get("weight"):
        assert weightless, "the data should hold a slice whose weights are all 0"
    got = {
        k: v
        for k, v in ev.metrics.items()
        if k[:3] not in weightless or _base(k[4]) not in PER_CLASS
    }
    assert_no_diff(ref.diff_tables(got, want, atol=ATOL))


@pytest.mark.parametrize("name", list(CASES))
def test_confusion_table_matches_sklearn(evaluations: Evaluations, name: str) -> None:
    """The confusion table holds exactly the cells with n > 0, with n = confusion_matrix and
    weight_sum = confusion_matrix(sample_weight=w), classes labelled like the class column."""
    ev = evaluated(evaluations, name)
    assert ev.confusion is not None, "confusion_matrix was requested but result.confusion is None"
    _, want, _ = expected_of(evaluations, name)
    assert_no_diff(ref.diff_tables(ev.confusion, want, atol=ATOL))


def test_tables_not_requested_are_none(evaluations: Evaluations) -> None:
    """Binary without threshold_metrics / roc_curve: those attributes are None, as is the
    regression calibration table."""
    result = evaluated(evaluations, "binary").result
    for attr in ("thresholds", "roc", "regression_calibration"):
        assert hasattr(result, attr), f"EvaluationResult has no attribute {attr!r}"
        assert getattr(result, attr) is None, attr


def test_binary_zero_weight_class_in_labels(evaluations: Evaluations) -> None:
    """Slice g = z (v1): class 1 occurs only with weight 0, so it is in L (per-class rows with
    recall 0) but not in balanced_accuracy's mean (T_1 = 0). Hand-checked against the data."""
    ev = evaluated(evaluations, "binary")
    got = {k[3:]: v["value"] for k, v in ev.metrics.items() if k[:3] == ("v1", "g", "z")}
    # Rows (s, y, w): (.9,1,0) (.2,1,0) (.7,0,1) (.1,0,2) (.3,0,1.5) (.6,0,.5); threshold 0.5.
    # Class 0: T_0 = 5, TP_0 = 3.5; P_0 = 3.5 (+ zero-weight row); P_1 = 1.5, TP_1 = 0.
    assert got[("1", "recall")] == 0.0
    assert got[("1", "precision")] == 0.0
    assert got[(None, "balanced_accuracy")] == pytest.approx(3.5 / 5, abs=ATOL)
    assert got[(None, "recall_macro")] == pytest.approx((3.5 / 5 + 0.0) / 2, abs=ATOL)
    assert got[(None, "class_weighted_error")] == pytest.approx(1.5 / 5, abs=ATOL)


def test_top_label_error_rate(spark: SparkSession) -> None:
    """top_label: error_rate = Σ w (1 − correct) / W per model version × slice."""
    pdf = top_label_log(45)
    config = {
        "task": "top_label",
        "columns": {"confidence": "c", "correct": "ok", "weight": "w", "model_version": "mv"},
        "slices": SLICES,
        "metrics": ["error_rate", "count"],
    }
    result = evaluate(
        spark.createDataFrame(pdf, "c double, ok boolean, mv string, g string, h string, w double"),
        config,
    )
    got = ref.table_from_rows((r.asDict() for r in result.metrics.collect()), ref.METRIC_KEY)
    want: ref.Table = {}
    for key, gdf in sk.iter_groups(pdf, SLICES, "mv"):
        w = gdf["w"].to_numpy(np.float64)
        common = {"n": len(gdf), "weight_sum": float(w.sum())}
        want[(*key, None, "error_rate")] = {
            "value": sk.top_label_error_rate(gdf["ok"].to_numpy(), w),
            **common,
        }
        want[(*key, None, "count")] = {"value": float(len(gdf)), **common}
    assert_no_diff(ref.diff_tables(got, want, atol=ATOL))
