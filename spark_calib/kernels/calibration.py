"""The calibration and per-class metric families of one key, from its calibration bins.

Per key (model_version, slice_name, slice_value) and class row (class null: the top-label or
positive-class items; class k: the one-vs-rest items of class k), over the bins b with
W_b = Σw, C_b = Σw·c, O_b = Σw·o, S_b = O_b − C_b, W = Σ_b W_b, a bin occupied when W_b > 0:

- ece = Σ_b|S_b|/W; mce = max_occupied |S_b|/W_b; rmsce = sqrt(Σ_occupied S_b²/W_b / W);
- brier, nll, accuracy, mean_prediction, mean_label, expected_misclassification_cost: Σw·x/W;
  error_rate = 1 − accuracy; ll = −nll; count = n;
- calibration_ratio = Σw·c/Σw·o; calibration_in_the_large = (Σw·c − Σw·o)/W;
- ece_debiased = 2·ece − Σ_b W_b·E|d_b + s_b·Z|/W, with ȳ_b = O_b/W_b, p̄_b = C_b/W_b,
  d_b = ȳ_b − p̄_b, n_eff,b = W_b²/Σ_{i∈b}w², s_b² = ȳ_b(1 − ȳ_b)/n_eff,b and
  E|d + sZ| = s√(2/π)·exp(−d²/2s²) + d·erf(d/(s√2)) (|d| when s = 0);
- rmsce_debiased = sqrt(max(Σ_{n_eff,b>1} W_b[d_b² − ȳ_b(1 − ȳ_b)/(n_eff,b − 1)]/W, 0));
- ece_null = Σ_b W_b·√(2/π)·√(p̄_b(1 − p̄_b)/n_eff,b)/W;
- normalized_entropy = (nll) / H(Σw·o/W), H the binary entropy (null unless 0 < ō < 1);
- spiegelhalter_z = Σw(o − c)(1 − 2c)/sqrt(Σw²(1 − 2c)²c(1 − c)) (null when the variance is 0),
  spiegelhalter_p = erfc(|z|/√2);
- the Brier decomposition (Murphy; Stephenson et al. 2008) brier = brier_reliability −
  brier_resolution + brier_uncertainty + brier_within_bin, exactly: brier_reliability
  = Σ_b W_b(p̄_b − ȳ_b)²/W (never negative), brier_resolution = Σ_b W_b(ȳ_b − ō)²/W,
  brier_uncertainty = ō(1 − ō), brier_within_bin = (Σw·c² − 2Σw·c·o − Σ_b(C_b² − 2C_bO_b)/W_b)/W,
  the within-bin variance of the probabilities minus twice their within-bin covariance with
  the outcomes (WBV − WBC);
- classwise_ece: the ece of each class row, and a macro row (class null) averaging the classes'
  defined values, with the largest class n and weight sum.

A value is NaN (null) when its denominator is 0. Analytic standard errors (the influence
function, linearised; o is 0/1): a mean m = Σw·x/W has SE² = (Σw²x² − 2mΣw²x + m²Σw²)/W²;
ece SE² = [Σ_b Q2_b − 2·ece·Σ_b sign(S_b)·Q1_b + ece²·Σw²]/W² with Q1_b = Σ_{i∈b}w²(o − c),
Q2_b = Σ_{i∈b}w²(o − c)²; calibration_ratio R: SE² = (Σw²c² − 2RΣw²co + R²Σw²o)/(Σw·o)².
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from spark_calib.kernels.arrow_batch import (
    Rows,
    codes,
    ints,
    is_null,
    label_codes,
    memoized,
    select,
)
from spark_calib.kernels.cell_grid import cell_lower, cell_upper
from spark_calib.kernels.estimates import Estimates
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.replicates import replicated
from spark_calib.kernels.special import erf, erfc
from spark_calib.registry.metrics import CALIBRATION, PER_CLASS
from spark_calib.stats import schema as stats

# The sums the calibration bins carry.
BIN_SUMS = (
    stats.SUM_WEIGHT,
    stats.SUM_WEIGHT_CONFIDENCE,
    stats.SUM_WEIGHT_OUTCOME,
    stats.SUM_WEIGHT_CORRECT,
    stats.SUM_WEIGHT_BRIER,
    stats.SUM_WEIGHT_NLL,
    stats.SUM_WEIGHT_COST,
    stats.SUM_WEIGHT_SQ,
    stats.SUM_WEIGHT_CONFIDENCE_SQ,
    stats.SUM_WEIGHT_CONFIDENCE_OUTCOME,
    stats.SUM_WEIGHT_SQ_SPIEGELHALTER,
    stats.SUM_WEIGHT_SQ_OUTCOME,
    stats.SUM_WEIGHT_SQ_CONFIDENCE,
    stats.SUM_WEIGHT_SQ_CONFIDENCE_SQ,
    stats.SUM_WEIGHT_SQ_CONFIDENCE_OUTCOME,
    stats.SUM_WEIGHT_SQ_CORRECT,
    stats.SUM_WEIGHT_SQ_BRIER,
    stats.SUM_WEIGHT_SQ_BRIER_SQ,
    stats.SUM_WEIGHT_SQ_NLL,
    stats.SUM_WEIGHT_SQ_NLL_SQ,
)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

Terms = dict[str, np.ndarray]


def calibration_estimates(table: Rows, plan: FinishPlan) -> Estimates | None:
    """The calibration and per-class metrics of one key's valid statistics rows (columns
    ``class``, ``bin``, ``bucket``, ``cell`` with equal-mass bins, ``n`` and ``BIN_SUMS``)."""
    top_names, class_names = plan.names(CALIBRATION), plan.names(PER_CLASS)
    if not top_names and not class_names:
        return None
    bins = calibration_bins(table, plan)
    classes = bins.classes
    terms = _key_terms(bins.n, bins.sums, plan.n_bins, debiased="ece_debiased" in top_names)
    rows_class: list[Any] = []
    rows_metric: list[str] = []
    columns: list[np.ndarray] = []
    se_columns: list[float] = []
    row_index: list[int] = []
    for position, label in enumerate(classes):
        names = top_names if label is None else class_names
        for name in names:
            rows_class.append(label)
            rows_metric.append(name)
            columns.append(VALUES[name](terms)[:, position])
            se = SES.get(name)
            se_columns.append(float(se(terms)[0, position]) if se else math.nan)
            row_index.append(position)
    n_rows = terms["n"][0, row_index] if row_index else np.zeros(0, dtype=np.int64)
    w_rows = terms["w"][0, row_index] if row_index else np.zeros(0)
    replicates = terms["n"].shape[0]
    values = np.stack(columns, axis=1) if columns else np.zeros((replicates, 0))
    # A replicate without rows of a class has no value for it (it has no statistics row).
    present = terms["n"][:, row_index] > 0 if row_index else np.zeros((replicates, 0), bool)
    values = np.where(present, values, np.nan)
    se_values = np.array(se_columns, dtype=float)
    noise = np.array([m != "count" for m in rows_metric], dtype=bool)
    class_rows = [label is not None for label in classes]
    if class_names and any(class_rows):
        macro_values, macro_n, macro_w = _macros(class_names, terms, class_rows)
        for name, value in zip(class_names, macro_values, strict=True):
            rows_class.append(None)
            rows_metric.append(name)
            values = np.concatenate([values, value[:, None]], axis=1)
        k = len(class_names)
        n_rows = np.concatenate([n_rows, np.full(k, macro_n, dtype=np.int64)])
        w_rows = np.concatenate([w_rows, np.full(k, macro_w)])
        se_values = np.concatenate([se_values, np.full(k, np.nan)])
        noise = np.concatenate([noise, np.ones(k, dtype=bool)])
    return Estimates(
        classes=rows_class,
        metrics=rows_metric,
        values=values,
        n=n_rows,
        weight_sum=w_rows,
        se=se_values,
        error_bound=np.full(len(rows_metric), np.nan),
        noise=noise,
    )


@dataclass(frozen=True)
class CalibrationBins:
    """A key's calibration bins: its class rows (None: top-label), n and the ``BIN_SUMS`` of
    shape (R, classes, M + 1) (R: the point estimate then the G leave-one-bucket-out
    replicates; slot M holds the rows without a bin (regression), which count in the totals
    but in no bin), and the point estimate's bin edges, shape (classes, M) (NaN: an
    equal-mass bin that no cell fell in)."""

    classes: list[Any]
    n: np.ndarray
    sums: Terms
    lower: np.ndarray
    upper: np.ndarray


def calibration_bins(table: Rows, plan: FinishPlan) -> CalibrationBins:
    """The key's calibration bins (``binning.strategy``). A replicate's bin without rows has
    its sums set to exactly 0 (not the rounding residue of total − bucket). Built once per
    key (the calibration metrics and the reliability table both read them): read-only."""
    return memoized(table, ("calibration_bins", id(plan)), lambda: _read_only(_bins(table, plan)))


def _read_only(bins: CalibrationBins) -> CalibrationBins:
    for array in (bins.n, bins.lower, bins.upper, *bins.sums.values()):
        array.flags.writeable = False
    return bins


def _bins(table: Rows, plan: FinishPlan) -> CalibrationBins:
    if plan.equal_mass:
        return _equal_mass_bins(table, plan)
    n_bins = plan.n_bins
    classes, class_index = label_codes(table, stats.CLASS)
    bins = ints(table, stats.BIN, n_bins)
    place = (class_index, np.where((bins < 0) | (bins >= n_bins), n_bins, bins))
    shape = (len(classes), n_bins + 1)
    n, sums = replicated(table, plan, place, shape, BIN_SUMS)
    edges = np.arange(n_bins + 1, dtype=float) / float(n_bins)
    lower = np.broadcast_to(edges[:-1], (len(classes), n_bins))
    upper = np.broadcast_to(edges[1:], (len(classes), n_bins))
    return CalibrationBins(classes, n, sums, lower, upper)


def _equal_mass_bins(table: Rows, plan: FinishPlan) -> CalibrationBins:
    """Equal-mass bins of the top-label rows, per replicate: the fine cells in order are
    merged into M bins, cell c to bin min(M − 1, ⌊M·(W_{<c} + W_c/2)/W⌋) over the cells with
    rows and weight; a bin's edges are its first cell's lower
    and its last cell's upper edge."""
    n_bins = plan.n_bins
    top = is_null(table, stats.CLASS)
    cells = ints(table, stats.CELL, -1)
    kept = select(table, top & (cells >= 0))
    if kept.num_rows == 0:
        return CalibrationBins(
            [],
            np.zeros((plan.replicates, 0, n_bins + 1), np.int64),
            {name: np.zeros((plan.replicates, 0, n_bins + 1)) for name in BIN_SUMS},
            np.zeros((0, n_bins)),
            np.zeros((0, n_bins)),
        )
    distinct, cell_index = codes(ints(kept, stats.CELL, -1))
    n_cells, sums = replicated(kept, plan, (cell_index,), (len(distinct),), BIN_SUMS)
    weight = sums[stats.SUM_WEIGHT]
    used = (n_cells > 0) & (weight > 0.0)
    mass = np.where(used, weight, 0.0)
    before = np.cumsum(mass, axis=1) - 0.5 * mass
    total = mass.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        position = np.floor(before / total * float(n_bins))
    target = np.where(used, np.minimum(np.nan_to_num(position), n_bins - 1), n_bins).astype(int)
    replicate = np.broadcast_to(np.arange(plan.replicates)[:, None], target.shape)
    shape = (plan.replicates, 1, n_bins + 1)
    n = np.zeros(shape, dtype=np.int64)
    row = np.zeros_like(target)
    np.add.at(n, (replicate, row, target), np.where(used, n_cells, 0))
    out: Terms = {}
    for name, column in sums.items():
        binned = np.zeros(shape)
        np.add.at(binned, (replicate, row, target), np.where(used, column, 0.0))
        out[name] = binned
    # Slot M collected the unused cells with zero sums: it must not count rows either.
    n[..., n_bins] = 0
    ids = np.asarray(distinct, dtype=np.int64)
    lower = np.full(n_bins + 1, np.inf)
    upper = np.full(n_bins + 1, -np.inf)
    np.minimum.at(lower, target[0], cell_lower(ids))
    np.maximum.at(upper, target[0], cell_upper(ids))
    empty = np.isinf(lower[:n_bins])
    lower_edges = np.where(empty, np.nan, lower[:n_bins])[None]
    upper_edges = np.where(empty, np.nan, upper[:n_bins])[None]
    return CalibrationBins([None], n, out, lower_edges, upper_edges)


def _div(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator/denominator, NaN where the denominator is 0 (Spark's try_divide)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            denominator != 0.0, numerator / np.where(denominator != 0.0, denominator, 1.0), np.nan
        )


# Per-key total → the bin sum it adds up.
_TOTALS = {
    "w": stats.SUM_WEIGHT,
    "brier": stats.SUM_WEIGHT_BRIER,
    "nll": stats.SUM_WEIGHT_NLL,
    "correct": stats.SUM_WEIGHT_CORRECT,
    "cost": stats.SUM_WEIGHT_COST,
    "conf": stats.SUM_WEIGHT_CONFIDENCE,
    "outcome": stats.SUM_WEIGHT_OUTCOME,
    "w2": stats.SUM_WEIGHT_SQ,
    "conf_sq": stats.SUM_WEIGHT_CONFIDENCE_SQ,
    "conf_outcome": stats.SUM_WEIGHT_CONFIDENCE_OUTCOME,
    "spiegelhalter_var": stats.SUM_WEIGHT_SQ_SPIEGELHALTER,
    "w2_outcome": stats.SUM_WEIGHT_SQ_OUTCOME,
    "w2_conf": stats.SUM_WEIGHT_SQ_CONFIDENCE,
    "w2_conf_sq": stats.SUM_WEIGHT_SQ_CONFIDENCE_SQ,
    "w2_conf_outcome": stats.SUM_WEIGHT_SQ_CONFIDENCE_OUTCOME,
    "w2_correct": stats.SUM_WEIGHT_SQ_CORRECT,
    "w2_brier": stats.SUM_WEIGHT_SQ_BRIER,
    "w2_brier_sq": stats.SUM_WEIGHT_SQ_BRIER_SQ,
    "w2_nll": stats.SUM_WEIGHT_SQ_NLL,
    "w2_nll_sq": stats.SUM_WEIGHT_SQ_NLL_SQ,
}


def _key_terms(n: np.ndarray, sums: Terms, n_bins: int, debiased: bool) -> Terms:
    """Per (replicate, class row): the totals and the bin terms the metrics read."""
    terms: Terms = {name: sums[column].sum(axis=-1) for name, column in _TOTALS.items()}
    terms["n"] = n.sum(axis=-1)
    weight = sums[stats.SUM_WEIGHT][..., :n_bins]
    outcome = sums[stats.SUM_WEIGHT_OUTCOME][..., :n_bins]
    confidence = sums[stats.SUM_WEIGHT_CONFIDENCE][..., :n_bins]
    w2 = sums[stats.SUM_WEIGHT_SQ][..., :n_bins]
    gap = outcome - confidence
    occupied = weight > 0.0
    safe = np.where(occupied, weight, 1.0)
    terms["abs_gap"] = np.abs(gap).sum(axis=-1)
    ratio = np.where(occupied, np.abs(gap) / safe, -np.inf)
    max_gap = ratio.max(axis=-1) if n_bins else np.full(terms["n"].shape, -np.inf)
    terms["max_gap"] = np.where(np.isneginf(max_gap), np.nan, max_gap)
    terms["sq_gap"] = np.where(occupied, gap * gap / safe, 0.0).sum(axis=-1)
    terms["sq_outcome"] = np.where(occupied, outcome * outcome / safe, 0.0).sum(axis=-1)
    terms["sq_confidence_gap"] = np.where(
        occupied, (confidence * confidence - 2.0 * confidence * outcome) / safe, 0.0
    ).sum(axis=-1)
    q1 = (
        sums[stats.SUM_WEIGHT_SQ_OUTCOME][..., :n_bins]
        - sums[stats.SUM_WEIGHT_SQ_CONFIDENCE][..., :n_bins]
    )
    terms["signed_q1"] = (np.sign(gap) * q1).sum(axis=-1)
    rate = outcome / safe
    mean = confidence / safe
    d = rate - mean
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.where(occupied, weight * weight / w2, 0.0)
        null = SQRT_2_OVER_PI * np.sqrt(np.maximum(mean * (1.0 - mean), 0.0) * w2)
        terms["null_abs"] = np.where(occupied, null, 0.0).sum(axis=-1)
        debiased_sq = weight * (d * d - rate * (1.0 - rate) / (n_eff - 1.0))
        terms["sq_debiased"] = np.where(occupied & (n_eff > 1.0), debiased_sq, 0.0).sum(axis=-1)
        if debiased:
            spread = np.sqrt(np.maximum(rate * (1.0 - rate), 0.0) * w2) / safe
            positive = occupied & (spread > 0.0)
            s = np.where(positive, spread, 1.0)
            folded = s * SQRT_2_OVER_PI * np.exp(-(d * d) / (2.0 * s * s)) + d * erf(
                d / (s * math.sqrt(2.0))
            )
            expected = np.where(positive, folded, np.abs(d))
            terms["debias_abs"] = np.where(occupied, weight * expected, 0.0).sum(axis=-1)
    return terms


def _mean_se(total: str, sq_total: str, sq_square: str) -> Callable[[Terms], np.ndarray]:
    def se(t: Terms) -> np.ndarray:
        mean = _div(t[total], t["w"])
        numerator = t[sq_square] - 2.0 * mean * t[sq_total] + mean * mean * t["w2"]
        return _sqrt_variance(numerator, t["w"])

    return se


def _sqrt_variance(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    return np.sqrt(np.maximum(_div(numerator, denominator * denominator), 0.0))


def _ece(t: Terms) -> np.ndarray:
    return _div(t["abs_gap"], t["w"])


def _ece_se(t: Terms) -> np.ndarray:
    ece = _ece(t)
    q2 = t["w2_outcome"] - 2.0 * t["w2_conf_outcome"] + t["w2_conf_sq"]
    return _sqrt_variance(q2 - 2.0 * ece * t["signed_q1"] + ece * ece * t["w2"], t["w"])


def _calibration_in_the_large_se(t: Terms) -> np.ndarray:
    mean = _div(t["conf"] - t["outcome"], t["w"])
    sq_total = t["w2_conf"] - t["w2_outcome"]
    sq_square = t["w2_conf_sq"] - 2.0 * t["w2_conf_outcome"] + t["w2_outcome"]
    return _sqrt_variance(sq_square - 2.0 * mean * sq_total + mean * mean * t["w2"], t["w"])


def _calibration_ratio_se(t: Terms) -> np.ndarray:
    ratio = _div(t["conf"], t["outcome"])
    numerator = (
        t["w2_conf_sq"] - 2.0 * ratio * t["w2_conf_outcome"] + ratio * ratio * t["w2_outcome"]
    )
    return _sqrt_variance(numerator, t["outcome"])


def _spiegelhalter_z(t: Terms) -> np.ndarray:
    numerator = t["outcome"] - t["conf"] - 2.0 * t["conf_outcome"] + 2.0 * t["conf_sq"]
    variance = t["spiegelhalter_var"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            variance > 0.0, numerator / np.sqrt(np.where(variance > 0.0, variance, 1.0)), np.nan
        )


def _binary_entropy(p: np.ndarray) -> np.ndarray:
    inside = (p > 0.0) & (p < 1.0)
    q = np.where(inside, p, 0.5)
    return np.where(inside, -q * np.log(q) - (1.0 - q) * np.log(1.0 - q), np.nan)


def _mean_outcome(t: Terms) -> np.ndarray:
    return _div(t["outcome"], t["w"])


def _ratio(name: str) -> Callable[[Terms], np.ndarray]:
    return lambda t: _div(t[name], t["w"])


_ACCURACY_SE = _mean_se("correct", "w2_correct", "w2_correct")
_NLL_SE = _mean_se("nll", "w2_nll", "w2_nll_sq")

VALUES: dict[str, Callable[[Terms], np.ndarray]] = {
    "ece": _ece,
    "classwise_ece": _ece,
    "mce": lambda t: t["max_gap"],
    "rmsce": lambda t: np.sqrt(_div(t["sq_gap"], t["w"])),
    "brier": _ratio("brier"),
    "nll": _ratio("nll"),
    "accuracy": _ratio("correct"),
    "count": lambda t: t["n"].astype(float),
    "ece_debiased": lambda t: 2.0 * _ece(t) - _div(t["debias_abs"], t["w"]),
    "rmsce_debiased": lambda t: np.sqrt(np.maximum(_div(t["sq_debiased"], t["w"]), 0.0)),
    "ece_null": lambda t: _div(t["null_abs"], t["w"]),
    "mean_prediction": _ratio("conf"),
    "mean_label": _mean_outcome,
    "calibration_ratio": lambda t: _div(t["conf"], t["outcome"]),
    "calibration_in_the_large": lambda t: _div(t["conf"] - t["outcome"], t["w"]),
    "normalized_entropy": lambda t: _div(_div(t["nll"], t["w"]), _binary_entropy(_mean_outcome(t))),
    "spiegelhalter_z": _spiegelhalter_z,
    "spiegelhalter_p": lambda t: erfc(np.abs(_spiegelhalter_z(t)) / math.sqrt(2.0)),
    "brier_reliability": lambda t: _div(t["sq_gap"], t["w"]),
    "brier_resolution": lambda t: _div(
        t["sq_outcome"] - _div(t["outcome"] * t["outcome"], t["w"]), t["w"]
    ),
    "brier_uncertainty": lambda t: _mean_outcome(t) * (1.0 - _mean_outcome(t)),
    "brier_within_bin": lambda t: _div(
        t["conf_sq"] - 2.0 * t["conf_outcome"] - t["sq_confidence_gap"], t["w"]
    ),
    "error_rate": lambda t: 1.0 - _div(t["correct"], t["w"]),
    "ll": lambda t: -_div(t["nll"], t["w"]),
    "expected_misclassification_cost": _ratio("cost"),
}
SES: dict[str, Callable[[Terms], np.ndarray]] = {
    "ece": _ece_se,
    "classwise_ece": _ece_se,
    "brier": _mean_se("brier", "w2_brier", "w2_brier_sq"),
    "nll": _NLL_SE,
    "ll": _NLL_SE,
    "accuracy": _ACCURACY_SE,
    "error_rate": _ACCURACY_SE,
    "mean_prediction": _mean_se("conf", "w2_conf", "w2_conf_sq"),
    "mean_label": _mean_se("outcome", "w2_outcome", "w2_outcome"),
    "calibration_ratio": _calibration_ratio_se,
    "calibration_in_the_large": _calibration_in_the_large_se,
}


def _macros(
    names: tuple[str, ...], terms: Terms, class_rows: list[bool]
) -> tuple[list[np.ndarray], int, float]:
    """Per per-class metric, the mean over the classes of their defined values, per replicate;
    and the largest class n and weight sum."""
    selected = np.array(class_rows, dtype=bool)
    out = []
    for name in names:
        per_class = VALUES[name](terms)[:, selected]
        per_class = np.where(terms["n"][:, selected] > 0, per_class, np.nan)
        count = (~np.isnan(per_class)).sum(axis=1)
        total = np.nansum(per_class, axis=1)
        out.append(np.where(count > 0, total / np.maximum(count, 1), np.nan))
    n = int(terms["n"][0, selected].max())
    w = float(terms["w"][0, selected].max())
    return out, n, w
