"""The binned ranking kernel (roc_auc_binned, pr_auc_binned) in plain NumPy (no Spark): hand
cases, scikit-learn where binned = exact, the bounds against the exact AUCs, a row-level
reference of the histogram formulas, the label rules and the jackknife, on statistics built
from rows by the test itself (tests/support/key_stats_cells.py)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from scipy.integrate import quad
from sklearn.metrics import average_precision_score, roc_auc_score

from spark_calib.kernels.estimates import Estimates, table_rows
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.ranking import TIE_VARIANCE, ranking_estimates
from spark_calib.registry import CELLS, METRICS
from spark_calib.stats import schema as stats
from tests.support.key_stats_cells import cell_ids, cell_key_table

BOTH = ("roc_auc_binned", "pr_auc_binned")
# P = N = 2: positive 0.5 ties the two negatives at 0.5; positive 0.8 is above them.
TIED_ROWS = ([0.5, 0.5, 0.5, 0.8], [1.0, 0.0, 0.0, 1.0])
# 0.5004 (positive) and 0.5 (negative) share the cell k = 500, j = 593 but differ: walked.
WALKED_ROWS = ([0.8, 0.5004, 0.5], [1.0, 1.0, 0.0])
WALKED = 0.5 + 0.25 * math.log(3.0)


def _plan(names: tuple[str, ...] = BOTH, method: str = "none", buckets: int = 0) -> FinishPlan:
    return FinishPlan(
        metrics=(("calibration", ("ece",)), (CELLS, names)),
        n_bins=15,
        equal_mass=False,
        method=method,
        critical_value=2.7764451051977987,
        buckets=buckets,
    )


def _estimates(table: pa.Table, plan: FinishPlan | None = None) -> Estimates:
    estimates = ranking_estimates(table, plan or _plan())
    assert estimates is not None
    return estimates


def _values(table: pa.Table) -> dict[str, tuple[float, float]]:
    """metric → (value, error_bound) of the point estimate."""
    estimates = _estimates(table)
    return {
        name: (float(estimates.values[0, i]), float(estimates.error_bound[i]))
        for i, name in enumerate(estimates.metrics)
    }


def _rows(seed: int, n: int = 3000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores that vary within cells, with 0, 1 and repeated values; gamma weights."""
    rng = np.random.default_rng(seed)
    s = rng.beta(0.7, 1.3, n)
    s[:40] = np.repeat([0.0, 1.0, 0.25, 0.7], 10)
    y = (rng.uniform(size=n) < 0.2 + 0.6 * s).astype(float)
    w = rng.gamma(2.0, 0.5, n)
    return s, y, w


def _reference(
    s: np.ndarray, y: np.ndarray, w: np.ndarray
) -> dict[str, tuple[float | None, float | None]]:
    """The histogram formulas cell by cell from the rows: π_b of a spread cell by numerical
    integration of (A + m·x)/(B + k·x), a tie by the weighted variance of the cell's scores."""
    cells = cell_ids(s)
    a = b = roc = ties = ap = gap = 0.0
    for cell in np.unique(cells)[::-1]:
        rows = cells == cell
        m = float(np.sum(w[rows] * y[rows]))
        negative = float(np.sum(w[rows] * (1.0 - y[rows])))
        k = m + negative
        mean = np.average(s[rows], weights=w[rows]) if k > 0 else 0.0
        variance = np.average((s[rows] - mean) ** 2, weights=w[rows]) if k > 0 else 0.0
        if variance <= TIE_VARIANCE * mean * mean:
            precision = (a + m) / (b + k) if b + k > 0 else 0.0
        elif b > 0:
            precision = quad(
                lambda x, a=a, b=b, m=m, k=k: (a + m * x) / (b + k * x), 0, 1, epsabs=1e-13
            )[0]
        else:
            precision = m / k
        fp_above = b - a
        roc += negative * (a + 0.5 * m)
        ties += m * negative
        if m > 0:
            ap += m * precision
            hi = (a + m) / (a + m + fp_above)
            lo = 1.0 if fp_above + negative == 0 else a / (a + fp_above + negative)
            gap += m * (hi - lo)
        a, b = a + m, b + k
    p, n = float(np.sum(w * y)), float(np.sum(w * (1.0 - y)))
    return {
        "roc_auc_binned": (roc / (p * n), 0.5 * ties / (p * n))
        if p > 0 and n > 0
        else (None, None),
        "pr_auc_binned": (ap / p, gap / p) if p > 0 else (None, None),
    }


def test_tied_cell_by_hand() -> None:
    got = _values(cell_key_table(*map(np.array, TIED_ROWS)))
    # Cells from the top: 0.8 (W⁺ 1), 0.5 (W⁺ 1, W⁻ 2): Σ_b W⁻_b(TP_{>b} + ½W⁺_b)/(PN).
    assert got["roc_auc_binned"][0] == pytest.approx(2 * (1 + 0.5 * 1) / (2 * 2), abs=1e-15)
    # One tie per cell: TP≥/(TP≥ + FP≥) = 1/1, then 2/4, each times W⁺/P = ½.
    assert got["pr_auc_binned"][0] == pytest.approx(0.5 * 1 + 0.5 * 2 / 4, abs=1e-15)
    # ½ΣW⁺W⁻/(PN) = ½·1·2/4; PR: cell 0.8 has lo = hi = 1 (no negative at or above it), cell
    # 0.5 has hi = 2/(2 + 0), lo = 1/(1 + 2).
    assert got["roc_auc_binned"][1] == pytest.approx(0.5 * 1 * 2 / 4, abs=1e-15)
    assert got["pr_auc_binned"][1] == pytest.approx(0.5 * (1 - 1) + 0.5 * (1 - 1 / 3), abs=1e-15)


def test_walked_cell_by_hand() -> None:
    got = _values(cell_key_table(*map(np.array, WALKED_ROWS)))
    # A = TP above = 1, B = 1, m = 1, k = 2: ∫₀¹ (1 + x)/(1 + 2x) dx = ½ + ¼·ln 3.
    assert got["pr_auc_binned"][0] == pytest.approx(0.5 * 1.0 + 0.5 * WALKED, abs=1e-15)
    assert got["pr_auc_binned"][1] == pytest.approx(0.5 * (2 / 2 - 1 / 2), abs=1e-15)
    # The walk is PR's only: the ROC counts the cell's pair as a tie, 1·(1 + ½·1)/(2·1).
    assert got["roc_auc_binned"][0] == pytest.approx(1.5 / 2, abs=1e-15)
    assert got["roc_auc_binned"][1] == pytest.approx(0.5 * 1 * 1 / 2, abs=1e-15)


def test_without_score_squares_every_cell_is_a_tie() -> None:
    got = _values(cell_key_table(*map(np.array, WALKED_ROWS), squares=False))
    # The walked cell counted at its bottom's precision, (1 + 1)/(1 + 2).
    assert got["pr_auc_binned"][0] == pytest.approx(0.5 * 1.0 + 0.5 * 2 / 3, abs=1e-15)


@pytest.mark.parametrize(("spread", "tie"), [(5e-5, True), (8e-5, False)])
def test_tie_rule_is_the_relative_variance_against_tie_variance(spread: float, tie: bool) -> None:
    # Scores 0.5 and 0.5(1 + d) (one cell): relative variance (d/2)²/(1 + d/2)² ≈ 6e-10 or 1.6e-9.
    s = np.array([0.8, 0.5 * (1 + spread), 0.5])
    assert cell_ids(s)[1] == cell_ids(s)[2]
    relative = (spread / 2) ** 2 / (1 + spread / 2) ** 2
    assert (relative <= TIE_VARIANCE) == tie
    got = _values(cell_key_table(s, np.array(WALKED_ROWS[1])))
    expected = 2 / 3 if tie else WALKED
    assert got["pr_auc_binned"][0] == pytest.approx(0.5 + 0.5 * expected, abs=1e-12)


def test_weighted_ties_by_hand() -> None:
    got = _values(cell_key_table(*map(np.array, TIED_ROWS), np.array([2.0, 1.0, 3.0, 1.0])))
    # P = 3, N = 4: positive 0.5 (w 2) ties negatives 0.5 (w 1 + 3); positive 0.8 (w 1) wins.
    assert got["roc_auc_binned"][0] == pytest.approx((0.5 * 2 * 4 + 1 * 4) / 12, abs=1e-15)
    assert got["pr_auc_binned"][0] == pytest.approx(1 / 3 + (2 / 3) * (3 / 7), abs=1e-15)
    estimates = _estimates(cell_key_table(*map(np.array, TIED_ROWS), np.array([2.0, 1, 3, 1])))
    assert estimates.n.tolist() == [4, 4]
    assert estimates.weight_sum.tolist() == [7.0, 7.0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_equals_scikit_learn_when_scores_are_constant_within_cells(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # k/1000 scores, 0 and 1: each distinct score alone in its cell, so binned = exact.
    s = np.round(rng.beta(0.8, 1.5, 2500), 3)
    s[:20] = np.repeat([0.0, 1.0, 0.999, 0.001], 5)
    y = (rng.uniform(size=s.size) < s).astype(float)
    w = rng.gamma(1.5, 1.0, s.size)
    assert np.unique(cell_ids(s)).size == np.unique(s).size
    got = _values(cell_key_table(s, y, w))
    assert got["roc_auc_binned"][0] == pytest.approx(
        roc_auc_score(y, s, sample_weight=w), abs=1e-12
    )
    assert got["pr_auc_binned"][0] == pytest.approx(
        average_precision_score(y, s, sample_weight=w), abs=1e-12
    )


@pytest.mark.parametrize("seed", [4, 5])
def test_bounds_hold_against_the_exact_aucs(seed: int) -> None:
    s, y, w = _rows(seed)
    got = _values(cell_key_table(s, y, w))
    for name, exact in (
        ("roc_auc_binned", roc_auc_score(y, s, sample_weight=w)),
        ("pr_auc_binned", average_precision_score(y, s, sample_weight=w)),
    ):
        value, bound = got[name]
        assert 0.0 < bound < 0.05
        assert abs(value - exact) <= bound + 1e-12


@pytest.mark.parametrize("seed", [6, 7])
def test_matches_the_row_level_reference_with_ties_and_walked_cells(seed: int) -> None:
    s, y, w = _rows(seed)
    got = _values(cell_key_table(s, y, w))
    want = _reference(s, y, w)
    for name in BOTH:
        assert got[name][0] == pytest.approx(want[name][0], rel=1e-11)
        assert got[name][1] == pytest.approx(want[name][1], rel=1e-11)


def test_rows_of_a_cell_are_summed_over_the_other_keys() -> None:
    s, y, w = _rows(8, n=1500)
    # A second key cutting most cells into several rows (a threshold inside the cells).
    split = np.random.default_rng(8).integers(0, 3, s.size)
    whole = _estimates(cell_key_table(s, y, w))
    table = cell_key_table(s, y, w, split=split)
    # In any order of the rows.
    shuffled = table.take(pa.array(np.random.default_rng(9).permutation(table.num_rows)))
    parts = _estimates(shuffled)
    np.testing.assert_allclose(parts.values, whole.values, rtol=1e-13)
    np.testing.assert_allclose(parts.error_bound, whole.error_bound, rtol=1e-12)
    assert parts.n.tolist() == [s.size, s.size]


def test_only_top_label_rows_with_a_cell_count() -> None:
    s, y, w = _rows(9, n=800)
    table = cell_key_table(s, y, w)
    flipped = 1.0 - y
    others = pa.concat_tables(
        [
            table,
            cell_key_table(s, flipped, w, class_label="1"),
            cell_key_table(s, flipped, w, cells=False),
        ]
    )
    alone, mixed = _estimates(table), _estimates(others)
    np.testing.assert_array_equal(mixed.values, alone.values)
    assert mixed.n.tolist() == alone.n.tolist() == [s.size, s.size]


def _with(table: pa.Table, name: str, row: int, value: float) -> pa.Table:
    column = table.column(name).to_pylist()
    column[row] = value
    index = table.column_names.index(name)
    return table.set_column(index, name, pa.array(column, type=table.schema.field(name).type))


def test_a_row_of_one_label_has_no_residue_on_the_other_side() -> None:
    # Top cell (0.9): positives only; bottom cell (0.1): negatives only.
    table = cell_key_table(np.array([0.9, 0.9, 0.1]), np.array([1.0, 1.0, 0.0]))
    cells = table.column(stats.CELL).to_pylist()
    top, bottom = cells.index(max(cells)), cells.index(min(cells))
    # Rounding residues: Σw above Σw·y of the all-positive row, Σw·y > 0 of the all-negative one.
    table = _with(table, stats.SUM_WEIGHT, top, 2.0 + 4 * np.finfo(float).eps)
    table = _with(table, stats.SUM_WEIGHT_POSITIVE, bottom, 1e-9)
    estimates = _estimates(table)
    assert estimates.values[0].tolist() == [1.0, 1.0]
    assert estimates.error_bound.tolist() == [0.0, 0.0]
    # The rule zeroes one side only: W⁻ of the bottom row is still Σw − Σw·y.
    assert estimates.weight_sum.tolist() == [2.0 + (1.0 - 1e-9)] * 2


def test_the_label_rule_is_per_row_not_per_cell() -> None:
    # One cell cut into an all-positive row (with a residue in Σw) and an all-negative row.
    table = cell_key_table(np.array([0.9, 0.9]), np.array([1.0, 0.0]), split=np.array([0, 1]))
    positive_row = table.column(stats.N_POSITIVE).to_pylist().index(1)
    table = _with(table, stats.SUM_WEIGHT, positive_row, 1.0 + 4 * np.finfo(float).eps)
    estimates = _estimates(table)
    assert estimates.weight_sum.tolist() == [2.0, 2.0]
    assert estimates.values[0].tolist() == [0.5, 0.5]


def test_an_all_positive_key_has_no_roc_and_an_all_negative_key_neither() -> None:
    s = np.array([0.2, 0.6, 0.6, 0.95])
    positive = _estimates(cell_key_table(s, np.ones(4), np.array([1.0, 2.0, 1.0, 0.5])))
    assert math.isnan(positive.values[0, 0]) and math.isnan(positive.error_bound[0])
    # P > 0: the average precision is defined, every precision 1 with no negative anywhere.
    assert positive.values[0, 1] == 1.0 and positive.error_bound[1] == 0.0
    assert positive.n.tolist() == [4, 4] and positive.weight_sum.tolist() == [4.5, 4.5]
    negative = _estimates(cell_key_table(s, np.zeros(4)))
    assert np.isnan(negative.values).all() and np.isnan(negative.error_bound).all()
    rows = table_rows(("v", "overall", ""), negative, _plan(method="analytic"), 1.0)
    assert [row[5] for row in rows] == [pytest.approx(math.nan, nan_ok=True)] * 2


def test_a_negative_weight_below_zero_leaves_the_roc_null() -> None:
    # Hand-made statistics: one cell of a positive (w 1) and a zero-weight negative whose Σw
    # is below its Σw·y, so N = Σw − Σw·y < 0; the ROC needs N > 0, the PR only P > 0.
    table = cell_key_table(np.array([0.9, 0.9]), np.array([1.0, 0.0]), np.array([1.0, 0.0]))
    table = _with(table, stats.SUM_WEIGHT, 0, 1.0 - 1e-16)
    estimates = _estimates(table)
    assert math.isnan(estimates.values[0, 0]) and math.isnan(estimates.error_bound[0])
    assert estimates.values[0, 1] == pytest.approx(1.0, abs=1e-15)


def test_zero_weight_key_has_no_values() -> None:
    estimates = _estimates(cell_key_table(np.array([0.3, 0.7]), np.array([0.0, 1.0]), np.zeros(2)))
    assert np.isnan(estimates.values).all()
    assert estimates.n.tolist() == [2, 2] and estimates.weight_sum.tolist() == [0.0, 0.0]


def test_rows_follow_the_plan_and_nothing_without_cells() -> None:
    table = cell_key_table(*map(np.array, TIED_ROWS))
    assert _estimates(table, _plan(("pr_auc_binned",))).metrics == ["pr_auc_binned"]
    assert _estimates(table, _plan(("pr_auc_binned", "roc_auc_binned"))).metrics == [
        "pr_auc_binned",
        "roc_auc_binned",
    ]
    assert ranking_estimates(table, _plan(())) is None
    no_cells = cell_key_table(*map(np.array, TIED_ROWS), cells=False)
    assert ranking_estimates(no_cells, _plan()) is None


def test_the_family_is_the_two_binned_metrics_without_an_analytic_se() -> None:
    family = [name for name, spec in METRICS.items() if spec.family == CELLS and not spec.table]
    assert sorted(family) == sorted(BOTH)
    assert not any(METRICS[name].analytic_se for name in family)
    estimates = _estimates(cell_key_table(*map(np.array, TIED_ROWS)), _plan(method="analytic"))
    assert np.isnan(estimates.se).all() and estimates.noise.all()
    rows = table_rows(("v", "overall", ""), estimates, _plan(method="analytic"), 1.0)
    assert all(math.isnan(row[9]) and math.isnan(row[10]) for row in rows)


def test_jackknife_replicates_are_the_leave_one_bucket_out_estimates() -> None:
    s, y, w = _rows(10, n=2000)
    rng = np.random.default_rng(10)
    buckets = rng.integers(0, 5, s.size)
    split = rng.integers(0, 2, s.size)
    plan = _plan(method="jackknife", buckets=5)
    estimates = _estimates(cell_key_table(s, y, w, buckets=buckets, split=split), plan)
    assert estimates.values.shape == (6, 2)
    np.testing.assert_allclose(
        estimates.values[0], _estimates(cell_key_table(s, y, w)).values[0], rtol=1e-13
    )
    replicates = []
    for g in range(5):
        kept = buckets != g
        direct = _reference(s[kept], y[kept], w[kept])
        replicates.append([direct[name][0] for name in BOTH])
        alone = _estimates(cell_key_table(s[kept], y[kept], w[kept]))
        np.testing.assert_allclose(estimates.values[1 + g], alone.values[0], rtol=1e-12)
    replicates_array = np.array(replicates)
    np.testing.assert_allclose(estimates.values[1:], replicates_array, rtol=1e-10)
    spread = np.sqrt(4 / 5 * np.sum((replicates_array - replicates_array.mean(axis=0)) ** 2, 0))
    rows = table_rows(("v", "overall", ""), estimates, plan, 1.0)
    assert [row[9] for row in rows] == pytest.approx(spread.tolist(), rel=1e-9)
    assert all(row[9] > 0 for row in rows)
    # The point's bound and sizes, not a replicate's.
    point = _estimates(cell_key_table(s, y, w))
    np.testing.assert_allclose(estimates.error_bound, point.error_bound, rtol=1e-12)
    assert estimates.n.tolist() == [s.size, s.size]
    assert estimates.weight_sum.tolist() == pytest.approx([w.sum()] * 2, rel=1e-13)


def test_jackknife_se_is_null_when_a_replicate_loses_every_positive() -> None:
    s = np.array([0.9, 0.8, 0.3, 0.2, 0.6, 0.4])
    y = np.array([1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    buckets = np.array([0, 0, 1, 2, 3, 4])
    plan = _plan(method="jackknife", buckets=5)
    estimates = _estimates(cell_key_table(s, y, buckets=buckets), plan)
    assert np.isnan(estimates.values[1]).all()
    assert estimates.values[2].tolist() == [1.0, 1.0]
    rows = table_rows(("v", "overall", ""), estimates, plan, 1.0)
    assert [row[5] for row in rows] == [1.0, 1.0]
    assert all(math.isnan(row[9]) for row in rows)
