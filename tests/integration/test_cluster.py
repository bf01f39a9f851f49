"""The scheduled job on a real standalone cluster (a master and two one-core workers on
127.0.0.1), through ``spark-submit jobs/evaluate.py``: the same tables as a local run, also when
a worker is killed while tasks run on it."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from compare import assert_same_rows, read_table
from pyspark.sql import SparkSession
from servers import LOOPBACK, free_port, kill_group, spark_env, start, tails, wait_for
from standalone import Cluster, cluster_logs, spark_submit_command, standalone_cluster

from spark_calib.config import load_config
from spark_calib_cli.commands.evaluate import run_evaluate
from spark_calib_cli.demo import logs as demo
from spark_calib_cli.io.tables import (
    CONFUSION_TABLE,
    INVALID_ROWS_TABLE,
    METRICS_TABLE,
    RELIABILITY_TABLE,
    STATS_TABLE,
    THRESHOLDS_TABLE,
)
from tests.support.cli_process import job_java_conf, job_java_options
from tests.support.generated_code import generated_code

REPO = Path(__file__).resolve().parents[2]
JOB = REPO / "jobs" / "evaluate.py"
END_DATE = dt.date(2024, 6, 30)
SMALL_ROWS = 60_000
# Enough that the scan is many seconds of tasks on two one-core executors.
LARGE_ROWS = 3_000_000
JOB_TIMEOUT_SECONDS = 900
TABLES = (
    INVALID_ROWS_TABLE,
    STATS_TABLE,
    RELIABILITY_TABLE,
    CONFUSION_TABLE,
    THRESHOLDS_TABLE,
    METRICS_TABLE,
)
CONFIG = """\
task: binary
columns: {{score: score, label: label, model_version: model_version}}
slices: [[], [country], [device], [country, device]]
binning: {{n_bins: 15}}
metrics: {metrics}
thresholds: [0.3, 0.5, 0.7]
max_invalid_fraction: 0.001
input:
  path: {input}
  window: {{column: event_date, lookback_days: 7}}
output:
  path: {output}
"""
# The driver's share of a two-core machine also runs two executors: keep its tasks few.
ALL_METRICS = (
    "[ece, mce, rmsce, brier, nll, accuracy, count, precision, recall, f1, roc_auc_binned, "
    "confusion_matrix, threshold_metrics]"
)
# Without the binned AUCs, whose 10,000-bucket histogram would make the statistics of 3M rows
# too big to compare in the test's driver.
LEAN_METRICS = "[ece, mce, brier, nll, accuracy, count, confusion_matrix, threshold_metrics]"
SUBMIT_CONF = (
    "spark.sql.shuffle.partitions=4",
    "spark.sql.adaptive.enabled=false",
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with standalone_cluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


def write_input(spark: SparkSession, path: Path, rows: int) -> None:
    with generated_code(spark):
        demo.write_log(demo.binary_log(spark, rows, demo.DEFAULT_SEED, END_DATE), str(path))


def write_config(
    directory: Path, input_path: Path, output: Path, metrics: str = ALL_METRICS
) -> Path:
    config = directory / f"{output.name}.yaml"
    config.write_text(CONFIG.format(input=input_path, output=output, metrics=metrics))
    return config


def local_reference(spark: SparkSession, config: Path) -> None:
    """The same config evaluated in this test's local[2] session, with generated code (up to
    3M rows: the suite's interpreted expressions would make it the slowest part of the test)."""
    with generated_code(spark):
        run_evaluate(spark, load_config(config), END_DATE)


def submit(cluster: Cluster, config: Path, log: Path, *conf: str) -> subprocess.Popen[bytes]:
    command = spark_submit_command(
        cluster,
        JOB,
        ["--config", str(config), "--run-date", END_DATE.isoformat()],
        conf=(
            *SUBMIT_CONF,
            *job_java_conf(),
            f"spark.executor.defaultJavaOptions={job_java_options()}",
            *conf,
        ),
    )
    return start(command, spark_env(cluster.workdir), log, cwd=log.parent)


def assert_same_tables(spark: SparkSession, actual: Path, expected: Path) -> None:
    for table in TABLES:
        assert_same_rows(
            read_table(spark, actual / table), read_table(spark, expected / table), what=table
        )


def test_spark_submit_on_the_cluster_writes_the_local_tables(
    spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    write_input(spark, tmp_path / "log", SMALL_ROWS)
    local = write_config(tmp_path, tmp_path / "log", tmp_path / "local")
    on_cluster = write_config(tmp_path, tmp_path / "log", tmp_path / "cluster")

    log = tmp_path / "submit.log"
    job = submit(cluster, on_cluster, log)
    try:
        # The local reference is computed while the cluster runs the job (this test's driver
        # would only wait for it otherwise).
        local_reference(spark, local)
        returncode = job.wait(timeout=JOB_TIMEOUT_SECONDS)
    finally:
        kill_group(job)

    assert returncode == 0, cluster_logs(cluster, log)
    # The executors of both workers ran the job: it really went through the cluster.
    app = only_application(cluster)
    assert app["state"] == "FINISHED"
    assert {w.work_dir.name for w in cluster.workers if (w.work_dir / app["id"]).is_dir()} == {
        "worker-0",
        "worker-1",
    }
    assert_same_tables(spark, tmp_path / "cluster", tmp_path / "local")


def test_a_worker_killed_mid_job_changes_nothing(
    spark: SparkSession, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    write_input(spark, tmp_path / "log", LARGE_ROWS)
    local = write_config(tmp_path, tmp_path / "log", tmp_path / "local", LEAN_METRICS)
    on_cluster = write_config(tmp_path, tmp_path / "log", tmp_path / "cluster", LEAN_METRICS)

    # Its own cluster: one worker of it dies.
    with standalone_cluster(tmp_path_factory.mktemp("doomed")) as doomed:
        ui_port = free_port()
        log = tmp_path / "submit.log"
        job = submit(doomed, on_cluster, log, "spark.ui.enabled=true", f"spark.ui.port={ui_port}")
        try:
            app_id, executor_id = wait_for(
                lambda: busy_executor(ui_port),
                timeout=JOB_TIMEOUT_SECONDS,
                what="an executor running tasks",
                logs=(log,),
                alive=job,
            )
            victim = doomed.worker_running(app_id, executor_id)
            assert victim is not None, f"no worker holds executor {executor_id} of {app_id}"
            kill_group(victim.process)
            # The local reference is computed while the job recovers on the other worker.
            local_reference(spark, local)
            returncode = job.wait(timeout=JOB_TIMEOUT_SECONDS)
        finally:
            kill_group(job)
        output = log.read_text(errors="replace")

        assert returncode == 0, cluster_logs(doomed, log)
        # Spark noticed the loss and ran the lost tasks again elsewhere.
        assert f"Lost executor {executor_id}" in output, tails((log,))
    assert_same_tables(spark, tmp_path / "cluster", tmp_path / "local")


def only_application(cluster: Cluster) -> dict:
    applications = cluster.state()["completedapps"] + cluster.state()["activeapps"]
    assert len(applications) == 1, applications
    return applications[0]


def busy_executor(ui_port: int) -> tuple[str, str] | None:
    """(application id, executor id) of an executor with tasks running now, from the driver's
    REST API; None while there is none (or the driver's UI is not up yet)."""
    base = f"http://{LOOPBACK}:{ui_port}/api/v1/applications"
    try:
        applications = fetch_json(base)
        if not applications:
            return None
        app_id = applications[0]["id"]
        executors = fetch_json(f"{base}/{app_id}/executors")
    except (OSError, ValueError):
        # Not up yet: refused, or "Spark is starting up" instead of JSON.
        return None
    for executor in executors:
        if executor["id"] != "driver" and executor["activeTasks"] > 0:
            return app_id, executor["id"]
    return None


def fetch_json(url: str) -> list[dict]:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)
