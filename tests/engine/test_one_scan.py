"""One scan: once ``evaluate`` returns, metrics, reliability and stats read only the cached
statistics, never the input; ``invalid`` reads the input only when rows were invalid. Metric
rows that the NumPy kernels finish on the driver (from one ``toArrow()`` of the cached
statistics: small statistics) and the smooth ECE's rows are a driver-rows leaf of the metrics
frame; nothing else is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import EvaluationResult, evaluate

CONFIG = {
    "task": "binary",
    "columns": {"score": "s", "label": "y", "model_version": "mv"},
    "slices": [[], ["g"], ["g", "h"]],
    "metrics": ["ece", "mce", "brier", "count", "classwise_ece"],
    "max_invalid_fraction": 1.0,
}
# Every family that is computed from the statistics (no exact ranking: it is an extra pass).
ALL_FAMILIES = {
    **CONFIG,
    "metrics": [
        "ece",
        "classwise_ece",
        "error_rate",
        "balanced_accuracy",
        "precision",
        "misclassification_cost",
        "expected_misclassification_cost",
        "confusion_matrix",
        "roc_auc_binned",
        "pr_auc_binned",
        "roc_curve",
        "threshold_metrics",
    ],
    "cost_matrix": [[0, 1], [4, 0]],
}
# The families of the fine cells and the moment sums: the calibration metrics of the new sums,
# KS / Hosmer–Lemeshow / Cox (window functions over the cells), the smooth ECE (node sums
# collected to the driver) and equal-mass bins merged from the cells (ece, the reliability
# table).
CELL_FAMILIES = {
    **CONFIG,
    "metrics": [
        "ece",
        "mce",
        "mean_prediction",
        "calibration_ratio",
        "normalized_entropy",
        "spiegelhalter_z",
        "spiegelhalter_p",
        "brier_reliability",
        "brier_resolution",
        "brier_uncertainty",
        "ks_calibration",
        "hosmer_lemeshow",
        "hosmer_lemeshow_p",
        "calibration_slope",
        "calibration_intercept",
        "smooth_ece",
        "roc_auc_binned",
    ],
    "binning": {"n_bins": 10, "strategy": "equal_mass"},
}
# Leaves of a frame built from rows on the driver (SparkSession.createDataFrame of a list).
DRIVER_ROWS = {"Scan ExistingRDD", "LocalTableScan"}


def outputs(result: EvaluationResult) -> list[DataFrame]:
    """Every DataFrame output of a result except ``invalid``."""
    optional = [result.confusion, result.thresholds, result.roc, result.regression_calibration]
    return [
        result.metrics,
        result.reliability,
        result.stats,
        *[frame for frame in optional if frame is not None],
    ]


def write_input(spark: SparkSession, path: Path, with_invalid: bool) -> None:
    df = spark.range(200).select(
        ((F.col("id") % 97) / 97.0).alias("s"),
        (F.col("id") % 2).cast("int").alias("y"),
        (F.col("id") % 3).cast("string").alias("g"),
        (F.col("id") % 5).cast("string").alias("h"),
        (F.col("id") % 7).cast("string").alias("a"),
        (F.col("id") % 2 == 0).alias("b"),
        F.lit("v1").alias("mv"),
    )
    if with_invalid:
        df = df.withColumn("s", F.when(F.col("g") == "0", F.lit(None)).otherwise(F.col("s")))
    df.write.parquet(str(path))


@pytest.mark.parametrize("strategy", ["finest_grain", "grouping_sets"])
@pytest.mark.parametrize(
    "config",
    [CONFIG, ALL_FAMILIES, CELL_FAMILIES],
    ids=["calibration", "all_families", "cell_families"],
)
def test_outputs_do_not_read_the_input(
    spark: SparkSession, tmp_path: Path, strategy: str, config: dict
) -> None:
    path = tmp_path / "log"
    write_input(spark, path, with_invalid=False)
    result = evaluate(spark.read.parquet(str(path)), {**config, "slice_strategy": strategy})
    shutil.rmtree(path)
    # The input is gone: anything that scans it now fails.
    with pytest.raises(Exception, match=r"(?i)(not exist|FileNotFound|PATH_NOT_FOUND)"):
        spark.read.parquet(str(path)).count()
    for frame in outputs(result):
        assert frame.count() > 0
    assert result.invalid.count() == 0
    result.unpersist()


def test_regression_outputs_do_not_read_the_input(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "log"
    spark.range(300).select(
        (F.col("id") % 7).cast("double").alias("mu"),
        (F.col("id") % 5).cast("double").alias("y"),
        (F.col("id") % 3 + 1).cast("double").alias("sd"),
        (F.col("id") % 2).cast("string").alias("g"),
    ).write.parquet(str(path))
    config = {
        "task": "regression",
        "columns": {"prediction": "mu", "target": "y", "std": "sd"},
        "slices": [[], ["g"]],
    }
    result = evaluate(spark.read.parquet(str(path)), config)
    shutil.rmtree(path)
    assert result.regression_calibration is not None
    for frame in [result.metrics, result.stats, result.regression_calibration]:
        assert frame.count() > 0
        # Small statistics and the kernels' outputs are local frames on the driver.
        assert set(leaf_nodes(frame)) <= DRIVER_ROWS
    result.unpersist()


def test_invalid_rereads_the_input_only_when_rows_were_invalid(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = tmp_path / "log"
    write_input(spark, path, with_invalid=True)
    result = evaluate(spark.read.parquet(str(path)), CONFIG)
    assert result.invalid_counts == {"null_score": 67}
    assert result.invalid.count() == 67
    plan = result.invalid._jdf.queryExecution().optimizedPlan().toString()
    assert "Relation" in plan
    result.unpersist()


def leaf_nodes(frame: DataFrame) -> list[str]:
    """Names of the leaves of the physical plan: the places data is read from. A cached
    relation is a leaf (InMemoryTableScan); the plan that built it is not a child."""
    leaves = frame._jdf.queryExecution().sparkPlan().collectLeaves()
    return [leaves.apply(i).nodeName() for i in range(leaves.size())]


@pytest.mark.parametrize(
    "config", [ALL_FAMILIES, CELL_FAMILIES], ids=["all_families", "cell_families"]
)
def test_plans_read_the_cached_statistics(
    spark: SparkSession, tmp_path: Path, config: dict
) -> None:
    path = tmp_path / "log"
    write_input(spark, path, with_invalid=False)
    df = spark.read.parquet(str(path))
    assert any("Scan parquet" in name for name in leaf_nodes(df))
    result = evaluate(df, config)
    for frame in outputs(result):
        leaves = leaf_nodes(frame)
        assert leaves
        assert not any("parquet" in name.lower() for name in leaves), leaves
        # Small statistics come to the driver whole in evaluate's one action: they and every
        # output the kernels finish from them are local frames.
        assert set(leaves) <= DRIVER_ROWS, leaves
    result.unpersist()


# Six slice sets over four slice columns: auto packs them into the covering groups {g, h, a}
# and {b} (tests/unit/test_strategy.py), finest_grain into one group, grouping_sets into six.
WIDE_SLICES = [[], ["g"], ["h"], ["a"], ["b"], ["g", "h"]]


@pytest.mark.parametrize(
    ("strategy", "plan_name"), [("finest_grain", "finest_grain"), ("auto", "covering_groups")]
)
def test_strategies_agree(
    spark: SparkSession, tmp_path: Path, strategy: str, plan_name: str
) -> None:
    """finest_grain and auto's covering groups give the statistics of grouping_sets (one group
    per slice set, the reference), row for row."""
    path = tmp_path / "log"
    write_input(spark, path, with_invalid=True)
    df = spark.read.parquet(str(path))
    config = {**ALL_FAMILIES, "slices": WIDE_SLICES}
    results = [
        evaluate(df, {**config, "slice_strategy": name}) for name in (strategy, "grouping_sets")
    ]
    assert [result.strategy for result in results] == [plan_name, "grouping_sets"]
    key = [
        "model_version",
        "slice_name",
        "slice_value",
        "class",
        "true_class",
        "predicted_class",
        "bin",
        "cell",
        "threshold_bin",
        "recalibration_fit",
        "reason",
    ]
    rows = [
        sorted(result.stats.collect(), key=lambda r: tuple(str(r[k]) for k in key))
        for result in results
    ]
    assert len(rows[0]) == len(rows[1]) > 0
    assert {r.slice_name for r in rows[0]} == {"overall", "g", "h", "a", "b", "g,h"}
    for left, right in zip(*rows, strict=True):
        assert [left[k] for k in key] == [right[k] for k in key]
        assert left.n == right.n
        for column in [
            "sum_weight",
            "sum_weight_confidence",
            "sum_weight_correct",
            "sum_weight_cost",
            "sum_weight_outcome",
            "sum_weight_sq",
            "sum_weight_confidence_sq",
            "sum_weight_confidence_outcome",
            "sum_weight_sq_spiegelhalter",
            "sum_weight_logit",
        ]:
            if left[column] is None or right[column] is None:
                assert left[column] is None and right[column] is None, column
                continue
            assert left[column] == pytest.approx(right[column], abs=1e-9)
    for result in results:
        result.unpersist()


def test_exact_ranking_is_the_one_extra_pass(spark: SparkSession, tmp_path: Path) -> None:
    """roc_auc/pr_auc read the input again (documented); nothing else does."""
    path = tmp_path / "log"
    write_input(spark, path, with_invalid=False)
    result = evaluate(spark.read.parquet(str(path)), {**CONFIG, "metrics": ["ece", "roc_auc"]})
    assert any("Scan parquet" in name for name in leaf_nodes(result.metrics))
    assert set(leaf_nodes(result.reliability)) <= DRIVER_ROWS
    result.unpersist()
