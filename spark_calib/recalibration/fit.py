"""Fit the binary recalibration maps on fine-cell pseudo-observations (NumPy, on the driver).

The input is one point per non-empty fine cell c and label of the fit rows, in score order:
the mean logit z̄_c = Σw·logit(s)/Σw, the weight W_c = Σw and the positive weight O_c = Σw·y
(W_c or 0). Every row of a cell and label is represented by z̄_c (so Σw·y·z is exact); the
cells are at most 1/16 wide in log-odds (``spark_calib.rows.cells``), which moves T by about
5e-5 from its row-level value (``research/statistics-v2.md`` §6). With softplus(u) =
log(1 + eᵘ), the weighted negative log-likelihood of the map u(z) is

    NLL = Σ_c [W_c·softplus(u(z̄_c)) − O_c·u(z̄_c)].

- ``temperature``: u = z/T = β·z, T ∈ [``TEMPERATURE_MIN``, ``TEMPERATURE_MAX``]. NLL is convex
  in β (NLL″ = Σ W z̄² σ(βz̄)(1 − σ(βz̄)) ≥ 0), so the bounded minimiser is the root of
  g(β) = Σ z̄(W σ(βz̄) − O) in the bracket, or the bound g points to; found by Newton steps kept
  inside a shrinking bracket (bisection when a step leaves it).
- ``platt``: u = a + b·z, the unpenalised weighted logistic regression of y on logit(s) (Platt
  1999 on logit(s); the fit of ``calibration_intercept``/``calibration_slope``, here with the
  cells split by label, which makes the linear term exact), by Newton
  steps from (0, 1) with step halving; None when all fit labels are equal (no finite maximum)
  or the information matrix is singular (one cell).
- ``isotonic``: pool-adjacent-violators on the cells (labels merged) (ȳ_c = O_c/W_c, weight
  W_c) in score order: the
  weighted least-squares non-decreasing fit. The map is a step function on the cells: a score
  in cell c gets the value of the block holding the last fit cell at or before c (the first
  block's value below the first fit cell). Knots are the blocks' first cells and values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spark_calib.constants import TEMPERATURE_MAX, TEMPERATURE_MIN

NEWTON_MAX_STEPS = 100
# Relative width of the β bracket at which the temperature search stops.
BETA_TOLERANCE = 1e-13
PLATT_TOLERANCE = 1e-12


@dataclass(frozen=True)
class FitPoints:
    """Pseudo-observations of the fit rows, one per fine cell and label, in ascending cell
    order."""

    cell: np.ndarray  # int, the union-grid cell id
    z: np.ndarray  # the mean logit z̄_c
    weight: np.ndarray  # W_c
    positive: np.ndarray  # O_c

    @property
    def total_weight(self) -> float:
        """W = Σ_c W_c."""
        return float(self.weight.sum())


def softplus(u: np.ndarray) -> np.ndarray:
    """log(1 + eᵘ) without overflow."""
    return np.logaddexp(0.0, u)


def sigmoid(u: np.ndarray) -> np.ndarray:
    """1/(1 + e⁻ᵘ) without overflow."""
    out: np.ndarray = np.exp(-softplus(-u))
    return out


def weighted_nll(points: FitPoints, u: np.ndarray) -> float:
    """Σ_c [W_c softplus(u_c) − O_c u_c]: the NLL of the points under logits u."""
    return float(np.sum(points.weight * softplus(u) - points.positive * u))


def fit_temperature(points: FitPoints) -> float | None:
    """T ∈ [T_MIN, T_MAX] minimising Σ_c [W_c softplus(z̄_c/T) − O_c z̄_c/T]; None with no
    weight."""
    if points.total_weight <= 0.0:
        return None
    z, w, o = points.z, points.weight, points.positive

    def gradient(beta: float) -> float:
        return float(np.sum(z * (w * sigmoid(beta * z) - o)))

    def curvature(beta: float) -> float:
        p = sigmoid(beta * z)
        return float(np.sum(w * z * z * p * (1.0 - p)))

    low, high = 1.0 / TEMPERATURE_MAX, 1.0 / TEMPERATURE_MIN
    if gradient(low) >= 0.0:
        return TEMPERATURE_MAX
    if gradient(high) <= 0.0:
        return TEMPERATURE_MIN
    beta = min(max(1.0, low), high)
    for _ in range(NEWTON_MAX_STEPS):
        g = gradient(beta)
        if g == 0.0:
            break
        if g > 0.0:
            high = beta
        else:
            low = beta
        if high - low <= BETA_TOLERANCE * high:
            break
        h = curvature(beta)
        step = beta - g / h if h > 0.0 else np.nan
        beta = step if low < step < high else 0.5 * (low + high)
    return 1.0 / beta


def fit_platt(points: FitPoints) -> tuple[float, float] | None:
    """(a, b) maximising Σ_c [O_c u_c − W_c softplus(u_c)], u = a + b·z̄_c; None when every fit
    label is equal or the information matrix is singular."""
    z, w, o = points.z, points.weight, points.positive
    total, positives = float(w.sum()), float(o.sum())
    if total <= 0.0 or positives <= 0.0 or positives >= total:
        return None
    params = np.array([0.0, 1.0])
    design = np.stack([np.ones_like(z), z], axis=1)

    def loss(theta: np.ndarray) -> float:
        return weighted_nll(points, design @ theta)

    current = loss(params)
    for _ in range(NEWTON_MAX_STEPS):
        p = sigmoid(design @ params)
        grad = design.T @ (w * p - o)
        info = design.T @ (design * (w * p * (1.0 - p))[:, None])
        if np.linalg.det(info) <= 0.0:
            return None
        step = np.linalg.solve(info, grad)
        scale = 1.0
        while scale > 1e-10:
            trial = params - scale * step
            value = loss(trial)
            if value <= current:
                break
            scale /= 2.0
        params, previous, current = trial, current, value
        if np.max(np.abs(scale * step)) < PLATT_TOLERANCE or previous - current == 0.0:
            break
    return float(params[0]), float(params[1])


@dataclass(frozen=True)
class IsotonicMap:
    """The step map: ``cells[i]`` is the first fit cell of block i and ``values[i]`` its
    value ΣO/ΣW over the block; non-decreasing."""

    cells: np.ndarray
    values: np.ndarray

    def at_cells(self, cells: np.ndarray) -> np.ndarray:
        """The map's value for scores in ``cells``: the last block starting at or before the
        cell (the first block before every knot)."""
        index = np.searchsorted(self.cells, cells, side="right") - 1
        return self.values[np.clip(index, 0, len(self.values) - 1)]


def pool_adjacent_violators(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The weighted isotonic (non-decreasing) least-squares fit of ``values``, point by point."""
    block_value: list[float] = []
    block_weight: list[float] = []
    block_size: list[int] = []
    for value, weight in zip(values.tolist(), weights.tolist(), strict=True):
        block_value.append(value)
        block_weight.append(weight)
        block_size.append(1)
        while len(block_value) > 1 and block_value[-2] >= block_value[-1]:
            merged = block_weight[-2] + block_weight[-1]
            mean = (
                block_value[-2] * block_weight[-2] + block_value[-1] * block_weight[-1]
            ) / merged
            size = block_size[-2] + block_size[-1]
            del block_value[-1], block_weight[-1], block_size[-1]
            block_value[-1], block_weight[-1], block_size[-1] = mean, merged, size
    return np.repeat(np.array(block_value), block_size)


def fit_isotonic(points: FitPoints) -> IsotonicMap | None:
    """PAV on the cells' observed rates; knots where the fitted value changes. None with no
    weight."""
    if points.total_weight <= 0.0:
        return None
    cells, inverse = np.unique(points.cell, return_inverse=True)
    weight = np.bincount(inverse, points.weight, minlength=len(cells))
    positive = np.bincount(inverse, points.positive, minlength=len(cells))
    keep = weight > 0.0
    cells = cells[keep]
    fitted = pool_adjacent_violators(positive[keep] / weight[keep], weight[keep])
    starts = np.concatenate([[True], fitted[1:] != fitted[:-1]])
    return IsotonicMap(cells=cells[starts], values=fitted[starts])
