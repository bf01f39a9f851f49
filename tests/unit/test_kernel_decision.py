"""The decision kernel in plain NumPy (no Spark): hand cases, scikit-learn's references, the
null rules and the jackknife, on statistics built from rows by the test itself."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from sklearn.metrics import balanced_accuracy_score, precision_recall_fscore_support

from spark_calib.kernels.decision import decision_estimates
from spark_calib.kernels.estimates import Estimates, table_rows
from spark_calib.kernels.plan import FinishPlan
from spark_calib.registry import CONFUSION, METRICS
from tests.support.key_stats_decision import class_labels, decision_key_table

PER_CLASS = ("precision", "recall", "f1")
KEY_LEVEL = (
    "balanced_accuracy",
    "balanced_error_rate",
    "class_weighted_error",
    "class_weighted_nll",
    "misclassification_cost",
)
ALL = (*PER_CLASS, *KEY_LEVEL)
T_4 = 2.7764451051977987  # t quantile of 0.975 with 4 degrees of freedom

# (s, y, w) of a binary key; threshold 0.5: predictions 1, 0, 1, 0, 1. Cells (true,
# predicted): (1,1) w1, (0,0) w2, (0,1) w1 + w1.5, (1,0) w0.5; W = 6.
BINARY_ROWS = [(0.9, 1, 1.0), (0.2, 0, 2.0), (0.6, 0, 1.0), (0.3, 1, 0.5), (0.7, 0, 1.5)]


def _plan(
    names: tuple[str, ...] = ALL,
    *,
    task: str = "multiclass",
    class_names: list[str] | None = None,
    class_weights: dict[str, float] | None = None,
    cost_matrix: list[list[float]] | None = None,
    method: str = "analytic",
    buckets: int = 0,
) -> FinishPlan:
    return FinishPlan(
        metrics=(("confusion", names),),
        n_bins=15,
        equal_mass=False,
        method=method,
        critical_value=T_4 if method == "jackknife" else 1.959963984540054,
        buckets=buckets,
        settings=(
            ("task", task),
            ("class_names", class_names),
            ("class_weights", class_weights),
            ("cost_matrix", cost_matrix),
        ),
    )


def _estimates(table: pa.Table, plan: FinishPlan) -> Estimates:
    estimates = decision_estimates(table, plan)
    assert estimates is not None
    return estimates


def _values(estimates: Estimates, replicate: int = 0) -> dict[tuple[Any, str], float]:
    rows = zip(estimates.classes, estimates.metrics, estimates.values[replicate], strict=True)
    return {(label, metric): float(value) for label, metric, value in rows}


def _binary_table(**kwargs: Any) -> tuple[pa.Table, np.ndarray]:
    s = np.array([r[0] for r in BINARY_ROWS])
    y = np.array([r[1] for r in BINARY_ROWS])
    w = np.array([r[2] for r in BINARY_ROWS])
    nll = -np.log(np.where(y == 1, s, 1.0 - s))
    # Rows 0 and 2 in bin 1, the others in bin 0: one cell's sums come from two rows.
    bins = np.array([1, 0, 1, 0, 0])
    table = decision_key_table(y, (s >= 0.5).astype(int), w, nll, binary=True, bins=bins, **kwargs)
    return table, nll


def _random_rows(
    seed: int, n: int = 600, k: int = 4
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    true = rng.integers(0, k, n)
    # Right 60% of the time; class k − 1 is never predicted.
    predicted = np.where(rng.uniform(size=n) < 0.6, true, rng.integers(0, k, n))
    predicted = np.where(predicted == k - 1, 0, predicted)
    w = rng.gamma(2.0, 0.5, n)
    w[:10] = 0.0
    nll = rng.exponential(1.0, n)
    return true, predicted, w, nll


def _sklearn(
    true: np.ndarray, predicted: np.ndarray, w: np.ndarray, names: list[str]
) -> dict[tuple[Any, str], float]:
    """scikit-learn's values over L = the classes occurring as a true or predicted class."""
    present = np.union1d(true, predicted)
    out: dict[tuple[Any, str], float] = {}
    per_class = precision_recall_fscore_support(
        true, predicted, labels=present, sample_weight=w, zero_division=0.0
    )
    for index, label in enumerate(present):
        for metric, values in zip(PER_CLASS, per_class[:3], strict=True):
            out[(names[label], metric)] = float(values[index])
    for average in ("macro", "micro", "weighted"):
        summary = precision_recall_fscore_support(
            true, predicted, labels=present, sample_weight=w, average=average, zero_division=0.0
        )
        for metric, value in zip(PER_CLASS, summary[:3], strict=True):
            out[(None, f"{metric}_{average}")] = float(value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # y_pred contains classes not in y_true
        balanced = balanced_accuracy_score(true, predicted, sample_weight=w)
    out[(None, "balanced_accuracy")] = float(balanced)
    out[(None, "balanced_error_rate")] = 1.0 - float(balanced)
    return out


def _class_weighted(
    true: np.ndarray, predicted: np.ndarray, w: np.ndarray, nll: np.ndarray, c: np.ndarray
) -> tuple[float, float]:
    """class_weighted_error and class_weighted_nll straight from the rows."""
    weight = c[true] * w
    wrong = (true != predicted).astype(float)
    return float(np.sum(weight * wrong) / np.sum(weight)), float(
        np.sum(weight * nll) / np.sum(weight)
    )


# ---------------------------------------------------------------- hand cases


def test_none_without_decision_metrics() -> None:
    table, _ = _binary_table()
    plan = FinishPlan(
        metrics=(("calibration", ("ece",)),),
        n_bins=15,
        equal_mass=False,
        method="analytic",
        critical_value=1.96,
        buckets=0,
        settings=(("task", "binary"),),
    )
    assert decision_estimates(table, plan) is None


def test_binary_hand_case_with_names_cost_and_class_weights() -> None:
    table, nll = _binary_table(class_names=["neg", "pos"])
    plan = _plan(
        task="binary",
        class_names=["neg", "pos"],
        class_weights={"pos": 3.0},
        cost_matrix=[[0.1, 1.0], [5.0, 0.2]],
    )
    estimates = _estimates(table, plan)
    got = _values(estimates)
    # T_neg = 2 + 2.5, T_pos = 1 + 0.5; P_neg = 2 + 0.5, P_pos = 1 + 2.5; TP = 2, 1.
    assert got[("neg", "precision")] == pytest.approx(2 / 2.5, abs=1e-15)
    assert got[("pos", "precision")] == pytest.approx(1 / 3.5, abs=1e-15)
    assert got[("neg", "recall")] == pytest.approx(2 / 4.5, abs=1e-15)
    assert got[("pos", "recall")] == pytest.approx(1 / 1.5, abs=1e-15)
    assert got[("neg", "f1")] == pytest.approx(2 * 2 / (2.5 + 4.5), abs=1e-15)
    assert got[("pos", "f1")] == pytest.approx(2 * 1 / (3.5 + 1.5), abs=1e-15)
    assert got[(None, "precision_macro")] == pytest.approx((2 / 2.5 + 1 / 3.5) / 2, abs=1e-15)
    assert got[(None, "recall_micro")] == pytest.approx(3 / 6, abs=1e-15)
    assert got[(None, "f1_weighted")] == pytest.approx((4.5 * 4 / 7 + 1.5 * 2 / 5) / 6, abs=1e-15)
    assert got[(None, "balanced_accuracy")] == pytest.approx((2 / 4.5 + 1 / 1.5) / 2, abs=1e-15)
    assert got[(None, "balanced_error_rate")] == pytest.approx(
        1 - (2 / 4.5 + 1 / 1.5) / 2, abs=1e-15
    )
    # c_neg = 1 (not listed), c_pos = 3.
    assert got[(None, "class_weighted_error")] == pytest.approx(
        (1 * (4.5 - 2) + 3 * (1.5 - 1)) / (1 * 4.5 + 3 * 1.5), abs=1e-15
    )
    w = np.array([r[2] for r in BINARY_ROWS])
    nll_neg = w[1] * nll[1] + w[2] * nll[2] + w[4] * nll[4]
    nll_pos = w[0] * nll[0] + w[3] * nll[3]
    assert got[(None, "class_weighted_nll")] == pytest.approx(
        (nll_neg + 3 * nll_pos) / (4.5 + 3 * 1.5), rel=1e-14
    )
    # C[true][predicted]: (pos,pos) w1, (neg,neg) w2, (neg,pos) w2.5, (pos,neg) w0.5.
    assert got[(None, "misclassification_cost")] == pytest.approx(
        (0.2 * 1 + 0.1 * 2 + 1.0 * 2.5 + 5.0 * 0.5) / 6, abs=1e-15
    )
    assert set(estimates.n.tolist()) == {5}
    assert set(estimates.weight_sum.tolist()) == {6.0}
    assert np.isnan(estimates.se).all()
    assert estimates.noise.all()
    assert np.isnan(estimates.error_bound).all()


def test_rows_their_classes_and_order() -> None:
    table, _ = _binary_table()
    estimates = _estimates(table, _plan(("recall", "balanced_accuracy"), task="binary"))
    assert list(zip(estimates.classes, estimates.metrics, strict=True)) == [
        ("0", "recall"),
        ("1", "recall"),
        (None, "recall_macro"),
        (None, "recall_micro"),
        (None, "recall_weighted"),
        (None, "balanced_accuracy"),
    ]
    assert estimates.values.shape == (1, 6)


def test_multiclass_hand_case_with_a_class_never_predicted() -> None:
    # (true, predicted, w), K = 5: class 3 is never predicted, class 4 never occurs.
    rows = [(0, 0, 1.0), (1, 2, 2.0), (1, 1, 1.0), (0, 2, 0.5), (2, 0, 1.0), (3, 0, 2.0)]
    true, predicted, w = (np.array(column) for column in zip(*rows, strict=True))
    table = decision_key_table(true, predicted, w, binary=False, num_classes=5)
    got = _values(_estimates(table, _plan((*PER_CLASS, "balanced_accuracy"))))
    # T = (1.5, 3, 1, 2), P = (4, 1, 2.5, 0), TP = (1, 1, 0, 0); W = 7.5.
    assert got[("0", "precision")] == pytest.approx(1 / 4, abs=1e-15)
    assert got[("2", "precision")] == 0.0
    assert got[("3", "precision")] == 0.0  # P_3 = 0: zero_division
    assert got[("3", "recall")] == 0.0
    assert got[("3", "f1")] == 0.0
    assert got[("1", "f1")] == pytest.approx(2 * 1 / (1 + 3), abs=1e-15)
    assert ("4", "precision") not in got
    assert got[(None, "precision_macro")] == pytest.approx((1 / 4 + 1 / 1 + 0 + 0) / 4, abs=1e-15)
    assert got[(None, "recall_macro")] == pytest.approx((1 / 1.5 + 1 / 3 + 0 + 0) / 4, abs=1e-15)
    assert got[(None, "precision_micro")] == pytest.approx(2 / 7.5, abs=1e-15)
    assert got[(None, "precision_weighted")] == pytest.approx(
        (1.5 * 1 / 4 + 3 * 1 + 1 * 0 + 2 * 0) / 7.5, abs=1e-15
    )
    assert got[(None, "balanced_accuracy")] == pytest.approx(
        (1 / 1.5 + 1 / 3 + 0 + 0) / 4, abs=1e-15
    )


def test_a_class_only_predicted_counts_in_the_averages_but_not_in_balanced_accuracy() -> None:
    # Class 2 is predicted once and never true.
    true, predicted, w = np.array([0, 1, 1]), np.array([0, 1, 2]), np.array([1.0, 1.0, 2.0])
    table = decision_key_table(true, predicted, w, binary=False, num_classes=3)
    got = _values(_estimates(table, _plan()))
    # T = (1, 3, 0), P = (1, 1, 2), TP = (1, 1, 0).
    assert got[("2", "recall")] == 0.0
    assert got[(None, "recall_macro")] == pytest.approx((1 + 1 / 3 + 0) / 3, abs=1e-15)
    assert got[(None, "balanced_accuracy")] == pytest.approx((1 + 1 / 3) / 2, abs=1e-15)


def test_one_vs_rest_rows_are_ignored() -> None:
    true, predicted, w, nll = _random_rows(5, n=200, k=3)
    with_class_rows = decision_key_table(
        true, predicted, w, nll, binary=False, num_classes=3, class_rows=True
    )
    plain = decision_key_table(
        true, predicted, w, nll, binary=False, num_classes=3, class_rows=False
    )
    assert with_class_rows.num_rows > plain.num_rows
    plan = _plan(class_weights={"1": 2.0}, cost_matrix=[[0, 1, 2], [3, 0, 4], [5, 6, 0]])
    first, second = _estimates(plain, plan), _estimates(with_class_rows, plan)
    assert first.metrics == second.metrics
    np.testing.assert_allclose(first.values, second.values, rtol=1e-14)
    assert first.n.tolist() == second.n.tolist()
    np.testing.assert_allclose(first.weight_sum, second.weight_sum, rtol=1e-14)


def test_a_key_without_cells_has_no_rows() -> None:
    table, _ = _binary_table()
    only_class_rows = table.filter(pa.compute.is_valid(table.column("class")))
    assert only_class_rows.num_rows > 0
    assert decision_estimates(only_class_rows, _plan(task="binary")) is None
    multiclass = decision_key_table(np.array([0]), np.array([1]), binary=False)
    no_predicted = multiclass.set_column(
        multiclass.schema.get_field_index("predicted_class"),
        "predicted_class",
        pa.array([None] * multiclass.num_rows, pa.string()),
    )
    assert decision_estimates(no_predicted, _plan()) is None
    assert decision_estimates(multiclass, _plan()) is not None


def test_zero_weights_give_the_zero_division_values_and_nulls() -> None:
    true, predicted = np.array([0, 1, 1]), np.array([0, 0, 1])
    table = decision_key_table(true, predicted, np.zeros(3), binary=False, num_classes=2)
    plan = _plan(cost_matrix=[[0.0, 1.0], [1.0, 0.0]])
    estimates = _estimates(table, plan)
    got = _values(estimates)
    assert got[("0", "precision")] == 0.0 and got[(None, "f1_weighted")] == 0.0
    assert got[(None, "recall_micro")] == 0.0
    for name in KEY_LEVEL:
        assert math.isnan(got[(None, name)]), name
    rows = {(row[3], row[4]): row for row in table_rows(("v", "o", ""), estimates, plan, 1.0)}
    assert rows[(None, "balanced_accuracy")][6] == 3  # n counts the rows, not their weight
    assert rows[(None, "balanced_accuracy")][7] == 0.0
    assert math.isnan(rows[(None, "misclassification_cost")][5])


def test_an_overflowing_weight_sum_nulls_every_value() -> None:
    true, predicted = np.array([0, 1]), np.array([0, 1])
    table = decision_key_table(
        true, predicted, np.array([1e308, 1e308]), binary=False, num_classes=2
    )
    estimates = _estimates(table, _plan())
    assert np.isinf(estimates.weight_sum).all()
    rows = table_rows(("v", "o", ""), estimates, _plan(), 1.0)
    assert all(math.isnan(row[5]) for row in rows)


def test_without_a_task_setting_the_kernel_says_so() -> None:
    table, _ = _binary_table()
    plan = FinishPlan(
        metrics=(("confusion", ("f1",)),),
        n_bins=15,
        equal_mass=False,
        method="analytic",
        critical_value=1.96,
        buckets=0,
    )
    with pytest.raises(ValueError, match="needs the setting 'task'"):
        decision_estimates(table, plan)


def test_an_unknown_metric_is_an_error() -> None:
    table, _ = _binary_table()
    with pytest.raises(KeyError, match="'accuracy' is not a metric of the confusion family"):
        decision_estimates(table, _plan(("accuracy",), task="binary"))


def test_every_confusion_metric_row_has_a_kernel_value() -> None:
    names = [n for n, spec in METRICS.items() if spec.family == CONFUSION and not spec.table]
    assert sorted(names) == sorted(ALL)
    table, _ = _binary_table()
    got = _values(_estimates(table, _plan(tuple(names), task="binary")))
    assert {metric for _, metric in got} >= set(KEY_LEVEL)


# ---------------------------------------------------------------- references


def test_multiclass_against_sklearn_with_weights() -> None:
    true, predicted, w, nll = _random_rows(1)
    names = ["a", "b", "c", "d"]
    table = decision_key_table(
        true,
        predicted,
        w,
        nll,
        binary=False,
        num_classes=4,
        class_names=names,
        bins=np.arange(true.size) % 3,
    )
    weights = {"a": 2.0, "c": 0.5}
    cost = [[0.0, 1.0, 2.0, 3.0], [4.0, 0.5, 5.0, 6.0], [7.0, 8.0, 0.0, 9.0], [1.5, 2.5, 3.5, 0]]
    estimates = _estimates(table, _plan(class_names=names, class_weights=weights, cost_matrix=cost))
    got = _values(estimates)
    expected = _sklearn(true, predicted, w, names)
    assert ("d", "precision") in expected  # class d is never predicted
    assert expected[("d", "precision")] == 0.0
    assert set(got) - {(None, name) for name in KEY_LEVEL} == set(expected) - {
        (None, "balanced_accuracy"),
        (None, "balanced_error_rate"),
    }
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
    error, class_nll = _class_weighted(true, predicted, w, nll, np.array([2.0, 1.0, 0.5, 1.0]))
    assert got[(None, "class_weighted_error")] == pytest.approx(error, rel=1e-12)
    assert got[(None, "class_weighted_nll")] == pytest.approx(class_nll, rel=1e-12)
    realised = np.array(cost)[true, predicted]
    assert got[(None, "misclassification_cost")] == pytest.approx(
        np.sum(w * realised) / np.sum(w), rel=1e-12
    )
    assert set(estimates.n.tolist()) == {true.size}
    np.testing.assert_allclose(estimates.weight_sum, np.sum(w), rtol=1e-14)


def test_binary_against_sklearn_with_weights() -> None:
    rng = np.random.default_rng(2)
    s = rng.beta(2.0, 2.0, 500)
    y = (rng.uniform(size=s.size) < s).astype(int)
    w = rng.gamma(2.0, 0.5, s.size)
    nll = -np.log(np.where(y == 1, s, 1.0 - s))
    predicted = (s >= 0.4).astype(int)
    table = decision_key_table(
        y, predicted, w, nll, binary=True, bins=np.minimum((s * 10).astype(int), 9)
    )
    got = _values(_estimates(table, _plan(task="binary", class_weights={"0": 0.25})))
    for key, value in _sklearn(y, predicted, w, class_labels(2)).items():
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
    error, class_nll = _class_weighted(y, predicted, w, nll, np.array([0.25, 1.0]))
    assert got[(None, "class_weighted_error")] == pytest.approx(error, rel=1e-12)
    assert got[(None, "class_weighted_nll")] == pytest.approx(class_nll, rel=1e-12)


def test_binary_all_positive_has_no_negative_class_row() -> None:
    # Every row is a positive predicted positive: class 0 is neither true nor predicted.
    y, predicted, w = np.array([1, 1]), np.array([1, 1]), np.array([1.0, 2.0])
    table = decision_key_table(y, predicted, w, binary=True)
    got = _values(_estimates(table, _plan(PER_CLASS, task="binary")))
    assert ("0", "precision") not in got
    assert got[("1", "precision")] == 1.0 and got[(None, "f1_macro")] == 1.0


# ---------------------------------------------------------------- jackknife


def _replicate_reference(
    true: np.ndarray,
    predicted: np.ndarray,
    w: np.ndarray,
    nll: np.ndarray,
    buckets: np.ndarray,
    names: list[str],
    c: np.ndarray,
) -> list[dict[tuple[Any, str], float]]:
    out = []
    for g in range(5):
        kept = buckets != g
        values = _sklearn(true[kept], predicted[kept], w[kept], names)
        error, class_nll = _class_weighted(true[kept], predicted[kept], w[kept], nll[kept], c)
        values[(None, "class_weighted_error")] = error
        values[(None, "class_weighted_nll")] = class_nll
        out.append(values)
    return out


def test_jackknife_replicates_are_the_leave_one_bucket_out_values() -> None:
    true, predicted, w, nll = _random_rows(3, n=400)
    buckets = np.arange(true.size) % 5
    names = class_labels(4)
    c = np.array([1.0, 1.0, 3.0, 1.0])
    table = decision_key_table(
        true, predicted, w, nll, binary=False, num_classes=4, buckets=buckets
    )
    plan = _plan(class_weights={"2": 3.0}, method="jackknife", buckets=5)
    estimates = _estimates(table, plan)
    assert estimates.values.shape[0] == 6
    references = _replicate_reference(true, predicted, w, nll, buckets, names, c)
    for g, expected in enumerate(references):
        got = _values(estimates, replicate=1 + g)
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, rel=1e-10, abs=1e-13), (g, key)
    rows = {(row[3], row[4]): row for row in table_rows(("v", "o", ""), estimates, plan, 1.0)}
    for key in [(None, "f1_macro"), ("2", "recall"), (None, "class_weighted_nll")]:
        replicates = np.array([reference[key] for reference in references])
        se = math.sqrt(4 / 5 * np.sum((replicates - replicates.mean()) ** 2))
        assert rows[key][9] == pytest.approx(se, rel=1e-9), key
        assert rows[key][10] == pytest.approx(rows[key][5] - T_4 * se, rel=1e-9)


def test_jackknife_a_class_missing_from_a_replicate_has_no_value_there_nor_se() -> None:
    # Class 2 occurs only in bucket 1 (as true and predicted class).
    true = np.array([0, 1, 0, 1, 0, 1, 2, 0, 1, 0, 1])
    predicted = np.array([0, 1, 1, 1, 0, 0, 2, 0, 1, 1, 1])
    buckets = np.array([0, 0, 1, 1, 2, 2, 1, 3, 3, 4, 4])
    w = np.linspace(0.5, 1.5, true.size)
    table = decision_key_table(true, predicted, w, binary=False, num_classes=3, buckets=buckets)
    plan = _plan(("precision", "balanced_accuracy"), method="jackknife", buckets=5)
    estimates = _estimates(table, plan)
    pairs = list(zip(estimates.classes, estimates.metrics, strict=True))
    column = pairs.index(("2", "precision"))
    assert math.isnan(estimates.values[2, column])  # replicate of bucket 1
    assert not np.isnan(np.delete(estimates.values[:, column], 2)).any()
    rows = {(row[3], row[4]): row for row in table_rows(("v", "o", ""), estimates, plan, 1.0)}
    assert rows[("2", "precision")][5] == 1.0 and math.isnan(rows[("2", "precision")][9])
    # The averages over L are defined in every replicate, each over its own classes.
    assert not math.isnan(rows[(None, "precision_macro")][9])
    kept = buckets != 1
    expected = _sklearn(true[kept], predicted[kept], w[kept], class_labels(3))
    assert estimates.values[2, estimates.metrics.index("precision_macro")] == pytest.approx(
        expected[(None, "precision_macro")], rel=1e-12
    )


def test_jackknife_a_replicate_without_cells_has_no_values() -> None:
    # Every row of the key is in bucket 2: its replicate has no cells, so no rows, and the
    # zero_division 0s of the averages must not appear there.
    true, predicted = np.array([0, 1, 1]), np.array([0, 0, 1])
    buckets = np.array([2, 2, 2])
    table = decision_key_table(true, predicted, binary=False, buckets=buckets)
    plan = _plan(method="jackknife", buckets=5)
    estimates = _estimates(table, plan)
    assert np.isnan(estimates.values[3]).all()
    np.testing.assert_array_equal(estimates.values[1], estimates.values[0])
    rows = table_rows(("v", "o", ""), estimates, plan, 1.0)
    assert all(math.isnan(row[9]) for row in rows)
    assert not any(math.isnan(row[5]) for row in rows)


def test_jackknife_binary_replicates_match_the_table_without_the_bucket() -> None:
    rng = np.random.default_rng(4)
    s = rng.beta(2.0, 2.0, 300)
    y = (rng.uniform(size=s.size) < s).astype(int)
    w = rng.gamma(2.0, 0.5, s.size)
    nll = -np.log(np.where(y == 1, s, 1.0 - s))
    predicted = (s >= 0.5).astype(int)
    buckets = rng.integers(0, 5, s.size)
    # Bucket 3 holds every positive predicted negative: its replicate has no (1, 0) cell.
    buckets[(y == 1) & (predicted == 0)] = 3
    cost = [[0.0, 1.0], [4.0, 0.5]]
    plan = _plan(
        task="binary",
        class_weights={"1": 2.0},
        cost_matrix=cost,
        method="jackknife",
        buckets=5,
    )
    table = decision_key_table(y, predicted, w, nll, binary=True, buckets=buckets)
    estimates = _estimates(table, plan)
    point_plan = _plan(task="binary", class_weights={"1": 2.0}, cost_matrix=cost)
    for g in range(5):
        kept = buckets != g
        direct = _estimates(
            decision_key_table(y[kept], predicted[kept], w[kept], nll[kept], binary=True),
            point_plan,
        )
        assert direct.metrics == estimates.metrics
        np.testing.assert_allclose(estimates.values[1 + g], direct.values[0], rtol=1e-10)
    expected = _sklearn(y[buckets != 3], predicted[buckets != 3], w[buckets != 3], ["0", "1"])
    got = _values(estimates, replicate=4)
    assert got[("0", "recall")] == pytest.approx(expected[("0", "recall")], rel=1e-12)
    assert got[("1", "recall")] == 1.0  # no positive predicted negative left
