"""The real command line in a subprocess: embedded Hive catalog, spark-submit, exit codes.

Each test's commands start their own JVMs, so there are few of them (marked slow). Each test
has its own working directory, where the embedded session keeps spark-warehouse/ and
metastore_db/; its commands are registered with ``cli_chain`` and run in the background from
the start of the session (tests/support/cli_process.py), and the test checks what they did.
"""

from __future__ import annotations

import datetime as dt
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from spark_calib_cli.exit_codes import ExitCode
from tests.support.cli_process import (
    BIN_DIR,
    REPO,
    cli_chain,
    conf_arguments,
    our_lines,
    run,
    spark_calib,
    spark_calib_alone,
)
from tests.support.jobs import log_rows, write_log

CONFIG = """\
task: binary
columns: {{score: score, label: label, model_version: model_version}}
slices: [[], [country]]
binning: {{n_bins: 5}}
max_invalid_fraction: {max_invalid}
input:
  path: {input}
  window: {{column: event_date, lookback_days: 1}}
output: {output}
"""


def write_job(tmp_path: Path, output: str, max_invalid: float = 0.0) -> Path:
    config = tmp_path / "job.yaml"
    config.write_text(CONFIG.format(input=tmp_path / "log", output=output, max_invalid=max_invalid))
    return config


Completed = subprocess.CompletedProcess[str]


def write_60_rows(spark: SparkSession, workdir: Path) -> None:
    """A log of 60 rows, 3 with a null score."""
    write_log(spark, workdir / "log", log_rows(30, null_scores=3))


# The chains are registered longest first, so that the two at a time end close together.
@cli_chain("test_evaluate_then_report_through_the_embedded_catalog", prepare=write_60_rows)
def evaluate_then_report(workdir: Path) -> tuple[Completed, Completed]:
    config = write_job(workdir, "{database: calib}", max_invalid=0.1)
    evaluated = spark_calib(
        "evaluate", "--config", str(config), "--run-date", "2024-06-30", cwd=workdir
    )
    # A second process finds the tables through the metastore left in the working directory.
    reported = spark_calib(
        "report",
        "--config",
        str(config),
        "--run-date",
        "2024-06-30",
        "--out",
        "pictures",
        cwd=workdir,
    )
    return evaluated, reported


def write_two_days(spark: SparkSession, workdir: Path) -> None:
    """60 rows (3 with a null score) on each of 2024-06-29 and 2024-06-30."""
    days = [dt.date(2024, 6, 29), dt.date(2024, 6, 30)]
    write_log(spark, workdir / "log", [r for d in days for r in log_rows(30, d, null_scores=3)])


@cli_chain("test_a_batch_runs_its_commands_in_one_process", prepare=write_two_days)
def batch(workdir: Path) -> Completed:
    config = write_job(workdir, "{path: tables}", max_invalid=0.1)
    conf = shlex.join(conf_arguments())
    (workdir / "jobs.txt").write_text(
        "# two days, then the pictures of the second\n"
        f"evaluate --config {config} --run-date 2024-06-29 {conf}\n"
        f"evaluate --config {config} --run-date 2024-06-30 {conf}\n"
        f"report --config {config} --run-date 2024-06-30 --out pictures --trend 0 {conf}\n"
    )
    return spark_calib_alone("batch", "jobs.txt", cwd=workdir)


@cli_chain("test_spark_submit_runs_the_job", prepare=write_60_rows)
def spark_submit(workdir: Path) -> Completed:
    config = write_job(workdir, "{path: tables}", max_invalid=0.1)
    return run(
        [
            str(BIN_DIR / "spark-submit"),
            "--master",
            "local[1]",
            *conf_arguments(),
            str(REPO / "jobs" / "evaluate.py"),
            "--config",
            str(config),
            "--run-date",
            "2024-06-30",
        ],
        workdir,
    )


@cli_chain("test_missing_input_exits_3_with_one_line", prepare=write_60_rows)
def missing_input(workdir: Path) -> Completed:
    config = write_job(workdir, "{path: tables}")
    config.write_text(config.read_text().replace(str(workdir / "log"), str(workdir / "nope")))
    return spark_calib("evaluate", "--config", str(config), "--run-date", "2024-06-30", cwd=workdir)


@cli_chain("test_too_many_invalid_rows_exits_4_with_one_line", prepare=write_60_rows)
def too_many_invalid_rows(workdir: Path) -> Completed:
    config = write_job(workdir, "{path: tables}", max_invalid=0.01)
    return spark_calib("evaluate", "--config", str(config), "--run-date", "2024-06-30", cwd=workdir)


# A local frame of about 5 MB: its rows ship inside its one task, above the 1,000 KiB for which
# Spark's scheduler notes "a task of very large size".
LARGE_LOCAL_FRAME = """\
import pandas as pd
from spark_calib_cli.io.session import build_session
spark = build_session()
frame = pd.DataFrame({"x": range(300_000), "y": ["abcdefgh"] * 300_000})
print(spark.createDataFrame(frame).groupBy().count().first()[0])
spark.stop()
"""


@cli_chain("test_the_embedded_session_drops_the_large_task_note")
def large_local_frame(workdir: Path) -> Completed:
    return run([sys.executable, "-c", LARGE_LOCAL_FRAME], workdir)


def test_evaluate_then_report_through_the_embedded_catalog(cli_run: tuple[Path, Any]) -> None:
    workdir, (evaluated, reported) = cli_run

    assert evaluated.returncode == ExitCode.OK, evaluated.stderr
    assert our_lines(evaluated.stderr) == []
    assert "60 input rows, 3 invalid (null_score=3)" in evaluated.stdout
    assert "  calib.calibration_metrics" in evaluated.stdout
    assert (workdir / "metastore_db").is_dir()
    assert (
        workdir / "spark-warehouse" / "calib.db" / "calibration_metrics" / "run_date=2024-06-30"
    ).is_dir()

    assert reported.returncode == ExitCode.OK, reported.stderr
    assert sorted(p.name for p in (workdir / "pictures").iterdir()) == [
        "reliability_a.png",
        "reliability_b.png",
        "trend_accuracy.png",
        "trend_ece.png",
    ]


def test_a_batch_runs_its_commands_in_one_process(cli_run: tuple[Path, Any]) -> None:
    workdir, ran = cli_run

    assert ran.returncode == ExitCode.OK, ran.stderr[-3000:]
    assert our_lines(ran.stderr) == []
    # Each command is echoed, then prints its own summary, in the file's order.
    echoed = [line for line in ran.stdout.splitlines() if line.startswith("$ spark-calib ")]
    assert [line.split()[2] for line in echoed] == ["evaluate", "evaluate", "report"]
    assert ran.stdout.count("60 input rows, 3 invalid (null_score=3)") == 2
    for day in ("2024-06-29", "2024-06-30"):
        assert (workdir / "tables" / "calibration_metrics" / f"run_date={day}").is_dir()
    assert sorted(p.name for p in (workdir / "pictures").iterdir()) == [
        "reliability_a.png",
        "reliability_b.png",
    ]


def test_spark_submit_runs_the_job(cli_run: tuple[Path, Any]) -> None:
    workdir, submitted = cli_run

    assert submitted.returncode == ExitCode.OK, submitted.stderr[-3000:]
    for table in ("metrics", "reliability", "stats", "invalid_rows"):
        assert (workdir / "tables" / f"calibration_{table}" / "run_date=2024-06-30").is_dir()


def test_missing_input_exits_3_with_one_line(cli_run: tuple[Path, Any]) -> None:
    workdir, failed = cli_run

    assert failed.returncode == ExitCode.MISSING_INPUT
    assert our_lines(failed.stderr) == [
        f"spark-calib: error: input path '{workdir / 'nope'}' does not exist or holds no "
        f"parquet files"
    ]


def test_too_many_invalid_rows_exits_4_with_one_line(cli_run: tuple[Path, Any]) -> None:
    workdir, failed = cli_run

    assert failed.returncode == ExitCode.INVALID_ROWS
    assert our_lines(failed.stderr) == [
        "spark-calib: error: 3 of 60 input rows are invalid (fraction 0.05 > "
        "max_invalid_fraction 0.01): null_score=3"
    ]
    assert not (workdir / "tables").exists()


def test_the_embedded_session_drops_the_large_task_note(cli_run: tuple[Path, Any]) -> None:
    _, ran = cli_run

    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.split() == ["300000"]
    assert "task of very large size" not in ran.stderr
