"""``demo-data --if-missing`` keeps the logs that Spark finished writing (their ``_SUCCESS``
marker) and starts no session when all of them are there; ``make demo`` runs it as the
batch's first line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_calib_cli.commands import demo_data
from spark_calib_cli.exit_codes import ExitCode
from spark_calib_cli.main import main


def _complete_logs(out: Path, names: tuple[str, ...]) -> None:
    for name in names:
        (out / name).mkdir(parents=True)
        (out / name / demo_data.SUCCESS_MARKER).touch()


def _no_session(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("demo-data started a Spark session")


def test_complete_logs_are_kept_without_a_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _complete_logs(tmp_path, demo_data.LOG_NAMES)
    monkeypatch.setattr(demo_data, "build_session", _no_session)
    assert main(["demo-data", "--out", str(tmp_path), "--if-missing"]) == ExitCode.OK
    assert "are complete; kept" in capsys.readouterr().out


def test_a_log_without_its_marker_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An interrupted write leaves no _SUCCESS: that log is missing, so a session starts.
    _complete_logs(tmp_path, demo_data.LOG_NAMES[1:])
    (tmp_path / demo_data.LOG_NAMES[0]).mkdir()
    monkeypatch.setattr(demo_data, "build_session", _no_session)
    assert main(["demo-data", "--out", str(tmp_path), "--if-missing"]) != ExitCode.OK
    assert "demo-data started a Spark session" in capsys.readouterr().err


def test_without_the_flag_complete_logs_are_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _complete_logs(tmp_path, demo_data.LOG_NAMES)
    monkeypatch.setattr(demo_data, "build_session", _no_session)
    assert main(["demo-data", "--out", str(tmp_path)]) != ExitCode.OK
    assert "demo-data started a Spark session" in capsys.readouterr().err
