"""Properties of evaluate(): invariances that hold whatever the numbers are.

Partitioning and row order do not matter; weight 2 is the same as a duplicated row; statistics
of two runs combine into the statistics of their union; logits equal their softmax. Engine
results are compared with engine results here, on seeded data from ``tests/support/reference.py``.
Each task's base dataset is evaluated once per module (the ``bases`` fixture) and shared by the
tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_calib import combine_stats, evaluate, metrics_from_stats, reliability_from_stats
from tests.support import reference as ref
from tests.support.evaluations import Evaluations

N_ROWS = 2000
SLICES = [[], ["country"], ["country", "device"]]
DDL = {
    "binary": "s double, y int, mv string, country string, device string, w double",
    "multiclass": (
        "z array<double>, p array<double>, y int, mv string, country string, device string, "
        "w double"
    ),
}
# Sums over a different grouping or order differ only by rounding: 1e-12 absolute, plus 1e-12
# relative for large sums such as weight_sum (a few thousand, whose ulp is ~5e-13).
TOL: dict[str, Any] = {"atol": 1e-12, "rtol": 1e-12}

CONFIGS: dict[str, dict[str, Any]] = {
    "binary": {
        "task": "binary",
        "columns": {"score": "s", "label": "y", "weight": "w", "model_version": "mv"},
        "slices": SLICES,
        "binning": {"n_bins": 15, "edges": "left_closed"},
        "metrics": list(ref.ALL_METRICS),
    },
    "multiclass": {
        "task": "multiclass",
        "columns": {"probs": "p", "label": "y", "weight": "w", "model_version": "mv"},
        "num_classes": 10,
        "slices": SLICES,
        "binning": {"n_bins": 10, "edges": "right_closed"},
        "metrics": list(ref.ALL_METRICS),
    },
}

Tables = tuple[ref.Table, ref.Table]


@dataclass(frozen=True)
class Base:
    """A task's base data: integer weights in {1, 2}, a split into parts A and B (country JP
    only in B), and the engine's tables of the whole."""

    pdf: pd.DataFrame
    in_a: np.ndarray
    df: DataFrame
    tables: Tables


def tables(metrics: DataFrame, reliability: DataFrame) -> Tables:
    """Collect metrics and reliability frames into keyed tables."""
    return (
        ref.table_from_rows((r.asDict() for r in metrics.collect()), ref.METRIC_KEY),
        ref.table_from_rows((r.asDict() for r in reliability.collect()), ref.BIN_KEY),
    )


def evaluated(df: DataFrame, config: dict[str, Any]) -> Tables:
    """The engine's metrics and reliability tables of ``df``."""
    result = evaluate(df, config)
    return tables(result.metrics, result.reliability)


def build_base(spark: SparkSession, task: str) -> Base:
    """The task's base data and its evaluation."""
    seed = {"binary": 101, "multiclass": 102}[task]
    make = ref.binary_log if task == "binary" else ref.multiclass_log
    pdf = make(seed, N_ROWS)
    rng = np.random.default_rng(seed + 1000)
    pdf["w"] = rng.choice([1.0, 2.0], size=len(pdf))
    in_a = rng.uniform(size=len(pdf)) < 0.5
    only_b = np.flatnonzero(~in_a)[:40]
    pdf.iloc[only_b, pdf.columns.get_loc("country")] = "JP"
    df = spark.createDataFrame(pdf, DDL[task])
    return Base(pdf, in_a, df, evaluated(df, CONFIGS[task]))


@pytest.fixture(scope="module")
def bases(spark: SparkSession) -> Evaluations:
    """Each task's base, built on first use and shared by this module's tests."""
    return Evaluations(spark)


def base(bases: Evaluations, task: str) -> Base:
    return bases.get(task, lambda spark: build_base(spark, task))


def assert_same(actual: Tables, expected: Tables, **kwargs: Any) -> None:
    """Metrics and reliability tables have the same keys and (within tolerance) values."""
    assert expected[0] and expected[1], "no rows to compare"
    problems = ref.diff_tables(actual[0], expected[0], **kwargs) + ref.diff_tables(
        actual[1], expected[1], **kwargs
    )
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_partitioning_and_row_order_do_not_matter(bases: Evaluations) -> None:
    """repartition(7) and orderBy(rand(seed)) give the same metrics and reliability bins
    (multiclass with classwise rows, weighted, model versions and slices)."""
    b = base(bases, "multiclass")
    config = CONFIGS["multiclass"]
    assert_same(evaluated(b.df.repartition(7), config), b.tables, **TOL)
    assert_same(evaluated(b.df.orderBy(F.rand(seed=5)), config), b.tables, **TOL)


def test_weight_two_equals_duplicated_row(spark: SparkSession, bases: Evaluations) -> None:
    """A row with weight 2 contributes exactly like the row twice with weight 1: every value
    and weight_sum agree; only the row counts (n, the count metric) differ."""
    b = base(bases, "binary")
    twice = b.pdf["w"].to_numpy() == 2.0
    duplicated = pd.concat([b.pdf, b.pdf[twice]], ignore_index=True).assign(w=1.0)
    dup_metrics, dup_bins = evaluated(
        spark.createDataFrame(duplicated, DDL["binary"]), CONFIGS["binary"]
    )
    base_metrics, base_bins = b.tables

    def without_count(table: ref.Table) -> ref.Table:
        return {k: v for k, v in table.items() if k[4] != "count"}

    problems = ref.diff_tables(
        without_count(dup_metrics),
        without_count(base_metrics),
        fields=["value", "weight_sum"],
        **TOL,
    ) + ref.diff_tables(
        dup_bins,
        base_bins,
        fields=["bin_lower", "bin_upper", "weight_sum", "mean_confidence", "accuracy", "gap"],
        **TOL,
    )
    assert not problems, "\n".join(problems)
    # The row counts do differ, by the number of duplicated rows.
    overall_n = [
        cast(int, v["n"]) for k, v in dup_metrics.items() if k[1:] == ("overall", "", None, "count")
    ]
    assert sum(overall_n) == len(duplicated)


@pytest.mark.parametrize("task", list(CONFIGS))
def test_combined_stats_equal_stats_of_union(
    spark: SparkSession, bases: Evaluations, task: str
) -> None:
    """metrics_from_stats and reliability_from_stats of combine_stats(stats_A, stats_B) equal
    evaluate(A ∪ B), including a slice value (country JP) present only in B."""
    b = base(bases, task)
    config = CONFIGS[task]
    stats_a = evaluate(spark.createDataFrame(b.pdf[b.in_a], DDL[task]), config).stats
    stats_b = evaluate(spark.createDataFrame(b.pdf[~b.in_a], DDL[task]), config).stats
    assert any(k[2] == "JP" for k in b.tables[0])

    combined = combine_stats(stats_a, stats_b)
    recomputed = tables(
        metrics_from_stats(combined, config), reliability_from_stats(combined, config)
    )
    assert_same(recomputed, b.tables, **TOL)


def test_logits_equal_their_softmax(bases: Evaluations) -> None:
    """columns.logits gives the same metrics and bins as columns.probs holding softmax(logits)
    (the base data's p column is the NumPy softmax of its z column)."""
    b = base(bases, "multiclass")
    probs_config = CONFIGS["multiclass"]
    columns = {k: v for k, v in probs_config["columns"].items() if k != "probs"}
    logits_config = {**probs_config, "columns": {**columns, "logits": "z"}}
    assert_same(evaluated(b.df, logits_config), b.tables, atol=1e-9)
