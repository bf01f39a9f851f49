"""The job with a recalibration section (path output): the calibration_recalibration table's
schema and rows, a rerun replacing its partition, the console block, a rollup whose maps
are those of one run over the window's rows (binary and top-label), and a multiclass rollup,
which writes none.

Expected counts come from the input rows in Python, never from the library."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_calib import evaluate
from spark_calib_cli.commands.evaluate import run_evaluate
from spark_calib_cli.commands.rollup import run_rollup
from spark_calib_cli.console.recalibration_text import format_recalibration
from tests.support.jobs import (
    NEXT_DATE,
    RUN_DATE,
    job_config,
    log_rows,
    read_path_table,
    schema_of,
    write_log,
)

N_PER_VERSION = 40
METHODS = ("temperature", "isotonic")
RECALIBRATION_SCHEMA = {
    "model_version": "string",
    "slice_name": "string",
    "slice_value": "string",
    "method": "string",
    "parameters": "map<string,double>",
    "knots": "array<struct<cell:int,lower:double,value:double>>",
    "n_fit": "bigint",
    "n_eval": "bigint",
    "fallback": "boolean",
    "ece_before": "double",
    "ece_after": "double",
    "nll_before": "double",
    "nll_after": "double",
    "brier_before": "double",
    "brier_after": "double",
    "accuracy_before": "double",
    "accuracy_after": "double",
    "after_bounds": "map<string,double>",
    "reliability_before": "array<struct<bin:int,weight:double,confidence:double,outcome:double>>",
    "reliability_after": "array<struct<bin:int,weight:double,confidence:double,outcome:double>>",
    "window_start": "date",
    "window_end": "date",
    "run_id": "string",
    "config_hash": "string",
    "run_date": "date",
    "granularity": "string",
}


def test_the_job_writes_the_recalibration_table_and_prints_its_block(
    spark: SparkSession, tmp_path: Path
) -> None:
    log, out = tmp_path / "log", tmp_path / "out"
    rows = log_rows(N_PER_VERSION)
    write_log(spark, log, rows)
    config = job_config(
        {"path": str(log)},
        {"path": str(out)},
        recalibration={"methods": list(METHODS), "min_fit_rows": 15},
    )
    outcome = run_evaluate(spark, config, RUN_DATE)
    table = read_path_table(spark, out, "calibration_recalibration")
    assert schema_of(table) == RECALIBRATION_SCHEMA
    written = table.collect()
    # Rows per key from the input: each version's overall and its two countries.
    per_key = Counter((row[2], row[3]) for row in rows) + Counter((row[2], "") for row in rows)
    assert len(written) == len(per_key) * len(METHODS)
    for row in written:
        expected = per_key[(row.model_version, row.slice_value)]
        assert row.n_fit == row.n_eval == expected
        # 20 rows per country ≥ 15: no fallback.
        assert not row.fallback
    # A rerun of the date replaces its partition.
    run_evaluate(spark, config, RUN_DATE)
    assert read_path_table(spark, out, "calibration_recalibration").count() == len(written)
    text = format_recalibration(outcome.recalibration)
    assert text.startswith("what recalibration would do")
    assert sum("temperature  T = " in line for line in text.splitlines()) == 2
    assert sum("steps" in line for line in text.splitlines()) == 2


# The same log read as a top-label log: the score is the confidence, the label says correct.
TOP_LABEL = {
    "task": "top_label",
    "columns": {"confidence": "score", "correct": "label", "model_version": "model_version"},
}


@pytest.mark.parametrize("task", [{}, TOP_LABEL], ids=["binary", "top_label"])
def test_a_rollup_fits_the_windows_maps_on_its_summed_cells(
    spark: SparkSession, tmp_path: Path, task: dict[str, Any]
) -> None:
    log, out = tmp_path / "log", tmp_path / "out"
    rows = log_rows(N_PER_VERSION, RUN_DATE) + log_rows(N_PER_VERSION // 2, NEXT_DATE)
    write_log(spark, log, rows)
    config = job_config(
        {"path": str(log), "window": {"column": "event_date", "lookback_days": 1}},
        {"path": str(out)},
        recalibration={"methods": list(METHODS), "min_fit_rows": 15},
        **task,
    )
    for day in (RUN_DATE, NEXT_DATE):
        run_evaluate(spark, config, day)
    run_rollup(spark, config, NEXT_DATE, "rolling:2")
    rolled = (
        read_path_table(spark, out, "calibration_recalibration")
        .where((F.col("run_date") == NEXT_DATE) & (F.col("granularity") == "rolling_2d"))
        .collect()
    )
    one_run = evaluate(spark.read.parquet(str(log)), config).recalibration
    assert one_run is not None
    expected = {(r.model_version, r.slice_value, r.method): r for r in one_run.collect()}
    assert len(rolled) == len(expected) == 12
    for row in rolled:
        same = expected[(row.model_version, row.slice_value, row.method)]
        assert (row.n_fit, row.fallback) == (same.n_fit, same.fallback)
        assert row.window_start == RUN_DATE and row.window_end == NEXT_DATE
        if row.method == "temperature":
            assert row.parameters["temperature"] == same.parameters["temperature"]
        else:
            assert row.knots == same.knots


MULTICLASS_DDL = (
    "request_id long, event_date date, model_version string, country string, "
    "z array<double>, label int"
)


def _multiclass_rows(n: int, day: Any) -> list[tuple[Any, ...]]:
    """Three-class logits that favour the label on two rows in three (so T is interior)."""
    rows = []
    for k in range(n):
        label = k % 3
        logits = [0.0, 0.0, 0.0]
        logits[label if k % 3 != 2 else (label + 1) % 3] = 2.0 + (k % 5) / 5
        rows.append((k, day, "a", ("BR", "US")[k % 2], logits, label))
    return rows


def test_a_multiclass_rollup_writes_no_recalibration_rows(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The daily runs fit the temperature from their rows' logits; the statistics hold no
    logits, so the rollup writes its metrics but no recalibration partition."""
    log, out = tmp_path / "log", tmp_path / "out"
    rows = _multiclass_rows(60, RUN_DATE) + _multiclass_rows(30, NEXT_DATE)
    write_log(spark, log, rows, MULTICLASS_DDL)
    config = job_config(
        {"path": str(log), "window": {"column": "event_date", "lookback_days": 1}},
        {"path": str(out)},
        task="multiclass",
        columns={"logits": "z", "label": "label", "model_version": "model_version"},
        recalibration={"methods": ["temperature"], "min_fit_rows": 15},
    )
    for day in (RUN_DATE, NEXT_DATE):
        run_evaluate(spark, config, day)
    run_rollup(spark, config, NEXT_DATE, "rolling:2")
    granularities = {
        row.granularity
        for row in read_path_table(spark, out, "calibration_recalibration")
        .select("granularity")
        .distinct()
        .collect()
    }
    assert granularities == {"day"}
    rolled = read_path_table(spark, out, "calibration_metrics").where(
        F.col("granularity") == "rolling_2d"
    )
    assert rolled.count() > 0
