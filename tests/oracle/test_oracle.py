"""Oracle tests: evaluate() against the NumPy reference and scikit-learn, per slice and version.

Every expected number comes from ``tests/support/reference.py`` or scikit-learn on the same
seeded pandas data, never from the engine. Binary calibration (ece, mce, rmsce and the class-null
reliability bins) is on the positive class, (s, y), unless the case sets ``binary_view:
top_label`` (max(s, 1 − s) against correct). Each case is evaluated once (the oracle tier's shared
``evaluations`` fixture) and its metrics and reliability tables are collected and compared group
by group to 1e-9.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import SparkSession
from sklearn.calibration import calibration_curve
from sklearn.metrics import accuracy_score, brier_score_loss, log_loss

from spark_calib import evaluate
from tests.support import reference as ref
from tests.support.evaluations import Evaluations

ATOL = 1e-9
N_ROWS = 3000
K = 10
SLICES = [[], ["country"], ["country", "device"]]
BINARY_DDL = "s double, y int, mv string, country string, device string, w double"
MULTICLASS_DDL = (
    "z array<double>, p array<double>, y int, mv string, country string, device string, w double"
)
TOP_LABEL_DDL = "c double, ok boolean, mv string, country string, device string, w double"


@dataclass(frozen=True)
class Case:
    """One oracle scenario: seeded data, its Spark schema and the evaluate config."""

    make: Callable[[], pd.DataFrame]
    ddl: str
    config: dict[str, Any]


CASES: dict[str, Case] = {
    # Unweighted, no model_version column (model_version is null), right-closed bins like
    # scikit-learn's calibration_curve.
    "binary": Case(
        lambda: ref.binary_log(11, N_ROWS),
        BINARY_DDL,
        {
            "task": "binary",
            "columns": {"score": "s", "label": "y"},
            "slices": SLICES,
            "binning": {"n_bins": 10, "edges": "right_closed"},
            "metrics": list(ref.ALL_METRICS),
        },
    ),
    # Weighted, per model version, a non-default threshold (which moves accuracy only: the
    # positive-class bins do not depend on it).
    "binary_weighted": Case(
        lambda: ref.binary_log(12, N_ROWS, weighted=True),
        BINARY_DDL,
        {
            "task": "binary",
            "columns": {"score": "s", "label": "y", "weight": "w", "model_version": "mv"},
            "slices": SLICES,
            "binning": {"n_bins": 15, "edges": "left_closed"},
            "metrics": list(ref.ALL_METRICS),
            "threshold": 0.4,
            "nll_eps": 1e-15,
        },
    ),
    # The top-label view of a binary log (the pre-positive-class contract): weighted, per model
    # version, a threshold of 0.6 (which moves the confidences and correctness of the bins).
    "binary_top_label_view": Case(
        lambda: ref.binary_log(18, N_ROWS, weighted=True),
        BINARY_DDL,
        {
            "task": "binary",
            "columns": {"score": "s", "label": "y", "weight": "w", "model_version": "mv"},
            "slices": SLICES,
            "binning": {"n_bins": 15, "edges": "left_closed"},
            "metrics": list(ref.ALL_METRICS),
            "threshold": 0.6,
            "binary_view": "top_label",
        },
    ),
    # K = 10 probabilities, unweighted, classwise rows labelled by class_names.
    "multiclass": Case(
        lambda: ref.multiclass_log(13, N_ROWS),
        MULTICLASS_DDL,
        {
            "task": "multiclass",
            "columns": {"probs": "p", "label": "y", "model_version": "mv"},
            "num_classes": K,
            "class_names": [f"class_{k}" for k in range(K)],
            "slices": SLICES,
            "binning": {"n_bins": 15, "edges": "left_closed"},
            "metrics": list(ref.ALL_METRICS),
        },
    ),
    # K = 10 probabilities, weighted, right-closed, classwise rows labelled by index.
    "multiclass_weighted": Case(
        lambda: ref.multiclass_log(14, N_ROWS, weighted=True),
        MULTICLASS_DDL,
        {
            "task": "multiclass",
            "columns": {"probs": "p", "label": "y", "weight": "w", "model_version": "mv"},
            "num_classes": K,
            "slices": SLICES,
            "binning": {"n_bins": 12, "edges": "right_closed"},
            "metrics": list(ref.ALL_METRICS),
        },
    ),
    # K = 10 logits (softmax in the engine; nll is the exact log-softmax), weighted.
    "multiclass_logits": Case(
        lambda: ref.multiclass_log(15, N_ROWS, weighted=True),
        MULTICLASS_DDL,
        {
            "task": "multiclass",
            "columns": {"logits": "z", "label": "y", "weight": "w", "model_version": "mv"},
            "num_classes": K,
            "slices": SLICES,
            "metrics": list(ref.ALL_METRICS),
        },
    ),
    # Given confidence and boolean correctness, weighted; metrics left to the default list.
    "top_label_weighted": Case(
        lambda: ref.top_label_log(16, N_ROWS, weighted=True),
        TOP_LABEL_DDL,
        {
            "task": "top_label",
            "columns": {"confidence": "c", "correct": "ok", "weight": "w", "model_version": "mv"},
            "slices": SLICES,
            "binning": {"n_bins": 15, "edges": "left_closed"},
        },
    ),
}


@dataclass(frozen=True)
class Evaluated:
    """A case's pandas data, its config and the engine's collected tables."""

    pdf: pd.DataFrame
    config: dict[str, Any]
    metrics: ref.Table
    reliability: ref.Table


def run(spark: SparkSession, pdf: pd.DataFrame, ddl: str, config: dict[str, Any]) -> Evaluated:
    """Evaluate ``pdf`` with the engine and collect metrics and reliability as keyed tables."""
    result = evaluate(spark.createDataFrame(pdf, ddl), config)
    metrics = ref.table_from_rows((r.asDict() for r in result.metrics.collect()), ref.METRIC_KEY)
    reliability = ref.table_from_rows(
        (r.asDict() for r in result.reliability.collect()), ref.BIN_KEY
    )
    result.unpersist()
    return Evaluated(pdf, config, metrics, reliability)


def evaluated(evaluations: Evaluations, name: str) -> Evaluated:
    """The engine's tables of CASES[name], evaluated once per session."""
    case = CASES[name]
    return evaluations.get(
        ("oracle", name), lambda spark: run(spark, case.make(), case.ddl, case.config)
    )


def expected_of(evaluations: Evaluations, name: str) -> tuple[ref.Table, ref.Table]:
    """The reference's metrics and reliability tables of CASES[name], computed once."""
    ev = evaluated(evaluations, name)
    return evaluations.get(
        ("oracle", name, "expected"), lambda _: ref.expected_tables(ev.pdf, ev.config)
    )


def assert_no_diff(problems: list[str]) -> None:
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", list(CASES))
def test_metrics_match_reference(evaluations: Evaluations, name: str) -> None:
    """Every metric row (value, n, weight_sum) per model version × slice × class equals the
    NumPy reference, and there are no missing or extra rows."""
    ev = evaluated(evaluations, name)
    expected, _ = expected_of(evaluations, name)
    assert_no_diff(ref.diff_tables(ev.metrics, expected, atol=ATOL))


@pytest.mark.parametrize("name", list(CASES))
def test_reliability_matches_reference(evaluations: Evaluations, name: str) -> None:
    """All M bins per key (empty ones with n=0 and null means): edges, n, weight_sum,
    mean_confidence, accuracy and gap equal the reference, top-label and classwise."""
    ev = evaluated(evaluations, name)
    _, expected = expected_of(evaluations, name)
    assert_no_diff(ref.diff_tables(ev.reliability, expected, atol=ATOL))


def _sklearn_metrics(gdf: pd.DataFrame, config: Mapping[str, Any]) -> dict[str, float]:
    """brier, nll and accuracy of one group computed by scikit-learn."""
    cols = config["columns"]
    w = gdf[cols["weight"]].to_numpy() if cols.get("weight") else None
    task = config["task"]
    if task == "binary":
        s = gdf[cols["score"]].to_numpy()
        y = gdf[cols["label"]].to_numpy()
        prediction = (s >= config.get("threshold", 0.5)).astype(int)
        return {
            "brier": brier_score_loss(y, s, sample_weight=w, pos_label=1),
            "nll": log_loss(y, s, sample_weight=w, labels=[0, 1]),
            "accuracy": accuracy_score(y, prediction, sample_weight=w),
        }
    if task == "multiclass":
        if cols.get("probs"):
            p = np.stack(gdf[cols["probs"]].to_numpy())
        else:
            p = ref.softmax(np.stack(gdf[cols["logits"]].to_numpy()))
        y = gdf[cols["label"]].to_numpy()
        labels = np.arange(p.shape[1])
        return {
            # scikit-learn halves the Brier score only for binary input; keep [0, 2] explicitly.
            "brier": brier_score_loss(y, p, sample_weight=w, labels=labels, scale_by_half=False),
            "nll": log_loss(y, p, sample_weight=w, labels=labels),
            "accuracy": accuracy_score(y, p.argmax(axis=1), sample_weight=w),
        }
    # top_label: Brier of (correct, confidence) is the binary Brier with confidence as P(correct).
    c = gdf[cols["confidence"]].to_numpy()
    ok = gdf[cols["correct"]].to_numpy().astype(int)
    return {
        "brier": brier_score_loss(ok, c, sample_weight=w, pos_label=1),
        "accuracy": accuracy_score(ok, np.ones_like(ok), sample_weight=w),
    }


@pytest.mark.parametrize("name", list(CASES))
def test_metrics_match_sklearn(evaluations: Evaluations, name: str) -> None:
    """brier (binary [0,1], multiclass [0,2]), nll and accuracy per group equal scikit-learn's
    brier_score_loss, log_loss and accuracy_score (data kept away from the eps clipping)."""
    ev = evaluated(evaluations, name)
    problems: list[str] = []
    for mv, slice_name, slice_value, gdf in ref.iter_groups(ev.pdf, ev.config):
        for metric, want in _sklearn_metrics(gdf, ev.config).items():
            row = ev.metrics.get((mv, slice_name, slice_value, None, metric))
            got = None if row is None else row["value"]
            if got is None or abs(float(got) - want) > ATOL:  # type: ignore[arg-type]
                problems.append(
                    f"{(mv, slice_name, slice_value)} {metric}: sklearn {want!r}, got {got!r}"
                )
    assert_no_diff(problems)


def test_positive_class_curve_matches_sklearn_calibration_curve(evaluations: Evaluations) -> None:
    """Binary, right_closed: the class-1 classwise reliability bins (non-empty ones) equal
    scikit-learn's calibration_curve(strategy='uniform') per slice."""
    ev = evaluated(evaluations, "binary")
    n_bins = ev.config["binning"]["n_bins"]
    problems: list[str] = []
    for mv, slice_name, slice_value, gdf in ref.iter_groups(ev.pdf, ev.config):
        prob_true, prob_pred = calibration_curve(
            gdf["y"].to_numpy(), gdf["s"].to_numpy(), n_bins=n_bins, strategy="uniform"
        )
        rows = [ev.reliability.get((mv, slice_name, slice_value, "1", b)) for b in range(n_bins)]
        if any(r is None for r in rows):
            problems.append(f"{(mv, slice_name, slice_value)}: class '1' bins missing")
            continue
        nonempty = [r for r in rows if r is not None and r["n"]]
        got_true = np.array([r["accuracy"] for r in nonempty], dtype=float)
        got_pred = np.array([r["mean_confidence"] for r in nonempty], dtype=float)
        if got_true.shape != prob_true.shape or not (
            np.allclose(got_true, prob_true, rtol=0, atol=ATOL)
            and np.allclose(got_pred, prob_pred, rtol=0, atol=ATOL)
        ):
            problems.append(
                f"{(mv, slice_name, slice_value)}: sklearn {prob_true}/{prob_pred}, "
                f"got {got_true}/{got_pred}"
            )
    assert_no_diff(problems)


@pytest.mark.parametrize("name", ["binary", "binary_weighted"])
def test_binary_ece_is_the_class_1_classwise_ece(evaluations: Evaluations, name: str) -> None:
    """Positive-class view: ece and the class-null reliability bins are the class-1 one-vs-rest
    ones (the same bins of s against [y = 1]), per group; the top-label view differs."""
    ev = evaluated(evaluations, name)
    n_bins = ev.config["binning"]["n_bins"]
    problems: list[str] = []
    for mv, slice_name, slice_value, _ in ref.iter_groups(ev.pdf, ev.config):
        key = (mv, slice_name, slice_value)
        ece = ev.metrics[(*key, None, "ece")]["value"]
        class_1 = ev.metrics[(*key, "1", "classwise_ece")]["value"]
        if ece is None or class_1 is None or abs(ece - class_1) > ATOL:
            problems.append(f"{key}: ece {ece!r}, class-1 classwise_ece {class_1!r}")
        for b in range(n_bins):
            top, one = ev.reliability[(*key, None, b)], ev.reliability[(*key, "1", b)]
            problems += ref.diff_tables({(*key, b): top}, {(*key, b): one}, atol=ATOL)
    assert_no_diff(problems)
    top_label = ref.expected_tables(ev.pdf, {**ev.config, "binary_view": "top_label"})[0]
    assert any(
        abs(top_label[k]["value"] - ev.metrics[k]["value"]) > 1e-3  # type: ignore[operator]
        for k in top_label
        if k[4] == "ece" and k[3] is None
    ), "the top-label view should give other ECEs on this data"


@pytest.mark.parametrize("edges", ["left_closed", "right_closed"])
def test_confidences_exactly_on_bin_edges(spark: SparkSession, edges: str) -> None:
    """Confidences equal to every edge k/M (0 and 1 included) with M = 49, where floor(c·M)
    is one bin off for several k: bins follow the double edges k/M exactly."""
    m = 49
    c = np.repeat(np.arange(m + 1) / m, 4)
    rng = np.random.default_rng(21)
    pdf = pd.DataFrame(
        {
            "c": c,
            "ok": np.tile([True, False, True, True], m + 1),
            "mv": "v1",
            "country": "US",
            "device": "mobile",
            "w": rng.uniform(0.5, 2.0, size=c.size),
        }
    )
    config = {
        "task": "top_label",
        "columns": {"confidence": "c", "correct": "ok", "weight": "w"},
        "slices": [[]],
        "binning": {"n_bins": m, "edges": edges},
        "metrics": ["ece", "mce", "rmsce", "brier", "accuracy", "count"],
    }
    ev = run(spark, pdf, TOP_LABEL_DDL, config)
    want_metrics, want_bins = ref.expected_tables(pdf, config)
    assert_no_diff(
        ref.diff_tables(ev.reliability, want_bins, atol=ATOL)
        + ref.diff_tables(ev.metrics, want_metrics, atol=ATOL)
    )


def test_slice_values_with_separators_escapes_and_nulls(spark: SparkSession) -> None:
    """slice_value escapes "\\" and "," and writes null as \\N (a literal "\\N" value stays
    distinct); metrics of those groups still equal the reference."""
    rng = np.random.default_rng(17)
    pdf = ref.binary_log(17, 800, weighted=True)
    pdf["country"] = pd.Series(
        rng.choice(np.array(["a,b", "c\\d", None, "\\N", "plain"], dtype=object), size=len(pdf)),
        dtype=object,
    )
    pdf["tier"] = pd.Series(rng.choice(np.array([1, 2, None], dtype=object), size=len(pdf)))
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "weight": "w"},
        "slices": [[], ["country"], ["country", "tier"]],
        "metrics": ["ece", "brier", "count"],
    }
    ev = run(spark, pdf, BINARY_DDL + ", tier int", config)
    want_metrics, _ = ref.expected_tables(pdf, config)
    assert {"a\\,b", "c\\\\d", "\\N", "\\\\N", "plain"} == {
        k[2] for k in want_metrics if k[1] == "country"
    }
    assert_no_diff(ref.diff_tables(ev.metrics, want_metrics, atol=ATOL))
