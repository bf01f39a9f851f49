"""The job end to end with path output: four Parquet datasets partitioned by run_date."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_calib.config import Config, config_hash
from spark_calib_cli.commands.evaluate import EvaluateOutcome, run_evaluate
from tests.support.jobs import (
    NEXT_DATE,
    RUN_DATE,
    TABLE_SCHEMAS,
    job_config,
    log_rows,
    read_path_table,
    rows_by_date,
    schema_of,
    write_log,
)

N_PER_VERSION = 20
NULL_SCORES = 2


@dataclass(frozen=True)
class Run:
    config: Config
    out: Path
    outcome: EvaluateOutcome


@pytest.fixture(scope="module")
def one_run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One run over a log with two null scores in version a (read-only for the tests)."""
    root = tmp_path_factory.mktemp("path_output")
    log, out = root / "log", root / "out"
    write_log(spark, log, log_rows(N_PER_VERSION, null_scores=NULL_SCORES))
    config = job_config({"path": str(log)}, {"path": str(out)}, max_invalid_fraction=0.5)
    return Run(config, out, run_evaluate(spark, config, RUN_DATE))


def test_writes_four_tables_with_run_columns(spark: SparkSession, one_run: Run) -> None:
    outcome, out = one_run.outcome, one_run.out
    assert outcome.n_rows == 2 * N_PER_VERSION
    assert dict(outcome.invalid_counts) == {"null_score": NULL_SCORES}
    assert outcome.config_hash == config_hash(one_run.config)
    for table, expected_schema in TABLE_SCHEMAS.items():
        frame = read_path_table(spark, out, table)
        assert schema_of(frame) == expected_schema, table
        assert outcome.tables[table] == f"{out}/{table}"
        assert (out / table / "run_date=2024-06-30").is_dir()
        ids = frame.select("run_id", "config_hash").distinct().collect()
        assert [tuple(row) for row in ids] == [(outcome.run_id, outcome.config_hash)], table


def test_metrics_count_only_valid_rows(spark: SparkSession, one_run: Run) -> None:
    metrics = read_path_table(spark, one_run.out, "calibration_metrics")
    counts = {
        row["model_version"]: row["value"]
        for row in metrics.where(
            (F.col("metric") == "count") & (F.col("slice_name") == "overall")
        ).collect()
    }
    assert counts == {"a": N_PER_VERSION - NULL_SCORES, "b": N_PER_VERSION}


def test_invalid_rows_keep_the_input_row_as_json(spark: SparkSession, one_run: Run) -> None:
    rows = (
        read_path_table(spark, one_run.out, "calibration_invalid_rows")
        .orderBy("row_json")
        .collect()
    )
    assert [(row["model_version"], row["reason"]) for row in rows] == [
        ("a", "null_score")
    ] * NULL_SCORES
    # to_json leaves null fields (the score) out.
    assert json.loads(rows[0]["row_json"]) == {
        "request_id": 0,
        "event_date": "2024-06-30",
        "model_version": "a",
        "country": "BR",
        "label": 0,
    }


def test_summary_lists_overall_per_version(one_run: Run) -> None:
    overall = [(row.model_version, row.n) for row in one_run.outcome.summary if row.rank == 0]
    assert overall == [("a", N_PER_VERSION - NULL_SCORES), ("b", N_PER_VERSION)]


def test_rerun_replaces_its_partition_and_a_new_date_goes_beside(
    spark: SparkSession, tmp_path: Path
) -> None:
    log, out = tmp_path / "log", tmp_path / "out"
    write_log(spark, log, log_rows(N_PER_VERSION))
    config = job_config({"path": str(log)}, {"path": str(out)})
    first = run_evaluate(spark, config, RUN_DATE)
    once = {
        table: Counter(read_path_table(spark, out, table).drop("run_id").collect())
        for table in TABLE_SCHEMAS
    }

    rerun = run_evaluate(spark, config, RUN_DATE)

    assert rerun.run_id != first.run_id
    for table in TABLE_SCHEMAS:
        frame = read_path_table(spark, out, table)
        assert Counter(frame.drop("run_id").collect()) == once[table], table
        assert {row["run_id"] for row in frame.select("run_id").collect()} <= {rerun.run_id}

    next_day = run_evaluate(spark, config, NEXT_DATE)

    metrics = read_path_table(spark, out, "calibration_metrics")
    per_run = sum(once["calibration_metrics"].values())
    assert rows_by_date(metrics) == {RUN_DATE: per_run, NEXT_DATE: per_run}
    run_ids = {
        (row["run_date"], row["run_id"])
        for row in metrics.select("run_date", "run_id").distinct().collect()
    }
    assert run_ids == {(RUN_DATE, rerun.run_id), (NEXT_DATE, next_day.run_id)}


def test_rerun_without_invalid_rows_empties_the_invalid_partition(
    spark: SparkSession, tmp_path: Path
) -> None:
    log, out = tmp_path / "log", tmp_path / "out"
    config = job_config({"path": str(log)}, {"path": str(out)}, max_invalid_fraction=0.5)
    write_log(spark, log, log_rows(N_PER_VERSION, null_scores=3))
    run_evaluate(spark, config, RUN_DATE)
    assert rows_by_date(read_path_table(spark, out, "calibration_invalid_rows")) == {RUN_DATE: 3}

    # The upstream fix lands and the run date is recomputed: a dynamic partition overwrite
    # would keep the three stale rows, since no new row falls into their partition.
    write_log(spark, log, log_rows(N_PER_VERSION))
    run_evaluate(spark, config, RUN_DATE)

    assert read_path_table(spark, out, "calibration_invalid_rows").count() == 0
    assert rows_by_date(read_path_table(spark, out, "calibration_stats"))[RUN_DATE] > 0
