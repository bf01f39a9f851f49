"""A Spark standalone cluster on 127.0.0.1 (one master, N one-core workers), started with the
``spark-class`` launcher inside the pyspark package, and spark-submit against it."""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from servers import (
    LOOPBACK,
    free_port,
    spark_env,
    spark_home,
    start,
    stop_group,
    tails,
    wait_for,
)

from tests.support.cli_process import job_java_options

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
START_TIMEOUT_SECONDS = 120
WORKER_MEMORY = "2g"
EXECUTOR_MEMORY = "1g"


@dataclass
class Worker:
    """One worker: its process group (the worker JVM and the executors it launches), its work
    directory (``<app id>/<executor id>/`` per executor) and its log."""

    process: subprocess.Popen[bytes]
    work_dir: Path
    log: Path


@dataclass
class Cluster:
    master_url: str
    web_ui: str
    workdir: Path
    master_log: Path
    workers: list[Worker] = field(default_factory=list)

    def state(self) -> dict:
        """The master's JSON status page (workers, applications)."""
        with urllib.request.urlopen(f"{self.web_ui}/json/", timeout=5) as response:
            return json.load(response)

    def logs(self) -> tuple[Path, ...]:
        return (self.master_log, *(worker.log for worker in self.workers))

    def worker_running(self, app_id: str, executor_id: str) -> Worker | None:
        """The worker that launched executor ``executor_id`` of application ``app_id``."""
        for worker in self.workers:
            if (worker.work_dir / app_id / executor_id).is_dir():
                return worker
        return None


@contextlib.contextmanager
def standalone_cluster(workdir: Path, n_workers: int = 2) -> Iterator[Cluster]:
    """Start a master and ``n_workers`` workers of one core each; stop them all on exit, also
    when the test failed or a worker was killed on purpose."""
    # The master and workers live for the module and do little: the test jobs' JVM options
    # (the quick JIT and the class archive, tests/support/cli_process.job_java_options) start
    # them sooner.
    env = spark_env(workdir, {"SPARK_DAEMON_JAVA_OPTS": job_java_options()})
    spark_class = str(spark_home() / "bin" / "spark-class")
    port, ui_port = free_port(), free_port()
    master_log = workdir / "logs" / "master.log"
    master = start(
        [
            spark_class,
            MASTER_CLASS,
            "--host",
            LOOPBACK,
            "--port",
            str(port),
            "--webui-port",
            str(ui_port),
        ],
        env,
        master_log,
    )
    cluster = Cluster(
        master_url=f"spark://{LOOPBACK}:{port}",
        web_ui=f"http://{LOOPBACK}:{ui_port}",
        workdir=workdir,
        master_log=master_log,
    )
    processes = [master]
    try:
        wait_for(
            lambda: _reachable(cluster),
            timeout=START_TIMEOUT_SECONDS,
            what="standalone master",
            logs=(master_log,),
            alive=master,
        )
        for index in range(n_workers):
            work_dir = workdir / f"worker-{index}"
            log = workdir / "logs" / f"worker-{index}.log"
            process = start(
                [
                    spark_class,
                    WORKER_CLASS,
                    "--host",
                    LOOPBACK,
                    "--cores",
                    "1",
                    "--memory",
                    WORKER_MEMORY,
                    "--work-dir",
                    str(work_dir),
                    "--webui-port",
                    str(free_port()),
                    cluster.master_url,
                ],
                env,
                log,
            )
            processes.append(process)
            cluster.workers.append(Worker(process, work_dir, log))
        wait_for(
            lambda: _alive_workers(cluster) == n_workers,
            timeout=START_TIMEOUT_SECONDS,
            what=f"{n_workers} registered workers",
            logs=cluster.logs(),
        )
        yield cluster
    finally:
        for process in reversed(processes):
            stop_group(process)


def spark_submit_command(
    cluster: Cluster, script: Path, arguments: Sequence[str], conf: Sequence[str] = ()
) -> list[str]:
    """``spark-submit --master spark://… script arguments…`` (client mode), with each
    ``KEY=VALUE`` of ``conf``."""
    settings = [
        f"spark.executor.memory={EXECUTOR_MEMORY}",
        "spark.executor.cores=1",
        *conf,
    ]
    return [
        str(spark_home() / "bin" / "spark-submit"),
        "--master",
        cluster.master_url,
        *[argument for setting in settings for argument in ("--conf", setting)],
        str(script),
        *arguments,
    ]


def cluster_logs(cluster: Cluster, *extra: Path) -> str:
    return tails((*cluster.logs(), *extra))


def _reachable(cluster: Cluster) -> bool:
    return _alive_workers(cluster) is not None


def _alive_workers(cluster: Cluster) -> int | None:
    """The master's count of alive workers; None while its page is not up or not JSON yet
    (a master still starting answers with an empty body)."""
    try:
        return int(cluster.state().get("aliveworkers", 0))
    except (OSError, ValueError):
        return None
