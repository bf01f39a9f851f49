"""``evaluate`` with a ``slice_search`` section: the search's result and each model version's
multicalibration error in the metrics table, against MCGrad's MulticalibrationError."""

from __future__ import annotations

import pandas as pd
import pytest
from mcgrad.metrics import MulticalibrationError, ecce_pvalue_from_sigma
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_calib import evaluate
from spark_calib_cli.commands.search import SearchOutcome, search_lines
from tests.engine.test_slice_search import small_log

COLUMNS = ["country", "device", "tier"]


def _config(**extra: object) -> dict[str, object]:
    return {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "weight": "w"},
        "metrics": ["ece", "count"],
        **extra,
    }


def test_metrics_gain_the_multicalibration_error_within_its_bound_of_mcgrads(
    spark: SparkSession,
) -> None:
    sample = small_log(20_000)
    search = {"columns": COLUMNS, "max_level": 2, "min_rows": 1, "prune": False}
    result = evaluate(spark.createDataFrame(sample), _config(slice_search=search))
    rows = {
        r.metric: r
        for r in result.metrics.where(F.col("metric").startswith("multicalibration")).collect()
    }
    assert sorted(rows) == ["multicalibration_error", "multicalibration_error_p"]
    mce = MulticalibrationError(
        sample.assign(tier=sample.tier.astype(str)),
        "y",
        "s",
        weight_column="w",
        categorical_segment_columns=COLUMNS,
        max_depth=2,
        max_values_per_segment_feature=10,
        min_samples_per_segment=1,
        max_n_segments=None,
        precision_dtype="float64",
    )
    error = rows["multicalibration_error"]
    # The cells' MCE is at most the rows' (MCGrad's), and error_bound closes the gap.
    assert error.value <= mce.mce_sigma + 1e-9
    assert mce.mce_sigma <= error.value + error.error_bound + 1e-9
    # Under 20 % of the statistic on this log (docs/slice_search.md, "The cells' bound").
    assert 0.0 <= error.error_bound < 0.2 * error.value
    assert rows["multicalibration_error_p"].value == pytest.approx(
        float(ecce_pvalue_from_sigma(error.value)), rel=1e-9
    )
    for row in rows.values():
        assert (row.model_version, row.slice_name, row.slice_value, row["class"]) == (
            None,
            "overall",
            "",
            None,
        )
        assert row.n == 20_000
        assert row.weight_sum == pytest.approx(sample.w.sum(), rel=1e-12)
    assert result.slice_search is not None
    assert result.slice_search.summary.first().multicalibration_error == error.value  # type: ignore[union-attr]
    assert {r.metric for r in result.metrics.collect()} == {
        "ece",
        "count",
        "multicalibration_error",
        "multicalibration_error_p",
    }
    result.unpersist()


def test_without_the_section_there_is_no_search(spark: SparkSession) -> None:
    frame = spark.createDataFrame(pd.DataFrame({"s": [0.2, 0.7], "y": [0, 1], "w": [1.0, 2.0]}))
    result = evaluate(frame, _config())
    assert result.slice_search is None
    assert {r.metric for r in result.metrics.collect()} == {"ece", "count"}


def test_a_version_without_weight_has_a_null_multicalibration_error(spark: SparkSession) -> None:
    frame = pd.DataFrame(
        {
            "s": [0.2, 0.7, 0.4, 0.9] * 50,
            "y": [0, 1, 1, 1] * 50,
            "w": [1.0] * 100 + [0.0] * 100,
            "v": ["weighted"] * 100 + ["unweighted"] * 100,
            "c": ["x", "y"] * 100,
        }
    )
    config = _config(
        columns={"score": "s", "label": "y", "weight": "w", "model_version": "v"},
        slice_search={"columns": ["c"], "max_level": 1, "min_rows": 1},
    )
    result = evaluate(spark.createDataFrame(frame), config)
    rows = {
        (r.model_version, r.metric): r
        for r in result.metrics.where(F.col("metric").startswith("multicalibration")).collect()
    }
    for metric in ("multicalibration_error", "multicalibration_error_p"):
        assert rows[("unweighted", metric)].value is None
        assert rows[("weighted", metric)].value is not None
    assert rows[("unweighted", "multicalibration_error")].error_bound is None
    assert result.slice_search is not None
    summary = {r.model_version: r for r in result.slice_search.summary.collect()}
    assert summary["unweighted"].multicalibration_error is None
    assert summary["unweighted"].multicalibration_error_p is None
    search = result.slice_search
    text = search_lines(SearchOutcome({}, search.slices, search.summary, search))
    assert "model_version unweighted: multicalibration error n/a (no rows with weight)" in text
    result.unpersist()
