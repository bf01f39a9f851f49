"""Job errors: missing input, unusable config sections, too many invalid rows, output clashes."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_calib.config import load_config
from spark_calib.errors import ConfigError, InvalidRowsError
from spark_calib_cli.commands.evaluate import check_job_config, run_evaluate
from spark_calib_cli.errors import MissingInputError, OutputError
from tests.support.jobs import RUN_DATE, job_config, log_rows, write_log

BINARY = {"task": "binary", "columns": {"score": "score", "label": "label"}}


def test_missing_input_path(spark: SparkSession, tmp_path: Path) -> None:
    config = job_config({"path": str(tmp_path / "nope")}, {"path": str(tmp_path / "out")})
    with pytest.raises(MissingInputError, match=r"input path '.*nope' does not exist"):
        run_evaluate(spark, config, RUN_DATE)


def test_missing_input_table(spark: SparkSession, tmp_path: Path) -> None:
    config = job_config({"table": "no_such_db.predictions"}, {"path": str(tmp_path / "out")})
    with pytest.raises(MissingInputError, match=r"input table 'no_such_db.predictions' does not"):
        run_evaluate(spark, config, RUN_DATE)


def test_job_needs_an_input_section() -> None:
    with pytest.raises(ConfigError, match=r"missing required config key 'input'"):
        check_job_config(load_config({**BINARY, "output": {"path": "out"}}))


def test_job_needs_an_output_section() -> None:
    with pytest.raises(ConfigError, match=r"missing required config key 'output'"):
        check_job_config(load_config({**BINARY, "input": {"path": "in"}}))


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"output": {"database": "calib; DROP TABLE x"}}, r"'output.database': 'calib; DROP"),
        ({"input": {"table": "db.`t`"}}, r"'input.table': 'db.`t`' is not a table name"),
        ({"input": {"table": "a.b.c.d"}}, r"'input.table': 'a.b.c.d' is not a table name"),
    ],
)
def test_identifiers_are_checked_before_spark(section: dict[str, object], message: str) -> None:
    mapping = {**BINARY, "input": {"path": "in"}, "output": {"path": "out"}, **section}
    with pytest.raises(ConfigError, match=message):
        check_job_config(load_config(mapping))


def test_too_many_invalid_rows_fails_and_writes_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    log, out = tmp_path / "log", tmp_path / "out"
    write_log(spark, log, log_rows(10, null_scores=2))
    config = job_config({"path": str(log)}, {"path": str(out)}, max_invalid_fraction=0.05)
    with pytest.raises(InvalidRowsError, match=r"2 of 20 input rows are invalid .*null_score=2"):
        run_evaluate(spark, config, RUN_DATE)
    assert not out.exists()


def test_existing_table_with_other_columns_is_an_output_error(
    spark: SparkSession, tmp_path: Path
) -> None:
    log, out = tmp_path / "log", tmp_path / "out"
    write_log(spark, log, log_rows(5))
    spark.createDataFrame([(1, "x")], "id int, note string").write.parquet(
        str(out / "calibration_invalid_rows" / "run_date=2024-01-01")
    )
    config = job_config({"path": str(log)}, {"path": str(out)})
    with pytest.raises(OutputError, match=r"calibration_invalid_rows' exists with other columns"):
        run_evaluate(spark, config, RUN_DATE)
