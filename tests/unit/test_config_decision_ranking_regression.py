"""Config errors of the decision, ranking and regression keys (docs/metrics.md): one-line
ConfigErrors that name the offending key, raised by load_config before any Spark work."""

from __future__ import annotations

import math

import pytest

from spark_calib import ConfigError, load_config

BINARY = {"task": "binary", "columns": {"score": "s", "label": "y"}}
MULTI = {"task": "multiclass", "columns": {"probs": "p", "label": "y"}, "num_classes": 3}
NAMED = {
    "task": "multiclass",
    "columns": {"probs": "p", "label": "y"},
    "class_names": ["cat", "dog", "bird"],
}
REGRESSION = {"task": "regression", "columns": {"prediction": "mu", "target": "y"}}
WITH_STD = {"task": "regression", "columns": {"prediction": "mu", "target": "y", "std": "s"}}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(
            {**BINARY, "metrics": ["class_weighted_error"]},
            "metric 'class_weighted_error' needs class_weights",
            id="class_weighted_error-without-class_weights",
        ),
        pytest.param(
            {**MULTI, "metrics": ["class_weighted_nll"]},
            "metric 'class_weighted_nll' needs class_weights",
            id="class_weighted_nll-without-class_weights",
        ),
        pytest.param(
            {**BINARY, "metrics": ["misclassification_cost"]},
            "metric 'misclassification_cost' needs cost_matrix",
            id="misclassification_cost-without-cost_matrix",
        ),
        pytest.param(
            {**MULTI, "metrics": ["expected_misclassification_cost"]},
            "metric 'expected_misclassification_cost' needs cost_matrix",
            id="expected_misclassification_cost-without-cost_matrix",
        ),
        pytest.param(
            {**BINARY, "cost_matrix": [[0, 1, 1], [1, 0, 1], [1, 1, 0]]},
            "cost_matrix is 3×3 but there are 2 classes",
            id="cost_matrix-3x3-for-binary",
        ),
        pytest.param(
            {**BINARY, "cost_matrix": [[0, 1], [1]]},
            r"'cost_matrix': cost_matrix must be K×K with K ≥ 2, got row lengths \[2, 1\]",
            id="cost_matrix-ragged",
        ),
        pytest.param(
            {**MULTI, "cost_matrix": [[0, 1], [1, 0]]},
            "cost_matrix is 2×2 but there are 3 classes",
            id="cost_matrix-2x2-for-num_classes-3",
        ),
        pytest.param(
            {**NAMED, "cost_matrix": [[0, 1], [1, 0]]},
            "cost_matrix is 2×2 but there are 3 classes",
            id="cost_matrix-2x2-for-3-class_names",
        ),
        pytest.param(
            {**BINARY, "cost_matrix": [[0, math.nan], [1, 0]]},
            "'cost_matrix': cost_matrix entries must be finite",
            id="cost_matrix-nan",
        ),
        pytest.param(
            {**BINARY, "class_weights": {0: -1.0}},
            r"class_weights\[0\] must be a finite weight ≥ 0, got -1.0",
            id="negative-class-weight",
        ),
        pytest.param(
            {**NAMED, "class_weights": {"cat": 1.0, "cow": 2.0}},
            "class_weights key 'cow' names no class",
            id="class_weights-unknown-name",
        ),
        pytest.param(
            {**MULTI, "class_weights": {5: 1.0}},
            "class_weights key 5 names no class",
            id="class_weights-index-out-of-range",
        ),
        pytest.param(
            {**BINARY, "class_weights": {"2": 1.0}},
            "class_weights key '2' names no class",
            id="class_weights-index-2-for-binary",
        ),
        pytest.param(
            {**MULTI, "class_weights": {"cat": 1.0}},
            "class_weights key 'cat' names no class",
            id="class_weights-name-without-class_names",
        ),
        pytest.param(
            {**BINARY, "class_weights": {1: math.inf}},
            r"class_weights\[1\] must be a finite weight ≥ 0, got inf",
            id="infinite-class-weight",
        ),
        pytest.param(
            {**BINARY, "thresholds": []},
            "'thresholds': thresholds must list at least one value",
            id="thresholds-empty",
        ),
        pytest.param(
            {**BINARY, "thresholds": [0.5, 0.5]},
            "'thresholds': thresholds has duplicates",
            id="thresholds-duplicate",
        ),
        pytest.param(
            {**BINARY, "thresholds": [0.5, 1.5]},
            r"'thresholds': thresholds values must be in \[0, 1\], got 1.5",
            id="threshold-above-1",
        ),
        pytest.param(
            {**BINARY, "thresholds": [-0.1]},
            r"'thresholds': thresholds values must be in \[0, 1\], got -0.1",
            id="threshold-below-0",
        ),
        pytest.param(
            {**WITH_STD, "coverage_levels": [0.5, 1.0]},
            r"'coverage_levels': coverage_levels values must be in \(0, 1\), got 1.0",
            id="coverage-level-1",
        ),
        pytest.param(
            {**WITH_STD, "coverage_levels": [0.0]},
            r"'coverage_levels': coverage_levels values must be in \(0, 1\), got 0.0",
            id="coverage-level-0",
        ),
        pytest.param(
            {**BINARY, "auc_buckets": 0},
            "auc_buckets was removed: binned AUCs come from the fixed fine cells",
            id="auc_buckets-0",
        ),
        pytest.param(
            # The old default is refused too: the key is gone, whatever its value.
            {**BINARY, "auc_buckets": 10000},
            "auc_buckets was removed: binned AUCs come from the fixed fine cells",
            id="auc_buckets-removed",
        ),
        pytest.param(
            {**MULTI, "binary_view": "top_label"},
            "binary_view applies to task binary only, not multiclass",
            id="binary_view-multiclass",
        ),
        pytest.param(
            {**BINARY, "roc_points": 1},
            "config key 'roc_points': Input should be greater than or equal to 2",
            id="roc_points-1",
        ),
        pytest.param(
            {**MULTI, "metrics": ["roc_auc"]},
            "metric 'roc_auc' is not defined for task multiclass",
            id="roc_auc-multiclass",
        ),
        pytest.param(
            {**BINARY, "metrics": ["mse"]},
            "metric 'mse' is not defined for task binary",
            id="mse-binary",
        ),
        pytest.param(
            {**REGRESSION, "metrics": ["ece"]},
            "metric 'ece' is not defined for task regression",
            id="ece-regression",
        ),
        pytest.param(
            {
                "task": "regression",
                "columns": {"prediction": "mu", "target": "y", "std": "s", "variance": "v"},
            },
            "task regression takes at most one of columns.std, columns.variance",
            id="regression-std-and-variance",
        ),
        pytest.param(
            {**REGRESSION, "metrics": ["mse", "gaussian_nll"]},
            "metric 'gaussian_nll' needs columns.std or columns.variance",
            id="gaussian_nll-without-std",
        ),
        pytest.param(
            {**REGRESSION, "metrics": ["coverage"]},
            "metric 'coverage' needs columns.std or columns.variance",
            id="coverage-without-std",
        ),
        pytest.param(
            {"task": "regression", "columns": {"prediction": "mu"}},
            "task regression needs columns.target",
            id="regression-without-target",
        ),
        pytest.param(
            {**BINARY, "columns": {"score": "s", "label": "y", "std": "u"}},
            "columns.std is not used by task binary",
            id="std-for-binary",
        ),
    ],
)
def test_decision_ranking_regression_config_errors(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(config)
    assert "\n" not in str(caught.value)


def test_decision_ranking_regression_keys_load() -> None:
    """The same keys with valid values load, with the spec's defaults."""
    binary = load_config(
        {
            **BINARY,
            "metrics": ["class_weighted_error", "misclassification_cost", "roc_auc"],
            "class_weights": {0: 2.0, "1": 0.0},
            "cost_matrix": [[0, 1], [5, -0.5]],
            "thresholds": [0.0, 1.0],
            "roc_points": 2,
            "binary_view": "top_label",
        }
    )
    assert binary.roc_points == 2
    assert binary.binary_view == "top_label"
    defaults = load_config(BINARY)
    assert list(defaults.thresholds) == [0.5]
    assert defaults.roc_points == 200
    assert defaults.binary_view == "positive_class"
    assert not hasattr(defaults, "auc_buckets")
    regression = load_config({**WITH_STD, "coverage_levels": [0.01, 0.99]})
    assert list(regression.coverage_levels) == [0.01, 0.99]
    assert list(load_config(WITH_STD).coverage_levels) == [0.5, 0.8, 0.9, 0.95]
    load_config({**NAMED, "class_weights": {"cat": 1.0, "bird": 0.0}})
