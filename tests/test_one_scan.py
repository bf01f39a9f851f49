"""One scan: once ``evaluate`` returns, metrics, reliability and stats read only the cached
statistics, never the input; ``invalid`` reads the input only when rows were invalid."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import evaluate

CONFIG = {
    "task": "binary",
    "columns": {"score": "s", "label": "y", "model_version": "mv"},
    "slices": [[], ["g"], ["g", "h"]],
    "metrics": ["ece", "mce", "brier", "count", "classwise_ece"],
    "max_invalid_fraction": 1.0,
}


def write_input(spark: SparkSession, path: Path, with_invalid: bool) -> None:
    df = spark.range(200).select(
        ((F.col("id") % 97) / 97.0).alias("s"),
        (F.col("id") % 2).cast("int").alias("y"),
        (F.col("id") % 3).cast("string").alias("g"),
        (F.col("id") % 5).cast("string").alias("h"),
        F.lit("v1").alias("mv"),
    )
    if with_invalid:
        df = df.withColumn("s", F.when(F.col("g") == "0", F.lit(None)).otherwise(F.col("s")))
    df.write.parquet(str(path))


@pytest.mark.parametrize("strategy", ["finest_grain", "grouping_sets"])
def test_outputs_do_not_read_the_input(spark: SparkSession, tmp_path: Path, strategy: str) -> None:
    path = tmp_path / "log"
    write_input(spark, path, with_invalid=False)
    result = evaluate(spark.read.parquet(str(path)), {**CONFIG, "slice_strategy": strategy})
    shutil.rmtree(path)
    # The input is gone: anything that scans it now fails.
    with pytest.raises(Exception, match=r"(?i)(not exist|FileNotFound|PATH_NOT_FOUND)"):
        spark.read.parquet(str(path)).count()
    assert result.metrics.count() > 0
    assert result.reliability.count() > 0
    assert result.stats.count() > 0
    assert result.invalid.count() == 0
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


def test_plans_read_the_cached_statistics(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "log"
    write_input(spark, path, with_invalid=False)
    df = spark.read.parquet(str(path))
    assert any("Scan parquet" in name for name in leaf_nodes(df))
    result = evaluate(df, CONFIG)
    for frame in (result.metrics, result.reliability, result.stats):
        leaves = leaf_nodes(frame)
        assert leaves
        assert set(leaves) == {"InMemoryTableScan"}
    result.unpersist()


def test_strategies_agree(spark: SparkSession, tmp_path: Path) -> None:
    """finest_grain and grouping_sets give the same statistics, row for row."""
    path = tmp_path / "log"
    write_input(spark, path, with_invalid=True)
    df = spark.read.parquet(str(path))
    frames = [
        evaluate(df, {**CONFIG, "slice_strategy": strategy}).stats
        for strategy in ("finest_grain", "grouping_sets")
    ]
    key = ["model_version", "slice_name", "slice_value", "class", "bin", "reason"]
    rows = [
        sorted(frame.collect(), key=lambda r: tuple(str(r[k]) for k in key)) for frame in frames
    ]
    assert len(rows[0]) == len(rows[1]) > 0
    for left, right in zip(*rows, strict=True):
        assert [left[k] for k in key] == [right[k] for k in key]
        assert left.n == right.n
        for column in ["sum_weight", "sum_weight_confidence", "sum_weight_correct"]:
            assert left[column] == pytest.approx(right[column], abs=1e-9)
