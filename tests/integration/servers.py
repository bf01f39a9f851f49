"""Process plumbing for the integration tests: free ports, the Spark launchers shipped inside
the pyspark package, waiting with a deadline, and killing whole process groups.

Every server a test starts runs in its own session (process group), so killing the group also
kills the JVMs it spawned (a standalone worker's executors, spark-submit's driver).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

import pyspark

T = TypeVar("T")

LOOPBACK = "127.0.0.1"
POLL_SECONDS = 0.2


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark package (bin/, sbin/, jars/)."""
    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A TCP port on the loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((LOOPBACK, port)) == 0


def spark_env(workdir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for Spark launchers: the package's SPARK_HOME, loopback only, logs and
    pid files under ``workdir``, this interpreter for any Python worker, UTC."""
    env = dict(os.environ)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    env.update(
        {
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_LOG_DIR": str(workdir / "logs"),
            "SPARK_PID_DIR": str(workdir / "pids"),
            "SPARK_WORKER_DIR": str(workdir / "work"),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "TZ": "UTC",
        }
    )
    env.update(extra or {})
    return env


def start(
    command: list[str], env: Mapping[str, str], log: Path, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start ``command`` in its own process group, stdout and stderr to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as sink:
        return subprocess.Popen(
            command,
            env=dict(env),
            cwd=cwd,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def kill_group(process: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to the process group of ``process`` and reap it; no error if it is gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=30)


def stop_group(process: subprocess.Popen[bytes], grace_seconds: float = 10.0) -> None:
    """SIGTERM the group, then SIGKILL it if it has not exited after ``grace_seconds``."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace_seconds)
    kill_group(process)


def wait_for(
    probe: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    logs: tuple[Path, ...] = (),
    alive: subprocess.Popen[bytes] | None = None,
) -> T:
    """Poll ``probe`` until it returns something other than None/False; raise ``TimeoutError``
    naming ``what`` (with the tail of ``logs``) after ``timeout`` seconds, or ``RuntimeError``
    at once if ``alive`` exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value is not None and value is not False:
            return value
        if alive is not None and alive.poll() is not None:
            raise RuntimeError(f"{what}: process exited with {alive.returncode}\n{tails(logs)}")
        time.sleep(POLL_SECONDS)
    raise TimeoutError(f"{what}: not ready after {timeout:.0f} s\n{tails(logs)}")


def tails(logs: tuple[Path, ...], lines: int = 40) -> str:
    """The last ``lines`` lines of each existing log, for a failure message."""
    parts = []
    for log in logs:
        if log.is_file():
            text = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log}\n" + "\n".join(text))
    return "\n".join(parts)
