"""The class archive of the tests' JVMs (tests/support/class_archive.py): a JVM given a
truncated archive crashes, so only an archive that Java maps whole is ever moved into place."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import class_archive


def _archive_of_java_version(path: Path, classpath: str) -> None:
    """A dynamic archive of the classes ``java -version`` loads (a fraction of a second)."""
    executable = class_archive.java()
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
