"""The interval multipliers against SciPy."""

from __future__ import annotations

import pytest
from scipy import stats

from spark_calib.metrics.quantiles import normal_quantile, t_quantile


@pytest.mark.parametrize("level", [0.8, 0.9, 0.95, 0.99])
def test_t_quantile_matches_scipy_for_every_integer_dof(level: float) -> None:
    for dof in range(1, 120):
        assert t_quantile(level, dof) == pytest.approx(
            stats.t.ppf((1 + level) / 2, dof), abs=1e-9
        ), dof


def test_normal_quantile_matches_scipy() -> None:
    assert normal_quantile(0.95) == pytest.approx(stats.norm.ppf(0.975), abs=1e-12)
