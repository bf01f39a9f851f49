"""The multiclass temperature's driver step by hand: the cubic Hermite root in log β, the bounds
and the Newton step."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spark_calib.constants import TEMPERATURE_MAX, TEMPERATURE_MIN
from spark_calib.recalibration.temperature_grid import (
    grid_betas,
    hermite_root,
    newton_step,
    temperature_from_grid,
)


def test_the_interpolant_of_a_cubic_in_log_beta_is_the_cubic() -> None:
    # G(u) = u³ + u − 2 with u = log β has its only root at u = 1 (β = e); a cubic Hermite
    # interpolant of a cubic is exact. dG/du = 3u² + 1 = β·H, so H = (3u² + 1)/β.
    u = np.array([-1.0, 0.0, 2.0])
    betas = np.exp(u)
    gradient = u**3 + u - 2.0
    curvature = (3 * u**2 + 1) / betas
    root = hermite_root(betas, gradient, curvature)
    assert root is not None
    assert root[0] == pytest.approx(math.e, rel=1e-12)
    assert root[1] == 1  # the pair (u = 0, u = 2) brackets it


def test_no_sign_change_has_no_root() -> None:
    betas = np.array([1.0, 2.0])
    assert hermite_root(betas, np.array([1.0, 2.0]), np.array([1.0, 1.0])) is None


def test_the_grid_is_log_spaced_over_the_bounds() -> None:
    betas = grid_betas()
    assert betas[0] == pytest.approx(1 / TEMPERATURE_MAX) and betas[-1] == pytest.approx(
        1 / TEMPERATURE_MIN
    )
    ratios = betas[1:] / betas[:-1]
    np.testing.assert_allclose(ratios, (TEMPERATURE_MAX / TEMPERATURE_MIN) ** (1 / 19))


def test_a_gradient_of_one_sign_gives_a_bound() -> None:
    size = len(grid_betas())
    ones = np.ones(size)
    # NLL rising from the smallest β (largest T): T at its upper bound; falling: lower bound.
    assert temperature_from_grid(ones, ones) == (TEMPERATURE_MAX, False)
    assert temperature_from_grid(-ones, ones) == (TEMPERATURE_MIN, False)


def test_newton_step_by_hand() -> None:
    # T = 2 (β = 0.5), G = 3, H = 10: β′ = 0.5 − 0.3 = 0.2, T′ = 5, step 3.
    assert newton_step(2.0, 3.0, 10.0) == pytest.approx(3.0)
    assert newton_step(2.0, 3.0, 0.0) is None
