"""The table kernels (confusion, roc, thresholds, regression_calibration) in plain NumPy (no
Spark): hand cases, scikit-learn and row-level references, weights, the label rules, the ROC
thinning, jackknife buckets and edge values, on statistics built from rows by the test itself
(tests/support/key_stats_tables.py)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import norm
from sklearn.metrics import confusion_matrix, roc_curve

from spark_calib.kernels.arrow_batch import to_table
from spark_calib.kernels.confusion import CONFUSION_ARROW_SCHEMA, CONFUSION_COLUMNS, confusion_rows
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.regression_calibration import (
    REGRESSION_CALIBRATION_ARROW_SCHEMA,
    REGRESSION_CALIBRATION_COLUMNS,
    regression_calibration_rows,
)
from spark_calib.kernels.roc import ROC_ARROW_SCHEMA, ROC_COLUMNS, roc_rows
from spark_calib.kernels.thresholds import (
    THRESHOLD_ARROW_SCHEMA,
    THRESHOLD_COLUMNS,
    threshold_rows,
)
from spark_calib.stats import schema as stats
from tests.support.key_stats_tables import (
    CALIBRATION_LEVELS,
    binary_table,
    cell_ids,
    multiclass_table,
    regression_table,
    stats_table,
)

KEY = ("v", "overall", "")
# (s, y, w). Threshold 0.5: predictions 1, 0, 1, 0, 1; P = 1.5, N = 4.5, W = 6.
BINARY_ROWS = ([0.9, 0.2, 0.6, 0.3, 0.7], [1, 0, 0, 1, 0], [1.0, 2.0, 1.0, 0.5, 1.5])


def _plan(**settings: Any) -> FinishPlan:
    return FinishPlan(
        metrics=(),
        n_bins=15,
        equal_mass=False,
        method="none",
        critical_value=1.959963984540054,
        buckets=0,
        settings=tuple(settings.items()),
    )


def _dicts(rows: list[tuple[Any, ...]], columns: tuple[str, ...]) -> list[dict[str, Any]]:
    return [dict(zip(columns, row, strict=True)) for row in rows]


# ---------------------------------------------------------------- confusion


def test_binary_confusion_by_hand_sums_the_label_per_predicted_class() -> None:
    table = binary_table(*BINARY_ROWS, class_names=("neg", "pos"), class_rows=True)
    rows = confusion_rows(KEY, table, _plan(task="binary", class_names=("neg", "pos")))
    cells = {(r["true_class"], r["predicted_class"]): r for r in _dicts(rows, CONFUSION_COLUMNS)}
    # (true, predicted): (pos, pos) 0.9·w1; (neg, neg) 0.2·w2; (neg, pos) 0.6·w1 + 0.7·w1.5;
    # (pos, neg) 0.3·w0.5.
    assert {cell: (r["n"], r["weight_sum"]) for cell, r in cells.items()} == {
        ("pos", "pos"): (1, 1.0),
        ("neg", "neg"): (1, 2.0),
        ("neg", "pos"): (2, 1.0 + 1.5),
        ("pos", "neg"): (1, 0.5),
    }
    assert all(row[:3] == KEY for row in rows)
    assert [(r[3], r[4]) for r in rows] == sorted((r[3], r[4]) for r in rows)


def test_binary_confusion_without_class_names_uses_0_and_1_and_drops_empty_sides() -> None:
    # Every row predicted 1 (s ≥ 0.5); only positives: the negative side has n = 0.
    table = binary_table([0.6, 0.8], [1, 1], [2.0, 0.25])
    rows = confusion_rows(KEY, table, _plan(task="binary"))
    assert rows == [(*KEY, "1", "1", 2, 2.25)]


def test_binary_confusion_side_is_kept_by_its_count_not_its_weight() -> None:
    # Predicted 0: one negative of weight 0 (n = 1, Σw = 0) is still a cell; predicted 1: the
    # residue W − Σw·y = 1e-17 of a cell of positives only is no cell.
    table = stats_table(
        [
            {
                stats.CLASS: None,
                stats.PREDICTED_CLASS: "0",
                stats.N: 1,
                stats.N_POSITIVE: 0,
                stats.SUM_WEIGHT: 0.0,
                stats.SUM_WEIGHT_POSITIVE: 0.0,
            },
            {
                stats.CLASS: None,
                stats.PREDICTED_CLASS: "1",
                stats.N: 3,
                stats.N_POSITIVE: 3,
                stats.SUM_WEIGHT: 0.3 + 1e-17,
                stats.SUM_WEIGHT_POSITIVE: 0.3,
            },
        ]
    )
    rows = confusion_rows(KEY, table, _plan(task="binary"))
    assert rows == [(*KEY, "0", "0", 1, 0.0), (*KEY, "1", "1", 3, 0.3)]


def test_binary_confusion_matches_sklearn_with_weights_and_buckets() -> None:
    rng = np.random.default_rng(3)
    s = rng.uniform(size=400)
    y = (rng.uniform(size=400) < s).astype(int)
    w = rng.gamma(2.0, 0.5, 400)
    table = binary_table(s, y, w, threshold=0.4, buckets=np.arange(400) % 5, class_rows=True)
    rows = _dicts(confusion_rows(KEY, table, _plan(task="binary")), CONFUSION_COLUMNS)
    predicted = (s >= 0.4).astype(int)
    weighted = confusion_matrix(y, predicted, labels=[0, 1], sample_weight=w)
    counts = confusion_matrix(y, predicted, labels=[0, 1])
    assert len(rows) == 4
    for row in rows:
        j, k = int(row["true_class"]), int(row["predicted_class"])
        assert row["n"] == counts[j, k]
        assert row["weight_sum"] == pytest.approx(weighted[j, k], rel=1e-12)


def test_multiclass_confusion_matches_sklearn_only_occurring_cells() -> None:
    rng = np.random.default_rng(4)
    true = rng.integers(0, 4, 300)
    # Class 3 is never predicted: its column has no cells.
    predicted = np.where(rng.uniform(size=300) < 0.6, true, rng.integers(0, 3, 300)) % 3
    w = rng.uniform(0.1, 3.0, 300)
    names = ["cat", "dog", "bird", "fish"]
    table = multiclass_table(
        true,
        predicted,
        w,
        class_names=names,
        bins=np.arange(300) % 7,
        buckets=np.arange(300) % 4,
        class_rows=True,
    )
    rows = _dicts(
        confusion_rows(KEY, table, _plan(task="multiclass", class_names=names)), CONFUSION_COLUMNS
    )
    weighted = confusion_matrix(true, predicted, labels=[0, 1, 2, 3], sample_weight=w)
    counts = confusion_matrix(true, predicted, labels=[0, 1, 2, 3])
    got = {(names.index(r["true_class"]), names.index(r["predicted_class"])): r for r in rows}
    assert set(got) == {(j, k) for j in range(4) for k in range(4) if counts[j, k] > 0}
    for (j, k), row in got.items():
        assert row["n"] == counts[j, k]
        assert row["weight_sum"] == pytest.approx(weighted[j, k], rel=1e-12)


def test_multiclass_confusion_by_hand() -> None:
    # (true, predicted, w): (0,0) 1, (1,2) 2, (1,1) 1, (0,2) 0.5, (2,0) 1 and (1,2) 0.25.
    table = multiclass_table([0, 1, 1, 0, 2, 1], [0, 2, 1, 2, 0, 2], [1, 2, 1, 0.5, 1, 0.25])
    rows = confusion_rows(KEY, table, _plan(task="multiclass"))
    assert rows == [
        (*KEY, "0", "0", 1, 1.0),
        (*KEY, "0", "2", 1, 0.5),
        (*KEY, "1", "1", 1, 1.0),
        (*KEY, "1", "2", 2, 2.0 + 0.25),
        (*KEY, "2", "0", 1, 1.0),
    ]


def test_confusion_needs_the_task_and_has_no_rows_without_cells() -> None:
    table = multiclass_table([0], [0])
    with pytest.raises(ValueError, match="task"):
        confusion_rows(KEY, table, _plan())
    # Rows without a predicted class (the bin grain of another output) make no cell.
    bare = table.set_column(
        table.schema.get_field_index(stats.PREDICTED_CLASS),
        stats.PREDICTED_CLASS,
        pa.nulls(table.num_rows, pa.string()),
    )
    assert confusion_rows(KEY, bare, _plan(task="multiclass")) == []
    assert confusion_rows(KEY, bare, _plan(task="binary")) == []


# ---------------------------------------------------------------- roc


def test_roc_by_hand() -> None:
    table = binary_table(*BINARY_ROWS, class_rows=True)
    rows = roc_rows(KEY, table, _plan(roc_points=200))
    got = [row[3:] for row in rows]
    p, n = 1.5, 4.5
    # Descending scores 0.9 (+1), 0.7 (−1.5), 0.6 (−1), 0.3 (+0.5), 0.2 (−2); each score is
    # its cell's lower edge (the k/1000 edge is above the log-odds one there).
    expected = [
        (0, None, 0.0, 0.0, None),
        (1, 0.9, 0.0, 1.0 / p, 1.0),
        (2, 0.7, 1.5 / n, 1.0 / p, 1.0 / 2.5),
        (3, 0.6, 2.5 / n, 1.0 / p, 1.0 / 3.5),
        (4, 0.3, 2.5 / n, 1.5 / p, 1.5 / 4.0),
        (5, 0.2, 4.5 / n, 1.5 / p, 1.5 / 6.0),
    ]
    assert len(got) == len(expected)
    for row, want in zip(got, expected, strict=True):
        assert row[0] == want[0]
        for value, target in zip(row[1:], want[1:], strict=True):
            assert (value is None) == (target is None)
            if target is not None:
                assert value == pytest.approx(target, abs=1e-14)
    assert all(row[:3] == KEY for row in rows)


def test_roc_matches_sklearn_when_scores_are_constant_within_cells() -> None:
    rng = np.random.default_rng(8)
    # 60 distinct scores, each the only value of its cell, with repeats and weights.
    values = np.sort(rng.choice(np.arange(1, 1000), 60, replace=False) / 1000.0 + 0.0004)
    s = rng.choice(values, 2000)
    y = (rng.uniform(size=2000) < s).astype(int)
    w = rng.gamma(2.0, 0.5, 2000)
    assert np.unique(cell_ids(s)).size == np.unique(s).size
    table = binary_table(s, y, w, buckets=np.arange(2000) % 5)
    rows = _dicts(roc_rows(KEY, table, _plan(roc_points=1000)), ROC_COLUMNS)
    fpr, tpr, thresholds = roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    assert [r["point"] for r in rows] == list(range(len(fpr)))
    np.testing.assert_allclose([r["fpr"] for r in rows], fpr, rtol=0, atol=1e-12)
    np.testing.assert_allclose([r["tpr"] for r in rows], tpr, rtol=0, atol=1e-12)
    # Each threshold is the lower edge of the score's cell: k/1000 or the log-odds edge.
    edges = np.array([r["threshold"] for r in rows[1:]])
    scores = thresholds[1:]
    k, j = np.divmod(cell_ids(scores), 1186)
    lower = np.maximum(k / 1000.0, 1.0 / (1.0 + np.exp(-(j - 593) / 16.0)))
    np.testing.assert_allclose(edges, lower, rtol=1e-14)
    assert np.all((edges <= scores) & (scores - edges < 0.001))
    # Precision recomputed from the rows at each score.
    above = s[None, :] >= scores[:, None]
    tp = (above * (w * y)[None, :]).sum(axis=1)
    predicted = (above * w[None, :]).sum(axis=1)
    np.testing.assert_allclose([r["precision"] for r in rows[1:]], tp / predicted, rtol=1e-12)


def test_roc_of_scores_that_vary_within_a_cell_counts_the_cell_once() -> None:
    # 0.5004 and 0.5 share the cell (k = 500, j = 593): one point at its lower edge 0.5.
    table = binary_table([0.8, 0.5004, 0.5], [1, 1, 0])
    rows = roc_rows(KEY, table, _plan(roc_points=10))
    assert [row[3:] for row in rows] == [
        (0, None, 0.0, 0.0, None),
        (1, 0.8, 0.0, 0.5, 1.0),
        (2, 0.5, 1.0, 1.0, 2.0 / 3.0),
    ]


@pytest.mark.parametrize(
    ("roc_points", "kept"),
    [
        # m = 10 cells ≤ roc_points − 1: every point.
        (11, list(range(1, 11))),
        # k = ceil(9/3) = 3: points 10, 7, 4, 1.
        (5, [1, 4, 7, 10]),
        # k = ceil(9/2) = 5: points 10 and 5 (fewer than the budget allows).
        (4, [5, 10]),
        # k = ceil(9/8) = 2: points 10, 8, 6, 4, 2 (the top cell is dropped).
        (10, [2, 4, 6, 8, 10]),
        # roc_points = 2: the last point alone.
        (2, [10]),
    ],
)
def test_roc_thinning_keeps_every_kth_point_from_the_last(roc_points: int, kept: list[int]) -> None:
    scores = np.array([0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95])
    labels = np.array([0, 1, 0, 0, 1, 1, 0, 1, 1, 1])
    table = binary_table(scores, labels)
    rows = _dicts(roc_rows(KEY, table, _plan(roc_points=roc_points)), ROC_COLUMNS)
    assert len(rows) <= roc_points
    assert [r["point"] for r in rows] == list(range(len(kept) + 1))
    # Point i from the top (1-based) is the i-th highest score.
    descending = scores[::-1]
    np.testing.assert_allclose([r["threshold"] for r in rows[1:]], descending[np.array(kept) - 1])
    positives = np.cumsum(labels[::-1])
    np.testing.assert_allclose(
        [r["tpr"] for r in rows[1:]], positives[np.array(kept) - 1] / labels.sum()
    )


def test_roc_of_one_label_has_null_rates_on_the_missing_side() -> None:
    rows = roc_rows(KEY, binary_table([0.2, 0.7], [1, 1], [1.0, 3.0]), _plan(roc_points=50))
    # N = 0: fpr null everywhere, so at the origin too; tpr and precision are defined.
    assert [row[3:] for row in rows] == [
        (0, None, None, 0.0, None),
        (1, 0.7, None, 0.75, 1.0),
        (2, 0.2, None, 1.0, 1.0),
    ]
    negatives = roc_rows(KEY, binary_table([0.2, 0.7], [0, 0]), _plan(roc_points=50))
    assert [row[3:] for row in negatives] == [
        (0, None, 0.0, None, None),
        (1, 0.7, 0.5, None, 0.0),
        (2, 0.2, 1.0, None, 0.0),
    ]


def test_roc_label_rule_drops_the_rounding_residue_of_a_one_label_cell() -> None:
    # Cells 200 and 100 hold positives only (W − Σw·y = 1e-16 is a residue, not a negative),
    # cell 300 negatives only (Σw·y = 1e-17 is a residue, not a positive).
    base = {stats.CLASS: None, stats.N: 2, stats.N_POSITIVE: 2, stats.SUM_WEIGHT_POSITIVE: 0.3}
    rows = [{**base, stats.CELL: cell, stats.SUM_WEIGHT: 0.3 + 1e-16} for cell in (100, 200)]
    rows.append(
        {
            **base,
            stats.CELL: 300,
            stats.N: 1,
            stats.N_POSITIVE: 0,
            stats.SUM_WEIGHT: 0.4,
            stats.SUM_WEIGHT_POSITIVE: 1e-17,
        }
    )
    # A null n_positive uses the sums as they are: W⁺ = 0.3, W⁻ = 0.2.
    rows.append({**base, stats.CELL: 50, stats.N_POSITIVE: None, stats.SUM_WEIGHT: 0.5})
    got = _dicts(roc_rows(KEY, stats_table(rows), _plan(roc_points=50)), ROC_COLUMNS)
    # Points from the top: cells 300, 200, 100, 50; P = 0.9, N = 0.6.
    assert [r["fpr"] for r in got] == pytest.approx([0.0, 0.4 / 0.6, 0.4 / 0.6, 0.4 / 0.6, 1.0])
    assert [r["tpr"] for r in got] == pytest.approx([0.0, 0.0, 0.3 / 0.9, 0.6 / 0.9, 1.0])
    # Exactly: no residue reaches the rates of the cells above the first positive.
    assert got[1]["tpr"] == 0.0 and got[1]["precision"] == 0.0
    assert got[2]["fpr"] == got[1]["fpr"] and got[3]["fpr"] == got[1]["fpr"]


def test_roc_ignores_class_rows_and_rows_without_a_cell_and_needs_roc_points() -> None:
    plain = binary_table(*BINARY_ROWS)
    with_extra = binary_table(*BINARY_ROWS, class_rows=True)
    no_cell = plain.set_column(
        plain.schema.get_field_index(stats.CELL), stats.CELL, pa.nulls(plain.num_rows, pa.int32())
    )
    both = pa.concat_tables([with_extra, no_cell])
    assert roc_rows(KEY, both, _plan(roc_points=9)) == roc_rows(KEY, plain, _plan(roc_points=9))
    assert roc_rows(KEY, no_cell, _plan(roc_points=9)) == []
    with pytest.raises(ValueError, match="roc_points"):
        roc_rows(KEY, plain, _plan())


# ---------------------------------------------------------------- thresholds


def test_thresholds_by_hand_in_ascending_order() -> None:
    table = binary_table(*BINARY_ROWS, thresholds=(0.3, 0.5, 0.7), class_rows=True)
    rows = threshold_rows(KEY, table, _plan(thresholds=(0.7, 0.3, 0.5)))
    got = _dicts(rows, THRESHOLD_COLUMNS)
    p, n = 1.5, 4.5
    # s ≥ 0.3: 0.9 (+1), 0.6 (−1), 0.3 (+0.5), 0.7 (−1.5); s ≥ 0.5: 0.9, 0.6, 0.7; s ≥ 0.7:
    # 0.9, 0.7.
    expected = [(0.3, 1.5, 2.5), (0.5, 1.0, 2.5), (0.7, 1.0, 1.5)]
    assert [r["threshold"] for r in got] == [0.3, 0.5, 0.7]
    for row, (_, tp, fp) in zip(got, expected, strict=True):
        assert row["n"] == 5
        assert row["weight_sum"] == pytest.approx(p + n, abs=1e-15)
        assert (row["tp"], row["fp"]) == pytest.approx((tp, fp), abs=1e-15)
        assert (row["tn"], row["fn"]) == pytest.approx((n - fp, p - tp), abs=1e-15)
        assert row["tpr"] == pytest.approx(tp / p, abs=1e-15)
        assert row["recall"] == row["tpr"]
        assert row["fpr"] == pytest.approx(fp / n, abs=1e-15)
        assert row["precision"] == pytest.approx(tp / (tp + fp), abs=1e-15)
    assert all(row[:3] == KEY for row in rows)


def test_thresholds_match_counts_recomputed_from_the_rows() -> None:
    rng = np.random.default_rng(12)
    s = rng.beta(1.5, 2.0, 1500)
    s[:20] = [0.0, 1.0, 0.25, 0.5, 0.75] * 4  # on the thresholds, and the ends
    y = (rng.uniform(size=1500) < s).astype(int)
    w = rng.gamma(2.0, 0.5, 1500)
    thresholds = (0.75, 0.25, 0.5, 0.9)
    table = binary_table(s, y, w, thresholds=thresholds, buckets=np.arange(1500) % 3)
    rows = _dicts(threshold_rows(KEY, table, _plan(thresholds=thresholds)), THRESHOLD_COLUMNS)
    assert [r["threshold"] for r in rows] == sorted(thresholds)
    for row in rows:
        positive = s >= row["threshold"]
        tp = np.sum(w * y * positive)
        fp = np.sum(w * (1 - y) * positive)
        assert row["tp"] == pytest.approx(tp, rel=1e-12)
        assert row["fp"] == pytest.approx(fp, rel=1e-12)
        assert row["fn"] == pytest.approx(np.sum(w * y * ~positive), rel=1e-10)
        assert row["tn"] == pytest.approx(np.sum(w * (1 - y) * ~positive), rel=1e-10)
        assert row["precision"] == pytest.approx(tp / (tp + fp), rel=1e-12)
        assert row["n"] == 1500


def test_thresholds_edge_values() -> None:
    # Above every score: tp = fp = 0, precision 0 (not null); all negative: P = 0, tpr null.
    rows = _dicts(
        threshold_rows(
            KEY,
            binary_table([0.2, 0.4], [0, 0], [1.0, 2.0], thresholds=(0.3, 0.9)),
            _plan(thresholds=(0.3, 0.9)),
        ),
        THRESHOLD_COLUMNS,
    )
    assert rows[0]["fp"] == 2.0 and rows[0]["fpr"] == pytest.approx(2.0 / 3.0)
    assert rows[0]["tpr"] is None and rows[0]["recall"] is None
    assert rows[0]["precision"] == 0.0
    assert (rows[1]["tp"], rows[1]["fp"], rows[1]["precision"]) == (0.0, 0.0, 0.0)
    assert rows[1]["tn"] == 3.0 and rows[1]["fn"] == 0.0


def test_thresholds_need_the_setting_and_threshold_rows() -> None:
    table = binary_table(*BINARY_ROWS)
    with pytest.raises(ValueError, match="thresholds"):
        threshold_rows(KEY, table, _plan())
    bare = table.set_column(
        table.schema.get_field_index(stats.THRESHOLD_BIN),
        stats.THRESHOLD_BIN,
        pa.nulls(table.num_rows, pa.int32()),
    )
    assert threshold_rows(KEY, bare, _plan(thresholds=(0.5,))) == []


# ---------------------------------------------------------------- regression_calibration


def test_regression_calibration_by_hand() -> None:
    # σ = 1; |e| = 0 is inside every interval, |e| = 1 inside those with z_l ≥ 1 (l ≥ 0.70,
    # z_0.65 = 0.935, z_0.70 = 1.036), |e| = 3 inside none (z_0.95 = 1.96).
    table = regression_table([0.0, -1.0, 3.0], [1.0, 1.0, 1.0], [1.0, 2.0, 3.0])
    rows = _dicts(
        regression_calibration_rows(KEY, table, _plan(coverage_levels=(0.5, 0.8, 0.9, 0.95))),
        REGRESSION_CALIBRATION_COLUMNS,
    )
    assert [r["level"] for r in rows] == list(CALIBRATION_LEVELS)
    for row in rows:
        observed = (1.0 + 2.0) / 6.0 if row["level"] >= 0.7 else 1.0 / 6.0
        assert row["observed"] == pytest.approx(observed, abs=1e-15)
        assert row["gap"] == pytest.approx(observed - row["level"], abs=1e-15)
        assert row["z"] == pytest.approx(norm.ppf((1.0 + row["level"]) / 2.0), rel=1e-14)
        assert (row["n"], row["weight_sum"]) == (3, 6.0)


@pytest.mark.parametrize("coverage_levels", [(0.5, 0.8, 0.9, 0.95), (0.33, 0.975, 0.999)])
def test_regression_calibration_matches_coverage_from_the_rows(
    coverage_levels: tuple[float, ...],
) -> None:
    rng = np.random.default_rng(21)
    sigma = rng.gamma(2.0, 0.5, 2000)
    errors = sigma * rng.standard_t(4, 2000)
    w = rng.uniform(0.2, 2.0, 2000)
    table = regression_table(
        errors, sigma, w, coverage_levels=coverage_levels, buckets=np.arange(2000) % 5
    )
    plan = _plan(coverage_levels=coverage_levels)
    rows = _dicts(regression_calibration_rows(KEY, table, plan), REGRESSION_CALIBRATION_COLUMNS)
    assert len(rows) == 19
    for row in rows:
        z = norm.ppf((1.0 + row["level"]) / 2.0)
        covered = np.sum(w * (np.abs(errors) <= z * sigma)) / np.sum(w)
        assert row["observed"] == pytest.approx(covered, rel=1e-12)
        assert row["weight_sum"] == pytest.approx(np.sum(w), rel=1e-12)
        assert row["n"] == 2000


def test_regression_calibration_without_sigma_covers_nothing_and_zero_weight_is_null() -> None:
    rows = regression_calibration_rows(KEY, regression_table([0.5, 1.0], None), _plan())
    assert {row[5] for row in rows} == {0.0}
    zero = regression_table([0.5, 1.0], [1.0, 1.0], [0.0, 0.0])
    for row in regression_calibration_rows(KEY, zero, _plan()):
        assert row[5] is None and row[6] is None and row[7:] == (2, 0.0)
    empty = stats_table([{stats.CLASS: "1", stats.N: 1, stats.SUM_WEIGHT: 1.0}])
    assert regression_calibration_rows(KEY, empty, _plan()) == []


# ---------------------------------------------------------------- schemas


@pytest.mark.parametrize(
    ("schema", "columns"),
    [
        (CONFUSION_ARROW_SCHEMA, CONFUSION_COLUMNS),
        (ROC_ARROW_SCHEMA, ROC_COLUMNS),
        (THRESHOLD_ARROW_SCHEMA, THRESHOLD_COLUMNS),
        (REGRESSION_CALIBRATION_ARROW_SCHEMA, REGRESSION_CALIBRATION_COLUMNS),
    ],
)
def test_schemas_name_the_columns_in_order(schema: pa.Schema, columns: tuple[str, ...]) -> None:
    assert tuple(schema.names) == columns
    assert schema.field(stats.MODEL_VERSION).type == pa.string()


def test_rows_become_arrow_tables_of_their_schema() -> None:
    table = binary_table(*BINARY_ROWS, thresholds=(0.5,))
    roc = to_table(roc_rows(KEY, table, _plan(roc_points=4)), ROC_ARROW_SCHEMA)
    assert roc.schema.field("point").type == pa.int32()
    assert roc.column("threshold").null_count == 1
    confusion = to_table(confusion_rows(KEY, table, _plan(task="binary")), CONFUSION_ARROW_SCHEMA)
    assert confusion.column("n").type == pa.int64()
    assert sum(confusion.column("n").to_pylist()) == 5
    thresholds = to_table(
        threshold_rows(KEY, table, _plan(thresholds=(0.5,))), THRESHOLD_ARROW_SCHEMA
    )
    assert thresholds.num_rows == 1
    regression = to_table(
        regression_calibration_rows(KEY, regression_table([0.1], [1.0]), _plan()),
        REGRESSION_CALIBRATION_ARROW_SCHEMA,
    )
    assert regression.num_rows == 19 and not math.isnan(regression.column("z")[0].as_py())
