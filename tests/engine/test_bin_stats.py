"""The statistics summed over the fine cells (``sum_over_cells``), which the grouped pass and
``metrics_from_stats`` read for every output that reads no cells.

Hand case: binary, 15 uniform bins, weights w. Scores 0.91 (w 1, y 1) and 0.93 (w 3, y 0)
share bin 13 (0.91·15 = 13.65, 0.93·15 = 13.95) but not a fine cell (k/1000: cells 910 and
930), and 0.10 (w 2, y 0) is alone in bin 1. Bin 13 over its cells: n = 2, Σw = 4,
Σw·s = 0.91 + 2.79 = 3.70, Σw·y = 1, Σw² = 1 + 9 = 10.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_calib import evaluate, metrics_from_stats, reliability_from_stats
from spark_calib.stats import schema as stats
from spark_calib.stats.combine import sum_over_cells, sum_to_bins

ROWS = [(0.91, 1, 1.0), (0.93, 0, 3.0), (0.10, 0, 2.0)]
COLUMNS = {"score": "s", "label": "y", "weight": "w", "model_version": "v"}
# Metrics of every family a binary task has: calibration and per-key sums, decision
# (confusion cells), cells (binned AUCs), cell calibration and smooth ECE.
METRICS = [
    "ece",
    "mce",
    "rmsce",
    "brier",
    "nll",
    "accuracy",
    "ece_debiased",
    "calibration_ratio",
    "f1",
    "precision",
    "roc_auc_binned",
    "pr_auc_binned",
    "calibration_slope",
    "smooth_ece",
    "threshold_metrics",
    "roc_curve",
    "confusion_matrix",
]
TOL = 1e-12


def _config(**extra: Any) -> dict[str, Any]:
    return {
        "task": "binary",
        "columns": COLUMNS,
        "binning": {"n_bins": 15},
        "slices": [[], ["g"]],
        "metrics": METRICS,
        **extra,
    }


def _input(spark: SparkSession) -> DataFrame:
    rows = [("v1", s, y, w, "a") for s, y, w in ROWS]
    # A larger second version: enough rows per jackknife bucket for every metric to be defined.
    rows += [
        ("v2", ((i * 37) % 101) / 101.0, int(i % 3 == 0), 1.0 + (i % 4), "ab"[i % 2])
        for i in range(400)
    ]
    return spark.createDataFrame(rows, "v string, s double, y int, w double, g string")


def test_cells_summed_by_hand(spark: SparkSession) -> None:
    overall_v1 = "model_version = 'v1' and slice_name = 'overall'"
    stats_df = evaluate(_input(spark), _config()).stats.where(overall_v1)
    fine = stats_df.where(f"{stats.BIN} = 13 and {stats.CLASS} is null").collect()
    assert len({row[stats.CELL] for row in fine}) == 2
    for summed in (sum_over_cells(stats_df), sum_to_bins(stats_df, keep_cells=False)):
        rows = summed.where(f"{stats.BIN} = 13 and {stats.CLASS} is null").collect()
        assert len(rows) == 1
        (row,) = rows
        assert row[stats.CELL] is None and row[stats.THRESHOLD_BIN] is None
        assert row[stats.N] == 2
        assert row[stats.SUM_WEIGHT] == pytest.approx(4.0, abs=TOL)
        assert row[stats.SUM_WEIGHT_CONFIDENCE] == pytest.approx(3.70, abs=TOL)
        assert row[stats.SUM_WEIGHT_OUTCOME] == pytest.approx(1.0, abs=TOL)
        assert row[stats.SUM_WEIGHT_SQ] == pytest.approx(10.0, abs=TOL)
    # The confusion keys stay in sum_over_cells (the decision metrics read them) and go in
    # sum_to_bins.
    kept = sum_over_cells(stats_df).where(f"{stats.PREDICTED_CLASS} is not null").count()
    assert kept > 0
    assert (
        sum_to_bins(stats_df, keep_cells=False)
        .where(f"{stats.PREDICTED_CLASS} is not null")
        .count()
        == 0
    )


def _values(frame: DataFrame) -> dict[tuple[Any, ...], tuple[float | None, float | None]]:
    return {
        (r.model_version, r.slice_name, r.slice_value, r["class"], r.metric): (r.value, r.se)
        for r in frame.collect()
    }


def _assert_same(actual: dict, expected: dict) -> None:
    assert actual.keys() == expected.keys()
    for key, (value, se) in expected.items():
        got_value, got_se = actual[key]
        for got, want in ((got_value, value), (got_se, se)):
            if want is None or (isinstance(want, float) and math.isnan(want)):
                assert got is None or math.isnan(got), key
            else:
                assert got == pytest.approx(want, rel=1e-9, abs=1e-12), key


def _rows_by_key(frame: DataFrame) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Reliability rows by key and bin: their numeric columns (nulls as NaN)."""
    keys = (*stats.KEY_COLUMNS, stats.BIN)
    return {
        tuple(row[name] for name in keys): {
            name: math.nan if row[name] is None else row[name]
            for name in frame.columns
            if name not in keys and not isinstance(row[name], str)
        }
        for row in frame.collect()
    }


@pytest.mark.parametrize("method", ["analytic", "jackknife"])
def test_outputs_from_the_bin_view_equal_those_from_the_statistics(
    spark: SparkSession, method: str
) -> None:
    """Every metric (value and se), and the reliability table, of ``evaluate`` and of
    ``metrics_from_stats`` given the bin view (which it reads when no requested metric needs
    the cells) equal those recomputed from the full statistics alone: a family sent to the
    view by mistake would find no cells."""
    cfg = _config(uncertainty={"method": method, "buckets": 5})
    result = evaluate(_input(spark), cfg)
    bin_view = sum_over_cells(result.stats)
    assert bin_view.count() < result.stats.count()
    assert bin_view.where(f"{stats.CELL} is not null").count() == 0
    expected = _values(metrics_from_stats(result.stats, cfg))
    assert any(key[-1] == "roc_auc_binned" for key in expected)
    assert any(key[-1] == "f1" for key in expected)
    _assert_same(_values(result.metrics), expected)
    _assert_same(_values(metrics_from_stats(result.stats, cfg, bin_stats=bin_view)), expected)
    no_cells = {**cfg, "metrics": ["ece", "f1", "brier", "accuracy"]}
    _assert_same(
        _values(metrics_from_stats(result.stats, no_cells, bin_stats=bin_view)),
        _values(metrics_from_stats(result.stats, no_cells)),
    )
    reliability = _rows_by_key(result.reliability)
    expected_reliability = _rows_by_key(reliability_from_stats(result.stats, cfg))
    assert reliability.keys() == expected_reliability.keys()
    for key, row in expected_reliability.items():
        assert reliability[key] == pytest.approx(row, rel=1e-9, abs=1e-12, nan_ok=True), key
    result.unpersist()


def test_small_statistics_leave_nothing_cached(spark: SparkSession) -> None:
    """The statistics came to the driver whole: their cache is released at once, and the
    outputs are local frames (nothing for ``unpersist`` to release)."""
    result = evaluate(_input(spark), {**_config(), "metrics": ["ece", "brier", "accuracy"]})
    assert result._cached == ()
    assert not result.stats.is_cached
    result.unpersist()
