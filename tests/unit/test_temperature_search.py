"""The multiclass temperature's driver search without Spark: the safeguarded Newton iteration
driven by the exact derivatives of a NumPy NLL, against SciPy's bounded minimiser; the bounds; the
first points and the Hermite start."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax

from spark_calib.constants import TEMPERATURE_MAX, TEMPERATURE_MIN
from spark_calib.recalibration.temperature_search import (
    FIRST_BETAS,
    MAX_PASSES,
    SearchState,
    advance,
    cubic_model_step,
    hermite_root,
    start,
)
from tests.support.multiclass_temperature_reference import exact_temperature


def _derivatives(z: np.ndarray, y: np.ndarray, w: np.ndarray, beta: float) -> tuple[float, float]:
    """G = Σw·(E_p[z] − z_y), H = Σw·Var_p(z) with p = softmax(β·z), written independently of
    the library (no shift by the maximum)."""
    p = softmax(beta * z, axis=1)
    mean = (p * z).sum(axis=1)
    variance = (p * z * z).sum(axis=1) - mean**2
    true = z[np.arange(len(y)), y]
    return float(np.sum(w * (mean - true))), float(np.sum(w * variance))


def _higher_derivatives(
    z: np.ndarray, y: np.ndarray, w: np.ndarray, beta: float
) -> tuple[float, float, float, float]:
    """G, H and G″ = Σw·E_p[(z − E_p z)³], G‴ = Σw·(E_p[(z − E_p z)⁴] − 3·Var_p(z)²): the
    third and fourth cumulants as central moments (the library sums raw moments)."""
    p = softmax(beta * z, axis=1)
    centred = z - (p * z).sum(axis=1, keepdims=True)
    variance = (p * centred**2).sum(axis=1)
    third = (p * centred**3).sum(axis=1)
    fourth = (p * centred**4).sum(axis=1) - 3.0 * variance**2
    gradient, curvature = _derivatives(z, y, w, beta)
    return gradient, curvature, float(np.sum(w * third)), float(np.sum(w * fourth))


def _search(z: np.ndarray, y: np.ndarray, w: np.ndarray, higher: bool = False) -> SearchState:
    first = np.array([_derivatives(z, y, w, beta) for beta in FIRST_BETAS])
    state = start(first[:, 0], first[:, 1])
    while not state.done:
        if higher:
            state = advance(state, *_higher_derivatives(z, y, w, state.beta))
        else:
            state = advance(state, *_derivatives(z, y, w, state.beta))
    return state


@pytest.mark.parametrize("true_temperature", [0.3, 1.0, 2.5, 8.0])
def test_newton_search_finds_the_minimiser_of_the_weighted_nll(true_temperature: float) -> None:
    rng = np.random.default_rng(int(true_temperature * 10))
    n, k = 3000, 7
    z = rng.normal(0.0, 3.0, size=(n, k))
    # Labels drawn from softmax(z / T): the NLL's minimiser is near T.
    p = softmax(z / true_temperature, axis=1)
    y = np.array([rng.choice(k, p=row) for row in p])
    w = rng.uniform(0.2, 3.0, size=n)
    state = _search(z, y, w)
    assert state.interior
    assert state.passes <= 4
    assert state.temperature == pytest.approx(exact_temperature(z, y, w), rel=1e-7)
    # At the minimiser the gradient vanishes: another Newton step G/H in β moves it by nothing.
    assert state.temperature is not None
    gradient, curvature = _derivatives(z, y, w, 1.0 / state.temperature)
    assert abs(gradient / curvature) < 1e-9 / state.temperature


@pytest.mark.parametrize("classes", [3, 10, 100])
@pytest.mark.parametrize("true_temperature", [0.06, 0.3, 0.7, 1.6, 2.5, 8.0])
def test_the_third_and_fourth_derivatives_save_a_pass_at_the_same_temperature(
    true_temperature: float, classes: int
) -> None:
    rng = np.random.default_rng(int(true_temperature * 100) + classes)
    n = 3000
    z = rng.normal(0.0, 3.0, size=(n, classes))
    p = softmax(z / true_temperature, axis=1)
    y = np.minimum((p.cumsum(axis=1) < rng.uniform(size=(n, 1))).sum(axis=1), classes - 1)
    w = rng.uniform(0.2, 3.0, size=n)
    newton = _search(z, y, w)
    higher = _search(z, y, w, higher=True)
    assert higher.interior and newton.interior
    assert higher.passes <= newton.passes - 1
    assert higher.temperature == pytest.approx(newton.temperature, rel=1e-9)
    assert higher.temperature == pytest.approx(exact_temperature(z, y, w), rel=1e-7)
    assert higher.temperature is not None
    gradient, curvature = _derivatives(z, y, w, 1.0 / higher.temperature)
    assert abs(gradient / curvature) < 1e-9 / higher.temperature


def test_the_cubic_model_step_is_the_root_of_the_cubic() -> None:
    # G(δ) = −0.01 + δ + 0.5·δ²/2 + 0.3·δ³/6 has one real root near the Newton step 0.01.
    roots = np.roots([0.3 / 6, 0.5 / 2, 1.0, -0.01])
    root = float(roots[np.argmin(np.abs(roots - 0.01))].real)
    delta, correction = cubic_model_step(-0.01, 1.0, 0.5, 0.3)
    # Halley's step s/(1 + s·G″/(2H)) leaves the model at a value of order s³: the correction.
    halley = 0.01 / (1 + 0.01 * 0.5 / 2)
    residual = -0.01 + halley + 0.5 * halley**2 / 2 + 0.3 * halley**3 / 6
    assert correction == pytest.approx(abs(residual), rel=1e-12)
    assert 1e-8 < correction < 1e-6
    # The corrected step's error is of the order of the correction times s·G″/H = 0.005.
    assert abs(delta - root) <= 2 * correction * 0.01 * 0.5
    assert abs(halley - root) > 100 * abs(delta - root)


def test_a_strongly_curved_model_starts_from_the_newton_step() -> None:
    # s·G″/(2H) = 0.01·200/2 = 1: Halley's denominator is not trusted, so the correction
    # starts from s = 0.01, where the model is −0.01 + 0.01 + 200·10⁻⁴/2 = 0.01.
    delta, correction = cubic_model_step(-0.01, 1.0, 200.0, 0.0)
    assert delta == pytest.approx(0.0, abs=1e-15)
    assert correction == pytest.approx(0.01, rel=1e-12)


def test_a_far_step_ignores_the_higher_derivatives() -> None:
    # A Newton step of 10 % of β is outside the cubic model's range: plain Newton, not done.
    state = advance(SearchState(0.5, 2.0, 1.0), -0.1, 1.0, 0.0, 0.0)
    assert not state.done and state.beta == pytest.approx(1.1)


def test_a_gradient_of_one_sign_gives_a_bound() -> None:
    # NLL rising from the smallest β (largest T): T at its upper bound; falling: lower bound.
    ones = np.ones(len(FIRST_BETAS))
    rising = start(ones, ones)
    assert (rising.temperature, rising.interior) == (TEMPERATURE_MAX, False)
    falling = start(-ones, ones)
    assert (falling.temperature, falling.interior) == (TEMPERATURE_MIN, False)


def test_all_correct_rows_have_no_interior_minimum() -> None:
    # Every label is the arg max: the NLL falls as β grows, so T stops at its lower bound.
    z = np.array([[3.0, 0.0, -1.0], [0.5, 2.0, 0.0]])
    y = np.array([0, 1])
    state = _search(z, y, np.ones(2))
    assert (state.temperature, state.interior) == (TEMPERATURE_MIN, False)


def test_a_step_outside_the_bracket_bisects_in_log_beta() -> None:
    # Bracket (1, 20) at β = 2: G < 0 with a tiny H asks for a step far beyond 20, so the
    # bracket becomes (2, 20) and the next β its geometric midpoint.
    state = advance(SearchState(1.0, 20.0, 2.0), -1.0, 1e-9)
    assert not state.done
    assert (state.low, state.high) == (2.0, 20.0)
    assert state.beta == pytest.approx(np.sqrt(40.0))


def test_the_interpolant_of_a_cubic_in_log_beta_is_the_cubic() -> None:
    # G(u) = u³ + u − 2 with u = log β has its only root at u = 1 (β = e); a cubic Hermite
    # interpolant of a cubic is exact. dG/du = 3u² + 1 = β·H, so H = (3u² + 1)/β.
    u = np.array([-1.0, 0.0, 2.0])
    betas = np.exp(u)
    root = hermite_root(betas, u**3 + u - 2.0, (3 * u**2 + 1) / betas)
    assert root is not None
    assert root[0] == pytest.approx(np.e, rel=1e-12)
    assert root[1] == 1  # the pair (u = 0, u = 2) brackets it
    assert hermite_root(np.array([1.0, 2.0]), np.array([1.0, 2.0]), np.ones(2)) is None


def test_the_first_points_are_log_spaced_over_the_bounds_with_one_among_them() -> None:
    betas = np.array(FIRST_BETAS)
    assert betas[0] == pytest.approx(1 / TEMPERATURE_MAX)
    assert betas[-1] == pytest.approx(1 / TEMPERATURE_MIN)
    np.testing.assert_allclose(
        betas[1:] / betas[:-1], (TEMPERATURE_MAX / TEMPERATURE_MIN) ** (1 / 8)
    )
    assert np.isclose(betas, 1.0).sum() == 1


def test_the_search_stops_after_max_passes() -> None:
    state = SearchState(0.5, 2.0, 1.0, passes=MAX_PASSES - 1)
    # A gradient whose Newton step stays large: the pass limit ends the search.
    done = advance(state, -0.1, 1.0)
    assert done.done and done.passes == MAX_PASSES


def test_the_sampling_rate_is_one_bound_for_the_run() -> None:
    from spark_calib.recalibration.temperature_fit import sample_rate

    # 4,000 of 16,000 valid rows over two versions: r = ¼; under the bound or without one: 1.
    assert sample_rate({"v1": 6_000, "v2": 10_000}, 4_000) == 0.25
    assert sample_rate({"v1": 6_000, "v2": 10_000}, 16_000) == 1.0
    assert sample_rate({"v1": 6_000}, None) == 1.0
