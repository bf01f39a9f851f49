"""The job with a recalibration section (path output): the calibration_recalibration table's
schema and rows, a rerun replacing its partition, and the console block.

Expected counts come from the input rows in Python, never from the library."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pyspark.sql import SparkSession

from spark_calib_cli.commands.evaluate import run_evaluate
from spark_calib_cli.console.recalibration_text import format_recalibration
from tests.support.jobs import RUN_DATE, job_config, log_rows, read_path_table, schema_of, write_log

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
    "run_id": "string",
    "config_hash": "string",
    "run_date": "date",
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
