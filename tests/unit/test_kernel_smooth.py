"""The smooth ECE kernel in plain NumPy (no Spark): node deposits by hand, relplot's smECE on
the rows (unweighted) and relplot's kernel with the rows' weights, the weight rescaling, the
rows a key keeps, and the jackknife (no se), on statistics built from rows by the test."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
import relplot
from relplot.kernels import ReflectedGaussianKernel
from relplot.metrics import search_param

from spark_calib.kernels.estimates import Estimates, table_rows
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.smooth import NODES, node_deposits, smooth_estimates
from spark_calib.stats import schema as stats
from tests.support.key_stats_smooth import binary_cell_table, cell_ids

KEY = ("v", "overall", "")


def _plan(method: str = "analytic", buckets: int = 0) -> FinishPlan:
    return FinishPlan(
        metrics=(("smooth", ("smooth_ece",)),),
        n_bins=15,
        equal_mass=False,
        method=method,
        critical_value=1.959963984540054,
        buckets=buckets,
    )


def _estimates(table: pa.Table, plan: FinishPlan | None = None) -> Estimates:
    estimates = smooth_estimates(table, plan or _plan())
    assert estimates is not None
    return estimates


def _value(table: pa.Table) -> float:
    estimates = _estimates(table)
    assert estimates.metrics == ["smooth_ece"]
    return float(estimates.values[0, 0])


def _rows(seed: int, n: int = 3000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Miscalibrated scores (P(y = 1) = s^1.6), so σ* stays above 0.01 where the kernel's
    1,001 nodes are relplot's; weights from a gamma."""
    rng = np.random.default_rng(seed)
    s = rng.beta(2.0, 3.0, n)
    s[:4] = [0.0, 1.0, 0.25, 0.999]
    y = (rng.uniform(size=n) < s**1.6).astype(float)
    w = rng.gamma(2.0, 0.5, n)
    return s, y, w


def relplot_weighted(f: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """relplot's smECE with each row's mass w·n/W instead of 1: relplot's own grid, kernel,
    reflected convolution (np.convolve) and bisection, only the deposited values weighted."""
    mass = w * len(w) / w.sum()

    def at(sigma: float) -> float:
        t = np.linspace(0, 1, max(round(10 / sigma), 200))
        kernel = ReflectedGaussianKernel(sigma)
        smoothed = kernel.apply(f, (f - y) * mass, t)
        density = kernel.apply(f, mass, t) + 1e-4
        return float(np.sum(np.abs(smoothed / density) * density) / np.sum(density))

    sigma = search_param(lambda a: a < 0.001 or a < at(a), start=1, refine=10)
    return at(sigma)


def test_no_smooth_metric_gives_none() -> None:
    plan = FinishPlan((("calibration", ("ece",)),), 15, False, "analytic", 1.96, 0)
    s, y, _ = _rows(1, 50)
    assert smooth_estimates(binary_cell_table(s, y), plan) is None


def test_node_deposits_by_hand() -> None:
    # Cell k = 1 (x = 0.001, φ = 1000·(0.0015 − 0.001) = 0.5): (0.0015, y=1, w=2) and
    # (0.0015, y=0, w=1); s = 0.25 is a node (k = 250, φ = 0); s = 1 is the last node
    # (k = 999, φ = 1); a row of weight 0 in a cell of its own counts nowhere.
    s = np.array([0.0015, 0.0015, 0.25, 1.0, 0.6])
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    w = np.array([2.0, 1.0, 4.0, 0.5, 0.0])
    deposits = node_deposits(binary_cell_table(s, y, w))
    assert deposits is not None
    n, weight, mass, residual = deposits
    assert (n, weight) == (4, 7.5)
    expected_mass = np.zeros(NODES)
    expected_mass[[1, 2, 250, 1000]] = [1.5, 1.5, 4.0, 0.5]
    expected_residual = np.zeros(NODES)
    # Residual f − y, half on each node of cell 1: 2·(0.0015 − 1)/2 + 1·0.0015/2.
    half = (2.0 * (0.0015 - 1.0) + 0.0015) / 2.0
    expected_residual[[1, 2, 250, 1000]] = [half, half, 4.0 * (0.25 - 1.0), 0.5]
    np.testing.assert_allclose(mass, expected_mass, rtol=0, atol=1e-12)
    np.testing.assert_allclose(residual, expected_residual, rtol=0, atol=1e-12)


def test_only_top_label_cells_of_positive_weight_count() -> None:
    s, y, w = _rows(2, 400)
    table = binary_cell_table(s, y, w)
    base = _estimates(table)
    # Class rows (one-vs-rest statistics), rows without a cell and a zero-weight row in a cell
    # of its own are summed by no node and counted in neither n nor W.
    classes = binary_cell_table(s[:50], 1 - y[:50], w[:50], class_label="1")
    cells = binary_cell_table(s[:30], y[:30], w[:30])
    no_cell = cells.set_column(
        cells.schema.get_field_index(stats.CELL), stats.CELL, pa.nulls(cells.num_rows, pa.int32())
    )
    lonely = np.array([0.0005])
    assert cell_ids(lonely)[0] not in set(cell_ids(s).tolist())
    weightless = binary_cell_table(lonely, np.array([1.0]), np.array([0.0]))
    other = _estimates(pa.concat_tables([table, classes, no_cell, weightless]))
    assert other.values[0, 0] == pytest.approx(base.values[0, 0], rel=1e-13)
    assert int(base.n[0]) == int(other.n[0]) == 400
    assert other.weight_sum[0] == pytest.approx(w.sum(), rel=1e-13)


def test_a_zero_weight_row_in_a_weighted_cell_counts_in_n() -> None:
    # As the Spark code: n sums the rows of the cells of positive weight, whatever their own
    # weight; the rescaling n/W then changes (relplot's 10⁻⁴ is in row units).
    s, y, w = _rows(13, 300)
    table = binary_cell_table(s, y, w)
    extra = binary_cell_table(s[5:6], y[5:6], np.array([0.0]))
    assert cell_ids(s[5:6])[0] in set(cell_ids(s).tolist())
    estimates = _estimates(pa.concat_tables([table, extra]))
    assert int(estimates.n[0]) == 301
    s2, y2 = np.append(s, s[5]), np.append(y, y[5])
    assert estimates.values[0, 0] == pytest.approx(
        relplot_weighted(s2, y2, np.append(w, 0.0)), rel=1e-12
    )
    assert estimates.values[0, 0] != pytest.approx(_value(table), rel=1e-12)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_equals_relplot_smece_on_the_rows(seed: int) -> None:
    s, y, _ = _rows(seed)
    value, sigma = relplot.smECE(s, y, return_width=True)
    # The premise: σ* ≥ 0.01, where relplot's grid is the kernel's 1,001 nodes.
    assert sigma >= 0.01
    assert _value(binary_cell_table(s, y)) == pytest.approx(value, rel=1e-12)


def test_the_weighted_reference_is_relplot_at_unit_weights() -> None:
    s, y, _ = _rows(6, 1500)
    assert relplot_weighted(s, y, np.ones_like(s)) == pytest.approx(relplot.smECE(s, y), rel=1e-12)


@pytest.mark.parametrize("seed", [7, 8])
def test_weighted_equals_relplot_with_rows_rescaled_to_mean_weight_one(seed: int) -> None:
    s, y, w = _rows(seed)
    expected = relplot_weighted(s, y, w)
    assert _value(binary_cell_table(s, y, w)) == pytest.approx(expected, rel=1e-12)
    # The weights matter: the unweighted value is another number.
    assert abs(_value(binary_cell_table(s, y)) - expected) > 1e-4


def test_constant_weights_give_the_unweighted_value() -> None:
    # Rescaled to mean weight 1, weights 3 are weights 1: 10⁻⁴ of density stays in row units.
    s, y, _ = _rows(9, 200)
    unweighted = _value(binary_cell_table(s, y))
    assert _value(binary_cell_table(s, y, np.full(s.shape, 3.0))) == pytest.approx(
        unweighted, rel=1e-12
    )
    assert _value(binary_cell_table(s, y, np.full(s.shape, 1e-3))) == pytest.approx(
        unweighted, rel=1e-12
    )


def test_calibrated_point_mass_is_zero() -> None:
    # Every row at s = 0.5, half of them positive: the residual is 0 on every node.
    s = np.full(10, 0.5)
    y = np.array([0.0, 1.0] * 5)
    assert _value(binary_cell_table(s, y)) == 0.0


def test_rows_split_over_bins_and_buckets_sum_per_cell() -> None:
    s, y, w = _rows(10, 800)
    whole = _value(binary_cell_table(s, y, w, n_bins=1))
    split = binary_cell_table(s, y, w, n_bins=15, buckets=np.arange(s.size) % 5)
    assert split.num_rows > binary_cell_table(s, y, w, n_bins=1).num_rows
    assert _value(split) == pytest.approx(whole, rel=1e-12)


def test_jackknife_gives_the_point_estimate_and_no_se() -> None:
    s, y, w = _rows(11, 600)
    buckets = np.arange(s.size) % 5
    plan = _plan("jackknife", 5)
    estimates = _estimates(binary_cell_table(s, y, w, buckets=buckets), plan)
    assert estimates.values.shape == (6, 1)
    assert np.isnan(estimates.values[1:]).all()
    assert estimates.values[0, 0] == pytest.approx(_value(binary_cell_table(s, y, w)), rel=1e-12)
    ((*key, label, metric, value, n, weight, bound, se, low, high, n_eff),) = table_rows(
        KEY, estimates, plan, 2.0
    )
    assert (tuple(key), label, metric, n) == (KEY, None, "smooth_ece", 600)
    assert value == estimates.values[0, 0] and weight == pytest.approx(w.sum())
    assert math.isnan(bound) and math.isnan(se) and math.isnan(low) and math.isnan(high)
    assert n_eff == 2.0


def test_analytic_has_no_se_or_error_bound() -> None:
    s, y, w = _rows(12, 300)
    estimates = _estimates(binary_cell_table(s, y, w))
    assert estimates.values.shape == (1, 1)
    ((*_, value, _n, _w, bound, se, low, high, _n_eff),) = table_rows(KEY, estimates, _plan(), 1.0)
    assert 0.0 < value < 1.0
    assert math.isnan(bound) and math.isnan(se) and math.isnan(low) and math.isnan(high)


def test_a_key_without_weighted_cells_has_no_row() -> None:
    table = binary_cell_table(np.array([0.2, 0.7]), np.array([0.0, 1.0]), np.array([0.0, 0.0]))
    assert smooth_estimates(table, _plan("jackknife", 3)) is None
    assert node_deposits(table) is None
    assert node_deposits(table.slice(0, 0)) is None


def test_overflowed_weight_sum_gives_null_value() -> None:
    s = np.array([0.2, 0.7])
    with np.errstate(over="ignore"):
        table = binary_cell_table(s, np.array([0.0, 1.0]), np.array([1e308, 1e308]))
    estimates = _estimates(table)
    ((*_, value, _n, weight, _bound, _se, _low, _high, _n_eff),) = table_rows(
        KEY, estimates, _plan(), 1.0
    )
    assert math.isinf(weight) and math.isnan(value)


def test_cell_ids_follow_the_grid() -> None:
    # k = ⌊1000 s⌋ (s = 1 in the last cell), j = ⌊16 logit s⌋ + 593 clipped, 0 and 1185 at the
    # clipped ends.
    ids = cell_ids(np.array([0.0, 0.5, 1.0, 0.25]))
    assert ids.tolist() == [0, 500 * 1186 + 593, 999 * 1186 + 1185, 250 * 1186 + 575]
