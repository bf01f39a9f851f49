"""Input columns named like the engine's own (``_in_0``, ``_in__0``, ``_reason``, ``_weight``,
``_slice_0``) change nothing: the row terms read the input through internal names chosen
apart from them (``spark_calib.rows.inputs``), and the invalid rows keep every input column
as it was."""

from __future__ import annotations

from pyspark.sql import SparkSession

from spark_calib import evaluate

ROWS = [
    (0.9, 1.0, "a", 1.0, "x"),
    (0.2, 0.0, "a", 2.0, "y"),
    (0.7, 0.0, "b", 1.0, "z"),
    (1.5, 1.0, "b", 1.0, "w"),  # score out of range
    (0.4, None, "a", 1.0, "v"),  # null label
]
PLAIN = ("s", "y", "g", "w", "note")
CLASHING = ("_in_0", "_in_1", "_slice_0", "_weight", "_in__0")


def _evaluate(spark: SparkSession, names: tuple[str, ...]) -> tuple[list, list, list]:
    score, label, group, weight, note = names
    df = spark.createDataFrame(
        ROWS,
        f"`{score}` double, `{label}` double, `{group}` string, `{weight}` double, `{note}` string",
    )
    config = {
        "task": "binary",
        "columns": {"score": score, "label": label, "weight": weight},
        "slices": [[], [group]],
        "metrics": ["ece", "brier", "count"],
        "max_invalid_fraction": 1.0,
    }
    result = evaluate(df, config)
    metrics = sorted((r.slice_value, r.metric, r.value) for r in result.metrics.collect())
    invalid = sorted(tuple(r) for r in result.invalid.collect())
    return metrics, invalid, result.invalid.columns


def test_input_columns_named_like_internal_ones_give_the_same_results(
    spark: SparkSession,
) -> None:
    plain_metrics, plain_invalid, plain_columns = _evaluate(spark, PLAIN)
    metrics, invalid, columns = _evaluate(spark, CLASHING)
    assert metrics == plain_metrics
    assert len(metrics) == 3 * 3  # overall, a and b
    assert invalid == plain_invalid
    assert [row[-1] for row in invalid] == ["null_label", "score_out_of_range"]
    assert columns == [*CLASHING, "reason"]
    assert plain_columns == [*PLAIN, "reason"]
