"""The ``spark-calib`` command (and ``spark-submit``) in a subprocess, for the tests in
tests/cli/: each call starts its own JVM.

A CLI test registers its commands with ``cli_chain``: ``prepare`` writes the test's inputs into
its own working directory with the suite's session, ``commands`` runs the subprocesses there
and returns what the test checks. The session starts the chains of the selected tests in the
background (``CliChains``, two at a time) as soon as it begins, so that their JVMs run while the
in-process tiers do; a CLI test then reads its chain's outcome (the ``cli_run`` fixture), which
raises what the chain raised.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pyspark.sql import SparkSession

from tests.support import class_archive

F = TypeVar("F", bound=Callable[[Path], Any])

BIN_DIR = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
PROCESS_TIMEOUT_SECONDS = 600
# Chains run this many at a time: each of their JVMs is mostly one busy thread.
CONCURRENT_CHAINS = 2
# As in conftest.py: on a few rows, code generation and adaptive planning cost more than they save.
SMALL_DATA_CONF = (
    "spark.sql.codegen.wholeStage=false",
    "spark.sql.adaptive.enabled=false",
    "spark.sql.shuffle.partitions=2",
)
# The quick JIT only, for a test's short-lived job JVMs: on two busy cores the optimising
# compiler's work costs more than its code saves (a 200,000-row job of the crash tests: about
# a fifth faster). The code cache is raised as for the Connect test server (connect_server.py),
# which filled C1's default 48 MB.
QUICK_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m"


def job_java_options() -> str:
    """A test's job JVM options: the quick JIT, and the class archive of
    tests/support/class_archive.py once it is written (read at each call)."""
    return " ".join(part for part in (QUICK_JIT, class_archive.java_options()) if part)


def job_java_conf() -> tuple[str, ...]:
    """``job_java_options`` as Spark's default driver options, which go beside the job's own
    extraJavaOptions (the CLI sets those)."""
    return (f"spark.driver.defaultJavaOptions={job_java_options()}",)


def job_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    env["PYSPARK_PYTHON"] = sys.executable
    return env


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        env=job_env(),
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_SECONDS,
        check=False,
    )


def conf_arguments(settings: tuple[str, ...] | None = None) -> list[str]:
    """``--conf KEY=VALUE`` of each setting; by default the small-data ones and the job JVM's
    options (``job_java_conf``, read when called: the class archive may have appeared)."""
    if settings is None:
        settings = SMALL_DATA_CONF + job_java_conf()
    return [argument for pair in settings for argument in ("--conf", pair)]


def spark_calib(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run([str(BIN_DIR / "spark-calib"), *args, *conf_arguments()], cwd)


def spark_calib_alone(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``spark-calib`` without the small-data ``--conf`` (``batch`` takes none)."""
    return run([str(BIN_DIR / "spark-calib"), *args], cwd)


def our_lines(stderr: str) -> list[str]:
    """stderr without the JVM's own start-up notice about incubator modules."""
    return [line for line in stderr.splitlines() if not line.startswith("WARNING: Using incubator")]


@dataclass(frozen=True)
class Chain:
    """The commands of one CLI test."""

    prepare: Callable[[SparkSession, Path], None] | None
    commands: Callable[[Path], Any]


# "<module>::<test name>" → its chain, in registration order (the longest first, as the modules
# list them, so that the chains running two at a time end close together).
CHAINS: dict[str, Chain] = {}


def chain_key(module: str, test: str) -> str:
    return f"{module}::{test}"


def selected_chains(items: Iterable[pytest.Item], module: object | None = None) -> list[str]:
    """The chain keys of the selected tests (of ``module`` only, when given), in the order the
    chains were registered."""
    selected = {
        chain_key(item.module.__name__, item.originalname)
        for item in items
        if isinstance(item, pytest.Function) and (module is None or item.module is module)
    }
    return [key for key in CHAINS if key in selected]


def cli_chain(
    test: str, prepare: Callable[[SparkSession, Path], None] | None = None
) -> Callable[[F], F]:
    """Register the decorated ``commands(workdir)`` as the chain of the test named ``test`` in
    the same module."""

    def register(commands: F) -> F:
        key = chain_key(commands.__module__, test)
        if key in CHAINS:
            raise ValueError(f"two chains for {key}")
        CHAINS[key] = Chain(prepare, commands)
        return commands

    return register


class CliChains:
    """The chains of the tests given to ``start``: prepared in the calling thread, then run in
    the background, two at a time."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(CONCURRENT_CHAINS, thread_name_prefix="cli-chain")
        self._runs: dict[str, tuple[Path, Future[Any]]] = {}

    def start(
        self, spark: SparkSession, tmp_path_factory: pytest.TempPathFactory, keys: Iterable[str]
    ) -> None:
        """Prepare and start the chains of ``keys`` that have not started yet."""
        for key in keys:
            if key in self._runs:
                continue
            chain = CHAINS[key]
            workdir = tmp_path_factory.mktemp(key.rsplit("::", 1)[-1].removeprefix("test_"))
            if chain.prepare is not None:
                chain.prepare(spark, workdir)
            self._runs[key] = (workdir, self._pool.submit(chain.commands, workdir))

    def result(self, key: str) -> tuple[Path, Any]:
        """The chain's working directory and what its commands returned, once they ended."""
        workdir, done = self._runs[key]
        return workdir, done.result()

    def close(self) -> None:
        """Drop the chains that have not started; wait for the running ones."""
        self._pool.shutdown(wait=True, cancel_futures=True)
