"""The statistics frame ``evaluate`` returns: a local frame of the driver's copy up to
``LOCAL_FRAME_MAX_ROWS`` rows, the cached aggregation above it (writing a large local relation
is slow), with the same rows either way, and released by ``unpersist``."""

from __future__ import annotations

import importlib

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import evaluate

CONFIG = {
    "task": "binary",
    "columns": {"score": "s", "label": "y", "model_version": "mv"},
    "slices": [[], ["g"]],
    "metrics": ["ece", "roc_auc_binned"],
}


def _log(spark: SparkSession) -> DataFrame:
    return spark.range(500).select(
        ((F.col("id") * 0.618) % 1.0).alias("s"),
        (F.col("id") % 2).cast("int").alias("y"),
        (F.col("id") % 3).cast("string").alias("g"),
        F.lit("v1").alias("mv"),
    )


def test_large_statistics_stay_cached_and_equal_the_local_frame(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = evaluate(_log(spark), CONFIG)
    assert not local.stats.is_cached
    expected = sorted(map(tuple, local.stats.collect()), key=repr)
    local.unpersist()
    module = importlib.import_module("spark_calib.evaluate")
    monkeypatch.setattr(module, "LOCAL_FRAME_MAX_ROWS", 0)
    cached = evaluate(_log(spark), CONFIG)
    assert cached.stats.is_cached
    assert sorted(map(tuple, cached.stats.collect()), key=repr) == expected
    cached.unpersist()
    assert not cached.stats.is_cached
