"""An independent NumPy reference of the metric contract (DESIGN.md, "The metric contract").

Written from the definitions only: no Spark and no import from ``spark_calib``. The oracle tests
compare the engine against these functions and against scikit-learn.

Conventions:

* weights default to 1; ``W = Σ w``;
* calibration pairs (c, o): a calibration probability c against an outcome o. Binary tasks use
  the positive class by default, (s, y) (``binary_view: positive_class``), or the top-label view
  (max(s, 1 − s), correct) (``binary_view: top_label``); multiclass and top-label tasks use
  (confidence, correct); the one-vs-rest items of class k use (p_k, [y = k]);
* bin edges are the doubles ``e_k = k / M`` (``np.arange(M + 1) / M``);
  ``left_closed``: bin b iff ``e_b <= c < e_{b+1}``, with ``c == 1.0`` in bin M − 1;
  ``right_closed``: bin b iff ``e_b < c <= e_{b+1}``, with ``c == 0.0`` in bin 0;
* per-bin means of empty bins are NaN (the engine writes null).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

Edges = Literal["left_closed", "right_closed"]
BinaryView = Literal["positive_class", "top_label"]
FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

DEFAULT_N_BINS = 15
DEFAULT_THRESHOLD = 0.5
DEFAULT_NLL_EPS = 1e-15
DEFAULT_BINARY_VIEW: BinaryView = "positive_class"


# --------------------------------------------------------------------------------------------
# Inputs → calibration pairs (confidence, outcome) and correctness
# --------------------------------------------------------------------------------------------


def as_weights(weights: ArrayLike | None, n: int) -> FloatArray:
    """The weight vector: ones when no weights are given."""
    if weights is None:
        return np.ones(n, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"weights have shape {w.shape}, expected ({n},)")
    return w


def softmax(logits: ArrayLike) -> FloatArray:
    """Row-wise softmax, subtracting the row max first."""
    z = np.asarray(logits, dtype=np.float64)
    shifted = np.exp(z - z.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def binary_top_label(
    scores: ArrayLike, labels: ArrayLike, threshold: float = DEFAULT_THRESHOLD
) -> tuple[FloatArray, FloatArray]:
    """Binary score s = P(y=1) → (confidence, correct): predict 1 iff s >= threshold."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels)
    prediction = (s >= threshold).astype(np.int64)
    confidence = np.where(prediction == 1, s, 1.0 - s)
    correct = (prediction == y).astype(np.float64)
    return confidence, correct


def binary_calibration_pairs(
    scores: ArrayLike,
    labels: ArrayLike,
    threshold: float = DEFAULT_THRESHOLD,
    view: BinaryView = DEFAULT_BINARY_VIEW,
) -> tuple[FloatArray, FloatArray]:
    """The (c, o) pairs a binary task's calibration bins compare: (s, y) in the positive-class
    view, (max-side confidence, correct) in the top-label view."""
    if view == "positive_class":
        return np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    if view == "top_label":
        return binary_top_label(scores, labels, threshold)
    raise ValueError(f"unknown binary_view {view!r}")


def multiclass_top_label(probs: ArrayLike, labels: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Probability rows → (max_k p_k, [first argmax == y])."""
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels)
    prediction = np.argmax(p, axis=1)
    confidence = p.max(axis=1)
    correct = (prediction == y).astype(np.float64)
    return confidence, correct


# --------------------------------------------------------------------------------------------
# Binning and reliability bins
# --------------------------------------------------------------------------------------------


def bin_edges(n_bins: int = DEFAULT_N_BINS) -> FloatArray:
    """The M + 1 edges k / M as doubles."""
    return np.arange(n_bins + 1) / n_bins


def assign_bins(
    confidence: ArrayLike, n_bins: int = DEFAULT_N_BINS, edges: Edges = "left_closed"
) -> IntArray:
    """Bin index in [0, M−1] of every confidence under the given edge convention."""
    c = np.asarray(confidence, dtype=np.float64)
    e = bin_edges(n_bins)
    if edges == "left_closed":
        idx = np.searchsorted(e, c, side="right") - 1
    elif edges == "right_closed":
        idx = np.searchsorted(e, c, side="left") - 1
    else:
        raise ValueError(f"unknown edges {edges!r}")
    return np.clip(idx, 0, n_bins - 1).astype(np.int64)


@dataclass(frozen=True)
class Bins:
    """Per-bin statistics of one (confidence c, outcome o) population; arrays of length M."""

    n_bins: int
    n: IntArray
    weight_sum: FloatArray
    sum_confidence: FloatArray
    sum_outcome: FloatArray

    @property
    def lower(self) -> FloatArray:
        return np.arange(self.n_bins) / self.n_bins

    @property
    def upper(self) -> FloatArray:
        return (np.arange(self.n_bins) + 1) / self.n_bins

    @property
    def total_weight(self) -> float:
        return float(self.weight_sum.sum())

    @property
    def nonempty(self) -> NDArray[np.bool_]:
        """Bins that hold weight (W_b > 0); MCE and the means are defined on these."""
        return self.weight_sum > 0

    @property
    def mean_confidence(self) -> FloatArray:
        """conf_b = Σ w·conf / W_b (NaN for empty bins)."""
        return _safe_div(self.sum_confidence, self.weight_sum)

    @property
    def accuracy(self) -> FloatArray:
        """acc_b = Σ w·o / W_b, the observed rate of the outcome (NaN for empty bins)."""
        return _safe_div(self.sum_outcome, self.weight_sum)

    @property
    def gap(self) -> FloatArray:
        """acc_b − conf_b (NaN for empty bins)."""
        return self.accuracy - self.mean_confidence


def _safe_div(num: FloatArray, den: FloatArray) -> FloatArray:
    out = np.full(num.shape, np.nan, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def reliability_bins(
    confidence: ArrayLike,
    correct: ArrayLike,
    weights: ArrayLike | None = None,
    n_bins: int = DEFAULT_N_BINS,
    edges: Edges = "left_closed",
) -> Bins:
    """Count, weight, Σ w·c and Σ w·o per bin (all M bins, empty ones included); ``correct``
    is the outcome o (correct, y, or [y = k] depending on the pairs)."""
    c = np.asarray(confidence, dtype=np.float64)
    k = np.asarray(correct, dtype=np.float64)
    w = as_weights(weights, c.shape[0])
    b = assign_bins(c, n_bins, edges)

    def per_bin(values: FloatArray) -> FloatArray:
        return np.bincount(b, weights=values, minlength=n_bins).astype(np.float64)

    return Bins(
        n_bins=n_bins,
        n=np.bincount(b, minlength=n_bins).astype(np.int64),
        weight_sum=per_bin(w),
        sum_confidence=per_bin(w * c),
        sum_outcome=per_bin(w * k),
    )


# --------------------------------------------------------------------------------------------
# Calibration errors
# --------------------------------------------------------------------------------------------


def ece_from_bins(bins: Bins) -> float:
    """ECE = Σ_b |Σ_{i∈b} w_i (o_i − c_i)| / W."""
    return float(np.abs(bins.sum_outcome - bins.sum_confidence).sum() / bins.total_weight)


def mce_from_bins(bins: Bins) -> float:
    """MCE = max over bins with W_b > 0 of |acc_b − conf_b|."""
    gaps = np.abs(bins.gap[bins.nonempty])
    return float(gaps.max()) if gaps.size else float("nan")


def rmsce_from_bins(bins: Bins) -> float:
    """RMSCE = sqrt(Σ_b (W_b / W)(acc_b − conf_b)²) over non-empty bins."""
    m = bins.nonempty
    share = bins.weight_sum[m] / bins.total_weight
    return float(np.sqrt(np.sum(share * bins.gap[m] ** 2)))


def ece(
    confidence: ArrayLike,
    correct: ArrayLike,
    weights: ArrayLike | None = None,
    n_bins: int = DEFAULT_N_BINS,
    edges: Edges = "left_closed",
) -> float:
    """Expected calibration error of (confidence, correct)."""
    return ece_from_bins(reliability_bins(confidence, correct, weights, n_bins, edges))


def mce(
    confidence: ArrayLike,
    correct: ArrayLike,
    weights: ArrayLike | None = None,
    n_bins: int = DEFAULT_N_BINS,
    edges: Edges = "left_closed",
) -> float:
    """Maximum calibration error of (confidence, correct)."""
    return mce_from_bins(reliability_bins(confidence, correct, weights, n_bins, edges))


def rmsce(
    confidence: ArrayLike,
    correct: ArrayLike,
    weights: ArrayLike | None = None,
    n_bins: int = DEFAULT_N_BINS,
    edges: Edges = "left_closed",
) -> float:
    """Root-mean-square (L2) calibration error of (confidence, correct)."""
    return rmsce_from_bins(reliability_bins(confidence, correct, weights, n_bins, edges))


def class_probabilities_binary(scores: ArrayLike) -> FloatArray:
    """Binary score s → the two-column matrix [1 − s, s] (classes 0 and 1)."""
    s = np.asarray(scores, dtype=np.float64)
    return np.column_stack([1.0 - s, s])


def classwise_bins(
    probs: ArrayLike,
    labels: ArrayLike,
    weights: ArrayLike | None = None,
    n_bins: int = DEFAULT_N_BINS,
    edges: Edges = "left_closed",
) -> list[Bins]:
    """One-vs-rest reliability bins of every class k on (p_k, [y == k])."""
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels)
    return [
        reliability_bins(p[:, k], (y == k).astype(np.float64), weights, n_bins, edges)
        for k in range(p.shape[1])
    ]


def classwise_ece(
    probs: ArrayLike,
    labels: ArrayLike,
    weights: ArrayLike | None = None,
    n_bins: int = DEFAULT_N_BINS,
    edges: Edges = "left_closed",
) -> tuple[FloatArray, float]:
    """(per-class ECE array, macro mean over classes)."""
    per_class = np.array(
        [ece_from_bins(b) for b in classwise_bins(probs, labels, weights, n_bins, edges)]
    )
    return per_class, float(per_class.mean())


# --------------------------------------------------------------------------------------------
# Proper scores and accuracy
# --------------------------------------------------------------------------------------------


def weighted_mean(values: ArrayLike, weights: ArrayLike | None = None) -> float:
    """Σ w·v / Σ w."""
    v = np.asarray(values, dtype=np.float64)
    w = as_weights(weights, v.shape[0])
    return float(np.sum(w * v) / np.sum(w))


def brier_binary(scores: ArrayLike, labels: ArrayLike, weights: ArrayLike | None = None) -> float:
    """mean_w (s − y)², in [0, 1]."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    return weighted_mean((s - y) ** 2, weights)


def brier_multiclass(
    probs: ArrayLike, labels: ArrayLike, weights: ArrayLike | None = None
) -> float:
    """mean_w Σ_k (1[y = k] − p_k)², in [0, 2]."""
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels)
    onehot = (y[:, None] == np.arange(p.shape[1])[None, :]).astype(np.float64)
    return weighted_mean(((onehot - p) ** 2).sum(axis=1), weights)


def brier_top_label(
    confidence: ArrayLike, correct: ArrayLike, weights: ArrayLike | None = None
) -> float:
    """mean_w (correct − conf)²."""
    c = np.asarray(confidence, dtype=np.float64)
    k = np.asarray(correct, dtype=np.float64)
    return weighted_mean((k - c) ** 2, weights)


def nll_binary(
    scores: ArrayLike,
    labels: ArrayLike,
    weights: ArrayLike | None = None,
    eps: float = DEFAULT_NLL_EPS,
) -> float:
    """−Σ w log(max(p_y, eps)) / W with p_y = s if y = 1 else 1 − s."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels)
    p_y = np.where(y == 1, s, 1.0 - s)
    return weighted_mean(-np.log(np.maximum(p_y, eps)), weights)


def nll_from_logits(
    logits: ArrayLike, labels: ArrayLike, weights: ArrayLike | None = None
) -> float:
    """−Σ w log p_y / W with the exact log-softmax log p_y = z_y − logsumexp(z) (no eps)."""
    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(labels).astype(np.int64)
    top = z.max(axis=1)
    logsumexp = top + np.log(np.exp(z - top[:, None]).sum(axis=1))
    return weighted_mean(logsumexp - z[np.arange(z.shape[0]), y], weights)


def nll_multiclass(
    probs: ArrayLike,
    labels: ArrayLike,
    weights: ArrayLike | None = None,
    eps: float = DEFAULT_NLL_EPS,
) -> float:
    """−Σ w log(max(p_y, eps)) / W."""
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels).astype(np.int64)
    p_y = p[np.arange(p.shape[0]), y]
    return weighted_mean(-np.log(np.maximum(p_y, eps)), weights)


def accuracy(correct: ArrayLike, weights: ArrayLike | None = None) -> float:
    """Σ w·correct / W."""
    return weighted_mean(correct, weights)


# --------------------------------------------------------------------------------------------
# All metrics of one group
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupResult:
    """Everything the engine reports for one (model_version, slice) group."""

    n: int
    weight_sum: float
    metrics: dict[str, float]  # top-level metrics (class null), incl. the classwise macro
    classwise: FloatArray | None  # per-class ECE, index = class
    calibration_bins: Bins  # the class-null bins (binary: positive-class or top-label view)
    class_bins: list[Bins] | None  # one-vs-rest bins per class


def _calibration(bins: Bins) -> dict[str, float]:
    return {"ece": ece_from_bins(bins), "mce": mce_from_bins(bins), "rmsce": rmsce_from_bins(bins)}


def binary_group(
    scores: ArrayLike,
    labels: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    n_bins: int = DEFAULT_N_BINS,
    edges: Edges = "left_closed",
    threshold: float = DEFAULT_THRESHOLD,
    eps: float = DEFAULT_NLL_EPS,
    view: BinaryView = DEFAULT_BINARY_VIEW,
) -> GroupResult:
    """Every metric of a binary task on one group: ece, mce, rmsce and the bins on the
    ``view``'s calibration pairs; accuracy on the thresholded prediction whatever the view."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels)
    w = as_weights(weights, s.shape[0])
    _, correct = binary_top_label(s, y, threshold)
    conf, outcome = binary_calibration_pairs(s, y, threshold, view)
    bins = reliability_bins(conf, outcome, w, n_bins, edges)
    cls_bins = classwise_bins(class_probabilities_binary(s), y, w, n_bins, edges)
    per_class = np.array([ece_from_bins(b) for b in cls_bins])
    metrics = {
        **_calibration(bins),
        "brier": brier_binary(s, y, w),
        "nll": nll_binary(s, y, w, eps),
        "accuracy": accuracy(correct, w),
        "count": float(s.shape[0]),
        "classwise_ece": float(per_class.mean()),
    }
    return GroupResult(s.shape[0], float(w.sum()), metrics, per_class, bins, cls_bins)


def multiclass_group(
    probs: ArrayLike,
    labels: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    n_bins: int = DEFAULT_N_BINS,
    edges: Edges = "left_closed",
    eps: float = DEFAULT_NLL_EPS,
    logits: ArrayLike | None = None,
) -> GroupResult:
    """Every metric of a multiclass task on one group. ``probs`` are the probabilities (the
    softmax of ``logits`` when the task reads logits); nll is the eps-clipped −log p_y from
    probabilities and the exact log-softmax from ``logits``."""
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels)
    w = as_weights(weights, p.shape[0])
    nll = nll_multiclass(p, y, w, eps) if logits is None else nll_from_logits(logits, y, w)
    conf, correct = multiclass_top_label(p, y)
    bins = reliability_bins(conf, correct, w, n_bins, edges)
    cls_bins = classwise_bins(p, y, w, n_bins, edges)
    per_class = np.array([ece_from_bins(b) for b in cls_bins])
    metrics = {
        **_calibration(bins),
        "brier": brier_multiclass(p, y, w),
        "nll": nll,
        "accuracy": accuracy(correct, w),
        "count": float(p.shape[0]),
        "classwise_ece": float(per_class.mean()),
    }
    return GroupResult(p.shape[0], float(w.sum()), metrics, per_class, bins, cls_bins)


def top_label_group(
    confidence: ArrayLike,
    correct: ArrayLike,
    weights: ArrayLike | None = None,
    *,
    n_bins: int = DEFAULT_N_BINS,
    edges: Edges = "left_closed",
) -> GroupResult:
    """Every metric of a top-label task on one group (no nll, no classwise)."""
    c = np.asarray(confidence, dtype=np.float64)
    k = np.asarray(correct, dtype=np.float64)
    w = as_weights(weights, c.shape[0])
    bins = reliability_bins(c, k, w, n_bins, edges)
    metrics = {
        **_calibration(bins),
        "brier": brier_top_label(c, k, w),
        "accuracy": accuracy(k, w),
        "count": float(c.shape[0]),
    }
    return GroupResult(c.shape[0], float(w.sum()), metrics, None, bins, None)


# --------------------------------------------------------------------------------------------
# Slice names and values
# --------------------------------------------------------------------------------------------


def slice_name(columns: Sequence[str]) -> str:
    """The slice name: "overall" for [], else the column names joined by ","."""
    return ",".join(columns) if columns else "overall"


def encode_slice_value(values: Sequence[object]) -> str:
    """Values as strings, "\\" → "\\\\", "," → "\\,", null → "\\N", joined by ","."""
    parts = []
    for v in values:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            parts.append("\\N")
        else:
            parts.append(str(v).replace("\\", "\\\\").replace(",", "\\,"))
    return ",".join(parts)


# --------------------------------------------------------------------------------------------
# The expected metrics and reliability tables of evaluate(df, config), from a pandas frame
# --------------------------------------------------------------------------------------------

ALL_METRICS = ("ece", "mce", "rmsce", "brier", "nll", "accuracy", "count", "classwise_ece")
MetricKey = tuple[
    str | None, str, str, str | None, str
]  # mv, slice_name, slice_value, class, metric
BinKey = tuple[str | None, str, str, str | None, int]  # mv, slice_name, slice_value, class, bin
Table = dict[tuple, dict[str, object]]


def default_metrics(task: str) -> tuple[str, ...]:
    """All applicable metrics except classwise_ece (nll is not defined for top_label)."""
    skip = {"classwise_ece"} | ({"nll"} if task == "top_label" else set())
    return tuple(m for m in ALL_METRICS if m not in skip)


def _none_if_nan(value: object) -> object:
    if isinstance(value, float | np.floating) and np.isnan(value):
        return None
    return value


def iter_groups(
    pdf: pd.DataFrame, config: Mapping[str, Any]
) -> Iterator[tuple[str | None, str, str, pd.DataFrame]]:
    """(model_version, slice_name, slice_value, rows) for every model version × slice group."""
    mv_col = config["columns"].get("model_version")
    if mv_col is None:
        by_version: Iterable[tuple[object, pd.DataFrame]] = [(None, pdf)]
    else:
        by_version = pdf.groupby(mv_col, dropna=False, sort=True)
    for version, vdf in by_version:
        mv = (
            None
            if version is None or (isinstance(version, float) and np.isnan(version))
            else str(version)
        )
        for columns in config.get("slices", [[]]):
            name = slice_name(columns)
            if not columns:
                yield mv, name, "", vdf
                continue
            for _, gdf in vdf.groupby(list(columns), dropna=False, sort=True):
                # The group's own values, not the group key: pandas turns an int level with
                # nulls into floats (1 → 1.0), while Spark casts the int column to "1".
                values = [gdf[c].iloc[0] for c in columns]
                yield mv, name, encode_slice_value(values), gdf


def group_result(gdf: pd.DataFrame, config: Mapping[str, Any]) -> GroupResult:
    """The reference GroupResult of one group's rows under ``config``."""
    task = config["task"]
    cols = config["columns"]
    binning = config.get("binning", {})
    n_bins = int(binning.get("n_bins", DEFAULT_N_BINS))
    edges: Edges = binning.get("edges", "left_closed")
    w = gdf[cols["weight"]].to_numpy(np.float64) if cols.get("weight") else None
    eps = float(config.get("nll_eps", DEFAULT_NLL_EPS))
    if task == "binary":
        return binary_group(
            gdf[cols["score"]].to_numpy(np.float64),
            gdf[cols["label"]].to_numpy(),
            w,
            n_bins=n_bins,
            edges=edges,
            threshold=float(config.get("threshold", DEFAULT_THRESHOLD)),
            eps=eps,
            view=config.get("binary_view", DEFAULT_BINARY_VIEW),
        )
    if task == "multiclass":
        logits = None
        if cols.get("probs"):
            probs = np.stack(gdf[cols["probs"]].to_numpy()).astype(np.float64)
        else:
            logits = np.stack(gdf[cols["logits"]].to_numpy()).astype(np.float64)
            probs = softmax(logits)
        return multiclass_group(
            probs,
            gdf[cols["label"]].to_numpy(),
            w,
            n_bins=n_bins,
            edges=edges,
            eps=eps,
            logits=logits,
        )
    if task == "top_label":
        return top_label_group(
            gdf[cols["confidence"]].to_numpy(np.float64),
            gdf[cols["correct"]].to_numpy(np.float64),
            w,
            n_bins=n_bins,
            edges=edges,
        )
    raise ValueError(f"unknown task {task!r}")


def class_label(k: int, config: Mapping[str, Any]) -> str:
    """The class column of class k: its class_names entry, else the index as a string."""
    names = config.get("class_names")
    return str(names[k]) if names else str(k)


def _bin_rows(bins: Bins) -> list[dict[str, object]]:
    return [
        {
            "bin_lower": float(bins.lower[b]),
            "bin_upper": float(bins.upper[b]),
            "n": int(bins.n[b]),
            "weight_sum": float(bins.weight_sum[b]),
            "mean_confidence": _none_if_nan(float(bins.mean_confidence[b])),
            "accuracy": _none_if_nan(float(bins.accuracy[b])),
            "gap": _none_if_nan(float(bins.gap[b])),
        }
        for b in range(bins.n_bins)
    ]


def expected_tables(pdf: pd.DataFrame, config: Mapping[str, Any]) -> tuple[Table, Table]:
    """(metrics, reliability) as {key: fields}, computed group by group with the reference.

    Metric keys are (model_version, slice_name, slice_value, class, metric) with fields value,
    n, weight_sum. Reliability keys are (model_version, slice_name, slice_value, class, bin)
    with the per-bin fields; the calibration bins (top-label, or a binary task's positive-class
    view) have class None, classwise bins (present when classwise_ece is requested) carry the
    class label.
    """
    requested = tuple(config.get("metrics") or default_metrics(config["task"]))
    metrics: Table = {}
    reliability: Table = {}
    for mv, name, value, gdf in iter_groups(pdf, config):
        g = group_result(gdf, config)
        common = {"n": g.n, "weight_sum": g.weight_sum}
        for metric in requested:
            metrics[(mv, name, value, None, metric)] = {"value": g.metrics[metric], **common}
        for b, row in enumerate(_bin_rows(g.calibration_bins)):
            reliability[(mv, name, value, None, b)] = row
        if "classwise_ece" in requested:
            assert g.classwise is not None and g.class_bins is not None
            for k, (ece_k, bins_k) in enumerate(zip(g.classwise, g.class_bins, strict=True)):
                label = class_label(k, config)
                metrics[(mv, name, value, label, "classwise_ece")] = {
                    "value": float(ece_k),
                    **common,
                }
                for b, row in enumerate(_bin_rows(bins_k)):
                    reliability[(mv, name, value, label, b)] = row
    return metrics, reliability


# --------------------------------------------------------------------------------------------
# Comparing tables (rows as mappings, e.g. pyspark Row.asDict())
# --------------------------------------------------------------------------------------------

METRIC_KEY = ("model_version", "slice_name", "slice_value", "class", "metric")
BIN_KEY = ("model_version", "slice_name", "slice_value", "class", "bin")


def table_from_rows(rows: Iterable[Mapping[str, object]], key: Sequence[str]) -> Table:
    """{key tuple: remaining fields}; a duplicated key is an error."""
    table: Table = {}
    for row in rows:
        k = tuple(row[c] for c in key)
        if k in table:
            raise AssertionError(f"duplicate key {k}")
        table[k] = {c: v for c, v in row.items() if c not in key}
    return table


def _sort_key(key: tuple) -> tuple:
    return tuple((v is None, str(v)) for v in key)


def diff_tables(
    actual: Table,
    expected: Table,
    *,
    atol: float,
    rtol: float = 0.0,
    fields: Sequence[str] | None = None,
    limit: int = 25,
) -> list[str]:
    """Human-readable differences: missing/extra keys and fields off by more than
    atol + rtol·|expected| (exact equality for non-floats, None only equals None)."""
    problems: list[str] = []
    missing = sorted(set(expected) - set(actual), key=_sort_key)
    extra = sorted(set(actual) - set(expected), key=_sort_key)
    problems += [f"missing key {k}" for k in missing]
    problems += [f"unexpected key {k}: {actual[k]}" for k in extra]
    for k in sorted(set(expected) & set(actual), key=_sort_key):
        for field in fields or expected[k].keys():
            want, got = expected[k][field], actual[k].get(field)
            if want is None or got is None:
                ok = want is None and got is None
            elif isinstance(want, float) or isinstance(got, float):
                tol = atol + rtol * abs(float(want))  # type: ignore[arg-type]
                ok = abs(float(got) - float(want)) <= tol  # type: ignore[arg-type]
            else:
                ok = want == got
            if not ok:
                problems.append(f"{k} {field}: expected {want!r}, got {got!r}")
    if len(problems) > limit:
        problems = [*problems[:limit], f"... and {len(problems) - limit} more"]
    return problems


# --------------------------------------------------------------------------------------------
# Seeded synthetic prediction logs (probabilities kept away from 0 and 1)
# --------------------------------------------------------------------------------------------

COUNTRIES = ("US", "DE", "FR", "BR")
DEVICES = ("mobile", "desktop", "tablet")


def _context(rng: np.random.Generator, n: int, weighted: bool) -> dict[str, object]:
    return {
        "mv": rng.choice(["v1", "v2"], size=n),
        "country": rng.choice(COUNTRIES, size=n, p=[0.4, 0.3, 0.2, 0.1]),
        "device": rng.choice(DEVICES, size=n, p=[0.5, 0.3, 0.2]),
        "w": rng.uniform(0.2, 3.0, size=n) if weighted else np.ones(n),
    }


def binary_log(seed: int, n: int, *, weighted: bool = False) -> pd.DataFrame:
    """Columns s (in [0.02, 0.98]), y (Bernoulli of a miscalibrated s), mv, country, device, w."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.02, 0.98, size=n)
    y = (rng.uniform(size=n) < s**1.3).astype(np.int32)
    return pd.DataFrame({"s": s, "y": y, **_context(rng, n, weighted)})


def multiclass_log(seed: int, n: int, k: int = 10, *, weighted: bool = False) -> pd.DataFrame:
    """Columns z (logits), p (= softmax z), y (drawn from a tempered p), mv, country, device, w."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=1.5, size=(n, k))
    p = softmax(z)
    truth = softmax(0.8 * z)  # a little less confident than p, so the model is miscalibrated
    y = (truth.cumsum(axis=1) < rng.uniform(size=(n, 1))).sum(axis=1).clip(0, k - 1)
    return pd.DataFrame(
        {
            "z": z.tolist(),
            "p": p.tolist(),
            "y": y.astype(np.int32),
            **_context(rng, n, weighted),
        }
    )


def top_label_log(seed: int, n: int, *, weighted: bool = False) -> pd.DataFrame:
    """Columns c (confidence in [0.1, 0.999]), ok (bool, Bernoulli of c^1.5), mv, country, ..."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.1, 0.999, size=n)
    ok = rng.uniform(size=n) < c**1.5
    return pd.DataFrame({"c": c, "ok": ok, **_context(rng, n, weighted)})
