"""Schema and config problems raise one-line errors before any Spark action."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from spark_calib import ConfigError, SchemaError, evaluate, load_config

BINARY = {"task": "binary", "columns": {"score": "s", "label": "y"}}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {**BINARY, "binning": {"nbins": 3}},
            "unknown config key 'binning.nbins'; did you mean 'binning.n_bins'",
        ),
        ({**BINARY, "metrcs": ["ece"]}, "unknown config key 'metrcs'; did you mean 'metrics'"),
        ({"columns": {"score": "s"}}, "missing required config key 'task'"),
        (
            {"task": "binry", "columns": {}},
            "config key 'task': Input should be 'binary', 'multiclass', 'top_label' or "
            "'regression'",
        ),
        (
            {**BINARY, "binning": {"n_bins": 0}},
            "'binning.n_bins': Input should be greater than or equal to 1",
        ),
        (
            {**BINARY, "metrics": ["ece", "ecee"]},
            "unknown metric 'ecee'; valid metrics for task binary: \\['ece'",
        ),
        (
            {
                "task": "top_label",
                "columns": {"confidence": "c", "correct": "k"},
                "metrics": ["nll"],
            },
            "metric 'nll' is not defined for task top_label",
        ),
        ({**BINARY, "slices": [["a"], ["a"]]}, "slice \\['a'\\] is listed twice"),
        ({**BINARY, "slices": []}, "slices must list at least one slice"),
        ({"task": "binary", "columns": {"score": "s"}}, "task binary needs columns.label"),
        (
            {"task": "binary", "columns": {"score": "s", "label": "y", "probs": "p"}},
            "columns.probs is not used by task binary",
        ),
        (
            {"task": "multiclass", "columns": {"probs": "p", "logits": "z", "label": "y"}},
            "exactly one of columns.probs or columns.logits",
        ),
        (
            {"task": "top_label", "columns": {"confidence": "c", "quality": "q"}},
            "columns.quality needs quality_threshold",
        ),
    ],
)
def test_config_errors(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(config)


def test_config_from_yaml_and_overrides(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "c.yaml"
    path.write_text("task: binary\ncolumns: {score: s, label: y}\nbinning: {n_bins: 10}\n")
    config = load_config(path, overrides=["binning.n_bins=20", "slices=[[], [country]]"])
    assert config.binning.n_bins == 20
    assert config.slices == ((), ("country",))
    with pytest.raises(ConfigError, match=r"config file .* does not exist"):
        load_config(tmp_path / "missing.yaml")


@pytest.mark.parametrize(
    ("ddl", "config", "message"),
    [
        (
            "scroe double, y int",
            {"task": "binary", "columns": {"score": "score", "label": "y"}},
            "column 'score' \\(columns.score\\) is not in the input; did you mean 'scroe'",
        ),
        ("s string, y int", BINARY, "column 's' \\(columns.score\\) must be numeric, found string"),
        ("s double, y string", BINARY, "must be 0/1 numeric or boolean, found string"),
        (
            "s double, y int",
            {**BINARY, "slices": [["country"]]},
            "column 'country' \\(slices\\) is not in the input",
        ),
        (
            "s double, y int, m map<string,int>",
            {**BINARY, "slices": [["m"]]},
            "must be an atomic type, found map",
        ),
        ("s double, y int, reason string", BINARY, "input column 'reason' clashes"),
        (
            "p double, y int",
            {"task": "multiclass", "columns": {"probs": "p", "label": "y"}},
            "must be array<double>, found double",
        ),
        (
            "p array<double>, y string",
            {"task": "multiclass", "columns": {"probs": "p", "label": "y"}},
            "holds strings; set class_names",
        ),
        (
            "c double, pred int, y string",
            {
                "task": "top_label",
                "columns": {"confidence": "c", "prediction": "pred", "label": "y"},
            },
            "must be of one kind",
        ),
    ],
)
def test_schema_errors(spark: SparkSession, ddl: str, config: dict, message: str) -> None:
    df = spark.createDataFrame([], ddl)
    with pytest.raises(SchemaError, match=message):
        evaluate(df, config)


def test_cannot_infer_classes_from_short_array(spark: SparkSession) -> None:
    df = spark.createDataFrame([([1.0], 0)], "p array<double>, y int")
    with pytest.raises(SchemaError, match="first array has length 1; set num_classes"):
        evaluate(df, {"task": "multiclass", "columns": {"probs": "p", "label": "y"}})
