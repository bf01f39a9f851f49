"""The job end to end with catalog output (``output.database``) and a catalog input table.

The suite's session uses Spark's in-memory catalog; the embedded Hive metastore of the CLI is
covered by the subprocess test in tests/cli/test_cli_process.py.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_calib_cli.commands.evaluate import run_evaluate
from tests.support.jobs import (
    NEXT_DATE,
    RUN_DATE,
    TABLE_SCHEMAS,
    job_config,
    log_rows,
    rows_by_date,
    schema_of,
    write_log,
)

N_PER_VERSION = 10


def unique_database() -> str:
    """A fresh database name: the in-memory catalog lives as long as the suite's session."""
    return "calib_test_" + uuid.uuid4().hex[:10]


@pytest.fixture(scope="module")
def log_path(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("catalog_output") / "log"
    write_log(spark, path, log_rows(N_PER_VERSION))
    return path


def test_creates_database_and_partitioned_tables(spark: SparkSession, log_path: Path) -> None:
    database = unique_database()
    config = job_config({"path": str(log_path)}, {"database": database})

    outcome = run_evaluate(spark, config, RUN_DATE)

    assert spark.catalog.databaseExists(database)
    for table, expected_schema in TABLE_SCHEMAS.items():
        name = f"{database}.{table}"
        assert outcome.tables[table] == name
        frame = spark.table(name)
        assert schema_of(frame) == expected_schema, table
        partitions = [
            row[0]
            for row in spark.sql(
                "SHOW PARTITIONS IDENTIFIER(:table)", args={"table": name}
            ).collect()
        ]
        windowed = table in ("calibration_metrics", "calibration_reliability")
        expected = "run_date=2024-06-30" + ("/granularity=day" if windowed else "")
        assert partitions == [expected], table
    assert spark.table(f"{database}.calibration_invalid_rows").count() == 0


def test_rerun_is_idempotent_and_a_new_date_goes_beside(
    spark: SparkSession, log_path: Path
) -> None:
    database = unique_database()
    config = job_config({"path": str(log_path)}, {"database": database})
    run_evaluate(spark, config, RUN_DATE)
    once = {
        table: Counter(spark.table(f"{database}.{table}").drop("run_id").collect())
        for table in TABLE_SCHEMAS
    }

    rerun = run_evaluate(spark, config, RUN_DATE)
    next_day = run_evaluate(spark, config, NEXT_DATE)

    for table in TABLE_SCHEMAS:
        frame = spark.table(f"{database}.{table}")
        first_date = frame.where(frame["run_date"] == RUN_DATE)
        assert Counter(first_date.drop("run_id").collect()) == once[table], table
    metrics = spark.table(f"{database}.calibration_metrics")
    per_run = sum(once["calibration_metrics"].values())
    assert rows_by_date(metrics) == {RUN_DATE: per_run, NEXT_DATE: per_run}
    run_ids = {
        (row["run_date"], row["run_id"])
        for row in metrics.select("run_date", "run_id").distinct().collect()
    }
    assert run_ids == {(RUN_DATE, rerun.run_id), (NEXT_DATE, next_day.run_id)}


def test_reads_a_catalog_input_table(spark: SparkSession, log_path: Path) -> None:
    database = unique_database()
    spark.sql("CREATE DATABASE IDENTIFIER(:database)", args={"database": database})
    spark.read.parquet(str(log_path)).write.saveAsTable(f"{database}.predictions")
    config = job_config(
        {
            "table": f"{database}.predictions",
            "window": {"column": "event_date", "lookback_days": 1},
        },
        {"database": database},
    )

    outcome = run_evaluate(spark, config, RUN_DATE)

    assert outcome.n_rows == 2 * N_PER_VERSION
    assert spark.table(f"{database}.calibration_metrics").count() > 0
