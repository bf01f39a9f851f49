"""``spark-calib batch FILE`` before and around Spark: reading and checking the lines, the order
they run in, when the batch stops and its exit code. The commands here are recorded, not run
(the cli tier runs a real batch in a subprocess); ``main`` checks a bad batch before any JVM
starts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from spark_calib.errors import ConfigError
from spark_calib_cli.commands.batch import batch_command, read_batch
from spark_calib_cli.exit_codes import ExitCode
from spark_calib_cli.main import _parser, main

REPO = Path(__file__).resolve().parents[2]
CONFIG = """\
task: binary
columns: {score: score, label: label}
input: {path: logs}
output: {path: out}
"""


def write_batch(tmp_path: Path, text: str) -> Path:
    (tmp_path / "job.yaml").write_text(CONFIG)
    path = tmp_path / "jobs.txt"
    path.write_text(text)
    return path


class Recorder:
    """A stand-in for ``main``: records each command's arguments and returns the next code."""

    def __init__(self, codes: Sequence[int]) -> None:
        self.codes = list(codes)
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> int:
        self.calls.append(list(argv))
        return self.codes[len(self.calls) - 1]


def run_batch(path: Path, recorder: Recorder) -> int:
    args = _parser().parse_args(["batch", str(path)])
    return batch_command(args, parse=_parser().parse_args, run=recorder)


def test_lines_are_split_as_a_shell_would_skipping_blanks_and_comments(tmp_path: Path) -> None:
    path = write_batch(
        tmp_path,
        "# the jobs\n\n  evaluate --config 'my job.yaml'   # a day\n"
        'rollup --config a.yaml --granularity "week"\n',
    )
    lines = read_batch(path)
    assert [(line.number, line.argv) for line in lines] == [
        (3, ["evaluate", "--config", "my job.yaml"]),
        (4, ["rollup", "--config", "a.yaml", "--granularity", "week"]),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "holds no command"),
        ("# only a comment\n\n", "holds no command"),
        ("evaluate --config 'open\n", "line 1: No closing quotation"),
        ("\nspark-calib evaluate --config a.yaml\n", "line 2: write the command without"),
    ],
)
def test_a_file_that_is_not_a_batch_is_a_config_error(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        read_batch(write_batch(tmp_path, text))


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read batch file .*none\.txt"):
        read_batch(tmp_path / "none.txt")


def test_commands_run_in_order_and_an_alert_does_not_stop_the_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "job.yaml"
    path = write_batch(
        tmp_path,
        f"evaluate --config {config} --run-date 2024-06-29\n"
        f"evaluate --config {config} --run-date 2024-06-30\n"
        f"report --config {config} --run-date 2024-06-30\n",
    )
    recorder = Recorder([ExitCode.OK, ExitCode.ALERT, ExitCode.OK])
    assert run_batch(path, recorder) == ExitCode.ALERT
    assert [call[0] for call in recorder.calls] == ["evaluate", "evaluate", "report"]
    assert recorder.calls[1] == ["evaluate", "--config", str(config), "--run-date", "2024-06-30"]
    # Each command is echoed before it runs, as the shell line that would run it alone.
    echoed = capsys.readouterr().out.splitlines()
    assert echoed == [
        f"$ spark-calib evaluate --config {config} --run-date 2024-06-29",
        f"$ spark-calib evaluate --config {config} --run-date 2024-06-30",
        f"$ spark-calib report --config {config} --run-date 2024-06-30",
    ]


def test_without_alerts_the_batch_exits_0(tmp_path: Path) -> None:
    config = tmp_path / "job.yaml"
    path = write_batch(tmp_path, f"evaluate --config {config}\nreport --config {config}\n")
    assert run_batch(path, Recorder([ExitCode.OK, ExitCode.OK])) == ExitCode.OK


def test_a_failing_command_stops_the_batch_with_its_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "job.yaml"
    path = write_batch(
        tmp_path,
        f"evaluate --config {config}\n\nevaluate --config {config}\nreport --config {config}\n",
    )
    recorder = Recorder([ExitCode.ALERT, ExitCode.MISSING_INPUT, ExitCode.OK])
    assert run_batch(path, recorder) == ExitCode.MISSING_INPUT
    assert len(recorder.calls) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"spark-calib: batch stopped at {path} line 3 (exit code 3)"
    ]


def test_a_bad_line_fails_before_any_command_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "job.yaml"
    path = write_batch(tmp_path, f"evaluate --config {config}\nevaluate --confg {config}\n")
    recorder = Recorder([ExitCode.OK, ExitCode.OK])
    with pytest.raises(
        ConfigError, match=rf"^{re.escape(str(path))} line 2: not a spark-calib command line$"
    ):
        run_batch(path, recorder)
    assert recorder.calls == []
    # argparse said what is wrong with the line.
    assert "the following arguments are required: --config" in capsys.readouterr().err


def test_a_bad_config_fails_before_any_command_runs_naming_its_line(tmp_path: Path) -> None:
    config = tmp_path / "job.yaml"
    bad = tmp_path / "bad.yaml"
    bad.write_text(CONFIG + "binning: {nbins: 10}\n")
    path = write_batch(
        tmp_path, f"evaluate --config {config}\n# next\nrollup --config {bad} --granularity week\n"
    )
    recorder = Recorder([ExitCode.OK, ExitCode.OK])
    with pytest.raises(
        ConfigError, match=rf"^{re.escape(str(path))} line 3: unknown config key 'binning\.nbins'"
    ):
        run_batch(path, recorder)
    assert recorder.calls == []


def test_a_batch_cannot_run_a_batch(tmp_path: Path) -> None:
    path = write_batch(tmp_path, "batch other.txt\n")
    with pytest.raises(ConfigError, match="line 1: a batch cannot run another batch"):
        run_batch(path, Recorder([]))


def test_main_reports_a_bad_batch_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["batch", str(tmp_path / "none.txt")]) == ExitCode.CONFIG
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("spark-calib: error: cannot read batch file")


def test_the_demo_batch_parses_and_its_configs_load(monkeypatch: pytest.MonkeyPatch) -> None:
    # make demo runs this file from the repository root: every line must be a command whose
    # config loads there.
    monkeypatch.chdir(REPO)
    lines = read_batch(REPO / "conf" / "demo_batch.txt")
    assert [line.argv[0] for line in lines] == [
        "demo-data",
        "evaluate",
        "rollup",
        "evaluate",
        "evaluate",
        "evaluate",
    ]
    recorder = Recorder([ExitCode.OK] * len(lines))
    assert run_batch(REPO / "conf" / "demo_batch.txt", recorder) == ExitCode.OK
    assert recorder.calls == [line.argv for line in lines]
