"""Hand-computed decision and ranking metrics (docs/metrics.md): cost matrices, class
weights, precision/recall/F1 with zero divisions, balanced accuracy, tie-aware AUCs, the
threshold and confusion tables. Every expected value is arithmetic from the spec's formulas."""

from __future__ import annotations

import math

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import evaluate, metrics_from_stats
from tests.support.frames import metric_values, overall

KEY = (None, "overall", "")

# (s, y, w). Threshold 0.5: predictions 1, 0, 1, 0, 1.
# Cells (true, predicted): (1,1) w1, (0,0) w2, (0,1) w1, (1,0) w0.5, (0,1) w1.5; W = 6.
BINARY_ROWS = [(0.9, 1, 1.0), (0.2, 0, 2.0), (0.6, 0, 1.0), (0.3, 1, 0.5), (0.7, 0, 1.5)]
BINARY_W = 1.0 + 2.0 + 1.0 + 0.5 + 1.5

# (p, y, w), K = 3. First argmax: 0, 2, 1, 2, 0.
# Cells: (0,0) w1, (1,2) w2, (1,1) w1, (0,2) w0.5, (2,0) w1; W = 5.5.
MULTI_ROWS = [
    ([0.7, 0.2, 0.1], 0, 1.0),
    ([0.1, 0.3, 0.6], 1, 2.0),
    ([0.2, 0.5, 0.3], 1, 1.0),
    ([0.3, 0.3, 0.4], 0, 0.5),
    ([0.5, 0.4, 0.1], 2, 1.0),
]
MULTI_W = 1.0 + 2.0 + 1.0 + 0.5 + 1.0
NAMES = ["cat", "dog", "bird"]


def binary_config(metrics: list[str], **extra: object) -> dict:
    return {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "weight": "w"},
        "metrics": metrics,
        **extra,
    }


def multi_config(metrics: list[str], **extra: object) -> dict:
    return {
        "task": "multiclass",
        "columns": {"probs": "p", "label": "y", "weight": "w"},
        "num_classes": 3,
        "metrics": metrics,
        **extra,
    }


# ---------------------------------------------------------------- cost matrices


def test_binary_cost_matrix(spark: SparkSession) -> None:
    """C[true][pred] with a non-zero diagonal; expected cost uses p = (1 − s, s)."""
    df = spark.createDataFrame(BINARY_ROWS, "s double, y int, w double")
    cost = [[0.1, 1.0], [5.0, 0.2]]
    config = binary_config(
        ["misclassification_cost", "expected_misclassification_cost"], cost_matrix=cost
    )
    got = overall(evaluate(df, config).metrics)
    # Realised cells: C11·1 + C00·2 + C01·1 + C10·0.5 + C01·1.5.
    realised = (0.2 * 1 + 0.1 * 2 + 1.0 * 1 + 5.0 * 0.5 + 1.0 * 1.5) / BINARY_W
    assert got["misclassification_cost"] == pytest.approx(realised, abs=1e-12)
    expected = (
        1.0 * (0.1 * 5.0 + 0.9 * 0.2)  # y=1, s=0.9
        + 2.0 * (0.8 * 0.1 + 0.2 * 1.0)  # y=0, s=0.2
        + 1.0 * (0.4 * 0.1 + 0.6 * 1.0)  # y=0, s=0.6
        + 0.5 * (0.7 * 5.0 + 0.3 * 0.2)  # y=1, s=0.3
        + 1.5 * (0.3 * 0.1 + 0.7 * 1.0)  # y=0, s=0.7
    ) / BINARY_W
    assert got["expected_misclassification_cost"] == pytest.approx(expected, abs=1e-12)


def test_multiclass_cost_matrix(spark: SparkSession) -> None:
    df = spark.createDataFrame(MULTI_ROWS, "p array<double>, y int, w double")
    cost = [[0.5, 1.0, 2.0], [3.0, 0.0, 4.0], [5.0, 6.0, 0.0]]
    config = multi_config(
        ["misclassification_cost", "expected_misclassification_cost"], cost_matrix=cost
    )
    got = overall(evaluate(df, config).metrics)
    # Cells: C00·1 + C12·2 + C11·1 + C02·0.5 + C20·1.
    realised = (0.5 * 1 + 4.0 * 2 + 0.0 * 1 + 2.0 * 0.5 + 5.0 * 1) / MULTI_W
    assert got["misclassification_cost"] == pytest.approx(realised, abs=1e-12)
    expected = (
        1.0 * (0.7 * 0.5 + 0.2 * 1.0 + 0.1 * 2.0)  # y=0
        + 2.0 * (0.1 * 3.0 + 0.3 * 0.0 + 0.6 * 4.0)  # y=1
        + 1.0 * (0.2 * 3.0 + 0.5 * 0.0 + 0.3 * 4.0)  # y=1
        + 0.5 * (0.3 * 0.5 + 0.3 * 1.0 + 0.4 * 2.0)  # y=0
        + 1.0 * (0.5 * 5.0 + 0.4 * 6.0 + 0.1 * 0.0)  # y=2
    ) / MULTI_W
    assert got["expected_misclassification_cost"] == pytest.approx(expected, abs=1e-12)


def test_expected_cost_from_logits(spark: SparkSession) -> None:
    """Softmax of logits: (0, log 3) → p = (1/4, 3/4); (log 4, 0) → p = (4/5, 1/5)."""
    rows = [([0.0, math.log(3.0)], 0), ([math.log(4.0), 0.0], 1)]
    df = spark.createDataFrame(rows, "z array<double>, y int")
    config = {
        "task": "multiclass",
        "columns": {"logits": "z", "label": "y"},
        "num_classes": 2,
        "cost_matrix": [[0.0, 1.0], [2.0, 0.0]],
        "metrics": ["expected_misclassification_cost", "misclassification_cost"],
    }
    got = overall(evaluate(df, config).metrics)
    expected = ((1 / 4) * 0.0 + (3 / 4) * 1.0 + (4 / 5) * 2.0 + (1 / 5) * 0.0) / 2
    assert got["expected_misclassification_cost"] == pytest.approx(expected, abs=1e-12)
    # Predictions 1 (true 0: cost 1) and 0 (true 1: cost 2).
    assert got["misclassification_cost"] == pytest.approx((1.0 + 2.0) / 2, abs=1e-12)


# ---------------------------------------------------------------- class weights

# Weighted T_j and TP_j of MULTI_ROWS: T = (1.5, 3, 1), TP = (1, 1, 0).
# p_y of each row: 0.7, 0.3, 0.5, 0.3, 0.1.


def _multi_class_weighted(c0: float, c1: float, c2: float) -> tuple[float, float]:
    error = (c0 * (1.5 - 1) + c1 * (3 - 1) + c2 * (1 - 0)) / (c0 * 1.5 + c1 * 3 + c2 * 1)
    nll = (
        1.0 * c0 * -math.log(0.7)
        + 2.0 * c1 * -math.log(0.3)
        + 1.0 * c1 * -math.log(0.5)
        + 0.5 * c0 * -math.log(0.3)
        + 1.0 * c2 * -math.log(0.1)
    ) / (1.0 * c0 + 2.0 * c1 + 1.0 * c1 + 0.5 * c0 + 1.0 * c2)
    return error, nll


def test_class_weights_by_index_unlisted_class_weighs_one(spark: SparkSession) -> None:
    """Keys as an int and as the index's string; class 1 is not listed so c_1 = 1.0."""
    df = spark.createDataFrame(MULTI_ROWS, "p array<double>, y int, w double")
    config = multi_config(
        ["class_weighted_error", "class_weighted_nll", "error_rate"],
        class_weights={0: 2.0, "2": 0.5},
    )
    got = overall(evaluate(df, config).metrics)
    error, nll = _multi_class_weighted(2.0, 1.0, 0.5)
    assert got["class_weighted_error"] == pytest.approx(error, abs=1e-12)
    assert got["class_weighted_nll"] == pytest.approx(nll, abs=1e-12)
    # Unweighted by class: wrong rows are the 2nd, 4th and 5th.
    assert got["error_rate"] == pytest.approx((2.0 + 0.5 + 1.0) / MULTI_W, abs=1e-12)


def test_class_weights_by_name(spark: SparkSession) -> None:
    """With class_names the keys are names; string labels map through class_names."""
    rows = [(p, NAMES[y], w) for p, y, w in MULTI_ROWS]
    df = spark.createDataFrame(rows, "p array<double>, y string, w double")
    config = multi_config(
        ["class_weighted_error", "class_weighted_nll"],
        class_names=NAMES,
        class_weights={"cat": 2.0, "bird": 0.5},
    )
    got = overall(evaluate(df, config).metrics)
    error, nll = _multi_class_weighted(2.0, 1.0, 0.5)
    assert got["class_weighted_error"] == pytest.approx(error, abs=1e-12)
    assert got["class_weighted_nll"] == pytest.approx(nll, abs=1e-12)


def test_class_weights_zero_weight_class(spark: SparkSession) -> None:
    """c_2 = 0: class 2's rows drop out of both numerator and denominator."""
    df = spark.createDataFrame(MULTI_ROWS, "p array<double>, y int, w double")
    config = multi_config(["class_weighted_error", "class_weighted_nll"], class_weights={"2": 0.0})
    got = overall(evaluate(df, config).metrics)
    assert got["class_weighted_error"] == pytest.approx((0.5 + 2) / (1.5 + 3), abs=1e-12)
    nll = (-math.log(0.7) - 2.0 * math.log(0.3) - math.log(0.5) - 0.5 * math.log(0.3)) / 4.5
    assert got["class_weighted_nll"] == pytest.approx(nll, abs=1e-12)


def test_binary_class_weights_and_log_likelihood(spark: SparkSession) -> None:
    """Binary: T = (4.5, 1.5), TP = (2, 1); class 1 weighs 3, class 0 (unlisted) 1."""
    df = spark.createDataFrame(BINARY_ROWS, "s double, y int, w double")
    config = binary_config(
        ["class_weighted_error", "class_weighted_nll", "ll", "nll", "error_rate"],
        class_weights={1: 3.0},
    )
    got = overall(evaluate(df, config).metrics)
    error = (1.0 * (4.5 - 2) + 3.0 * (1.5 - 1)) / (1.0 * 4.5 + 3.0 * 1.5)
    assert got["class_weighted_error"] == pytest.approx(error, abs=1e-12)
    # p_y: 0.9, 0.8, 0.4, 0.3, 0.3 with class weights 3, 1, 1, 3, 1.
    logs = [
        (1.0, 3.0, math.log(0.9)),
        (2.0, 1.0, math.log(0.8)),
        (1.0, 1.0, math.log(0.4)),
        (0.5, 3.0, math.log(0.3)),
        (1.5, 1.0, math.log(0.3)),
    ]
    weighted_nll = -sum(w * c * lg for w, c, lg in logs) / sum(w * c for w, c, _ in logs)
    assert got["class_weighted_nll"] == pytest.approx(weighted_nll, abs=1e-12)
    ll = sum(w * lg for w, _, lg in logs) / BINARY_W
    assert got["ll"] == pytest.approx(ll, abs=1e-12)
    assert got["nll"] == pytest.approx(-ll, abs=1e-12)
    assert got["error_rate"] == pytest.approx((1.0 + 0.5 + 1.5) / BINARY_W, abs=1e-12)


# ---------------------------------------------------------------- precision / recall / F1

# K = 5 (num_classes), one-hot-ish probabilities: the predicted class gets 0.6.
# (true, predicted, weight). Class 2 is true but never predicted, class 3 predicted but never
# true, class 4 neither (not in L: no per-class rows).
PRF_CELLS = [
    (0, 0, 1.0),
    (0, 0, 1.0),
    (0, 1, 1.0),
    (1, 1, 2.0),
    (1, 0, 1.0),
    (2, 0, 1.0),
    (2, 1, 1.0),
    (1, 3, 1.0),
]


def _probs(predicted: int, k: int = 5) -> list[float]:
    return [0.6 if j == predicted else 0.1 for j in range(k)]


def prf_frame(spark: SparkSession):  # type: ignore[no-untyped-def]
    rows = [(_probs(pred), y, w) for y, pred, w in PRF_CELLS]
    return spark.createDataFrame(rows, "p array<double>, y int, w double")


def test_precision_recall_f1_zero_division(spark: SparkSession) -> None:
    config = multi_config(["precision", "recall", "f1"], num_classes=5)
    values = metric_values(evaluate(prf_frame(spark), config).metrics)
    # T = (3, 4, 2, 0), P = (4, 4, 0, 1), TP = (2, 2, 0, 0); W = 9.
    precision = {"0": 2 / 4, "1": 2 / 4, "2": 0.0, "3": 0 / 1}  # class 2: P = 0 → 0
    recall = {"0": 2 / 3, "1": 2 / 4, "2": 0 / 2, "3": 0.0}  # class 3: T = 0 → 0
    f1 = {
        "0": 2 * 2 / (2 * 2 + (4 - 2) + (3 - 2)),
        "1": 2 * 2 / (2 * 2 + (4 - 2) + (4 - 2)),
        "2": 0 / (0 + 0 + 2),
        "3": 0 / (0 + 1 + 0),
    }
    support = {"0": 3.0, "1": 4.0, "2": 2.0, "3": 0.0}
    for name, expected in [("precision", precision), ("recall", recall), ("f1", f1)]:
        for k, value in expected.items():
            assert values[(*KEY, k, name)] == pytest.approx(value, abs=1e-12), (name, k)
        assert (*KEY, "4", name) not in values
        macro = sum(expected.values()) / 4
        weighted = sum(support[k] * expected[k] for k in expected) / 9
        assert values[(*KEY, None, f"{name}_macro")] == pytest.approx(macro, abs=1e-12)
        assert values[(*KEY, None, f"{name}_weighted")] == pytest.approx(weighted, abs=1e-12)
    assert values[(*KEY, None, "precision_micro")] == pytest.approx(4 / 9, abs=1e-12)
    assert values[(*KEY, None, "recall_micro")] == pytest.approx(4 / 9, abs=1e-12)
    assert values[(*KEY, None, "f1_micro")] == pytest.approx(2 * 4 / (9 + 9), abs=1e-12)


def test_precision_recall_binary(spark: SparkSession) -> None:
    """Binary rows are per class 0 and 1 too: cells (1,1) 1, (0,0) 2, (0,1) 2.5, (1,0) 0.5."""
    df = spark.createDataFrame(BINARY_ROWS, "s double, y int, w double")
    values = metric_values(evaluate(df, binary_config(["precision", "recall"])).metrics)
    # T = (4.5, 1.5), P = (2.5, 3.5), TP = (2, 1).
    assert values[(*KEY, "0", "precision")] == pytest.approx(2 / 2.5, abs=1e-12)
    assert values[(*KEY, "1", "precision")] == pytest.approx(1 / 3.5, abs=1e-12)
    assert values[(*KEY, "0", "recall")] == pytest.approx(2 / 4.5, abs=1e-12)
    assert values[(*KEY, "1", "recall")] == pytest.approx(1 / 1.5, abs=1e-12)
    macro = (2 / 2.5 + 1 / 3.5) / 2
    assert values[(*KEY, None, "precision_macro")] == pytest.approx(macro, abs=1e-12)
    assert values[(*KEY, None, "recall_micro")] == pytest.approx(3 / 6, abs=1e-12)


def test_balanced_accuracy_excludes_class_never_true(spark: SparkSession) -> None:
    """Mean of TP_j / T_j over T_j > 0: class 3 (predicted, never true) is left out."""
    config = multi_config(["balanced_accuracy", "balanced_error_rate"], num_classes=5)
    got = overall(evaluate(prf_frame(spark), config).metrics)
    balanced = (2 / 3 + 2 / 4 + 0 / 2) / 3
    assert got["balanced_accuracy"] == pytest.approx(balanced, abs=1e-12)
    assert got["balanced_error_rate"] == pytest.approx(1 - balanced, abs=1e-12)


def test_class_with_only_zero_weight_rows_is_in_labels(spark: SparkSession) -> None:
    """L is the classes with n > 0: class 2 occurs once with weight 0, so T_2 = P_2 = 0 and its
    precision, recall and f1 are 0 and count in the macro means (as sklearn's unique_labels);
    balanced_accuracy leaves it out (T_2 = 0)."""
    cells = [(0, 0, 1.0), (1, 1, 1.0), (1, 0, 1.0), (2, 1, 0.0)]
    rows = [([0.6 if j == pred else 0.2 for j in range(3)], y, w) for y, pred, w in cells]
    df = spark.createDataFrame(rows, "p array<double>, y int, w double")
    config = multi_config(["precision", "recall", "f1", "balanced_accuracy"])
    values = metric_values(evaluate(df, config).metrics)
    # T = (1, 2, 0), P = (2, 1, 0), TP = (1, 1, 0).
    assert values[(*KEY, "2", "precision")] == 0.0
    assert values[(*KEY, "2", "recall")] == 0.0
    assert values[(*KEY, "2", "f1")] == 0.0
    precision_macro = (1 / 2 + 1 / 1 + 0.0) / 3
    recall_macro = (1 / 1 + 1 / 2 + 0.0) / 3
    f1_macro = (2 * 1 / (2 + 1 + 0) + 2 * 1 / (2 + 0 + 1) + 0.0) / 3
    assert values[(*KEY, None, "precision_macro")] == pytest.approx(precision_macro, abs=1e-12)
    assert values[(*KEY, None, "recall_macro")] == pytest.approx(recall_macro, abs=1e-12)
    assert values[(*KEY, None, "f1_macro")] == pytest.approx(f1_macro, abs=1e-12)
    assert values[(*KEY, None, "balanced_accuracy")] == pytest.approx((1 + 1 / 2) / 2, abs=1e-12)


def test_binary_balanced_accuracy_all_positive(spark: SparkSession) -> None:
    """All labels 1, one predicted 0: class 0 has T_0 = 0 and is excluded."""
    df = spark.createDataFrame(
        [(0.8, 1, 1.0), (0.3, 1, 1.0), (0.6, 1, 1.0)], "s double, y int, w double"
    )
    got = overall(evaluate(df, binary_config(["balanced_accuracy"])).metrics)
    assert got["balanced_accuracy"] == pytest.approx(2 / 3, abs=1e-12)


def test_binary_balanced_accuracy_weighted(spark: SparkSession) -> None:
    df = spark.createDataFrame(BINARY_ROWS, "s double, y int, w double")
    got = overall(evaluate(df, binary_config(["balanced_accuracy"])).metrics)
    assert got["balanced_accuracy"] == pytest.approx((2 / 4.5 + 1 / 1.5) / 2, abs=1e-12)


# ---------------------------------------------------------------- error rate


def test_top_label_error_rate(spark: SparkSession) -> None:
    rows = [(0.9, True, 1.0), (0.6, False, 2.0), (0.8, True, 1.0), (0.7, False, 0.5)]
    df = spark.createDataFrame(rows, "c double, k boolean, w double")
    config = {
        "task": "top_label",
        "columns": {"confidence": "c", "correct": "k", "weight": "w"},
        "metrics": ["error_rate", "accuracy"],
    }
    got = overall(evaluate(df, config).metrics)
    assert got["error_rate"] == pytest.approx((2.0 + 0.5) / 4.5, abs=1e-12)
    assert got["accuracy"] == pytest.approx((1.0 + 1.0) / 4.5, abs=1e-12)


# ---------------------------------------------------------------- AUCs

AUC_METRICS = ["roc_auc", "pr_auc", "roc_auc_binned", "pr_auc_binned"]
TIED_ROWS = [(0.5, 1), (0.5, 0), (0.5, 0), (0.8, 1)]


def error_bounds(metrics: DataFrame) -> dict[str, float | None]:
    """metric → error_bound for the overall slice's top-label rows."""
    return {
        r.metric: r.error_bound
        for r in metrics.collect()
        if r.slice_name == "overall" and r["class"] is None
    }


def test_auc_with_tied_scores(spark: SparkSession) -> None:
    """P = N = 2. Positive 0.5 vs the two negatives at 0.5: ½ each; positive 0.8 wins both."""
    df = spark.createDataFrame(TIED_ROWS, "s double, y int")
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "metrics": AUC_METRICS,
    }
    metrics = evaluate(df, config).metrics
    got = overall(metrics)
    roc = (0.5 + 0.5 + 1 + 1) / (2 * 2)
    # Distinct scores descending: 0.8 (W⁺ 1, TP 1, FP 0), 0.5 (W⁺ 1, TP 2, FP 2).
    ap = (1 / 2) * (1 / 1) + (1 / 2) * (2 / (2 + 2))
    assert got["roc_auc"] == pytest.approx(roc, abs=1e-12)
    assert got["pr_auc"] == pytest.approx(ap, abs=1e-12)
    # Fine cells: 0.5 → k = 500, logit 0 → j = 593; 0.8 → k = 800, logit log 4 = 1.386 →
    # j = ⌊22.2⌋ + 593 = 615. Each score alone in its cell: binned = exact.
    # Σ_b W⁻_b (TP_{>b} + ½ W⁺_b) / (P N) = 2·(1 + ½·1) / 4.
    assert got["roc_auc_binned"] == pytest.approx(2 * (1 + 0.5 * 1) / 4, abs=1e-12)
    assert got["roc_auc_binned"] == pytest.approx(got["roc_auc"], abs=1e-12)
    assert got["pr_auc_binned"] == pytest.approx(ap, abs=1e-12)
    # error_bound: ½ Σ_b W⁺_b W⁻_b / (P N) = ½·(1·2)/4 (the tie at 0.5, which the exact AUC
    # counts ½ too). PR: Σ_b (W⁺_b / P)(hi_b − lo_b), hi_b = TP≥/(TP≥ + FP>), lo_b = TP>/(TP> +
    # FP≥), lo = 1 when FP≥ = 0: cell 0.8 has hi = 1/(1 + 0) and no negative at or above it, so
    # lo = 1; cell 0.5 has hi = 2/(2 + 0), lo = 1/(1 + 2); each times W⁺/P = ½. Exact metrics
    # have none.
    bounds = error_bounds(metrics)
    assert bounds["roc_auc_binned"] == pytest.approx(0.5 * 1 * 2 / 4, abs=1e-12)
    assert bounds["pr_auc_binned"] == pytest.approx(
        (1 / 2) * (1 - 1) + (1 / 2) * (2 / 2 - 1 / 3), abs=1e-12
    )
    assert bounds["roc_auc"] is None and bounds["pr_auc"] is None


# Distinct scores that share a fine cell: 0.5 and 0.5004 (k = 500, logits 0 and 0.0016, both
# j = 593); 0 and 1e-17 (k = 0, logits −∞ and −39.1, both clipped to −37: the end cell j = 0).
SHARED_CELL = [pytest.param(0.5, 0.5004, id="mid-range"), pytest.param(0.0, 1e-17, id="low-tail")]


@pytest.mark.parametrize(("low", "high"), SHARED_CELL)
def test_auc_binned_merges_scores_in_one_cell(spark: SparkSession, low: float, high: float) -> None:
    """TIED_ROWS with 0.5 → low and 0.8 → high: every score in one cell, so all pairs tie."""
    rows = [(low if s == 0.5 else high, y) for s, y in TIED_ROWS]
    df = spark.createDataFrame(rows, "s double, y int")
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "metrics": AUC_METRICS,
    }
    metrics = evaluate(df, config).metrics
    got = overall(metrics)
    assert got["roc_auc"] == pytest.approx(3 / 4, abs=1e-12)
    assert got["roc_auc_binned"] == pytest.approx(2 * (0 + 0.5 * 2) / (2 * 2), abs=1e-12)
    assert got["pr_auc_binned"] == pytest.approx((2 / 2) * (2 / (2 + 2)), abs=1e-12)
    # The spec's bound: |binned − exact| ≤ ½ Σ_b W⁺_b W⁻_b / (P N) = ½·2·2/4, reported as the
    # row's error_bound; PR: one cell with hi = 2/(2 + 0) and lo = 0/(0 + 2), times W⁺/P = 1.
    bounds = error_bounds(metrics)
    assert bounds["roc_auc_binned"] == pytest.approx(0.5 * 2 * 2 / 4, abs=1e-12)
    assert abs(got["roc_auc_binned"] - got["roc_auc"]) <= bounds["roc_auc_binned"] + 1e-12
    assert bounds["pr_auc_binned"] == pytest.approx(1.0 * (2 / 2 - 0 / 2), abs=1e-12)
    assert abs(got["pr_auc_binned"] - got["pr_auc"]) <= bounds["pr_auc_binned"] + 1e-12


def test_pr_auc_binned_walks_a_cell_of_distinct_scores(spark: SparkSession) -> None:
    """0.8 (positive) alone in its cell; 0.5004 (positive) and 0.5 (negative) share the cell
    k = 500, j = 593 but differ, so the cell is walked with its labels spread evenly:
    A = TP above = 1, B = TP + FP above = 1, m = W⁺ = 1, k = W⁺ + W⁻ = 2, π = ∫₀¹ (1 + x)/(1 + 2x)
    dx = ½ + ¼·ln 3 (= (A/B)·L + (m/k)(1 − L) with L = ln 3 / 2). The exact AP is 1 (both
    positives rank above the negative), within the bound ½·(hi − lo) = ½·(2/2 − 1/2)."""
    rows = [(0.8, 1), (0.5004, 1), (0.5, 0)]
    df = spark.createDataFrame(rows, "s double, y int")
    config = {"task": "binary", "columns": {"score": "s", "label": "y"}, "metrics": AUC_METRICS}
    metrics = evaluate(df, config).metrics
    got = overall(metrics)
    walked = 0.5 + 0.25 * math.log(3.0)
    assert got["pr_auc_binned"] == pytest.approx(0.5 * 1.0 + 0.5 * walked, abs=1e-12)
    assert got["pr_auc"] == pytest.approx(1.0, abs=1e-12)
    bound = error_bounds(metrics)["pr_auc_binned"]
    assert bound == pytest.approx(0.5 * (1.0 - 0.5), abs=1e-12)
    assert abs(got["pr_auc_binned"] - got["pr_auc"]) <= bound


def test_pr_auc_binned_counts_every_cell_as_a_tie_without_its_score_squares(
    spark: SparkSession,
) -> None:
    """Statistics without Σw·s² (a table written before it) cannot tell a tie from a spread
    cell: the walked cell of the case above counts at its bottom's precision, (1 + 1)/(1 + 2)."""
    rows = [(0.8, 1), (0.5004, 1), (0.5, 0)]
    df = spark.createDataFrame(rows, "s double, y int")
    config = {"task": "binary", "columns": {"score": "s", "label": "y"}, "metrics": AUC_METRICS}
    stats_df = evaluate(df, config).stats.withColumn(
        "sum_weight_confidence_sq", F.lit(None).cast("double")
    )
    got = overall(metrics_from_stats(stats_df, {**config, "metrics": ["pr_auc_binned"]}))
    assert got["pr_auc_binned"] == pytest.approx(0.5 * 1.0 + 0.5 * (2.0 / 3.0), abs=1e-12)


def test_auc_binned_separates_scores_across_a_cell_edge(spark: SparkSession) -> None:
    """0.4999 and 0.5 are 1e-4 apart but on either side of the k/1000 edge 0.5 (k = 499 and
    500): separate cells, so binned = exact and both bounds are 0: the top cell (0.5, W⁺ 2)
    has no negative at or above it, so lo = hi = 1; the 0.4999 cell has no positive."""
    rows = [(0.4999, 0), (0.5, 1), (0.4999, 0), (0.5, 1)]
    df = spark.createDataFrame(rows, "s double, y int")
    config = {"task": "binary", "columns": {"score": "s", "label": "y"}, "metrics": AUC_METRICS}
    metrics = evaluate(df, config).metrics
    got = overall(metrics)
    assert got["roc_auc"] == pytest.approx(1.0, abs=1e-12)
    assert got["roc_auc_binned"] == pytest.approx(1.0, abs=1e-12)
    assert got["pr_auc_binned"] == pytest.approx(1.0, abs=1e-12)
    bounds = error_bounds(metrics)
    assert bounds["roc_auc_binned"] == 0.0
    assert bounds["pr_auc_binned"] == 0.0


def test_weighted_auc_with_ties(spark: SparkSession) -> None:
    """Weights 2, 1, 3, 1: P = 3, N = 4."""
    rows = [(s, y, w) for (s, y), w in zip(TIED_ROWS, [2.0, 1.0, 3.0, 1.0], strict=True)]
    df = spark.createDataFrame(rows, "s double, y int, w double")
    config = binary_config(AUC_METRICS)
    got = overall(evaluate(df, config).metrics)
    # Pairs: positive 0.5 (w 2) ties negatives 0.5 (w 1 + 3): ½·2·4; positive 0.8 (w 1) wins: 1·4.
    roc = (0.5 * 2 * 4 + 1 * 4) / (3 * 4)
    ap = (1 / 3) * (1 / 1) + (2 / 3) * (3 / (3 + 4))
    assert got["roc_auc"] == pytest.approx(roc, abs=1e-12)
    assert got["pr_auc"] == pytest.approx(ap, abs=1e-12)
    assert got["roc_auc_binned"] == pytest.approx(roc, abs=1e-12)
    assert got["pr_auc_binned"] == pytest.approx(ap, abs=1e-12)


def test_auc_single_class_slices(spark: SparkSession) -> None:
    """roc_auc is null when P = 0 or N = 0; pr_auc only when P = 0 (all positives → AP = 1)."""
    rows = [(0.9, 1, "pos"), (0.4, 1, "pos"), (0.3, 0, "neg"), (0.6, 0, "neg")]
    df = spark.createDataFrame(rows, "s double, y int, g string")
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "slices": [[], ["g"]],
        "metrics": [*AUC_METRICS, "count"],
    }
    values = metric_values(evaluate(df, config).metrics)
    pos = (None, "g", "pos", None)
    neg = (None, "g", "neg", None)
    assert values[(*pos, "roc_auc")] is None
    assert values[(*pos, "roc_auc_binned")] is None
    # Every precision is 1 when there are no negatives.
    assert values[(*pos, "pr_auc")] == pytest.approx((1 / 2) * 1 + (1 / 2) * 1, abs=1e-12)
    assert values[(*pos, "pr_auc_binned")] == pytest.approx(1.0, abs=1e-12)
    for metric in AUC_METRICS:
        assert values[(*neg, metric)] is None, metric
    assert values[(*neg, "count")] == 2.0
    # Overall: pairs 0.9>0.3, 0.9>0.6, 0.4>0.3, 0.4<0.6.
    assert values[(*KEY, None, "roc_auc")] == pytest.approx(3 / 4, abs=1e-12)
    # Descending 0.9 (+, precision 1/1), 0.6 (−), 0.4 (+, precision 2/3), 0.3 (−).
    ap = (1 / 2) * (1 / 1) + (1 / 2) * (2 / 3)
    assert values[(*KEY, None, "pr_auc")] == pytest.approx(ap, abs=1e-12)


def test_roc_curve_points(spark: SparkSession) -> None:
    """Non-empty cells of 0.8 and 0.5, descending, after the origin. A point's threshold is its
    cell's lower edge max(k/1000, σ((j − 593)/16)): 0.8 → max(0.8, σ(22/16) = 0.798) = 0.8,
    0.5 → max(0.5, σ(0) = 0.5) = 0.5 (both scores sit on a k/1000 edge)."""
    df = spark.createDataFrame(TIED_ROWS, "s double, y int")
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "metrics": ["roc_curve"],
    }
    roc = sorted(evaluate(df, config).roc.collect(), key=lambda r: r.point)
    assert [r.point for r in roc] == [0, 1, 2]
    assert (roc[0].threshold, roc[0].fpr, roc[0].tpr) == (None, 0.0, 0.0)
    assert roc[1].threshold == pytest.approx(max(800 / 1000, 1 / (1 + math.exp(-22 / 16))))
    assert roc[1].threshold == pytest.approx(0.8, abs=1e-12)
    assert (roc[1].fpr, roc[1].tpr) == pytest.approx((0 / 2, 1 / 2), abs=1e-12)
    assert roc[1].precision == pytest.approx(1 / 1, abs=1e-12)
    assert roc[2].threshold == pytest.approx(5 / 10, abs=1e-12)
    assert (roc[2].fpr, roc[2].tpr) == pytest.approx((2 / 2, 2 / 2), abs=1e-12)
    assert roc[2].precision == pytest.approx(2 / 4, abs=1e-12)


def test_roc_curve_threshold_is_the_log_odds_edge_in_the_tails(spark: SparkSession) -> None:
    """Where the log-odds cells are finer than 0.001, the lower edge is σ((j − 593)/16):
    s = 0.0037 → logit −5.596, j = ⌊−89.5⌋ + 593 = 503, edge σ(−90/16) = 0.0035936 > 3/1000;
    s = 0.9 → logit 2.197, j = ⌊35.2⌋ + 593 = 628, edge σ(35/16) = 0.8991 < 900/1000 → 0.9;
    s = 0 and s = 1e-17 share the clipped end cell (k = 0, j = 0): edge 0."""
    rows = [(0.9, 1), (0.0037, 1), (0.0037, 0), (1e-17, 0), (0.0, 1)]
    df = spark.createDataFrame(rows, "s double, y int")
    config = {"task": "binary", "columns": {"score": "s", "label": "y"}, "metrics": ["roc_curve"]}
    roc = sorted(evaluate(df, config).roc.collect(), key=lambda r: r.point)
    assert [r.point for r in roc] == [0, 1, 2, 3]
    got = [(r.threshold, r.fpr, r.tpr) for r in roc[1:]]
    # P = 3, N = 2; cumulative from the top: {0.9}, {0.9, 0.0037 ×2}, everything.
    want = [
        (0.9, 0 / 2, 1 / 3),
        (1 / (1 + math.exp(90 / 16)), 1 / 2, 2 / 3),
        (0.0, 2 / 2, 3 / 3),
    ]
    assert want[1][0] == pytest.approx(0.0035936, abs=1e-7)  # the log-odds edge, not 3/1000
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w, abs=1e-12)


# One score per cell, the k/1000 edges s_b = (100 b + 50)/1000 for b = 0..9 (each its own cell's
# lower edge: no log-odds edge lies between k/1000 and s_b = k/1000); labels by cell; P = 6, N = 4.
STAIR_LABELS = [0, 1, 0, 1, 0, 1, 0, 1, 1, 1]
STAIR_SCORES = [(100 * b + 50) / 1000 for b in range(10)]


def _stair_curve() -> list[tuple[float, float, float, float]]:
    """(threshold, fpr, tpr, precision) at each cell's lower edge s_b, descending."""
    points = []
    for b in range(9, -1, -1):
        tp = sum(STAIR_LABELS[b:])
        fp = len(STAIR_LABELS[b:]) - tp
        points.append((STAIR_SCORES[b], fp / 4, tp / 6, tp / (tp + fp)))
    return points


def test_roc_curve_full_and_thinned(spark: SparkSession) -> None:
    rows = list(zip(STAIR_SCORES, STAIR_LABELS, strict=True))
    df = spark.createDataFrame(rows, "s double, y int")
    full = _stair_curve()
    for roc_points in [200, 11, 6, 4, 3, 2]:
        config = {
            "task": "binary",
            "columns": {"score": "s", "label": "y"},
            "metrics": ["roc_curve"],
            "roc_points": roc_points,
        }
        roc = sorted(evaluate(df, config).roc.collect(), key=lambda r: r.point)
        assert [r.point for r in roc] == list(range(len(roc)))
        assert (roc[0].threshold, roc[0].fpr, roc[0].tpr) == (None, 0.0, 0.0)
        got = [(r.threshold, r.fpr, r.tpr, r.precision) for r in roc[1:]]
        if roc_points >= 11:  # every one of the 10 non-empty cells, plus the origin
            assert len(got) == len(full)
            for p, f in zip(got, full, strict=True):
                assert p == pytest.approx(f, abs=1e-12)
            continue
        assert len(roc) <= roc_points
        assert len(got) >= 1
        # A subset of the full curve, in descending threshold, always ending at (1, 1).
        index = {round(t, 9): i for i, (t, *_) in enumerate(full)}
        positions = [index[round(p[0], 9)] for p in got]
        assert positions == sorted(set(positions))
        for p, i in zip(got, positions, strict=True):
            assert p == pytest.approx(full[i], abs=1e-12)
        assert got[-1] == pytest.approx((0.05, 1.0, 1.0, 6 / 10), abs=1e-12)


# ---------------------------------------------------------------- threshold table

# (s, y, w); 0.5 and 0.7 are both scores and thresholds: s ≥ t is positive.
THRESHOLD_ROWS = [(0.9, 1, 1.0), (0.7, 0, 2.0), (0.5, 1, 1.0), (0.3, 0, 1.0), (0.6, 1, 0.5)]


def test_threshold_metrics_table(spark: SparkSession) -> None:
    df = spark.createDataFrame(THRESHOLD_ROWS, "s double, y int, w double")
    config = binary_config(["threshold_metrics"], thresholds=[0.5, 0.7, 1.0])
    table = {r.threshold: r for r in evaluate(df, config).thresholds.collect()}
    assert sorted(table) == [0.5, 0.7, 1.0]
    for row in table.values():
        assert (row.model_version, row.slice_name, row.slice_value) == KEY
        assert row.n == 5
        assert row.weight_sum == pytest.approx(1.0 + 2.0 + 1.0 + 1.0 + 0.5, abs=1e-12)
    # t = 0.5: positive 0.9 (y1), 0.7 (y0), 0.5 (y1), 0.6 (y1); negative 0.3 (y0).
    t = table[0.5]
    assert (t.tp, t.fp, t.tn, t.fn) == pytest.approx((1.0 + 1.0 + 0.5, 2.0, 1.0, 0.0), abs=1e-12)
    assert t.tpr == pytest.approx(2.5 / (2.5 + 0), abs=1e-12)
    assert t.fpr == pytest.approx(2 / (2 + 1), abs=1e-12)
    assert t.precision == pytest.approx(2.5 / (2.5 + 2), abs=1e-12)
    assert t.recall == pytest.approx(t.tpr, abs=1e-12)
    # t = 0.7: positive 0.9 (y1), 0.7 (y0); negative 0.5 (y1), 0.3 (y0), 0.6 (y1).
    t = table[0.7]
    assert (t.tp, t.fp, t.tn, t.fn) == pytest.approx((1.0, 2.0, 1.0, 1.0 + 0.5), abs=1e-12)
    assert t.tpr == pytest.approx(1 / (1 + 1.5), abs=1e-12)
    assert t.fpr == pytest.approx(2 / (2 + 1), abs=1e-12)
    assert t.precision == pytest.approx(1 / (1 + 2), abs=1e-12)
    # t = 1.0: nothing predicted positive; precision 0/0 → 0.
    t = table[1.0]
    assert (t.tp, t.fp, t.tn, t.fn) == pytest.approx((0.0, 0.0, 3.0, 2.5), abs=1e-12)
    assert (t.tpr, t.fpr, t.precision) == (0.0, 0.0, 0.0)


def test_threshold_metrics_default_and_null_rates(spark: SparkSession) -> None:
    """Default thresholds [0.5]; with no positives tpr = recall = 0/0 = null."""
    df = spark.createDataFrame([(0.7, 0), (0.2, 0)], "s double, y int")
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "metrics": ["threshold_metrics"],
    }
    rows = evaluate(df, config).thresholds.collect()
    assert len(rows) == 1
    t = rows[0]
    assert t.threshold == 0.5
    assert (t.tp, t.fp, t.tn, t.fn) == (0.0, 1.0, 1.0, 0.0)
    assert (t.tpr, t.recall) == (None, None)
    assert t.fpr == pytest.approx(1 / 2, abs=1e-12)
    assert t.precision == 0.0


def test_threshold_metrics_per_model_version_and_slice(spark: SparkSession) -> None:
    rows = [
        (0.9, 1, "a", "x"),
        (0.4, 1, "a", "x"),
        (0.6, 0, "a", "y"),
        (0.8, 0, "b", "x"),
    ]
    df = spark.createDataFrame(rows, "s double, y int, mv string, g string")
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "model_version": "mv"},
        "slices": [[], ["g"]],
        "metrics": ["threshold_metrics"],
        "thresholds": [0.5],
    }
    table = {
        (r.model_version, r.slice_name, r.slice_value): (r.n, r.tp, r.fp, r.tn, r.fn)
        for r in evaluate(df, config).thresholds.collect()
    }
    assert table == {
        ("a", "overall", ""): (3, 1.0, 1.0, 0.0, 1.0),
        ("a", "g", "x"): (2, 1.0, 0.0, 0.0, 1.0),
        ("a", "g", "y"): (1, 0.0, 1.0, 0.0, 0.0),
        ("b", "overall", ""): (1, 0.0, 1.0, 0.0, 0.0),
        ("b", "g", "x"): (1, 0.0, 1.0, 0.0, 0.0),
    }


# ---------------------------------------------------------------- confusion table


def test_confusion_table_with_names(spark: SparkSession) -> None:
    """Cells with n > 0 only, names as class labels; a zero-weight row still makes a cell."""
    rows = [
        ([0.7, 0.2, 0.1], "cat", 1.0),
        ([0.6, 0.3, 0.1], "cat", 2.0),
        ([0.1, 0.3, 0.6], "dog", 1.5),
        ([0.2, 0.5, 0.3], "dog", 1.0),
        ([0.5, 0.4, 0.1], "bird", 0.0),
    ]
    df = spark.createDataFrame(rows, "p array<double>, y string, w double")
    config = multi_config(["confusion_matrix"], class_names=NAMES)
    cells = {
        (r.true_class, r.predicted_class): (r.n, r.weight_sum)
        for r in evaluate(df, config).confusion.collect()
    }
    assert cells == {
        ("cat", "cat"): (2, 1.0 + 2.0),
        ("dog", "bird"): (1, 1.5),
        ("dog", "dog"): (1, 1.0),
        ("bird", "cat"): (1, 0.0),
    }


def test_confusion_table_by_index_and_slice(spark: SparkSession) -> None:
    rows = [(_probs(pred), y, w, "a" if i < 5 else "b") for i, (y, pred, w) in enumerate(PRF_CELLS)]
    df = spark.createDataFrame(rows, "p array<double>, y int, w double, g string")
    config = multi_config(["confusion_matrix"], num_classes=5, slices=[[], ["g"]])
    cells = {
        (r.slice_name, r.slice_value, r.true_class, r.predicted_class): (r.n, r.weight_sum)
        for r in evaluate(df, config).confusion.collect()
    }
    assert cells == {
        ("overall", "", "0", "0"): (2, 2.0),
        ("overall", "", "0", "1"): (1, 1.0),
        ("overall", "", "1", "1"): (1, 2.0),
        ("overall", "", "1", "0"): (1, 1.0),
        ("overall", "", "2", "0"): (1, 1.0),
        ("overall", "", "2", "1"): (1, 1.0),
        ("overall", "", "1", "3"): (1, 1.0),
        # g = a: the first five cells; g = b: the last three.
        ("g", "a", "0", "0"): (2, 2.0),
        ("g", "a", "0", "1"): (1, 1.0),
        ("g", "a", "1", "1"): (1, 2.0),
        ("g", "a", "1", "0"): (1, 1.0),
        ("g", "b", "2", "0"): (1, 1.0),
        ("g", "b", "2", "1"): (1, 1.0),
        ("g", "b", "1", "3"): (1, 1.0),
    }


def test_new_outputs_are_none_when_not_requested(spark: SparkSession) -> None:
    df = spark.createDataFrame(TIED_ROWS, "s double, y int")
    result = evaluate(df, {"task": "binary", "columns": {"score": "s", "label": "y"}})
    assert (result.confusion, result.thresholds, result.roc) == (None, None, None)
    assert result.regression_calibration is None
