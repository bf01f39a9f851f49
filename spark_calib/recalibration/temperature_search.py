"""The multiclass temperature by a safeguarded Newton search on the NLL's exact derivatives.

With β = 1/T, the weighted NLL of a key's fit rows is convex in β: G(β) = NLL′ = Σw·g(β) and
H(β) = NLL″ = Σw·h(β) ≥ 0 (``spark_calib.rows.temperature_terms``). Each Spark pass sums G and H
per key at the β this search asks for; the search, on the driver, picks the next β:

- the first pass evaluates the ``FIRST_POINTS`` β log-spaced over [β_min, β_max] =
  [1/T_MAX, 1/T_MIN] (ratio 2.1; β = 1 among them). G(β_min) ≥ 0 gives the bound T̂ = T_MAX,
  G(β_max) ≤ 0 the bound T̂ = T_MIN (no interior minimum, as for an all-correct key).
  Otherwise the root lies between the first two points with G_k < 0 ≤ G_{k+1}, the bracket,
  and the search starts at the root of the cubic Hermite interpolant of G in log β there
  (values G, slopes dG/d log β = β·H): close enough that two Newton steps, or one step of
  the cubic model (below), usually finish;
- each next β is the Newton step β − G/H, or the bracket's geometric midpoint when that step
  leaves the bracket or H = 0; each evaluation narrows the bracket by the sign of G;
- a key stops when its Newton step is at most ``STEP_TOLERANCE``·β: it then takes β − G/H.
  Newton converges quadratically, so the relative error left is of the order of the step's
  square, about 10⁻¹² (each pass is a Spark job: a tighter rule would cost one more pass for
  digits nobody reads). It also stops when its bracket is narrower than
  ``RELATIVE_TOLERANCE``·β, or after ``MAX_PASSES`` passes.

**Higher order, one pass fewer.** When a pass also sums the third and fourth derivatives,
G″ = Σw·κ₃ and G‴ = Σw·κ₄ (``advance``'s ``third`` and ``fourth``), the step solves the cubic
Taylor model G + H·δ + G″·δ²/2 + G‴·δ³/6 = 0 near the Newton step s = −G/H: Halley's step
δ_H = s / (1 + s·G″/(2H)), then one Newton correction on the model, δ = δ_H − r/H with r the
model's value at δ_H. The model's own error is of order s⁴, and |r/H| (of order s³) is the size
of the last correction. A key stops at β + δ when |s| ≤ ``LOCAL_STEP``·β (the model holds) and
|r/H| ≤ ``CORRECTION_TOLERANCE``·β: the error left is then of the order of |r/H|·|s|/β plus
the s⁴ term, about 10⁻¹² relative for the steps met in practice (about 10⁻³·β). On the unit
tests' logs this stops every key one pass earlier than the plain rule, at the same T̂ to 10⁻⁹.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from spark_calib.constants import TEMPERATURE_MAX, TEMPERATURE_MIN

STEP_TOLERANCE = 1e-6
RELATIVE_TOLERANCE = 1e-10
MAX_PASSES = 60
BETA_MIN = 1.0 / TEMPERATURE_MAX
BETA_MAX = 1.0 / TEMPERATURE_MIN
FIRST_POINTS = 9
FIRST_BETAS: tuple[float, ...] = tuple(
    float(b) for b in np.geomspace(BETA_MIN, BETA_MAX, FIRST_POINTS)
)
BISECTION_STEPS = 100
LOCAL_STEP = 1e-2
CORRECTION_TOLERANCE = 1e-9


@dataclass(frozen=True)
class SearchState:
    """One key's search: the bracket (low, high) of β̂, the β to evaluate next, the passes so
    far, and, once done, T̂ and whether it is interior (not at a bound)."""

    low: float
    high: float
    beta: float
    passes: int = 1
    temperature: float | None = None
    interior: bool = False

    @property
    def done(self) -> bool:
        """Whether T̂ is found."""
        return self.temperature is not None


def start(gradient: np.ndarray, curvature: np.ndarray) -> SearchState:
    """The state after the first pass: G and H at ``FIRST_BETAS``."""
    if gradient[0] >= 0.0:
        return SearchState(BETA_MIN, BETA_MIN, BETA_MIN, temperature=TEMPERATURE_MAX)
    if gradient[-1] <= 0.0:
        return SearchState(BETA_MAX, BETA_MAX, BETA_MAX, temperature=TEMPERATURE_MIN)
    found = hermite_root(np.asarray(FIRST_BETAS), gradient, curvature)
    assert found is not None
    beta, k = found
    return SearchState(FIRST_BETAS[k], FIRST_BETAS[k + 1], beta)


def hermite_root(
    betas: np.ndarray, gradient: np.ndarray, curvature: np.ndarray
) -> tuple[float, int] | None:
    """(β, m): the root of the cubic Hermite interpolant of G in log β on the first pair
    (β_m, β_{m+1}) with G_m < 0 ≤ G_{m+1}; None when G does not change sign."""
    rising = np.flatnonzero((gradient[:-1] < 0.0) & (gradient[1:] >= 0.0))
    if len(rising) == 0:
        return None
    k = int(rising[0])
    start, end = float(np.log(betas[k])), float(np.log(betas[k + 1]))
    width = end - start
    slope_low = curvature[k] * betas[k]
    slope_high = curvature[k + 1] * betas[k + 1]

    def interpolant(u: float) -> float:
        t = (u - start) / width
        return float(
            (2 * t**3 - 3 * t**2 + 1) * gradient[k]
            + (t**3 - 2 * t**2 + t) * width * slope_low
            + (-2 * t**3 + 3 * t**2) * gradient[k + 1]
            + (t**3 - t**2) * width * slope_high
        )

    low, high = start, end
    for _ in range(BISECTION_STEPS):
        middle = 0.5 * (low + high)
        if interpolant(middle) < 0.0:
            low = middle
        else:
            high = middle
    return float(np.exp(0.5 * (low + high))), k


def advance(
    state: SearchState,
    gradient: float,
    curvature: float,
    third: float | None = None,
    fourth: float | None = None,
) -> SearchState:
    """The state after G and H (and, when given, G″ and G‴) at ``state.beta``."""
    beta = state.beta
    passes = state.passes + 1
    if gradient == 0.0:
        return SearchState(beta, beta, beta, passes, 1.0 / beta, interior=True)
    low, high = (beta, state.high) if gradient < 0.0 else (state.low, beta)
    step = -gradient / curvature if curvature > 0.0 else math.inf
    following = beta + step
    if abs(step) <= STEP_TOLERANCE * beta and low <= following <= high:
        return SearchState(low, high, following, passes, 1.0 / following, interior=True)
    if third is not None and fourth is not None and abs(step) <= LOCAL_STEP * beta:
        delta, correction = cubic_model_step(gradient, curvature, third, fourth)
        following = beta + delta
        if abs(correction) <= CORRECTION_TOLERANCE * beta and low <= following <= high:
            return SearchState(low, high, following, passes, 1.0 / following, interior=True)
    if not low < following < high:
        following = math.sqrt(low * high)
    if high - low <= RELATIVE_TOLERANCE * low or passes >= MAX_PASSES:
        return SearchState(low, high, following, passes, 1.0 / following, interior=True)
    return SearchState(low, high, following, passes)


def cubic_model_step(
    gradient: float, curvature: float, third: float, fourth: float
) -> tuple[float, float]:
    """(δ, |r/H|): the root near 0 of G + H·δ + G″·δ²/2 + G‴·δ³/6 by Halley's step and one
    Newton correction on the model, and the size of that correction (H > 0)."""
    step = -gradient / curvature
    ratio = step * third / (2.0 * curvature)
    halley = step / (1.0 + ratio) if abs(ratio) < 0.5 else step
    residual = gradient + curvature * halley + third * halley**2 / 2.0 + fourth * halley**3 / 6.0
    correction = residual / curvature
    return halley - correction, abs(correction)
