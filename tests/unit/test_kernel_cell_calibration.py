"""The cell-calibration kernel in plain NumPy (no Spark): a hand case, KS and HL recomputed
from rows, the χ²₈ tail against scipy, the Cox fit against scipy's root finder on the cells'
corrected score equations and against a row-level logistic fit (mid-range, click-through-like
and saturated scores; the uncorrected fit of the cells' mean logits misses the last by more
than 10⁻⁴), its error bound, weights, a key without positives and the jackknife, on fine-cell
statistics built from rows by the test itself."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pytest
from scipy import optimize
from scipy import stats as scipy_stats
from sklearn.linear_model import LogisticRegression

from spark_calib.kernels import cell_calibration as kernel_module
from spark_calib.kernels.cell_calibration import cell_calibration_estimates, chi2_sf_8
from spark_calib.kernels.estimates import table_rows
from spark_calib.kernels.plan import FinishPlan
from spark_calib.registry import CELL_CALIBRATION, METRICS
from spark_calib.stats import schema as stats
from tests.support.key_stats_cell_calibration import cell_ids, cell_key_table, logit

ALL = (
    "ks_calibration",
    "hosmer_lemeshow",
    "hosmer_lemeshow_p",
    "calibration_slope",
    "calibration_intercept",
)


def _plan(names: tuple[str, ...] = ALL, method: str = "analytic", buckets: int = 0) -> FinishPlan:
    return FinishPlan(
        metrics=(("calibration", ("ece",)), (CELL_CALIBRATION, names)),
        n_bins=15,
        equal_mass=False,
        method=method,
        critical_value=1.959963984540054,
        buckets=buckets,
    )


def _values(table: pa.Table, plan: FinishPlan | None = None) -> dict[str, float]:
    estimates = cell_calibration_estimates(table, plan or _plan())
    assert estimates is not None
    return dict(zip(estimates.metrics, estimates.values[0].tolist(), strict=True))


def _rows(seed: int, n: int = 3000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted rows, miscalibrated (true log-odds 0.3 + 0.8·logit(s)), with scores at 0, 1
    and on equal-width cell edges."""
    rng = np.random.default_rng(seed)
    z = rng.normal(-0.5, 1.5, n)
    s = 1.0 / (1.0 + np.exp(-z))
    s[:6] = [0.0, 1.0, 0.25, 0.5, 0.001, 0.999]
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-(0.3 + 0.8 * logit(s))))).astype(float)
    w = rng.gamma(2.0, 0.5, n)
    return s, y, w


def _cells(
    s: np.ndarray, y: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per cell with weight, from the rows: W, C = Σw·s, O = Σw·y and the mean logit."""
    _, index = np.unique(cell_ids(s), return_inverse=True)
    weight = np.bincount(index, weights=w)
    used = weight > 0
    sums = [np.bincount(index, weights=v)[used] for v in (w * s, w * y, w * logit(s))]
    return weight[used], sums[0], sums[1], sums[2] / weight[used]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _moments(s: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
    """Per cell with weight, from the rows: W, O, Σw², the mean logit z̄, the exact
    within-cell var(z) and cov(z, y) (``var``, ``cov``), and their delta-method estimates from
    Σw·s, Σw·s², Σw·s·y (``var_hat``, ``cov_hat``: the kernel's documented formulas, end cells 0).
    """
    ids, index = np.unique(cell_ids(s), return_inverse=True)
    index = index.ravel()
    z = logit(s)

    def per_cell(values: np.ndarray) -> np.ndarray:
        return np.bincount(index, weights=values, minlength=ids.size)

    weight = per_cell(w)
    mean_z = per_cell(w * z) / weight
    mean_s, mean_y = per_cell(w * s) / weight, per_cell(w * y) / weight
    at_mean = _sigmoid(mean_z)
    slope = at_mean * (1 - at_mean)
    # The end cells divide by 0 here (σ(37) rounds to 1) and are set to 0 below.
    with np.errstate(divide="ignore", invalid="ignore"):
        from_moments = (per_cell(w * s * s) / weight - mean_s**2) / slope**2
        from_gap = 2 * (mean_s - at_mean) / (slope * (1 - 2 * at_mean))
        cov_hat = (per_cell(w * s * y) / weight - mean_s * mean_y) / slope
    var_hat = np.clip(np.where(at_mean <= 0.75, from_moments, from_gap), 0, 1 / 1024)
    reach = np.sqrt(mean_y * (1 - mean_y)) / 32
    cov_hat = np.clip(cov_hat, -reach, reach)
    end = np.isin(ids % 1186, (0, 1185))
    delta = z - mean_z[index]
    return {
        "weight": weight,
        "positives": per_cell(w * y),
        "weight_sq": per_cell(w * w),
        "z": mean_z,
        "var": per_cell(w * delta**2) / weight,
        "cov": per_cell(w * y * delta) / weight,
        "var_hat": np.where(end, 0.0, var_hat),
        "cov_hat": np.where(end, 0.0, cov_hat),
    }


def _corrected(
    theta: np.ndarray, cells: dict[str, np.ndarray], var: str = "var_hat", cov: str = "cov_hat"
) -> tuple[np.ndarray, np.ndarray]:
    """The second-order score g and information H of the kernel's docstring at (a, b)."""
    a, b = theta
    weight, z, v, k = cells["weight"], cells["z"], cells[var], cells[cov]
    mu = _sigmoid(a + b * z)
    d1 = mu * (1 - mu)
    d2, d3 = d1 * (1 - 2 * mu), d1 * (1 - 6 * d1)
    r = cells["positives"] - weight * mu - 0.5 * b * b * d2 * weight * v
    g = np.array([r.sum(), np.sum(z * r + weight * k - b * d1 * weight * v)])
    u = weight * (d1 + 0.5 * b * b * d3 * v)
    haa, hab = u.sum(), np.sum(z * u + b * d2 * weight * v)
    hbb = np.sum(z * z * u + 2 * b * z * d2 * weight * v + d1 * weight * v)
    return g, np.array([[haa, hab], [hab, hbb]])


def _row_fit(s: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """(intercept, slope) of scikit-learn's unpenalised logistic regression of y on logit(s)."""
    rows = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000)
    rows.fit(logit(s)[:, None], y, sample_weight=w)
    return float(rows.intercept_[0]), float(rows.coef_[0, 0])


def _first_order_fit(s: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """The kernel's fit without the within-cell moments: the cells' mean logits alone."""
    cells = _moments(s, y, w)
    used = np.ones((1, cells["weight"].size), dtype=bool)
    a, b = kernel_module.cox_fit(
        used, cells["z"][None], cells["positives"][None], cells["weight"][None]
    )
    return float(a[0]), float(b[0])


def _fit_and_bound(table: pa.Table) -> tuple[float, float, float, float]:
    """(intercept, slope, intercept bound, slope bound) of the kernel."""
    plan = _plan(("calibration_intercept", "calibration_slope"))
    estimates = cell_calibration_estimates(table, plan)
    assert estimates is not None
    (a, b), (bound_a, bound_b) = estimates.values[0], estimates.error_bound
    return float(a), float(b), float(bound_a), float(bound_b)


def _click_log(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A click-through-like log: logit(s) ~ N(−4.5, 0.9) (base rate about 1.6 %), calibrated
    labels, gamma weights."""
    rng = np.random.default_rng(seed)
    z = rng.normal(-4.5, 0.9, n)
    y = (rng.uniform(size=n) < _sigmoid(z)).astype(float)
    return _sigmoid(z), y, rng.gamma(2.0, 0.5, n)


def _beta_log(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores ~ Beta(0.6, 25) (mean 2.3 %), labels logit(s) − 0.3 on the log-odds (base rate
    about 1.7 %), uniform weights."""
    rng = np.random.default_rng(seed)
    s = rng.beta(0.6, 25.0, n)
    y = (rng.uniform(size=n) < _sigmoid(logit(s) - 0.3)).astype(float)
    return s, y, rng.uniform(0.2, 3.0, n)


def test_hand_case_three_cells() -> None:
    # Cells: s = 0.2 (y 0 and 1, w 1 each), s = 0.6 (y 1, w 2), s = 0.9 (y 0, w 1); W = 5.
    table = cell_key_table(
        np.array([0.2, 0.2, 0.6, 0.9]), np.array([0.0, 1.0, 1.0, 0.0]), np.array([1, 1, 2, 1.0])
    )
    estimates = cell_calibration_estimates(table, _plan())
    assert estimates is not None
    values = dict(zip(estimates.metrics, estimates.values[0], strict=True))
    # Running Σ(C − O): 0.4 − 1 = −0.6, then −0.6 + 1.2 − 2 = −1.4, then −1.4 + 0.9 = −0.5.
    assert values["ks_calibration"] == pytest.approx(1.4 / 5.0, abs=1e-15)
    # C − 2X + O per cell: 0.4 − 0.4 + 1, 1.2 − 2.4 + 2, 0.9 − 0 + 0; the largest over W.
    bounds = dict(zip(estimates.metrics, estimates.error_bound, strict=True))
    assert bounds["ks_calibration"] == pytest.approx(1.0 / 5.0, abs=1e-15)
    assert math.isnan(bounds["hosmer_lemeshow"]) and math.isnan(bounds["hosmer_lemeshow_p"])
    # Each cell holds one score: no within-cell spread, so the Cox fit's estimate is ~0.
    assert 0.0 <= bounds["calibration_slope"] < 1e-12
    assert 0.0 <= bounds["calibration_intercept"] < 1e-12
    # Midpoints 1/5, 3/5, 4.5/5: groups 2, 6, 9, one cell each.
    hl = (1 - 0.4) ** 2 / (0.4 * (1 - 0.4 / 2)) + (2 - 1.2) ** 2 / (1.2 * (1 - 1.2 / 2))
    hl += (0 - 0.9) ** 2 / (0.9 * (1 - 0.9 / 1))
    assert values["hosmer_lemeshow"] == pytest.approx(1.125 + 4 / 3 + 9, rel=1e-13)
    assert values["hosmer_lemeshow"] == pytest.approx(hl, rel=1e-13)
    x = hl / 2
    p = math.exp(-x) * (1 + x + x**2 / 2 + x**3 / 6)
    assert values["hosmer_lemeshow_p"] == pytest.approx(p, rel=1e-13)
    assert estimates.n.tolist() == [4] * 5
    assert estimates.weight_sum.tolist() == pytest.approx([5.0] * 5, abs=1e-15)
    assert np.isnan(estimates.se).all()
    assert estimates.classes == [None] * 5 and estimates.noise.all()


def test_requested_metrics_only_in_plan_order_and_none_when_none() -> None:
    s, y, w = _rows(1, 500)
    table = cell_key_table(s, y, w)
    estimates = cell_calibration_estimates(table, _plan(("calibration_slope", "ks_calibration")))
    assert estimates is not None
    assert estimates.metrics == ["calibration_slope", "ks_calibration"]
    assert not np.isnan(estimates.error_bound).any()
    bounds = cell_calibration_estimates(table, _plan(("hosmer_lemeshow", "calibration_slope")))
    assert bounds is not None
    assert math.isnan(bounds.error_bound[0]) and not math.isnan(bounds.error_bound[1])
    assert cell_calibration_estimates(table, _plan(())) is None
    assert {name for name, spec in METRICS.items() if spec.family == CELL_CALIBRATION} == set(ALL)


def test_a_key_without_weight_has_no_rows() -> None:
    table = cell_key_table(np.array([0.2, 0.7]), np.array([0.0, 1.0]), np.array([0.0, 0.0]))
    assert cell_calibration_estimates(table, _plan()) is None


def test_reads_only_top_label_rows_with_a_cell() -> None:
    s, y, w = _rows(2, 800)
    plain = _values(cell_key_table(s, y, w))
    with_decoys = _values(cell_key_table(s, y, w, decoys=True))
    assert with_decoys == pytest.approx(plain, rel=1e-12)
    estimates = cell_calibration_estimates(cell_key_table(s, y, w, decoys=True), _plan())
    assert estimates is not None
    assert estimates.n[0] == s.size
    assert estimates.weight_sum[0] == pytest.approx(w.sum(), rel=1e-13)


def test_ks_against_the_running_sum_of_the_rows() -> None:
    s, y, w = _rows(3)
    estimates = cell_calibration_estimates(cell_key_table(s, y, w), _plan(("ks_calibration",)))
    assert estimates is not None
    ks, bound = estimates.values[0, 0], estimates.error_bound[0]
    cells = cell_ids(s)
    at_edges = [abs(np.sum((w * (s - y))[cells <= c])) for c in np.unique(cells)]
    assert ks == pytest.approx(max(at_edges) / w.sum(), rel=1e-12)
    # Gupta et al.'s statistic over every threshold lies between ks and ks + error_bound.
    order = np.argsort(s, kind="stable")
    running = np.cumsum((w * (s - y))[order])
    last_of_tie = np.r_[s[order][1:] != s[order][:-1], True]
    exact = np.max(np.abs(running[last_of_tie])) / w.sum()
    assert ks <= exact + 1e-15 and exact <= ks + bound + 1e-15
    assert bound == pytest.approx(
        max(np.sum((w * np.abs(s - y))[cells == c]) for c in np.unique(cells)) / w.sum(),
        rel=1e-12,
    )


def test_hosmer_lemeshow_against_groups_built_from_the_rows_and_scipy() -> None:
    s, y, w = _rows(4)
    values = _values(cell_key_table(s, y, w))
    weight, confidence, outcome, _ = _cells(s, y, w)
    total = weight.sum()
    expected = observed = group_weight = np.zeros(10)
    before = 0.0
    for wc, cc, oc in zip(weight, confidence, outcome, strict=True):
        g = min(9, math.floor(10 * (before + wc / 2) / total))
        group_weight = group_weight + np.eye(10)[g] * wc
        expected = expected + np.eye(10)[g] * cc
        observed = observed + np.eye(10)[g] * oc
        before += wc
    full = group_weight > 0
    hl = np.sum(
        (observed[full] - expected[full]) ** 2
        / (expected[full] * (1 - expected[full] / group_weight[full]))
    )
    assert full.sum() >= 9
    assert values["hosmer_lemeshow"] == pytest.approx(hl, rel=1e-10)
    assert values["hosmer_lemeshow_p"] == pytest.approx(
        scipy_stats.chi2.sf(values["hosmer_lemeshow"], 8), rel=1e-10
    )


def test_chi2_sf_8_matches_scipy() -> None:
    x = np.array([0.0, 1e-8, 0.5, 3.0, 7.9, 8.0, 15.5, 40.0, 200.0, 1500.0])
    expected = scipy_stats.chi2.sf(x, 8)
    np.testing.assert_allclose(chi2_sf_8(x), expected, rtol=1e-12, atol=1e-300)
    assert chi2_sf_8(np.array([0.0]))[0] == 1.0
    assert np.isnan(chi2_sf_8(np.array([np.nan])))[0]


def test_cox_fit_solves_the_corrected_score_equations_of_the_cells() -> None:
    s, y, w = _rows(5)
    values = _values(cell_key_table(s, y, w))
    cells = _moments(s, y, w)
    root = optimize.root(
        lambda theta: _corrected(theta, cells)[0],
        x0=np.array([0.0, 1.0]),
        jac=lambda theta: -_corrected(theta, cells)[1],
        method="hybr",
        tol=1e-14,
    )
    assert np.abs(_corrected(root.x, cells)[0]).max() < 1e-9
    assert values["calibration_intercept"] == pytest.approx(root.x[0], abs=1e-9)
    assert values["calibration_slope"] == pytest.approx(root.x[1], abs=1e-9)
    # The data's own miscalibration (0.3, 0.8), up to sampling noise.
    assert values["calibration_slope"] == pytest.approx(0.8, abs=0.1)


def test_cox_fit_without_moments_is_the_maximum_likelihood_of_the_cells_mean_logits() -> None:
    s, y, w = _rows(5)
    weight, _, outcome, z = _cells(s, y, w)

    def score(theta: np.ndarray) -> np.ndarray:
        mu = _sigmoid(theta[0] + theta[1] * z)
        residual = outcome - weight * mu
        return np.array([residual.sum(), (residual * z).sum()])

    root = optimize.root(score, x0=np.array([0.0, 1.0]), method="hybr", tol=1e-14)
    # Not root.success: SciPy 1.17 reports a tolerance below what it can reach as a failure
    # after converging, so the root is checked by its residual.
    assert np.abs(score(root.x)).max() < 1e-9
    a, b = _first_order_fit(s, y, w)
    assert a == pytest.approx(root.x[0], abs=1e-9)
    assert b == pytest.approx(root.x[1], abs=1e-9)


def test_within_cell_moments_against_the_rows() -> None:
    # Mid-range scores (σ(z̄) ≤ ¾: var(s)/d²), saturated ones (Jensen's gap) and both end cells.
    rng = np.random.default_rng(11)
    z = np.concatenate([rng.normal(-4.5, 0.9, 60_000), rng.normal(6.0, 2.0, 60_000)])
    s = _sigmoid(z)
    s[:50], s[50:100] = 0.0, 1.0
    y = (rng.uniform(size=s.size) < _sigmoid(0.2 + 0.9 * logit(s))).astype(float)
    w = rng.gamma(2.0, 0.5, s.size)
    cells = _moments(s, y, w)
    ids, index = np.unique(cell_ids(s), return_inverse=True)
    used = np.ones((1, ids.size), dtype=bool)
    inner = used & ~kernel_module.end_cells(ids)[None]
    per_cell = {
        name: np.bincount(index.ravel(), weights=v)[None]
        for name, v in (("w", w), ("c", w * s), ("o", w * y), ("x", w * s * y), ("q", w * s * s))
    }
    var_z, cov_zy, complete = kernel_module.within_cell_moments(
        inner,
        per_cell["w"],
        per_cell["c"],
        per_cell["o"],
        per_cell["x"],
        cells["z"][None],
        per_cell["q"],
    )
    assert complete[0]
    np.testing.assert_allclose(var_z[0], cells["var_hat"], rtol=1e-6, atol=1e-15)
    np.testing.assert_allclose(cov_zy[0], cells["cov_hat"], rtol=1e-6, atol=1e-15)
    # The end cells hold one logit each; the estimates follow the rows' exact moments to
    # O(h²) relatively (plus the noise of where the positives sit, for cov), weighted by W.
    assert var_z[0][~inner[0]].tolist() == [0.0, 0.0]
    assert cells["var"][~inner[0]].max() < 1e-20
    heavy = cells["weight"] > 50
    upper = cells["z"] > 2.0
    for part in (heavy & ~upper, heavy & upper):
        assert part.sum() > 20
        gap = np.abs(var_z[0][part] - cells["var"][part])
        assert gap.max() <= 0.02 * cells["var"][part].max()
        spread = np.sum(cells["weight"][part] * np.abs(cov_zy[0][part] - cells["cov"][part]))
        assert spread <= 0.05 * np.sum(cells["weight"][part] * np.abs(cells["cov"][part]))


def test_cox_fit_is_within_1e4_of_the_row_level_fit_mid_range() -> None:
    s, y, w = _rows(6, n=100_000)
    a, b, bound_a, bound_b = _fit_and_bound(cell_key_table(s, y, w))
    row_a, row_b = _row_fit(s, y, w)
    assert abs(a - row_a) <= 1e-4 and abs(b - row_b) <= 1e-4
    # Mid-range cells are narrow (equal-width, 10⁻³ in s): both fits are close here, the
    # corrected one far closer (measured: 1.1e-5 first order, 3e-8 corrected).
    assert abs(a - row_a) <= bound_a and abs(b - row_b) <= bound_b
    first_a, first_b = _first_order_fit(s, y, w)
    assert abs(a - row_a) < 0.1 * abs(first_a - row_a)
    assert abs(b - row_b) < 0.1 * abs(first_b - row_b)


Log = Callable[[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]


@pytest.mark.parametrize(("log", "seed"), [(_click_log, 1), (_beta_log, 1)])
def test_cox_fit_is_within_1e4_of_the_row_level_fit_on_a_click_through_log(
    log: Log, seed: int
) -> None:
    s, y, w = log(seed, 200_000)
    assert 0.01 <= np.average(y, weights=w) <= 0.025
    a, b, bound_a, bound_b = _fit_and_bound(cell_key_table(s, y, w))
    row_a, row_b = _row_fit(s, y, w)
    assert abs(a - row_a) <= 1e-4 and abs(b - row_b) <= 1e-4
    assert abs(a - row_a) <= bound_a and abs(b - row_b) <= bound_b
    assert bound_a <= 1e-4 and bound_b <= 1e-4
    # The fit of the cells' mean logits alone is not: it misses where the positives sit inside
    # the 1/16-wide cells, a noise of sd ~1e-3 on these logs (here 1.9e-3 and 5.2e-4 against
    # 6.6e-6 and 2.5e-6 corrected; over 30 seeds of 200k rows it missed by more than 1e-4 on 30
    # click logs and 26 beta logs, the corrected fit by at most 1.7e-5).
    first_a, first_b = _first_order_fit(s, y, w)
    assert max(abs(first_a - row_a), abs(first_b - row_b)) > 1e-4


def test_cox_fit_of_saturated_scores_uses_jensens_gap() -> None:
    # The click-through log mirrored (s → 1 − s, y → 1 − y: the row fit's (a, b) becomes
    # (−a, b)), plus exact 0s and 1s in the end cells; its cells have σ(z̄) > ¾.
    s, y, w = _click_log(1, 200_000)
    s, y = 1.0 - s, 1.0 - y
    s[:20], s[20:40] = 0.0, 1.0
    a, b, bound_a, bound_b = _fit_and_bound(cell_key_table(s, y, w))
    row_a, row_b = _row_fit(s, y, w)
    assert abs(a - row_a) <= 1e-4 and abs(b - row_b) <= 1e-4
    assert abs(a - row_a) <= bound_a and abs(b - row_b) <= bound_b
    first_a, first_b = _first_order_fit(s, y, w)
    assert max(abs(first_a - row_a), abs(first_b - row_b)) > 1e-4


def test_error_bound_is_the_documented_formula() -> None:
    s, y, w = _click_log(3, 20_000)
    a, b, bound_a, bound_b = _fit_and_bound(cell_key_table(s, y, w))
    cells = _moments(s, y, w)
    _, hessian = _corrected(np.array([a, b]), cells)
    mu = _sigmoid(a + b * cells["z"])
    tilt = 1 - 2 * _sigmoid(cells["z"])
    variance = np.sum(0.2 * tilt**2 * cells["var_hat"] ** 2 * cells["weight_sq"] * mu * (1 - mu))
    scale = kernel_module.COX_BOUND_SDS * math.sqrt(variance) / np.linalg.det(hessian)
    assert bound_a == pytest.approx(scale * abs(hessian[0, 1]), rel=1e-6)
    assert bound_b == pytest.approx(scale * hessian[0, 0], rel=1e-6)


def test_error_bound_is_a_calibrated_estimate_of_the_gap() -> None:
    # Over independent click-through-like logs the gap to the row fit, in units of the bound's
    # standard deviation (bound / COX_BOUND_SDS), has a spread of about 1 and stays inside.
    ratios = []
    for seed in range(20, 36):
        s, y, w = _click_log(seed, 50_000)
        a, b, bound_a, bound_b = _fit_and_bound(cell_key_table(s, y, w))
        row_a, row_b = _row_fit(s, y, w)
        assert abs(a - row_a) <= bound_a and abs(b - row_b) <= bound_b
        ratios += [
            (a - row_a) / bound_a * kernel_module.COX_BOUND_SDS,
            (b - row_b) / bound_b * kernel_module.COX_BOUND_SDS,
        ]
    assert 0.5 <= math.sqrt(np.mean(np.square(ratios))) <= 1.6


def test_without_second_moments_the_fit_is_first_order_and_has_no_bound() -> None:
    s, y, w = _rows(12, 5000)
    table = cell_key_table(s, y, w)
    old = table.set_column(
        table.schema.get_field_index(stats.SUM_WEIGHT_CONFIDENCE_SQ),
        stats.SUM_WEIGHT_CONFIDENCE_SQ,
        pa.nulls(table.num_rows, pa.float64()),
    )
    a, b, bound_a, bound_b = _fit_and_bound(old)
    first_a, first_b = _first_order_fit(s, y, w)
    assert a == pytest.approx(first_a, abs=1e-12) and b == pytest.approx(first_b, abs=1e-12)
    assert math.isnan(bound_a) and math.isnan(bound_b)
    full = _fit_and_bound(table)
    assert not math.isnan(full[2]) and not math.isnan(full[3])
    # Without Σw² the fit is the corrected one, only its bound is unknown.
    no_weight_sq = table.set_column(
        table.schema.get_field_index(stats.SUM_WEIGHT_SQ),
        stats.SUM_WEIGHT_SQ,
        pa.nulls(table.num_rows, pa.float64()),
    )
    a, b, bound_a, bound_b = _fit_and_bound(no_weight_sq)
    assert (a, b) == full[:2]
    assert math.isnan(bound_a) and math.isnan(bound_b)


def test_cox_fit_is_close_to_the_row_level_logistic_fit() -> None:
    s, y, w = _rows(6, n=20000)
    values = _values(cell_key_table(s, y, w))
    rows = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000)
    rows.fit(logit(s)[:, None], y, sample_weight=w)
    # Measured: 6e-8 (the cells' mean logits alone: 5e-6).
    assert values["calibration_slope"] == pytest.approx(rows.coef_[0, 0], abs=2e-6)
    assert values["calibration_intercept"] == pytest.approx(rows.intercept_[0], abs=2e-6)


def test_one_newton_step_from_zero_one() -> None:
    s, y, w = _rows(7, 1000)
    gradient, hessian = _corrected(np.array([0.0, 1.0]), _moments(s, y, w))
    step = np.linalg.solve(hessian, gradient)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kernel_module, "COX_NEWTON_STEPS", 1)
        values = _values(cell_key_table(s, y, w))
    assert values["calibration_intercept"] == pytest.approx(step[0], rel=1e-10)
    assert values["calibration_slope"] == pytest.approx(1.0 + step[1], rel=1e-10)


def test_one_cell_has_a_singular_fit_but_ks_and_hl() -> None:
    y = np.array([0.0, 1.0, 0.0, 1.0, 1.0])
    values = _values(cell_key_table(np.full(5, 0.3), y))
    assert math.isnan(values["calibration_slope"])
    assert math.isnan(values["calibration_intercept"])
    assert values["ks_calibration"] == pytest.approx(abs(1.5 - 3.0) / 5.0, abs=1e-15)
    # One group: (3 − 1.5)²/(1.5·(1 − 0.3)).
    assert values["hosmer_lemeshow"] == pytest.approx(2.25 / 1.05, rel=1e-13)


def test_integer_weights_equal_repeated_rows() -> None:
    s, y, _ = _rows(8, 600)
    w = np.random.default_rng(8).integers(1, 4, s.size).astype(float)
    weighted = _values(cell_key_table(s, y, w))
    repeated = _values(cell_key_table(np.repeat(s, w.astype(int)), np.repeat(y, w.astype(int))))
    assert weighted == pytest.approx(repeated, rel=1e-9, abs=1e-12)
    unweighted = _values(cell_key_table(s, y))
    assert weighted["hosmer_lemeshow"] != pytest.approx(unweighted["hosmer_lemeshow"], rel=1e-3)


def test_a_key_without_positives() -> None:
    s, _, w = _rows(9, 500)
    y = np.zeros(s.size)
    values = _values(cell_key_table(s, y, w))
    # The running Σw·s only grows: KS is the mean score.
    assert values["ks_calibration"] == pytest.approx(np.sum(w * s) / w.sum(), rel=1e-12)
    weight, confidence, _, _ = _cells(s, y, w)
    groups = np.minimum(np.floor(10 * (np.cumsum(weight) - weight / 2) / weight.sum()), 9).astype(
        int
    )
    e = np.bincount(groups, weights=confidence, minlength=10)
    n = np.bincount(groups, weights=weight, minlength=10)
    full = n > 0
    # (0 − E)²/(E(1 − E/W)) = E/(1 − E/W).
    hl = np.sum(e[full] / (1 - e[full] / n[full]))
    assert values["hosmer_lemeshow"] == pytest.approx(hl, rel=1e-11)
    # No maximum: the fit is whatever 30 Newton steps from (0, 1) reach, not null.
    cells = _moments(s, y, w)
    assert not cells["cov_hat"].any()
    theta = np.array([0.0, 1.0])
    for _ in range(30):
        gradient, hessian = _corrected(theta, cells)
        theta = theta + np.linalg.solve(hessian, gradient)
    assert values["calibration_intercept"] < -20
    assert values["calibration_intercept"] == pytest.approx(theta[0], rel=1e-8)
    assert values["calibration_slope"] == pytest.approx(theta[1], rel=1e-6, abs=1e-8)


def test_jackknife_replicates_leave_one_bucket_out() -> None:
    s, y, w = _rows(10, 2500)
    buckets = np.random.default_rng(10).integers(0, 5, s.size)
    plan = _plan(method="jackknife", buckets=5)
    estimates = cell_calibration_estimates(cell_key_table(s, y, w, buckets=buckets), plan)
    assert estimates is not None
    assert estimates.values.shape == (6, 5)
    point = _values(cell_key_table(s, y, w))
    assert estimates.values[0].tolist() == pytest.approx([point[name] for name in ALL], rel=1e-12)
    direct = np.array(
        [
            [
                _values(cell_key_table(s[buckets != g], y[buckets != g], w[buckets != g]))[name]
                for name in ALL
            ]
            for g in range(5)
        ]
    )
    np.testing.assert_allclose(estimates.values[1:], direct, rtol=1e-8, atol=1e-13)
    rows = {row[4]: row for row in table_rows(("v", "overall", ""), estimates, plan, 1.0)}
    for position, name in enumerate(ALL):
        spread = direct[:, position] - direct[:, position].mean()
        expected = math.sqrt(4 / 5 * np.sum(spread**2))
        assert rows[name][9] == pytest.approx(expected, rel=1e-6, abs=1e-300)
    # The error bound is the point estimate's.
    assert rows["ks_calibration"][8] == estimates.error_bound[0]


def test_a_replicate_without_cells_has_no_values() -> None:
    s = np.array([0.1, 0.4, 0.8, 0.3])
    y = np.array([0.0, 1.0, 1.0, 0.0])
    buckets = np.array([0, 0, 0, 0])
    plan = _plan(method="jackknife", buckets=2)
    estimates = cell_calibration_estimates(cell_key_table(s, y, buckets=buckets), plan)
    assert estimates is not None
    assert np.isnan(estimates.values[1]).all()
    assert not np.isnan(estimates.values[2]).any()
    rows = table_rows(("v", "overall", ""), estimates, plan, 1.0)
    assert all(math.isnan(row[9]) for row in rows)
