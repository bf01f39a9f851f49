"""The command line before Spark starts: run dates, config errors, exit codes, identifiers.

``main`` validates the config before building a session, so these tests call it in-process
and no JVM starts.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from spark_calib.errors import ConfigError, InvalidRowsError, SchemaError
from spark_calib_cli.commands.run_date import parse_run_date
from spark_calib_cli.errors import JavaNotFoundError, MissingInputError, OutputError
from spark_calib_cli.exit_codes import ExitCode, exit_code_for
from spark_calib_cli.io.identifiers import checked_identifier, checked_table_name
from spark_calib_cli.io.session import java_executable, require_java
from spark_calib_cli.main import main

VALID_CONFIG = """\
task: binary
columns: {score: score, label: label}
input: {path: logs}
output: {path: out}
"""


def write_config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return str(path)


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(argv)
    return code, capsys.readouterr().err.splitlines()


def test_parse_run_date() -> None:
    assert parse_run_date("2024-02-29") == dt.date(2024, 2, 29)


def test_default_run_date_is_today_in_utc() -> None:
    assert parse_run_date(None) == dt.datetime.now(dt.timezone.utc).date()


@pytest.mark.parametrize("text", ["2024-13-01", "2023-02-29", "2024/06/30", "20240630", "2024-6-3"])
def test_bad_run_date(text: str) -> None:
    with pytest.raises(ConfigError, match=rf"--run-date '{text}' is not a date of the form"):
        parse_run_date(text)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ConfigError("x"), 2),
        (MissingInputError("x"), 3),
        (InvalidRowsError({"null_score": 3}, 10, 0.0), 4),
        (SchemaError("x"), 5),
        (OutputError("x"), 6),
        (JavaNotFoundError("x"), 7),
        (RuntimeError("x"), 1),
    ],
)
def test_exit_code_per_cause(error: Exception, code: int) -> None:
    assert exit_code_for(error) == code


def test_unknown_key_names_the_nearest_valid_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, VALID_CONFIG + "binning: {nbins: 10}\n")
    code, err = run_main(["evaluate", "--config", config, "--run-date", "2024-06-30"], capsys)
    assert code == ExitCode.CONFIG
    assert err == [
        "spark-calib: error: unknown config key 'binning.nbins'; did you mean 'binning.n_bins'?"
    ]


def test_unknown_key_in_a_set_override(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, VALID_CONFIG)
    code, err = run_main(["evaluate", "--config", config, "--set", "treshold=0.7"], capsys)
    assert code == ExitCode.CONFIG
    assert err == ["spark-calib: error: unknown config key 'treshold'; did you mean 'threshold'?"]


def test_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_main(["report", "--config", str(tmp_path / "none.yaml")], capsys)
    assert code == ExitCode.CONFIG
    assert err == [f"spark-calib: error: config file '{tmp_path / 'none.yaml'}' does not exist"]


def test_bad_run_date_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, VALID_CONFIG)
    code, err = run_main(["evaluate", "--config", config, "--run-date", "30.06.2024"], capsys)
    assert code == ExitCode.CONFIG
    assert err == [
        "spark-calib: error: --run-date '30.06.2024' is not a date of the form YYYY-MM-DD"
    ]


def test_config_without_output_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, VALID_CONFIG.replace("output: {path: out}\n", ""))
    code, err = run_main(["evaluate", "--config", config], capsys)
    assert code == ExitCode.CONFIG
    assert err == [
        "spark-calib: error: missing required config key 'output' (a database or a path)"
    ]


def test_usage_error_is_argparse_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate"])
    assert exit_info.value.code == ExitCode.CONFIG
    assert "the following arguments are required: --config" in capsys.readouterr().err


def test_missing_java_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match=r"java was not found"):
        require_java()


def test_the_java_of_java_home_comes_before_the_one_on_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home, elsewhere = tmp_path / "jdk", tmp_path / "bin"
    for folder in (home / "bin", elsewhere):
        folder.mkdir(parents=True)
        (folder / "java").write_text("#!/bin/sh\n")
        (folder / "java").chmod(0o755)
    monkeypatch.setenv("PATH", str(elsewhere))
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert java_executable() == str(home / "bin" / "java")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))  # a JAVA_HOME without java
    assert java_executable() == str(elsewhere / "java")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert java_executable() is None


def test_identifiers() -> None:
    assert checked_identifier("ml_monitoring", "output.database") == "ml_monitoring"
    assert checked_table_name("hive.logs.preds_2024", "input.table") == "hive.logs.preds_2024"
    with pytest.raises(ConfigError, match=r"'output.database': '1db' is not a plain identifier"):
        checked_identifier("1db", "output.database")
    with pytest.raises(ConfigError, match=r"'input.table': 'logs..x' is not a table name"):
        checked_table_name("logs..x", "input.table")


def test_spark_conf_needs_key_and_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, VALID_CONFIG)
    code, err = run_main(["evaluate", "--config", config, "--conf", "spark.driver.memory"], capsys)
    assert code == ExitCode.CONFIG
    assert err == ["spark-calib: error: --conf needs KEY=VALUE, got 'spark.driver.memory'"]


WINDOWED = VALID_CONFIG.replace(
    "input: {path: logs}", "input: {path: logs, window: {column: d, lookback_days: 7}}"
)


def test_from_after_run_date_is_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, VALID_CONFIG)
    argv = ["evaluate", "--config", config, "--from", "2024-07-01", "--run-date", "2024-06-30"]
    code, err = run_main(argv, capsys)
    assert code == ExitCode.CONFIG
    assert err == ["spark-calib: error: --from 2024-07-01 is after --run-date 2024-06-30"]


def test_rollup_granularity_must_be_a_known_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, VALID_CONFIG)
    with pytest.raises(SystemExit) as exit_info:
        main(["rollup", "--config", config, "--run-date", "2024-06-30", "--granularity", "weekly"])
    assert exit_info.value.code == ExitCode.CONFIG
    assert "granularity 'weekly' is not one of day, week, month or rolling:N" in (
        capsys.readouterr().err
    )


def test_baseline_dates_need_daily_runs_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = WINDOWED + "drift: {baseline_dates: {start: 2024-06-01, end: 2024-06-07}}\n"
    config = write_config(tmp_path, text)
    code, err = run_main(["evaluate", "--config", config, "--run-date", "2024-06-30"], capsys)
    assert code == ExitCode.CONFIG
    assert err == [
        "spark-calib: error: drift.baseline_dates sums daily statistics, but each run covers 7 "
        "days (input.window.lookback_days: 7); set it to 1"
    ]


@pytest.mark.parametrize(
    "command",
    [
        ["evaluate"],
        ["rollup", "--granularity", "week"],
        ["report"],
    ],
)
def test_html_flag_is_parsed_before_spark(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A bad run date fails before Spark starts: the flag itself was accepted by the parser.
    config = write_config(tmp_path, VALID_CONFIG)
    argv = [*command, "--config", config, "--run-date", "2024-13-01", "--html", "page.html"]

    code, err = run_main(argv, capsys)

    assert code == ExitCode.CONFIG
    assert "2024-13-01" in err[-1]
