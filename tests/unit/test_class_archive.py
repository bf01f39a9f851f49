"""The class archive of the tests' JVMs (tests/support/class_archive.py): a JVM given a
truncated archive crashes, so only an archive that Java maps whole is ever moved into place."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from spark_calib_cli.io.session import java_executable
from tests.support import class_archive


def _archive_of_java_version(path: Path, classpath: str) -> None:
    """A dynamic archive of the classes ``java -version`` loads (a fraction of a second)."""
    executable = java_executable()
    if executable is None:
        pytest.skip("no java")
    subprocess.run(
        [
            executable,
            f"-XX:ArchiveClassesAtExit={path}",
            class_archive.QUIET,
            "-cp",
            classpath,
            "-version",
        ],
        capture_output=True,
        check=True,
    )


def test_a_whole_archive_passes_and_a_truncated_one_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(class_archive, "ARCHIVE_DIR", tmp_path)
    classpath = str(tmp_path)
    archive = tmp_path / "whole.jsa"
    _archive_of_java_version(archive, classpath)
    assert class_archive._whole(archive, classpath)

    truncated = tmp_path / "truncated.jsa"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    assert not class_archive._whole(truncated, classpath)


def test_the_launch_classpath_is_read_from_the_launchers_command() -> None:
    stderr = (
        "WARNING: Using incubator modules\n"
        "Spark Command: /usr/bin/java -cp '/a b/conf:/jars/x.jar' -Xmx1g "
        "org.apache.spark.deploy.SparkSubmit pyspark-shell\n"
    )
    assert class_archive._launch_classpath(stderr) == "/a b/conf:/jars/x.jar"
    assert class_archive._launch_classpath("no command here\n") is None


def test_no_options_without_an_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(class_archive, "ARCHIVE_DIR", tmp_path)
    monkeypatch.setattr(class_archive, "archive_key", lambda: "k")
    assert class_archive.java_options() == ""
    (tmp_path / "k.jsa").write_bytes(b"")
    assert class_archive.java_options() == (
        f"-XX:SharedArchiveFile={tmp_path / 'k.jsa'} {class_archive.QUIET}"
    )


def _running(marker: str) -> bool:
    """Whether a live process has ``marker`` on its command line (a zombie's is empty)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker.encode() in cmdline.read_bytes():
                return True
        except OSError:
            continue
    return False


def test_a_run_past_its_timeout_is_killed_with_its_whole_group(tmp_path: Path) -> None:
    # The child's child stands for the JVM, which outlives spark-calib's Python driver; it
    # holds none of the pipes, so only a kill of the group, not of the child, ends it.
    marker = "301.25"
    script = f"sleep {marker} </dev/null >/dev/null 2>&1 & exec sleep {marker}"
    process = class_archive._start(["bash", "-c", script], tmp_path, {"PATH": "/usr/bin:/bin"})
    assert class_archive._finished(process, 0.5) is None
    assert process.returncode is not None
    for _ in range(50):
        if not _running(marker):
            break
        time.sleep(0.1)
    assert not _running(marker)


@pytest.mark.parametrize(
    ("command", "timeout"),
    [
        ([sys.executable, "-c", "print('java was not found'); raise SystemExit(3)"], 60.0),
        ([sys.executable, "-c", "import time; time.sleep(60)"], 0.5),
    ],
    ids=["failed", "timed_out"],
)
def test_a_failed_or_timed_out_training_leaves_no_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], timeout: float
) -> None:
    monkeypatch.setattr(class_archive, "ARCHIVE_DIR", tmp_path)
    monkeypatch.setattr(class_archive, "archive_key", lambda: "k")
    monkeypatch.setattr(class_archive, "TRAIN_TIMEOUT_SECONDS", timeout)
    monkeypatch.setattr(class_archive, "_training_command", lambda *_: command)
    assert class_archive.train({"PATH": "/usr/bin:/bin"}, "") is None
    assert not list(tmp_path.glob("*.jsa*"))
    assert class_archive.java_options() == ""
    log = tmp_path / "train.log"
    # A run that ended says why in train.log; one killed at its timeout has nothing to say.
    assert (log.read_text() == "java was not found\n") if timeout > 1 else not log.exists()
