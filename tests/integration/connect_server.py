"""A Spark Connect server for the integration tests, started with the launcher shipped inside
the pyspark package (``$SPARK_HOME/sbin/start-connect-server.sh``).

The server runs ``local[2]`` with 2 shuffle partitions and the UTC session time zone, listens
on the loopback only, on a free port, and keeps its logs, pid file, warehouse and metastore
under a temporary directory. ``connect_server`` stops it with ``stop-connect-server.sh`` and
then kills whatever is left, also when the test body failed.

A Connect client and a classic session must not share one Python process (creating a remote
session switches ``pyspark.sql.functions`` to the Connect implementations), so tests talk to
the server from subprocesses only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from servers import (
    LOOPBACK,
    free_port,
    kill_group,
    port_open,
    spark_env,
    spark_home,
    start,
    tails,
    wait_for,
)

from tests.support import class_archive

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_SECONDS = 120.0
LAUNCHER_TIMEOUT_SECONDS = 60.0
STOP_GRACE_SECONDS = 20.0
# As tests/conftest.py's session: few rows, so no code generation or adaptive planning.
SERVER_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # Fail at once if the port was taken meanwhile, instead of binding the next one.
    "spark.connect.grpc.port.maxRetries": "0",
}


@dataclass(frozen=True)
class ConnectServer:
    """A running server: ``url`` is what ``SparkSession.builder.remote`` and ``--remote`` take."""

    port: int
    workdir: Path
    pid: int

    @property
    def url(self) -> str:
        return f"sc://{LOOPBACK}:{self.port}"

    @property
    def logs(self) -> tuple[Path, ...]:
        """The launcher's output and the server's own log (``spark-daemon.sh``'s ``.out``)."""
        return (self.workdir / "launcher.log", *_server_logs(self.workdir))

    def log_tail(self) -> str:
        """The first error lines of the logs (a failed start ends with pages of shutdown
        lines), then their tails."""
        return _first_errors(self.logs) + tails(self.logs)

    def wait_ready(self, timeout: float = START_TIMEOUT_SECONDS) -> ConnectServer:
        """Return once the server accepts connections on ``port``; ``RuntimeError`` at once if
        it exited, ``TimeoutError`` after ``timeout`` seconds, each with the log's tail."""

        def ready() -> bool:
            if not _running(self.pid):
                raise RuntimeError(
                    f"Spark Connect server (pid {self.pid}) exited before listening on "
                    f"port {self.port}\n{self.log_tail()}"
                )
            return port_open(self.port)

        wait_for(
            ready,
            timeout=timeout,
            what=f"Spark Connect server on {LOOPBACK}:{self.port}",
            logs=self.logs,
        )
        return self


@contextlib.contextmanager
def connect_server(
    workdir: Path,
    *,
    conf: Mapping[str, str] | None = None,
    timeout: float = START_TIMEOUT_SECONDS,
    wait: bool = True,
) -> Iterator[ConnectServer]:
    """Start a Spark Connect server under ``workdir`` and yield it once it accepts connections
    (``wait=False``: as soon as its JVM runs; call ``wait_ready`` before using it, to overlap
    the server's start-up with other work). Stopped on exit, also after an error.

    Raises ``RuntimeError`` (launcher failed, server exited) or ``TimeoutError`` (port not open
    after ``timeout`` seconds), each with the tail of the server's log.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = spark_env(workdir)
    settings = {
        **SERVER_CONF,
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.connect.grpc.binding.port": str(port),
        "spark.sql.warehouse.dir": str(workdir / "warehouse"),
        "spark.driver.extraJavaOptions": " ".join(
            [
                "-Duser.timezone=UTC",
                f"-Dderby.system.home={workdir / 'derby'}",
                # The quick JIT only: a test server lives a minute or two, and on a few cores
                # the optimising compiler's work costs more than its code saves (measured:
                # start-up and the tests' queries about a third faster).
                "-XX:TieredStopAtLevel=1",
                # With C1 only the JVM reserves 48 MB of code cache; the module's server
                # filled it (2026-11-29: "CodeCache is full. Compiler has been disabled", then
                # an InternalError that stopped the SparkContext mid-test).
                "-XX:ReservedCodeCacheSize=256m",
                # Spark's classes already parsed, once tests/support/class_archive.py wrote them.
                class_archive.java_options(),
            ]
        ),
        **(conf or {}),
    }
    command = [str(spark_home() / "sbin" / "start-connect-server.sh"), "--master", "local[2]"]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    launcher_log = workdir / "launcher.log"
    # spark-daemon.sh starts the server with nohup in the background and returns; the JVM stays
    # in the launcher's process group, so killing that group also reaches it.
    launcher = start(command, env, launcher_log, cwd=workdir)
    pid: int | None = None
    try:
        try:
            code = launcher.wait(timeout=LAUNCHER_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            raise TimeoutError(
                f"start-connect-server.sh did not return after {LAUNCHER_TIMEOUT_SECONDS:.0f} s\n"
                + _first_errors(logs := (launcher_log, *_server_logs(workdir)))
                + tails(logs)
            ) from None
        pid = _read_pid(workdir)
        if code != 0 or pid is None:
            raise RuntimeError(
                f"start-connect-server.sh exited with {code} (server pid {pid})\n"
                + _first_errors(logs := (launcher_log, *_server_logs(workdir)))
                + tails(logs)
            )
        server = ConnectServer(port=port, workdir=workdir, pid=pid)
        if wait:
            server.wait_ready(timeout)
        yield server
    finally:
        _stop(workdir, env, pid)
        kill_group(launcher)


def _stop(workdir: Path, env: Mapping[str, str], pid: int | None) -> None:
    """stop-connect-server.sh (SIGTERM to the server), then SIGKILL if it is still there."""
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        subprocess.run(
            [str(spark_home() / "sbin" / "stop-connect-server.sh")],
            env=dict(env),
            cwd=workdir,
            capture_output=True,
            timeout=LAUNCHER_TIMEOUT_SECONDS,
            check=False,
        )
    if pid is None:
        pid = _read_pid(workdir)
    if pid is None:
        return
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _running(pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _read_pid(workdir: Path) -> int | None:
    """The server's pid from spark-daemon.sh's pid file (removed again by a clean stop)."""
    for path in (workdir / "pids").glob(f"spark-*-{SERVER_CLASS}-1.pid"):
        text = path.read_text().strip()
        if text.isdigit():
            return int(text)
    return None


def _first_errors(logs: tuple[Path, ...], limit: int = 5) -> str:
    found: list[str] = []
    for log in logs:
        if log.is_file():
            found += [
                line
                for line in log.read_text(errors="replace").splitlines()
                if " ERROR " in line or (line[:1] not in (" ", "\t") and "Exception" in line)
            ]
    return "".join(f"{line}\n" for line in ["--- first errors", *found[:limit]]) if found else ""


def _server_logs(workdir: Path) -> tuple[Path, ...]:
    return tuple(sorted((workdir / "logs").glob(f"spark-*-{SERVER_CLASS}-1-*.out")))


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (the daemon's JVM is reparented to init,
    which may be slow to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    # Field 3, after the parenthesised command name (which may itself hold blanks).
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")
