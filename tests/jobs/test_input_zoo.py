"""The input zoo: hostile and broken inputs, each case a row of docs/input_zoo.md.

Every case says what the user gets: a one-line error (type and message), rows routed to the
invalid output with a reason, or metric values. Expected values are computed by hand in the
comments (or are documented errors), never read back from the code under test.

Cases already pinned elsewhere are not repeated here; docs/input_zoo.md points to them
(tests/engine/: test_validation.py, test_errors.py, test_slices.py, test_metrics_hand.py,
test_decision_hand.py, test_regression_hand.py; tests/jobs/: test_job_errors.py,
test_job_window.py).

To keep the file fast, each task's zoo is one DataFrame evaluated once (a module fixture):
every case is its own ``model_version``, so the cases never share a metric key, and the
parametrized tests read their case's rows from the shared result.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import ConfigError, InvalidRowsError, SchemaError, evaluate, load_config
from spark_calib.config import InputConfig
from spark_calib.slicing.values import decode_slice_value
from spark_calib_cli.commands.evaluate import check_job_config, run_evaluate
from spark_calib_cli.io.input import read_input
from tests.support.frames import metric_values
from tests.support.jobs import RUN_DATE, job_config

NAN, INF = math.nan, math.inf
NLL_OF_EPS = 15 * math.log(10)  # −log(1e-15): a confident wrong answer, clipped at ε
ABS = 1e-12
ALL = {"max_invalid_fraction": 1.0}

Expected = Mapping[tuple[str, str, str | None, str], float | None]


def assert_values(got: dict[tuple, float | None], case: str | None, want: Expected) -> None:
    """Each (slice_name, slice_value, class, metric) of ``want`` for model_version ``case``."""
    for (name, value, class_, metric), expected in want.items():
        key = (case, name, value, class_, metric)
        assert key in got, f"no metric row {key}"
        if expected is None:
            assert got[key] is None, (key, got[key])
        else:
            assert got[key] == pytest.approx(expected, abs=ABS), key


def repr_case(value: object) -> str:
    """Test ids: the case name for names, a placeholder for the expected-value mappings."""
    return str(value) if not isinstance(value, Mapping) else "values"


def overall_values(**metrics: float | None) -> Expected:
    return {("overall", "", None, name): value for name, value in metrics.items()}


# ---------------------------------------------------------------------------------------------
# Whole-input cases: empty, every row invalid.

BINARY = {"task": "binary", "columns": {"score": "s", "label": "y"}}


def test_empty_input(spark: SparkSession) -> None:
    """No rows: no error from the library, and every output is empty (the job turns this into
    MissingInputError, see test_job_window.py)."""
    result = evaluate(spark.createDataFrame([], "s double, y int"), BINARY)
    assert (result.n_rows, dict(result.invalid_counts)) == (0, {})
    assert result.metrics.count() == 0
    assert result.reliability.count() == 0
    assert result.invalid.count() == 0


@pytest.fixture(scope="module")
def all_invalid(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([(None, 1), (None, 0), (NAN, 1)], "s double, y int")


def test_every_row_invalid_with_the_default_limit(all_invalid: DataFrame) -> None:
    with pytest.raises(InvalidRowsError) as error:
        evaluate(all_invalid, BINARY)
    assert str(error.value) == (
        "3 of 3 input rows are invalid (fraction 1 > max_invalid_fraction 0): "
        "nan_score=1, null_score=2"
    )
    assert "\n" not in str(error.value)


def test_every_row_invalid_with_limit_one(all_invalid: DataFrame) -> None:
    """max_invalid_fraction 1.0: the rows go to ``invalid``; no key has a valid row, so the
    metrics and reliability tables have no rows at all (not rows of nulls)."""
    result = evaluate(all_invalid, {**BINARY, **ALL})
    assert (result.n_rows, dict(result.invalid_counts)) == (3, {"null_score": 2, "nan_score": 1})
    assert sorted(r.reason for r in result.invalid.collect()) == [
        "nan_score",
        "null_score",
        "null_score",
    ]
    assert result.metrics.count() == 0
    assert result.reliability.count() == 0


# ---------------------------------------------------------------------------------------------
# Binary zoo: one row (or a few) per case, the case is the model_version.

BINARY_ZOO_METRICS = [
    "ece",
    "mce",
    "rmsce",
    "brier",
    "nll",
    "accuracy",
    "count",
    "roc_auc",
    "pr_auc",
    "roc_auc_binned",
    "pr_auc_binned",
    "balanced_accuracy",
    "precision",
    "recall",
]
# (case, score, label, weight, slice g)
BINARY_ZOO: list[tuple[str | None, float | None, float | None, float | None, str | None]] = [
    ("score_neg_inf", -INF, 1.0, 1.0, None),
    ("label_nan", 0.3, NAN, 1.0, None),
    ("label_pos_inf", 0.3, INF, 1.0, None),
    ("label_1.5", 0.3, 1.5, 1.0, None),
    ("weight_neg_inf", 0.3, 1.0, -INF, None),
    ("nan_score_and_null_label", NAN, None, 1.0, None),
    ("label_neg_zero", 0.3, -0.0, 1.0, None),
    ("score_neg_zero", -0.0, 0.0, 1.0, None),
    ("score_one_wrong", 1.0, 0.0, 1.0, None),
    (None, 0.8, 1.0, 1.0, None),  # model_version null
    *[("one_bin", 0.7, y, 1.0, None) for y in (1.0, 1.0, 0.0, 1.0)],
    *[("single_class", s, 0.0, 1.0, None) for s in (0.1, 0.2, 0.6, 0.3)],
    *[("zero_weights", s, y, 0.0, None) for s, y in [(0.2, 1.0), (0.7, 0.0), (0.9, 1.0)]],
    ("weights_overflow", 0.7, 0.0, 1e308, None),
    ("weights_overflow", 0.7, 1.0, 1e308, None),
    ("one_row_slice", 0.9, 1.0, 1.0, "a"),
    ("one_row_slice", 0.2, 0.0, 1.0, "a"),
    ("one_row_slice", 0.6, 1.0, 1.0, "a"),
    ("one_row_slice", 0.3, 1.0, 1.0, "b"),
]
BINARY_REASONS = {
    "score_neg_inf": "score_out_of_range",
    "label_nan": "invalid_label",
    "label_pos_inf": "invalid_label",
    "label_1.5": "invalid_label",
    "weight_neg_inf": "non_finite_weight",
    "nan_score_and_null_label": "nan_score",  # the first failing check names the row
}


@pytest.fixture(scope="module")
def binary_zoo(spark: SparkSession) -> dict[str, Any]:
    df = spark.createDataFrame(BINARY_ZOO, "case string, s double, y double, w double, g string")
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "weight": "w", "model_version": "case"},
        "slices": [[], ["g"]],
        "metrics": BINARY_ZOO_METRICS,
        **ALL,
    }
    result = evaluate(df, config)
    reliability = result.reliability.where("class is null and slice_name = 'overall'").collect()
    metrics = result.metrics.collect()
    keys = [(r.model_version, r.slice_name, r.slice_value, r["class"], r.metric) for r in metrics]
    return {
        "reasons": {r.case: r.reason for r in result.invalid.collect()},
        "n_rows": result.n_rows,
        "values": {key: r.value for key, r in zip(keys, metrics, strict=True)},
        "weight_sums": {key: r.weight_sum for key, r in zip(keys, metrics, strict=True)},
        "bins": {(r.model_version, r.bin): r for r in reliability},
    }


def test_binary_zoo_accounts_for_every_row(binary_zoo: dict[str, Any]) -> None:
    assert binary_zoo["n_rows"] == len(BINARY_ZOO)
    assert binary_zoo["reasons"] == BINARY_REASONS


@pytest.mark.parametrize(("case", "reason"), BINARY_REASONS.items())
def test_binary_row_reason(binary_zoo: dict[str, Any], case: str, reason: str) -> None:
    assert binary_zoo["reasons"][case] == reason
    assert not any(key[0] == case for key in binary_zoo["values"]), "an invalid row has metrics"


LN = math.log
# Binary calibration is on the positive class: bins of s against y (ece = Σ_b |Σ(y − s)| / W);
# accuracy thresholds s at 0.5.
BINARY_VALUES: dict[str | None, Expected] = {
    # y = −0.0 is label 0: s = 0.3 against y = 0, gap 0.3; predict 0, right.
    "label_neg_zero": overall_values(
        ece=0.3, accuracy=1.0, brier=0.09, nll=-LN(0.7), count=1.0, pr_auc=None, roc_auc=None
    ),
    # s = −0.0 is in range: s = 0 against y = 0, gap 0; predict 0, right; p_y = 1, nll = 0.
    "score_neg_zero": overall_values(ece=0.0, mce=0.0, accuracy=1.0, brier=0.0, nll=0.0),
    # s = 1 with y = 0: gap 1, wrong; nll (from a probability) clipped at ε = 1e-15.
    "score_one_wrong": overall_values(
        ece=1.0, mce=1.0, rmsce=1.0, accuracy=0.0, brier=1.0, nll=NLL_OF_EPS
    ),
    # A null model_version is a valid row, reported under model_version null: s = 0.8, y = 1.
    None: overall_values(ece=0.2, accuracy=1.0, count=1.0),
    # Four rows at s = 0.7 (bin 10 of 15), y = 1, 1, 0, 1: mean s 0.7, rate of y = 1 0.75.
    # All scores tied (one fine cell): the one negative ties with 3 positives, so AUC = ½;
    # AP = 3/4.
    "one_bin": overall_values(
        ece=0.05,
        mce=0.05,
        rmsce=0.05,
        accuracy=0.75,
        brier=(3 * 0.09 + 0.49) / 4,
        nll=-(3 * LN(0.7) + LN(0.3)) / 4,
        count=4.0,
        roc_auc=0.5,
        pr_auc=0.75,
        roc_auc_binned=0.5,
        pr_auc_binned=0.75,
        balanced_accuracy=(3 / 3 + 0 / 1) / 2,
    ),
    # Labels all 0, s = 0.1, 0.2, 0.6, 0.3 in four bins (1, 3, 9, 4), gaps 0.1, 0.2, 0.6, 0.3;
    # predictions right, right, wrong, right. No positive: every AUC is null. Only class 0 is
    # ever true, so balanced accuracy = recall_0 = 3/4; class 1 (predicted once) has precision
    # 0/1 and recall 0/0 = 0 (scikit-learn's zero_division).
    "single_class": {
        **overall_values(
            ece=(0.1 + 0.2 + 0.6 + 0.3) / 4,
            mce=0.6,
            rmsce=math.sqrt((0.01 + 0.04 + 0.36 + 0.09) / 4),
            accuracy=0.75,
            brier=(0.01 + 0.04 + 0.36 + 0.09) / 4,
            nll=-(LN(0.9) + LN(0.8) + LN(0.4) + LN(0.7)) / 4,
            roc_auc=None,
            pr_auc=None,
            roc_auc_binned=None,
            pr_auc_binned=None,
            balanced_accuracy=0.75,
        ),
        ("overall", "", "0", "precision"): 1.0,
        ("overall", "", "1", "precision"): 0.0,
        ("overall", "", "0", "recall"): 0.75,
        ("overall", "", "1", "recall"): 0.0,
    },
    # W = 0: every ratio is null (no NaN, no error); count reports n; precision and recall are
    # 0 by the zero-division rule, and balanced accuracy has no class with T_k > 0.
    "zero_weights": {
        **overall_values(
            count=3.0,
            ece=None,
            mce=None,
            rmsce=None,
            brier=None,
            nll=None,
            accuracy=None,
            roc_auc=None,
            pr_auc=None,
            roc_auc_binned=None,
            pr_auc_binned=None,
            balanced_accuracy=None,
            precision_macro=0.0,
            recall_macro=0.0,
        ),
        ("overall", "", "0", "precision"): 0.0,
        ("overall", "", "1", "recall"): 0.0,
    },
    # Σw = 2e308 overflows to ∞: ratios over it would be 0 (ECE = 0.4e308/∞) or NaN, so they
    # are null; count still reports n.
    "weights_overflow": overall_values(
        count=2.0,
        ece=None,
        mce=None,
        rmsce=None,
        brier=None,
        nll=None,
        accuracy=None,
        roc_auc=None,
        pr_auc=None,
        balanced_accuracy=None,
    ),
    # g = b holds one row: s = 0.3, y = 1 → gap 0.7; predict 0, wrong. One class only: roc_auc
    # null; the one positive ranks first, so AP = 1; balanced accuracy = recall_1 = 0.
    # g = a: positives 0.9, 0.6 both above the negative 0.2: AUC 1.
    "one_row_slice": {
        ("g", "b", None, "count"): 1.0,
        ("g", "b", None, "ece"): 0.7,
        ("g", "b", None, "accuracy"): 0.0,
        ("g", "b", None, "brier"): 0.49,
        ("g", "b", None, "nll"): -LN(0.3),
        ("g", "b", None, "roc_auc"): None,
        ("g", "b", None, "roc_auc_binned"): None,
        ("g", "b", None, "pr_auc"): 1.0,
        ("g", "b", None, "pr_auc_binned"): 1.0,
        ("g", "b", None, "balanced_accuracy"): 0.0,
        ("g", "a", None, "count"): 3.0,
        ("g", "a", None, "roc_auc"): 1.0,
        ("overall", "", None, "count"): 4.0,
    },
}


@pytest.mark.parametrize(("case", "want"), BINARY_VALUES.items(), ids=repr_case)
def test_binary_case_values(binary_zoo: dict[str, Any], case: str | None, want: Expected) -> None:
    assert_values(binary_zoo["values"], case, want)


def test_binary_case_reliability(binary_zoo: dict[str, Any]) -> None:
    """Every bin is present; empty bins and zero-weight or overflowed bins have null means."""
    bins = binary_zoo["bins"]
    one_bin = [bins[("one_bin", b)] for b in range(15)]
    assert [r.n for r in one_bin] == [0] * 10 + [4] + [0] * 4
    assert one_bin[10].mean_confidence == pytest.approx(0.7, abs=ABS)
    assert one_bin[10].accuracy == 0.75
    assert all(
        r.mean_confidence is None and r.accuracy is None for i, r in enumerate(one_bin) if i != 10
    )
    # s = −0.0 is in the first bin, with mean score 0.
    assert (bins[("score_neg_zero", 0)].n, bins[("score_neg_zero", 0)].mean_confidence) == (
        1,
        0.0,
    )
    assert bins[("score_neg_zero", 0)].accuracy == 0.0
    # Zero weights: n counts the rows, the means are null (0/0), never 0 or NaN; s = 0.2,
    # 0.7, 0.9 are in bins 3 (the edge 3/15), 10 and 13.
    zero = [bins[("zero_weights", b)] for b in range(15) if bins[("zero_weights", b)].n > 0]
    assert sorted(r.bin for r in zero) == [3, 10, 13]
    assert all(
        (r.weight_sum, r.mean_confidence, r.accuracy, r.gap) == (0.0, None, None, None)
        for r in zero
    )
    # Two rows of weight 1e308 in bin 10: W_b = ∞, so no mean (∞/∞ would be NaN).
    overflow = bins[("weights_overflow", 10)]
    assert (overflow.n, overflow.weight_sum) == (2, INF)
    assert (overflow.mean_confidence, overflow.accuracy, overflow.gap) == (None, None, None)


def test_no_metric_is_nan_and_overflowed_weights_give_null(binary_zoo: dict[str, Any]) -> None:
    values, weight_sums = binary_zoo["values"], binary_zoo["weight_sums"]
    assert not any(isinstance(v, float) and math.isnan(v) for v in values.values())
    for key, weight_sum in weight_sums.items():
        if weight_sum == INF and key[-1] != "count":
            assert values[key] is None, key


# ---------------------------------------------------------------------------------------------
# Multiclass zoo (probs, K = 3): probability vectors and labels.

# (case, probs, label, weight)
MULTICLASS_ZOO: list[tuple[str, list[float | None] | None, float | None, float]] = [
    ("element_pos_inf", [INF, 0.0, 0.0], 0.0, 1.0),
    ("element_neg_inf", [-INF, 0.5, 0.5], 0.0, 1.0),
    ("element_1+1e-12", [1 + 1e-12, 0.0, 0.0], 0.0, 1.0),
    ("length_1", [1.0], 0.0, 1.0),
    ("all_elements_null", [None, None, None], 0.0, 1.0),
    ("label_nan", [0.2, 0.3, 0.5], NAN, 1.0),
    ("label_pos_inf", [0.2, 0.3, 0.5], INF, 1.0),
    ("label_2^40", [0.2, 0.3, 0.5], 2.0**40, 1.0),
    ("element_neg_zero", [-0.0, 0.3, 0.7], 2.0, 1.0),
    ("label_neg_zero", [0.6, 0.3, 0.1], -0.0, 1.0),
    ("single_class", [0.7, 0.2, 0.1], 0.0, 1.0),
    ("single_class", [0.5, 0.4, 0.1], 0.0, 1.0),
    ("zero_weights", [0.2, 0.3, 0.5], 2.0, 0.0),
    ("zero_weights", [0.6, 0.3, 0.1], 1.0, 0.0),
]
MULTICLASS_REASONS = {
    "element_pos_inf": "probability_out_of_range",
    "element_neg_inf": "probability_out_of_range",
    "element_1+1e-12": "probability_out_of_range",
    "length_1": "wrong_length_probs",
    "all_elements_null": "null_probability",
    "label_nan": "invalid_label",
    "label_pos_inf": "invalid_label",
    "label_2^40": "invalid_label",
}
MULTICLASS_VALUES: dict[str, Expected] = {
    # −0.0 is a probability in [0, 1]: confidence 0.7 on the true class 2.
    "element_neg_zero": overall_values(
        ece=0.3, accuracy=1.0, brier=0.0 + 0.09 + 0.09, nll=-LN(0.7), count=1.0
    ),
    # A label of −0.0 is class 0.
    "label_neg_zero": overall_values(
        ece=0.4, accuracy=1.0, brier=0.16 + 0.09 + 0.01, nll=-LN(0.6), count=1.0
    ),
    # Only class 0 is true. Top label: confidences 0.7 and 0.5 (bins 10 and 7), both right.
    # One-vs-rest: class 0 gaps 0.3, 0.5 (two bins); class 1 p = 0.2, 0.4 (two bins), never
    # true; class 2 p = 0.1 twice (one bin), never true.
    "single_class": {
        **overall_values(ece=(0.3 + 0.5) / 2, accuracy=1.0, count=2.0),
        ("overall", "", "0", "classwise_ece"): (0.3 + 0.5) / 2,
        ("overall", "", "1", "classwise_ece"): (0.2 + 0.4) / 2,
        ("overall", "", "2", "classwise_ece"): 0.1,
        ("overall", "", None, "classwise_ece"): (0.4 + 0.3 + 0.1) / 3,
    },
    "zero_weights": {
        **overall_values(
            count=2.0, ece=None, mce=None, rmsce=None, brier=None, nll=None, accuracy=None
        ),
        **{("overall", "", k, "classwise_ece"): None for k in ("0", "1", "2", None)},
    },
}


@pytest.fixture(scope="module")
def multiclass_zoo(spark: SparkSession) -> dict[str, Any]:
    df = spark.createDataFrame(MULTICLASS_ZOO, "case string, p array<double>, y double, w double")
    config = {
        "task": "multiclass",
        "columns": {"probs": "p", "label": "y", "weight": "w", "model_version": "case"},
        "num_classes": 3,
        "metrics": ["ece", "mce", "rmsce", "brier", "nll", "accuracy", "count", "classwise_ece"],
        **ALL,
    }
    result = evaluate(df, config)
    return {
        "reasons": {r.case: r.reason for r in result.invalid.collect()},
        "values": metric_values(result.metrics),
    }


def test_multiclass_zoo_reasons(multiclass_zoo: dict[str, Any]) -> None:
    assert multiclass_zoo["reasons"] == MULTICLASS_REASONS


@pytest.mark.parametrize(("case", "want"), MULTICLASS_VALUES.items(), ids=repr_case)
def test_multiclass_case_values(multiclass_zoo: dict[str, Any], case: str, want: Expected) -> None:
    assert_values(multiclass_zoo["values"], case, want)


# Logits, K = 2. The softmax subtracts the row max, so finite logits never overflow; nll is
# the exact log-softmax logsumexp(z) − z_y, never clipped at ε.
LOGIT_ZOO: list[tuple[str, list[float], int]] = [
    ("element_neg_inf", [-INF, 0.0], 0),
    ("empty", [], 0),
    ("length_1", [1.0], 0),
    ("extreme_spread", [1e308, -1e308], 0),  # p = (1, 0): right, confidence 1
    ("extreme_equal", [1e308, 1e308], 1),  # p = (½, ½): first argmax 0, wrong
    # p_0 = e^−40/(1 + e^−40) ≈ 4e-18 < ε: −log p_0 = 40 + log(1 + e^−40), not −log ε ≈ 34.5.
    ("confident_wrong", [0.0, 40.0], 0),
]
LOGIT_REASONS = {
    "element_neg_inf": "non_finite_logits",
    "empty": "wrong_length_logits",
    "length_1": "wrong_length_logits",
}
LOGIT_VALUES: dict[str, Expected] = {
    "extreme_spread": overall_values(ece=0.0, accuracy=1.0, brier=0.0, nll=0.0),
    "extreme_equal": overall_values(ece=0.5, accuracy=0.0, brier=0.25 + 0.25, nll=LN(2.0)),
    "confident_wrong": overall_values(accuracy=0.0, nll=40.0 + math.log1p(math.exp(-40.0))),
}


@pytest.fixture(scope="module")
def logit_zoo(spark: SparkSession) -> dict[str, Any]:
    df = spark.createDataFrame(LOGIT_ZOO, "case string, z array<double>, y int")
    config = {
        "task": "multiclass",
        "columns": {"logits": "z", "label": "y", "model_version": "case"},
        "num_classes": 2,
        **ALL,
    }
    result = evaluate(df, config)
    return {
        "reasons": {r.case: r.reason for r in result.invalid.collect()},
        "values": metric_values(result.metrics),
    }


def test_logit_zoo_reasons(logit_zoo: dict[str, Any]) -> None:
    assert logit_zoo["reasons"] == LOGIT_REASONS


@pytest.mark.parametrize(("case", "want"), LOGIT_VALUES.items(), ids=repr_case)
def test_logit_case_values(logit_zoo: dict[str, Any], case: str, want: Expected) -> None:
    assert_values(logit_zoo["values"], case, want)


# ---------------------------------------------------------------------------------------------
# Top-label zoo (confidence + correct) and regression zoo.

TOP_LABEL_ZOO: list[tuple[str, float, float]] = [
    ("confidence_pos_inf", INF, 1.0),
    ("confidence_neg_inf", -INF, 1.0),
    ("correct_nan", 0.5, NAN),
    ("correct_2", 0.5, 2.0),
    ("correct_pos_inf", 0.5, INF),
    ("confidence_neg_zero", -0.0, 0.0),  # valid: confidence 0 in bin 0, wrong
]
TOP_LABEL_REASONS = {
    "confidence_pos_inf": "confidence_out_of_range",
    "confidence_neg_inf": "confidence_out_of_range",
    "correct_nan": "invalid_correct",
    "correct_2": "invalid_correct",
    "correct_pos_inf": "invalid_correct",
}


def test_top_label_zoo(spark: SparkSession) -> None:
    df = spark.createDataFrame(TOP_LABEL_ZOO, "case string, c double, ok double")
    config = {
        "task": "top_label",
        "columns": {"confidence": "c", "correct": "ok", "model_version": "case"},
        **ALL,
    }
    result = evaluate(df, config)
    assert {r.case: r.reason for r in result.invalid.collect()} == TOP_LABEL_REASONS
    want = overall_values(ece=0.0, mce=0.0, brier=0.0, accuracy=0.0, count=1.0)
    assert_values(metric_values(result.metrics), "confidence_neg_zero", want)


# (case, prediction μ, target y, σ, weight)
REGRESSION_ZOO: list[tuple[str, float, float, float, float]] = [
    ("sums_overflow", 1e200, 1e200 + 1e185, 1.0, 1.0),
    ("sums_overflow", 1e200, -1e200, 1.0, 1.0),
    ("zero_weights", 1.0, 2.0, 1.0, 0.0),
    ("zero_weights", 1.0, 3.0, 1.0, 0.0),
]
COVERAGE = ("coverage_0.5", "coverage_0.8", "coverage_0.9", "coverage_0.95")


def test_regression_zoo(spark: SparkSession) -> None:
    """Finite but huge values: e² overflows to ∞, so mse, rmse and gaussian_nll are ∞ (the true
    value is beyond double range); SST = ∞ − ∞ has no value, so r2 is null, never NaN. Both
    errors are far outside every interval: coverage 0, miscalibration area = mean level = ½.
    Zero weights: every ratio is null, count is n."""
    df = spark.createDataFrame(
        REGRESSION_ZOO, "case string, mu double, y double, u double, w double"
    )
    config = {
        "task": "regression",
        "columns": {
            "prediction": "mu",
            "target": "y",
            "std": "u",
            "weight": "w",
            "model_version": "case",
        },
    }
    values = metric_values(evaluate(df, config).metrics)
    assert_values(
        values,
        "sums_overflow",
        {
            **overall_values(
                count=2.0, mse=INF, rmse=INF, gaussian_nll=INF, r2=None, miscalibration_area=0.5
            ),
            **overall_values(**dict.fromkeys(COVERAGE, 0.0)),
        },
    )
    mae = values[("sums_overflow", "overall", "", None, "mae")]
    assert mae == pytest.approx((1e185 + 2e200) / 2, rel=1e-12)
    nulls = ("mse", "rmse", "mae", "r2", "gaussian_nll", "miscalibration_area", *COVERAGE)
    assert_values(
        values,
        "zero_weights",
        {**overall_values(count=2.0), **overall_values(**dict.fromkeys(nulls))},
    )
    assert not any(isinstance(v, float) and math.isnan(v) for v in values.values())


# ---------------------------------------------------------------------------------------------
# Schema problems: one-line SchemaError before any Spark job.


@pytest.mark.parametrize(
    ("ddl", "names", "config", "message"),
    [
        pytest.param(
            "s double, y int, t double",
            ["s", "y", "s"],
            BINARY,
            "input column 's' appears 2 times ('s', 's'); rename or drop the duplicates",
            id="duplicate_column",
        ),
        pytest.param(
            "s double, y int, t double",
            ["s", "y", "S"],
            BINARY,
            "input column 's' appears 2 times ('s', 'S')",
            id="duplicate_column_other_case",
        ),
        pytest.param(
            "s double, y int, g binary",
            None,
            {**BINARY, "slices": [["g"]]},
            "column 'g' (slices) is binary, which has no unambiguous text form",
            id="binary_slice_column",
        ),
        pytest.param(
            "s double, y int, m binary",
            None,
            {"task": "binary", "columns": {"score": "s", "label": "y", "model_version": "m"}},
            "column 'm' (columns.model_version) is binary",
            id="binary_model_version",
        ),
        pytest.param(
            "s double, y int",
            None,
            {**BINARY, "slices": [["country; DROP TABLE x"]]},
            "column 'country; DROP TABLE x' (slices) is not in the input",
            id="sql_in_slice_column_not_in_input",
        ),
        pytest.param(
            "p array<string>, y int",
            None,
            {"task": "multiclass", "columns": {"probs": "p", "label": "y"}},
            "column 'p' (columns.probs) must be array<double>, found array<string>",
            id="probs_of_strings",
        ),
        pytest.param(
            "p array<double>, y boolean",
            None,
            {"task": "multiclass", "columns": {"probs": "p", "label": "y"}},
            "column 'y' (columns.label) must be an int class index, found boolean",
            id="multiclass_boolean_label",
        ),
    ],
)
def test_schema_zoo(
    spark: SparkSession, ddl: str, names: list[str] | None, config: dict, message: str
) -> None:
    df = spark.createDataFrame([], ddl)
    if names is not None:
        df = df.toDF(*names)
    with pytest.raises(SchemaError, match=re.escape(message)) as error:
        evaluate(df, config)
    assert "\n" not in str(error.value)


def test_cannot_infer_classes_from_an_empty_first_array(spark: SparkSession) -> None:
    df = spark.createDataFrame([([], 0)], "p array<double>, y int")
    with pytest.raises(SchemaError, match="first array has length 0; set num_classes"):
        evaluate(df, {"task": "multiclass", "columns": {"probs": "p", "label": "y"}})


# ---------------------------------------------------------------------------------------------
# Slices: an extremely skewed slice, 10,000 distinct values.


def test_skewed_slice_is_exact(spark: SparkSession) -> None:
    """10,000 rows, 99.9% in one value. big: 9,990 rows at s = 0.8 (confidence 0.8), 70%
    positive (id % 10 < 7). small: 10 rows at s = 0.3 (predict 0, confidence 0.7), ids
    9990..9999, positive when odd: 5 right."""
    big = F.col("id") < 9990
    df = spark.range(10_000).select(
        F.when(big, "big").otherwise("small").alias("segment"),
        F.when(big, 0.8).otherwise(0.3).alias("s"),
        F.when(big, F.col("id") % 10 < 7).otherwise(F.col("id") % 2 == 1).cast("int").alias("y"),
    )
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "slices": [[], ["segment"]],
    }
    values = metric_values(evaluate(df, config).metrics)
    nll_big = -(0.7 * LN(0.8) + 0.3 * LN(0.2))
    nll_small = -(0.5 * LN(0.3) + 0.5 * LN(0.7))
    want: Expected = {
        ("segment", "big", None, "count"): 9990.0,
        ("segment", "big", None, "accuracy"): 0.7,
        ("segment", "big", None, "ece"): 0.1,
        ("segment", "big", None, "mce"): 0.1,
        ("segment", "big", None, "rmsce"): 0.1,
        ("segment", "big", None, "brier"): 0.7 * 0.04 + 0.3 * 0.64,
        ("segment", "big", None, "nll"): nll_big,
        ("segment", "small", None, "count"): 10.0,
        ("segment", "small", None, "accuracy"): 0.5,
        ("segment", "small", None, "ece"): 0.2,
        ("segment", "small", None, "mce"): 0.2,
        ("segment", "small", None, "brier"): 0.5 * 0.49 + 0.5 * 0.09,
        ("segment", "small", None, "nll"): nll_small,
        # Overall: bin of 0.8 (gap 0.1, 9,990 rows) and bin of 0.7 (gap 0.2, 10 rows).
        ("overall", "", None, "count"): 10_000.0,
        ("overall", "", None, "ece"): (9990 * 0.1 + 10 * 0.2) / 10_000,
        ("overall", "", None, "mce"): 0.2,
        ("overall", "", None, "rmsce"): math.sqrt((9990 * 0.01 + 10 * 0.04) / 10_000),
        ("overall", "", None, "accuracy"): (6993 + 5) / 10_000,
        ("overall", "", None, "nll"): (9990 * nll_big + 10 * nll_small) / 10_000,
    }
    assert_values(values, None, want)


def test_ten_thousand_slice_values(spark: SparkSession) -> None:
    """Key k of 0..9999 has k % 3 + 1 rows: every key is in the output, with its count."""
    df = spark.range(10_000).select(
        F.col("id").alias("key"),
        F.explode(F.sequence(F.lit(0), (F.col("id") % 3).cast("int"))).alias("j"),
    )
    df = df.select(
        "key", ((F.col("key") + F.col("j")) % 10 / 10 + 0.05).alias("s"), F.lit(1).alias("y")
    )
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "slices": [[], ["key"]],
        "metrics": ["count"],
    }
    rows = evaluate(df, config).metrics.collect()
    counts = {r.slice_value: r.n for r in rows if r.slice_name == "key"}
    assert len([r for r in rows if r.slice_name == "key"]) == 10_000
    assert counts == {str(k): k % 3 + 1 for k in range(10_000)}
    assert [r.n for r in rows if r.slice_name == "overall"] == [3334 * 1 + 3333 * 2 + 3333 * 3]


# ---------------------------------------------------------------------------------------------
# Slice values (separators, quotes, unicode, nulls, NaN) and hostile column names, together:
# the names only shape slice_name, the values only slice_value.

G_VALUES: list[str | None] = [
    "it's",
    'say "hi"',
    "tab\there",
    "line\nbreak",
    "🙂",
    "\u00f1",  # ñ precomposed …
    "n\u0303",  # … and decomposed: different strings, different keys (no normalisation)
    "NULL",
    None,
    "\\,",
    "a=b",
    "it's",
]
D_VALUES: list[float | None] = [NAN, INF, -INF, -0.0, 0.0, None, 1e20, 0.1, NAN, 0.1, 2.5, 2.5]
CROSS = [(1, True, dt.date(2024, 6, 30))] * 6 + [(None, None, None)] * 3
CROSS += [(1, False, dt.date(2024, 6, 30))] * 3
NAMES_ZOO_COLUMNS = [
    "model score",
    "p.label",
    "w.eight",
    "_model_version",
    "user.country",
    "a`b",
    "country; DROP TABLE x",
    "_slice_0",
    "x,y",
]
# Expected slice_value → n, written out by hand from the encoding rule (README "Slice names
# and values"): "\" → "\\", "," → "\,", null → "\N"; doubles as Spark casts them to string.
EXPECTED_SLICES: dict[str, dict[str, int]] = {
    "user.country": {
        "it's": 2,
        'say "hi"': 1,
        "tab\there": 1,
        "line\nbreak": 1,
        "🙂": 1,
        "\u00f1": 1,
        "n\u0303": 1,
        "NULL": 1,
        "\\N": 1,
        "\\\\\\,": 1,
        "a=b": 1,
    },
    # -0.0 and 0.0 are one grouping key in Spark; all NaNs are one key.
    "a`b": {
        "NaN": 2,
        "Infinity": 1,
        "-Infinity": 1,
        "0.0": 2,
        "\\N": 1,
        "1.0E20": 1,
        "0.1": 2,
        "2.5": 2,
    },
    "country; DROP TABLE x,_slice_0,x\\,y": {
        "1,true,2024-06-30": 6,
        "\\N,\\N,\\N": 3,
        "1,false,2024-06-30": 3,
    },
}


@pytest.fixture(scope="module")
def names_zoo(spark: SparkSession) -> dict[str, Any]:
    rows = [
        (0.8, 1, 1.0, "v.1", g, d, *cross)
        for g, d, cross in zip(G_VALUES, D_VALUES, CROSS, strict=True)
    ]
    rows.append((None, 1, 1.0, "v.1", "invalid row", 7.0, 2, True, dt.date(2024, 6, 30)))
    ddl = "a double, b int, c double, d string, e string, f double, g int, h boolean, i date"
    df = spark.createDataFrame(rows, ddl).toDF(*NAMES_ZOO_COLUMNS)
    config = {
        "task": "binary",
        "columns": {
            "score": "model score",
            "label": "p.label",
            "weight": "w.eight",
            "model_version": "_model_version",
        },
        "slices": [[], ["user.country"], ["a`b"], ["country; DROP TABLE x", "_slice_0", "x,y"]],
        "metrics": ["count", "ece"],
        **ALL,
    }
    result = evaluate(df, config)
    invalid = result.invalid.collect()
    return {
        "metrics": [r for r in result.metrics.collect() if r.metric == "count"],
        "invalid": invalid,
        "invalid_columns": result.invalid.columns,
    }


@pytest.mark.parametrize("name", EXPECTED_SLICES, ids=repr)
def test_slice_values_are_unambiguous(names_zoo: dict[str, Any], name: str) -> None:
    rows = [r for r in names_zoo["metrics"] if r.slice_name == name]
    assert all(r.model_version == "v.1" for r in rows)
    got = {r.slice_value: r.n for r in rows}
    assert len(got) == len(rows), "two output rows share a key"
    assert got == EXPECTED_SLICES[name]
    # Decoding gives back one value per slice column.
    n_columns = len(name.replace("\\,", "").split(","))
    assert all(len(decode_slice_value(v, n_columns)) == n_columns for v in got)


def test_string_slice_values_decode_back(names_zoo: dict[str, Any]) -> None:
    encoded = [r.slice_value for r in names_zoo["metrics"] if r.slice_name == "user.country"]
    assert {decode_slice_value(v, 1)[0] for v in encoded} == set(G_VALUES)


def test_hostile_column_names_work(names_zoo: dict[str, Any]) -> None:
    """Dots, blanks, backticks, a semicolon, a comma and internal-looking names are taken
    literally as column names; the invalid output keeps the input's own columns."""
    names = {r.slice_name for r in names_zoo["metrics"]}
    assert names == {"overall", *EXPECTED_SLICES}
    overall = [r for r in names_zoo["metrics"] if r.slice_name == "overall"]
    assert [(r.model_version, r.n) for r in overall] == [("v.1", 12)]
    assert names_zoo["invalid_columns"] == [*NAMES_ZOO_COLUMNS, "reason"]
    [row] = names_zoo["invalid"]
    assert (row["model score"], row["user.country"], row["reason"]) == (
        None,
        "invalid row",
        "null_score",
    )


# ---------------------------------------------------------------------------------------------
# The job with hostile column names, a dotted window column and catalog output: the names never
# reach a SQL statement, and a table named in one of them survives.


def test_job_with_hostile_column_names(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sentinel = "zoo_sentinel_" + uuid.uuid4().hex[:8]
    database = "zoo_" + uuid.uuid4().hex[:8]
    drop = f"country; DROP TABLE {sentinel}"
    columns = ["event.date", "model score", "p.label", "model version", "user.country", drop]
    rows = [
        (RUN_DATE, 0.8, 1, "v1", "BR", "x"),
        (RUN_DATE, None, 1, "v1", "US", "x"),
        (RUN_DATE - dt.timedelta(days=1), 0.3, 0, "v1", "US", "x"),  # outside the window
    ]
    log = tmp_path / "log"
    ddl = "a date, b double, c int, d string, e string, f string"
    spark.createDataFrame(rows, ddl).toDF(*columns).write.parquet(str(log))
    spark.sql(f"CREATE TABLE {sentinel} (i INT) USING parquet")
    statements: list[str] = []
    bound: list[object] = []
    session_type = type(spark)
    original = session_type.sql

    def recording_sql(self: SparkSession, sqlQuery: str, *args: Any, **kwargs: Any) -> DataFrame:
        # The statement text, and apart from it its parameter values (args=…), which Spark
        # binds as literals and never parses.
        statements.append(sqlQuery)
        for parameters in [*args[:1], kwargs.get("args")]:
            if isinstance(parameters, dict):
                bound.extend(parameters.values())
            elif parameters is not None:
                bound.extend(parameters)
        return original(self, sqlQuery, *args, **kwargs)

    monkeypatch.setattr(session_type, "sql", recording_sql)
    config = job_config(
        {"path": str(log), "window": {"column": "event.date", "lookback_days": 1}},
        {"database": database},
        columns={"score": "model score", "label": "p.label", "model_version": "model version"},
        slices=[[], ["user.country"], ["user.country", drop]],
        max_invalid_fraction=0.5,
    )
    outcome = run_evaluate(spark, config, RUN_DATE)
    monkeypatch.undo()

    assert (outcome.n_rows, dict(outcome.invalid_counts)) == (2, {"null_score": 1})
    metrics = spark.table(f"{database}.calibration_metrics").where("metric = 'count'").collect()
    assert {(r.slice_name, r.slice_value, r.n) for r in metrics} == {
        ("overall", "", 1),
        ("user.country", "BR", 1),
        (f"user.country,{drop}", "BR,x", 1),
    }
    [invalid] = spark.table(f"{database}.calibration_invalid_rows").collect()
    assert invalid.row_json == (
        '{"event.date":"2024-06-30","p.label":1,"model version":"v1",'
        f'"user.country":"US","{drop}":"x"}}'
    )
    assert spark.catalog.tableExists(sentinel)
    for statement in statements:
        assert sentinel not in statement and "user.country" not in statement, statement
    # A hostile name reaches a statement only whole, as a bound slice name.
    slice_names = {"overall", "user.country", f"user.country,{drop}"}
    for value in bound:
        if sentinel in str(value) or "user.country" in str(value):
            assert value in slice_names, value
    spark.sql(f"DROP TABLE {sentinel}")


# ---------------------------------------------------------------------------------------------
# YAML configs: one-line ConfigError naming the key, before any Spark.

YAML_BASE = "task: binary\ncolumns: {score: s, label: y}\n"
YAML_CASES = [
    ("unknown_nested_key", "task: binary\ncolumns: {scroe: s, label: y}\n",
     "unknown config key 'columns.scroe'; did you mean 'columns.score'?"),
    ("unknown_key_case", "Task: binary\ncolumns: {score: s, label: y}\n",
     "unknown config key 'Task'; did you mean 'task'?"),
    ("bool_for_int", YAML_BASE + "binning: {n_bins: yes}\n",
     "config key 'binning.n_bins': expected a number, not a boolean (found True)"),
    ("text_for_int", YAML_BASE + "binning: {n_bins: '10'}\n",
     "config key 'binning.n_bins': expected a number, not text (found '10')"),
    ("fraction_for_int", YAML_BASE + "binning: {n_bins: 10.5}\n",
     "config key 'binning.n_bins': Input should be a valid integer, got a number with a "
     "fractional part (found 10.5)"),
    ("bool_for_float", YAML_BASE + "threshold: on\n",
     "config key 'threshold': expected a number, not a boolean (found True)"),
    ("inf_tolerance", YAML_BASE + "sum_tolerance: .inf\n",
     "config key 'sum_tolerance': Input should be a finite number (found inf)"),
    ("inf_quality_threshold",
     "task: top_label\ncolumns: {confidence: c, quality: q}\nquality_threshold: .inf\n",
     "config key 'quality_threshold': Input should be a finite number (found inf)"),
    ("fraction_out_of_range", YAML_BASE + "max_invalid_fraction: 2\n",
     "config key 'max_invalid_fraction': Input should be less than or equal to 1 (found 2)"),
    ("slices_a_string", YAML_BASE + "slices: country\n",
     "config key 'slices': Input should be a list (found 'country')"),
    ("slices_flat_list", YAML_BASE + "slices: [country]\n",
     "config key 'slices': slices is a list of slices, each a list of column names"),
    ("duplicate_slice", YAML_BASE + "slices: [[country], [country]]\n",
     "config key 'slices': slice ['country'] is listed twice"),
    ("slice_repeats_column", YAML_BASE + "slices: [[country, country]]\n",
     "config key 'slices': slice ['country', 'country'] repeats a column"),
    ("slice_column_a_number", YAML_BASE + "slices: [[1]]\n",
     "config key 'slices.0.0': Input should be a valid string (found 1)"),
    ("metrics_a_string", YAML_BASE + "metrics: ece\n",
     "config key 'metrics': Input should be a list (found 'ece')"),
    ("column_a_number", "task: binary\ncolumns: {score: 1, label: y}\n",
     "config key 'columns.score': Input should be a valid string (found 1)"),
    ("reader_option_bool", YAML_BASE + "input: {path: p, options: {header: true}}\n",
     "config key 'input.options.header': Input should be a valid string (found True)"),
    ("duplicate_top_key", YAML_BASE + "columns: {score: t, label: y}\n",
     "repeats key 'columns' at line 3 (YAML would silently keep the last one)"),
    ("duplicate_nested_key", "task: binary\ncolumns: {score: s, score: t, label: y}\n",
     "repeats key 'score' at line 2"),
    ("not_yaml", "task: [binary\n", "is not valid YAML at line"),
    ("not_a_mapping", "- task\n", "must hold a mapping, found list"),
    ("empty_file", "", "is empty"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), [pytest.param(t, m, id=i) for i, t, m in YAML_CASES])
def test_yaml_config_zoo(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


# ---------------------------------------------------------------------------------------------
# Table and database names: plain identifiers only, checked before the catalog sees them.

JOB_BASE = {**BINARY, "input": {"path": "in"}, "output": {"path": "out"}}
TABLE_MESSAGE = "is not a table name of the form [catalog.]db.table with plain identifiers"
IDENTIFIER_MESSAGE = "is not a plain identifier (letters, digits and _, not starting with a digit)"


@pytest.mark.parametrize(
    ("key", "name", "problem"),
    [
        ("input.table", "db.t; DROP TABLE x", TABLE_MESSAGE),
        ("input.table", "db.t' OR '1'='1", TABLE_MESSAGE),
        ("input.table", "db.t -- c", TABLE_MESSAGE),
        ("output.database", "a`b", IDENTIFIER_MESSAGE),
        ("output.database", "db.x", IDENTIFIER_MESSAGE),
        ("output.database", "x); DROP TABLE y; --", IDENTIFIER_MESSAGE),
        ("output.database", "", IDENTIFIER_MESSAGE),
    ],
)
def test_catalog_names_are_identifiers(key: str, name: str, problem: str) -> None:
    section, field = key.split(".")
    mapping: dict[str, Any] = {**JOB_BASE}
    mapping[section] = {field: name}
    with pytest.raises(ConfigError) as error:
        check_job_config(load_config(mapping))
    assert str(error.value) == f"config key {key!r}: {name!r} {problem}"


def test_read_checks_the_table_name_before_the_catalog(spark: SparkSession) -> None:
    source = InputConfig(table="db.t; DROP TABLE x")
    with pytest.raises(ConfigError) as error:
        read_input(spark, source, RUN_DATE)
    assert str(error.value) == f"config key 'input.table': 'db.t; DROP TABLE x' {TABLE_MESSAGE}"


def test_the_library_builds_no_sql_text() -> None:
    """spark_calib only composes Column expressions: no SQL strings, so no column name or value
    can be parsed as SQL. The two exceptions: ``rows/internal_sql.py`` quotes internal names
    only (``tests/unit/test_internal_sql.py``), and ``rows/sql_statement.py`` runs that text as
    one statement, with user strings as bound parameters (``tests/unit/test_sql_statement.py``
    and ``test_job_with_hostile_column_names`` above)."""
    package = Path(__file__).resolve().parents[2] / "spark_calib"
    sql_text = re.compile(r"\.sql\(|\bexpr\(|selectExpr\(")
    offenders = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*.py"))
        if sql_text.search(path.read_text())
    ]
    assert offenders == ["rows/internal_sql.py", "rows/sql_statement.py"]
