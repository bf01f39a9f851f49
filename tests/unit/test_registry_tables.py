"""Every metric name that produces an output table names the ``EvaluationResult`` field it
fills, and the kernels' registry has a table kernel for it: adding a table metric needs no
branch on its name."""

from __future__ import annotations

import re
from dataclasses import fields

import pyarrow as pa
import pytest

from spark_calib.kernels.plan import FinishPlan
from spark_calib.kernels.registry import TABLES, table
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


def test_an_unknown_output_table_names_the_valid_ones() -> None:
    listed = re.escape(str(sorted(TABLES)))
    with pytest.raises(KeyError, match=rf"unknown output table 'nope'; valid tables: {listed}"):
        table("nope")
    assert table("roc") is TABLES["roc"]


@pytest.mark.parametrize(
    ("name", "setting"),
    [("confusion", "task"), ("roc", "roc_points"), ("thresholds", "thresholds")],
)
def test_a_table_kernel_without_its_setting_says_which(name: str, setting: str) -> None:
    rows = table(name)[0]
    plan = FinishPlan((), 15, False, "analytic", 1.96, 0)
    statistics = pa.table({"class": pa.array([None], pa.string()), "n": [1]})
    with pytest.raises(ValueError, match=rf"the {name} table needs the setting '{setting}'"):
        rows(("v", "overall", ""), statistics, plan)
