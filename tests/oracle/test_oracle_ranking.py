"""Oracle tests of the binary ranking metrics (docs/metrics.md) against scikit-learn/NumPy.

Weighted binary logs per model version and per slice [[], [g], [g, h]], with continuous scores,
scores rounded to 2 decimals (heavy ties, scores exactly on thresholds and on k/1000 cell edges,
and pairs of distinct scores sharing a fine cell) and scores on the grid k/100, k < 100 (one
score per fine cell). The binned metrics read the fine cells (docs/metrics.md, "Fine cells",
grid version 1; NumPy grid in ``tests/support/calibration_reference.py``). Expected values come
from ``tests/support/reference_sklearn.py``, never from the engine:

* roc_auc / pr_auc (exact) = roc_auc_score / average_precision_score to 1e-9, null when the
  spec says so (slices g = p: only positives, g = q: only negatives, g = o: weight 0); their
  error_bound is null;
* roc_auc_binned / pr_auc_binned within the spec's bound of the exact value, with that bound in
  their error_bound column, equal to the spec's cell formula, and equal to the exact value when
  every cell holds one score;
* the thresholds table = NumPy counts; the roc table's points lie on scikit-learn's roc_curve
  of the scores replaced by their cells, at the cells' documented lower edges, all of them or
  thinned to roc_points (8, 200 and 2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession

from spark_calib import evaluate
from tests.support import reference as ref
from tests.support import reference_sklearn as sk
from tests.support.evaluations import Evaluations

ATOL = 1e-9
BOUND_SLACK = 1e-12
N_ROWS = 2000
SLICES = [[], ["g"], ["g", "h"]]
THRESHOLDS = [0.2, 0.5, 0.73]
RANKING_METRICS = [
    "count",
    "roc_auc",
    "pr_auc",
    "roc_auc_binned",
    "pr_auc_binned",
    "threshold_metrics",
    "roc_curve",
]
DDL = "s double, y int, mv string, g string, h string, w double"
THRESHOLD_KEY = ("model_version", "slice_name", "slice_value", "threshold")
ROC_KEY = ("model_version", "slice_name", "slice_value", "point")


def ranking_log(seed: int, scores: str, *, weighted: bool = True, n: int = N_ROWS) -> pd.DataFrame:
    """y ~ Bernoulli(u^1.3), u ~ Beta(2, 2); s = u (``continuous``), round(u, 2) with some
    0, 1 and threshold values and pairs of distinct scores in one fine cell (``round2``), or
    floor(100 u) / 100 = the cell edges k/100, k < 100 (``grid``). Slice g = p holds only
    positives (v1), g = q only negatives (v2), and when weighted g = o (v2) only rows of
    weight 0 (P = N = 0)."""
    rng = np.random.default_rng(seed)
    u = rng.beta(2.0, 2.0, size=n)
    y = (rng.uniform(size=n) < u**1.3).astype(np.int32)
    if scores == "continuous":
        s = u
    elif scores == "round2":
        s = np.round(u, 2)
        s[:8] = [0.0, 0.0, 1.0, 1.0, 0.73, 0.2, 0.5, 0.99]
        # Distinct scores sharing a cell: 1e-17 with 0 (logits clipped to −37: cell j = 0),
        # 1 − 1.001e-12 with 1 − 1e-12 (logits 27.630 and 27.631: k = 999, j = 1035), 0.5004
        # with 0.5 (k = 500, j = 593).
        s[8:16] = [1e-17, 1e-17, 1 - 1.001e-12, 1 - 1.001e-12, 0.5004, 0.5004, 0.5, 0.5]
        s[16:18] = [1 - 1e-12, 1 - 1e-12]
    elif scores == "grid":
        s = np.floor(u * 100) / 100
        s[:3] = [0.0, 0.29, 0.57]  # fl(k/100)·100 < k for k = 29, 57: floor(s·B) is off by one
    else:
        raise ValueError(scores)
    w = rng.uniform(0.2, 3.0, size=n) if weighted else np.ones(n)
    if weighted:
        w[20:40] = 0.0
    pdf = pd.DataFrame(
        {
            "s": s,
            "y": y,
            "mv": rng.choice(["v1", "v2"], size=n),
            "g": rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2]),
            "h": rng.choice(["x", "y"], size=n),
            "w": w,
        }
    )
    tiny = pd.DataFrame(
        {
            "s": [0.9, 0.3, 0.3, 0.75, 0.1, 0.2, 0.6, 0.6, 0.95, 0.8, 0.4, 0.4, 0.1],
            "y": np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0], dtype=np.int32),
            "mv": ["v1"] * 5 + ["v2"] * 8,
            "g": ["p"] * 5 + ["q"] * 4 + ["o"] * 4,
            "h": ["x", "y", "x", "y", "x", "y", "x", "y", "x", "x", "x", "y", "y"],
            "w": [1.0, 2.0, 0.5, 1.5, 1.0, 1.0, 2.0, 0.5, 1.0] + [0.0 if weighted else 1.0] * 4,
        }
    )
    return pd.concat([pdf, tiny], ignore_index=True)


@dataclass(frozen=True)
class Case:
    make: Callable[[], pd.DataFrame]
    config: dict[str, Any]


def _config(**extra: Any) -> dict[str, Any]:
    return {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "weight": "w", "model_version": "mv"},
        "slices": SLICES,
        "metrics": RANKING_METRICS,
        "thresholds": THRESHOLDS,
        **extra,
    }


CASES: dict[str, Case] = {
    # 2,000 continuous scores mostly in the 0.001-wide middle cells (some cells hold both
    # classes, so the binning matters) and few ROC points (the curve is thinned).
    "continuous": Case(lambda: ranking_log(51, "continuous"), _config(roc_points=8)),
    # Heavy ties, scores on the thresholds and on k/1000 cell edges; 1e-8 and 0, 1 − 1e-8 and
    # 1, 0.5004 and 0.5 share a cell, so the binned AUCs may differ from the exact ones (within
    # the bound). Thresholds 0 and 1 too (rows with s = 0 and s = 1 exist).
    "round2": Case(
        lambda: ranking_log(52, "round2"),
        _config(roc_points=1000, thresholds=[0.0, *THRESHOLDS, 1.0]),
    ),
    # One distinct score per cell, in order: binning changes nothing. GROUPING SETS, and
    # roc_points = 2: every curve is thinned to the origin and its (1, 1) point.
    "grid": Case(
        lambda: ranking_log(53, "grid"),
        _config(roc_points=2, slice_strategy="grouping_sets"),
    ),
    # Unweighted, the defaults: roc_points = 200 (thinned), thresholds [0.5].
    "defaults": Case(
        lambda: ranking_log(54, "continuous", weighted=False),
        {
            "task": "binary",
            "columns": {"score": "s", "label": "y", "model_version": "mv"},
            "slices": SLICES,
            "metrics": RANKING_METRICS,
        },
    ),
}


@dataclass(frozen=True)
class Evaluated:
    pdf: pd.DataFrame
    config: dict[str, Any]
    metrics: ref.Table
    thresholds: ref.Table | None
    roc: list[dict[str, Any]] | None


def run_case(spark: SparkSession, case: Case) -> Evaluated:
    """Evaluate a case and collect its metrics, thresholds and roc tables."""
    pdf = case.make()
    result = evaluate(spark.createDataFrame(pdf, DDL), case.config)
    metrics = ref.table_from_rows((r.asDict() for r in result.metrics.collect()), ref.METRIC_KEY)
    thr = getattr(result, "thresholds", None)
    roc = getattr(result, "roc", None)
    collected = Evaluated(
        pdf,
        case.config,
        metrics,
        None
        if thr is None
        else ref.table_from_rows((r.asDict() for r in thr.collect()), THRESHOLD_KEY),
        None if roc is None else [r.asDict() for r in roc.collect()],
    )
    result.unpersist()
    return collected


def evaluated(evaluations: Evaluations, name: str) -> Evaluated:
    """CASES[name] evaluated once per session."""
    return evaluations.get(("oracle_ranking", name), lambda spark: run_case(spark, CASES[name]))


def groups(ev: Evaluated):
    """(key, y, s, w) per model version × slice group."""
    for key, gdf in sk.iter_groups(ev.pdf, ev.config["slices"], "mv"):
        w = sk.weights_of(gdf, ev.config["columns"].get("weight"))
        yield key, gdf["y"].to_numpy().astype(np.int64), gdf["s"].to_numpy(np.float64), w


def value(ev: Evaluated, key: tuple, metric: str) -> Any:
    row = ev.metrics.get((*key, None, metric))
    if row is None:
        raise AssertionError(f"missing metric row {(*key, None, metric)}")
    return row["value"]


def assert_no_diff(problems: list[str]) -> None:
    assert not problems, "\n".join(problems[:40])


@pytest.mark.parametrize("name", list(CASES))
def test_exact_auc_matches_sklearn(evaluations: Evaluations, name: str) -> None:
    """roc_auc = roc_auc_score and pr_auc = average_precision_score (weighted, tie-aware)
    per model version × slice, with n and weight_sum; roc_auc null when P = 0 or N = 0,
    pr_auc null when P = 0; count rows; no other metric rows for these names; exact values
    carry no error_bound."""
    ev = evaluated(evaluations, name)
    want: ref.Table = {}
    for key, y, s, w in groups(ev):
        common = {"n": len(y), "weight_sum": float(w.sum()), "error_bound": None}
        for metric, v in sk.exact_auc(y, s, w).items():
            want[(*key, None, metric)] = {"value": v, **common}
        want[(*key, None, "count")] = {"value": float(len(y)), **common}
    if ev.config["columns"].get("weight"):
        assert any(v["weight_sum"] == 0 for v in want.values()), "no weightless slice in data"
    got = {k: v for k, v in ev.metrics.items() if k[4] in ("roc_auc", "pr_auc", "count")}
    assert_no_diff(ref.diff_tables(got, want, atol=ATOL))


@pytest.mark.parametrize("name", list(CASES))
def test_binned_auc_within_bound_of_exact(evaluations: Evaluations, name: str) -> None:
    """|roc_auc_binned − roc_auc_score| ≤ ½ Σ_b W⁺_b W⁻_b / (P N) and |pr_auc_binned −
    average_precision_score| ≤ Σ_b (W⁺_b / P)(hi_b − lo_b) over the fine cells b, per key
    (bounds from NumPy); the row's error_bound is that bound; null exactly where the exact
    metric is null."""
    ev = evaluated(evaluations, name)
    problems: list[str] = []
    largest_bound = 0.0
    for key, y, s, w in groups(ev):
        exact = sk.exact_auc(y, s, w)
        binned = sk.binned_auc(y, s, w)
        for metric, bound_name, exact_name in (
            ("roc_auc_binned", "roc_bound", "roc_auc"),
            ("pr_auc_binned", "pr_bound", "pr_auc"),
        ):
            got = value(ev, key, metric)
            reported = ev.metrics[(*key, None, metric)]["error_bound"]
            want, bound = exact[exact_name], binned[bound_name]
            if want is None or got is None:
                if not (want is None and got is None and reported is None):
                    problems.append(
                        f"{key} {metric}: exact {want!r}, got {got!r} (bound {reported!r})"
                    )
                continue
            assert bound is not None
            largest_bound = max(largest_bound, bound)
            if reported is None or abs(reported - bound) > ATOL:
                problems.append(f"{key} {metric}: error_bound {reported!r}, NumPy {bound!r}")
            if abs(got - want) > bound + BOUND_SLACK:
                problems.append(
                    f"{key} {metric}: |{got!r} − exact {want!r}| = {abs(got - want):.3g} "
                    f"> bound {bound:.3g}"
                )
    assert_no_diff(problems)
    if name in ("continuous", "round2"):
        assert largest_bound > 0, "expected some cell holding both classes"


@pytest.mark.parametrize("name", list(CASES))
def test_binned_auc_matches_histogram_formula(evaluations: Evaluations, name: str) -> None:
    """roc_auc_binned = Σ_b W⁻_b (TP_{>b} + ½ W⁺_b) / (P N) and pr_auc_binned =
    Σ_b (W⁺_b / P) π_b (π_b the precision below a tied cell, the walked mean precision of a
    cell of distinct scores: ``reference_sklearn.binned_auc``) over the fine cells b (the
    k/1000 cells with the double edges, left-closed, 1.0 in the last, intersected with the 1/16
    log-odds cells), with their bounds as error_bound."""
    ev = evaluated(evaluations, name)
    want: ref.Table = {}
    for key, y, s, w in groups(ev):
        binned = sk.binned_auc(y, s, w)
        common = {"n": len(y), "weight_sum": float(w.sum())}
        for metric, bound_name in (("roc_auc_binned", "roc_bound"), ("pr_auc_binned", "pr_bound")):
            want[(*key, None, metric)] = {
                "value": binned[metric],
                "error_bound": binned[bound_name],
                **common,
            }
    got = {k: v for k, v in ev.metrics.items() if k[4] in ("roc_auc_binned", "pr_auc_binned")}
    assert_no_diff(ref.diff_tables(got, want, atol=ATOL))


def test_binned_auc_equals_exact_when_cells_separate_scores(evaluations: Evaluations) -> None:
    """Scores k/100 (k < 100, k/1000-cell edges themselves): every distinct score has its own
    fine cell, in the same order, so the binned AUCs equal roc_auc_score and
    average_precision_score to 1e-9 (tied rows of one score still count ½, as in the exact
    AUC, so the error_bound, checked above, need not be 0)."""
    ev = evaluated(evaluations, "grid")
    problems: list[str] = []
    for key, y, s, w in groups(ev):
        b = sk.cell_of(s)
        _, first = np.unique(s, return_index=True)
        # The premise: the cell is a strictly increasing function of the distinct scores.
        assert np.all(np.diff(b[first]) > 0), key
        exact = sk.exact_auc(y, s, w)
        for metric, exact_name in (("roc_auc_binned", "roc_auc"), ("pr_auc_binned", "pr_auc")):
            got, want = value(ev, key, metric), exact[exact_name]
            if (got is None) != (want is None) or (
                want is not None and abs(float(got) - want) > ATOL
            ):
                problems.append(f"{key} {metric}: sklearn {exact_name} {want!r}, got {got!r}")
    assert_no_diff(problems)


@pytest.mark.parametrize("name", list(CASES))
def test_threshold_table_matches_numpy(evaluations: Evaluations, name: str) -> None:
    """One row per key × threshold: n, weight_sum, weighted tp/fp/tn/fn of s ≥ t, tpr = recall
    (null when tp + fn = 0), fpr (null when fp + tn = 0), precision (0 when tp + fp = 0)."""
    ev = evaluated(evaluations, name)
    assert ev.thresholds is not None, "threshold_metrics requested but result.thresholds is None"
    thresholds = ev.config.get("thresholds", [0.5])
    want: ref.Table = {}
    for key, y, s, w in groups(ev):
        for t, row in sk.threshold_rows(y, s, w, thresholds).items():
            want[(*key, t)] = row
    assert_no_diff(ref.diff_tables(ev.thresholds, want, atol=ATOL))


@pytest.mark.parametrize("name", list(CASES))
def test_roc_table_points_lie_on_sklearn_curve(evaluations: Evaluations, name: str) -> None:
    """Per key with P, N > 0: at most roc_points rows; point 0 is the origin (threshold null);
    then thresholds strictly decreasing, each the documented lower edge max(k/1000,
    σ((j − 593)/16)) of a non-empty fine cell b = 1186·k + j, each point's (fpr, tpr) the vertex
    of scikit-learn's roc_curve on the scores replaced by their cells at cell b (precision
    TP_{≥b}/(TP_{≥b}+FP_{≥b})), so fpr and tpr never decrease; the last point is (1, 1);
    without thinning, every non-empty cell has its point."""
    ev = evaluated(evaluations, name)
    assert ev.roc is not None, "roc_curve requested but result.roc is None"
    problems, thinned = roc_problems(ev)
    assert_no_diff(problems)
    if name in ("continuous", "defaults", "grid"):
        assert thinned > 0, "expected some keys with more cells than roc_points"


def _cell_at(threshold: float | None, cells: np.ndarray, lowers: np.ndarray) -> int | None:
    """The non-empty cell whose documented lower edge is ``threshold`` (to 1e-12), if any."""
    if threshold is None:
        return None
    i = int(np.argmin(np.abs(lowers - threshold)))
    return int(cells[i]) if abs(lowers[i] - threshold) <= 1e-12 else None


def roc_problems(ev: Evaluated) -> tuple[list[str], int]:
    """The roc table's departures from the expected points, and how many keys were thinned."""
    assert ev.roc is not None
    roc_points = int(ev.config.get("roc_points", 200))
    by_key: dict[tuple, list[dict[str, Any]]] = {}
    for row in ev.roc:
        by_key.setdefault(tuple(row[c] for c in ROC_KEY[:3]), []).append(row)
    problems: list[str] = []
    thinned = 0
    for key, y, s, w in groups(ev):
        if np.sum(w * (y == 1)) == 0 or np.sum(w * (y == 0)) == 0:
            continue  # the spec leaves the curve of a one-class key open
        rows = sorted(by_key.get(key, []), key=lambda r: r["point"])
        vertices, weightless = sk.roc_vertices(y, s, w)
        cells = np.array(sorted(vertices), dtype=np.int64)
        lowers = sk.cell_lower(cells)
        # The premise of matching a point to its cell by threshold: distinct lower edges.
        assert np.all(np.diff(lowers) > 1e-12), key
        if not rows:
            problems.append(f"{key}: no roc rows")
            continue
        if len(rows) > roc_points:
            problems.append(f"{key}: {len(rows)} points > roc_points {roc_points}")
        first = rows[0]
        if (first["point"], first["threshold"], first["fpr"], first["tpr"]) != (0, None, 0.0, 0.0):
            problems.append(f"{key}: first point is not the origin: {first}")
        points = [r["point"] for r in rows]
        if len(set(points)) != len(points):
            problems.append(f"{key}: repeated point numbers {points}")
        previous = (0.0, 0.0, 2.0)  # fpr, tpr, threshold
        got_cells: set[int] = set()
        for r in rows[1:]:
            t = r["threshold"]
            b = _cell_at(t, cells, lowers)
            if t is None or b is None:
                problems.append(
                    f"{key}: point {r['point']} threshold {t!r} is no non-empty cell's lower edge"
                )
                continue
            got_cells.add(b)
            fpr, tpr, precision = vertices[b]
            got = (r["fpr"], r["tpr"])
            if any(g is None or abs(g - e) > ATOL for g, e in zip(got, (fpr, tpr), strict=True)):
                problems.append(f"{key}: point {r['point']} (cell {b}) {got}, sklearn {(fpr, tpr)}")
            if precision is not None and (
                r["precision"] is None or abs(r["precision"] - precision) > ATOL
            ):
                problems.append(
                    f"{key}: point {r['point']} (cell {b}) precision {r['precision']!r}, "
                    f"expected {precision!r}"
                )
            if not (t < previous[2] and fpr >= previous[0] and tpr >= previous[1]):
                problems.append(f"{key}: point {r['point']} not monotone after {previous}")
            previous = (fpr, tpr, t)
        last = rows[-1]
        if last["fpr"] is None or abs(last["fpr"] - 1) > ATOL or abs(last["tpr"] - 1) > ATOL:
            problems.append(f"{key}: last point {last} is not (1, 1)")
        if len(vertices) + 1 <= roc_points:
            # A cell whose rows all weigh 0 repeats the point above it: optional.
            required = set(vertices) - weightless
            if not required <= got_cells or len(rows) != len(got_cells) + 1:
                problems.append(
                    f"{key}: {len(rows)} points for {len(vertices)} non-empty cells "
                    f"(missing {sorted(required - got_cells)[:10]})"
                )
        else:
            thinned += 1
    return problems, thinned
