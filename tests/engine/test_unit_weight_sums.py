"""Without a weight column every valid row has w = 1, so each Σw²·x statistic equals its Σw·x:
the aggregation sums it once and copies it. With a weight column both are summed."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import evaluate, load_config
from spark_calib.rows.canonical import canonical_rows
from spark_calib.rows.needs import config_needs
from spark_calib.rows.schema import check_input_schema
from spark_calib.slicing.plan import choose_strategy
from spark_calib.stats.aggregate import UNIT_WEIGHT_EQUAL, aggregate_stats

COLUMNS = {"score": "s", "label": "y", "model_version": "mv"}
CONFIG = {"task": "binary", "columns": COLUMNS, "slices": [[], ["g"]]}
# The Σw²·x statistics of the default binary metrics that have a Σw·x twin: all of
# UNIT_WEIGHT_EQUAL.
TWINS = 8


def _input(spark: SparkSession) -> DataFrame:
    return spark.range(300).select(
        ((F.col("id") * 37 % 101) / 101.0).alias("s"),
        (F.col("id") % 3 == 0).cast("int").alias("y"),
        (F.col("id") % 4).cast("string").alias("g"),
        F.lit("v1").alias("mv"),
        F.lit(2.0).alias("w"),
    )


def _partial_sums(frame: DataFrame) -> int:
    """How many aggregate functions the first (partial) aggregation over the rows has."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        frame.explain(mode="formatted")
    counts = [
        int(match.group(1))
        for match in re.finditer(r"Functions \[(\d+)\]: \[partial_count\(1\)", text.getvalue())
    ]
    assert counts, text.getvalue()
    return max(counts)


def _aggregation(df: DataFrame, config: dict) -> DataFrame:
    """The one statistics aggregation ``evaluate`` runs over ``df`` (small statistics come
    back from ``evaluate`` as a local frame, without the plan that built them)."""
    cfg = load_config(config)
    needs = config_needs(cfg)
    rows = canonical_rows(df, cfg, check_input_schema(df, cfg), 2, needs)
    return aggregate_stats(rows, cfg, needs.per_class, choose_strategy(cfg))


def test_twins_are_summed_once_without_weights(spark: SparkSession) -> None:
    df = _input(spark)
    unweighted = _aggregation(df, CONFIG)
    weighted = _aggregation(df, {**CONFIG, "columns": {**COLUMNS, "weight": "w"}})
    assert len(UNIT_WEIGHT_EQUAL) == TWINS
    assert _partial_sums(weighted) - _partial_sums(unweighted) == TWINS


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weight_2"])
def test_twin_values(spark: SparkSession, weighted: bool) -> None:
    """Σw²·x = w·Σw·x for a constant weight w (1 without a weight column, 2 with it); doubling
    is exact in floating point, so the equality is exact."""
    columns = {**COLUMNS, "weight": "w"} if weighted else COLUMNS
    result = evaluate(_input(spark), {**CONFIG, "columns": columns})
    factor = 2.0 if weighted else 1.0
    rows = result.stats.where(F.col("reason").isNull()).collect()
    assert rows
    for row in rows:
        for squared, plain in UNIT_WEIGHT_EQUAL.items():
            assert row[plain] is not None
            assert row[squared] == factor * row[plain], (squared, row)
    result.unpersist()
