"""Every metric name that produces an output table names the ``EvaluationResult`` field it
fills, and the kernels' registry has a table kernel for it: adding a table metric needs no
branch on its name."""

from __future__ import annotations

from dataclasses import fields

from spark_calib.kernels.registry import TABLES
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
    assert set(tables.values()) <= set(TABLES)
    # The other kernel tables: the reliability table of every run, and regression calibration.
    assert set(TABLES) - set(tables.values()) == {"reliability", "regression_calibration"}
    assert set(TABLES) - {"reliability"} <= result_fields
