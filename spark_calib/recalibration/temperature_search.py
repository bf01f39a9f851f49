"""The multiclass temperature by a safeguarded Newton search on the NLL's exact derivatives.

With β = 1/T, the weighted NLL of a key's fit rows is convex in β: G(β) = NLL′ = Σw·g(β) and
H(β) = NLL″ = Σw·h(β) ≥ 0 (``spark_calib.rows.temperature_terms``). Each Spark pass sums G and H
per key at the β this search asks for; the search, on the driver, picks the next β:

- the first pass evaluates β_min = 1/T_MAX, 1 and β_max = 1/T_MIN. G(β_min) ≥ 0 gives the
  bound T̂ = T_MAX, G(β_max) ≤ 0 the bound T̂ = T_MIN (no interior minimum, as for an
  all-correct key); otherwise the root of G lies in the bracket (β_min, β_max), which each
  evaluation narrows by the sign of G;
- each next β is the Newton step β − G/H, or the bracket's geometric midpoint when that step
  leaves the bracket or H = 0;
- a key stops when its Newton step is at most ``RELATIVE_TOLERANCE``·β (it then takes
  β − G/H: Newton converges quadratically, so the error left is of the order of the step's
  square), when its bracket is narrower than that, or after ``MAX_PASSES`` passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spark_calib.constants import TEMPERATURE_MAX, TEMPERATURE_MIN

RELATIVE_TOLERANCE = 1e-10
MAX_PASSES = 60
BETA_MIN = 1.0 / TEMPERATURE_MAX
BETA_MAX = 1.0 / TEMPERATURE_MIN
FIRST_BETAS = (BETA_MIN, 1.0, BETA_MAX)


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


def start(
    gradient: tuple[float, float, float], curvature: tuple[float, float, float]
) -> SearchState:
    """The state after the first pass: G and H at ``FIRST_BETAS``."""
    if gradient[0] >= 0.0:
        return SearchState(BETA_MIN, BETA_MIN, BETA_MIN, temperature=TEMPERATURE_MAX)
    if gradient[2] <= 0.0:
        return SearchState(BETA_MAX, BETA_MAX, BETA_MAX, temperature=TEMPERATURE_MIN)
    state = SearchState(BETA_MIN, BETA_MAX, 1.0, passes=0)
    return advance(state, gradient[1], curvature[1])


def advance(state: SearchState, gradient: float, curvature: float) -> SearchState:
    """The state after G and H at ``state.beta``."""
    beta = state.beta
    passes = state.passes + 1
    if gradient == 0.0:
        return SearchState(beta, beta, beta, passes, 1.0 / beta, interior=True)
    low, high = (beta, state.high) if gradient < 0.0 else (state.low, beta)
    step = -gradient / curvature if curvature > 0.0 else math.inf
    following = beta + step
    if abs(step) <= RELATIVE_TOLERANCE * beta and low <= following <= high:
        return SearchState(low, high, following, passes, 1.0 / following, interior=True)
    if not low < following < high:
        following = math.sqrt(low * high)
    if high - low <= RELATIVE_TOLERANCE * low or passes >= MAX_PASSES:
        return SearchState(low, high, following, passes, 1.0 / following, interior=True)
    return SearchState(low, high, following, passes)


def newton_step(temperature: float, gradient: float, curvature: float) -> float | None:
    """T′ − T̂ with 1/T′ = 1/T̂ − G/H: how far one exact Newton step moves the fit (None when
    H = 0)."""
    if curvature <= 0.0:
        return None
    beta = 1.0 / temperature - gradient / curvature
    return 1.0 / beta - temperature if beta > 0.0 else None
