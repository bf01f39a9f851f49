"""The two quantiles an interval needs, on the driver, in plain Python (no SciPy at run time).

- ``normal_quantile(level)``: z with P(|Z| ≤ z) = level (``statistics.NormalDist``).
- ``t_quantile(level, dof)``: t with P(|T_ν| ≤ t) = level for an integer ν ≥ 1, by bisection
  on the closed form of the t distribution for integer degrees of freedom (Abramowitz & Stegun
  26.7.3–26.7.4): with θ = atan(t/√ν),
  ν odd: A = (2/π)·[θ + sin θ·(cos θ + (2/3)cos³θ + … + (2·4⋯(ν−3))/(1·3⋯(ν−2))·cos^{ν−2}θ)];
  ν even: A = sin θ·[1 + (1/2)cos²θ + (1·3)/(2·4)cos⁴θ + … + (1·3⋯(ν−3))/(2·4⋯(ν−2))·cos^{ν−2}θ].
  Tested against ``scipy.stats.t.ppf`` to 1e-9.
"""

from __future__ import annotations

import math
from statistics import NormalDist


def normal_quantile(level: float) -> float:
    """z such that P(|Z| ≤ z) = ``level``."""
    return NormalDist().inv_cdf((1.0 + level) / 2.0)


def t_central_probability(t: float, dof: int) -> float:
    """P(|T| ≤ t) for t ≥ 0 and an integer number of degrees of freedom ``dof`` ≥ 1."""
    theta = math.atan(t / math.sqrt(dof))
    sin, cos = math.sin(theta), math.cos(theta)
    if dof % 2 == 1:
        if dof == 1:
            return 2.0 * theta / math.pi
        term = cos
        total = cos
        for k in range(3, dof - 1, 2):
            term *= (k - 1) / k * cos * cos
            total += term
        return 2.0 / math.pi * (theta + sin * total)
    term = 1.0
    total = 1.0
    for k in range(2, dof - 1, 2):
        term *= (k - 1) / k * cos * cos
        total += term
    return sin * total


def t_quantile(level: float, dof: int) -> float:
    """t such that P(|T_dof| ≤ t) = ``level`` (bisection to double precision)."""
    low, high = 0.0, 1.0
    while t_central_probability(high, dof) < level:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        if t_central_probability(middle, dof) < level:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0
