"""Before and after metrics of a recalibration map on the evaluated rows' cell sums.

Per evaluated row set r (the rows of one fine cell and one label, split at a calibration bin
edge when the cell straddles one): W_r = Σw,
O_r = Σw·y, C_r = Σw·s, z̄_r = Σw·logit(s)/W_r; W = Σ_r W_r.

Before (exact, the metrics table's definitions on the evaluated rows): ECE = Σ_b |Σ_{r∈b}
(O_r − C_r)| / W over the configured bins; NLL, Brier and accuracy = Σ_r Σw·term / W.

After, with p_r the map's value for the row set:
- ECE = Σ_b |Σ_{r: bin(p_r)=b} (O_r − W_r p_r)| / W; Brier = Σ_r (W_r p_r² − 2 p_r O_r + O_r)/W;
  accuracy = Σ_r (O_r if p_r ≥ threshold else W_r − O_r)/W;
- NLL: temperature and Platt, u_r = u(z̄_r): Σ_r [W_r softplus(u_r) − O_r u_r]/W (the exact
  logistic log-loss, no ε); isotonic:
  −Σ_r [O_r log max(p_r, ε) + (W_r − O_r) log max(1 − p_r, ε)]/W.

Isotonic is constant on every cell, so its after metrics are exact. Temperature and Platt
(u = a + b·z, b > 0) are applied at the set's mean logit z̄_r instead of row by row. For a
smooth f, Σw f(zᵢ) − W_r f(z̄_r) has no first-order term (Σw(zᵢ − z̄_r) = 0), so it is at most
½ sup|f″| Σw(zᵢ − z̄_r)² ≤ sup|f″| W_r h_r²/8, with h_r the cell's width in the clipped
log-odds (≤ 1/16; 0 for the two end cells, which hold z = ±37 only) and the sup over the cell. With
σ′ = σ(1 − σ) and S_r = b²·sup_{z∈cell} σ′(a + b·z):

- NLL: f″ = b²σ′, bound Σ_r S_r W_r h_r²/8 / W;
- Brier: |f″| = b²|2σ′² + 2(σ − y)σ″| ≤ 2.5·b²σ′ (|σ″| ≤ σ′ ≤ ¼), bound 2.5× the NLL bound;
- ECE: a row set whose mapped interval [p_min, p_max] over its cell lies inside one bin moves
  its bin sum by |Σw(pᵢ − p_r)| ≤ S_r W_r h_r²/8 (|σ″| ≤ σ′); one that touches a bin edge
  may move rows to the next bin, at most 2Σw|y − pᵢ| ≤ 2(O_r(1 − p_min) + (W_r − O_r)p_max);
- accuracy: only a set whose cell has the decision point z* = (logit(threshold) − a)/b strictly
  inside can change, by at most W_r/W. Temperature with threshold 0.5 has z* = 0, a cell edge:
  its accuracy after is exact (and equal to before).

Top-label (task ``top_label``: s is the confidence, y is correct): the same, but a map rescales
the predicted class's confidence and leaves the prediction alone, so accuracy after = Σ_r O_r/W
= accuracy before, exactly (bound 0).

``after_bounds`` holds these bounds (0 for isotonic).

Reliability bins (``before_reliability``, ``after_reliability``): per non-empty calibration
bin b of the evaluated rows, (b, W_b, confidence_b, outcome_b) with W_b = Σ_{r∈b} W_r,
confidence_b = Σ_{r∈b} C_r / W_b before and Σ_{r∈b} W_r p_r / W_b after, outcome_b =
Σ_{r∈b} O_r / W_b; the bin of a row set is the one the ECE above uses (its row's bin before,
bin(p_r) after). So Σ_b W_b·|outcome_b − confidence_b| / W is the ECE before or after, exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spark_calib.config import Config
from spark_calib.constants import LOGIT_CLIP
from spark_calib.recalibration.fit import IsotonicMap, sigmoid, softplus
from spark_calib.recalibration.points import CellRows
from spark_calib.rows.cells import (
    EQUAL_WIDTH_CELLS,
    LOG_ODDS_CELLS,
    LOG_ODDS_LIMIT,
    LOG_ODDS_STEP,
)

SCORES = ("ece", "nll", "brier", "accuracy")
# (bin, weight, confidence, outcome) of one non-empty calibration bin.
ReliabilityBin = tuple[int, float, float, float]


@dataclass(frozen=True)
class Scores:
    """One value per score name (``SCORES``); None when the evaluated weight is 0."""

    values: dict[str, float | None]


def before_scores(rows: CellRows, config: Config) -> Scores:
    """ECE, NLL, Brier and accuracy of the evaluated rows as they are."""
    w = rows.sums["w"]
    total = float(w.sum())
    if total <= 0.0:
        return Scores(dict.fromkeys(SCORES))
    gap = np.bincount(rows.bin, rows.sums["o"] - rows.sums["c"], minlength=config.binning.n_bins)
    return Scores(
        {
            "ece": float(np.abs(gap).sum() / total),
            "nll": float(rows.sums["nll"].sum() / total),
            "brier": float(rows.sums["brier"].sum() / total),
            "accuracy": float(rows.sums["correct"].sum() / total),
        }
    )


def after_scores(
    rows: CellRows, config: Config, probability: np.ndarray, nll_terms: np.ndarray
) -> Scores:
    """The scores of the evaluated rows when row set r predicts ``probability[r]``;
    ``nll_terms[r]`` is its Σw·NLL."""
    w, o = rows.sums["w"], rows.sums["o"]
    total = float(w.sum())
    if total <= 0.0:
        return Scores(dict.fromkeys(SCORES))
    bins = bin_of(probability, config.binning.n_bins, config.binning.edges)
    gap = np.bincount(bins, o - w * probability, minlength=config.binning.n_bins)
    # Top-label: the map rescales the predicted class's confidence; the prediction stays.
    right = o if config.task == "top_label" else np.where(probability >= config.threshold, o, w - o)
    return Scores(
        {
            "ece": float(np.abs(gap).sum() / total),
            "nll": float(nll_terms.sum() / total),
            "brier": float(np.sum(w * probability**2 - 2.0 * probability * o + o) / total),
            "accuracy": float(right.sum() / total),
        }
    )


def logistic_after(
    rows: CellRows, config: Config, a: float, b: float
) -> tuple[Scores, dict[str, float]]:
    """After scores of u = a + b·z applied at each row set's mean logit, and their bounds."""
    w, o = rows.sums["w"], rows.sums["o"]
    u = a + b * rows.sums["z"] / w
    probability = sigmoid(u)
    scores = after_scores(rows, config, probability, w * softplus(u) - o * u)
    return scores, _logistic_bounds(rows, config, a, b)


def isotonic_after(rows: CellRows, config: Config, mapping: IsotonicMap) -> Scores:
    """After scores of the isotonic step map (exact: the map is constant on each cell)."""
    w, o = rows.sums["w"], rows.sums["o"]
    p = mapping.at_cells(rows.cell)
    eps = config.nll_eps
    nll = -(o * np.log(np.maximum(p, eps)) + (w - o) * np.log(np.maximum(1.0 - p, eps)))
    return after_scores(rows, config, p, nll)


def logistic_probability(rows: CellRows, a: float, b: float) -> np.ndarray:
    """p_r = σ(a + b·z̄_r), the value ``logistic_after`` gives row set r."""
    probability: np.ndarray = sigmoid(a + b * rows.sums["z"] / rows.sums["w"])
    return probability


def before_reliability(rows: CellRows, config: Config) -> list[ReliabilityBin]:
    """The evaluated rows' non-empty calibration bins as they are: (bin, W_b, Σ C_r / W_b,
    Σ O_r / W_b), in bin order (the bins of ``before_scores``' ECE)."""
    return reliability_bins(
        rows.bin, rows.sums["w"], rows.sums["c"], rows.sums["o"], config.binning.n_bins
    )


def after_reliability(
    rows: CellRows, config: Config, probability: np.ndarray
) -> list[ReliabilityBin]:
    """The non-empty calibration bins when row set r predicts ``probability[r]``: (bin of
    p_r, W_b, Σ W_r p_r / W_b, Σ O_r / W_b), in bin order (the bins of ``after_scores``' ECE)."""
    w = rows.sums["w"]
    bins = bin_of(probability, config.binning.n_bins, config.binning.edges)
    return reliability_bins(bins, w, w * probability, rows.sums["o"], config.binning.n_bins)


def reliability_bins(
    bins: np.ndarray,
    weight: np.ndarray,
    confidence_sum: np.ndarray,
    outcome_sum: np.ndarray,
    n_bins: int,
) -> list[ReliabilityBin]:
    """(bin, Σ weight, Σ confidence_sum / Σ weight, Σ outcome_sum / Σ weight) of the non-empty
    bins, in bin order."""
    w = np.bincount(bins, weight, minlength=n_bins)
    confidence = np.bincount(bins, confidence_sum, minlength=n_bins)
    outcome = np.bincount(bins, outcome_sum, minlength=n_bins)
    return [
        (int(b), float(w[b]), float(confidence[b] / w[b]), float(outcome[b] / w[b]))
        for b in np.flatnonzero(w > 0.0)
    ]


def _logistic_bounds(rows: CellRows, config: Config, a: float, b: float) -> dict[str, float]:
    w, o = rows.sums["w"], rows.sums["o"]
    total = float(w.sum())
    if total <= 0.0:
        return dict.fromkeys(SCORES, 0.0)
    low, high = cell_logit_range(rows.cell)
    u_low = np.minimum(a + b * low, a + b * high)
    u_high = np.maximum(a + b * low, a + b * high)
    # σ′ is largest at u = 0: at 0 when the interval holds it, else at the end nearer 0.
    nearest = np.where((u_low <= 0.0) & (u_high >= 0.0), 0.0, np.minimum(abs(u_low), abs(u_high)))
    slope = sigmoid(nearest) * (1.0 - sigmoid(nearest))
    curvature = b * b * slope * w * (high - low) ** 2 / 8.0
    p_low, p_high = sigmoid(u_low), sigmoid(u_high)
    bin_low = bin_of(p_low, config.binning.n_bins, config.binning.edges)
    bin_high = bin_of(p_high, config.binning.n_bins, config.binning.edges)
    moved = 2.0 * (o * (1.0 - p_low) + (w - o) * p_high)
    ece = np.where(bin_low == bin_high, curvature, moved)
    if b != 0.0 and config.task != "top_label":
        z_star = (np.log(config.threshold) - np.log1p(-config.threshold) - a) / b
        crossing = (low < z_star) & (z_star < high)
    else:
        crossing = np.zeros_like(low, dtype=bool)
    return {
        "ece": float(ece.sum() / total),
        "nll": float(curvature.sum() / total),
        "brier": float(2.5 * curvature.sum() / total),
        "accuracy": float(w[crossing].sum() / total),
    }


def cell_logit_range(cell: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[low, high] of logit(s) over union cell 1186·k + j (clipped to ±``LOGIT_CLIP``): the
    intersection of [logit(k/1000), logit((k+1)/1000)] with [(j − 593)/16, (j − 592)/16]
    (the end cells j = 0 and 1185 are the points −37 and 37)."""
    k = cell // LOG_ODDS_CELLS
    j = cell % LOG_ODDS_CELLS
    half = LOG_ODDS_CELLS // 2
    odds_low = np.where(j == 0, -LOGIT_CLIP, (j - half) / LOG_ODDS_STEP)
    odds_high = np.where(j == LOG_ODDS_CELLS - 1, LOGIT_CLIP, (j - half + 1) / LOG_ODDS_STEP)
    odds_low = np.where(j == LOG_ODDS_CELLS - 1, float(LOG_ODDS_LIMIT), odds_low)
    odds_high = np.where(j == 0, -float(LOG_ODDS_LIMIT), odds_high)
    with np.errstate(divide="ignore"):
        lower = k / EQUAL_WIDTH_CELLS
        upper = (k + 1) / EQUAL_WIDTH_CELLS
        width_low = np.log(lower) - np.log1p(-lower)
        width_high = np.log(upper) - np.log1p(-upper)
    low = np.clip(np.maximum(odds_low, width_low), -LOGIT_CLIP, LOGIT_CLIP)
    high = np.clip(np.minimum(odds_high, width_high), -LOGIT_CLIP, LOGIT_CLIP)
    return low, high


def bin_of(probability: np.ndarray, n_bins: int, edges: str) -> np.ndarray:
    """``spark_calib.rows.binning.bin_index`` in NumPy: the bin of each probability, placed by
    comparing with the double edges k/M."""
    m = float(n_bins)
    if edges == "left_closed":
        guess = np.floor(probability * m).astype(np.int64)
        above = probability >= (guess + 1) / m
        below = probability < guess / m
    else:
        guess = (np.ceil(probability * m) - 1).astype(np.int64)
        above = probability > (guess + 1) / m
        below = probability <= guess / m
    corrected = guess + above.astype(np.int64) - below.astype(np.int64)
    clipped: np.ndarray = np.clip(corrected, 0, n_bins - 1)
    return clipped
