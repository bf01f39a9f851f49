"""Crash safety of the output tables (path mode): a job killed in the middle of a write leaves
every table readable, with each run date's rows from exactly one run; a rerun then gives the
correct output with no duplicates. Two jobs for different run dates can write at once."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.dataset as pads
import pytest
from compare import assert_same_rows, read_table
from pyspark.sql import SparkSession
from servers import kill_group, start, tails

from spark_calib_cli.demo import logs as demo
from spark_calib_cli.io.tables import (
    CONFUSION_TABLE,
    INVALID_ROWS_TABLE,
    METRICS_TABLE,
    RELIABILITY_TABLE,
    STATS_TABLE,
)
from tests.support.cli_process import conf_arguments, job_env, job_java_conf

SPARK_CALIB = Path(sys.executable).parent / "spark-calib"
END_DATE = dt.date(2024, 6, 30)
DATES = (END_DATE - dt.timedelta(days=1), END_DATE)
ROWS = 200_000
JOB_TIMEOUT_SECONDS = 600
POLL_SECONDS = 0.002
KILL_ATTEMPTS = 3
TABLES = (INVALID_ROWS_TABLE, STATS_TABLE, RELIABILITY_TABLE, CONFUSION_TABLE, METRICS_TABLE)
# The demo log has a few rows with a null score, so the invalid-rows table has rows too.
CONFIG = """\
task: binary
columns: {{score: score, label: label, model_version: model_version}}
slices: [[], [country], [device], [country, device]]
binning: {{n_bins: 15}}
metrics: [ece, mce, brier, nll, accuracy, count, roc_auc_binned, confusion_matrix]
max_invalid_fraction: 0.001
input:
  path: {input}
  window: {{column: event_date, lookback_days: 3}}
output:
  path: {output}
"""
# The same job with a one-day window: `--from` is then one backfill scan of the range.
BACKFILL_CONFIG = CONFIG.replace("lookback_days: 3", "lookback_days: 1")
SMALL_DATA_CONF = (
    "spark.sql.shuffle.partitions=2",
    "spark.sql.adaptive.enabled=false",
)
RUN_ID = re.compile(r"run_id ([0-9a-f]{32})")


@pytest.fixture(scope="module")
def log_path(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("crash") / "log"
    demo.write_log(demo.binary_log(spark, ROWS, demo.DEFAULT_SEED, END_DATE), str(path))
    return path


@dataclass(frozen=True)
class FirstRuns:
    """Path output after one complete CLI run per date, and each run's run_id."""

    out: Path
    run_ids: dict[dt.date, str]


@pytest.fixture(scope="module")
def first_runs(log_path: Path, tmp_path_factory: pytest.TempPathFactory) -> FirstRuns:
    """The state each crash test starts from, run once: the tests kill their reruns in copies
    of it (the config hash leaves out the output path, so a copy is the same history)."""
    root = tmp_path_factory.mktemp("first_runs")
    out = root / "out"
    config = write_config(root, log_path, out)
    return FirstRuns(out, {date: run_job(config, date, root) for date in DATES})


@dataclass(frozen=True)
class FirstBackfill:
    """Path output after one complete backfill of ``DATES``, and its run_id."""

    out: Path
    run_id: str


@pytest.fixture(scope="module")
def first_backfill(log_path: Path, tmp_path_factory: pytest.TempPathFactory) -> FirstBackfill:
    """The state each backfill crash test starts from, run once (as ``first_runs``)."""
    root = tmp_path_factory.mktemp("first_backfill")
    out = root / "out"
    config = write_config(root, log_path, out, BACKFILL_CONFIG)
    return FirstBackfill(out, run_job(config, END_DATE, root, first=DATES[0]))


def write_config(directory: Path, log: Path, output: Path, text: str = CONFIG) -> Path:
    config = directory / f"{output.name}.yaml"
    config.write_text(text.format(input=log, output=output))
    return config


def job_command(
    config: Path, run_date: dt.date, master: str = "local[2]", first: dt.date | None = None
) -> list[str]:
    conf = conf_arguments((*SMALL_DATA_CONF, *job_java_conf()))
    return [
        str(SPARK_CALIB),
        "evaluate",
        "--config",
        str(config),
        *(["--from", first.isoformat()] if first is not None else []),
        "--run-date",
        run_date.isoformat(),
        "--master",
        master,
        *conf,
    ]


def run_job(config: Path, run_date: dt.date, workdir: Path, first: dt.date | None = None) -> str:
    """Run the CLI to the end; return the run_id it printed (of ``run_date``)."""
    done = subprocess.run(
        job_command(config, run_date, first=first),
        cwd=workdir,
        env=job_env(),
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = RUN_ID.search(done.stdout)
    assert found, done.stdout
    return found.group(1)


def snapshot(spark: SparkSession, out: Path) -> dict[str, pd.DataFrame]:
    return {table: read_table(spark, out / table) for table in TABLES}


def staging_dirs(table_dir: Path) -> list[str]:
    """Spark's hidden staging directories of a dynamic overwrite in progress (or abandoned)."""
    try:
        return [entry.name for entry in os.scandir(table_dir) if entry.name.startswith(".spark-")]
    except FileNotFoundError:
        return []


def kill_during_write(
    config: Path, table_dir: Path, workdir: Path, first: dt.date | None = None
) -> bool:
    """Start a rerun of the last date (of ``first`` to it, a backfill) and SIGKILL it (the CLI
    and its JVM) as soon as Spark stages a write into ``table_dir``. True when the kill landed
    before the swap: the staging directory is still there afterwards."""
    log = workdir / "killed.log"
    job = start(job_command(config, END_DATE, first=first), job_env(), log, cwd=workdir)
    deadline = time.monotonic() + JOB_TIMEOUT_SECONDS
    try:
        while not staging_dirs(table_dir):
            assert job.poll() is None, f"the job ended before writing:\n{tails((log,))}"
            assert time.monotonic() < deadline, tails((log,))
            time.sleep(POLL_SECONDS)
    finally:
        kill_group(job)
    return bool(staging_dirs(table_dir))


def run_ids_by_date(frame: pd.DataFrame) -> dict[str, set[str]]:
    return {str(date): set(rows["run_id"]) for date, rows in frame.groupby("run_date")}


def pyarrow_rows(table_dir: Path) -> int:
    """The row count another reader (pyarrow, as pandas and DuckDB use it) sees."""
    return pads.dataset(str(table_dir), format="parquet", partitioning="hive").count_rows()


@pytest.mark.parametrize("victim", [STATS_TABLE, METRICS_TABLE])
def test_a_job_killed_while_writing_leaves_whole_partitions_and_a_rerun_repairs(
    spark: SparkSession, log_path: Path, first_runs: FirstRuns, tmp_path: Path, victim: str
) -> None:
    out = tmp_path / "out"
    shutil.copytree(first_runs.out, out)
    config = write_config(tmp_path, log_path, out)
    first_run_ids = first_runs.run_ids
    before = snapshot(spark, out)

    landed = any(kill_during_write(config, out / victim, tmp_path) for _ in range(KILL_ATTEMPTS))
    assert landed, f"no kill landed inside the write of {victim} in {KILL_ATTEMPTS} tries"

    after_crash = snapshot(spark, out)
    for table in TABLES:
        # Readers see the rows of one complete run per date: the first run's, or for the tables
        # the killed rerun had already swapped in, the rerun's (the same values).
        assert_same_rows(after_crash[table], before[table], what=f"{table} after the kill")
        ids = run_ids_by_date(after_crash[table])
        assert ids[str(DATES[0])] == {first_run_ids[DATES[0]]}, table
        assert len(ids[str(END_DATE)]) == 1, f"{table}: rows of two runs for one date"
        assert pyarrow_rows(out / table) == len(before[table]), table
    # The table being written when the job died still holds the first run's rows.
    assert run_ids_by_date(after_crash[victim])[str(END_DATE)] == {first_run_ids[END_DATE]}

    rerun = run_job(config, END_DATE, tmp_path)
    repaired = snapshot(spark, out)
    for table in TABLES:
        assert_same_rows(repaired[table], before[table], what=f"{table} after the rerun")
        assert run_ids_by_date(repaired[table]) == {
            str(DATES[0]): {first_run_ids[DATES[0]]},
            str(END_DATE): {rerun},
        }, table
        assert pyarrow_rows(out / table) == len(before[table]), table


def test_two_jobs_for_different_dates_write_one_output_at_once(
    spark: SparkSession, log_path: Path, first_runs: FirstRuns, tmp_path: Path
) -> None:
    # The reference: the same job run for one date after the other.
    reference = first_runs.out
    out = tmp_path / "out"
    config = write_config(tmp_path, log_path, out)

    logs = [tmp_path / f"job-{date}.log" for date in DATES]
    jobs = [
        start(job_command(config, date, master="local[1]"), job_env(), log, cwd=tmp_path)
        for date, log in zip(DATES, logs, strict=True)
    ]
    try:
        codes = [job.wait(timeout=JOB_TIMEOUT_SECONDS) for job in jobs]
    finally:
        for job in jobs:
            kill_group(job)

    assert codes == [0, 0], tails(tuple(logs))
    for table in TABLES:
        actual = read_table(spark, out / table)
        assert_same_rows(actual, read_table(spark, reference / table), what=table)
        assert sorted(run_ids_by_date(actual)) == [str(date) for date in DATES], table


@pytest.mark.parametrize("victim", [STATS_TABLE, METRICS_TABLE])
def test_a_backfill_killed_while_writing_leaves_each_date_whole_and_a_rerun_repairs(
    spark: SparkSession,
    log_path: Path,
    first_backfill: FirstBackfill,
    tmp_path: Path,
    victim: str,
) -> None:
    # A backfill writes each table once for all its dates: a kill inside that write must leave
    # every date's partition as the first backfill wrote it, or (a table already swapped in)
    # as the rerun did, never a mix or a gap.
    first_id = first_backfill.run_id
    out = tmp_path / "out"
    shutil.copytree(first_backfill.out, out)
    config = write_config(tmp_path, log_path, out, BACKFILL_CONFIG)
    before = snapshot(spark, out)
    assert all(
        run_ids_by_date(before[t]) == {str(date): {first_id} for date in DATES}
        for t in TABLES
        if t != INVALID_ROWS_TABLE
    )

    landed = any(
        kill_during_write(config, out / victim, tmp_path, first=DATES[0])
        for _ in range(KILL_ATTEMPTS)
    )
    assert landed, f"no kill landed inside the write of {victim} in {KILL_ATTEMPTS} tries"

    after_crash = snapshot(spark, out)
    for table in TABLES:
        assert_same_rows(after_crash[table], before[table], what=f"{table} after the kill")
        for date, ids in run_ids_by_date(after_crash[table]).items():
            assert len(ids) == 1, f"{table} {date}: rows of two runs for one date"
        assert pyarrow_rows(out / table) == len(before[table]), table
    # Every date of the table being written when the job died holds the first run's rows.
    assert set(map(frozenset, run_ids_by_date(after_crash[victim]).values())) == {
        frozenset({first_id})
    }

    rerun = run_job(config, END_DATE, tmp_path, first=DATES[0])
    repaired = snapshot(spark, out)
    for table in TABLES:
        assert_same_rows(repaired[table], before[table], what=f"{table} after the rerun")
        assert set(map(frozenset, run_ids_by_date(repaired[table]).values())) <= {
            frozenset({rerun})
        }, table
        assert pyarrow_rows(out / table) == len(before[table]), table
