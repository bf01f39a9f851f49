"""Shared inputs and look-ups for the job tests (tests/jobs/, tests/cli/, tests/integration/)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_calib.config import Config, load_config

RUN_DATE = dt.date(2024, 6, 30)
NEXT_DATE = dt.date(2024, 7, 1)
LOG_DDL = (
    "request_id long, event_date date, model_version string, country string, "
    "score double, label int"
)

# Expected output schemas, written out: they are the contract dashboards query.
METRICS_SCHEMA = {
    "model_version": "string",
    "slice_name": "string",
    "slice_value": "string",
    "class": "string",
    "metric": "string",
    "value": "double",
    "n": "bigint",
    "weight_sum": "double",
    "error_bound": "double",
    "se": "double",
    "ci_lower": "double",
    "ci_upper": "double",
    "n_eff": "double",
    "window_start": "date",
    "window_end": "date",
    "run_id": "string",
    "config_hash": "string",
    "run_date": "date",
    "granularity": "string",
}
RELIABILITY_SCHEMA = {
    "model_version": "string",
    "slice_name": "string",
    "slice_value": "string",
    "class": "string",
    "bin": "int",
    "bin_lower": "double",
    "bin_upper": "double",
    "n": "bigint",
    "weight_sum": "double",
    "mean_confidence": "double",
    "accuracy": "double",
    "gap": "double",
    "n_eff": "double",
    "ci_lower": "double",
    "ci_upper": "double",
    "window_start": "date",
    "window_end": "date",
    "run_id": "string",
    "config_hash": "string",
    "run_date": "date",
    "granularity": "string",
}
STATS_SCHEMA = {
    "model_version": "string",
    "slice_name": "string",
    "slice_value": "string",
    "class": "string",
    "true_class": "string",
    "predicted_class": "string",
    "bin": "int",
    "cell": "int",
    "threshold_bin": "int",
    "bucket": "int",
    "recalibration_fit": "boolean",
    "reason": "string",
    "n": "bigint",
    "n_positive": "bigint",
    "sum_weight": "double",
    "sum_weight_confidence": "double",
    "sum_weight_correct": "double",
    "sum_weight_brier": "double",
    "sum_weight_nll": "double",
    "sum_weight_cost": "double",
    "sum_weight_target": "double",
    "sum_weight_target_sq": "double",
    "sum_weight_sq_error": "double",
    "sum_weight_abs_error": "double",
    "sum_weight_gaussian_nll": "double",
    "sum_weight_outcome": "double",
    "sum_weight_sq": "double",
    "sum_weight_confidence_sq": "double",
    "sum_weight_confidence_outcome": "double",
    "sum_weight_sq_spiegelhalter": "double",
    "sum_weight_logit": "double",
    "sum_weight_positive": "double",
    "sum_weight_positive_nll": "double",
    **{
        f"sum_weight_sq_{x}": "double"
        for x in (
            "outcome",
            "confidence",
            "confidence_sq",
            "confidence_outcome",
            "correct",
            "brier",
            "brier_sq",
            "nll",
            "nll_sq",
        )
    },
    "run_id": "string",
    "config_hash": "string",
    "run_date": "date",
}
INVALID_ROWS_SCHEMA = {
    "model_version": "string",
    "reason": "string",
    "row_json": "string",
    "run_id": "string",
    "config_hash": "string",
    "run_date": "date",
}
TABLE_SCHEMAS = {
    "calibration_metrics": METRICS_SCHEMA,
    "calibration_reliability": RELIABILITY_SCHEMA,
    "calibration_stats": STATS_SCHEMA,
    "calibration_invalid_rows": INVALID_ROWS_SCHEMA,
}


def log_rows(
    n_per_version: int = 20, day: dt.date = RUN_DATE, null_scores: int = 0
) -> list[tuple[Any, ...]]:
    """Rows of LOG_DDL on ``day``: versions a and b, countries BR and US alternating,
    scores k/(n+1); the first ``null_scores`` rows of version a have a null score."""
    rows = []
    for version_index, version in enumerate(("a", "b")):
        for k in range(n_per_version):
            request_id = version_index * n_per_version + k
            score = None if version == "a" and k < null_scores else (k + 1) / (n_per_version + 1)
            rows.append((request_id, day, version, ("BR", "US")[k % 2], score, k % 2))
    return rows


def write_log(
    spark: SparkSession, path: Path, rows: Sequence[tuple[Any, ...]], ddl: str = LOG_DDL
) -> None:
    """Overwrite ``path`` with ``rows`` as Parquet."""
    spark.createDataFrame(list(rows), ddl).write.mode("overwrite").parquet(str(path))


def job_config(
    input_section: Mapping[str, Any], output_section: Mapping[str, Any], **extra: Any
) -> Config:
    """A binary job config over LOG_DDL with slices overall and country."""
    mapping: dict[str, Any] = {
        "task": "binary",
        "columns": {"score": "score", "label": "label", "model_version": "model_version"},
        "slices": [[], ["country"]],
        "binning": {"n_bins": 5},
        "input": dict(input_section),
        "output": dict(output_section),
    }
    mapping.update(extra)
    return load_config(mapping)


def read_path_table(spark: SparkSession, out: Path, table: str) -> DataFrame:
    """A path-mode output table, read back the way a user would."""
    return spark.read.parquet(str(out / table))


def schema_of(frame: DataFrame) -> dict[str, str]:
    """Column name → simple type name, in column order."""
    return {field.name: field.dataType.simpleString() for field in frame.schema.fields}


def rows_by_date(frame: DataFrame) -> dict[dt.date, int]:
    """run_date → row count."""
    return {row["run_date"]: row["count"] for row in frame.groupBy("run_date").count().collect()}
