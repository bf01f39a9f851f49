"""The ``spark-calib`` command (and ``spark-submit``) in a subprocess, for the tests in
tests/cli/: each call starts its own JVM."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

BIN_DIR = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
PROCESS_TIMEOUT_SECONDS = 600
# Command chains of one module run this many at a time: each JVM is mostly one busy thread.
CONCURRENT_CHAINS = 2
# As in conftest.py: on a few rows, code generation and adaptive planning cost more than they save.
SMALL_DATA_CONF = (
    "spark.sql.codegen.wholeStage=false",
    "spark.sql.adaptive.enabled=false",
    "spark.sql.shuffle.partitions=2",
)


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


def conf_arguments() -> list[str]:
    return [argument for pair in SMALL_DATA_CONF for argument in ("--conf", pair)]


def spark_calib(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run([str(BIN_DIR / "spark-calib"), *args, *conf_arguments()], cwd)


def our_lines(stderr: str) -> list[str]:
    """stderr without the JVM's own start-up notice about incubator modules."""
    return [line for line in stderr.splitlines() if not line.startswith("WARNING: Using incubator")]


def run_chains(chains: Mapping[str, Callable[[], T]]) -> dict[str, Future[T]]:
    """Run independent chains of commands (each in its own working directory) a few at a time
    and return once all have ended; a test reads its chain's outcome with ``.result()``, which
    raises what the chain raised."""
    with ThreadPoolExecutor(max_workers=CONCURRENT_CHAINS) as pool:
        return {name: pool.submit(chain) for name, chain in chains.items()}
