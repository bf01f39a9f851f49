"""The row checks run once per row: the optimizer keeps the masked terms (``CASE WHEN reason IS
NULL THEN term END``) as a projection over the one that computes the reason, rather than
copying the reason's checks into every term. A statement that projects a literal column under
the grouping made Spark merge them (``spark_calib.stats.aggregate``)."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import load_config
from spark_calib.rows.canonical import canonical_rows
from spark_calib.rows.needs import config_needs
from spark_calib.rows.schema import check_input_schema
from spark_calib.slicing.plan import choose_strategy
from spark_calib.stats.aggregate import aggregate_stats

COLUMNS = {"score": "s", "label": "y"}
CONFIGS: dict[str, dict[str, Any]] = {
    "overall": {"task": "binary", "columns": COLUMNS},
    "one_group": {"task": "binary", "columns": COLUMNS, "slices": [[], ["g"]]},
    "two_groups": {
        "task": "binary",
        "columns": {**COLUMNS, "weight": "w"},
        "slices": [[], ["g"], ["h"]],
        "slice_strategy": "grouping_sets",
        "metrics": ["ece", "roc_auc_binned", "accuracy"],
    },
}


def _optimized_plan(frame: DataFrame) -> str:
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        frame.explain(mode="extended")
    plan = text.getvalue()
    return plan[plan.index("== Optimized Logical Plan ==") : plan.index("== Physical Plan ==")]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_score_is_checked_for_nan_once(spark: SparkSession, name: str) -> None:
    df = spark.range(50).select(
        ((F.col("id") % 7) / 7.0).alias("s"),
        (F.col("id") % 2).cast("int").alias("y"),
        (F.col("id") % 3).cast("string").alias("g"),
        (F.col("id") % 5).cast("string").alias("h"),
        (F.col("id") % 4 + 1).cast("double").alias("w"),
    )
    cfg = load_config(CONFIGS[name])
    needs = config_needs(cfg)
    rows = canonical_rows(df, cfg, check_input_schema(df, cfg), 2, needs)
    stats = aggregate_stats(rows, cfg, needs.per_class, choose_strategy(cfg))
    plan = _optimized_plan(stats)
    # The reason's CASE holds one isnan of the score (and one of the weight, when there is
    # one); merged, each of the twenty-odd masked terms would hold its own.
    assert plan.count("isnan(") <= 2, plan
    assert len(stats.collect()) > 0
