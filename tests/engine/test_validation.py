"""Every row-level validation branch routes the row to ``invalid`` with its reason, and
valid + invalid = input rows."""

from __future__ import annotations

import math

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_calib import InvalidRowsError, evaluate

INF = math.inf
NAN = math.nan


def reasons_by_id(df: DataFrame, config: dict) -> tuple[dict[int, str], int, int]:
    """id → reason of each invalid row, plus the scan's n_rows and n_invalid."""
    result = evaluate(df, {**config, "max_invalid_fraction": 1.0})
    reasons = {r.id: r.reason for r in result.invalid.collect()}
    assert sum(result.invalid_counts.values()) == len(reasons)
    return reasons, result.n_rows, result.n_invalid


def test_binary_reasons(spark: SparkSession) -> None:
    rows = [
        (1, None, 1, 1.0),
        (2, NAN, 1, 1.0),
        (3, -0.1, 1, 1.0),
        (4, 1 + 1e-12, 1, 1.0),
        (5, -0.0, 0, 1.0),  # valid: −0.0 is in [0, 1]
        (6, 0.3, None, 1.0),
        (7, 0.3, 2, 1.0),
        (8, 0.3, 1, None),
        (9, 0.3, 1, -1.0),
        (10, 0.3, 1, INF),
        (11, 0.3, 1, NAN),
        (12, 0.3, 1, 0.0),  # valid: a zero weight
        (13, INF, 1, 1.0),
    ]
    df = spark.createDataFrame(rows, "id int, s double, y int, w double")
    config = {"task": "binary", "columns": {"score": "s", "label": "y", "weight": "w"}}
    reasons, n_rows, n_invalid = reasons_by_id(df, config)
    assert reasons == {
        1: "null_score",
        2: "nan_score",
        3: "score_out_of_range",
        4: "score_out_of_range",
        6: "null_label",
        7: "invalid_label",
        8: "null_weight",
        9: "negative_weight",
        10: "non_finite_weight",
        11: "non_finite_weight",
        13: "score_out_of_range",
    }
    assert (n_rows, n_invalid) == (13, 11)


def test_binary_float_and_boolean_labels(spark: SparkSession) -> None:
    """A label of 1.0 is valid, 0.5 is not; booleans are 0/1."""
    df = spark.createDataFrame([(1, 0.3, 1.0), (2, 0.3, 0.5)], "id int, s double, y double")
    reasons, _, _ = reasons_by_id(df, {"task": "binary", "columns": {"score": "s", "label": "y"}})
    assert reasons == {2: "invalid_label"}
    df = spark.createDataFrame([(1, 0.3, True), (2, 0.3, None)], "id int, s double, y boolean")
    reasons, _, _ = reasons_by_id(df, {"task": "binary", "columns": {"score": "s", "label": "y"}})
    assert reasons == {2: "null_label"}


def test_multiclass_probability_reasons(spark: SparkSession) -> None:
    rows = [
        (1, None, 0.0),
        (2, [0.5, 0.5], 0.0),
        (3, [0.5, None, 0.5], 0.0),
        (4, [NAN, 0.5, 0.5], 0.0),
        (5, [1.5, -0.5, 0.0], 0.0),
        (6, [0.5, 0.4, 0.05], 0.0),
        (7, [0.2, 0.3, 0.5], None),
        (8, [0.2, 0.3, 0.5], 3.0),
        (9, [0.2, 0.3, 0.5], -1.0),
        (10, [0.2, 0.3, 0.5], 1.5),
        (11, [0.2, 0.3, 0.5], 2.0),  # valid: an integral float label
        (12, [0.2, 0.3, 0.5 + 5e-7], 2.0),  # valid: within sum_tolerance 1e-6
        (13, [], 0.0),
    ]
    df = spark.createDataFrame(rows, "id int, p array<double>, y double")
    config = {"task": "multiclass", "columns": {"probs": "p", "label": "y"}, "num_classes": 3}
    reasons, _, _ = reasons_by_id(df, config)
    assert reasons == {
        1: "null_probs",
        2: "wrong_length_probs",
        3: "null_probability",
        4: "nan_probability",
        5: "probability_out_of_range",
        6: "probs_not_normalized",
        7: "null_label",
        8: "invalid_label",
        9: "invalid_label",
        10: "invalid_label",
        13: "wrong_length_probs",
    }


def test_multiclass_probability_edge_values_and_check_order(spark: SparkSession) -> None:
    # A valid probability vector skips its per-element checks (a guard of compiled array
    # functions, spark_calib.rows.validation.Guard): these rows sit on the guard's edges, and
    # each must get the reason of its first failing check, in the order vector, label, weight.
    rows = [
        (1, [-0.0, 0.5, 0.5], 0.0, 1.0),  # valid: −0.0 is in [0, 1]
        (2, [1.0, 0.0, 0.0], 2.0, 0.0),  # valid: the bounds, a weight of 0
        (3, [NAN, NAN, NAN], 0.0, 1.0),
        (4, [None, None, None], 0.0, 1.0),
        (5, [0.5, None, 0.5], 7.0, -1.0),  # the vector fails first
        (6, [INF, 0.0, 0.0], 0.0, 1.0),
        (7, [-INF, 1.0, 1.0], 0.0, 1.0),
        (8, [0.5, 0.5, 1e-7], 1.0, 1.0),  # valid: sum within 1e-6
        (9, [0.5, 0.5, 2e-6], 1.0, 1.0),
        (10, [0.2, 0.3, 0.5], 1.0, -1.0),  # a valid vector: the weight fails
        (11, [0.2, 0.3, 0.5], None, NAN),  # the label fails before the weight
        (12, [0.2, 0.8, 0.0, 0.0], 1.0, 1.0),  # sums to 1, in range, one class too many
        (13, [1.2, -0.2, 0.0], 0.0, 1.0),  # sums to 1, out of range
        (14, [NAN, 0.5, 0.5], 0.0, -1.0),
    ]
    df = spark.createDataFrame(rows, "id int, p array<double>, y double, w double")
    config = {
        "task": "multiclass",
        "columns": {"probs": "p", "label": "y", "weight": "w"},
        "num_classes": 3,
    }
    reasons, n_rows, n_invalid = reasons_by_id(df, config)
    assert reasons == {
        3: "nan_probability",
        4: "null_probability",
        5: "null_probability",
        6: "probability_out_of_range",
        7: "probability_out_of_range",
        9: "probs_not_normalized",
        10: "negative_weight",
        11: "null_label",
        12: "wrong_length_probs",
        13: "probability_out_of_range",
        14: "nan_probability",
    }
    assert (n_rows, n_invalid) == (14, 11)


def test_multiclass_logit_and_string_label_reasons(spark: SparkSession) -> None:
    rows = [
        (1, None, "a"),
        (2, [1.0, 2.0], "a"),
        (3, [1.0, INF, 0.0], "a"),
        (4, [1.0, NAN, 0.0], "a"),
        (5, [1.0, None, 0.0], "a"),
        (6, [1.0, 2.0, 3.0], "zebra"),
        (7, [1.0, 2.0, 3.0], None),
        (8, [1000.0, -1000.0, 0.0], "c"),  # valid: the max shift keeps exp finite
    ]
    df = spark.createDataFrame(rows, "id int, z array<double>, y string")
    config = {
        "task": "multiclass",
        "columns": {"logits": "z", "label": "y"},
        "class_names": ["a", "b", "c"],
    }
    reasons, _, _ = reasons_by_id(df, config)
    assert reasons == {
        1: "null_logits",
        2: "wrong_length_logits",
        3: "non_finite_logits",
        4: "non_finite_logits",
        5: "non_finite_logits",
        6: "invalid_label",
        7: "null_label",
    }


def test_top_label_reasons(spark: SparkSession) -> None:
    rows = [(1, None, True), (2, NAN, True), (3, 1.5, True), (4, 0.7, None), (5, 0.7, False)]
    df = spark.createDataFrame(rows, "id int, c double, ok boolean")
    config = {"task": "top_label", "columns": {"confidence": "c", "correct": "ok"}}
    reasons, _, _ = reasons_by_id(df, config)
    assert reasons == {
        1: "null_confidence",
        2: "nan_confidence",
        3: "confidence_out_of_range",
        4: "null_correct",
    }
    rows2 = [(1, 0.7, None), (2, 0.7, NAN), (3, 0.7, 0.2)]
    df = spark.createDataFrame(rows2, "id int, c double, q double")
    config = {
        "task": "top_label",
        "columns": {"confidence": "c", "quality": "q"},
        "quality_threshold": 0.5,
    }
    reasons, _, _ = reasons_by_id(df, config)
    assert reasons == {1: "null_quality", 2: "nan_quality"}
    rows3 = [(1, 0.7, None, "a"), (2, 0.7, "a", None), (3, 0.7, "a", "b")]
    df = spark.createDataFrame(rows3, "id int, c double, pred string, y string")
    config = {
        "task": "top_label",
        "columns": {"confidence": "c", "prediction": "pred", "label": "y"},
    }
    reasons, _, _ = reasons_by_id(df, config)
    assert reasons == {1: "null_prediction", 2: "null_label"}


def test_valid_plus_invalid_equals_input_in_stats(spark: SparkSession) -> None:
    """The statistics table alone accounts for every input row, per slice set."""
    rows = [(0.2, 1, "a"), (None, 1, "a"), (0.9, 3, "b"), (0.6, 0, None)]
    df = spark.createDataFrame(rows, "s double, y int, g string")
    config = {
        "task": "binary",
        "columns": {"score": "s", "label": "y"},
        "slices": [[], ["g"]],
        "max_invalid_fraction": 1.0,
    }
    stats = evaluate(df, config).stats.where("class is null")
    for name in ["overall", "g"]:
        per_slice = stats.where(stats.slice_name == name)
        total = sum(r.n for r in per_slice.collect())
        invalid = {r.reason: r.n for r in per_slice.where("reason is not null").collect()}
        assert total == 4
        assert invalid.keys() == {"null_score", "invalid_label"}


def test_max_invalid_fraction_raises_with_counts(spark: SparkSession) -> None:
    df = spark.createDataFrame([(0.2, 1), (None, 1), (NAN, 0), (0.7, 1)], "s double, y int")
    config = {"task": "binary", "columns": {"score": "s", "label": "y"}}
    with pytest.raises(
        InvalidRowsError, match=r"2 of 4 input rows are invalid .*nan_score=1, null_score=1"
    ):
        evaluate(df, config)
    result = evaluate(df, {**config, "max_invalid_fraction": 0.5})
    assert result.n_invalid == 2
