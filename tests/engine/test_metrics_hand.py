"""Hand-computed cases: every expected value is written as arithmetic from the definitions."""

from __future__ import annotations

import math

import pytest
from pyspark.sql import SparkSession

from spark_calib import evaluate
from tests.support.frames import metric_values, overall

ALL_BINARY = ["ece", "mce", "rmsce", "brier", "nll", "accuracy", "count", "classwise_ece"]
# (s, y). Positive-class view (the default): calibration pairs (c, o) = (s, y).
# Top-label view: predictions 1, 0, 1, 1; confidences 0.9, 0.8, 0.6, 0.5; correct 1, 1, 0, 1.
BINARY_ROWS = [(0.9, 1), (0.2, 0), (0.6, 0), (0.5, 1)]


def binary_config(**extra: object) -> dict:
    return {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "binning": {"n_bins": 5},
        "metrics": ALL_BINARY,
        **extra,
    }


def _assert_scores_unchanged(got: dict) -> None:
    """brier, nll and accuracy do not depend on the calibration view."""
    assert got["brier"] == pytest.approx((0.1**2 + 0.2**2 + 0.6**2 + 0.5**2) / 4, abs=1e-12)
    expected_nll = -(math.log(0.9) + math.log(0.8) + math.log(0.4) + math.log(0.5)) / 4
    assert got["nll"] == pytest.approx(expected_nll, abs=1e-12)
    assert got["accuracy"] == pytest.approx(3 / 4, abs=1e-12)
    assert got["count"] == 4.0


def test_binary_left_closed(spark: SparkSession) -> None:
    """Positive class, M=5 left-closed on s: 0.2→bin 1 (on the edge 1/5), 0.5→bin 2,
    0.6→bin 3 (on the edge 3/5), 0.9→bin 4."""
    df = spark.createDataFrame(BINARY_ROWS, "s double, y int")
    got = overall(evaluate(df, binary_config()).metrics)
    # Bin gaps S_b = Σ(y − s): bin1 = 0−0.2, bin2 = 1−0.5, bin3 = 0−0.6, bin4 = 1−0.9.
    assert got["ece"] == pytest.approx((0.2 + 0.5 + 0.6 + 0.1) / 4, abs=1e-12)
    assert got["mce"] == pytest.approx(0.6, abs=1e-12)
    assert got["rmsce"] == pytest.approx(
        math.sqrt((0.2**2 + 0.5**2 + 0.6**2 + 0.1**2) / 4), abs=1e-12
    )
    _assert_scores_unchanged(got)


def test_binary_top_label_view_left_closed(spark: SparkSession) -> None:
    """binary_view top_label, M=5 left-closed on max(s, 1−s): 0.5→bin 2, 0.6→bin 3 (on the
    edge 3/5), 0.8→bin 4 (edge), 0.9→bin 4."""
    df = spark.createDataFrame(BINARY_ROWS, "s double, y int")
    got = overall(evaluate(df, binary_config(binary_view="top_label")).metrics)
    # Bin gaps S_b = Σ(correct − conf): bin2 = 1−0.5, bin3 = 0−0.6, bin4 = (1−0.9)+(1−0.8).
    assert got["ece"] == pytest.approx((0.5 + 0.6 + 0.3) / 4, abs=1e-12)
    assert got["mce"] == pytest.approx(0.6, abs=1e-12)
    assert got["rmsce"] == pytest.approx(math.sqrt((0.5**2 + 0.6**2 + 0.3**2 / 2) / 4), abs=1e-12)
    _assert_scores_unchanged(got)


def test_binary_right_closed(spark: SparkSession) -> None:
    """Positive class, M=5 right-closed on s: 0.2 (edge) → bin 0, 0.5 and 0.6 (edge) → bin 2,
    0.9 → bin 4."""
    df = spark.createDataFrame(BINARY_ROWS, "s double, y int")
    got = overall(
        evaluate(df, binary_config(binning={"n_bins": 5, "edges": "right_closed"})).metrics
    )
    # bin0 = 0−0.2; bin2 = (0−0.6)+(1−0.5) = −0.1 over W=2; bin4 = 1−0.9.
    assert got["ece"] == pytest.approx((0.2 + 0.1 + 0.1) / 4, abs=1e-12)
    assert got["mce"] == pytest.approx(max(0.2, 0.1 / 2, 0.1), abs=1e-12)


def test_binary_top_label_view_right_closed(spark: SparkSession) -> None:
    """binary_view top_label, M=5 right-closed on max(s, 1−s): 0.5 and 0.6 (edge) → bin 2,
    0.8 (edge) → bin 3, 0.9 → bin 4."""
    df = spark.createDataFrame(BINARY_ROWS, "s double, y int")
    config = binary_config(binning={"n_bins": 5, "edges": "right_closed"}, binary_view="top_label")
    got = overall(evaluate(df, config).metrics)
    # bin2 = (0−0.6)+(1−0.5) = −0.1 over W=2; bin3 = 1−0.8; bin4 = 1−0.9.
    assert got["ece"] == pytest.approx((0.1 + 0.2 + 0.1) / 4, abs=1e-12)
    assert got["mce"] == pytest.approx(max(0.1 / 2, 0.2, 0.1), abs=1e-12)


def test_binary_classwise(spark: SparkSession) -> None:
    """Class 1 uses (s, [y=1]), class 0 uses (1−s, [y=0]); the macro row averages them. The
    positive-class ECE is the class-1 row (same bins on s against [y=1])."""
    df = spark.createDataFrame(BINARY_ROWS, "s double, y int")
    values = metric_values(evaluate(df, binary_config()).metrics)
    # class 1: s = 0.9→bin4 (1), 0.2→bin1 (0), 0.6→bin3 (0), 0.5→bin2 (1).
    class1 = (0.1 + 0.2 + 0.6 + 0.5) / 4
    # class 0: 1−s = 0.1→bin0 (0), 0.8→bin4 (1), 0.4→bin2 (1), 0.5→bin2 (0): bin2 = 0.6−0.5.
    class0 = (0.1 + 0.2 + 0.1) / 4
    key = (None, "overall", "")
    assert values[(*key, "1", "classwise_ece")] == pytest.approx(class1, abs=1e-12)
    assert values[(*key, "0", "classwise_ece")] == pytest.approx(class0, abs=1e-12)
    assert values[(*key, None, "classwise_ece")] == pytest.approx((class0 + class1) / 2, abs=1e-12)
    assert values[(*key, None, "ece")] == pytest.approx(class1, abs=1e-12)


def test_weights_and_zero_weight_bin(spark: SparkSession) -> None:
    """Weights 1, 2, 0, 1: the zero-weight row's bin has n=1, W_b=0, null means, no MCE term."""
    rows = [(s, y, w) for (s, y), w in zip(BINARY_ROWS, [1.0, 2.0, 0.0, 1.0], strict=True)]
    df = spark.createDataFrame(rows, "s double, y int, w double")
    config = binary_config(columns={"score": "s", "label": "y", "weight": "w"})
    result = evaluate(df, config)
    got = overall(result.metrics)
    # Positive class: bin1: 2·(0−0.2); bin2: 1·(1−0.5); bin3: 0·(0−0.6); bin4: 1·(1−0.9); W = 4.
    assert got["ece"] == pytest.approx((0.4 + 0.5 + 0.0 + 0.1) / 4, abs=1e-12)
    assert got["mce"] == pytest.approx(max(0.4 / 2, 0.5 / 1, 0.1 / 1), abs=1e-12)
    assert got["rmsce"] == pytest.approx(
        math.sqrt((0.4**2 / 2 + 0.5**2 / 1 + 0.1**2 / 1) / 4), abs=1e-12
    )
    assert got["brier"] == pytest.approx((0.01 + 2 * 0.04 + 0 * 0.36 + 0.25) / 4, abs=1e-12)
    assert got["accuracy"] == pytest.approx((1 + 2 + 0 + 1) / 4, abs=1e-12)
    bin3 = result.reliability.where("class is null and bin = 3").collect()[0]
    assert (bin3.n, bin3.weight_sum, bin3.mean_confidence, bin3.accuracy) == (1, 0.0, None, None)


def test_all_weights_zero_gives_null_values(spark: SparkSession) -> None:
    """W = 0: every ratio is undefined, so values are null while count still reports n."""
    df = spark.createDataFrame([(0.7, 1, 0.0), (0.2, 0, 0.0)], "s double, y int, w double")
    config = binary_config(columns={"score": "s", "label": "y", "weight": "w"})
    got = overall(evaluate(df, config).metrics)
    assert got["count"] == 2.0
    assert all(got[name] is None for name in ["ece", "mce", "rmsce", "brier", "nll", "accuracy"])


def _reliability(spark: SparkSession, **extra: object) -> dict:
    df = spark.createDataFrame(BINARY_ROWS, "s double, y int")
    result = evaluate(df, binary_config(**extra))
    rows = {r.bin: r for r in result.reliability.where("class is null").collect()}
    assert sorted(rows) == [0, 1, 2, 3, 4]
    assert [(rows[b].bin_lower, rows[b].bin_upper) for b in range(5)] == [
        (b / 5, (b + 1) / 5) for b in range(5)
    ]
    assert (rows[0].n, rows[0].mean_confidence, rows[0].accuracy, rows[0].gap) == (
        0,
        None,
        None,
        None,
    )
    return rows


def test_reliability_bins_and_empty_bins(spark: SparkSession) -> None:
    """All M bins are emitted, edges are b/M and (b+1)/M, empty bins have n=0 and null means.
    Positive class: mean_confidence is the mean s, accuracy the rate of y = 1."""
    rows = _reliability(spark)
    # s = 0.2 (y 0) → bin 1, 0.5 (y 1) → bin 2, 0.6 (y 0) → bin 3, 0.9 (y 1) → bin 4.
    expected = {1: (0.2, 0.0), 2: (0.5, 1.0), 3: (0.6, 0.0), 4: (0.9, 1.0)}
    for b, (confidence, rate) in expected.items():
        assert rows[b].n == 1
        assert rows[b].weight_sum == 1.0
        assert rows[b].mean_confidence == pytest.approx(confidence, abs=1e-12)
        assert rows[b].accuracy == rate
        assert rows[b].gap == pytest.approx(rate - confidence, abs=1e-12)


def test_reliability_bins_top_label_view(spark: SparkSession) -> None:
    """binary_view top_label: confidences 0.9, 0.8 (both correct) share bin 4, 0.6 (wrong) is
    in bin 3, 0.5 (correct) in bin 2; bins 0 and 1 are empty."""
    rows = _reliability(spark, binary_view="top_label")
    assert rows[1].n == 0
    assert rows[4].n == 2
    assert rows[4].mean_confidence == pytest.approx((0.9 + 0.8) / 2, abs=1e-12)
    assert rows[4].accuracy == 1.0
    assert rows[4].gap == pytest.approx(1.0 - 0.85, abs=1e-12)
    assert (rows[3].n, rows[3].accuracy) == (1, 0.0)
    assert rows[3].mean_confidence == pytest.approx(0.6, abs=1e-12)


def test_one_row_slice_and_model_versions(spark: SparkSession) -> None:
    """A one-row slice gets its own metrics; model versions are never mixed."""
    rows = [(0.9, 1, "US", "a"), (0.2, 0, "US", "a"), (0.3, 1, "FR", "a"), (0.6, 0, "US", "b")]
    df = spark.createDataFrame(rows, "s double, y int, country string, mv string")
    config = binary_config(
        columns={"score": "s", "label": "y", "model_version": "mv"},
        slices=[[], ["country"]],
        metrics=["ece", "mce", "rmsce", "count"],
    )
    values = metric_values(evaluate(df, config).metrics)
    # FR: s=0.3, y=1 → one bin with gap 1 − 0.3 = 0.7 (positive class: c = s, o = y).
    for metric in ["ece", "mce", "rmsce"]:
        assert values[("a", "country", "FR", None, metric)] == pytest.approx(0.7, abs=1e-12)
    assert values[("a", "country", "FR", None, "count")] == 1.0
    assert values[("a", "overall", "", None, "count")] == 3.0
    # v "b" holds only s=0.6, y=0: gap 0 − 0.6.
    assert values[("b", "overall", "", None, "ece")] == pytest.approx(0.6, abs=1e-12)
    assert ("a", "country", "US", None, "count") in values
    assert values[("a", "country", "US", None, "count")] == 2.0


MULTICLASS_ROWS = [
    ([0.4, 0.4, 0.2], "dog"),  # tie: first argmax is class 0 (cat), so wrong
    ([0.1, 0.7, 0.2], "dog"),
    ([0.2, 0.2, 0.6], "cat"),
]


def test_multiclass_string_labels_ties_and_classwise(spark: SparkSession) -> None:
    """K=3 with class_names: argmax ties go to the lowest index; class rows carry the names."""
    df = spark.createDataFrame(MULTICLASS_ROWS, "p array<double>, y string")
    config = {
        "task": "multiclass",
        "columns": {"probs": "p", "label": "y"},
        "class_names": ["cat", "dog", "bird"],
        "binning": {"n_bins": 10},
        "metrics": ["ece", "brier", "nll", "accuracy", "classwise_ece"],
    }
    values = metric_values(evaluate(df, config).metrics)
    key = (None, "overall", "")
    # Confidences 0.4 (wrong), 0.7 (right), 0.6 (wrong) in bins 4, 7, 6.
    assert values[(*key, None, "ece")] == pytest.approx((0.4 + 0.3 + 0.6) / 3, abs=1e-12)
    assert values[(*key, None, "accuracy")] == pytest.approx(1 / 3, abs=1e-12)
    brier = (0.4**2 + 0.6**2 + 0.2**2) + (0.1**2 + 0.3**2 + 0.2**2) + (0.8**2 + 0.2**2 + 0.6**2)
    assert values[(*key, None, "brier")] == pytest.approx(brier / 3, abs=1e-12)
    nll = -(math.log(0.4) + math.log(0.7) + math.log(0.2)) / 3
    assert values[(*key, None, "nll")] == pytest.approx(nll, abs=1e-12)
    # cat: p0 = 0.4 (y≠cat), 0.1 (≠), 0.2 (=) in bins 4, 1, 2.
    cat = (0.4 + 0.1 + 0.8) / 3
    # dog: p1 = 0.4 (=), 0.7 (=), 0.2 (≠) in bins 4, 7, 2.
    dog = (0.6 + 0.3 + 0.2) / 3
    # bird: p2 = 0.2, 0.2 (both ≠, bin 2), 0.6 (≠, bin 6).
    bird = (0.4 + 0.6) / 3
    assert values[(*key, "cat", "classwise_ece")] == pytest.approx(cat, abs=1e-12)
    assert values[(*key, "dog", "classwise_ece")] == pytest.approx(dog, abs=1e-12)
    assert values[(*key, "bird", "classwise_ece")] == pytest.approx(bird, abs=1e-12)
    macro = (cat + dog + bird) / 3
    assert values[(*key, None, "classwise_ece")] == pytest.approx(macro, abs=1e-12)


def test_top_label_quality_threshold_is_strict(spark: SparkSession) -> None:
    """correct = quality > τ: a quality exactly at τ = 0.5 counts as wrong."""
    df = spark.createDataFrame([(0.8, 0.5), (0.8, 0.9), (0.3, 0.1)], "c double, q double")
    config = {
        "task": "top_label",
        "columns": {"confidence": "c", "quality": "q"},
        "quality_threshold": 0.5,
        "binning": {"n_bins": 10},
    }
    got = overall(evaluate(df, config).metrics)
    assert got["accuracy"] == pytest.approx(1 / 3, abs=1e-12)
    # bin 8: (0−0.8)+(1−0.8); bin 3: 0−0.3.
    assert got["ece"] == pytest.approx((0.6 + 0.3) / 3, abs=1e-12)
    assert got["brier"] == pytest.approx((0.8**2 + 0.2**2 + 0.3**2) / 3, abs=1e-12)
    assert "nll" not in got


def test_top_label_prediction_equals_label(spark: SparkSession) -> None:
    """correct = prediction == label, for string classes."""
    rows = [(0.9, "cat", "cat"), (0.6, "dog", "cat"), (0.7, "dog", "dog")]
    df = spark.createDataFrame(rows, "c double, pred string, y string")
    config = {
        "task": "top_label",
        "columns": {"confidence": "c", "prediction": "pred", "label": "y"},
        "binning": {"n_bins": 10},
    }
    got = overall(evaluate(df, config).metrics)
    assert got["accuracy"] == pytest.approx(2 / 3, abs=1e-12)
    assert got["ece"] == pytest.approx((0.1 + 0.6 + 0.3) / 3, abs=1e-12)


@pytest.mark.parametrize("element", ["float", "double"])
def test_multiclass_probs_of_any_numeric_element(spark: SparkSession, element: str) -> None:
    """array<float> is cast element-wise and array<double> read as it is: the same values
    (dyadic probabilities, exact in both). Confidences 0.5 (right), 0.75 (right), 0.5
    (wrong: argmax 0)."""
    rows = [([0.25, 0.5, 0.25], 1), ([0.125, 0.125, 0.75], 2), ([0.5, 0.25, 0.25], 1)]
    df = spark.createDataFrame(rows, f"p array<{element}>, y int")
    config = {"task": "multiclass", "columns": {"probs": "p", "label": "y"}, "num_classes": 3}
    got = overall(evaluate(df, config).metrics)
    assert got["accuracy"] == pytest.approx(2 / 3, abs=1e-12)
    assert got["nll"] == pytest.approx(-(math.log(0.5) + math.log(0.75) + math.log(0.25)) / 3)


@pytest.mark.parametrize("element", ["int", "double"])
def test_multiclass_logits_of_any_numeric_element(spark: SparkSession, element: str) -> None:
    """Logits [0, 1, 0] (y = 1, right) and [2, 0, 0] (y = 1, wrong): NLL = logsumexp − z_y."""
    rows = [([0, 1, 0], 1), ([2, 0, 0], 1)]
    df = spark.createDataFrame(rows, "z array<int>, y int").selectExpr(
        f"cast(z as array<{element}>) as z", "y"
    )
    config = {"task": "multiclass", "columns": {"logits": "z", "label": "y"}, "num_classes": 3}
    got = overall(evaluate(df, config).metrics)
    assert got["accuracy"] == pytest.approx(1 / 2, abs=1e-12)
    nll = (math.log(2 + math.e) - 1 + math.log(math.exp(2) + 2)) / 2
    assert got["nll"] == pytest.approx(nll, abs=1e-12)
