"""Every metric name that produces an output table names the ``EvaluationResult`` field it
fills, and ``evaluate`` has a builder for it: adding a table metric needs no branch on its name."""

from __future__ import annotations

from dataclasses import fields

from spark_calib.evaluate import _TABLES
from spark_calib.registry import METRICS
from spark_calib.result import EvaluationResult


def test_each_table_metric_names_a_result_field_with_a_builder() -> None:
    result_fields = {field.name for field in fields(EvaluationResult)}
    tables = {spec.name: spec.table for spec in METRICS.values() if spec.table is not None}
    assert tables == {
        "confusion_matrix": "confusion",
        "roc_curve": "roc",
        "threshold_metrics": "thresholds",
    }
    assert set(tables.values()) <= result_fields
    assert set(_TABLES) == set(tables.values())
