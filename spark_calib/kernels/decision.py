"""The decision family of one key (confusion-based metrics), from its confusion cells.

The cells W_jk are the weight of the rows with true class j predicted as k, read from the
key's top-label statistics rows (class null) that have a ``predicted_class``: multiclass, the
rows with a ``true_class`` summed per (true, predicted) class; binary, per predicted class k
the positives (``n_positive``, Σw·y, Σw·y·nll) are cell (class 1, k) and the rest (n, Σw,
Σw·nll minus them) cell (class 0, k). A cell is kept only when it has rows (n > 0), so no
rounding residue of W − Σw·y becomes a cell. Then T_k = Σ_j W_kj (true support),
P_k = Σ_j W_jk (predicted), TP_k = W_kk, over L = the classes occurring as a true or a
predicted class of a kept cell:

- precision_k = TP_k / P_k, recall_k = TP_k / T_k, f1_k = 2 TP_k / (P_k + T_k), each 0 when
  its denominator is not > 0 (scikit-learn's default zero_division); ``_macro`` = mean over L,
  ``_weighted`` = Σ T_k m_k / Σ T_k (0 when Σ T_k is not > 0), ``_micro`` the metric of the
  summed TP, P and T.
- balanced_accuracy = mean over k with T_k > 0 of TP_k / T_k (null when there is none);
  balanced_error_rate = 1 − it.
- class_weighted_error = Σ c_k (T_k − TP_k) / Σ c_k T_k; class_weighted_nll =
  Σ c_k NLL_k / Σ c_k T_k with NLL_k = Σ_{y=k} w·nll and c_k the class weight (1 when not
  listed); misclassification_cost = Σ_jk C_jk W_jk / W over the cells whose classes the cost
  matrix names (0 without one), W = Σ_jk W_jk. Each null when its denominator is 0.

Per-class rows carry ``class``, the averages and key values not; every row's ``n`` and
``weight_sum`` are the key's kept cells' Σn and W. A key without kept cells has no rows. A
jackknife replicate recomputes L from its own cells: a class without cells there has no
value in it, nor has any row of a replicate without cells. No analytic standard error.

Settings (``FinishPlan.setting``): ``task`` (str), ``class_names`` (list[str] or None: the
class labels, else "0", "1", …), ``class_weights`` (dict class label → c_k) and
``cost_matrix`` (list of K rows of K floats, C[true][predicted], or None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from spark_calib.kernels.arrow_batch import Rows, is_null, labels, select
from spark_calib.kernels.estimates import Estimates
from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.replicates import replicated
from spark_calib.registry.metrics import CONFUSION
from spark_calib.stats import schema as stats

# The settings the family reads (``FinishPlan.setting``).
TASK = "task"
CLASS_NAMES = "class_names"
CLASS_WEIGHTS = "class_weights"
COST_MATRIX = "cost_matrix"

AVERAGES = ("macro", "micro", "weighted")

Terms = dict[str, np.ndarray]


@dataclass(frozen=True)
class ConfusionCells:
    """The key's classes U (sorted) and its cells per replicate, shape (R, U, U) indexed
    [replicate, true, predicted]: n (0 for a cell without rows), weight Σw and nll Σw·nll."""

    classes: list[str]
    n: np.ndarray
    weight: np.ndarray
    nll: np.ndarray


def decision_estimates(table: Rows, plan: FinishPlan) -> Estimates | None:
    """The decision metrics of one key's valid statistics rows (columns ``class``,
    ``true_class``, ``predicted_class``, ``bucket``, ``n``, ``n_positive``, ``sum_weight``,
    ``sum_weight_positive``, ``sum_weight_nll``, ``sum_weight_positive_nll``); None when the
    plan requests none of them or the key has no cells (it has no rows)."""
    names = plan.names(CONFUSION)
    if not names:
        return None
    # Overflowing sums are nulled later (``estimates.defined``), so their warnings are noise.
    with np.errstate(over="ignore", invalid="ignore"):
        cells = confusion_cells(table, plan)
        t = _terms(cells, plan)
        members = np.flatnonzero(t["member"][0])
        if not members.size:
            return None
        return _estimates(names, cells.classes, members, t, plan)


def _estimates(
    names: tuple[str, ...], classes: list[str], members: np.ndarray, t: Terms, plan: FinishPlan
) -> Estimates:
    """The rows of the requested metrics: per-class rows over the point estimate's L."""
    rows_class: list[Any] = []
    rows_metric: list[str] = []
    columns: list[np.ndarray] = []
    for name in names:
        if name in CLASS_VALUES:
            value = CLASS_VALUES[name]
            per_class = np.where(t["member"], value(t["tp"], t["p"], t["t"]), np.nan)
            for k in members:
                rows_class.append(classes[k])
                rows_metric.append(name)
                columns.append(per_class[:, k])
            for average in AVERAGES:
                rows_class.append(None)
                rows_metric.append(f"{name}_{average}")
                columns.append(_average(average, value, t))
        elif name in KEY_VALUES:
            rows_class.append(None)
            rows_metric.append(name)
            columns.append(KEY_VALUES[name](t))
        else:
            raise KeyError(f"{name!r} is not a metric of the {CONFUSION} family")
    count = len(rows_metric)
    values = np.stack(columns, axis=1)
    # A replicate without cells has no rows at all, as the key would have none.
    values = np.where(t["present"][:, None], values, np.nan)
    return Estimates(
        classes=rows_class,
        metrics=rows_metric,
        values=values,
        n=np.full(count, t["n"][0], dtype=np.int64),
        weight_sum=np.full(count, t["w"][0]),
        se=np.full(count, np.nan),
        error_bound=np.full(count, np.nan),
        noise=np.ones(count, dtype=bool),
    )


def confusion_cells(table: Rows, plan: FinishPlan) -> ConfusionCells:
    """The key's confusion cells (``ConfusionCells``) from its top-label rows with a predicted
    class: binary from the label sums per predicted class, otherwise per (true, predicted)."""
    task = plan.setting(TASK)
    if task is None:
        raise ValueError(f"the {CONFUSION} kernel needs the setting {TASK!r}")
    top = is_null(table, stats.CLASS)
    predicted = ~is_null(table, stats.PREDICTED_CLASS)
    if task == "binary":
        return _binary_cells(select(table, top & predicted), plan)
    true = ~is_null(table, stats.TRUE_CLASS)
    kept = select(table, top & predicted & true)
    true_labels = labels(kept, stats.TRUE_CLASS)
    predicted_labels = labels(kept, stats.PREDICTED_CLASS)
    classes = sorted(set(true_labels) | set(predicted_labels))
    index = {label: position for position, label in enumerate(classes)}
    place = (
        np.array([index[label] for label in true_labels], dtype=np.int64),
        np.array([index[label] for label in predicted_labels], dtype=np.int64),
    )
    shape = (len(classes), len(classes))
    n, sums = replicated(kept, plan, place, shape, (stats.SUM_WEIGHT, stats.SUM_WEIGHT_NLL))
    return ConfusionCells(classes, n, sums[stats.SUM_WEIGHT], sums[stats.SUM_WEIGHT_NLL])


def _binary_cells(kept: Rows, plan: FinishPlan) -> ConfusionCells:
    """Per predicted class k: cell (class 1, k) = (n_positive, Σw·y, Σw·y·nll), cell
    (class 0, k) = (n, Σw, Σw·nll) minus them; each only when its count is > 0 (a null
    n_positive keeps neither)."""
    negative, positive = binary_labels(plan)
    predicted_labels = labels(kept, stats.PREDICTED_CLASS)
    classes = sorted({negative, positive, *predicted_labels})
    index = {label: position for position, label in enumerate(classes)}
    place = (np.array([index[label] for label in predicted_labels], dtype=np.int64),)
    columns = (
        stats.N_POSITIVE,
        stats.SUM_WEIGHT,
        stats.SUM_WEIGHT_POSITIVE,
        stats.SUM_WEIGHT_NLL,
        stats.SUM_WEIGHT_POSITIVE_NLL,
    )
    n, sums = replicated(kept, plan, place, (len(classes),), columns)
    counted = sums[stats.N_POSITIVE]
    known = ~np.isnan(counted)
    n_positive = np.rint(np.where(known, counted, 0.0)).astype(np.int64)
    sides = (
        (
            index[negative],
            n - n_positive,
            sums[stats.SUM_WEIGHT] - sums[stats.SUM_WEIGHT_POSITIVE],
            sums[stats.SUM_WEIGHT_NLL] - sums[stats.SUM_WEIGHT_POSITIVE_NLL],
        ),
        (
            index[positive],
            n_positive,
            sums[stats.SUM_WEIGHT_POSITIVE],
            sums[stats.SUM_WEIGHT_POSITIVE_NLL],
        ),
    )
    shape = (plan.replicates, len(classes), len(classes))
    cell_n = np.zeros(shape, dtype=np.int64)
    weight = np.zeros(shape)
    nll = np.zeros(shape)
    for row, side_n, side_weight, side_nll in sides:
        kept_side = known & (side_n > 0)
        cell_n[:, row, :] = np.where(kept_side, side_n, 0)
        weight[:, row, :] = np.where(kept_side, side_weight, 0.0)
        nll[:, row, :] = np.where(kept_side, side_nll, 0.0)
    return ConfusionCells(classes, cell_n, weight, nll)


def binary_labels(plan: FinishPlan) -> tuple[str, str]:
    """The ``class`` labels of a binary task's classes 0 and 1."""
    names = plan.setting(CLASS_NAMES)
    if names is not None:
        return str(names[0]), str(names[1])
    return "0", "1"


def _cost_matrix(plan: FinishPlan, classes: list[str]) -> np.ndarray:
    """C over the classes U, 0 where the cost matrix does not name both classes (its rows are
    the classes ``class_names``, else "0", "1", …): Spark's null cost, left out of the sum."""
    size = len(classes)
    costs = np.zeros((size, size))
    matrix = plan.setting(COST_MATRIX)
    if matrix is None:
        return costs
    names = plan.setting(CLASS_NAMES)
    matrix_labels = list(names) if names is not None else [str(k) for k in range(len(matrix))]
    position = {label: k for k, label in enumerate(matrix_labels)}
    for j, true in enumerate(classes):
        for k, predicted in enumerate(classes):
            if true in position and predicted in position:
                costs[j, k] = float(matrix[position[true]][position[predicted]])
    return costs


def _terms(cells: ConfusionCells, plan: FinishPlan) -> Terms:
    """Per (replicate, class): t, p, tp, nll and member (in L); per replicate: n, w, cost,
    the class-weighted sums and present (L not empty)."""
    kept = cells.n > 0
    weight = np.where(kept, cells.weight, 0.0)
    nll = np.where(kept, cells.nll, 0.0)
    class_weights = plan.setting(CLASS_WEIGHTS) or {}
    c = np.array([float(class_weights.get(label, 1.0)) for label in cells.classes])
    costs = _cost_matrix(plan, cells.classes)
    t = weight.sum(axis=2)
    tp = np.diagonal(weight, axis1=1, axis2=2)
    member: np.ndarray = np.asarray(kept.any(axis=2) | kept.any(axis=1))
    return {
        "t": t,
        "p": weight.sum(axis=1),
        "tp": tp,
        "member": member,
        "present": np.asarray(member.any(axis=1)),
        "n": np.where(kept, cells.n, 0).sum(axis=(1, 2)),
        "w": t.sum(axis=1),
        "cost": (costs * weight).sum(axis=(1, 2)),
        "cw_t": (c * t).sum(axis=1),
        "cw_err": (c * (t - tp)).sum(axis=1),
        "cw_nll": (c * nll.sum(axis=2)).sum(axis=1),
    }


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator/denominator, 0 when the denominator is not > 0 (scikit-learn's
    zero_division)."""
    positive = denominator > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(positive, numerator / np.where(positive, denominator, 1.0), 0.0)


def _div(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator/denominator, NaN where the denominator is 0 (Spark's try_divide)."""
    zero = denominator == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(zero, np.nan, numerator / np.where(zero, 1.0, denominator))


ClassValue = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]

# Per-class metric → its value from (tp, p, t), per class or summed (micro).
CLASS_VALUES: dict[str, ClassValue] = {
    "precision": lambda tp, p, t: _ratio(tp, p),
    "recall": lambda tp, p, t: _ratio(tp, t),
    "f1": lambda tp, p, t: _ratio(2.0 * tp, p + t),
}


def _average(average: str, value: ClassValue, t: Terms) -> np.ndarray:
    """The macro, micro or weighted average over L of a per-class metric, per replicate."""
    member = t["member"]
    if average == "micro":
        return value(*(np.where(member, t[name], 0.0).sum(axis=1) for name in ("tp", "p", "t")))
    per_class = np.where(member, value(t["tp"], t["p"], t["t"]), 0.0)
    if average == "macro":
        return _div(per_class.sum(axis=1), member.sum(axis=1).astype(float))
    support = np.where(member, t["t"], 0.0)
    return _ratio((support * per_class).sum(axis=1), support.sum(axis=1))


def _balanced_accuracy(t: Terms) -> np.ndarray:
    supported = t["member"] & (t["t"] > 0.0)
    recall = np.where(supported, _ratio(t["tp"], t["t"]), 0.0)
    return _div(recall.sum(axis=1), supported.sum(axis=1).astype(float))


# Key-level metric (one row, class null) → its value per replicate.
KEY_VALUES: dict[str, Callable[[Terms], np.ndarray]] = {
    "balanced_accuracy": _balanced_accuracy,
    "balanced_error_rate": lambda t: 1.0 - _balanced_accuracy(t),
    "class_weighted_error": lambda t: _div(t["cw_err"], t["cw_t"]),
    "class_weighted_nll": lambda t: _div(t["cw_nll"], t["cw_t"]),
    "misclassification_cost": lambda t: _div(t["cost"], t["w"]),
}
