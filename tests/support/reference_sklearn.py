"""Expected decision, ranking and regression metrics (docs/metrics.md) from scikit-learn,
SciPy and NumPy, computed from a pandas frame of the raw rows.

Written from the spec only: no Spark and no import from ``spark_calib``. Every helper works on
one group (the rows of one model_version × slice value) and returns plain dicts; ``iter_groups``
yields the groups with their keys. Slice values in the test data are simple strings (no commas,
backslashes or nulls), so a slice value is just the values joined by ",".

Conventions shared with the spec:

* weights default to 1; W = Σ w; P / N = positive / negative weight (binary);
* the class label of class k is ``class_names[k]`` when given, else ``str(k)``;
* binned ranking metrics: the fine cells of the score (docs/metrics.md, "Fine cells", grid
  version 2: ``tests.support.calibration_reference.cell_ids``), ordered by id; a cell's lower
  edge is max(k/1000, σ((j − 593)/16)), 0 for j = 0 (``cell_lower``);
* a value the spec calls null is ``None`` here.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.integrate import simpson
from scipy.stats import norm
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    balanced_accuracy_score,
    confusion_matrix,
    mean_absolute_error,
    mean_squared_error,
    precision_recall_fscore_support,
    r2_score,
    roc_auc_score,
    roc_curve,
)

from tests.support.calibration_reference import cell_ids

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Key = tuple[str | None, str, str]  # model_version, slice_name, slice_value

DEFAULT_EPS = 1e-15
CALIBRATION_LEVELS = tuple(k / 20 for k in range(1, 20))  # 0.05, 0.10, ..., 0.95


# --------------------------------------------------------------------------------------------
# Groups
# --------------------------------------------------------------------------------------------


def iter_groups(
    pdf: pd.DataFrame, slices: Sequence[Sequence[str]], mv_col: str | None
) -> Iterator[tuple[Key, pd.DataFrame]]:
    """((model_version, slice_name, slice_value), rows) per model version × slice group."""
    versions = [(None, pdf)] if mv_col is None else list(pdf.groupby(mv_col, sort=True))
    for version, vdf in versions:
        mv = None if version is None else str(version)
        for columns in slices:
            if not columns:
                yield (mv, "overall", ""), vdf
                continue
            for _, gdf in vdf.groupby(list(columns), sort=True):
                value = ",".join(str(gdf[c].iloc[0]) for c in columns)
                yield (mv, ",".join(columns), value), gdf


def weights_of(gdf: pd.DataFrame, weight_col: str | None) -> FloatArray:
    if weight_col is None:
        return np.ones(len(gdf), dtype=np.float64)
    return gdf[weight_col].to_numpy(np.float64)


def _ratio(num: float, den: float) -> float | None:
    return None if den == 0 else float(num / den)


# --------------------------------------------------------------------------------------------
# Decision metrics (binary and multiclass): per group, keyed by (class label | None, metric)
# --------------------------------------------------------------------------------------------


def binary_probs(s: FloatArray) -> FloatArray:
    """(1 − s, s): the class-probability matrix of a binary score."""
    return np.column_stack([1.0 - s, s])


def decision_metrics(
    y: IntArray,
    p: FloatArray,
    pred: IntArray,
    w: FloatArray,
    labels: Sequence[str],
    *,
    eps: float = DEFAULT_EPS,
    cost_matrix: FloatArray | None = None,
    class_weights: FloatArray | None = None,
) -> dict[tuple[str | None, str], float | None]:
    """Every decision metric of one group.

    ``y`` and ``pred`` are class indices 0..K−1, ``p`` the n × K probabilities (binary:
    ``binary_probs(s)``), ``labels`` the K class labels of the ``class`` column.
    """
    n_classes = len(labels)
    total = float(w.sum())
    if total == 0:
        return _decision_metrics_weightless(len(y), cost_matrix, class_weights)
    out: dict[tuple[str | None, str], float | None] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns about classes missing from y_true
        accuracy = accuracy_score(y, pred, sample_weight=w)
        balanced = balanced_accuracy_score(y, pred, sample_weight=w)
        # labels=None: scikit-learn's unique_labels(y_true, y_pred), the spec's L.
        present = np.unique(np.concatenate([y, pred]))
        prec, rec, f1, _ = precision_recall_fscore_support(
            y, pred, average=None, zero_division=0, sample_weight=w
        )
        averages = {
            avg: precision_recall_fscore_support(
                y, pred, average=avg, zero_division=0, sample_weight=w
            )
            for avg in ("macro", "micro", "weighted")
        }
    out[(None, "count")] = float(len(y))
    out[(None, "accuracy")] = float(accuracy)
    out[(None, "error_rate")] = float(1.0 - accuracy)
    out[(None, "balanced_accuracy")] = float(balanced)
    out[(None, "balanced_error_rate")] = float(1.0 - balanced)
    for i, k in enumerate(present):
        out[(labels[k], "precision")] = float(prec[i])
        out[(labels[k], "recall")] = float(rec[i])
        out[(labels[k], "f1")] = float(f1[i])
    for avg, (pa, ra, fa, _) in averages.items():
        out[(None, f"precision_{avg}")] = float(pa)
        out[(None, f"recall_{avg}")] = float(ra)
        out[(None, f"f1_{avg}")] = float(fa)

    p_true = p[np.arange(len(y)), y]
    log_p = np.log(np.maximum(p_true, eps))
    out[(None, "ll")] = float(np.sum(w * log_p) / total)
    out[(None, "nll")] = float(-np.sum(w * log_p) / total)
    if cost_matrix is not None:
        c = np.asarray(cost_matrix, dtype=np.float64)
        assert c.shape == (n_classes, n_classes)
        out[(None, "misclassification_cost")] = float(np.sum(w * c[y, pred]) / total)
        out[(None, "expected_misclassification_cost")] = float(
            np.sum(w * np.sum(p * c[y, :], axis=1)) / total
        )
    if class_weights is not None:
        cy = np.asarray(class_weights, dtype=np.float64)[y]
        den = float(np.sum(w * cy))
        out[(None, "class_weighted_error")] = _ratio(np.sum(w * cy * (pred != y)), den)
        out[(None, "class_weighted_nll")] = _ratio(np.sum(w * cy * -log_p), den)
    return out


def _decision_metrics_weightless(
    n: int, cost_matrix: FloatArray | None, class_weights: FloatArray | None
) -> dict[tuple[str | None, str], float | None]:
    """A group whose weights are all 0: count, and null for every metric whose denominator
    is W (or Σ w c_y, or the T_j > 0 classes of balanced_accuracy). precision, recall and
    f1 are left out: the spec's "0 when P_k = 0" and the README's "null when the denominator
    is 0" disagree for their averages."""
    names = ["accuracy", "error_rate", "balanced_accuracy", "balanced_error_rate", "ll", "nll"]
    if cost_matrix is not None:
        names += ["misclassification_cost", "expected_misclassification_cost"]
    if class_weights is not None:
        names += ["class_weighted_error", "class_weighted_nll"]
    out: dict[tuple[str | None, str], float | None] = {(None, m): None for m in names}
    out[(None, "count")] = float(n)
    return out


def confusion_cells(
    y: IntArray, pred: IntArray, w: FloatArray, labels: Sequence[str]
) -> dict[tuple[str, str], dict[str, object]]:
    """(true label, predicted label) → {n, weight_sum} for the cells with n > 0."""
    ks = np.arange(len(labels))
    counts = confusion_matrix(y, pred, labels=ks)
    if np.any(w != 0):
        weights = confusion_matrix(y, pred, labels=ks, sample_weight=w)
    else:  # scikit-learn refuses all-zero weights; every cell weighs 0
        weights = np.zeros_like(counts, dtype=np.float64)
    return {
        (labels[j], labels[k]): {"n": int(counts[j, k]), "weight_sum": float(weights[j, k])}
        for j in ks
        for k in ks
        if counts[j, k] > 0
    }


def top_label_error_rate(correct: NDArray[np.bool_], w: FloatArray) -> float:
    """Σ w (1 − correct) / W as 1 − accuracy_score(correct, all-true)."""
    return float(1.0 - accuracy_score(correct, np.ones_like(correct), sample_weight=w))


# --------------------------------------------------------------------------------------------
# Ranking metrics (binary)
# --------------------------------------------------------------------------------------------


def exact_auc(y: IntArray, s: FloatArray, w: FloatArray) -> dict[str, float | None]:
    """roc_auc (null when P = 0 or N = 0) and pr_auc (null when P = 0), from scikit-learn."""
    pos = float(np.sum(w * (y == 1)))
    neg = float(np.sum(w * (y == 0)))
    roc = roc_auc_score(y, s, sample_weight=w) if pos > 0 and neg > 0 else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pr = average_precision_score(y, s, sample_weight=w) if pos > 0 else None
    return {
        "roc_auc": None if roc is None else float(roc),
        "pr_auc": None if pr is None else float(pr),
    }


def cell_of(s: FloatArray) -> IntArray:
    """The fine cell id 1186·k + j of every score (grid version 2)."""
    return np.asarray(cell_ids(np.asarray(s, dtype=np.float64)), dtype=np.int64)


def cell_lower(cells: ArrayLike) -> FloatArray:
    """The documented lower edge of cell 1186·k + j: max(k/1000, σ((j − 593)/16)), and k/1000
    for j = 0 (the clipped low cell has no log-odds edge)."""
    c = np.asarray(cells, dtype=np.int64)
    k, j = c // 1186, c % 1186
    with np.errstate(over="ignore"):
        log_odds = np.where(j == 0, 0.0, 1.0 / (1.0 + np.exp(-(j - 593) / 16.0)))
    return np.maximum(k / 1000.0, log_odds)


def _div0(num: FloatArray, den: FloatArray) -> FloatArray:
    """num / den elementwise, 0 where den = 0."""
    out = np.zeros_like(num, dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def binned_auc(y: IntArray, s: FloatArray, w: FloatArray) -> dict[str, float | None]:
    """roc_auc_binned (null when P = 0 or N = 0), pr_auc_binned (null when P = 0) and their
    documented error bounds, from the positive and negative weight per fine cell. A cell's
    positives count at the precision below the cell when it is a tie (its weighted score
    variance, computed in two passes, at most 1e-9 of its squared mean, or no weight), else at
    the mean precision of a walk through the cell with its labels spread evenly, by numerical
    quadrature of (A + m·x)/(B + k·x) over x ∈ [0, 1]."""
    _, b = np.unique(cell_of(s), return_inverse=True)  # occupied cells, in score order
    pos = np.bincount(b, weights=w * (y == 1))
    neg = np.bincount(b, weights=w * (y == 0))
    weight = np.bincount(b, weights=w)
    mean = _div0(np.bincount(b, weights=w * s), weight)
    variance = _div0(np.bincount(b, weights=w * (s - mean[b]) ** 2), weight)
    tie = (weight == 0) | (variance <= 1e-9 * mean**2)
    p_tot, n_tot = float(pos.sum()), float(neg.sum())
    if p_tot == 0:
        return {"roc_auc_binned": None, "roc_bound": None, "pr_auc_binned": None, "pr_bound": None}
    tp_ge = np.cumsum(pos[::-1])[::-1]
    fp_ge = np.cumsum(neg[::-1])[::-1]
    tp_gt = tp_ge - pos
    fp_gt = fp_ge - neg
    if n_tot > 0:
        roc: float | None = float(np.sum(neg * (tp_gt + 0.5 * pos)) / (p_tot * n_tot))
        roc_bound: float | None = float(0.5 * np.sum(pos * neg) / (p_tot * n_tot))
    else:
        roc = roc_bound = None
    precision = np.where(tie, _div0(tp_ge, tp_ge + fp_ge), _walked(tp_gt, fp_gt, pos, neg))
    pr = np.sum(pos / p_tot * precision)
    hi = _div0(tp_ge, tp_ge + fp_gt)
    # No negative at or above the cell: every positive in it has precision 1.
    lo = np.where(fp_ge == 0, 1.0, _div0(tp_gt, tp_gt + fp_ge))
    pr_bound = np.sum(pos / p_tot * (hi - lo))
    return {
        "roc_auc_binned": roc,
        "roc_bound": roc_bound,
        "pr_auc_binned": float(pr),
        "pr_bound": float(pr_bound),
    }


def _walked(tp_gt: FloatArray, fp_gt: FloatArray, pos: FloatArray, neg: FloatArray) -> FloatArray:
    """∫₀¹ (A + m·x)/(B + k·x) dx per cell (A = TP above, B = TP + FP above, m = W⁺, k = W⁺ +
    W⁻), by 2,001-point Simpson quadrature; a cell without positives gets 0."""
    x = np.linspace(0.0, 1.0, 2001)[None, :]
    top = tp_gt[:, None] + pos[:, None] * x
    bottom = tp_gt[:, None] + fp_gt[:, None] + (pos + neg)[:, None] * x
    # B = 0 (nothing above): (m·x)/(k·x) = m/k for every x > 0, its limit at 0 too.
    own = np.broadcast_to(_div0(pos, pos + neg)[:, None], top.shape).copy()
    curve = np.divide(top, bottom, out=own, where=bottom > 0)
    walked: FloatArray = np.asarray(simpson(curve, x=x[0], axis=1), dtype=np.float64)
    return np.where(pos > 0, walked, 0.0)


def threshold_rows(
    y: IntArray, s: FloatArray, w: FloatArray, thresholds: Sequence[float]
) -> dict[float, dict[str, object]]:
    """threshold → the threshold_metrics row (predict positive when s ≥ t)."""
    rows: dict[float, dict[str, object]] = {}
    for t in thresholds:
        hit = s >= t
        tp = float(np.sum(w * (hit & (y == 1))))
        fp = float(np.sum(w * (hit & (y == 0))))
        tn = float(np.sum(w * (~hit & (y == 0))))
        fn = float(np.sum(w * (~hit & (y == 1))))
        tpr = _ratio(tp, tp + fn)
        rows[float(t)] = {
            "n": len(y),
            "weight_sum": float(w.sum()),
            "tp": tp,
            "fp": fp,
            "tn": tn,
            "fn": fn,
            "tpr": tpr,
            "fpr": _ratio(fp, fp + tn),
            "precision": 0.0 if tp + fp == 0 else tp / (tp + fp),
            "recall": tpr,
        }
    return rows


def roc_vertices(
    y: IntArray, s: FloatArray, w: FloatArray
) -> tuple[dict[int, tuple[float, float, float | None]], set[int]]:
    """({fine cell b → (fpr, tpr, precision) of "predict positive when cell ≥ b"} for every
    cell with n > 0, the cells among them whose weight is 0). Needs P, N > 0.

    fpr = FP_{≥b} / N, tpr = TP_{≥b} / P, precision = TP_{≥b} / (TP_{≥b} + FP_{≥b}) (None when
    0/0, which the spec leaves open). Each (fpr, tpr) is checked to be a vertex of
    scikit-learn's roc_curve on the scores replaced by their cell ids (drop_intermediate=False;
    scikit-learn drops zero-weight rows, so a zero-weight cell repeats the vertex above it).
    """
    b = cell_of(s)
    fpr_sk, tpr_sk, _ = roc_curve(y, b, sample_weight=w, drop_intermediate=False)
    curve = np.column_stack([fpr_sk, tpr_sk])
    p_tot = float(np.sum(w * (y == 1)))
    n_tot = float(np.sum(w * (y == 0)))
    vertices: dict[int, tuple[float, float, float | None]] = {}
    weightless: set[int] = set()
    for cell in np.unique(b):
        hit = b >= cell
        tp = float(np.sum(w * (hit & (y == 1))))
        fp = float(np.sum(w * (hit & (y == 0))))
        point = np.array([fp / n_tot, tp / p_tot])
        assert np.abs(curve - point).max(axis=1).min() < 1e-12, "not on sklearn's roc_curve"
        vertices[int(cell)] = (fp / n_tot, tp / p_tot, None if tp + fp == 0 else tp / (tp + fp))
        if float(np.sum(w[b == cell])) == 0:
            weightless.add(int(cell))
    return vertices, weightless


# --------------------------------------------------------------------------------------------
# Regression metrics
# --------------------------------------------------------------------------------------------


def z_of(level: float) -> float:
    """Φ⁻¹((1 + l) / 2): the half-width of the central normal interval of level l, in σ."""
    return float(norm.ppf((1.0 + level) / 2.0))


def coverage(
    y: FloatArray, mu: FloatArray, sigma: FloatArray, w: FloatArray, level: float
) -> float:
    inside = np.abs(y - mu) <= z_of(level) * sigma
    return float(np.sum(w * inside) / np.sum(w))


def regression_metrics(
    y: FloatArray,
    mu: FloatArray,
    w: FloatArray,
    sigma: FloatArray | None = None,
    coverage_levels: Sequence[float] = (),
) -> dict[str, float | None]:
    """count, mse, rmse, mae, r2 (null when SST = 0) and, with σ, gaussian_nll,
    coverage_<l> and miscalibration_area."""
    total = float(w.sum())
    if total == 0:  # every value has W in its denominator: null, count aside
        names = ["mse", "rmse", "mae", "r2"]
        if sigma is not None:
            names += [f"coverage_{lv}" for lv in coverage_levels]
            names += ["gaussian_nll", "miscalibration_area"]
        return {"count": float(len(y)), **dict.fromkeys(names)}
    mse = float(mean_squared_error(y, mu, sample_weight=w))
    sst = float(np.sum(w * y * y) - np.sum(w * y) ** 2 / total)
    out: dict[str, float | None] = {
        "count": float(len(y)),
        "mse": mse,
        "rmse": math.sqrt(mse),
        "mae": float(mean_absolute_error(y, mu, sample_weight=w)),
        "r2": None if sst == 0 else float(r2_score(y, mu, sample_weight=w)),
    }
    if sigma is not None:
        out["gaussian_nll"] = float(-np.sum(w * norm.logpdf(y, loc=mu, scale=sigma)) / total)
        for level in coverage_levels:
            out[f"coverage_{level}"] = coverage(y, mu, sigma, w, level)
        out["miscalibration_area"] = float(
            np.mean([abs(coverage(y, mu, sigma, w, lv) - lv) for lv in CALIBRATION_LEVELS])
        )
    return out


def regression_calibration_rows(
    y: FloatArray, mu: FloatArray, sigma: FloatArray, w: FloatArray
) -> dict[int, dict[str, object]]:
    """k (level = k / 20, k = 1..19) → the regression_calibration row (observed and gap
    null when W = 0)."""
    rows: dict[int, dict[str, object]] = {}
    for k, level in enumerate(CALIBRATION_LEVELS, start=1):
        observed = coverage(y, mu, sigma, w, level) if w.sum() > 0 else None
        rows[k] = {
            "level": level,
            "z": z_of(level),
            "observed": observed,
            "gap": None if observed is None else observed - level,
            "n": len(y),
            "weight_sum": float(w.sum()),
        }
    return rows


def class_weight_vector(
    class_weights: Mapping[Any, float], n_classes: int, class_names: Sequence[str] | None
) -> FloatArray:
    """c_k: the listed weight (key = class name, or index as int or string), else 1."""
    c = np.ones(n_classes, dtype=np.float64)
    for key, value in class_weights.items():
        if class_names is not None and key in class_names:
            c[list(class_names).index(key)] = value
        else:
            c[int(key)] = value
    return c
