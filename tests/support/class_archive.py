"""A class-data-sharing archive of Spark's classes for the tests' JVMs.

Every JVM the tests start (each ``spark-calib`` or ``spark-submit`` subprocess, the Spark
Connect server, the suite's own sessions) loads and verifies some twenty thousand classes from
Spark's jars before its first job. Java's dynamic AppCDS archive (JDK 13 and later) holds
them already parsed and verified: a JVM started with ``-XX:SharedArchiveFile`` maps it instead.
The demo's regression day (``evaluate``) took 17.0–17.7 s with the archive against
25.3–25.7 s without (2026-12-02, alternating, the quick JIT in both); a bare session and its
first query 6.7 s against 10.7 s.

``train`` writes the archive once per virtual environment and Java: one small ``spark-calib
batch`` (the demo's binary day on 2,000 rows, written to the catalog) runs with
``-XX:ArchiveClassesAtExit``, and the archive is checked whole (Java's CRC of every region)
before it is moved into place, because a JVM given a truncated archive crashes. It lives in
``<venv>/spark-class-archive/<key>.jsa`` (about 230 MB), the key naming the Java build, pyspark's
version and its jars, so a new pyspark or Java trains a new one. A file lock lets one process
of the suite train while the others go on without it.

``java_options`` gives the options that use the archive, or none while there is none yet: a
JVM started without it runs the same, only slower to start. ``-Xlog:cds*=off`` keeps the
JVM's notices about the archive (for example that it does not match) off the job's stdout.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyspark

from spark_calib_cli.io.session import java_executable

ARCHIVE_DIR = Path(sys.prefix) / "spark-class-archive"
QUIET = "-Xlog:cds*=off"
TRAIN_TIMEOUT_SECONDS = 600
JVM_EXIT_TIMEOUT_SECONDS = 120
# Rows of the training's binary log over its 14 days (about 150 on the day it evaluates):
# enough for every table of the demo's binary job.
TRAIN_ROWS = 2000


@functools.cache
def archive_key() -> str | None:
    """A hash of the Java build (``java -version``), pyspark's version and the names, sizes
    and times of its jars; None without java. Computed once per process."""
    executable = java_executable()
    if executable is None:
        return None
    version = subprocess.run(
        [executable, "-version"], capture_output=True, text=True, check=False
    ).stderr
    jars = Path(pyspark.__file__).parent / "jars"
    listing = sorted(
        f"{jar.name} {jar.stat().st_size} {jar.stat().st_mtime_ns}" for jar in jars.glob("*.jar")
    )
    text = "\n".join([version, pyspark.__version__, *listing])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def archive_path(key: str) -> Path:
    return ARCHIVE_DIR / f"{key}.jsa"


def java_options() -> str:
    """The JVM options that map the archive, or "" when it has not been written."""
    key = archive_key()
    if key is None or not archive_path(key).is_file():
        return ""
    return f"-XX:SharedArchiveFile={archive_path(key)} {QUIET}"


def train(env: dict[str, str], quick_jit: str) -> Path | None:
    """Write the archive unless it exists or another process is writing it; return its path
    when it exists afterwards. A failed training leaves no archive (and its output in
    ``train.log`` beside it); the tests then run without one."""
    key = archive_key()
    if key is None:
        return None
    path = archive_path(key)
    if path.is_file():
        return path
    try:
        ARCHIVE_DIR.mkdir(parents=True, exist_ok=True)
        lock = open(ARCHIVE_DIR / "train.lock", "w")  # noqa: SIM115 (held until the end)
    except OSError:
        return None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # another process trains; its JVMs and ours go on without
        if path.is_file():
            return path
        for old in ARCHIVE_DIR.glob("*.jsa*"):
            old.unlink()  # another Java's or pyspark's archive, or a training cut short
        written = ARCHIVE_DIR / f"{key}.jsa.partial"
        if _written(written, env, quick_jit):
            os.replace(written, path)
            return path
        written.unlink(missing_ok=True)
        return None


def _written(written: Path, env: dict[str, str], quick_jit: str) -> bool:
    """Run the training; True when it wrote a whole archive to ``written``."""
    with tempfile.TemporaryDirectory(prefix="train-", dir=ARCHIVE_DIR) as workdir:
        process = _start(_training_command(Path(workdir), written, quick_jit), Path(workdir), env)
        done = _finished(process, TRAIN_TIMEOUT_SECONDS)
        if done is None:
            return False
        returncode, output, stderr = done
        (ARCHIVE_DIR / "train.log").write_text(output + stderr)
        # The Python driver exits before its JVM, which writes the archive as it exits.
        gone = _jvm_gone(written)
        if not gone:
            _kill_group(process)
        if not gone or returncode != 0:
            return False
    classpath = _launch_classpath(stderr)
    return classpath is not None and written.is_file() and _whole(written, classpath)


def _training_command(workdir: Path, written: Path, quick_jit: str) -> list[str]:
    """The demo's binary day, generated and evaluated in one JVM that writes the archive when
    it exits."""
    repo = Path(__file__).resolve().parents[2]
    options = f"{quick_jit} -XX:ArchiveClassesAtExit={written} {QUIET}"
    rows = ["--binary-rows", str(TRAIN_ROWS)] + [
        argument
        for name in ("multiclass", "regression", "ctr", "segments")
        for argument in (f"--{name}-rows", "10")
    ]
    # batch takes the JVM's options from its first line.
    generate = ["demo-data", "--out", "logs", *rows]
    generate += ["--conf", f"spark.driver.defaultJavaOptions={options}"]
    evaluate = ["evaluate", "--config", str(repo / "conf" / "demo_binary.yaml")]
    evaluate += ["--run-date", "2024-06-30", "--set", "input.path=logs/binary"]
    batch = workdir / "train.txt"
    batch.write_text(f"{shlex.join(generate)}\n{shlex.join(evaluate)}\n")
    return [str(Path(sys.executable).parent / "spark-calib"), "batch", str(batch)]


def _start(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """``command`` in a process group of its own, which its JVM joins: a training that hangs
    or outlives its timeout is killed whole, not only its Python driver."""
    return subprocess.Popen(
        command,
        cwd=cwd,
        env={**env, "SPARK_PRINT_LAUNCH_COMMAND": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _finished(process: subprocess.Popen[str], timeout: float) -> tuple[int, str, str] | None:
    """The exit code, stdout and stderr of ``process``; None when it ran past ``timeout``,
    after killing its process group."""
    try:
        output, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        process.communicate()
        return None
    return process.returncode, output, stderr


def _kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL every process left in ``process``'s group (its JVM too); none left is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _launch_classpath(stderr: str) -> str | None:
    """The class path of the JVM that Spark's launcher started (``SPARK_PRINT_LAUNCH_COMMAND``
    prints its command): an archive maps only under the class path it was written with, and
    the launcher's is not the jars folder's plain listing."""
    for line in stderr.splitlines():
        if line.startswith("Spark Command: "):
            words = shlex.split(line.removeprefix("Spark Command: "))
            if "-cp" in words:
                return words[words.index("-cp") + 1]
    return None


def _jvm_gone(written: Path, timeout: float = JVM_EXIT_TIMEOUT_SECONDS) -> bool:
    """Wait until no process's command line names ``written``; False after ``timeout``."""
    marker = str(written).encode()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = False
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                running = marker in cmdline.read_bytes()
            except OSError:
                continue  # the process ended while we looked
            if running:
                break
        if not running:
            return True
        time.sleep(0.5)
    return False


def _whole(archive: Path, classpath: str) -> bool:
    """True when Java maps the archive under ``classpath`` and its regions' checksums hold."""
    executable = java_executable()
    assert executable is not None
    done = subprocess.run(
        [
            executable,
            "-Xshare:on",
            "-XX:+VerifySharedSpaces",
            f"-XX:SharedArchiveFile={archive}",
            QUIET,
            # A broken archive crashes the JVM; its report goes beside the archive, not here.
            f"-XX:ErrorFile={ARCHIVE_DIR / 'check_error.log'}",
            "-cp",
            classpath,
            "-version",
        ],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0
