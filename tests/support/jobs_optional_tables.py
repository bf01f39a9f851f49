"""Inputs and expected schemas for the job tests of the decision, ranking and regression
outputs (tests/jobs/test_job_optional_tables.py), next to the ones of jobs.py."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from spark_calib.config import Config, load_config
from tests.support.jobs import RUN_DATE, job_config

KEY_SCHEMA = {"model_version": "string", "slice_name": "string", "slice_value": "string"}
RUN_SCHEMA = {"run_id": "string", "config_hash": "string", "run_date": "date"}

# Expected output schemas of the optional tables, written out: the contract dashboards query.
CONFUSION_SCHEMA = {
    **KEY_SCHEMA,
    "true_class": "string",
    "predicted_class": "string",
    "n": "bigint",
    "weight_sum": "double",
    **RUN_SCHEMA,
}
THRESHOLDS_SCHEMA = {
    **KEY_SCHEMA,
    "threshold": "double",
    "n": "bigint",
    "weight_sum": "double",
    "tp": "double",
    "fp": "double",
    "tn": "double",
    "fn": "double",
    "tpr": "double",
    "fpr": "double",
    "precision": "double",
    "recall": "double",
    **RUN_SCHEMA,
}
ROC_SCHEMA = {
    **KEY_SCHEMA,
    "point": "int",
    "threshold": "double",
    "fpr": "double",
    "tpr": "double",
    "precision": "double",
    **RUN_SCHEMA,
}
REGRESSION_SCHEMA = {
    **KEY_SCHEMA,
    "level": "double",
    "z": "double",
    "observed": "double",
    "gap": "double",
    "n": "bigint",
    "weight_sum": "double",
    **RUN_SCHEMA,
}
BINARY_TABLE_SCHEMAS = {
    "calibration_confusion": CONFUSION_SCHEMA,
    "calibration_thresholds": THRESHOLDS_SCHEMA,
    "calibration_roc": ROC_SCHEMA,
}

BINARY_METRICS = [
    "ece",
    "count",
    "error_rate",
    "balanced_accuracy",
    "precision",
    "recall",
    "f1",
    "roc_auc_binned",
    "pr_auc_binned",
    "confusion_matrix",
    "threshold_metrics",
    "roc_curve",
]
THRESHOLDS = [0.25, 0.5, 0.75]
# The 19 levels of calibration_regression: 0.05, 0.10, …, 0.95.
REGRESSION_LEVELS = [round(0.05 * k, 2) for k in range(1, 20)]

REGRESSION_DDL = (
    "request_id long, event_date date, model_version string, country string, "
    "prediction double, target double, std double"
)
# Errors target − prediction, cycled over the rows of each version.
REGRESSION_ERRORS = (-1.0, 0.5, 2.0, -0.25)


def binary_optional_tables_config(
    input_section: Mapping[str, Any], output_section: Mapping[str, Any], **extra: Any
) -> Config:
    """job_config with the new binary metrics and tables (ROC over the fine cells)."""
    settings: dict[str, Any] = {
        "metrics": BINARY_METRICS,
        "thresholds": THRESHOLDS,
    }
    return job_config(input_section, output_section, **(settings | extra))


def regression_rows(
    n_per_version: int = 20, day: dt.date = RUN_DATE, std: float | None = 1.0
) -> list[tuple[Any, ...]]:
    """Rows of REGRESSION_DDL on ``day``: versions a and b, countries BR and US alternating,
    prediction k, target k + REGRESSION_ERRORS[k mod 4], the same ``std`` for every row."""
    rows = []
    for version_index, version in enumerate(("a", "b")):
        for k in range(n_per_version):
            error = REGRESSION_ERRORS[k % len(REGRESSION_ERRORS)]
            request_id = version_index * n_per_version + k
            rows.append((request_id, day, version, ("BR", "US")[k % 2], float(k), k + error, std))
    return rows


def regression_config(
    input_section: Mapping[str, Any], output_section: Mapping[str, Any], *, with_std: bool = True
) -> Config:
    """A regression job config over REGRESSION_DDL with slices overall and country."""
    columns = {"prediction": "prediction", "target": "target", "model_version": "model_version"}
    if with_std:
        columns["std"] = "std"
    return load_config(
        {
            "task": "regression",
            "columns": columns,
            "slices": [[], ["country"]],
            "input": dict(input_section),
            "output": dict(output_section),
        }
    )
