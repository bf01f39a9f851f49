"""Monitoring through the real command line: a backfill whose failing alert rule exits 8, and
a week rollup that reports its missing days (exit 0) or refuses them (exit 3).

Each test has its own working directory; the two tests' commands run side by side in the
``runs`` fixture, and each test checks what its own commands did."""

from __future__ import annotations

import datetime as dt
import subprocess
from concurrent.futures import Future
from functools import partial
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_calib_cli.exit_codes import ExitCode
from tests.support.cli_process import our_lines, run_chains, spark_calib
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
    rows = []
    for index, day in enumerate(DAYS):
        rows += [(index * 1000 + row[0], day, *row[2:]) for row in log_rows(30, day=day)]
    write_log(spark, workdir / "log", rows)


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


@pytest.fixture(scope="module")
def runs(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Path, Future]]:
    """Per test: its working directory (a log of 60 rows on each of DAYS) and the outcome of its
    commands."""
    chains = {"rollup": backfill_then_week_rollups, "alert": backfill_with_a_failing_rule}
    workdirs: dict[str, Path] = {}
    for name in chains:
        workdirs[name] = tmp_path_factory.mktemp(name)
        write_log_of_two_days(spark, workdirs[name])
    done = run_chains({name: partial(chain, workdirs[name]) for name, chain in chains.items()})
    return {name: (workdirs[name], done[name]) for name in chains}


def test_backfill_with_a_failing_alert_exits_8_after_writing(
    runs: dict[str, tuple[Path, Future]],
) -> None:
    workdir, done = runs["alert"]
    ran = done.result()

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


def test_week_rollup_reports_missing_days_or_refuses_them(
    runs: dict[str, tuple[Path, Future]],
) -> None:
    workdir, done = runs["rollup"]
    evaluated, rolled, refused = done.result()

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
