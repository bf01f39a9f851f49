"""Monitoring through the real command line: a backfill whose failing alert rule exits 8, and
a week rollup that reports its missing days (exit 0) or refuses them (exit 3).

Each test has its own working directory; its commands are registered with ``cli_chain`` and run
in the background from the start of the session (tests/support/cli_process.py), and the test
checks what they did."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from spark_calib_cli.exit_codes import ExitCode
from tests.support.cli_process import cli_chain, our_lines, spark_calib
from tests.support.jobs import log_rows, write_log

DAYS = (dt.date(2024, 6, 29), dt.date(2024, 6, 30))
CONFIG = """\
task: binary
columns: {{score: score, label: label, model_version: model_version}}
slices: [[], [country]]
binning: {{n_bins: 5}}
input:
  path: {input}
  window: {{column: event_date, lookback_days: 1}}
output: {{path: tables}}
alerts:
  # ECE is > 0 in every slice of the log: fires on every (version, slice).
  - {{name: any_miscalibration, metric: ece, slice: [], max: 0.0, min_n: 0, fail: {fail}}}
  # Accuracy is 0.5: never below 0.1.
  - {{name: accuracy_floor, metric: accuracy, min: 0.1, min_n: 0, fail: true}}
"""


def write_job(workdir: Path, fail: bool) -> Path:
    config = workdir / f"job_{fail}.yaml"
    config.write_text(CONFIG.format(input=workdir / "log", fail=str(fail).lower()))
    return config


Completed = subprocess.CompletedProcess[str]


def write_log_of_two_days(spark: SparkSession, workdir: Path) -> None:
    """A log of 60 rows on each of DAYS."""
    rows = []
    for index, day in enumerate(DAYS):
        rows += [(index * 1000 + row[0], day, *row[2:]) for row in log_rows(30, day=day)]
    write_log(spark, workdir / "log", rows)


# Registered longest first, so that the two at a time end close together.
@cli_chain("test_week_rollup_reports_missing_days_or_refuses_them", write_log_of_two_days)
def backfill_then_week_rollups(workdir: Path) -> tuple[Completed, Completed, Completed]:
    config = write_job(workdir, fail=False)
    evaluated = spark_calib(
        "evaluate",
        "--config",
        str(config),
        "--from",
        "2024-06-29",
        "--run-date",
        "2024-06-30",
        cwd=workdir,
    )
    rolled = spark_calib(
        "rollup",
        "--config",
        str(config),
        "--run-date",
        "2024-06-26",
        "--granularity",
        "week",
        cwd=workdir,
    )
    refused = spark_calib(
        "rollup",
        "--config",
        str(config),
        "--run-date",
        "2024-06-30",
        "--granularity",
        "week",
        "--set",
        "rollup.require_all_days=true",
        cwd=workdir,
    )
    return evaluated, rolled, refused


@cli_chain("test_backfill_with_a_failing_alert_exits_8_after_writing", write_log_of_two_days)
def backfill_with_a_failing_rule(workdir: Path) -> Completed:
    config = write_job(workdir, fail=True)
    return spark_calib(
        "evaluate",
        "--config",
        str(config),
        "--from",
        "2024-06-29",
        "--run-date",
        "2024-06-30",
        cwd=workdir,
    )


def test_backfill_with_a_failing_alert_exits_8_after_writing(cli_run: tuple[Path, Any]) -> None:
    workdir, ran = cli_run

    assert ran.returncode == ExitCode.ALERT == 8, ran.stderr[-3000:]
    assert our_lines(ran.stderr) == []
    # Both days were evaluated and alerted on, versions a and b on the overall slice.
    assert "run_date 2024-06-29: 60 input rows" in ran.stdout
    assert ran.stdout.count("alerts: 2 fired (a failing rule fired)") == 2
    assert "  FAIL  [any_miscalibration] ece = " in ran.stdout
    assert "accuracy_floor" not in ran.stdout.split("alerts:")[-1]
    for day in DAYS:
        partition = (
            workdir / "tables" / "calibration_alerts" / f"run_date={day}" / "granularity=day"
        )
        assert partition.is_dir()


def test_week_rollup_reports_missing_days_or_refuses_them(cli_run: tuple[Path, Any]) -> None:
    workdir, (evaluated, rolled, refused) = cli_run

    assert evaluated.returncode == ExitCode.OK, evaluated.stderr[-3000:]
    assert "  warn  [any_miscalibration]" in evaluated.stdout

    assert rolled.returncode == ExitCode.OK, rolled.stderr[-3000:]
    assert "week 2024-06-24..2024-06-30" in rolled.stdout
    assert (
        "2 of 7 days present; missing 2024-06-24, 2024-06-25, 2024-06-26, 2024-06-27, 2024-06-28"
        in rolled.stdout
    )
    assert "120 input rows (summed from the daily statistics)" in rolled.stdout
    week = workdir / "tables" / "calibration_metrics" / "run_date=2024-06-30" / "granularity=week"
    assert week.is_dir()

    assert refused.returncode == ExitCode.MISSING_INPUT
    assert our_lines(refused.stderr) == [
        "spark-calib: error: week 2024-06-24..2024-06-30 is missing run dates 2024-06-24, "
        "2024-06-25, 2024-06-26, 2024-06-27, 2024-06-28 (rollup.require_all_days is set)"
    ]
